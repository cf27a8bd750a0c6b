//! Project chores, run as `cargo xtask <command>` (see `cargo xtask help`).

mod bench;
mod chunks;
mod fuzz;
mod model;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// quarry's chores: benchmarks, chunk inspection, fuzzing.
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Xtask {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark; each writes bench-suite/reports/<name>-<commit>.{md,json}.
    #[command(subcommand)]
    Bench(bench::Bench),
    /// Print the chunks quarry makes of files.
    Chunks(chunks::ChunksArgs),
    /// Fuzz the chunker with cargo-fuzz (needs `cargo install cargo-fuzz`).
    Fuzz(fuzz::FuzzArgs),
}

fn main() -> Result<()> {
    match Xtask::parse().command {
        Command::Bench(bench) => bench::run(bench),
        Command::Chunks(args) => chunks::run(args),
        Command::Fuzz(args) => fuzz::run(args),
    }
}
