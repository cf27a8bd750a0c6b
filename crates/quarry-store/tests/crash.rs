//! Killing a writing process at any moment leaves an index that opens and holds exactly the
//! batches that were committed.
//!
//! The test binary re-runs itself as the writer (`QUARRY_STORE_CRASH_WRITER` names the
//! repository): it rewrites every file of a small tree in each batch, all files carrying the
//! batch's number, so a half-applied batch would show as files of two numbers.

mod common;

use quarry_chunk::{ChunkKind, Language};
use std::process::Command;
use std::time::Duration;

use quarry_chunk::ChunkId;
use quarry_store::{FileState, Filter, IndexSettings, Store, StoredChunk};

const FILES: u64 = 20;
const CHUNKS_PER_FILE: u64 = 5;
const WRITER: &str = "QUARRY_STORE_CRASH_WRITER";

fn settings() -> IndexSettings {
    common::settings("crash-test", 8)
}

/// Writes batch after batch until killed.
fn write_forever(root: &str) -> ! {
    let store = Store::open(std::path::Path::new(root), settings()).unwrap();
    let start = store
        .file("f0.rs")
        .unwrap()
        .map_or(0, |f| f.content_hash + 1);
    for batch_number in start.. {
        let mut batch = store.write().unwrap();
        for file in 0..FILES {
            let path = format!("f{file}.rs");
            let ids: Vec<u128> = (0..CHUNKS_PER_FILE)
                .map(|c| u128::from(batch_number) << 64 | u128::from(file * 100 + c))
                .collect();
            let chunks: Vec<(StoredChunk, Vec<f32>)> = ids
                .iter()
                .map(|&id| {
                    let chunk = StoredChunk {
                        id,
                        path: path.clone(),
                        language: Language::Rust,
                        kind: ChunkKind::Function,
                        name: None,
                        container: vec![],
                        start_line: 1,
                        end_line: 1,
                        text: format!("batch {batch_number}"),
                    };
                    (chunk, vec![batch_number as f32; 8])
                })
                .collect();
            let new: Vec<(StoredChunk, &[f32])> =
                chunks.iter().map(|(c, v)| (c.clone(), &v[..])).collect();
            let state = FileState {
                path: path.clone(),
                content_hash: batch_number,
                mtime_ns: 0,
                size: 0,
                chunk_ids: ids,
            };
            batch.put_file(&state, &new).unwrap();
        }
        batch.commit().unwrap();
    }
    unreachable!()
}

/// A small deterministic generator for the kill delays.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// A process that writes batches until killed, at the latest when this is dropped (a failing
/// test must not leave it running).
struct Writer(std::process::Child);

impl Writer {
    fn spawn(root: &std::path::Path) -> Self {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "killing_a_writer_at_random_points_leaves_the_last_committed_batch",
            ])
            .env(WRITER, root)
            .spawn()
            .unwrap();
        Self(child)
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Checks that the index holds one whole batch and nothing else; returns its number, or
/// `None` for an empty index.
fn whole_batch(store: &Store, context: &str) -> Option<u64> {
    // One snapshot for every read: a writer may be committing meanwhile.
    let store = store.snapshot().unwrap();
    let files = store.files().unwrap();
    if files.is_empty() {
        return None;
    }
    assert_eq!(files.len() as u64, FILES, "{context}");
    let batch_number = files[0].content_hash;
    let mut chunks = 0;
    for file in &files {
        assert_eq!(
            file.content_hash, batch_number,
            "{context}: a batch was half applied"
        );
        for &id in &file.chunk_ids {
            let chunk = store
                .chunk(ChunkId(id))
                .unwrap()
                .expect("a listed chunk is stored");
            assert_eq!(chunk.text, format!("batch {batch_number}"), "{context}");
            let vector = store
                .vector(ChunkId(id))
                .unwrap()
                .expect("a listed chunk has its vector");
            assert_eq!(vector, vec![batch_number as f32; 8], "{context}");
            chunks += 1;
        }
    }
    assert_eq!(
        store.counts().unwrap().chunks,
        chunks,
        "{context}: stray chunks"
    );
    Some(batch_number)
}

#[test]
fn killing_a_writer_at_random_points_leaves_the_last_committed_batch() {
    if let Ok(root) = std::env::var(WRITER) {
        write_forever(&root);
    }
    let repo = tempfile::tempdir().unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut last_seen = None;
    for round in 0..25 {
        let mut writer = Writer::spawn(repo.path());
        std::thread::sleep(Duration::from_millis(20 + next(&mut seed) % 300));
        writer.kill();

        let store = Store::open(repo.path(), settings())
            .unwrap_or_else(|e| panic!("round {round}: the index does not open: {e}"));
        let Some(batch_number) = whole_batch(&store, &format!("round {round}")) else {
            continue; // killed before the first commit
        };
        // The lexical index follows the database, even when the kill fell between the two.
        let mut found: Vec<u128> = store
            .search_lexical("batch", 1000, &Filter::default())
            .unwrap()
            .iter()
            .map(|hit| hit.id.0)
            .collect();
        found.sort_unstable();
        let mut stored: Vec<u128> = store
            .files()
            .unwrap()
            .into_iter()
            .flat_map(|f| f.chunk_ids)
            .collect();
        stored.sort_unstable();
        assert_eq!(
            found, stored,
            "round {round}: the lexical index is out of step"
        );
        // The writer resumes from what was committed: the batch number never goes back.
        assert!(
            last_seen.is_none_or(|last| batch_number >= last),
            "round {round}"
        );
        last_seen = Some(batch_number);
    }
    let last = last_seen.expect("no batch was ever committed");
    eprintln!("25 kills; the last committed batch was number {last}");
}

#[test]
fn another_process_reads_whole_batches_while_one_writes() {
    let repo = tempfile::tempdir().unwrap();
    let mut writer = Writer::spawn(repo.path());
    let reader = loop {
        match Store::open_read_only(repo.path(), settings()) {
            Ok(reader) => break reader,
            Err(quarry_store::StoreError::NoIndex { .. }) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(error) => panic!("{error}"),
        }
    };
    // A second writer is told clearly that the index is busy.
    let error = Store::open(repo.path(), settings()).unwrap_err();
    assert!(
        matches!(error, quarry_store::StoreError::Locked { .. }),
        "{error}"
    );

    let mut seen = Vec::new();
    for read in 0..200 {
        if let Some(batch_number) = whole_batch(&reader, &format!("read {read}")) {
            seen.push(batch_number);
        }
        // Searches answer while the writer commits: results, never a lock error.
        reader
            .search_lexical("batch", 10, &Filter::default())
            .unwrap_or_else(|e| panic!("read {read}: {e}"));
        reader
            .search_dense(&[0.5; 8], 10, &Filter::default())
            .unwrap_or_else(|e| panic!("read {read}: {e}"));
        std::thread::sleep(Duration::from_millis(2));
    }
    writer.kill();
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]),
        "the reader went back in time"
    );
    let distinct = seen.iter().collect::<std::collections::BTreeSet<_>>().len();
    assert!(distinct > 1, "the reader never saw a new commit: {seen:?}");
    eprintln!("{} reads saw {distinct} different batches", seen.len());
}
