//! What the benchmarks share: the repository and the release binary they measure, their
//! corpora's arguments, edits to a copy, the PyTorch reference's environment and the
//! reports they write.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use quarry_bench::corpus::{CorporaFile, Corpus};
use serde_json::Value;

/// The reference's pinned versions; the virtual environment is made once (about 6 GB, as
/// PyPI's torch wheel brings its CUDA libraries) and installed into again when they change.
const REFERENCE_PACKAGES: [&str; 5] = [
    "sentence-transformers==6.2.0",
    "torch==2.15.0",
    // `bench embed`'s ONNX Runtime int8 reference; onnxscript is torch's ONNX exporter's.
    "onnxruntime==1.32.0",
    "onnx==1.23.2",
    "onnxscript==0.7.2",
];

/// Writes a benchmark's report as `bench-suite/reports/<name>.md` and `.json` under `root`.
pub(crate) fn write_report(root: &Path, name: &str, markdown: &str, json: &Value) -> Result<()> {
    let dir = root.join("bench-suite/reports");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("{name}.md")), markdown)?;
    std::fs::write(
        dir.join(format!("{name}.json")),
        // Compact: reports are part of every clone.
        serde_json::to_string(json)?,
    )?;
    eprintln!("wrote bench-suite/reports/{name}.md and .json");
    Ok(())
}

/// The commit a report is of: `HEAD`'s short hash, `-dirty` with uncommitted changes, and
/// the level `QUARRY_CPU` caps the run at.
pub(crate) fn git_commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]);
    let commit = if git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        commit
    } else {
        format!("{commit}-dirty")
    };
    // A run capped below the CPU's level (`QUARRY_CPU`) measures another machine: its
    // reports say which.
    match quarry_embed::Level::cap_from_env() {
        Ok(Some(level)) => format!("{commit}-{level}"),
        _ => commit,
    }
}

/// The reference's Python: `QUARRY_BENCH_PYTHON`, or a virtual environment in the user cache,
/// made on first use and brought up to date when [`REFERENCE_PACKAGES`] changes.
pub(crate) fn reference_python() -> Result<PathBuf> {
    if let Some(python) = std::env::var_os("QUARRY_BENCH_PYTHON") {
        return Ok(python.into());
    }
    let cache = directories::ProjectDirs::from("", "", "quarry")
        .context("no user cache directory; set QUARRY_BENCH_PYTHON")?;
    let venv = cache.cache_dir().join("bench-venv");
    let python = venv.join("bin/python");
    // The list the environment was last installed with.
    let stamp = venv.join("quarry-requirements.txt");
    let wanted = REFERENCE_PACKAGES.join("\n");
    let created = !python.exists();
    if created {
        eprintln!(
            "creating {} with {REFERENCE_PACKAGES:?} (about 6 GB, once)",
            venv.display()
        );
        let status = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(&venv)
            .status()?;
        ensure!(status.success(), "python3 -m venv failed");
    } else if fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted) {
        return Ok(python);
    } else {
        eprintln!("installing {REFERENCE_PACKAGES:?} into {}", venv.display());
    }
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet"])
        .args(REFERENCE_PACKAGES)
        .status()?;
    if !status.success() {
        if created {
            let _ = fs::remove_dir_all(&venv);
        }
        bail!("pip install {REFERENCE_PACKAGES:?} failed");
    }
    fs::write(&stamp, wanted)?;
    Ok(python)
}

/// Which corpora of bench-suite/index-corpora.yaml the benchmarks over it (`bench index`,
/// `bench cli`) run on, and which get their vectors.
#[derive(clap::Args)]
pub(crate) struct CorpusArgs {
    /// Only this corpus (repeatable; default: every one of index-corpora.yaml). A corpus of
    /// the relevance suite (corpora.yaml: `rustc`, `openssl`...) may be named too.
    #[arg(long = "corpus", value_name = "C")]
    only: Vec<String>,
    /// Embed every corpus, not only flask's (tokio's take minutes on a laptop CPU).
    #[arg(long = "embed")]
    embed_all: bool,
}

impl CorpusArgs {
    /// Whether `corpus` gets its vectors: the flask-sized one by default (tokio's take
    /// minutes on a laptop CPU), every one with --embed.
    pub(crate) fn embeds(&self, corpus: &Corpus) -> bool {
        self.embed_all || corpus.name == "flask-src"
    }

    /// The selected corpora of index-corpora.yaml (or, named, of the relevance suite's
    /// corpora.yaml), each fetched into the user cache.
    pub(crate) fn corpora(&self, root: &Path) -> Result<Vec<(Corpus, PathBuf)>> {
        let suite_dir = root.join("bench-suite");
        let mut corpora = CorporaFile::load(&suite_dir.join("index-corpora.yaml"))?.corpora;
        let suite = CorporaFile::load(&suite_dir.join("corpora.yaml"))?.corpora;
        corpora.extend(suite.into_iter().filter(|c| self.only.contains(&c.name)));
        let cache = bench_cache()?.join("corpora");
        if let Some(unknown) = self
            .only
            .iter()
            .find(|name| !corpora.iter().any(|c| &c.name == *name))
        {
            bail!("no corpus {unknown} in index-corpora.yaml or corpora.yaml");
        }
        corpora
            .into_iter()
            .filter(|corpus| self.only.is_empty() || self.only.contains(&corpus.name))
            .map(|corpus| {
                let source = corpus.fetch(&suite_dir, &cache)?;
                Ok((corpus, source))
            })
            .collect()
    }
}

/// The release `quarry` beside this xtask binary.
pub(crate) fn release_quarry() -> Result<PathBuf> {
    let quarry = std::env::current_exe()?.with_file_name("quarry");
    ensure!(
        quarry.is_file(),
        "{} is missing: build it in the same profile (`cargo build --release -p quarry-cli`)",
        quarry.display()
    );
    Ok(quarry)
}

/// The benchmarks' cache: `bench/` in quarry's user cache directory.
pub(crate) fn bench_cache() -> Result<PathBuf> {
    Ok(directories::ProjectDirs::from("", "", "quarry")
        .context("no home directory for the cache")?
        .cache_dir()
        .join("bench"))
}

/// The repository's root.
pub(crate) fn repository_root() -> Result<&'static Path> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("root")
}

/// The files edits go to: the `count` largest `.py` or `.rs` files (their chunks and imports
/// are the most to redo), largest first, the same in every run.
pub(crate) fn largest_source_files(dir: &Path, count: usize) -> Result<Vec<PathBuf>> {
    let mut sources: Vec<(u64, PathBuf)> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                if entry.file_name() != quarry_store::INDEX_DIR {
                    stack.push(path);
                }
            } else if matches!(path.extension().and_then(|e| e.to_str()), Some("py" | "rs")) {
                sources.push((entry.metadata()?.len(), path));
            }
        }
    }
    ensure!(
        !sources.is_empty(),
        "no .py or .rs file to edit in {}",
        dir.display()
    );
    sources.sort_by(|a, b| b.cmp(a));
    Ok(sources
        .into_iter()
        .take(count)
        .map(|(_, path)| path)
        .collect())
}

/// Appends a comment line (in the file's syntax) to `path`: a change to re-index.
pub(crate) fn append_comment(path: &Path, text: &str) -> Result<()> {
    let comment = match path.extension().and_then(|e| e.to_str()) {
        Some("py" | "rb" | "sh") => "#",
        _ => "//",
    };
    let mut source = fs::read_to_string(path)?;
    source.push_str(&format!("\n{comment} {text}\n"));
    Ok(fs::write(path, source)?)
}

/// The CPU's name, its SIMD flags, and the level quarry runs at (`QUARRY_CPU` caps it):
/// every report of a speed names them, since a speed holds for one CPU family.
pub(crate) fn cpu_description() -> String {
    let level = quarry_kernels::level();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_once(':'))
            .map_or("", |(_, value)| value.trim())
    };
    let mut flags: Vec<&str> = field("flags")
        .split_whitespace()
        .filter(|flag| {
            ["avx2", "fma", "f16c", "avx_vnni", "amx_bf16", "amx_int8"].contains(flag)
                || flag.starts_with("avx512")
        })
        .collect();
    flags.sort_unstable();
    format!(
        "{} ({}); quarry at the {level} level",
        field("model name"),
        flags.join(" ")
    )
}
