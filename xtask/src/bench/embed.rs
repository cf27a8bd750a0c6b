//! `cargo xtask bench embed`: embedding throughput and query latency of quarry's embedder, and
//! in the same run the same inputs through sentence-transformers on PyTorch as the reference.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use quarry_bench::stats::percentile;
use quarry_chunk::Chunker;
use quarry_embed::{DEFAULT_MODEL, Embedder, EmbedderOptions};
use serde_json::{Value, json};

use crate::bench::common::{git_commit, reference_python, write_report};

const LENGTHS: [usize; 2] = [128, 256];
const BATCH_SIZES: [usize; 3] = [1, 8, 32];
/// Twelve tokens with `[CLS]` and `[SEP]`.
const QUERY: &str = "function that retries an http request with backoff";
const QUERY_RUNS: usize = 100;

struct Run {
    length: usize,
    batch_size: usize,
    seconds: f64,
}

/// `cargo xtask bench embed`'s options.
#[derive(clap::Args)]
pub struct EmbedArgs {
    /// Code chunks embedded per length and batch size.
    #[arg(long = "texts", value_name = "N", default_value_t = 128)]
    count: usize,
    /// Leave out the PyTorch reference (and its 6 GB environment).
    #[arg(long)]
    no_reference: bool,
}

pub fn run(args: EmbedArgs) -> Result<()> {
    let (count, with_reference) = (args.count, !args.no_reference);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let model = crate::model::provisioner().resolve(&DEFAULT_MODEL)?;
    let options = EmbedderOptions::from_env()?;
    let probe = Embedder::load(&model, options)?;
    let texts = code_chunks(root, &probe, count)?;
    eprintln!(
        "{} code chunks of at least {} tokens; {}",
        texts.len(),
        LENGTHS[1],
        probe.backend()
    );
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();

    let mut runs = Vec::new();
    let mut check_vectors = Vec::new();
    for length in LENGTHS {
        for batch_size in BATCH_SIZES {
            let embedder = Embedder::load(
                &model,
                EmbedderOptions {
                    batch_size,
                    max_tokens: Some(length),
                    ..options
                },
            )?;
            embedder.embed(&texts[..batch_size])?; // warm-up
            let start = Instant::now();
            let embeddings = embedder.embed(&texts)?;
            let seconds = start.elapsed().as_secs_f64();
            ensure!(
                embeddings.iter().all(|e| e.tokens == length),
                "an input is shorter than {length} tokens"
            );
            eprintln!(
                "quarry    {length:>3} tokens, batch {batch_size:>2}: {:>6.1} seq/s",
                texts.len() as f64 / seconds
            );
            if (length, batch_size) == (LENGTHS[1], BATCH_SIZES[2]) {
                check_vectors = embeddings.into_iter().map(|e| e.vector).collect();
            }
            runs.push(Run {
                length,
                batch_size,
                seconds,
            });
        }
    }
    // A query as search embeds it (half-precision weights on the host path), and in f32 as
    // documents are, in turns of ten runs: both see the same machine, and each turn the
    // caches a server answering queries of one kind would have (its first run is left out).
    let (mut latencies, mut f32_latencies) = (Vec::new(), Vec::new());
    for turn in 0..QUERY_RUNS.div_ceil(9) * 2 {
        let (embed, into): (fn(&Embedder, &str) -> _, _) = match turn % 2 {
            0 => (Embedder::embed_query, &mut latencies),
            _ => (Embedder::embed_one, &mut f32_latencies),
        };
        for run in 0..10 {
            let start = Instant::now();
            embed(&probe, QUERY)?;
            if run > 0 {
                into.push(start.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    latencies.sort_by(f64::total_cmp);
    f32_latencies.sort_by(f64::total_cmp);
    let ours = json!({
        "runtime": format!("quarry-embed, Burn 0.22.1, {}", probe.backend()),
        "query_ms": {"p50": percentile(&latencies, 0.5), "p95": percentile(&latencies, 0.95)},
        "query_f32_ms": {
            "p50": percentile(&f32_latencies, 0.5),
            "p95": percentile(&f32_latencies, 0.95),
        },
        "peak_rss_mb": peak_rss_mb()?,
    });

    let reference = if with_reference {
        Some(run_reference(root, &model.path, &texts)?)
    } else {
        None
    };
    let report = Report {
        texts: texts.len(),
        fingerprint: probe.fingerprint().to_string(),
        ours: (ours, runs),
        reference,
        check_vectors,
    };
    let markdown = report.markdown();
    print!("{markdown}");
    let name = format!("embed-{}", git_commit(root));
    write_report(root, &name, &markdown, &report.json())
}

/// Up to `count` chunks of real code (this repository's crates and part of Python's standard
/// library), each at least as long as the longest measured length, so every input is
/// measured at exactly that length.
fn code_chunks(root: &Path, embedder: &Embedder, count: usize) -> Result<Vec<String>> {
    let stdlib = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .context("python3 is needed for the reference and the Python corpus")?;
    let stdlib = PathBuf::from(String::from_utf8(stdlib.stdout)?.trim());
    let mut dirs = vec![root.join("crates"), root.join("xtask")];
    let packages = [
        "asyncio",
        "email",
        "http",
        "importlib",
        "json",
        "logging",
        "multiprocessing",
        "unittest",
        "urllib",
        "xml",
    ];
    dirs.extend(packages.iter().map(|p| stdlib.join(p)));
    let mut files = Vec::new();
    for dir in &dirs {
        collect_sources(dir, &mut files)?;
    }
    files.sort();
    let chunker = Chunker::new(quarry_chunk::ChunkerConfig::for_max_tokens(
        embedder.max_tokens(),
    ));
    let mut candidates = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file)?;
        if let Ok(chunks) = chunker.chunk(&file.to_string_lossy(), &bytes) {
            // Fewer characters than tokens never makes a long enough chunk.
            let long = chunks
                .into_iter()
                .filter(|c| c.embed_text.len() >= LENGTHS[1]);
            candidates.extend(long.map(|c| c.embed_text));
        }
    }
    let lengths = embedder.tokenize(&candidates.iter().map(String::as_str).collect::<Vec<_>>())?;
    let long: Vec<String> = candidates
        .into_iter()
        .zip(lengths)
        .filter(|(_, tokens)| tokens.ids.len() >= LENGTHS[1])
        .map(|(text, _)| text)
        .collect();
    ensure!(
        long.len() >= count,
        "only {} chunks are long enough",
        long.len()
    );
    // Spread over the whole corpus rather than the first files.
    let step = long.len() / count;
    Ok(long.into_iter().step_by(step).take(count).collect())
}

fn collect_sources(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            if !path.ends_with("fuzz") && !path.ends_with("tests") && !path.ends_with("test") {
                collect_sources(&path, files)?;
            }
        } else if path.extension().is_some_and(|e| e == "rs" || e == "py") {
            files.push(path);
        }
    }
    Ok(())
}

/// Runs `bench-suite/embed_reference.py` in the reference's virtual environment.
fn run_reference(root: &Path, model_dir: &Path, texts: &[&str]) -> Result<(Value, Vec<Run>)> {
    let python = reference_python()?;
    let job = json!({
        "model_dir": model_dir,
        "texts": texts,
        "lengths": LENGTHS,
        "batch_sizes": BATCH_SIZES,
        "threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "query": QUERY,
        "query_runs": QUERY_RUNS,
        "check_length": LENGTHS[1],
        "check_batch_size": BATCH_SIZES[2],
    });
    eprintln!("running the PyTorch reference");
    let mut child = Command::new(&python)
        .arg(root.join("bench-suite/embed_reference.py"))
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", python.display()))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    ensure!(
        output.status.success(),
        "the reference failed ({})",
        output.status
    );
    let result: Value = serde_json::from_slice(&output.stdout)?;
    let runs = result["runs"]
        .as_array()
        .context("the reference reported no runs")?
        .iter()
        .map(|run| Run {
            length: run["length"].as_u64().unwrap_or(0) as usize,
            batch_size: run["batch_size"].as_u64().unwrap_or(0) as usize,
            seconds: run["seconds"].as_f64().unwrap_or(f64::NAN),
        })
        .collect();
    Ok((result, runs))
}

fn peak_rss_mb() -> Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM in /proc/self/status")?;
    let kib: f64 = line.split_whitespace().nth(1).context("VmHWM")?.parse()?;
    Ok(kib / 1024.0)
}

struct Report {
    texts: usize,
    fingerprint: String,
    ours: (Value, Vec<Run>),
    reference: Option<(Value, Vec<Run>)>,
    check_vectors: Vec<Vec<f32>>,
}

impl Report {
    fn seq_per_s(&self, run: &Run) -> f64 {
        self.texts as f64 / run.seconds
    }

    /// The lowest cosine between our vectors and the reference's for the same inputs.
    fn lowest_cosine(&self) -> Option<f64> {
        let reference = self.reference.as_ref()?.0["embeddings"].as_array()?;
        reference
            .iter()
            .zip(&self.check_vectors)
            .map(|(theirs, ours)| {
                let theirs: Vec<f64> = serde_json::from_value(theirs.clone()).ok()?;
                Some(
                    ours.iter()
                        .zip(&theirs)
                        .map(|(a, b)| f64::from(*a) * b)
                        .sum::<f64>(),
                )
            })
            .collect::<Option<Vec<f64>>>()
            .map(|c| c.into_iter().fold(f64::INFINITY, f64::min))
    }

    fn markdown(&self) -> String {
        let (ours, our_runs) = &self.ours;
        let mut out = String::new();
        let _ = writeln!(out, "# Embedding benchmark\n");
        let _ = writeln!(out, "- model: {}", self.fingerprint);
        let _ = writeln!(out, "- quarry: {}", ours["runtime"].as_str().unwrap_or(""));
        if let Some((reference, _)) = &self.reference {
            let _ = writeln!(
                out,
                "- reference: {}",
                reference["runtime"].as_str().unwrap_or("")
            );
        }
        let _ = writeln!(
            out,
            "- inputs: {} code chunks, each truncated to the length measured\n",
            self.texts
        );
        let _ = writeln!(
            out,
            "| tokens | batch | quarry seq/s | quarry tokens/s | reference seq/s | ratio |"
        );
        let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|");
        for run in our_runs {
            let ours = self.seq_per_s(run);
            let theirs = self.reference.as_ref().and_then(|(_, runs)| {
                runs.iter()
                    .find(|r| (r.length, r.batch_size) == (run.length, run.batch_size))
                    .map(|r| self.seq_per_s(r))
            });
            let (theirs_text, ratio) = theirs.map_or(("-".into(), "-".into()), |t| {
                (format!("{t:.1}"), format!("{:.2}", ours / t))
            });
            let _ = writeln!(
                out,
                "| {} | {} | {ours:.1} | {:.0} | {theirs_text} | {ratio} |",
                run.length,
                run.batch_size,
                ours * run.length as f64
            );
        }
        let latency = |v: &Value| {
            format!(
                "p50 {:.1} ms, p95 {:.1} ms",
                v["query_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
                v["query_ms"]["p95"].as_f64().unwrap_or(f64::NAN)
            )
        };
        let rss = |v: &Value| format!("{:.0} MB", v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN));
        let f32_p50 = ours["query_f32_ms"]["p50"].as_f64().unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "\nOne {QUERY_RUNS}-run query of 12 tokens: quarry {} (`embed_query`); with f32 \
             weights, as documents are embedded, p50 {f32_p50:.1} ms (`embed_one`, in turns of \
             ten runs): {:.2}x",
            latency(ours),
            ours["query_ms"]["p50"].as_f64().unwrap_or(f64::NAN) / f32_p50,
        );
        let _ = writeln!(out, "Peak RSS: quarry {}", rss(ours));
        if let Some((reference, _)) = &self.reference {
            let _ = writeln!(
                out,
                "Reference: query {}, peak RSS {}",
                latency(reference),
                rss(reference)
            );
        }
        if let Some(cosine) = self.lowest_cosine() {
            let _ = writeln!(
                out,
                "Lowest cosine between quarry's and the reference's vectors: {cosine:.6}"
            );
        }
        out
    }

    fn json(&self) -> Value {
        let runs = |runs: &[Run]| -> Vec<Value> {
            runs.iter()
                .map(|r| json!({"length": r.length, "batch_size": r.batch_size, "seconds": r.seconds, "seq_per_s": self.seq_per_s(r)}))
                .collect()
        };
        let summary = |(value, list): &(Value, Vec<Run>)| json!({"runtime": value["runtime"], "query_ms": value["query_ms"], "peak_rss_mb": value["peak_rss_mb"], "runs": runs(list)});
        json!({
            "model": self.fingerprint,
            "texts": self.texts,
            "quarry": summary(&self.ours),
            "reference": self.reference.as_ref().map(summary),
            "lowest_cosine": self.lowest_cosine(),
        })
    }
}
