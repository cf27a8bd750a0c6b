//! The redb index against real files in temporary repositories, chunks stored before their
//! vectors included.

use quarry_chunk::ChunkId;
use quarry_chunk::{ChunkKind, Language};
use quarry_store::{FileState, Filter, IndexSettings, Store, StoreError, StoredChunk};

fn settings() -> IndexSettings {
    IndexSettings {
        model: "test-model@1#abc".into(),
        dimensions: 3,
        chunker: "budget=652".into(),
    }
}

fn chunk(id: u128, path: &str, language: &str) -> StoredChunk {
    StoredChunk {
        id,
        path: path.into(),
        language: language.parse().unwrap(),
        kind: ChunkKind::Function,
        name: Some(format!("f{id}")),
        container: vec![],
        start_line: 1,
        end_line: 2,
        text: format!("fn f{id}() {{}}"),
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

/// A file to store: path, language, and its chunks' ids with their vectors.
type TestFile<'a> = (&'a str, &'a str, &'a [(u128, [f32; 3])]);

/// Stores each file with its chunks and the given vectors, in one batch.
fn put(store: &Store, files: &[TestFile]) {
    let mut batch = store.write().unwrap();
    for (path, language, chunks) in files {
        let ids: Vec<u128> = chunks.iter().map(|(id, _)| *id).collect();
        let new: Vec<(StoredChunk, &[f32])> = chunks
            .iter()
            .map(|(id, vector)| (chunk(*id, path, language), &vector[..]))
            .collect();
        batch.put_file(&state(path, &ids), &new).unwrap();
    }
    batch.commit().unwrap();
}

/// Two chunks, 1 and 2, along the first and second axes.
const TWO_CHUNKS: &[(u128, [f32; 3])] = &[(1, [1.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0])];

/// A fresh index in a temporary repository.
fn new_store() -> (tempfile::TempDir, Store) {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    (repo, store)
}

/// A fresh index holding `files`.
fn store_with(files: &[TestFile]) -> (tempfile::TempDir, Store) {
    let (repo, store) = new_store();
    put(&store, files);
    (repo, store)
}

#[test]
fn files_chunks_and_vectors_survive_reopening() {
    let (repo, store) = store_with(&[("src/a.rs", "rust", TWO_CHUNKS)]);
    drop(store);
    let store = Store::open(repo.path(), settings()).unwrap();
    assert_eq!(
        store.file("src/a.rs").unwrap(),
        Some(state("src/a.rs", &[1, 2]))
    );
    assert_eq!(
        store.chunk(ChunkId(2)).unwrap(),
        Some(chunk(2, "src/a.rs", "rust"))
    );
    assert_eq!(store.vector(ChunkId(2)).unwrap(), Some(vec![0.0, 1.0, 0.0]));
    assert_eq!(store.counts().unwrap().chunks, 2);
    let ignore = std::fs::read_to_string(repo.path().join(".quarry/.gitignore")).unwrap();
    assert_eq!(ignore, "*\n");
}

#[test]
fn reindexing_a_file_keeps_unchanged_chunks_and_drops_removed_ones() {
    let (_repo, store) = store_with(&[("a.py", "python", TWO_CHUNKS)]);

    // Chunk 1 is unchanged (listed, not given), 2 is gone, 3 is new.
    let mut batch = store.write().unwrap();
    batch
        .put_file(
            &state("a.py", &[1, 3]),
            &[(chunk(3, "a.py", "python"), &[0.0, 0.0, 1.0][..])],
        )
        .unwrap();
    batch.commit().unwrap();
    assert_eq!(store.vector(ChunkId(1)).unwrap(), Some(vec![1.0, 0.0, 0.0]));
    assert_eq!(store.chunk(ChunkId(2)).unwrap(), None);
    assert_eq!(store.vector(ChunkId(2)).unwrap(), None);
    assert_eq!(store.counts().unwrap().chunks, 2);

    // Listing a chunk that is neither stored nor given is refused.
    let mut batch = store.write().unwrap();
    let error = batch.put_file(&state("a.py", &[1, 9]), &[]).unwrap_err();
    assert!(
        matches!(error, StoreError::MissingChunk { chunk: 9, .. }),
        "{error}"
    );
}

#[test]
fn removing_a_file_removes_its_chunks() {
    let (_repo, store) = store_with(&[
        ("a.py", "python", &[(1, [1.0, 0.0, 0.0])]),
        ("b.py", "python", &[(2, [0.0, 1.0, 0.0])]),
    ]);
    let mut batch = store.write().unwrap();
    batch.remove_file("a.py").unwrap();
    batch.remove_file("never-indexed.py").unwrap();
    batch.commit().unwrap();
    assert_eq!(store.file("a.py").unwrap(), None);
    assert_eq!(store.chunk(ChunkId(1)).unwrap(), None);
    assert_eq!(store.counts().unwrap().files, 1);
}

#[test]
fn a_batch_that_is_not_committed_changes_nothing() {
    let (_repo, store) = store_with(&[("a.py", "python", &[(1, [1.0, 0.0, 0.0])])]);
    {
        let mut batch = store.write().unwrap();
        batch.remove_file("a.py").unwrap();
        batch
            .put_file(
                &state("b.py", &[2]),
                &[(chunk(2, "b.py", "python"), &[0.0, 1.0, 0.0][..])],
            )
            .unwrap();
        // Dropped: as if the process died here.
    }
    assert!(store.file("a.py").unwrap().is_some());
    assert_eq!(store.file("b.py").unwrap(), None);
    assert_eq!(store.counts().unwrap().chunks, 1);
}

#[test]
fn vectors_of_the_wrong_length_are_refused() {
    let (_repo, store) = new_store();
    let mut batch = store.write().unwrap();
    let error = batch
        .put_file(
            &state("a.py", &[1]),
            &[(chunk(1, "a.py", "python"), &[1.0][..])],
        )
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Dimensions {
                expected: 3,
                found: 1,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn another_model_is_refused_until_the_index_is_rebuilt() {
    let (repo, store) = store_with(&[("a.py", "python", &[(1, [1.0, 0.0, 0.0])])]);
    drop(store);
    let other = IndexSettings {
        model: "other-model@2#def".into(),
        ..settings()
    };
    let error = Store::open(repo.path(), other.clone()).unwrap_err();
    assert!(
        matches!(error, StoreError::SettingsMismatch { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("test-model@1#abc") && message.contains("other-model@2#def"),
        "{message}"
    );
    assert!(message.contains("quarry index --force"), "{message}");

    let store = Store::rebuild(repo.path(), other.clone()).unwrap();
    assert_eq!(store.counts().unwrap().files, 0);
    assert_eq!(store.settings(), &other);
}

#[test]
fn exact_search_ranks_by_cosine_and_filters_before_the_cut() {
    let (_repo, store) = store_with(&[
        (
            "src/a.rs",
            "rust",
            &[(1, [1.0, 0.0, 0.0]), (2, [0.8, 0.6, 0.0])],
        ),
        (
            "src/b.py",
            "python",
            &[(3, [0.6, 0.8, 0.0]), (4, [0.0, 0.0, 1.0])],
        ),
        ("tests/c.py", "python", &[(5, [0.0, 1.0, 0.0])]),
    ]);
    let query = [1.0, 0.0, 0.0];
    let ids = |hits: Vec<quarry_store::Hit>| hits.into_iter().map(|h| h.id.0).collect::<Vec<_>>();

    assert_eq!(
        ids(store.search_exact(&query, 3, &Filter::default()).unwrap()),
        [1, 2, 3]
    );
    // The filtered chunks rank below the cut unfiltered; all of them are still found.
    let python = Filter::default().language(Language::Python);
    assert_eq!(
        ids(store.search_exact(&query, 3, &python).unwrap()),
        [3, 4, 5]
    );
    let src_python = Filter::default()
        .path_glob("src/**")
        .unwrap()
        .language(Language::Python);
    assert_eq!(
        ids(store.search_exact(&query, 10, &src_python).unwrap()),
        [3, 4]
    );
    let by_name = Filter::default().path_glob("*.py").unwrap();
    assert_eq!(
        ids(store.search_exact(&query, 10, &by_name).unwrap()),
        [3, 4, 5]
    );
    let elsewhere = Filter::default().exclude_file("src/a.rs");
    assert_eq!(
        ids(store.search_exact(&query, 2, &elsewhere).unwrap()),
        [3, 4]
    );

    // Equal scores are ordered by id, whatever the insertion order.
    put(&store, &[("d.rs", "rust", &[(9, [0.0, 0.0, 1.0])])]);
    assert_eq!(
        ids(store
            .search_exact(&[0.0, 0.0, 1.0], 2, &Filter::default())
            .unwrap()),
        [4, 9]
    );
}

#[test]
fn an_invalid_glob_is_reported() {
    let error = Filter::default().path_glob("src/[").unwrap_err();
    assert!(error.to_string().contains("src/["), "{error}");
}

#[test]
fn a_damaged_index_file_is_reported_with_the_fix() {
    let (repo, store) = store_with(&[("a.py", "python", &[(1, [1.0, 0.0, 0.0])])]);
    drop(store);
    let path = Store::database_path(repo.path());
    let bytes = std::fs::read(&path).unwrap();

    // Truncated.
    std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
    let message = Store::open(repo.path(), settings())
        .unwrap_err()
        .to_string();
    assert!(message.contains("quarry index --force"), "{message}");

    // Not an index at all.
    std::fs::write(&path, vec![0x5a; bytes.len()]).unwrap();
    let message = Store::open(repo.path(), settings())
        .unwrap_err()
        .to_string();
    assert!(message.contains("quarry index --force"), "{message}");

    // A rebuild recovers.
    assert_eq!(
        Store::rebuild(repo.path(), settings())
            .unwrap()
            .counts()
            .unwrap()
            .files,
        0
    );
}

#[test]
fn a_second_writer_gets_a_clear_error() {
    let (repo, _first) = new_store();
    let error = Store::open(repo.path(), settings()).unwrap_err();
    assert!(matches!(error, StoreError::Locked { .. }), "{error}");
}

/// Stores `path` with its chunks waiting for vectors; the text to embed is `embed: TEXT`.
fn put_pending(store: &Store, path: &str, ids: &[u128], new: &[u128]) {
    let embed: Vec<String> = new.iter().map(|id| format!("embed: f{id}")).collect();
    let new: Vec<(StoredChunk, &str)> = new
        .iter()
        .zip(&embed)
        .map(|(id, embed)| (chunk(*id, path, "rust"), embed.as_str()))
        .collect();
    let mut batch = store.write().unwrap();
    batch.put_file_pending(&state(path, ids), &new).unwrap();
    batch.commit().unwrap();
}

fn put_vectors(store: &Store, vectors: &[(u128, [f32; 3])]) -> usize {
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
    let (_repo, store) = new_store();
    put_pending(&store, "a.rs", &[1, 2], &[1, 2]);

    let counts = store.counts().unwrap();
    assert_eq!((counts.chunks, counts.embedded), (2, 0));
    assert_eq!(
        store.snapshot().unwrap().pending().unwrap(),
        [
            (ChunkId(1), "embed: f1".to_owned()),
            (ChunkId(2), "embed: f2".to_owned())
        ]
    );
    let lexical = store.search_lexical("f1", 10, &Filter::default()).unwrap();
    assert_eq!(lexical[0].id, ChunkId(1));
    assert!(
        store
            .search_dense(&[1.0, 0.0, 0.0], 10, &Filter::default())
            .unwrap()
            .is_empty()
    );

    assert_eq!(put_vectors(&store, &[(1, [1.0, 0.0, 0.0])]), 1);
    assert_eq!(pending_ids(&store), [2]);
    let dense = store
        .search_dense(&[1.0, 0.0, 0.0], 10, &Filter::default())
        .unwrap();
    assert_eq!(dense.iter().map(|h| h.id.0).collect::<Vec<_>>(), [1]);

    // Given twice, a vector is stored once; a chunk that is gone is skipped.
    assert_eq!(
        put_vectors(
            &store,
            &[
                (1, [1.0, 0.0, 0.0]),
                (2, [0.0, 1.0, 0.0]),
                (9, [0.6, 0.8, 0.0])
            ]
        ),
        1
    );
    assert!(pending_ids(&store).is_empty());
    assert_eq!(store.counts().unwrap().embedded, 2);
    assert_eq!(store.vector(ChunkId(9)).unwrap(), None);
}

#[test]
fn a_file_changed_or_removed_before_its_vectors_came_leaves_nothing_pending() {
    let (_repo, store) = new_store();
    put_pending(&store, "a.rs", &[1, 2], &[1, 2]);
    put_pending(&store, "b.rs", &[3], &[3]);
    // a.rs changes: chunk 2 goes, chunk 4 comes; chunk 1 is still waiting.
    put_pending(&store, "a.rs", &[1, 4], &[4]);
    assert_eq!(pending_ids(&store), [1, 3, 4]);
    let mut batch = store.write().unwrap();
    batch.remove_file("b.rs").unwrap();
    batch.commit().unwrap();
    assert_eq!(pending_ids(&store), [1, 4]);
    assert_eq!(
        put_vectors(&store, &[(2, [1.0, 0.0, 0.0]), (3, [1.0, 0.0, 0.0])]),
        0
    );
    assert_eq!(store.counts().unwrap().embedded, 0);
}

#[test]
fn drift_waits_until_every_new_chunk_has_its_vector() {
    let (_repo, store) = new_store();
    put_pending(&store, "a.rs", &[1, 2], &[1, 2]);
    put_vectors(&store, &[(1, [1.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0])]);
    // A new file has no drift, whenever its vectors come.
    assert_eq!(store.snapshot().unwrap().drift("a.rs").unwrap(), None);

    // Chunk 2 is rewritten as 3, and rewritten again as 4 before any vector comes: the drift
    // is measured from the chunks embedded before the first change.
    put_pending(&store, "a.rs", &[1, 3], &[3]);
    put_pending(&store, "a.rs", &[1, 4], &[4]);
    assert_eq!(store.snapshot().unwrap().drift("a.rs").unwrap(), None);
    put_vectors(&store, &[(4, [0.6, 0.8, 0.0])]);
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
    let (repo, store) = new_store();
    put_pending(&store, "a.rs", &[1], &[1]);
    let reader = Store::open_read_only(repo.path(), settings()).unwrap();
    assert_eq!(pending_ids(&reader), [1]);
    put_vectors(&store, &[(1, [1.0, 0.0, 0.0])]);
    assert!(pending_ids(&reader).is_empty());
    assert_eq!(reader.counts().unwrap().embedded, 1);
}
