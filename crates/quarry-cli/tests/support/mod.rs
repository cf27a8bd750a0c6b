//! What the CLI's integration tests share: running the binary as a user does.

#![allow(dead_code)] // Each test binary uses its own part.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `quarry` with `args` in `dir`, without colour.
pub fn quarry(dir: &Path, args: &[&str]) -> Output {
    quarry_with(dir, args, &[])
}

/// [`quarry`] with environment variables set (`Some`) or removed (`None`).
pub fn quarry_with(dir: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Output {
    let mut command = quarry_command(dir);
    command.args(args);
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.output().unwrap()
}

/// The `quarry` command every test runs, in `dir`, without colour. `dir` must be a test's
/// scratch: below the system's temporary directory, with no `.git` or `.quarry` from there
/// up, so that `quarry` finding its root (the closest directory up that holds one) never
/// climbs out of the test's own files. A fixture copied under the clone's `target/` would
/// find the clone's `.git` and index the whole clone.
pub fn quarry_command(dir: &Path) -> Command {
    let scratch = std::env::temp_dir().canonicalize().unwrap();
    let canonical = dir.canonicalize().unwrap();
    assert!(
        canonical.starts_with(&scratch),
        "{} is not below the temporary directory {}: a test runs quarry in its own scratch",
        canonical.display(),
        scratch.display()
    );
    let root_above = scratch
        .ancestors()
        .find(|up| up.join(".git").exists() || up.join(".quarry").exists());
    assert!(
        root_above.is_none(),
        "{} holds .git or .quarry: quarry would climb out of a test's scratch to it",
        root_above.unwrap_or(&scratch).display()
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("QUARRY_VECTOR_CACHE_DIR", vector_cache_dir())
        // A test's searches leave no process behind to change the index under its next
        // step; tests/cli/background.rs turns it back on.
        .env("QUARRY_BACKGROUND", "0");
    command
}

/// The machine's vector cache as the tests see it: one per test process, so that a run
/// never takes vectors a run of another build (or a damaged cache) left in the user's.
fn vector_cache_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("quarry-test-vectors-{}", std::process::id()))
}

/// Turns the machine's vector cache off in the repository at `root` (its configuration
/// file), for a test whose point is that the model runs.
pub fn without_vector_cache(root: &Path) {
    std::fs::create_dir_all(root.join(".quarry")).unwrap();
    std::fs::write(
        root.join(".quarry/config.toml"),
        "[index]\nvector_cache_mb = 0\n",
    )
    .unwrap();
}

/// [`quarry`], failing the test with its standard error unless it succeeds.
pub fn quarry_ok(dir: &Path, args: &[&str]) -> Output {
    let out = quarry(dir, args);
    assert!(
        out.status.success(),
        "quarry {args:?}: {}",
        text(&out.stderr)
    );
    out
}

/// Runs quarry, expects success, and parses its standard output as JSON.
pub fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = quarry_ok(dir, args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Runs quarry, expects failure, and returns its standard error.
pub fn failure(dir: &Path, args: &[&str]) -> String {
    let out = quarry(dir, args);
    assert!(
        !out.status.success(),
        "{args:?} should fail: {}",
        text(&out.stdout)
    );
    text(&out.stderr)
}

/// A fresh copy of `fixtures/engine/shop`, indexed by `quarry index`.
pub fn indexed_shop() -> tempfile::TempDir {
    let repo = quarry_testkit::shop();
    quarry_ok(repo.path(), &["index"]);
    repo
}

/// Writes `text` to the file at `path` below `dir`, as an editor would.
pub fn write_file(dir: &Path, path: &str, text: &str) {
    std::fs::write(dir.join(path), text).unwrap();
}

/// Bytes of output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the official MCP Python SDK's client script `tests/{script}` with this build's
/// `quarry` and `args`, and parses the one JSON object it prints; its failure fails the test
/// with its stderr.
pub fn mcp_client(script: &str, args: &[&Path]) -> serde_json::Value {
    let out = Command::new(quarry_testkit::python())
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests")
                .join(script),
        )
        .arg(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client {script} failed:\n{}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
