//! A cloned repository can commit `.quarry`, or a part of it, as a symbolic link: every way
//! the store opens, creates or replaces an index refuses it, and what the link points at is
//! left exactly as it was.
#![cfg(unix)]

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use quarry_chunk::{ChunkKind, Language};
use quarry_store::{FileState, IndexSettings, Store, StoreError, StoredChunk};

fn settings() -> IndexSettings {
    common::settings("links", 2)
}

/// An index of one file, with its lexical index and a checkpoint's rows written.
fn indexed_repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    let chunk = StoredChunk {
        id: 7,
        path: "src/lib.rs".into(),
        language: Language::Rust,
        kind: ChunkKind::Function,
        name: Some("parse".into()),
        container: vec![],
        start_line: 1,
        end_line: 1,
        text: "fn parse() {}".into(),
    };
    let state = FileState {
        path: "src/lib.rs".into(),
        content_hash: 1,
        mtime_ns: 0,
        size: 13,
        chunk_ids: vec![7],
    };
    let mut batch = store.write().unwrap();
    batch.put_file(&state, &[(chunk, &[0.6, 0.8][..])]).unwrap();
    batch.commit().unwrap();
    store.checkpoint().unwrap();
    repo
}

/// A directory outside the repository holding files a user cares about, and what it held.
struct Elsewhere {
    dir: tempfile::TempDir,
}

impl Elsewhere {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for part in ["lexical", "rows", "vectors", "rebuild", "retired"] {
            fs::create_dir(dir.path().join(part)).unwrap();
            fs::write(dir.path().join(part).join("mine.txt"), "the user's\n").unwrap();
        }
        fs::write(dir.path().join("index.redb"), "not quarry's\n").unwrap();
        fs::write(dir.path().join("notes.txt"), "the user's\n").unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every file below, with its bytes.
    fn contents(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut found = Vec::new();
        let mut dirs = vec![self.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    found.push((path.clone(), fs::read(&path).unwrap()));
                }
            }
        }
        found.sort();
        found
    }
}

/// Every way into the index at `root`, each of which must be refused with
/// [`StoreError::Link`].
fn assert_every_open_refused(root: &Path, what: &str) {
    let opened = [
        ("open", Store::open(root, settings()).map(drop)),
        (
            "open_read_only",
            Store::open_read_only(root, settings()).map(drop),
        ),
        ("stage", Store::stage(root, settings()).map(drop)),
        ("rebuild", Store::rebuild(root, settings()).map(drop)),
    ];
    for (how, outcome) in opened {
        match outcome {
            Err(StoreError::Link { path }) => {
                assert!(path.starts_with(root), "{what}, {how}: {}", path.display())
            }
            other => panic!("{what}, {how}: {other:?}"),
        }
    }
}

#[test]
fn an_index_directory_that_is_a_link_is_refused_and_nothing_elsewhere_changes() {
    let repo = tempfile::tempdir().unwrap();
    let elsewhere = Elsewhere::new();
    let before = elsewhere.contents();
    symlink(elsewhere.path(), repo.path().join(".quarry")).unwrap();
    assert_every_open_refused(repo.path(), ".quarry");
    let error = Store::open(repo.path(), settings())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(".quarry") && error.contains("symbolic link") && error.contains("rm "),
        "{error}"
    );
    assert_eq!(elsewhere.contents(), before);
    assert!(!Store::is_rebuilding(repo.path()));
}

#[test]
fn a_link_in_place_of_any_part_of_the_index_is_refused() {
    for part in [
        "lexical",
        "vectors",
        "rows",
        "rebuild",
        "retired",
        "index.redb",
        "writer.lock",
        ".gitignore",
    ] {
        let repo = indexed_repository();
        let elsewhere = Elsewhere::new();
        let before = elsewhere.contents();
        let at = repo.path().join(".quarry").join(part);
        if at.is_dir() {
            fs::remove_dir_all(&at).unwrap();
        } else if at.exists() {
            fs::remove_file(&at).unwrap();
        }
        let target = match part {
            "index.redb" | ".gitignore" | "writer.lock" => elsewhere.path().join("notes.txt"),
            dir => elsewhere.path().join(dir),
        };
        symlink(&target, &at).unwrap();
        assert_every_open_refused(repo.path(), part);
        assert_eq!(elsewhere.contents(), before, "{part}");
    }
}

#[test]
fn a_link_inside_a_part_of_the_index_is_refused() {
    let repo = indexed_repository();
    let elsewhere = Elsewhere::new();
    let before = elsewhere.contents();
    symlink(
        elsewhere.path().join("notes.txt"),
        repo.path().join(".quarry/lexical/meta.json.lock"),
    )
    .unwrap();
    assert_every_open_refused(repo.path(), "lexical/meta.json.lock");
    assert_eq!(elsewhere.contents(), before);
}
