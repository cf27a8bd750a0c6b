//! What `quarry lib add` refuses: names that read as paths or flags, the repository as its
//! own library (itself, a directory in it, one above it, however linked), and a tree too
//! large to index unless forced.

use std::fs;
use std::path::Path;

use quarry_testkit::shop;

use crate::support::{failure, json, quarry_ok, text};

/// The registered libraries' names, as `lib list --json` gives them.
fn registered(repo: &Path) -> Vec<String> {
    let list = json(repo, &["lib", "list", "--json"]);
    list.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn library_names_that_read_as_paths_or_flags_are_refused() {
    let repo = shop();
    let library = quarry_testkit::library("units.py", "def miles(km):\n    return km * 0.62\n");
    let path = library.path().to_str().unwrap();
    for name in [
        ".", "..", "-x", "--x", ".hidden", "_private", "a/b", "../up", "./x",
    ] {
        // `--` so that a name starting with '-' reaches the check rather than clap's.
        let error = failure(repo.path(), &["lib", "add", "--", name, path]);
        assert!(
            error.contains("a library name is") && error.contains("a letter or digit"),
            "{name}: {error}"
        );
    }
    assert!(registered(repo.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn the_repository_a_directory_in_it_or_one_holding_it_is_no_library() {
    let outer = tempfile::tempdir().unwrap();
    let repo = outer.path().join("shop");
    quarry_testkit::copy_dir(shop().path(), &repo);
    // A link from outside into the repository is the repository still.
    let linked = outer.path().join("linked-src");
    std::os::unix::fs::symlink(repo.join("src"), &linked).unwrap();
    let cases = [
        (".", "is the repository"),
        ("src", "is inside the repository"),
        ("lib", "is inside the repository"),
        ("..", "holds the repository"),
        (outer.path().to_str().unwrap(), "holds the repository"),
        (linked.to_str().unwrap(), "is inside the repository"),
    ];
    for (path, said) in cases {
        let error = failure(&repo, &["lib", "add", "dep", path]);
        assert!(
            error.contains(said) && error.contains("--scope project"),
            "{path}: {error}"
        );
    }
    assert!(registered(&repo).is_empty());
}

#[test]
fn a_library_over_the_size_limit_needs_force() {
    let repo = shop();
    // One file past the count (empty files: nothing to embed when forced).
    let many = tempfile::tempdir().unwrap();
    for n in 0..=quarry_engine::MAX_LIBRARY_FILES {
        fs::write(many.path().join(format!("f{n}.txt")), "").unwrap();
    }
    let many_path = many.path().to_str().unwrap();
    let error = failure(repo.path(), &["lib", "add", "many", many_path]);
    assert!(
        error.contains("holds at least 10001 files")
            && error.contains("limit of 10000 files or 64 MiB")
            && error.contains("--force"),
        "{error}"
    );
    // Past the bytes: 33 files of 2 MiB, the largest the index reads (sparse: no disk).
    let large = tempfile::tempdir().unwrap();
    for n in 0..33 {
        let file = fs::File::create(large.path().join(format!("f{n}.bin"))).unwrap();
        file.set_len(quarry_engine::MAX_FILE_BYTES).unwrap();
    }
    let error = failure(
        repo.path(),
        &["lib", "add", "large", large.path().to_str().unwrap()],
    );
    assert!(
        error.contains("MiB to index, over a library's limit") && error.contains("--force"),
        "{error}"
    );
    // A file past the per-file limit is not read, so it does not count.
    let one_huge = tempfile::tempdir().unwrap();
    let file = fs::File::create(one_huge.path().join("dump.sql")).unwrap();
    file.set_len(quarry_engine::MAX_LIBRARY_BYTES * 2).unwrap();
    fs::write(one_huge.path().join("lib.py"), "def helper():\n    pass\n").unwrap();
    assert!(registered(repo.path()).is_empty());

    let out = quarry_ok(
        repo.path(),
        &["lib", "add", "one_huge", one_huge.path().to_str().unwrap()],
    );
    assert!(
        text(&out.stderr).contains("lib:one_huge"),
        "{}",
        text(&out.stderr)
    );
    quarry_ok(repo.path(), &["lib", "add", "many", many_path, "--force"]);
    assert_eq!(registered(repo.path()), ["many", "one_huge"]);
    let status = json(repo.path(), &["status", "--json"]);
    assert_eq!(status["files"], 9 + 2 + 10_001, "{status}");
}
