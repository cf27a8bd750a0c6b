//! `cargo xtask bench embed`: embedding throughput, query latency and peak RSS of quarry's
//! embedder at every precision this machine runs, and in the same run the same inputs through
//! the references: sentence-transformers on PyTorch in fp32 and under bf16 autocast, and the
//! model exported to ONNX with int8 weights on ONNX Runtime. Every runtime runs in a process of
//! its own (quarry's in a child of this xtask), so that each peak RSS is its own.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use quarry_bench::stats::percentile;
use quarry_chunk::Chunker;
use quarry_embed::{
    BackendChoice, DEFAULT_MODEL, EmbedError, Embedder, EmbedderOptions, Embedding, Level,
    ModelDir, Precision, PrecisionChoice,
};
use serde_json::{Value, json};

use crate::bench::common::{cpu_description, git_commit, reference_python, write_report};

mod report;
use report::Report;

const LENGTHS: [usize; 2] = [128, 256];
const BATCH_SIZES: [usize; 3] = [1, 8, 32];
/// Twelve tokens with `[CLS]` and `[SEP]`.
const QUERY: &str = "function that retries an http request with backoff";
const QUERY_RUNS: usize = 100;
/// `embed_reference.py`'s runtimes, by the name it takes and the report's; the first is the
/// baseline every runtime's vectors are compared with.
const REFERENCES: [(&str, &str); 3] = [
    ("torch-fp32", "PyTorch fp32"),
    ("torch-bf16", "PyTorch bf16"),
    ("ort-int8", "ORT int8"),
];
/// The reference on a GPU, run when quarry runs on one and PyTorch sees CUDA.
const CUDA_REFERENCE: (&str, &str) = ("torch-cuda", "PyTorch fp32 on CUDA");
/// quarry's runtime on the GPU (WGPU, f32).
const QUARRY_GPU: &str = "quarry f32 on the GPU";
/// Below this cosine to the baseline, a runtime computes something else and its speed says
/// nothing.
const MIN_COSINE: f64 = 0.98;

/// `cargo xtask bench embed`'s options.
#[derive(clap::Args)]
pub struct EmbedArgs {
    /// Code chunks embedded per length and batch size.
    #[arg(long = "texts", value_name = "N", default_value_t = 128)]
    count: usize,
    /// Leave out the references (and their 6 GB environment): quarry's precisions only.
    #[arg(long)]
    no_reference: bool,
    /// Measures every runtime this many times, in turns (each runtime once, then each
    /// again), and reports each rate as the median: a reference's rate moves by a fifth
    /// from one run to the next on a shared machine, and one run per row cannot settle a
    /// ratio.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    rounds: u16,
    /// Where quarry's embedder runs: `cpu` (each precision this CPU runs) or `gpu` (Burn's
    /// WGPU backend in f32, measured beside quarry's CPU precisions and, where PyTorch sees
    /// CUDA, PyTorch on the GPU). Without it, `QUARRY_BACKEND`, else the CPU.
    #[arg(long)]
    backend: Option<BackendChoice>,
    /// Measures this precision only, on the job read as JSON from stdin, and writes the
    /// measurements as JSON to stdout: how a run measures each precision in its own process.
    #[arg(long, hide = true, value_parser = parse_precision)]
    only_precision: Option<Precision>,
}

fn parse_precision(name: &str) -> Result<Precision, String> {
    Precision::ALL
        .into_iter()
        .find(|precision| precision.name() == name)
        .ok_or_else(|| format!("unknown precision `{name}`"))
}

struct Run {
    length: usize,
    batch_size: usize,
    /// Each round's time, in the order the rounds ran.
    rounds: Vec<f64>,
}

impl Run {
    /// The median of the rounds' times.
    fn seconds(&self) -> f64 {
        median(self.rounds.clone())
    }
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(&values, 0.5)
}

/// One runtime's measurements, as its process reported them.
struct Measured {
    /// Its name in the report: `quarry int8`, `PyTorch bf16`.
    name: String,
    /// `runtime` (a description), `query_ms`, `peak_rss_mb`, `embeddings` (the vectors of
    /// the longest length at the largest batch), and quarry's `fingerprint` and, in f32,
    /// `query_f32_ms`.
    result: Value,
    runs: Vec<Run>,
}

pub fn run(args: EmbedArgs) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let model = crate::model::provisioner().resolve(&DEFAULT_MODEL)?;
    let mut options = EmbedderOptions::from_env()?;
    if let Some(precision) = args.only_precision {
        return measure_quarry(&model, options, precision);
    }
    let largest_batch = BATCH_SIZES[BATCH_SIZES.len() - 1];
    ensure!(
        args.count >= largest_batch,
        "--texts {} is fewer than the largest batch measured ({largest_batch}): give at least \
         {largest_batch}",
        args.count
    );
    let on_gpu = args.backend.unwrap_or(options.backend) == BackendChoice::Gpu;
    // `QUARRY_CPU` caps quarry's children (they inherit it) and the references alike.
    let level = Level::cap_from_env().map_err(anyhow::Error::msg)?;
    options.backend = BackendChoice::Cpu;
    // f32 on the CPU runs on every machine; this one only tokenizes.
    let probe = Embedder::load(
        &model,
        EmbedderOptions {
            precision: PrecisionChoice::Fixed(Precision::F32),
            ..options
        },
    )?;
    let texts = code_chunks(root, &probe, args.count)?;
    let fingerprint = probe.fingerprint();
    let model_name = format!(
        "{}@{}#{}",
        fingerprint.name,
        fingerprint.revision,
        &fingerprint.digest[..16]
    );
    drop(probe);
    let default = PrecisionChoice::Auto.resolve(options.backend)?;
    let precisions: Vec<Precision> = Precision::ALL
        .into_iter()
        .filter(|&p| PrecisionChoice::Fixed(p).resolve(options.backend).is_ok())
        .collect();
    eprintln!(
        "{} code chunks of at least {} tokens; quarry {}in {precisions:?} on the CPU, {default} \
         by default",
        texts.len(),
        LENGTHS[1],
        if on_gpu {
            "in f32 on the GPU, and "
        } else {
            ""
        },
    );
    let job = json!({
        "model_dir": model.path,
        "texts": texts,
        "lengths": LENGTHS,
        "batch_sizes": BATCH_SIZES,
        "threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "query": QUERY,
        "query_runs": QUERY_RUNS,
        "check_length": LENGTHS[1],
        "check_batch_size": BATCH_SIZES[2],
    });

    let xtask = std::env::current_exe()?;
    let quarry = |backend: BackendChoice, precision: Precision| {
        let mut command = Command::new(&xtask);
        command
            .args(["bench", "embed", "--only-precision", precision.name()])
            .env("QUARRY_BACKEND", backend.name());
        command
    };
    // Every runtime's process, in the order the report lists them: quarry on the GPU, its
    // precisions on the CPU, then the references.
    let mut arms: Vec<(String, Command, Value)> = Vec::new();
    if on_gpu {
        let command = quarry(BackendChoice::Gpu, Precision::F32);
        arms.push((QUARRY_GPU.into(), command, job.clone()));
    }
    for precision in precisions {
        let command = quarry(BackendChoice::Cpu, precision);
        arms.push((format!("quarry {precision}"), command, job.clone()));
    }
    if !args.no_reference {
        let python = reference_python()?;
        let cuda = on_gpu.then_some(CUDA_REFERENCE);
        for (runtime, name) in REFERENCES.into_iter().chain(cuda) {
            let mut command = Command::new(&python);
            command
                .arg(root.join("bench-suite/embed_reference.py"))
                .env("HF_HUB_OFFLINE", "1");
            // PyTorch capped to quarry's level (its own kernels, and the BLAS its linear
            // layers call), so that a ratio compares like with like.
            if let Some((aten, mkl, onednn)) = level.and_then(torch_caps) {
                command
                    .env("ATEN_CPU_CAPABILITY", aten)
                    .env("MKL_ENABLE_INSTRUCTIONS", mkl)
                    .env("ONEDNN_MAX_CPU_ISA", onednn);
            }
            let mut job = job.clone();
            job["runtime"] = json!(runtime);
            arms.push((name.to_owned(), command, job));
        }
    }
    // Round by round, each runtime in turn, so that a slow spell of the machine falls on
    // every runtime alike rather than on one.
    let mut rounds: Vec<Vec<Measured>> = (0..arms.len()).map(|_| Vec::new()).collect();
    let mut unavailable = Vec::new();
    for round in 1..=args.rounds {
        for ((name, command, job), measured) in arms.iter_mut().zip(&mut rounds) {
            if unavailable.contains(name) {
                continue;
            }
            eprintln!("measuring {name}, round {round} of {}", args.rounds);
            match measure(name.clone(), command, job)? {
                Some(runtime) => measured.push(runtime),
                None => unavailable.push(name.clone()),
            }
        }
    }
    let measured: Vec<Measured> = rounds
        .into_iter()
        .filter_map(Measured::from_rounds)
        .collect();

    let report = Report {
        model: model_name,
        cpu: cpu_description(),
        texts: texts.len(),
        default: if on_gpu {
            QUARRY_GPU.into()
        } else {
            format!("quarry {default}")
        },
        cpu_default: format!("quarry {default}"),
        measured,
        unavailable,
        rounds: args.rounds,
    };
    let markdown = report.markdown();
    print!("{markdown}");
    let name = format!("embed-{}", git_commit(root));
    write_report(root, &name, &markdown, &report.json())?;
    for runtime in &report.measured {
        if let Some(cosine) = report.lowest_cosine(runtime) {
            ensure!(
                cosine > MIN_COSINE,
                "{}'s vectors stray from {}'s (lowest cosine {cosine:.4}): it computes something \
                 else, and its speed says nothing",
                runtime.name,
                report.baseline().map_or("", |b| b.name.as_str()),
            );
        }
    }
    Ok(())
}

/// `--only-precision`: quarry in `precision` on the job's texts, written to stdout as
/// `embed_reference.py` writes its own.
fn measure_quarry(model: &ModelDir, options: EmbedderOptions, precision: Precision) -> Result<()> {
    let job: Value = serde_json::from_reader(std::io::stdin().lock())?;
    let texts = job["texts"]
        .as_array()
        .context("the job has no texts")?
        .iter()
        .map(|text| text.as_str().context("a text is not a string"))
        .collect::<Result<Vec<&str>>>()?;
    let options = EmbedderOptions {
        precision: PrecisionChoice::Fixed(precision),
        ..options
    };
    let mut runs = Vec::new();
    let mut check_vectors = Value::Null;
    for length in LENGTHS {
        for batch_size in BATCH_SIZES {
            // No token budget: the batch size alone cuts batches, as the references' do.
            let embedder = Embedder::load(
                model,
                EmbedderOptions {
                    batch_size,
                    batch_tokens: usize::MAX,
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
                "quarry {:<4} {length:>3} tokens, batch {batch_size:>2}: {:>6.1} seq/s",
                precision.name(),
                texts.len() as f64 / seconds
            );
            if (length, batch_size) == (LENGTHS[1], BATCH_SIZES[2]) {
                check_vectors = json!(embeddings.iter().map(|e| &e.vector).collect::<Vec<_>>());
            }
            runs.push(json!({"length": length, "batch_size": batch_size, "seconds": seconds}));
        }
    }

    // A query as search embeds it, and in f32 also as documents are (there only the two
    // differ: queries read half-precision copies of the weights), in turns of ten runs: both
    // see the same machine, and each turn the caches a server answering queries of one kind
    // would have (its first run is left out).
    type Embed = fn(&Embedder, &str) -> Result<Embedding, EmbedError>;
    let kinds: &[Embed] = match precision {
        Precision::F32 => &[Embedder::embed_query, Embedder::embed_one],
        _ => &[Embedder::embed_query],
    };
    let embedder = Embedder::load(model, options)?;
    let mut latencies = vec![Vec::new(); kinds.len()];
    for turn in 0..QUERY_RUNS.div_ceil(9) * kinds.len() {
        let kind = turn % kinds.len();
        for run in 0..10 {
            let start = Instant::now();
            kinds[kind](&embedder, QUERY)?;
            if run > 0 {
                latencies[kind].push(start.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    let summary = |latencies: &mut Vec<f64>| {
        latencies.sort_by(f64::total_cmp);
        json!({"p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95)})
    };
    let mut result = json!({
        "runtime": match embedder.int8_instructions() {
            Some(instructions) => format!(
                "quarry-embed, Burn 0.22.1, {}, int8 on {instructions}",
                embedder.backend()
            ),
            None => format!("quarry-embed, Burn 0.22.1, {}", embedder.backend()),
        },
        "fingerprint": embedder.fingerprint().to_string(),
        "runs": runs,
        "query_ms": summary(&mut latencies[0]),
        "embeddings": check_vectors,
    });
    if let Some(f32_latencies) = latencies.get_mut(1) {
        result["query_f32_ms"] = summary(f32_latencies);
    }
    result["peak_rss_mb"] = json!(peak_rss_mb()?);
    serde_json::to_writer(std::io::stdout().lock(), &result)?;
    Ok(())
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

/// Runs `command` (a runtime in a process of its own) with `job` as JSON on its stdin, and
/// reads its measurements as JSON from its stdout; None where it says that it cannot run
/// here (`unavailable`: PyTorch without CUDA).
fn measure(name: String, command: &mut Command, job: &Value) -> Result<Option<Measured>> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {name}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    ensure!(output.status.success(), "{name} failed ({})", output.status);
    let result: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{name} wrote no measurements"))?;
    if let Some(why) = result["unavailable"].as_str() {
        eprintln!("{name} cannot run here: {why}");
        return Ok(None);
    }
    let runs = result["runs"]
        .as_array()
        .with_context(|| format!("{name} reported no runs"))?
        .iter()
        .map(|run| Run {
            length: run["length"].as_u64().unwrap_or(0) as usize,
            batch_size: run["batch_size"].as_u64().unwrap_or(0) as usize,
            rounds: vec![run["seconds"].as_f64().unwrap_or(f64::NAN)],
        })
        .collect();
    Ok(Some(Measured { name, result, runs }))
}

impl Measured {
    /// The run at `length` tokens in batches of `batch_size`.
    fn run_at(&self, length: usize, batch_size: usize) -> Option<&Run> {
        self.runs
            .iter()
            .find(|r| (r.length, r.batch_size) == (length, batch_size))
    }

    /// One runtime's rounds as one: each run's time and the query's percentiles the median of
    /// the rounds', the peak RSS their largest, the rest (vectors, description) the first
    /// round's. `None` without rounds.
    fn from_rounds(rounds: Vec<Measured>) -> Option<Measured> {
        let mut rounds = rounds.into_iter();
        let mut first = rounds.next()?;
        let others: Vec<Measured> = rounds.collect();
        for (i, run) in first.runs.iter_mut().enumerate() {
            run.rounds.extend(
                others
                    .iter()
                    .filter_map(|other| other.runs.get(i)?.rounds.first()),
            );
        }
        let all = || std::iter::once(&first.result).chain(others.iter().map(|o| &o.result));
        let values = |pointer: &str| -> Vec<f64> {
            all()
                .filter_map(|result| result.pointer(pointer)?.as_f64())
                .collect()
        };
        let (p50, p95) = (values("/query_ms/p50"), values("/query_ms/p95"));
        let peak = values("/peak_rss_mb").into_iter().reduce(f64::max);
        if !others.is_empty() {
            first.result["query_ms"] = json!({"p50": median(p50), "p95": median(p95)});
            first.result["peak_rss_mb"] = json!(peak);
        }
        Some(first)
    }
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

/// The names PyTorch's caps give `level`: `ATEN_CPU_CAPABILITY`'s, MKL's
/// (`MKL_ENABLE_INSTRUCTIONS`) and oneDNN's (`ONEDNN_MAX_CPU_ISA`); `None` where they have
/// none.
fn torch_caps(level: Level) -> Option<(&'static str, &'static str, &'static str)> {
    match level {
        Level::Avx2 => Some(("avx2", "AVX2", "AVX2")),
        Level::AvxVnni => Some(("avx2", "AVX2", "AVX2_VNNI")),
        Level::Avx512 => Some(("avx512", "AVX512", "AVX512")),
        Level::Scalar | Level::Neon => None,
    }
}
