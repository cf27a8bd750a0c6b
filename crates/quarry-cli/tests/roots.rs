//! Where `quarry` works, and what it leaves behind: a system directory is refused as a root,
//! a command that only reads creates nothing, a failed command leaves the directory as it
//! was, and a chunk id's prefix is enough.

use std::fs;
use std::path::Path;

use quarry_testkit::shop;
use serde_json::Value;

mod support;

use support::{failure, quarry, quarry_ok, text};

#[test]
fn system_directories_are_refused_as_roots_and_left_alone() {
    let here = tempfile::tempdir().unwrap();
    let before = Path::new("/.quarry").exists();
    for root in ["/", "/proc", "/proc/self", "/sys", "/usr"] {
        if !Path::new(root).exists() {
            continue;
        }
        for command in [
            &["status", "--root", root][..],
            &["search", "anything", "--mode", "lexical", "--root", root][..],
            &["index", root][..],
        ] {
            let error = failure(here.path(), command);
            assert!(error.contains("not a project"), "{command:?}: {error}");
            assert_eq!(error.lines().count(), 1, "{error}");
        }
    }
    assert_eq!(
        Path::new("/.quarry").exists(),
        before,
        "nothing written at /"
    );
}

#[test]
fn read_only_commands_create_nothing_and_failed_ones_leave_nothing() {
    let empty = tempfile::tempdir().unwrap();
    let error = failure(empty.path(), &["status"]);
    assert!(
        error.contains("no index here yet") && error.contains("quarry index"),
        "{error}"
    );
    let error = failure(empty.path(), &["related", "0123456789abcdef"]);
    assert!(error.contains("no index here yet"), "{error}");
    for command in [
        &["search", "anything", "--mode", "lexical"][..],
        &["index"][..],
        &["index", "--force"][..],
    ] {
        let error = failure(empty.path(), command);
        assert!(error.contains("no files to index"), "{command:?}: {error}");
    }
    let left: Vec<_> = fs::read_dir(empty.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");

    // A directory with files outside any repository: status still creates nothing.
    let loose = shop();
    let error = failure(loose.path(), &["status"]);
    assert!(error.contains("no index here yet"), "{error}");
    assert!(!loose.path().join(".quarry").exists());
}

#[test]
fn a_chunk_id_prefix_of_eight_digits_is_enough() {
    let repo = shop();
    let out = quarry_ok(
        repo.path(),
        &[
            "search",
            "retry a failed request with backoff",
            "--json",
            "--wait",
        ],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    // A description leans on the dense leg, without the file leg: its weights show as
    // written, not as f32s.
    let raw = text(&out.stdout);
    assert!(
        raw.contains(r#""weights":{"dense":0.7,"file":0.0,"lexical":0.3}"#),
        "{raw}"
    );
    let id = json["results"][0]["chunk_id"].as_str().unwrap().to_owned();

    let whole = quarry_ok(repo.path(), &["related", &id, "--json"]);
    for prefix in [&id[..8], &id[..12], &id.to_uppercase()[..10]] {
        let short = quarry(repo.path(), &["related", prefix, "--json"]);
        assert!(short.status.success(), "{prefix}: {}", text(&short.stderr));
        assert_eq!(short.stdout, whole.stdout, "{prefix}");
    }
    let error = failure(repo.path(), &["related", &id[..7]]);
    assert!(error.contains("8 to 32 hex digits"), "{error}");
    let absent = if id.starts_with("00000000") {
        "ffffffff"
    } else {
        "00000000"
    };
    let error = failure(repo.path(), &["related", absent]);
    assert!(error.contains("no chunk id starts with"), "{error}");
}

/// A repository that commits `.quarry` as a link to a directory of the user's: every
/// command refuses it with the fix, and the directory it points at is left as it was (a
/// search once created files there and removed `lexical/notes.txt`; `quarry index` removed
/// `rows/mine.txt`).
#[cfg(unix)]
#[test]
fn a_linked_index_directory_is_refused_by_every_command() {
    let repo = shop();
    let elsewhere = tempfile::tempdir().unwrap();
    for dir in ["lexical", "rows", "vectors"] {
        fs::create_dir(elsewhere.path().join(dir)).unwrap();
        fs::write(elsewhere.path().join(dir).join("notes.txt"), "mine\n").unwrap();
    }
    std::os::unix::fs::symlink(elsewhere.path(), repo.path().join(".quarry")).unwrap();
    let listing = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = walk(dir)
            .iter()
            .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
            .collect();
        names.sort();
        names
    };
    let before = listing(elsewhere.path());
    for command in [
        &["index"][..],
        &["index", "--force"][..],
        &["search", "cart total", "--mode", "lexical"][..],
        &["search", "cart total"][..],
        &["status"][..],
        &["lib", "add", "dep", "src"][..],
    ] {
        let error = failure(repo.path(), command);
        assert!(
            error.contains(".quarry") && error.contains("symbolic link"),
            "{command:?}: {error}"
        );
    }
    assert_eq!(listing(elsewhere.path()), before);
}

/// Every file below `dir`.
#[cfg(unix)]
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        }
        files.push(path);
    }
    files
}
