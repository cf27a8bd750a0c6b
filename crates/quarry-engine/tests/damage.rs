//! A damaged index through the engine: `status` says what is damaged and how to fix it, a
//! search answers or says the index is damaged (never panics, never answers nothing where
//! there is something), and the next index run rebuilds the lexical index from the database
//! without embedding anything. Words only: no model runs.

use std::fs;
use std::path::{Path, PathBuf};

use quarry_engine::{Engine, EngineError, EngineOptions, SearchMode, SearchOptions};
use quarry_store::StoreError;
use quarry_testkit::{model, shop};

fn open(root: &Path) -> Engine {
    Engine::open(root, model(), EngineOptions::default()).unwrap()
}

fn lexical() -> SearchOptions {
    SearchOptions {
        mode: SearchMode::Lexical,
        ..SearchOptions::default()
    }
}

/// Each result's path and lines, best first.
fn answer(engine: &Engine, query: &str) -> Result<Vec<String>, EngineError> {
    let response = engine.search(query, &lexical())?;
    Ok(response
        .results
        .iter()
        .map(|r| format!("{}:{}", r.chunk.path, r.chunk.start_line))
        .collect())
}

const QUERIES: &[&str] = &["total with tax", "config", "cart", "deploy script"];

/// Whether any of `lines` holds `text`.
fn any_contains(lines: &[String], text: &str) -> bool {
    lines.iter().any(|line| line.contains(text))
}

/// The lexical index's largest segment file of kind `extension`.
fn largest(root: &Path, extension: &str) -> PathBuf {
    fs::read_dir(root.join(".quarry/lexical"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .max_by_key(|p| fs::metadata(p).unwrap().len())
        .expect("a segment file")
}

/// Indexes the shop by its words, and returns its answers to [`QUERIES`].
fn indexed_shop() -> (tempfile::TempDir, Vec<Vec<String>>) {
    let repo = shop();
    let engine = open(repo.path());
    engine.index_files(&mut |_| {}).unwrap();
    let answers = QUERIES
        .iter()
        .map(|q| answer(&engine, q).unwrap())
        .collect();
    (repo, answers)
}

/// Checks what a new process sees of the damaged index at `root` (status, searches), then
/// that an index run repairs it; returns how many searches said the index is damaged.
fn status_reports_and_index_repairs(root: &Path, expected: &[Vec<String>]) -> usize {
    let engine = open(root);
    let status = engine.status(0.5).unwrap();
    assert!(!status.damage.is_empty(), "{status:?}");
    for line in &status.damage {
        assert!(line.contains("lexical"), "{line}");
        assert!(
            line.contains("is damaged: rebuild with `quarry index --force`"),
            "{line}"
        );
        assert!(status.warnings.contains(line), "{status:?}");
    }
    let mut failed = 0;
    for (query, expected) in QUERIES.iter().zip(expected) {
        match answer(&engine, query) {
            Ok(found) => assert_eq!(found, *expected, "{query}: answers, so correctly"),
            Err(EngineError::Store(error @ StoreError::Damaged { .. })) => {
                let message = error.to_string();
                assert!(message.ends_with("is damaged: rebuild with `quarry index --force`"));
                failed += 1;
            }
            Err(other) => panic!("{query}: {other}"),
        }
    }

    // Nothing changed in the tree, yet the run takes the writer to repair the index.
    let report = engine.index_files(&mut |_| {}).unwrap();
    assert_eq!(report.files_read, 0, "{report:?}");
    let status = engine.status(0.5).unwrap();
    assert!(status.damage.is_empty(), "{status:?}");
    assert!(
        any_contains(&status.warnings, "rebuilt it from the database"),
        "{status:?}"
    );
    for (query, expected) in QUERIES.iter().zip(expected) {
        assert_eq!(answer(&engine, query).unwrap(), *expected, "{query}");
    }
    // And a new process finds it whole.
    assert!(open(root).status(0.5).unwrap().damage.is_empty());
    failed
}

#[test]
fn a_damaged_segment_is_reported_by_status_an_error_to_searches_and_repaired_by_index() {
    let (repo, expected) = indexed_shop();
    assert!(open(repo.path()).status(0.5).unwrap().damage.is_empty());
    // Random bytes inside the postings, the footer (and its checksum) left alone.
    let postings = largest(repo.path(), "idx");
    let mut bytes = fs::read(&postings).unwrap();
    let body = bytes.len().saturating_sub(256).max(1);
    let mut state = 0x5eed_u64;
    for byte in &mut bytes[..body] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *byte = state as u8;
    }
    fs::write(&postings, bytes).unwrap();
    // Only the checksum tells: a reader checks the files of the commit it loads, and marks
    // the index for the next writer, so even the quick check sees it before any search.
    let engine = open(repo.path());
    let damage = engine.store().check(quarry_store::Check::Quick).unwrap();
    assert!(
        damage
            .iter()
            .any(|d| d.to_string().contains("does not match its checksum")),
        "{damage:?}"
    );
    drop(engine);
    let failed = status_reports_and_index_repairs(repo.path(), &expected);
    assert!(failed > 0, "random postings fail a search");
}

#[test]
fn a_deleted_lexical_meta_json_is_damage_not_an_empty_answer() {
    let (repo, expected) = indexed_shop();
    fs::remove_file(repo.path().join(".quarry/lexical/meta.json")).unwrap();
    let engine = open(repo.path());
    let status = engine.status(0.5).unwrap();
    assert!(
        any_contains(&status.damage, "meta.json is missing"),
        "{status:?}"
    );
    let error = answer(&engine, "config").unwrap_err();
    assert!(
        matches!(error, EngineError::Store(StoreError::Damaged { .. })),
        "{error}"
    );
    drop(engine);
    status_reports_and_index_repairs(repo.path(), &expected);
}

#[test]
fn a_truncated_segment_is_repaired_by_the_next_index_run() {
    let (repo, expected) = indexed_shop();
    let terms = largest(repo.path(), "term");
    let bytes = fs::read(&terms).unwrap();
    fs::write(&terms, &bytes[..bytes.len() / 2]).unwrap();
    status_reports_and_index_repairs(repo.path(), &expected);
}
