//! The second phase embeds in the order people search: plain source first.

use quarry_engine::{Engine, EngineOptions};
use quarry_testkit::model;

use super::shop;

/// Paths of the shop's files that are not plain source (a test, docs).
fn is_later(path: &str) -> bool {
    path.starts_with("tests/") || path.starts_with("docs/")
}

#[test]
fn source_files_are_embedded_before_tests_and_docs() {
    let repo = shop();
    let options = EngineOptions {
        chunks_per_commit: 1,
        ..EngineOptions::default()
    };
    let engine = Engine::open(repo.path(), model(), options).unwrap();
    engine.index_files(&mut |_| {}).unwrap();
    let waiting_paths = |engine: &Engine| -> Vec<String> {
        let store = engine.store();
        let snapshot = store.snapshot().unwrap();
        let pending = snapshot.pending().unwrap();
        let ids: Vec<_> = pending.iter().map(|(id, _)| *id).collect();
        (snapshot.chunks(&ids).unwrap().into_iter())
            .map(|chunk| chunk.unwrap().path)
            .collect()
    };
    let waiting = waiting_paths(&engine);
    let source = waiting.iter().filter(|p| !is_later(p)).count();
    let later = waiting.len() - source;
    assert!(source > 20 && later >= 4, "{waiting:?}");

    // Stopped once as many chunks as the source has are embedded: those are the source's.
    let mut batches = 0;
    let embedded = engine
        .embed_pending_while(&mut |_| {}, &mut || {
            batches += 1;
            batches <= source
        })
        .unwrap();
    assert_eq!(embedded.embedded, source);
    let still = waiting_paths(&engine);
    assert_eq!(still.len(), later, "{still:?}");
    assert!(still.iter().all(|p| is_later(p)), "{still:?}");
}
