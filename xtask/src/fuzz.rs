//! `cargo xtask fuzz`: fuzz the chunker with cargo-fuzz (crates/quarry-chunk/fuzz).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, ensure};
use quarry_chunk::{ALL_LANGUAGES, Language};

/// `cargo xtask fuzz`'s options.
#[derive(clap::Args)]
pub struct FuzzArgs {
    /// How long to fuzz.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Flags for libFuzzer, after `--` (`-- -fork=2 -ignore_ooms=1`).
    #[arg(last = true, value_name = "LIBFUZZER_FLAG")]
    libfuzzer_args: Vec<String>,
}

pub fn run(args: FuzzArgs) -> Result<()> {
    let FuzzArgs {
        seconds,
        libfuzzer_args,
    } = args;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let fuzz_dir = root.join("crates/quarry-chunk/fuzz");
    let seeded = seed_corpus(&root.join("fixtures/chunk"), &fuzz_dir.join("corpus/chunk"))?;
    println!("seeded the corpus with {seeded} fixtures");

    let installed = Command::new("cargo")
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ensure!(
        installed,
        "cargo-fuzz is not installed: run `cargo install cargo-fuzz`"
    );

    // cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP lets the stable toolchain use them.
    let status = Command::new("cargo")
        .args(["fuzz", "run", "chunk", "--"])
        .arg(format!("-max_total_time={seconds}"))
        .args(&libfuzzer_args)
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(&fuzz_dir)
        .status()
        .context("cannot run cargo fuzz")?;
    ensure!(
        status.success(),
        "the fuzzer failed ({status}); the input is under {}",
        fuzz_dir.join("artifacts/chunk").display()
    );
    Ok(())
}

/// Copies every fixture into `corpus`, prefixed with the index of its language in
/// `ALL_LANGUAGES` (the fuzz target's input layout). Returns how many were copied.
fn seed_corpus(fixtures: &Path, corpus: &Path) -> Result<usize> {
    std::fs::create_dir_all(corpus)
        .with_context(|| format!("cannot create {}", corpus.display()))?;
    let mut count = 0;
    // `*.chunks` files are expected outputs, not sources.
    let sources = files_under(fixtures)?
        .into_iter()
        .filter(|f| f.extension().is_none_or(|e| e != "chunks"));
    for file in sources {
        let bytes =
            std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let path = file.to_string_lossy();
        let language = Language::detect(&path, &String::from_utf8_lossy(&bytes));
        // The fuzz target's first byte picks the language by its index.
        let index = ALL_LANGUAGES.iter().position(|l| *l == language).unwrap();
        let mut input = vec![index as u8];
        input.extend_from_slice(&bytes);
        let name = file
            .strip_prefix(fixtures)?
            .to_string_lossy()
            .replace(['/', '\\'], "_");
        let target = corpus.join(format!("fixture_{name}"));
        std::fs::write(&target, input)
            .with_context(|| format!("cannot write {}", target.display()))?;
        count += 1;
    }
    Ok(count)
}

/// All files under `dir`, recursively, sorted.
pub(crate) fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(files_under(&path)?);
        } else {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
