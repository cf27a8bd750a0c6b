//! `cargo xtask bench <name>`: one module a benchmark, and what they share in `common`.

mod burst;
mod cli;
mod common;
mod embed;
mod follow;
mod index;
mod mcp;
mod relevance;
mod store;

use anyhow::Result;
use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum Bench {
    /// Embedding throughput (128/256 tokens, batches 1/8/32), query latency and peak RSS,
    /// in every precision this CPU runs, against PyTorch (fp32 and bf16 autocast) and ONNX
    /// Runtime int8 in the same run.
    Embed(embed::EmbedArgs),
    /// HNSW recall@10 against the exact scan, query latency, build time and index size on
    /// random-normal and real embeddings; change detection in a 10k-file tree; re-indexing
    /// one file.
    Store(store::StoreArgs),
    /// NDCG@10/@5, Recall@10, MRR, rubric and latency of the cases in bench-suite/cases/
    /// over the pinned corpora of bench-suite/corpora.yaml: hybrid against the semble and
    /// ripgrep peers and the dense-only, lexical-only, random and oracle controls; or two
    /// settings (--ab); or hybrid without a part (--ablate); or hybrid with settings (--arm).
    Relevance(relevance::RelevanceArgs),
    /// Time to a first result: the whole `quarry search` process on a fresh copy of each
    /// corpus of bench-suite/index-corpora.yaml, the index's first phase in process (MB/s)
    /// and its second (chunks/s), with ripgrep as the reference in the same run. Needs the
    /// release quarry beside xtask.
    Index(index::IndexArgs),
    /// A search as a whole `quarry search` process on an indexed copy of each corpus:
    /// lexical, hybrid and each right after an edit, p50/p95 against ripgrep over the same
    /// copy in the same run. Needs the release quarry beside xtask.
    Cli(cli::CliArgs),
    /// Warm semantic_search latency through `quarry mcp` (rmcp's client and the official
    /// Python one, over stdio) against the same searches in process; then callers over one
    /// server while it re-indexes changed files, with `quarry search` in a loop beside it;
    /// then a watching server as files change: edit-to-visible latency, idle CPU, a soak.
    Mcp(mcp::McpArgs),
}

/// Runs `bench`.
pub fn run(bench: Bench) -> Result<()> {
    match bench {
        Bench::Embed(args) => embed::run(args),
        Bench::Store(args) => store::run(args),
        Bench::Relevance(args) => relevance::run(args),
        Bench::Index(args) => index::run(args),
        Bench::Cli(args) => cli::run(args),
        Bench::Mcp(args) => mcp::run(args),
    }
}
