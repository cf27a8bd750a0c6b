//! `cargo xtask bench index`: how soon a fresh repository answers. The whole `quarry search`
//! process on a fresh copy (first result), the first phase alone in process (source MB/s),
//! and optionally the second (chunks/s, in each precision asked for), with ripgrep over the
//! same copy as the reference measured in the same run.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use quarry_embed::{DEFAULT_MODEL, EmbedderOptions, ModelDir, Precision, PrecisionChoice};
use quarry_engine::{Engine, EngineOptions, IndexEvent, VectorCacheOptions};
use serde_json::json;

use crate::bench::common::{
    CorpusArgs, bench_cache, cpu_description, git_commit, release_quarry, repository_root,
    write_report,
};
use crate::model::provisioner;

/// The question each fresh copy is asked; what it finds does not matter here.
const QUERY: &str = "where is the configuration loaded";

/// One corpus's measurements, medians over the runs.
struct Measured {
    name: String,
    files: usize,
    chunks: u64,
    bytes: u64,
    first_result: Duration,
    phase_one: Duration,
    ripgrep: Duration,
    /// Chunks embedded by the second phase in each precision, and how long it took.
    phase_two: Vec<(Precision, usize, Duration)>,
    /// Another fresh copy indexed after the first precision's second phase filled the
    /// machine's vector cache, where the second phase ran.
    second_copy: Option<SecondCopy>,
    /// Chunks of the first precision's second phase whose vectors came from the run's
    /// cache: texts repeated within the corpus, or every one with `--keep-vector-cache`.
    first_from_cache: usize,
}

/// A second worktree of a repository this machine indexed: both phases, its vectors from
/// the machine's vector cache.
struct SecondCopy {
    phase_one: Duration,
    /// Until every chunk has its vector committed: from then on the dense leg answers
    /// exactly, by a scan, until the checkpoint's graph makes it faster.
    full_quality: Duration,
    /// Both phases with the checkpoint: until the vector index (the HNSW graph) is saved.
    graph_saved: Duration,
    chunks: usize,
    from_cache: usize,
}

/// What every corpus's measurement shares.
#[derive(Clone, Copy)]
struct Setup<'a> {
    /// The `quarry` binary of the xtask's profile.
    quarry: &'a Path,
    model: &'a ModelDir,
    runs: usize,
    /// Most texts and padded tokens a forward pass, where given.
    batch: (Option<usize>, Option<usize>),
    keep_vector_cache: bool,
}

/// `cargo xtask bench index`'s options.
#[derive(clap::Args)]
pub struct IndexArgs {
    /// Runs per corpus; medians are reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// The second phase in this precision (repeatable: each on a fresh copy, the first is
    /// the main table's; default: the environment's, `QUARRY_PRECISION` or auto).
    #[arg(long = "precision", value_name = "P")]
    precisions: Vec<PrecisionChoice>,
    /// Most texts a forward pass (default: the embedder's).
    #[arg(long, value_name = "N")]
    batch_size: Option<usize>,
    /// Most padded tokens a forward pass (default: the embedder's).
    #[arg(long, value_name = "N")]
    batch_tokens: Option<usize>,
    /// Keep the run's vector cache from the last run instead of emptying it: the first
    /// copy's second phase then reads what it holds (the report says how many), which
    /// measures a second worktree of a large corpus without embedding it again.
    #[arg(long)]
    keep_vector_cache: bool,
    #[command(flatten)]
    corpora: CorpusArgs,
}

pub fn run(args: IndexArgs) -> Result<()> {
    let runs = args.runs as usize;
    let quarry = release_quarry()?;
    let root = repository_root()?;
    let model = provisioner().resolve(&DEFAULT_MODEL)?;
    let batch = (args.batch_size, args.batch_tokens);
    let precisions = match args.precisions.is_empty() {
        true => vec![engine_options()?.embedder.precision],
        false => args.precisions,
    };
    let setup = Setup {
        quarry: &quarry,
        model: &model,
        runs,
        batch,
        keep_vector_cache: args.keep_vector_cache,
    };
    let mut measured = Vec::new();
    for (corpus, source) in args.corpora.corpora(root)? {
        let embed = match args.corpora.embeds(&corpus) {
            true => &precisions[..],
            false => &[],
        };
        eprintln!("{}: {runs} runs", corpus.name);
        measured.push(measure(&corpus.name, &source, &setup, embed)?);
    }

    // The backend `QUARRY_BACKEND` picks (the CPU unless built with `wgpu`).
    let backend = quarry_embed::backend::select(engine_options()?.embedder.backend)?.1;
    let commit = git_commit(root);
    let mut markdown = markdown(&commit, runs, &measured);
    let cpu = cpu_description();
    markdown.push_str(&format!(
        "\nThe transformer ran on {backend}; CPU: {cpu}.\n"
    ));
    let json = json!({
        "commit": commit,
        "backend": backend.to_string(),
        "cpu": cpu,
        "runs": runs,
        "query": QUERY,
        "corpora": measured.iter().map(|m| json!({
            "name": m.name,
            "files": m.files,
            "chunks": m.chunks,
            "bytes": m.bytes,
            "first_result_seconds": m.first_result.as_secs_f64(),
            "phase_one_seconds": m.phase_one.as_secs_f64(),
            "ripgrep_seconds": m.ripgrep.as_secs_f64(),
            "phase_two": m.phase_two.iter().map(|(precision, chunks, time)| json!({
                "precision": precision.name(), "chunks": chunks, "seconds": time.as_secs_f64()
            })).collect::<Vec<_>>(),
            "phase_two_from_cache": m.first_from_cache,
            "second_copy": m.second_copy.as_ref().map(|c| json!({
                "phase_one_seconds": c.phase_one.as_secs_f64(),
                "full_quality_seconds": c.full_quality.as_secs_f64(),
                "graph_saved_seconds": c.graph_saved.as_secs_f64(),
                "chunks": c.chunks,
                "from_cache": c.from_cache,
            })),
        })).collect::<Vec<_>>(),
    });
    write_report(root, &format!("index-{commit}"), &markdown, &json)?;
    print!("{markdown}");
    Ok(())
}

/// Each run on a fresh copy of `source`: `quarry search` whole, ripgrep whole, the first
/// phase in process; then the second phase in each of `precisions`, the first on the last
/// copy, the others each on a fresh copy of their own (its first phase not timed).
fn measure(
    name: &str,
    source: &Path,
    setup: &Setup,
    precisions: &[PrecisionChoice],
) -> Result<Measured> {
    let Setup {
        quarry,
        model,
        runs,
        batch,
        keep_vector_cache,
    } = *setup;
    // The run's vector cache, emptied at its start (unless kept): the first copy's second
    // phase embeds every chunk into it, and a second copy's takes them from there. It stays
    // after the run (`QUARRY_VECTOR_CACHE_DIR` at it lets a relevance run reuse the vectors).
    let dir = bench_cache()?.join("index-vectors");
    if dir.exists() && !keep_vector_cache {
        std::fs::remove_dir_all(&dir)?;
    }
    let cache = VectorCacheOptions {
        dir,
        max_bytes: quarry_store::DEFAULT_VECTOR_CACHE_BYTES,
    };
    let mut first_results = Vec::new();
    let mut phase_ones = Vec::new();
    let mut ripgreps = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let copy = fresh_copy(source)?;
        let started = Instant::now();
        // No background run left behind to load the machine while the rest is timed, and
        // no vectors from an earlier run's cache.
        let out = Command::new(quarry)
            .args(["search", QUERY, "--no-background"])
            .current_dir(copy.path())
            .env("NO_COLOR", "1")
            .env("QUARRY_VECTOR_CACHE_DIR", &cache.dir)
            .output()?;
        first_results.push(started.elapsed());
        ensure!(
            out.status.success() && !out.stdout.is_empty(),
            "quarry search on {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let started = Instant::now();
        let out = Command::new("rg")
            .args(["--count", "-i", "configuration", "."])
            .current_dir(copy.path())
            .output()
            .context("could not run rg (ripgrep): install it")?;
        ripgreps.push(started.elapsed());
        ensure!(out.status.code() == Some(0), "rg found nothing in {name}");

        let copy = fresh_copy(source)?;
        let engine = Engine::open(
            copy.path(),
            model,
            with_precision(precisions.first(), batch)?,
        )?;
        let started = Instant::now();
        engine.index_files(&mut |_| {})?;
        phase_ones.push(started.elapsed());
        last = Some((copy, engine));
    }
    let (_copy, engine) = last.expect("at least one run");
    let engine = engine.with_vector_cache(Some(cache.clone()));
    let store = engine.store();
    let files = store.files()?;
    let bytes = files.iter().map(|f| f.size).sum();
    let chunks = store.counts()?.chunks;
    let mut phase_two = Vec::new();
    let mut first_from_cache = 0;
    for (i, &precision) in precisions.iter().enumerate() {
        let fresh;
        let engine = match i {
            0 => &engine,
            _ => {
                let copy = fresh_copy(source)?;
                let other =
                    Engine::open(copy.path(), model, with_precision(Some(&precision), batch)?)?;
                other.index_files(&mut |_| {})?;
                fresh = (copy, other);
                &fresh.1
            }
        };
        let resolved = precision.resolve(engine_options()?.embedder.backend)?;
        eprintln!("{name}: second phase in {resolved}");
        let started = Instant::now();
        let embedded = engine.embed_pending(&mut |_| {})?;
        if i == 0 {
            first_from_cache = embedded.from_cache;
        }
        phase_two.push((resolved, embedded.embedded, started.elapsed()));
    }
    let second_copy = match precisions.first() {
        Some(precision) => {
            eprintln!("{name}: a second copy, its vectors from the machine's cache");
            Some(second_copy(
                source,
                model,
                with_precision(Some(precision), batch)?,
                cache,
            )?)
        }
        None => None,
    };
    Ok(Measured {
        name: name.to_owned(),
        files: files.iter().filter(|f| !f.chunk_ids.is_empty()).count(),
        chunks,
        bytes,
        first_result: median(first_results),
        phase_one: median(phase_ones),
        ripgrep: median(ripgreps),
        phase_two,
        second_copy,
        first_from_cache,
    })
}

/// Both phases on a fresh copy of `source` with the vector cache `cache`, timed.
fn second_copy(
    source: &Path,
    model: &ModelDir,
    options: EngineOptions,
    cache: VectorCacheOptions,
) -> Result<SecondCopy> {
    let copy = fresh_copy(source)?;
    let engine = Engine::open(copy.path(), model, options)?.with_vector_cache(Some(cache));
    let started = Instant::now();
    engine.index_files(&mut |_| {})?;
    let phase_one = started.elapsed();
    let mut checkpoint_at = None;
    let embedded = engine.embed_pending(&mut |event| {
        if event == IndexEvent::Checkpoint {
            checkpoint_at = Some(Instant::now());
        }
    })?;
    let graph_saved = started.elapsed();
    Ok(SecondCopy {
        phase_one,
        full_quality: checkpoint_at.map_or(graph_saved, |at| at - started),
        graph_saved,
        chunks: embedded.embedded,
        from_cache: embedded.from_cache,
    })
}

fn engine_options() -> Result<EngineOptions> {
    Ok(EngineOptions {
        embedder: EmbedderOptions::from_env()?,
        ..EngineOptions::default()
    })
}

/// [`engine_options`] in `precision` and with the batch limits `(texts, tokens)`, where given.
fn with_precision(
    precision: Option<&PrecisionChoice>,
    (texts, tokens): (Option<usize>, Option<usize>),
) -> Result<EngineOptions> {
    let mut options = engine_options()?;
    let embedder = &mut options.embedder;
    embedder.precision = precision.copied().unwrap_or(embedder.precision);
    embedder.batch_size = texts.unwrap_or(embedder.batch_size);
    embedder.batch_tokens = tokens.unwrap_or(embedder.batch_tokens);
    Ok(options)
}

/// A copy of `source` in a new temporary directory, without any index.
fn fresh_copy(source: &Path) -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    quarry_testkit::copy_dir(source, dir.path());
    let index = dir.path().join(quarry_store::INDEX_DIR);
    if index.exists() {
        std::fs::remove_dir_all(&index)?;
    }
    Ok(dir)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn markdown(commit: &str, runs: usize, measured: &[Measured]) -> String {
    let mut out = format!(
        "# Index: time to a first result ({commit})\n\n\
         Written by `cargo xtask bench index`. Each corpus is copied fresh (no index) {runs} \
         times; medians. **first result**: the whole `quarry search \"{QUERY}\"` process on the \
         fresh copy (start, model load, the index's first phase, the search, exit), with the \
         vectors still to come. **phase 1**: `Engine::index_files` alone in process on another \
         fresh copy (walk, chunk, store, lexical index, import graph), and the source bytes \
         it read per second. **rg**: `rg --count -i configuration` over the same copy, the \
         reference in the same run. **phase 2**: `Engine::embed_pending` after it (the \
         transformer), where measured, in the first precision of the table below.\n\n\
         | corpus | files | chunks | source MB | first result s | × rg | phase 1 s | MB/s | \
         rg ms | phase 2 chunks | phase 2 s | chunks/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for m in measured {
        let megabytes = m.bytes as f64 / 1e6;
        let (two_chunks, two_seconds, rate) = match m.phase_two.first() {
            Some(&(_, chunks, time)) => (
                chunks.to_string(),
                format!("{:.1}", time.as_secs_f64()),
                format!("{:.1}", chunks as f64 / time.as_secs_f64()),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {megabytes:.2} | {:.2} | {:.0} | {:.2} | {:.1} | {:.1} | {two_chunks} \
             | {two_seconds} | {rate} |\n",
            m.name,
            m.files,
            m.chunks,
            m.first_result.as_secs_f64(),
            m.first_result.as_secs_f64() / m.ripgrep.as_secs_f64(),
            m.phase_one.as_secs_f64(),
            megabytes / m.phase_one.as_secs_f64(),
            m.ripgrep.as_secs_f64() * 1000.0,
        ));
    }
    for m in measured.iter().filter(|m| m.first_from_cache > 0) {
        out.push_str(&format!(
            "\n{}: {} of phase 2's chunks took their vectors from the run's cache (texts \
             repeated within the corpus, or all of them with `--keep-vector-cache`).\n",
            m.name, m.first_from_cache
        ));
    }
    out.push_str(
        "\n**Phase 2 by precision** (each on a fresh copy, one after another; × the first):\n\n\
         | corpus | precision | chunks | s | chunks/s | × first |\n|---|---|---:|---:|---:|---:|\n",
    );
    for m in measured {
        let rate =
            |&(_, chunks, time): &(Precision, usize, Duration)| chunks as f64 / time.as_secs_f64();
        let Some(first) = m.phase_two.first().map(rate) else {
            continue;
        };
        for run in &m.phase_two {
            out.push_str(&format!(
                "| {} | {} | {} | {:.1} | {:.1} | {:.2} |\n",
                m.name,
                run.0,
                run.1,
                run.2.as_secs_f64(),
                rate(run),
                rate(run) / first
            ));
        }
    }
    out.push_str(
        "\n**A second worktree** (another fresh copy, after the first precision's second phase \
         filled the run's own vector cache): both phases, its vectors from the cache. **Full quality** \
         is when every chunk's vector is committed: from then on a search's dense leg is \
         exact (a scan of the stored vectors) while the checkpoint builds the HNSW graph, \
         which makes it faster, not better; **graph saved** is when that ends.\n\n\
         | corpus | phase 1 s | full quality s | × its phase 1 | graph saved s | \
         chunks from cache |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for m in measured {
        if let Some(c) = &m.second_copy {
            out.push_str(&format!(
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {} of {} |\n",
                m.name,
                c.phase_one.as_secs_f64(),
                c.full_quality.as_secs_f64(),
                c.full_quality.as_secs_f64() / c.phase_one.as_secs_f64(),
                c.graph_saved.as_secs_f64(),
                c.from_cache,
                c.chunks
            ));
        }
    }
    out
}
