//! `cargo xtask bench store`: quarry-store's vector index (HNSW recall against the exact scan,
//! query latency against the exact scan's, build time, size on disk) on random-normal and real
//! embedding vectors, change detection in a 10k-file tree, and re-indexing one file.

use quarry_chunk::{ChunkKind, Language};
use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use anyhow::{Result, ensure};
use quarry_changes::content_hash;
use quarry_store::{
    CALIBRATION_QUERIES, DenseStrategy, EF_CONSTRUCTION, EF_SEARCH, EXACT_SCAN_BELOW, FileState,
    Filter, Hit, IndexSettings, MAX_CONNECTIONS, MAX_EF, MAX_LAYERS, RECALL_TARGET, Store,
    StoredChunk, TOMBSTONE_REBUILD_FRACTION,
};
use serde_json::{Value, json};

use quarry_bench::stats::{Rng, percentile};

use crate::bench::common::{git_commit, write_report};

mod data;
mod detection;
mod report;

use data::{random_data, real_data, unit_vectors};
use detection::bench_detection;
use report::markdown;

const DIMENSIONS: usize = 384;
const K: usize = 10;
const CHUNKS_PER_FILE: usize = 10;
const FILES_PER_COMMIT: usize = 500;
/// Queries run before the measured ones.
const WARM_UP: usize = 5;
/// With [`DenseStrategy::Graph`], `search_dense` searches with a beam of `max(ef, k)`, `ef`
/// the calibrated one: asking for more results and keeping the first ten measures recall@10
/// at a wider beam, with no change to the store.
const EF_SWEEP: [usize; 6] = [160, 320, 640, 1280, 2560, 4096];
/// A hit scoring at least the exact k-th score less this counts as found (ann-benchmarks'
/// rule): identical vectors under other ids tie, and the exact scan breaks ties by id.
const SCORE_EPSILON: f32 = 1e-5;
/// Filters of the synthetic paths `src/dir<file / 100>/file<file>.rs`.
const FILTER_GLOBS: [&str; 2] = ["src/dir[0-3]*/**", "src/dir1*/**"];
/// Queries with each filter (a filtered exact scan decodes every chunk).
const FILTERED_QUERIES: usize = 200;
/// Queries measured again after the re-index (ANN and exact).
const AFTER_CHANGE_QUERIES: usize = 100;
/// The change-detection tree.
const TREE_FILES: usize = 10_000;
const DETECT_RUNS: usize = 10;
/// Real embeddings: tokens kept per text, batch size, PyTorch threads.
const REAL_MAX_TOKENS: usize = 64;
const REAL_BATCH: usize = 64;

#[derive(Clone, Copy, PartialEq)]
enum Dataset {
    Random,
    Real,
}

impl Dataset {
    fn name(self) -> &'static str {
        match self {
            Dataset::Random => "random-normal",
            Dataset::Real => "real embeddings",
        }
    }
}

/// `count` vectors of `DIMENSIONS`, one after the other.
struct Vectors {
    data: Vec<f32>,
}

impl Vectors {
    fn len(&self) -> usize {
        self.data.len() / DIMENSIONS
    }

    fn get(&self, i: usize) -> &[f32] {
        &self.data[i * DIMENSIONS..(i + 1) * DIMENSIONS]
    }
}

/// The vectors to index and to query with, and each indexed chunk's text.
struct Data {
    corpus: Vectors,
    queries: Vectors,
    texts: Option<Vec<String>>,
    /// What the vectors are, for the report.
    description: String,
    /// How the real embeddings were made, if they are.
    embedding: Option<Value>,
}

/// `cargo xtask bench store`'s options.
#[derive(clap::Args)]
pub struct StoreArgs {
    /// Vectors in the index.
    #[arg(long = "vectors", value_name = "N", default_value_t = 100_000)]
    count: usize,
    /// Queries searched.
    #[arg(long, value_name = "Q", default_value_t = 500)]
    queries: usize,
    /// Which vectors: random-normal ones, real embeddings of registry code, or both.
    #[arg(long, value_enum, default_value_t = Datasets::Both)]
    dataset: Datasets,
    /// Threads embedding the real vectors (once; they are cached).
    #[arg(long, value_name = "T", default_value_t = 1)]
    embed_threads: usize,
}

/// `--dataset`'s values.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Datasets {
    Random,
    Real,
    Both,
}

pub fn run(args: StoreArgs) -> Result<()> {
    let StoreArgs {
        count,
        queries,
        dataset,
        embed_threads,
    } = args;
    let datasets = match dataset {
        Datasets::Random => vec![Dataset::Random],
        Datasets::Real => vec![Dataset::Real],
        Datasets::Both => vec![Dataset::Random, Dataset::Real],
    };
    ensure!(
        count >= CHUNKS_PER_FILE && queries > 0,
        "need at least {CHUNKS_PER_FILE} vectors and one query"
    );
    if (count as u64) < EXACT_SCAN_BELOW {
        eprintln!(
            "note: under {EXACT_SCAN_BELOW} vectors search_dense scans exactly; no HNSW graph is built"
        );
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let started = Instant::now();
    let (commit, parameters, load_before) = (git_commit(root), parameters(), load_average());

    // First, as it is quick and asserts that nothing is seen changed.
    eprintln!("== change detection in a {TREE_FILES}-file tree");
    let detection = bench_detection()?;

    let mut results = Vec::new();
    for dataset in datasets {
        let data = match dataset {
            Dataset::Random => random_data(count, queries),
            Dataset::Real => real_data(root, count, queries, embed_threads)?,
        };
        eprintln!("== {}: {}", dataset.name(), data.description);
        results.push(bench_vectors(dataset, &data)?);
    }
    let report = json!({
        "commit": commit,
        "vectors": count,
        "queries": queries,
        "dimensions": DIMENSIONS,
        "k": K,
        "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "parameters": parameters,
        "load_average": {"start": load_before, "end": load_average()},
        "datasets": results,
        "change_detection": detection,
        "run_seconds": started.elapsed().as_secs_f64(),
    });
    let markdown = markdown(&report);
    print!("{markdown}");
    let name = format!("store-{}", report["commit"].as_str().unwrap_or("unknown"));
    write_report(root, &name, &markdown, &report)?;
    eprintln!("{:.0} s in all", started.elapsed().as_secs_f64());
    Ok(())
}

/// The 1-, 5- and 15-minute load averages: other work on the machine shows in the timings.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The index parameters as the sources state them (most are private to quarry-store).
fn parameters() -> Value {
    json!({
        "max_connections": MAX_CONNECTIONS,
        "ef_construction": EF_CONSTRUCTION,
        "max_layers": MAX_LAYERS,
        "calibration_queries": CALIBRATION_QUERIES,
        "ef_search": EF_SEARCH,
        "max_ef": MAX_EF,
        "recall_target": RECALL_TARGET,
        "exact_scan_below": EXACT_SCAN_BELOW,
        "tombstone_rebuild_fraction": TOMBSTONE_REBUILD_FRACTION,
    })
}

// ---------------------------------------------------------------------------------------------
// The vector index

fn settings() -> IndexSettings {
    IndexSettings {
        model: "bench".into(),
        dimensions: DIMENSIONS,
        chunker: "bench".into(),
    }
}

fn file_path(file: usize) -> String {
    format!("src/dir{}/file{file}.rs", file / 100)
}

fn stored_chunk(id: u128, file: usize, part: usize, text: String) -> StoredChunk {
    StoredChunk {
        id,
        path: file_path(file),
        language: Language::Rust,
        kind: ChunkKind::Function,
        name: Some(format!("f{id}")),
        container: Vec::new(),
        start_line: 1 + 10 * part,
        end_line: 10 + 10 * part,
        text,
    }
}

fn file_state(file: usize, ids: Vec<u128>) -> FileState {
    FileState {
        path: file_path(file),
        content_hash: file as u64,
        mtime_ns: 0,
        size: 0,
        chunk_ids: ids,
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// p50 and p95 of `samples` (milliseconds), which it sorts.
fn latency(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    json!({"p50": percentile(samples, 0.5), "p95": percentile(samples, 0.95)})
}

/// Recall@k over queries against the exact scan: with ties counted (the headline), and by id.
#[derive(Default)]
struct Recall {
    tied: Vec<f64>,
    by_id: Vec<f64>,
}

impl Recall {
    /// Adds a query: `found` (its first k hits count) against the exact `truth`.
    fn add(&mut self, found: &[Hit], truth: &[Hit]) {
        let found = &found[..truth.len().min(found.len())];
        let n = truth.len().max(1) as f64;
        let ids: HashSet<u128> = truth.iter().map(|h| h.id.0).collect();
        let threshold = truth.last().map_or(f32::NEG_INFINITY, |h| h.score) - SCORE_EPSILON;
        self.by_id
            .push(found.iter().filter(|h| ids.contains(&h.id.0)).count() as f64 / n);
        self.tied
            .push(found.iter().filter(|h| h.score >= threshold).count() as f64 / n);
    }

    fn mean(values: &[f64]) -> f64 {
        values.iter().sum::<f64>() / values.len().max(1) as f64
    }

    fn json(&self) -> Value {
        json!({
            "mean": Self::mean(&self.tied),
            "by_id": Self::mean(&self.by_id),
            "worst": self.tied.iter().copied().fold(f64::INFINITY, f64::min),
            "below_0_9": self.tied.iter().filter(|&&r| r < 0.9).count(),
        })
    }
}

/// Recall@K and latency of `search_dense` asking for `k` results (the first K count) for each
/// query, against `truth`.
fn measure(
    store: &Store,
    queries: &Vectors,
    truth: &[Vec<Hit>],
    k: usize,
    filter: &Filter,
) -> Result<Value> {
    for q in 0..WARM_UP.min(truth.len()) {
        store.search_dense(queries.get(q), k, filter)?;
    }
    let (mut times, mut recall) = (Vec::with_capacity(truth.len()), Recall::default());
    for (q, truth) in truth.iter().enumerate() {
        let start = Instant::now();
        let hits = store.search_dense(queries.get(q), k, filter)?;
        times.push(ms(start));
        recall.add(&hits, truth);
    }
    Ok(json!({"recall": recall.json(), "ms": latency(&mut times)}))
}

fn ids(hits: &[Hit]) -> Vec<u128> {
    hits.iter().map(|h| h.id.0).collect()
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            total += dir_size(&entry.path())?;
        } else {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

/// Writes `data` into a new store and measures it.
fn bench_vectors(dataset: Dataset, data: &Data) -> Result<Value> {
    let count = data.corpus.len();
    let files = count.div_ceil(CHUNKS_PER_FILE);
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    let mut store = Store::open(root, settings())?;

    // Write: files of ten chunks, 500 files per commit.
    let start = Instant::now();
    let mut commits = 0;
    for first in (0..files).step_by(FILES_PER_COMMIT) {
        let mut batch = store.write()?;
        for file in first..(first + FILES_PER_COMMIT).min(files) {
            let range = file * CHUNKS_PER_FILE..((file + 1) * CHUNKS_PER_FILE).min(count);
            let chunks: Vec<(StoredChunk, &[f32])> = range
                .clone()
                .enumerate()
                .map(|(part, i)| {
                    let text = match &data.texts {
                        Some(texts) => texts[i].clone(),
                        None => format!("fn f{i}() {{ /* chunk {i} */ }}"),
                    };
                    (
                        stored_chunk(i as u128 + 1, file, part, text),
                        data.corpus.get(i),
                    )
                })
                .collect();
            let ids = range.map(|i| i as u128 + 1).collect();
            batch.put_file(&file_state(file, ids), &chunks)?;
        }
        batch.commit()?;
        commits += 1;
    }
    let write_s = start.elapsed().as_secs_f64();
    eprintln!("wrote {count} chunks in {files} files, {commits} commits: {write_s:.1} s");

    let start = Instant::now();
    store.checkpoint()?;
    let checkpoint_s = start.elapsed().as_secs_f64();
    eprintln!("checkpoint (HNSW build + save): {checkpoint_s:.1} s");

    let index = root.join(quarry_store::INDEX_DIR);
    let part = |name: &str| dir_size(&index.join(name)).unwrap_or(0);
    let total_bytes = dir_size(&index)?;
    let redb_bytes = std::fs::metadata(Store::database_path(root))?.len();
    let size = json!({
        "total_bytes": total_bytes,
        "per_chunk": total_bytes as f64 / count as f64,
        "redb_per_chunk": redb_bytes as f64 / count as f64,
        "hnsw_per_chunk": part("vectors") as f64 / count as f64,
        "lexical_per_chunk": part("lexical") as f64 / count as f64,
        "raw_vector": DIMENSIONS * 4,
    });

    // Identical vectors (distinct texts can embed alike, above all when truncated) tie.
    let distinct = (0..count)
        .map(|i| {
            let bytes: Vec<u8> = data
                .corpus
                .get(i)
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            content_hash(&bytes)
        })
        .collect::<HashSet<u64>>()
        .len();

    let calibration = store
        .vector_index()?
        .and_then(|info| info.calibration)
        .map_or(Value::Null, |c| {
            json!({
                "queries": c.queries,
                "scan_ms": c.scan_ms,
                "trials": c.trials.iter().map(|t| json!({"ef": t.ef, "recall": t.recall, "ms": t.ms})).collect::<Vec<_>>(),
                "chosen_ef": c.chosen().map(|t| t.ef),
            })
        });
    eprintln!("calibration {calibration}");

    // The truth: the exact scan of the database (also the reference for latency).
    let queries = &data.queries;
    let nq = queries.len();
    let unfiltered = Filter::default();
    let (mut exact_ms, mut exact_hits) = (Vec::with_capacity(nq), Vec::with_capacity(nq));
    for q in 0..nq {
        let start = Instant::now();
        let hits = store.search_exact(queries.get(q), K, &unfiltered)?;
        exact_ms.push(ms(start));
        exact_hits.push(hits);
    }
    let exact_latency = latency(&mut exact_ms);
    // `search_dense` as calibrated (what users get), then forced through the graph and the
    // in-memory scan.
    let mut strategies = serde_json::Map::new();
    for strategy in [
        DenseStrategy::Calibrated,
        DenseStrategy::Graph,
        DenseStrategy::Scan,
    ] {
        store.set_dense_strategy(strategy);
        let measured = measure(&store, queries, &exact_hits, K, &unfiltered)?;
        eprintln!("{strategy:?}: {measured}");
        strategies.insert(format!("{strategy:?}").to_lowercase(), measured);
    }

    // Wider beams through the graph: ask for `ef` results, keep the first ten.
    store.set_dense_strategy(DenseStrategy::Graph);
    let mut sweep = Vec::new();
    for ef in EF_SWEEP {
        let mut entry = measure(&store, queries, &exact_hits, ef, &unfiltered)?;
        entry["ef"] = json!(ef);
        eprintln!("ef {ef}: {entry}");
        sweep.push(entry);
    }
    store.set_dense_strategy(DenseStrategy::Calibrated);

    // Filtered, against the exact scan with the same filter.
    let mut filtered = Vec::new();
    for glob in FILTER_GLOBS {
        let filter = Filter::default().path_glob(glob)?;
        let admitted = (0..files)
            .filter(|&f| filter.admits_path(&file_path(f)))
            .count();
        let n = FILTERED_QUERIES.min(nq);
        let (mut exact_t, mut truth) = (Vec::new(), Vec::new());
        for q in 0..n {
            let start = Instant::now();
            truth.push(store.search_exact(queries.get(q), K, &filter)?);
            exact_t.push(ms(start));
        }
        let mut entry = json!({
            "glob": glob,
            "admitted_fraction": admitted as f64 / files as f64,
            "queries": n,
            "exact_ms": latency(&mut exact_t),
        });
        for strategy in [DenseStrategy::Calibrated, DenseStrategy::Graph] {
            store.set_dense_strategy(strategy);
            entry[format!("{strategy:?}").to_lowercase()] =
                measure(&store, queries, &truth, K, &filter)?;
        }
        store.set_dense_strategy(DenseStrategy::Calibrated);
        eprintln!("filter {entry}");
        filtered.push(entry);
    }

    // A fresh handle: the first search loads the saved graph.
    drop(store);
    let start = Instant::now();
    store = Store::open(root, settings())?;
    let open_ms = ms(start);
    let start = Instant::now();
    let first = store.search_dense(queries.get(0), K, &unfiltered)?;
    let first_search_ms = ms(start);
    let start = Instant::now();
    store.search_dense(queries.get(1 % nq), K, &unfiltered)?;
    let second_search_ms = ms(start);
    store.set_dense_strategy(DenseStrategy::Calibrated);
    let before = store.search_dense(queries.get(0), K, &unfiltered)?;
    let same = ids(&first) == ids(&before);
    if !same {
        eprintln!("warning: the reloaded graph answers the first query differently");
    }
    let reopen = json!({
        "open_ms": open_ms,
        "first_search_ms": first_search_ms,
        "second_search_ms": second_search_ms,
        "same_answer_as_before": same,
    });
    eprintln!("reopen {reopen}");

    let reindex = bench_reindex(&mut store, data, checkpoint_s)?;

    Ok(json!({
        "dataset": dataset.name(),
        "description": data.description,
        "embedding": data.embedding,
        "vectors": count,
        "queries": nq,
        "files": files,
        "write": {
            "seconds": write_s,
            "commits": commits,
            "chunks_per_s": count as f64 / write_s,
        },
        "checkpoint_s": checkpoint_s,
        "calibration": calibration,
        "size": size,
        "distinct_vectors": distinct,
        "exact_ms": exact_latency,
        "search": strategies,
        "ef_sweep": sweep,
        "filtered": filtered,
        "reopen": reopen,
        "reindex": reindex,
    }))
}

/// Replaces one file's ten chunks (new ids, new vectors) and measures the commit and the
/// graph catching up.
fn bench_reindex(store: &mut Store, data: &Data, checkpoint_s: f64) -> Result<Value> {
    let count = data.corpus.len();
    let files = count.div_ceil(CHUNKS_PER_FILE);
    let file = files / 2;
    let old: Vec<u128> = (file * CHUNKS_PER_FILE..((file + 1) * CHUNKS_PER_FILE).min(count))
        .map(|i| i as u128 + 1)
        .collect();
    let vectors = unit_vectors(&mut Rng::new(3), old.len());
    let new: Vec<u128> = (0..old.len()).map(|j| (count + 1 + j) as u128).collect();
    let chunks: Vec<(StoredChunk, &[f32])> = new
        .iter()
        .enumerate()
        .map(|(part, &id)| {
            let text = format!("fn changed{id}() {{ /* chunk {id} */ }}");
            (stored_chunk(id, file, part, text), vectors.get(part))
        })
        .collect();

    let start = Instant::now();
    let mut batch = store.write()?;
    batch.put_file(&file_state(file, new.clone()), &chunks)?;
    batch.commit()?;
    let commit_ms = ms(start);

    let queries = &data.queries;
    let unfiltered = Filter::default();
    let start = Instant::now();
    let hits = store.search_dense(vectors.get(0), K, &unfiltered)?;
    let next_search_ms = ms(start);
    // Sanity, reported rather than asserted so that a run is not lost to it.
    let new_found = hits.first().map(|h| h.id.0) == Some(new[0]);
    let found_old = store.search_dense(data.corpus.get(file * CHUNKS_PER_FILE), K, &unfiltered)?;
    let old_gone = found_old.iter().all(|h| !old.contains(&h.id.0));
    if !(new_found && old_gone) {
        eprintln!("warning: after the re-index, new chunk found {new_found}, old gone {old_gone}");
    }

    // Searches with ten tombstones in the graph.
    let n = AFTER_CHANGE_QUERIES.min(queries.len());
    let (mut exact_t, mut truth) = (Vec::new(), Vec::new());
    for q in 0..n {
        let start = Instant::now();
        truth.push(store.search_exact(queries.get(q), K, &unfiltered)?);
        exact_t.push(ms(start));
    }
    let mut after = json!({"queries": n, "exact_ms": latency(&mut exact_t)});
    for strategy in [DenseStrategy::Calibrated, DenseStrategy::Graph] {
        store.set_dense_strategy(strategy);
        after[format!("{strategy:?}").to_lowercase()] =
            measure(store, queries, &truth, K, &unfiltered)?;
    }
    store.set_dense_strategy(DenseStrategy::Calibrated);
    let start = Instant::now();
    store.checkpoint()?;
    let checkpoint_after_s = start.elapsed().as_secs_f64();
    let reindex_ms = commit_ms + next_search_ms;
    let entry = json!({
        "file_chunks": old.len(),
        "put_file_commit_ms": commit_ms,
        "next_search_ms": next_search_ms,
        "after": after,
        "new_chunk_found_by_its_vector": new_found,
        "removed_chunks_not_returned": old_gone,
        "checkpoint_after_s": checkpoint_after_s,
        "full_checkpoint_over_reindex": checkpoint_s * 1000.0 / reindex_ms,
    });
    eprintln!("re-index {entry}");
    Ok(entry)
}
