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
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command.args(args).current_dir(dir).env("NO_COLOR", "1");
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.output().unwrap()
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
