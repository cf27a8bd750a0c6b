//! What the CLI's integration tests share: running the binary as a user does.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `quarry` with `args` in `dir`, without colour.
pub fn quarry(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Bytes of output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
