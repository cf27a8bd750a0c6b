//! Chunks stored before their vectors: searchable by words at once, by meaning once their
//! vectors come, with nothing lost or done twice in between.

use quarry_chunk::ChunkId;
use quarry_store::{FileState, Filter, IndexSettings, Store, StoredChunk};

fn settings() -> IndexSettings {
    IndexSettings {
        model: "pending-test".into(),
        dimensions: 2,
        chunker: "v1".into(),
    }
}

fn chunk(id: u128, path: &str, text: &str) -> StoredChunk {
    StoredChunk {
        id,
        path: path.into(),
        language: "rust".into(),
        kind: "function".into(),
        name: None,
        container: vec![],
        start_line: 1,
        end_line: 1,
        text: text.into(),
    }
}

fn state(path: &str, ids: &[u128]) -> FileState {
    FileState {
        path: path.into(),
        content_hash: ids.iter().sum::<u128>() as u64,
        mtime_ns: 1,
        size: 10,
        chunk_ids: ids.to_vec(),
    }
}

/// Stores `path` with its chunks waiting for vectors; the text to embed is `embed: TEXT`.
fn put_pending(store: &Store, path: &str, ids: &[u128], new: &[(u128, &str)]) {
    let embed: Vec<String> = new
        .iter()
        .map(|(_, text)| format!("embed: {text}"))
        .collect();
    let new: Vec<(StoredChunk, &str)> = new
        .iter()
        .zip(&embed)
        .map(|((id, text), embed)| (chunk(*id, path, text), embed.as_str()))
        .collect();
    let mut batch = store.write().unwrap();
    batch.put_file_pending(&state(path, ids), &new).unwrap();
    batch.commit().unwrap();
}

fn put_vectors(store: &Store, vectors: &[(u128, [f32; 2])]) -> usize {
    let new: Vec<(ChunkId, &[f32])> = vectors
        .iter()
        .map(|(id, v)| (ChunkId(*id), &v[..]))
        .collect();
    let mut batch = store.write().unwrap();
    let stored = batch.put_vectors(&new).unwrap();
    batch.commit().unwrap();
    stored
}

fn pending_ids(store: &Store) -> Vec<u128> {
    store
        .snapshot()
        .unwrap()
        .pending()
        .unwrap()
        .into_iter()
        .map(|(id, _)| id.0)
        .collect()
}

#[test]
fn pending_chunks_are_found_by_words_first_and_by_meaning_once_embedded() {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    put_pending(
        &store,
        "a.rs",
        &[1, 2],
        &[(1, "fn alpha() {}"), (2, "fn beta() {}")],
    );

    let counts = store.counts().unwrap();
    assert_eq!((counts.chunks, counts.embedded), (2, 0));
    assert_eq!(
        store.snapshot().unwrap().pending().unwrap(),
        [
            (ChunkId(1), "embed: fn alpha() {}".to_owned()),
            (ChunkId(2), "embed: fn beta() {}".to_owned())
        ]
    );
    let lexical = store
        .search_lexical("alpha", 10, &Filter::default())
        .unwrap();
    assert_eq!(lexical[0].id, ChunkId(1));
    assert!(
        store
            .search_dense(&[1.0, 0.0], 10, &Filter::default())
            .unwrap()
            .is_empty()
    );

    assert_eq!(put_vectors(&store, &[(1, [1.0, 0.0])]), 1);
    assert_eq!(pending_ids(&store), [2]);
    let dense = store
        .search_dense(&[1.0, 0.0], 10, &Filter::default())
        .unwrap();
    assert_eq!(dense.iter().map(|h| h.id.0).collect::<Vec<_>>(), [1]);

    // Given twice, a vector is stored once; a chunk that is gone is skipped.
    assert_eq!(
        put_vectors(&store, &[(1, [1.0, 0.0]), (2, [0.0, 1.0]), (9, [0.6, 0.8])]),
        1
    );
    assert!(pending_ids(&store).is_empty());
    assert_eq!(store.counts().unwrap().embedded, 2);
    assert_eq!(store.vector(ChunkId(9)).unwrap(), None);
}

#[test]
fn a_file_changed_or_removed_before_its_vectors_came_leaves_nothing_pending() {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    put_pending(&store, "a.rs", &[1, 2], &[(1, "one"), (2, "two")]);
    put_pending(&store, "b.rs", &[3], &[(3, "three")]);
    // a.rs changes: chunk 2 goes, chunk 4 comes; chunk 1 is still waiting.
    put_pending(&store, "a.rs", &[1, 4], &[(4, "four")]);
    assert_eq!(pending_ids(&store), [1, 3, 4]);
    let mut batch = store.write().unwrap();
    batch.remove_file("b.rs").unwrap();
    batch.commit().unwrap();
    assert_eq!(pending_ids(&store), [1, 4]);
    assert_eq!(put_vectors(&store, &[(2, [1.0, 0.0]), (3, [1.0, 0.0])]), 0);
    assert_eq!(store.counts().unwrap().embedded, 0);
}

#[test]
fn drift_waits_until_every_new_chunk_has_its_vector() {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    put_pending(&store, "a.rs", &[1, 2], &[(1, "one"), (2, "two")]);
    put_vectors(&store, &[(1, [1.0, 0.0]), (2, [0.0, 1.0])]);
    // A new file has no drift, whenever its vectors come.
    assert_eq!(store.snapshot().unwrap().drift("a.rs").unwrap(), None);

    // Chunk 2 is rewritten as 3, and rewritten again as 4 before any vector comes: the drift
    // is measured from the chunks embedded before the first change.
    put_pending(&store, "a.rs", &[1, 3], &[(3, "two, edited")]);
    put_pending(&store, "a.rs", &[1, 4], &[(4, "two, edited twice")]);
    assert_eq!(store.snapshot().unwrap().drift("a.rs").unwrap(), None);
    put_vectors(&store, &[(4, [0.6, 0.8])]);
    let drift = store.snapshot().unwrap().drift("a.rs").unwrap().unwrap();
    assert_eq!((drift.chunks_before, drift.chunks_after), (2, 2));
    assert!((drift.max - 0.2).abs() < 1e-5, "{drift:?}");
    assert!((drift.average - 0.1).abs() < 1e-5, "{drift:?}");

    // A change that only drops a chunk needs no vector: its drift is recorded at once.
    put_pending(&store, "a.rs", &[1], &[]);
    let drift = store.snapshot().unwrap().drift("a.rs").unwrap().unwrap();
    assert_eq!((drift.chunks_before, drift.chunks_after), (2, 1));
}

#[test]
fn an_index_reopened_read_only_sees_what_is_pending() {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    put_pending(&store, "a.rs", &[1], &[(1, "one")]);
    let reader = Store::open_read_only(repo.path(), settings()).unwrap();
    assert_eq!(pending_ids(&reader), [1]);
    put_vectors(&store, &[(1, [1.0, 0.0])]);
    assert!(pending_ids(&reader).is_empty());
    assert_eq!(reader.counts().unwrap().embedded, 1);
}
