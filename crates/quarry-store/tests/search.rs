//! Searching a real on-disk index: the HNSW graph against the exact scan, the lexical index,
//! filters inside both, drift, and the derived indexes' repair.

mod common;

use quarry_chunk::{ChunkKind, Language};
use std::collections::HashSet;
use std::path::Path;

use quarry_chunk::ChunkId;
use quarry_store::{
    DenseStrategy, FileState, Filter, Hit, IndexSettings, PROJECT_SCOPE, Store, StoredChunk,
    VectorSaves,
};

const DIMENSIONS: usize = 16;
const CHUNKS_PER_FILE: usize = 10;
/// Files in a "large" index: 3,000 chunks, and the graph used from 2,000 on (the default
/// threshold is higher; building a graph that large would slow the tests down).
const FILES: usize = 300;
const GRAPH_FROM: u64 = 2_000;

fn settings() -> IndexSettings {
    common::settings("search-test", DIMENSIONS)
}

fn unit(seed: u64) -> Vec<f32> {
    common::unit(seed, DIMENSIONS)
}

fn chunk(id: u128, path: &str, text: &str) -> StoredChunk {
    let language = if path.ends_with(".py") {
        "python"
    } else {
        "rust"
    };
    StoredChunk {
        id,
        path: path.into(),
        language: language.parse().unwrap(),
        kind: ChunkKind::Function,
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
        content_hash: ids.iter().fold(0, |h, id| h ^ *id as u64),
        mtime_ns: 0,
        size: 0,
        chunk_ids: ids.to_vec(),
    }
}

/// The path of file `i`: one in three is Python, and they spread over ten directories.
fn path_of(file: usize) -> String {
    let extension = if file.is_multiple_of(3) { "py" } else { "rs" };
    format!("src/dir{}/file{file}.{extension}", file % 10)
}

/// An index of `files` files with ten chunks each; chunk `c` of file `f` has id
/// `f * 10 + c` and vector `unit(id)`.
fn large_index(root: &Path, files: usize) -> Store {
    let store = open(root);
    for first in (0..files).step_by(200) {
        add_files(&store, first..(first + 200).min(files));
    }
    store
}

fn ids(hits: &[Hit]) -> Vec<u128> {
    hits.iter().map(|h| h.id.0).collect()
}

fn open(root: &Path) -> Store {
    let mut store = Store::open(root, settings()).unwrap();
    store.set_exact_scan_below(GRAPH_FROM);
    store
}

/// A reader of the index at `root`, as [`open`] sets a writer up.
fn open_reader(root: &Path) -> Store {
    let mut store = Store::open_read_only(root, settings()).unwrap();
    store.set_exact_scan_below(GRAPH_FROM);
    store
}

/// A large index whose graph a checkpoint built, searched through the graph.
fn graph_index(root: &Path) -> Store {
    let mut store = large_index(root, FILES);
    store.checkpoint().unwrap();
    store.set_dense_strategy(DenseStrategy::Graph);
    store
}

/// The writer of the index at `root`, searching through its graph.
fn open_graph(root: &Path) -> Store {
    let mut store = open(root);
    store.set_dense_strategy(DenseStrategy::Graph);
    store
}

/// The ids of the one nearest chunk to `query`.
fn top(store: &Store, query: &[f32]) -> Vec<u128> {
    ids(&store.search_dense(query, 1, &Filter::default()).unwrap())
}

/// Commits file `removed`'s removal and a new file, `src/new.rs`, of one chunk `id` with
/// `vector`.
fn replace_file(store: &Store, removed: usize, id: u128, vector: &[f32]) {
    let mut batch = store.write().unwrap();
    batch.remove_file(&path_of(removed)).unwrap();
    batch
        .put_file(
            &state("src/new.rs", &[id]),
            &[(chunk(id, "src/new.rs", "new"), vector)],
        )
        .unwrap();
    batch.commit().unwrap();
}

/// Searches `store` for each chunk of file `removed`, `k` deep, and asserts that none of
/// them comes back; returns each chunk's vector with its hits.
fn search_removed(store: &Store, removed: u128, k: usize) -> Vec<(Vec<f32>, Vec<Hit>)> {
    let first = removed * CHUNKS_PER_FILE as u128;
    (first..first + CHUNKS_PER_FILE as u128)
        .map(|id| {
            let query = unit(id as u64);
            let hits = store.search_dense(&query, k, &Filter::default()).unwrap();
            assert!(
                hits.iter().all(|h| h.id.0 / 10 != removed),
                "a removed chunk came back"
            );
            (query, hits)
        })
        .collect()
}

/// Mean share of the exact top `k` that the searched top `k` holds, over 40 queries.
fn recall(store: &Store, k: usize, filter: &Filter) -> f64 {
    let mut total = 0.0;
    for q in 0..40 {
        let query = unit(1_000_000 + q);
        let exact: HashSet<u128> = ids(&store.search_exact(&query, k, filter).unwrap())
            .into_iter()
            .collect();
        let found = store.search_dense(&query, k, filter).unwrap();
        assert_eq!(found.len(), exact.len(), "as many results as exist");
        assert!(
            found.windows(2).all(|w| w[0].score >= w[1].score),
            "best first"
        );
        total += found.iter().filter(|h| exact.contains(&h.id.0)).count() as f64 / k as f64;
    }
    total / 40.0
}

#[test]
fn the_graph_agrees_with_the_exact_scan_with_and_without_filters() {
    let repo = tempfile::tempdir().unwrap();
    let mut store = graph_index(repo.path());
    let info = store
        .vector_index()
        .unwrap()
        .expect("the checkpoint built it");
    assert_eq!(
        (info.nodes, info.live),
        (FILES * CHUNKS_PER_FILE, FILES * CHUNKS_PER_FILE)
    );
    let calibration = info.calibration.expect("3,000 vectors are calibrated");
    assert!(calibration.reaching_target().is_some(), "{calibration:?}");

    assert!(recall(&store, 10, &Filter::default()) >= 0.97);
    // About a third of the chunks: searched in the graph with the filter inside.
    let python = Filter::default().language(Language::Python);
    assert!(recall(&store, 10, &python) >= 0.97);
    // A few percent: scanned, so exact.
    let one_directory = Filter::default()
        .path_glob("src/dir3/**")
        .unwrap()
        .language(Language::Python);
    assert_eq!(recall(&store, 10, &one_directory), 1.0);
    // Fewer matches than asked for: all of them.
    let one_file = Filter::default().path_glob("file42.py").unwrap();
    let hits = store.search_dense(&unit(7), 50, &one_file).unwrap();
    assert_eq!(hits.len(), CHUNKS_PER_FILE);
    assert!(hits.iter().all(|h| h.id.0 / 10 == 42));

    // A vector finds its own chunk first.
    assert_eq!(top(&store, &unit(2345)), [2345]);
    assert!(store.notes().is_empty(), "{:?}", store.notes());

    // As calibrated (the graph or a scan, whichever was faster) and scanned in memory.
    for strategy in [DenseStrategy::Calibrated, DenseStrategy::Scan] {
        store.set_dense_strategy(strategy);
        assert!(
            recall(&store, 10, &Filter::default()) >= 0.97,
            "{strategy:?}"
        );
        assert!(recall(&store, 10, &python) >= 0.97, "{strategy:?}");
    }
    assert_eq!(recall(&store, 10, &Filter::default()), 1.0);
}

#[test]
fn searches_scan_the_database_until_a_checkpoint_builds_the_graph() {
    let repo = tempfile::tempdir().unwrap();
    let store = large_index(repo.path(), FILES);
    assert!(store.vector_index().unwrap().is_none());
    assert_eq!(recall(&store, 10, &Filter::default()), 1.0);
    assert!(
        store.vector_index().unwrap().is_none(),
        "a search built the graph"
    );
    store.checkpoint().unwrap();
    assert!(store.vector_index().unwrap().is_some());
    assert!(repo.path().join(".quarry/vectors/meta.bin").exists());
}

#[test]
fn a_small_index_is_scanned_in_memory_and_follows_the_writers_commits() {
    let repo = tempfile::tempdir().unwrap();
    let writer = large_index(repo.path(), 100);
    let reader = open_reader(repo.path());
    let python = Filter::default().language(Language::Python);
    for filter in [Filter::default(), python] {
        for q in 0..10 {
            let query = unit(2_000_000 + q);
            assert_eq!(
                reader.search_dense(&query, 10, &filter).unwrap(),
                reader.search_exact(&query, 10, &filter).unwrap(),
            );
        }
    }
    assert!(
        reader.vector_index().unwrap().is_none(),
        "no graph is built"
    );

    // The rows the first search read follow later commits: one file gone, one added.
    let (new_id, vector) = (77_000_000u128, unit(654_321));
    replace_file(&writer, 7, new_id, &vector);
    assert_eq!(top(&reader, &vector), [new_id]);
    for (query, hits) in search_removed(&reader, 7, 100) {
        assert_eq!(
            hits,
            reader
                .search_exact(&query, 100, &Filter::default())
                .unwrap()
        );
    }

    // A checkpoint saves the rows; the next reader starts from them, and from the database
    // where they are damaged, saying so.
    writer.checkpoint().unwrap();
    let rows = repo.path().join(".quarry/rows/rows.f32");
    assert!(rows.is_file());
    let fresh_reader = || {
        let mut reader = Store::open_read_only(repo.path(), settings()).unwrap();
        reader.set_exact_scan_below(GRAPH_FROM);
        reader
    };
    let same_as_exact = |reader: &Store| {
        for q in 0..10 {
            let query = unit(3_000_000 + q);
            assert_eq!(
                reader.search_dense(&query, 10, &Filter::default()).unwrap(),
                reader.search_exact(&query, 10, &Filter::default()).unwrap(),
            );
        }
    };
    let reader = fresh_reader();
    same_as_exact(&reader);
    assert!(reader.notes().is_empty(), "{:?}", reader.notes());
    let mut bytes = std::fs::read(&rows).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&rows, bytes).unwrap();
    let reader = fresh_reader();
    same_as_exact(&reader);
    assert!(
        reader.notes().iter().any(|n| n.contains("checksum")),
        "{:?}",
        reader.notes()
    );
}

#[test]
fn the_graph_follows_removals_and_additions_and_survives_reopening() {
    let repo = tempfile::tempdir().unwrap();
    {
        let store = graph_index(repo.path());
        // Changes after the checkpoint reach the next process through the database.
        replace_file(&store, 5, 99_000_000, &unit(123_456));
    }
    let store = open_graph(repo.path());
    assert_eq!(top(&store, &unit(123_456)), [99_000_000]);
    let info = store.vector_index().unwrap().unwrap();
    assert_eq!(info.nodes - info.live, CHUNKS_PER_FILE, "tombstones");
    search_removed(&store, 5, 10);
    assert!(recall(&store, 10, &Filter::default()) >= 0.97);
    assert!(store.notes().is_empty(), "{:?}", store.notes());

    // A reader in the same state sees the same.
    let mut reader = open_reader(repo.path());
    reader.set_dense_strategy(DenseStrategy::Graph);
    assert_eq!(top(&reader, &unit(123_456)), [99_000_000]);
}

#[test]
fn a_damaged_graph_is_scanned_around_said_so_and_rebuilt_at_the_checkpoint() {
    let repo = tempfile::tempdir().unwrap();
    large_index(repo.path(), FILES).checkpoint().unwrap();
    let graph = repo.path().join(".quarry/vectors/graph.hnsw.graph");
    let mut bytes = std::fs::read(&graph).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&graph, bytes).unwrap();

    let store = open_graph(repo.path());
    assert_eq!(top(&store, &unit(77)), [77]);
    assert!(store.vector_index().unwrap().is_none());
    let notes = store.notes();
    assert!(
        notes.len() == 1 && notes[0].contains("checksum") && notes[0].contains("checkpoint"),
        "{notes:?}"
    );
    store.checkpoint().unwrap();
    assert_eq!(
        store.vector_index().unwrap().unwrap().live,
        FILES * CHUNKS_PER_FILE
    );
    assert!(recall(&store, 10, &Filter::default()) >= 0.97);
    assert_eq!(store.notes().len(), 1, "reported once");
}

/// The ids the lexical index finds for `query`, unfiltered.
fn lexical(store: &Store, query: &str) -> Vec<u128> {
    ids(&store.search_lexical(query, 10, &Filter::default()).unwrap())
}

/// Stores `a.rs`, of one chunk, `fn alpha() {}` (id 1), in the index at `root`, and closes it.
fn index_alpha(root: &Path) {
    let store = Store::open(root, settings()).unwrap();
    put_texts(&store, &[("a.rs", &[(1, "fn alpha() {}")])]);
}

/// Files of Rust and Python snippets for the lexical index.
fn put_texts(store: &Store, files: &[(&str, &[(u128, &str)])]) {
    let mut batch = store.write().unwrap();
    for (path, chunks) in files {
        let ids: Vec<u128> = chunks.iter().map(|(id, _)| *id).collect();
        let vectors: Vec<Vec<f32>> = ids.iter().map(|&id| unit(id as u64)).collect();
        let new: Vec<(StoredChunk, &[f32])> = chunks
            .iter()
            .zip(&vectors)
            .map(|((id, text), v)| (chunk(*id, path, text), &v[..]))
            .collect();
        batch.put_file(&state(path, &ids), &new).unwrap();
    }
    batch.commit().unwrap();
}

#[test]
fn lexical_search_finds_identifiers_across_naming_conventions_with_filters_inside() {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    put_texts(
        &store,
        &[
            (
                "src/settings.rs",
                &[
                    (1, "fn parse_config(text: &str) -> Config { todo() }"),
                    (2, "fn load_file(path: &Path) -> String { read(path) }"),
                ],
            ),
            (
                "tools/settings.py",
                &[(3, "def parseConfig(text):\n    return Config(text)")],
            ),
            (
                "lib:serde/src/de.rs",
                &[(4, "pub fn parse_config_value() {}")],
            ),
        ],
    );
    let found = |query: &str, filter: &Filter| -> Vec<u128> {
        let mut ids = ids(&store.search_lexical(query, 10, filter).unwrap());
        ids.sort_unstable();
        ids
    };
    assert_eq!(found("parseConfig", &Filter::default()), [1, 3, 4]);
    assert_eq!(found("load_file", &Filter::default()), [2]);
    assert_eq!(
        found(
            "parse config",
            &Filter::default().language(Language::Python)
        ),
        [3]
    );
    assert_eq!(
        found(
            "parse config",
            &Filter::default().path_glob("*.rs").unwrap()
        ),
        [1, 4]
    );
    assert_eq!(
        found("parse config", &Filter::default().scope(PROJECT_SCOPE)),
        [1, 3]
    );
    assert_eq!(
        found("parse config", &Filter::default().scope("lib:serde")),
        [4]
    );
    assert_eq!(
        found(
            "parse config",
            &Filter::default().exclude_file("src/settings.rs")
        ),
        [3, 4]
    );
    assert!(found("", &Filter::default()).is_empty());

    // Removed chunks leave the lexical index with the file.
    common::remove_file(&store, "tools/settings.py");
    assert_eq!(found("parseConfig", &Filter::default()), [1, 4]);

    // Another process reading sees the writer's commits.
    let reader = Store::open_read_only(repo.path(), settings()).unwrap();
    assert_eq!(lexical(&reader, "load_file"), [2]);
    put_texts(&store, &[("src/late.rs", &[(9, "fn arrived_late() {}")])]);
    assert_eq!(lexical(&reader, "arrived late"), [9]);
}

#[test]
fn a_lexical_index_behind_the_database_is_rebuilt_on_open() {
    let repo = tempfile::tempdir().unwrap();
    index_alpha(repo.path());
    // As if the process had died between the database's commit and the lexical index's.
    std::fs::remove_dir_all(repo.path().join(".quarry/lexical")).unwrap();
    std::fs::create_dir(repo.path().join(".quarry/lexical")).unwrap();
    std::fs::write(repo.path().join(".quarry/lexical/meta.json"), b"{ not json").unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    assert_eq!(lexical(&store, "alpha"), [1]);
}

#[test]
fn reindexed_files_record_their_drift() {
    let repo = tempfile::tempdir().unwrap();
    let store = Store::open(repo.path(), settings()).unwrap();
    let v: Vec<Vec<f32>> = (0..4).map(unit).collect();
    let put = |ids: &[u128], new: &[(u128, &str, &[f32])]| {
        let mut batch = store.write().unwrap();
        let new: Vec<(StoredChunk, &[f32])> = new
            .iter()
            .map(|(id, text, vector)| (chunk(*id, "a.rs", text), *vector))
            .collect();
        batch.put_file(&state("a.rs", ids), &new).unwrap();
        batch.commit().unwrap();
    };
    put(&[1, 2], &[(1, "one", &v[0]), (2, "two", &v[1])]);
    assert_eq!(store.snapshot().unwrap().drift("a.rs").unwrap(), None);

    // Chunk 1 unchanged, chunk 2 rewritten (a new id and vector), chunk 3 added.
    put(
        &[1, 4, 3],
        &[(4, "two, edited", &v[1]), (3, "three", &v[3])],
    );
    let drift = store.snapshot().unwrap().drift("a.rs").unwrap().unwrap();
    assert_eq!((drift.chunks_before, drift.chunks_after), (2, 3));
    assert_eq!(drift.max, 1.0, "the added chunk has no partner");
    assert!((drift.average - 1.0 / 3.0).abs() < 1e-5, "{drift:?}");
    assert_eq!(store.drifts(0.3).unwrap(), vec![drift.clone()]);
    assert!(store.drifts(0.5).unwrap().is_empty());

    let mut batch = store.write().unwrap();
    batch.set_file_data("a.rs", "pagerank", b"0.25").unwrap();
    batch.set_indexed_commit("0123abcd").unwrap();
    batch.commit().unwrap();
    let snapshot = store.snapshot().unwrap();
    assert_eq!(
        snapshot.file_data("a.rs", "pagerank").unwrap().as_deref(),
        Some(&b"0.25"[..])
    );
    assert_eq!(store.indexed_commit().unwrap().as_deref(), Some("0123abcd"));

    common::remove_file(&store, "a.rs");
    let snapshot = store.snapshot().unwrap();
    assert_eq!(snapshot.drift("a.rs").unwrap(), None);
    assert_eq!(snapshot.file_data("a.rs", "pagerank").unwrap(), None);
}

#[test]
fn a_rebuild_replaces_the_derived_indexes_too() {
    let repo = tempfile::tempdir().unwrap();
    index_alpha(repo.path());
    let store = Store::rebuild(repo.path(), settings()).unwrap();
    assert!(lexical(&store, "alpha").is_empty());
    assert_eq!(store.chunk(ChunkId(1)).unwrap(), None);
    let error = store
        .search_dense(&[1.0], 1, &Filter::default())
        .unwrap_err();
    assert!(error.to_string().contains("16"), "{error}");
}

/// A rebuild given up before it published (its run failed) leaves the live index as it was
/// and no `.quarry/rebuild/` behind.
#[test]
fn a_rebuild_given_up_leaves_nothing_staged() {
    let repo = tempfile::tempdir().unwrap();
    index_alpha(repo.path());
    let staged = Store::stage(repo.path(), settings()).unwrap();
    put_texts(&staged, &[("b.rs", &[(2, "fn beta() {}")])]);
    assert!(Store::is_rebuilding(repo.path()));
    drop(staged);
    assert!(!repo.path().join(".quarry/rebuild").exists());
    assert!(!Store::is_rebuilding(repo.path()));
    let store = Store::open_read_only(repo.path(), settings()).unwrap();
    assert!(store.chunk(ChunkId(1)).unwrap().is_some());
    assert_eq!(store.chunk(ChunkId(2)).unwrap(), None);
}

/// Stores files `files` in one commit: chunk `c` of file `f` has id `f * 10 + c` and vector
/// `unit(id)`.
fn add_files(store: &Store, files: std::ops::Range<usize>) {
    let mut batch = store.write().unwrap();
    for file in files {
        let path = path_of(file);
        let ids: Vec<u128> = (0..CHUNKS_PER_FILE)
            .map(|c| (file * CHUNKS_PER_FILE + c) as u128)
            .collect();
        let vectors: Vec<Vec<f32>> = ids.iter().map(|&id| unit(id as u64)).collect();
        let new: Vec<(StoredChunk, &[f32])> = ids
            .iter()
            .zip(&vectors)
            .map(|(&id, v)| (chunk(id, &path, &format!("chunk {id}")), &v[..]))
            .collect();
        batch.put_file(&state(&path, &ids), &new).unwrap();
    }
    batch.commit().unwrap();
}

/// The chunk the vector index in memory finds nearest to chunk `id`'s own vector.
fn nearest(store: &Store, id: u128) -> u128 {
    top(store, &unit(id as u64))[0]
}

#[test]
fn a_writer_sharing_its_readers_vector_index_keeps_it_current_and_saves_it_after_many_changes() {
    let repo = tempfile::tempdir().unwrap();
    drop(graph_index(repo.path()));
    let scanning = |root: &Path| {
        let mut store = open_reader(root);
        store.set_dense_strategy(DenseStrategy::Scan);
        store
    };
    // A long-lived reader, whose first search loads the saved graph.
    let reader = scanning(repo.path());
    assert_eq!(nearest(&reader, 42), 42);
    let saved = repo.path().join(".quarry/vectors/meta.bin");
    let saved_before = std::fs::read(&saved).unwrap();

    let mut writer = open(repo.path());
    writer.set_vector_saves(VectorSaves::AfterChanges(25));
    assert!(writer.share_vectors(&reader));
    // Two files added, one removed: 30 vectors in, 10 out, over two commits.
    add_files(&writer, 1_000..1_002);
    common::remove_file(&writer, &path_of(5));
    writer.checkpoint().unwrap();
    assert_ne!(
        std::fs::read(&saved).unwrap(),
        saved_before,
        "30 changes, past the limit of 25: the copy on disk is written"
    );
    let saved_after = std::fs::read(&saved).unwrap();
    add_files(&writer, 1_002..1_003);
    writer.checkpoint().unwrap();
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        saved_after,
        "10 changes since: the copy on disk waits"
    );

    // The reader sees every commit through the index they share; a process that loads the
    // older copy on disk catches up to the same answers.
    let fresh = scanning(repo.path());
    for store in [&reader, &fresh] {
        for id in [10_000u128, 10_019, 10_025] {
            assert_eq!(nearest(store, id), id);
        }
        assert_ne!(nearest(store, 55), 55, "file 5's chunks are gone");
        assert_eq!(nearest(store, 42), 42);
    }

    // Never the vector index of another index.
    let other = tempfile::tempdir().unwrap();
    drop(large_index(other.path(), 1));
    let stranger = Store::open_read_only(other.path(), settings()).unwrap();
    assert!(!writer.share_vectors(&stranger));
}
