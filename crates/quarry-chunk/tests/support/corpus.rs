//! Real-world corpora for tests and benchmarks: tokio's Rust sources (a
//! dev-dependency, so it is in the cargo registry) and the Python standard library
//! of the `python3` on `PATH`.
//!
//! Each corpus is a list of `(path relative to the corpus root with '/', bytes)`,
//! sorted by path.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One corpus: `(relative path, file bytes)`, sorted by path.
pub type Corpus = Vec<(String, Vec<u8>)>;

/// Every `*.rs` file of the tokio crate that quarry-chunk depends on (dev).
///
/// # Panics
///
/// If tokio's sources cannot be found (run `cargo fetch`).
pub fn tokio() -> Corpus {
    load(&tokio_root(), "rs", &[])
}

/// Every `*.py` file of the Python standard library, without `site-packages`.
///
/// # Panics
///
/// If `python3` cannot be run or its standard library cannot be found.
pub fn python_stdlib() -> Corpus {
    load(
        &python_stdlib_root(),
        "py",
        &["site-packages", "dist-packages"],
    )
}

/// The directory of tokio's `Cargo.toml`, as `cargo metadata` reports it.
fn tokio_root() -> PathBuf {
    const HELP: &str = "cannot find the sources of tokio (a dev-dependency of quarry-chunk); \
                        run `cargo fetch` in the workspace and try again";
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let metadata: serde_json::Value = serde_json::from_slice(&stdout_of(command, HELP))
        .unwrap_or_else(|e| panic!("{HELP}: `cargo metadata` printed invalid JSON: {e}"));
    let manifest = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["name"] == "tokio")
        .and_then(|package| package["manifest_path"].as_str())
        .unwrap_or_else(|| panic!("{HELP}: `cargo metadata` lists no package named tokio"));
    let root = Path::new(manifest)
        .parent()
        .expect("a manifest path has a parent")
        .to_path_buf();
    assert!(
        root.join("src").is_dir(),
        "{HELP}: {} does not exist",
        root.join("src").display()
    );
    root
}

/// Runs `command` and returns what it printed; panics with `help` if it fails.
fn stdout_of(mut command: Command, help: &str) -> Vec<u8> {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{help}: running {command:?} failed: {e}"));
    assert!(
        output.status.success(),
        "{help}: {command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The standard library directory of `python3`.
fn python_stdlib_root() -> PathBuf {
    const HELP: &str = "cannot find the Python standard library; install python3 \
                        (it must be on PATH) and try again";
    let mut command = Command::new("python3");
    command.args([
        "-c",
        "import sysconfig; print(sysconfig.get_path('stdlib'))",
    ]);
    let root = PathBuf::from(String::from_utf8_lossy(&stdout_of(command, HELP)).trim());
    assert!(
        root.join("os.py").is_file(),
        "{HELP}: {} holds no os.py",
        root.display()
    );
    root
}

/// Reads every file below `root` whose extension is `ext`, skipping directories
/// named in `skip_dirs` and symbolic links.
fn load(root: &Path, ext: &str, skip_dirs: &[&str]) -> Corpus {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
            let path = entry.path();
            let file_type = entry
                .file_type()
                .unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()));
            let name = entry.file_name();
            if file_type.is_dir() {
                if !skip_dirs.iter().any(|skip| name == *skip) {
                    pending.push(path);
                }
            } else if file_type.is_file() && path.extension().is_some_and(|e| e == ext) {
                let relative = path
                    .strip_prefix(root)
                    .expect("walked paths lie below the root")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                let bytes = fs::read(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                files.push((relative, bytes));
            }
        }
    }
    assert!(
        !files.is_empty(),
        "no *.{ext} files below {}",
        root.display()
    );
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    files
}
