//! `cargo xtask bench <name>`: one module a benchmark, and what they share in `common`.

mod cli;
mod common;
mod embed;
mod index;
mod mcp;
mod relevance;
mod store;

use anyhow::{Result, bail};

/// Runs the benchmark `args` names, with the rest of `args` as its options.
pub fn run(args: &[String], help: &str) -> Result<()> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("embed") => embed::run(rest),
        Some("store") => store::run(rest),
        Some("relevance") => relevance::run(rest),
        Some("mcp") => mcp::run(rest),
        Some("index") => index::run(rest),
        Some("cli") => cli::run(rest),
        _ => bail!("cargo xtask bench embed|store|relevance|mcp|index|cli [...]\n\n{help}"),
    }
}
