//! `cargo xtask bench store`: quarry-store's vector index (HNSW recall against the exact scan,
//! query latency against the exact scan's, build time, size on disk) on random-normal and real
//! embedding vectors, change detection in a 10k-file tree, and re-indexing one file.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use quarry_chunk::Chunker;
use quarry_embed::DEFAULT_MODEL;
use quarry_store::{
    DenseStrategy, EF_SEARCH, EXACT_SCAN_BELOW, FileState, Filter, GitUse, Hit, IndexSettings,
    MAX_EF, RECALL_TARGET, Store, StoredChunk, TOMBSTONE_REBUILD_FRACTION, content_hash,
    detect_changes, head_commit, walk,
};
use serde_json::{Value, json};

use crate::bench_embed::{git_commit, percentile, reference_python, write_report};

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

pub fn run(args: &[String]) -> Result<()> {
    let usage = "cargo xtask bench store [--vectors N] [--queries Q] [--dataset random|real|both] \
                 [--embed-threads T]";
    let (mut count, mut queries, mut embed_threads) = (100_000, 500, 1);
    let mut datasets = vec![Dataset::Random, Dataset::Real];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--vectors" => count = args.next().context(usage)?.parse().context(usage)?,
            "--queries" => queries = args.next().context(usage)?.parse().context(usage)?,
            "--embed-threads" => {
                embed_threads = args.next().context(usage)?.parse().context(usage)?;
            }
            "--dataset" => {
                datasets = match args.next().map(String::as_str) {
                    Some("random") => vec![Dataset::Random],
                    Some("real") => vec![Dataset::Real],
                    Some("both") => vec![Dataset::Random, Dataset::Real],
                    _ => bail!("--dataset random|real|both: {usage}"),
                }
            }
            other => bail!("unknown argument {other:?}: {usage}"),
        }
    }
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
    let (commit, parameters, load_before) = (git_commit(root), parameters(root), load_average());

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
fn parameters(root: &Path) -> Value {
    let read = |file: &str| std::fs::read_to_string(root.join(file)).unwrap_or_default();
    let ann = read("crates/quarry-store/src/ann.rs");
    json!({
        "max_connections": constant(&ann, "MAX_CONNECTIONS"),
        "ef_construction": constant(&ann, "EF_CONSTRUCTION"),
        "max_layers": constant(&ann, "MAX_LAYERS"),
        "calibration_queries": constant(&ann, "CALIBRATION_QUERIES"),
        "ef_search": EF_SEARCH,
        "max_ef": MAX_EF,
        "recall_target": RECALL_TARGET,
        "exact_scan_below": EXACT_SCAN_BELOW,
        "tombstone_rebuild_fraction": TOMBSTONE_REBUILD_FRACTION,
    })
}

/// The value of `const NAME: type = value;` in `source`, as written.
fn constant(source: &str, name: &str) -> Option<String> {
    let needle = format!("const {name}:");
    let line = source.lines().find(|l| l.contains(&needle))?;
    let value = line.split_once('=')?.1.trim().trim_end_matches(';').trim();
    Some(value.replace('_', ""))
}

// ---------------------------------------------------------------------------------------------
// Data

/// SplitMix64, and Box-Muller for normal deviates.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Unit vectors drawn from a standard normal distribution, normalised.
    fn unit_vectors(&mut self, count: usize) -> Vectors {
        let mut data = Vec::with_capacity(count * DIMENSIONS);
        let mut vector = vec![0f64; DIMENSIONS];
        for _ in 0..count {
            for pair in vector.chunks_mut(2) {
                let (r, theta) = (
                    (-2.0 * self.uniform().ln()).sqrt(),
                    std::f64::consts::TAU * self.uniform(),
                );
                pair[0] = r * theta.cos();
                if let Some(second) = pair.get_mut(1) {
                    *second = r * theta.sin();
                }
            }
            let norm = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
            data.extend(vector.iter().map(|x| (x / norm) as f32));
        }
        Vectors { data }
    }
}

fn random_data(count: usize, queries: usize) -> Data {
    Data {
        corpus: Rng(1).unit_vectors(count),
        queries: Rng(2).unit_vectors(queries),
        texts: None,
        description: format!(
            "{count} + {queries} queries, {DIMENSIONS}-d standard normal (SplitMix64, \
             Box-Muller), normalised; queries drawn independently"
        ),
        embedding: None,
    }
}

/// Real code chunks embedded with all-MiniLM-L6-v2 (see `bench-suite/store_vectors.py`),
/// cached in the user cache.
fn real_data(root: &Path, count: usize, queries: usize, threads: usize) -> Result<Data> {
    let total = count + queries;
    let start = Instant::now();
    let mut sample = registry_chunks(total)?;
    eprintln!(
        "{total} distinct chunks from {} of {} registry files in {:.1} s",
        sample.files_used,
        sample.files_total,
        start.elapsed().as_secs_f64()
    );
    let texts = std::mem::take(&mut sample.chunks);
    let model = crate::model::provisioner().resolve(&DEFAULT_MODEL)?;
    let mut key = format!(
        "{}@{} tokens {REAL_MAX_TOKENS} batch {REAL_BATCH} bf16-autocast\0",
        model.name, model.revision
    );
    for (_, embed_text) in &texts {
        key.push_str(embed_text);
        key.push('\0');
    }
    let cache = directories::ProjectDirs::from("", "", "quarry")
        .context("no user cache directory")?
        .cache_dir()
        .join("bench");
    std::fs::create_dir_all(&cache)?;
    let stem = format!("real-{total}-{:016x}", content_hash(key.as_bytes()));
    let (vectors_path, summary_path) = (
        cache.join(format!("{stem}.f32")),
        cache.join(format!("{stem}.json")),
    );
    let mut embedding: Value = if vectors_path.exists() && summary_path.exists() {
        eprintln!("vectors cached in {}", vectors_path.display());
        let mut summary: Value = serde_json::from_slice(&std::fs::read(&summary_path)?)?;
        summary["cached"] = json!(true);
        summary
    } else {
        let summary = embed(root, &model.path, &texts, &vectors_path, threads)?;
        std::fs::write(&summary_path, serde_json::to_string_pretty(&summary)?)?;
        summary
    };
    embedding["model"] = json!(format!("{}@{}", model.name, model.revision));
    embedding["file"] = json!(vectors_path);
    let bytes = std::fs::read(&vectors_path)?;
    ensure!(
        bytes.len() == total * DIMENSIONS * 4,
        "{} holds {} bytes, not {}",
        vectors_path.display(),
        bytes.len(),
        total * DIMENSIONS * 4
    );
    let all: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    // The held-out queries are spread evenly over the sample.
    let held_out: HashSet<usize> = (0..queries).map(|j| j * total / queries).collect();
    let (mut corpus, mut query_data, mut corpus_texts) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ((text, _), vector)) in texts.into_iter().zip(all.chunks(DIMENSIONS)).enumerate() {
        if held_out.contains(&i) {
            query_data.extend_from_slice(vector);
        } else {
            corpus.extend_from_slice(vector);
            corpus_texts.push(text);
        }
    }
    ensure!(query_data.len() == queries * DIMENSIONS && corpus.len() == count * DIMENSIONS);
    Ok(Data {
        corpus: Vectors { data: corpus },
        queries: Vectors { data: query_data },
        texts: Some(corpus_texts),
        description: format!(
            "{count} + {queries} held-out queries: distinct chunks (quarry-chunk, default \
             config) of {} of the {} .rs/.py files in the local cargo registry, files in hash \
             order of their paths; \
             embedded with {} by sentence-transformers on PyTorch (CPU), texts truncated to \
             {REAL_MAX_TOKENS} tokens, bf16 autocast, normalised in f32; stored with their \
             source text",
            sample.files_used, sample.files_total, DEFAULT_MODEL.name
        ),
        embedding: Some(embedding),
    })
}

/// Chunks of the cargo registry's sources.
struct Sample {
    /// (text, text to embed).
    chunks: Vec<(String, String)>,
    /// How many files were chunked for them.
    files_used: usize,
    /// How many `.rs` and `.py` files the registry holds.
    files_total: usize,
}

/// `total` distinct chunks, as (text, text to embed), from the `.rs` and `.py` files of the
/// local cargo registry taken in the order of their paths' hashes, so that the sample spreads
/// over many crates; also how many files were chunked, of how many.
fn registry_chunks(total: usize) -> Result<Sample> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().join(".cargo")))
        .context("no cargo home")?;
    let registry = home.join("registry/src");
    let mut files = Vec::new();
    for index in std::fs::read_dir(&registry)
        .with_context(|| format!("cannot read {}", registry.display()))?
    {
        let index = index?.path();
        if index.is_dir() {
            collect_sources(&index, &index, &mut files)?;
        }
    }
    files.sort_by_cached_key(|(relative, _)| (content_hash(relative.as_bytes()), relative.clone()));
    let chunker = Chunker::default();
    let (mut seen, mut chunks) = (HashSet::new(), Vec::with_capacity(total));
    let mut used = 0;
    for (relative, path) in &files {
        if chunks.len() == total {
            break;
        }
        used += 1;
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        let Ok(file_chunks) = chunker.chunk(relative, &bytes) else {
            continue;
        };
        for chunk in file_chunks {
            if chunks.len() < total && seen.insert(content_hash(chunk.embed_text.as_bytes())) {
                chunks.push((chunk.text, chunk.embed_text));
            }
        }
    }
    ensure!(
        chunks.len() == total,
        "the cargo registry has only {} distinct chunks; fewer --vectors",
        chunks.len()
    );
    Ok(Sample {
        chunks,
        files_used: used,
        files_total: files.len(),
    })
}

/// The `.rs` and `.py` files under `dir`, as (path relative to `base`, path).
fn collect_sources(base: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            collect_sources(base, &path, files)?;
        } else if file_type.is_file() && path.extension().is_some_and(|e| e == "rs" || e == "py") {
            let relative = path
                .strip_prefix(base)?
                .to_string_lossy()
                .replace('\\', "/");
            files.push((relative, path));
        }
    }
    Ok(())
}

/// Runs `bench-suite/store_vectors.py` in the reference's virtual environment.
fn embed(
    root: &Path,
    model_dir: &Path,
    texts: &[(String, String)],
    out: &Path,
    threads: usize,
) -> Result<Value> {
    let python = reference_python()?;
    let input = tempfile::NamedTempFile::new()?;
    {
        let mut writer = BufWriter::new(input.as_file());
        for (_, embed_text) in texts {
            serde_json::to_writer(&mut writer, embed_text)?;
            writer.write_all(b"\n")?;
        }
        writer.flush()?;
    }
    eprintln!(
        "embedding {} texts with PyTorch ({threads} threads; progress below)",
        texts.len()
    );
    let output = Command::new(&python)
        .arg(root.join("bench-suite/store_vectors.py"))
        .arg("--model-dir")
        .arg(model_dir)
        .arg("--out")
        .arg(out)
        .arg("--input")
        .arg(input.path())
        .args(["--max-seq-length", &REAL_MAX_TOKENS.to_string()])
        .args(["--batch-size", &REAL_BATCH.to_string()])
        .args(["--threads", &threads.to_string()])
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    ensure!(
        output.status.success(),
        "store_vectors.py failed ({})",
        output.status
    );
    Ok(serde_json::from_slice(&output.stdout)?)
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
        language: "rust".into(),
        kind: "function".into(),
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
    let vectors = Rng(3).unit_vectors(old.len());
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

// ---------------------------------------------------------------------------------------------
// Change detection

fn git_in(root: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "-c",
            "user.name=quarry-bench",
            "-c",
            "user.email=bench@quarry.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .context("git is needed for the change-detection benchmark")?;
    ensure!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

fn summary(mut times: Vec<f64>) -> Value {
    times.sort_by(f64::total_cmp);
    json!({
        "min": times[0],
        "p50": percentile(&times, 0.5),
        "max": times[times.len() - 1],
    })
}

fn bench_detection() -> Result<Value> {
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    // 20 directories of 10 subdirectories of 50 files.
    for i in 0..TREE_FILES {
        let sub = root.join(format!("d{:02}/s{}", i / 500, i / 50 % 10));
        if i % 50 == 0 {
            std::fs::create_dir_all(&sub)?;
        }
        std::fs::write(
            sub.join(format!("f{i}.rs")),
            format!("// file {i}\npub fn f{i}(x: u64) -> u64 {{\n    x.wrapping_mul({i})\n}}\n"),
        )?;
    }
    git_in(root, &["init", "-q"])?;
    git_in(root, &["add", "-A"])?;
    git_in(root, &["commit", "-q", "-m", "tree"])?;
    // Files written in the second git wrote its index are "racily clean" to git, which
    // compares their content on every diff; a refresh a second later settles them.
    std::thread::sleep(Duration::from_millis(1100));
    git_in(root, &["update-index", "-q", "--refresh"])?;
    let head = head_commit(root).context("no HEAD in the benchmark tree")?;

    let tree = walk(root)?;
    ensure!(
        tree.files.len() == TREE_FILES,
        "walked {}",
        tree.files.len()
    );
    let states: Vec<FileState> = tree
        .files
        .iter()
        .map(|f| {
            Ok(FileState {
                path: f.path.clone(),
                content_hash: content_hash(&std::fs::read(root.join(&f.path))?),
                mtime_ns: f.mtime_ns,
                size: f.size,
                chunk_ids: Vec::new(),
            })
        })
        .collect::<Result<_>>()?;

    let timed = |body: &dyn Fn() -> Result<()>| -> Result<Value> {
        body()?; // warm-up
        let mut times = Vec::with_capacity(DETECT_RUNS);
        for _ in 0..DETECT_RUNS {
            let start = Instant::now();
            body()?;
            times.push(ms(start));
        }
        Ok(summary(times))
    };
    let walk_only = timed(&|| {
        ensure!(walk(root)?.files.len() == TREE_FILES);
        Ok(())
    })?;
    let git_diff = timed(&|| {
        let output = Command::new("git")
            .args(["-C"])
            .arg(root)
            .args([
                "--no-optional-locks",
                "diff",
                "--name-only",
                "-z",
                &head,
                "--",
            ])
            .output()?;
        ensure!(output.status.success() && output.stdout.is_empty());
        Ok(())
    })?;
    let with_git = timed(&detect(root, &states, Some(&head), |g| {
        matches!(g, GitUse::Used { reported: 0, .. })
    }))?;
    let no_commit = timed(&detect(root, &states, None, |g| {
        *g == GitUse::NoIndexedCommit
    }))?;
    std::fs::remove_dir_all(root.join(".git"))?;
    let no_repo = timed(&detect(root, &states, None, |g| {
        *g == GitUse::NotARepository
    }))?;
    let result = json!({
        "files": TREE_FILES,
        "runs": DETECT_RUNS,
        "walk_ms": walk_only,
        "git_diff_ms": git_diff,
        "detect_git_ms": with_git,
        "detect_no_indexed_commit_ms": no_commit,
        "detect_not_a_repository_ms": no_repo,
    });
    eprintln!("{result}");
    Ok(result)
}

/// A check that `detect_changes` finds nothing changed and that git played the part `expect`
/// says.
fn detect<'a>(
    root: &'a Path,
    states: &'a [FileState],
    commit: Option<&'a str>,
    expect: fn(&GitUse) -> bool,
) -> impl Fn() -> Result<()> + 'a {
    move || {
        let changes = detect_changes(root, states, commit)?;
        ensure!(
            changes.is_empty() && changes.hashed == 0 && changes.unchanged == TREE_FILES,
            "nothing changed, yet: {changes:?}"
        );
        ensure!(expect(&changes.git), "git: {}", changes.git);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Report

fn num(value: &Value) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

fn markdown(report: &Value) -> String {
    let mut out = String::new();
    let p = &report["parameters"];
    let param = |name: &str| p[name].as_str().map_or("?".to_owned(), str::to_owned);
    let _ = writeln!(out, "# Store benchmark\n");
    let _ = writeln!(
        out,
        "- commit {}, {} cores; {} vectors x {} dimensions, {} queries, k = {}",
        report["commit"].as_str().unwrap_or("?"),
        report["cores"],
        report["vectors"],
        report["dimensions"],
        report["queries"],
        report["k"]
    );
    let _ = writeln!(
        out,
        "- HNSW (hnsw_rs 0.3.5): max connections {}, ef_construction {}, max layers {}; \
         each build calibrates on {} held-out vectors: beams from {} doubling to at most {} \
         until recall@10 reaches {} or costs more than the in-memory scan, which answers then; \
         exact database scan below {} chunks; graph rebuilt past {} tombstones",
        param("max_connections"),
        param("ef_construction"),
        param("max_layers"),
        param("calibration_queries"),
        p["ef_search"],
        p["max_ef"],
        p["recall_target"],
        p["exact_scan_below"],
        p["tombstone_rebuild_fraction"]
    );
    let _ = writeln!(
        out,
        "- stored as files of {CHUNKS_PER_FILE} chunks (`src/dir<f/100>/file<f>.rs`), \
         {FILES_PER_COMMIT} files per commit; load average at start / end: {} / {}",
        report["load_average"]["start"].as_str().unwrap_or("?"),
        report["load_average"]["end"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        out,
        "- strategies: *calibrated* is `search_dense` as users get it; *graph* forces the graph \
         at the calibrated beam (the widest tried if none reached the target), *scan* the \
         in-memory scan; the truth and the latency reference is `search_exact`, a scan of the \
         database. Wider beams: asking the graph for ef results (beam max(calibrated, ef)) and \
         keeping the first {K} (the latency includes returning ef results); filtered rows use \
         the first {FILTERED_QUERIES} queries; a hit counts as found when it scores at least the exact \
         {K}th score - {SCORE_EPSILON} (identical vectors tie; the exact scan breaks ties by \
         id), recall by id in parentheses"
    );
    let datasets = report["datasets"].as_array().cloned().unwrap_or_default();
    for d in &datasets {
        let _ = writeln!(
            out,
            "- **{}**: {}",
            d["dataset"].as_str().unwrap_or("?"),
            d["description"].as_str().unwrap_or("")
        );
        if let Some(e) = d["embedding"].as_object() {
            let cached = if e.get("cached").and_then(Value::as_bool) == Some(true) {
                " (cached from an earlier run)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  - embedding {} texts took {:.0} s, {:.1} texts/s{cached} ({})",
                e.get("texts").unwrap_or(&Value::Null),
                num(e.get("seconds").unwrap_or(&Value::Null)),
                num(e.get("texts_per_s").unwrap_or(&Value::Null)),
                e.get("runtime").and_then(Value::as_str).unwrap_or("")
            );
        }
    }
    let _ = writeln!(out);

    if !datasets.is_empty() {
        let _ = write!(out, "| |");
        for d in &datasets {
            let _ = write!(out, " {} |", d["dataset"].as_str().unwrap_or("?"));
        }
        let _ = write!(out, "\n|---|");
        for _ in &datasets {
            let _ = write!(out, "---:|");
        }
        let _ = writeln!(out);
        let mut row = |label: String, cell: &dyn Fn(&Value) -> String| {
            let _ = write!(out, "| {label} |");
            for d in &datasets {
                let _ = write!(out, " {} |", cell(d));
            }
            let _ = writeln!(out);
        };
        let ms_pair = |v: &Value| format!("{:.2} / {:.2} ms", num(&v["p50"]), num(&v["p95"]));
        row("write (put_file + commit)".into(), &|d| {
            format!(
                "{:.1} s, {:.0} chunks/s",
                num(&d["write"]["seconds"]),
                num(&d["write"]["chunks_per_s"])
            )
        });
        row(
            "checkpoint = HNSW build + calibration + save".into(),
            &|d| format!("{:.1} s", num(&d["checkpoint_s"])),
        );
        row(
            "index on disk per chunk (redb / HNSW / lexical)".into(),
            &|d| {
                let s = &d["size"];
                format!(
                    "{:.0} B ({:.0} / {:.0} / {:.0}); raw vector {} B",
                    num(&s["per_chunk"]),
                    num(&s["redb_per_chunk"]),
                    num(&s["hnsw_per_chunk"]),
                    num(&s["lexical_per_chunk"]),
                    s["raw_vector"]
                )
            },
        );
        row("distinct vectors".into(), &|d| {
            format!("{} of {}", d["distinct_vectors"], d["vectors"])
        });
        row(
            "calibration: in-memory scan; beams tried (recall, ms); chosen".into(),
            &|d| {
                let c = &d["calibration"];
                let trials: Vec<String> = c["trials"]
                    .as_array()
                    .map(|t| {
                        t.iter()
                            .map(|t| {
                                format!(
                                    "{}: {:.3}, {:.1}",
                                    t["ef"],
                                    num(&t["recall"]),
                                    num(&t["ms"])
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                format!(
                    "{:.1} ms; {}; **{}**",
                    num(&c["scan_ms"]),
                    trials.join("; "),
                    c["chosen_ef"]
                        .as_u64()
                        .map_or("scan".to_owned(), |ef| format!("ef {ef}"))
                )
            },
        );
        let recall_cell = |m: &Value| {
            let r = &m["recall"];
            format!(
                "{:.4} ({:.4}), {} under 0.9; {}",
                num(&r["mean"]),
                num(&r["by_id"]),
                r["below_0_9"],
                ms_pair(&m["ms"])
            )
        };
        for (key, label) in [
            ("calibrated", "**search_dense as calibrated**"),
            ("graph", "graph at the calibrated beam"),
            ("scan", "in-memory scan"),
        ] {
            row(
                format!("{label}: recall@{K} (by id), queries under 0.9; p50 / p95"),
                &|d| recall_cell(&d["search"][key]),
            );
        }
        row(
            "database scan (`search_exact`, the truth) p50 / p95".into(),
            &|d| ms_pair(&d["exact_ms"]),
        );
        row("database scan p50 / calibrated p50".into(), &|d| {
            format!(
                "{:.0}x",
                num(&d["exact_ms"]["p50"]) / num(&d["search"]["calibrated"]["ms"]["p50"])
            )
        });
        for (i, ef) in EF_SWEEP.iter().enumerate() {
            row(format!("graph, beam {ef}: recall@{K} (by id), p50"), &|d| {
                let s = &d["ef_sweep"][i];
                format!(
                    "{:.4} ({:.4}), {:.2} ms",
                    num(&s["recall"]["mean"]),
                    num(&s["recall"]["by_id"]),
                    num(&s["ms"]["p50"])
                )
            });
        }
        for (i, glob) in FILTER_GLOBS.iter().enumerate() {
            row(
                format!(
                    "filter `{glob}`: admitted; calibrated recall, p50; graph recall, p50; \
                     database scan p50"
                ),
                &|d| {
                    let f = &d["filtered"][i];
                    format!(
                        "{:.1}%; {:.4}, {:.2} ms; {:.4}, {:.2} ms; {:.1} ms",
                        100.0 * num(&f["admitted_fraction"]),
                        num(&f["calibrated"]["recall"]["mean"]),
                        num(&f["calibrated"]["ms"]["p50"]),
                        num(&f["graph"]["recall"]["mean"]),
                        num(&f["graph"]["ms"]["p50"]),
                        num(&f["exact_ms"]["p50"])
                    )
                },
            );
        }
        row(
            "reopen: Store::open, first search (loads graph), next".into(),
            &|d| {
                let r = &d["reopen"];
                format!(
                    "{:.0} / {:.0} / {:.2} ms",
                    num(&r["open_ms"]),
                    num(&r["first_search_ms"]),
                    num(&r["second_search_ms"])
                )
            },
        );
        row(
            "re-index 1 file (10 chunks): put_file + commit".into(),
            &|d| format!("{:.1} ms", num(&d["reindex"]["put_file_commit_ms"])),
        );
        row(
            "next search (graph catches up: +10 nodes, 10 tombstones)".into(),
            &|d| format!("{:.1} ms", num(&d["reindex"]["next_search_ms"])),
        );
        row("full checkpoint / (commit + catch-up)".into(), &|d| {
            format!("{:.0}x", num(&d["reindex"]["full_checkpoint_over_reindex"]))
        });
        row(
            "after the change (10 tombstones): calibrated recall, p50; graph recall, p50; \
             database scan p50"
                .into(),
            &|d| {
                let a = &d["reindex"]["after"];
                format!(
                    "{:.4}, {:.2} ms; {:.4}, {:.2} ms; {:.1} ms ({} queries)",
                    num(&a["calibrated"]["recall"]["mean"]),
                    num(&a["calibrated"]["ms"]["p50"]),
                    num(&a["graph"]["recall"]["mean"]),
                    num(&a["graph"]["ms"]["p50"]),
                    num(&a["exact_ms"]["p50"]),
                    a["queries"]
                )
            },
        );
        row("checkpoint after the change (save)".into(), &|d| {
            format!("{:.1} s", num(&d["reindex"]["checkpoint_after_s"]))
        });
    }

    let c = &report["change_detection"];
    let _ = writeln!(
        out,
        "\nChange detection, {} files in 20 x 10 directories, nothing changed ({} runs after a \
         warm-up; reference: the walk alone):\n",
        c["files"], c["runs"]
    );
    let _ = writeln!(out, "| | min | p50 | max | p50 / walk p50 |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let walk_p50 = num(&c["walk_ms"]["p50"]);
    for (label, key) in [
        ("walk alone (reference)", "walk_ms"),
        ("`git diff --name-only <commit>` alone", "git_diff_ms"),
        (
            "**detect_changes**, git diff against the indexed commit",
            "detect_git_ms",
        ),
        (
            "detect_changes, git repository, no indexed commit",
            "detect_no_indexed_commit_ms",
        ),
        (
            "detect_changes, not a git repository",
            "detect_not_a_repository_ms",
        ),
    ] {
        let v = &c[key];
        let _ = writeln!(
            out,
            "| {label} | {:.1} ms | {:.1} ms | {:.1} ms | {:.2} |",
            num(&v["min"]),
            num(&v["p50"]),
            num(&v["max"]),
            num(&v["p50"]) / walk_p50
        );
    }
    let _ = writeln!(out, "\nWhole run: {:.0} s.", num(&report["run_seconds"]));
    out
}
