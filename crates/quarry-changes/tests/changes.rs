//! Change detection against real files, in plain directories and real git repositories.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use quarry_changes::{
    ChangeSet, GitUse, Rename, TreeFile, content_hash, detect_changes, head_commit, walk,
};
use quarry_store::FileState;

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn mtime(root: &Path, path: &str) -> SystemTime {
    fs::metadata(root.join(path)).unwrap().modified().unwrap()
}

fn set_mtime(root: &Path, path: &str, time: SystemTime) {
    let file = fs::File::options()
        .write(true)
        .open(root.join(path))
        .unwrap();
    file.set_modified(time).unwrap();
}

/// Moves a file's mtime ten seconds on, as a later write would.
fn bump_mtime(root: &Path, path: &str) {
    set_mtime(root, path, mtime(root, path) + Duration::from_secs(10));
}

/// What an indexer would record for the tree at `root`.
fn index(root: &Path) -> Vec<FileState> {
    walk(root)
        .unwrap()
        .files
        .into_iter()
        .map(|file| FileState {
            content_hash: content_hash(&fs::read(root.join(&file.path)).unwrap()),
            path: file.path,
            mtime_ns: file.mtime_ns,
            size: file.size,
            chunk_ids: vec![],
        })
        .collect()
}

fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn git_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    repo
}

/// A fresh directory holding `files` (path and content): with `in_git`, a new git repository
/// with them committed, and that commit.
fn tree<P: AsRef<str>, C: AsRef<str>>(
    in_git: bool,
    files: &[(P, C)],
) -> (tempfile::TempDir, Option<String>) {
    let dir = if in_git {
        git_repo()
    } else {
        tempfile::tempdir().unwrap()
    };
    for (path, content) in files {
        write(dir.path(), path.as_ref(), content.as_ref());
    }
    let commit = in_git.then(|| commit_all(dir.path()));
    (dir, commit)
}

/// A plain directory (not a git repository) holding `files`.
fn plain_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    tree(false, files).0
}

/// A new git repository with `files` committed, and the commit.
fn git_tree(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    let (repo, commit) = tree(true, files);
    (repo, commit.unwrap())
}

/// Commits everything and returns the new HEAD.
fn commit_all(root: &Path) -> String {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "x"]);
    head_commit(root).unwrap()
}

fn paths(files: &[TreeFile]) -> Vec<&str> {
    files.iter().map(|f| f.path.as_str()).collect()
}

fn detect(root: &Path, indexed: &[FileState], commit: Option<&str>) -> ChangeSet {
    detect_changes(root, indexed, commit).unwrap()
}

#[test]
fn walk_honours_gitignore_outside_git_and_skips_quarry_and_hidden() {
    let dir = plain_tree(&[
        (".gitignore", "target/\n*.log\n"),
        ("sub/.ignore", "generated.rs\n"),
        ("src/lib.rs", "fn a() {}"),
        ("sub/keep.rs", "fn b() {}"),
        ("sub/generated.rs", "fn c() {}"),
        ("target/debug/out.rs", "fn d() {}"),
        ("run.log", "log"),
        (".quarry/index.redb", "db"),
        (".github/workflows/ci.yml", "on: push"),
    ]);
    let root = dir.path();

    let walked = walk(root).unwrap();
    assert_eq!(paths(&walked.files), ["src/lib.rs", "sub/keep.rs"]);
    assert!(walked.warnings.is_empty(), "{:?}", walked.warnings);
    let file = &walked.files[0];
    assert_eq!(file.size, 9);
    let expected = mtime(root, "src/lib.rs")
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    assert_eq!(file.mtime_ns, expected);
    assert_eq!(detect(root, &[], None).git, GitUse::NotARepository);
}

#[test]
fn walk_in_git_skips_dot_git_ignored_and_excluded_files() {
    let (repo, _) = git_tree(&[
        (".gitignore", "*.tmp\n"),
        (".git/info/exclude", "secret/\n"),
        ("a.rs", "fn a() {}"),
        ("scratch.tmp", "x"),
        ("secret/key.rs", "fn k() {}"),
        (".quarry/index.redb", "db"),
    ]);

    assert_eq!(paths(&walk(repo.path()).unwrap().files), ["a.rs"]);
}

#[test]
fn a_missing_root_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(walk(&missing).is_err());
    assert!(detect_changes(&missing, &[], None).is_err());
}

#[test]
fn nothing_changed_reads_nothing() {
    for in_git in [false, true] {
        let files: Vec<_> = (0..20)
            .map(|i| (format!("src/m{i}.rs"), format!("fn f{i}() {{}}")))
            .collect();
        let (dir, commit) = tree(in_git, &files);
        let root = dir.path();
        let indexed = index(root);

        let changes = detect(root, &indexed, commit.as_deref());
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!((changes.unchanged, changes.hashed), (20, 0));
        assert!(changes.warnings.is_empty());
        let expected = match &commit {
            Some(commit) => GitUse::Used {
                since: commit.clone(),
                reported: 0,
            },
            None => GitUse::NotARepository,
        };
        assert_eq!(changes.git, expected);
    }
}

#[test]
fn added_modified_deleted_renamed_and_touched() {
    for in_git in [false, true] {
        let (dir, commit) = tree(
            in_git,
            &[
                ("a.rs", "fn a() {}"),
                ("b.rs", "fn b() { 1 }"),
                ("c.rs", "fn c() { 22 }"),
                ("d.rs", "fn d() { 333 }"),
                ("e.rs", "fn e() { 4444 }"),
                ("f.rs", "fn f() { 55555 }"),
            ],
        );
        let root = dir.path();
        let indexed = index(root);

        write(root, "new.rs", "fn new() { 1 + 2 + 3 }");
        write(root, "a.rs", "fn a() { longer }");
        write(root, "b.rs", "fn b() { 2 }");
        bump_mtime(root, "b.rs");
        fs::remove_file(root.join("c.rs")).unwrap();
        fs::create_dir(root.join("moved")).unwrap();
        fs::rename(root.join("d.rs"), root.join("moved/d2.rs")).unwrap();
        bump_mtime(root, "e.rs");

        let changes = detect(root, &indexed, commit.as_deref());
        assert_eq!(paths(&changes.added), ["new.rs"], "git: {in_git}");
        assert_eq!(paths(&changes.modified), ["a.rs", "b.rs"]);
        assert_eq!(changes.deleted, ["c.rs"]);
        let moved = walk(root).unwrap().files;
        let moved = moved.iter().find(|f| f.path == "moved/d2.rs").unwrap();
        assert_eq!(
            changes.renamed,
            [Rename {
                from: "d.rs".into(),
                to: moved.clone()
            }]
        );
        assert_eq!(changes.touched.len(), 1);
        let (touched, hash) = &changes.touched[0];
        assert_eq!(touched.path, "e.rs");
        assert_eq!(*hash, content_hash(b"fn e() { 4444 }"));
        assert_ne!(touched.mtime_ns, indexed[4].mtime_ns);
        assert_eq!(changes.unchanged, 1);
        // b.rs and e.rs, whose mtime moved, and moved/d2.rs, the size of a deleted file; a.rs
        // changed size and is modified unread.
        assert_eq!(changes.hashed, 3);
        if let Some(commit) = commit {
            // a.rs, b.rs, c.rs and d.rs differ from the commit; untracked files are the walk's.
            assert_eq!(
                changes.git,
                GitUse::Used {
                    since: commit,
                    reported: 4
                }
            );
        }
    }
}

#[test]
fn duplicate_content_is_renamed_once() {
    let dir = plain_tree(&[("one.rs", "same"), ("two.rs", "same")]);
    let root = dir.path();
    let indexed = index(root);
    fs::remove_file(root.join("one.rs")).unwrap();
    fs::rename(root.join("two.rs"), root.join("three.rs")).unwrap();

    let changes = detect(root, &indexed, None);
    assert_eq!(changes.renamed.len(), 1);
    assert_eq!(changes.renamed[0].from, "one.rs");
    assert_eq!(changes.renamed[0].to.path, "three.rs");
    assert_eq!(changes.deleted, ["two.rs"]);
    assert!(changes.added.is_empty());
}

#[test]
fn large_files_hash_as_content_hash_does() {
    let big: String = (0..40_000).map(|i| format!("{i}\n")).collect();
    assert!(big.len() > 150_000);
    let dir = plain_tree(&[("big.txt", big.as_str())]);
    let root = dir.path();
    let indexed = index(root);
    bump_mtime(root, "big.txt");

    let changes = detect(root, &indexed, None);
    assert_eq!(changes.touched.len(), 1, "{changes:?}");
    assert_eq!(changes.touched[0].1, content_hash(big.as_bytes()));
}

/// Overwrites `path` with content of the same size and puts its mtime back.
fn same_size_edit(root: &Path, path: &str) {
    let before = mtime(root, path);
    // The inode's change time, which git checks and nobody can set, must move on.
    std::thread::sleep(Duration::from_millis(50));
    write(root, path, "fn a() { 2 }");
    set_mtime(root, path, before);
    assert_eq!(mtime(root, path), before);
}

#[test]
fn a_same_size_edit_keeping_the_mtime_is_caught_by_git() {
    let (repo, commit) = git_tree(&[("a.rs", "fn a() { 1 }"), ("b.rs", "fn b() {}")]);
    let root = repo.path();
    let indexed = index(root);
    same_size_edit(root, "a.rs");

    let changes = detect(root, &indexed, Some(&commit));
    assert_eq!(paths(&changes.modified), ["a.rs"]);
    assert_eq!((changes.unchanged, changes.hashed), (1, 1));
}

#[test]
fn a_same_size_edit_keeping_the_mtime_is_caught_in_a_subdirectory_root() {
    let (repo, commit) = git_tree(&[("top.rs", "fn top() {}"), ("sub/a.rs", "fn a() { 1 }")]);
    let root = repo.path().join("sub");
    let indexed = index(&root);
    assert_eq!(indexed.len(), 1);
    same_size_edit(&root, "a.rs");
    write(repo.path(), "top.rs", "fn top() { changed }");

    let changes = detect(&root, &indexed, Some(&commit));
    assert_eq!(paths(&changes.modified), ["a.rs"]);
    assert_eq!(
        changes.git,
        GitUse::Used {
            since: commit,
            reported: 1
        }
    );
}

/// Outside git only mtime and size are looked at before reading: an edit that keeps both is
/// missed, by design (reading every file on every run is what the chain avoids).
#[test]
fn a_same_size_edit_keeping_the_mtime_is_missed_outside_git() {
    let dir = plain_tree(&[("a.rs", "fn a() { 1 }")]);
    let root = dir.path();
    let indexed = index(root);
    same_size_edit(root, "a.rs");

    let changes = detect(root, &indexed, None);
    assert!(changes.is_empty());
    assert_eq!((changes.unchanged, changes.hashed), (1, 0));
}

#[test]
fn git_trouble_falls_back_to_mtime_and_size_and_says_so() {
    let (repo, first) = git_tree(&[("a.rs", "fn a() { 1 }"), ("b.rs", "fn b() {}")]);
    let root = repo.path();
    let indexed = index(root);
    write(root, "b.rs", "fn b() { changed }");

    let garbage = "0123456789abcdef0123456789abcdef01234567";
    let not_an_id = "--output=/tmp/x";
    // The indexed commit amended away and garbage-collected, as after a rebase.
    git(root, &["commit", "-q", "--amend", "-m", "y"]);
    git(root, &["reflog", "expire", "--expire=now", "--all"]);
    git(root, &["gc", "-q", "--prune=now"]);
    for commit in [garbage, not_an_id, first.as_str()] {
        let changes = detect(root, &indexed, Some(commit));
        let GitUse::Failed(why) = &changes.git else {
            panic!("{commit}: {:?}", changes.git);
        };
        assert!(why.contains(commit), "{why}");
        assert_eq!(paths(&changes.modified), ["b.rs"]);
        assert_eq!(changes.unchanged, 1);
        assert!(changes.git.to_string().contains("mtime and size decided"));
    }
}

#[test]
fn head_commit_and_no_indexed_commit() {
    let plain = tempfile::tempdir().unwrap();
    assert_eq!(head_commit(plain.path()), None);

    let repo = git_repo();
    let root = repo.path();
    write(root, "a.rs", "fn a() {}");
    assert_eq!(head_commit(root), None, "no commits yet");
    assert_eq!(detect(root, &[], None).git, GitUse::NoIndexedCommit);

    let head = commit_all(root);
    assert_eq!(head.len(), 40);
    assert_eq!(head, git(root, &["rev-parse", "HEAD"]).trim());
    let changes = detect(root, &index(root), None);
    assert_eq!(changes.git, GitUse::NoIndexedCommit);
    assert!(changes.is_empty());
}

#[cfg(unix)]
#[test]
fn odd_entries_do_not_abort() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{PermissionsExt, symlink};

    let dir = plain_tree(&[
        ("a.rs", "fn a() {}"),
        ("locked/inner.rs", "fn inner() {}"),
        ("secret.rs", "fn secret() {}"),
    ]);
    let root = dir.path();
    let indexed = index(root);

    fs::write(root.join(OsStr::from_bytes(b"bad\xffname.rs")), "x").unwrap();
    symlink(root.join("missing"), root.join("dangling.rs")).unwrap();
    symlink(root.join("locked"), root.join("link_to_dir")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(root.join("pipe.rs"))
        .status()
        .unwrap();
    assert!(fifo.success());

    let walked = walk(root).unwrap();
    assert_eq!(
        paths(&walked.files),
        ["a.rs", "locked/inner.rs", "secret.rs"]
    );
    assert_eq!(walked.warnings.len(), 1, "{:?}", walked.warnings);
    assert!(walked.warnings[0].contains("not UTF-8"));

    bump_mtime(root, "secret.rs");
    fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(root.join("secret.rs"), fs::Permissions::from_mode(0o000)).unwrap();
    // Permission bits do not stop root.
    let enforced = fs::read(root.join("secret.rs")).is_err();
    let changes = detect(root, &indexed, None);
    fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();

    assert!(
        changes.added.is_empty() && changes.deleted.is_empty(),
        "{changes:?}"
    );
    if enforced {
        // The locked directory's file is kept, not deleted; the unreadable file is modified
        // (its mtime moved and its content cannot be vouched for), and both are warned about.
        assert_eq!(paths(&changes.modified), ["secret.rs"]);
        assert_eq!(changes.unchanged, 2);
        assert!(changes.warnings.iter().any(|w| w.starts_with("locked: ")));
        assert!(
            changes
                .warnings
                .iter()
                .any(|w| w.starts_with("secret.rs: "))
        );
    } else {
        assert_eq!(changes.touched.len(), 1);
        assert_eq!(changes.unchanged, 2);
    }
}

#[test]
fn a_scoped_detection_looks_only_at_the_reported_paths_with_the_trees_rules() {
    let dir = plain_tree(&[
        (".gitignore", "build/\n"),
        ("src/a.rs", "fn a() { 1 }"),
        ("src/b.rs", "fn b() {}\n"),
        ("src/deep/c.rs", "fn c() {}\n"),
        ("docs/d.md", "# d\n"),
    ]);
    let root = dir.path();
    let indexed = index(root);

    // Changed everywhere, reported in src/ only.
    same_size_edit(root, "src/a.rs");
    fs::remove_file(root.join("src/b.rs")).unwrap();
    write(root, "src/deep/new.rs", "fn new() {}\n");
    write(root, "src/build/out.rs", "fn ignored() {}\n");
    write(root, "build/gen.rs", "fn ignored() {}\n");
    write(root, "docs/d.md", "# d, edited elsewhere\n");
    write(root, "docs/e.md", "# e\n");
    let reported = [
        "src/a.rs".to_owned(),
        "src/b.rs".to_owned(),
        "src/deep".to_owned(),
        "build/gen.rs".to_owned(),
    ];
    let changes = quarry_changes::detect_changes_in(root, &indexed, &reported).unwrap();
    assert_eq!(
        paths(&changes.modified),
        ["src/a.rs"],
        "a same-size edit keeping the mtime, hashed"
    );
    assert_eq!(changes.deleted, ["src/b.rs"]);
    assert_eq!(
        paths(&changes.added),
        ["src/deep/new.rs"],
        "ignored files stay out"
    );
    assert_eq!(
        changes.unchanged, 2,
        "src/deep/c.rs, and docs/d.md unlooked at"
    );
    assert_eq!(changes.git, GitUse::NotAsked);

    // The whole tree sees the rest (and, outside git, not the edit that kept the mtime).
    let everything = detect(root, &indexed, None);
    assert_eq!(paths(&everything.added), ["docs/e.md", "src/deep/new.rs"]);
    assert_eq!(paths(&everything.modified), ["docs/d.md"]);
}
