//! What quarry's integration tests share: the real default model, copies of fixtures, the
//! odd values the bad-argument tests throw at the CLI and the MCP server, and a Python with
//! the packages the reference checks use (`crates/quarry-testkit/python-requirements.txt`).
//!
//! ```no_run
//! let model = quarry_testkit::model(); // downloaded into the user cache on first use
//! let python = quarry_testkit::python(); // a virtual environment made once
//! # let _ = (model, python);
//! ```

use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use quarry_embed::{DEFAULT_MODEL, ModelDir, Provisioner};

/// Values a user or a script might give a string option of the CLI or a string argument of
/// an MCP tool, for the tests that throw bad arguments at both: words that mean something to
/// some option (modes, scopes, detail levels, languages), globs good and bad, a path out of
/// the repository, chunk ids of the wrong length, a control character, a line break and an
/// emoji. No NUL: a process's argument cannot hold one.
pub const ODD_VALUES: &[&str] = &[
    "",
    " ",
    "cart total with tax",
    "retry",
    "lexical",
    "semantic",
    "hybrid",
    "psychic",
    "full",
    "compact",
    "auto",
    "always",
    "never",
    "status",
    "project",
    "all",
    "lib:nope",
    "src/**",
    "src/[oops",
    "**/*.py",
    "rust",
    "klingon",
    "src/cart.rs",
    "../../etc/passwd",
    "0123456789abcdef",
    "00000000000000000000000000000000",
    "ffffffffffffffffffffffffffffffffff",
    "a\nb",
    "\u{7}",
    "🦀",
];

/// The Python packages the tests use, pinned: `pytrec-eval-terrier` (trec_eval, for the
/// relevance metrics), `mcp` (the official MCP client, for the MCP server), and the
/// benchmark's peers: `semble`, and `ripgrep`, whose wheel carries the `rg` binary.
pub const PYTHON_REQUIREMENTS: &str = include_str!("../python-requirements.txt");

/// The default model, downloaded into the user cache on first use as a user's first run
/// would be.
pub fn model() -> &'static ModelDir {
    static MODEL: OnceLock<ModelDir> = OnceLock::new();
    MODEL.get_or_init(|| {
        Provisioner::from_env()
            .resolve(&DEFAULT_MODEL)
            .unwrap_or_else(|error| panic!("{error}"))
    })
}

/// A fresh copy of `fixtures/engine/shop`, a small repository in five languages, in a
/// temporary directory of its own.
pub fn shop() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    shop_in(repo.path());
    repo
}

/// A copy of `fixtures/engine/shop` in [`kept_dir`]`(build, name)`, for a test binary that
/// indexes the shop once and keeps it in a `static`.
pub fn kept_shop(build: &str, name: &str) -> PathBuf {
    let dir = kept_dir(build, name);
    shop_in(&dir);
    dir
}

/// A copy of `fixtures/engine/shop` in `dir`.
fn shop_in(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/shop");
    copy_dir(&fixture, dir);
}

/// An empty directory `name` for what a test binary keeps in a `static` (a fixture indexed
/// once, a model assembled once), in the system's temporary directory like every other
/// test's scratch: never under the clone's own `target/`, where `quarry` would find the
/// clone's `.git` above it and index the clone. `build` (the binary's
/// `env!("CARGO_TARGET_TMPDIR")`) keeps two builds' directories apart. A `static` is never
/// dropped, so a `TempDir` kept in one would be left behind by every run; this one is emptied
/// by the next run instead.
pub fn kept_dir(build: &str, name: &str) -> PathBuf {
    let mut hasher = std::hash::DefaultHasher::new();
    build.hash(&mut hasher);
    let dir = std::env::temp_dir()
        .join(format!("quarry-kept-{:016x}", hasher.finish()))
        .join(name);
    match fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => panic!("cannot empty {}: {error}", dir.display()),
    }
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A library of one file, `path` holding `text`, in a temporary directory of its own.
pub fn library(path: &str, text: &str) -> tempfile::TempDir {
    let library = tempfile::tempdir().unwrap();
    let file = library.path().join(path);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, text).unwrap();
    library
}

/// Copies the directory tree at `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A Python with [`PYTHON_REQUIREMENTS`]: `QUARRY_TEST_PYTHON` when set (CI makes one),
/// else a virtual environment in the user cache, made on first use (needs `python3` with
/// `venv`, and PyPI) and remade when the requirements change.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("QUARRY_TEST_PYTHON") {
        return python.into();
    }
    // Tests run in parallel threads; one makes the environment.
    static MAKING: Mutex<()> = Mutex::new(());
    let _guard = MAKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let venv = directories::ProjectDirs::from("", "", "quarry")
        .expect("no home directory: set QUARRY_TEST_PYTHON")
        .cache_dir()
        .join("test-venv");
    let python = venv.join("bin/python");
    let stamp = venv.join("requirements.txt");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(PYTHON_REQUIREMENTS) {
        return python;
    }
    succeed(
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv),
        "install python3 with venv (Debian: python3-venv)",
    );
    let requirements = venv.join("requirements.in");
    fs::write(&requirements, PYTHON_REQUIREMENTS).unwrap();
    succeed(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "-r"])
            .arg(&requirements),
        "is PyPI reachable?",
    );
    fs::write(&stamp, PYTHON_REQUIREMENTS).unwrap();
    python
}

/// ripgrep, as the relevance benchmark's `ripgrep` arm runs it: the `rg` that the `ripgrep`
/// wheel of [`PYTHON_REQUIREMENTS`] puts beside [`python`], so that no test needs it
/// installed.
pub fn ripgrep() -> PathBuf {
    python().with_file_name("rg")
}

/// Runs `command`, failing the test with the command line and `hint` unless it succeeds.
fn succeed(command: &mut Command, hint: &str) {
    let succeeded = command.status().is_ok_and(|s| s.success());
    assert!(succeeded, "{command:?} failed: {hint}");
}
