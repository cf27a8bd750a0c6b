//! Project chores, run as `cargo xtask <command>` (see `cargo xtask help`).

mod bench;
mod chunks;
mod fuzz;
mod model;

use anyhow::{Result, bail};

const HELP: &str = "\
cargo xtask <command>

Commands:
  bench embed             embedding throughput (128/256 tokens, batches 1/8/32), query
        [--texts N]       latency and peak RSS, against sentence-transformers on PyTorch
        [--no-reference]  in the same run; writes bench-suite/reports/embed-<commit>.*
  bench store             HNSW recall@10 against the exact scan, query latency, build time
        [--vectors N]     and index size on random-normal and real embeddings (registry
        [--queries Q]     code embedded by PyTorch in the reference's environment, cached);
        [--dataset D]     change detection in a 10k-file tree; re-indexing one file.
        [--embed-threads T]  Defaults: 100000 vectors, 500 queries, D both (random|real|
                          both), 1 thread; writes bench-suite/reports/store-<commit>.*
  bench relevance         NDCG@10/@5, Recall@10, MRR, rubric and latency of the cases in
        [--corpus C]...   bench-suite/cases/ over the pinned corpora of
        [--cases FILE]... bench-suite/corpora.yaml (fetched into the user cache): hybrid
        [--suite S]       against the semble and ripgrep peers and dense-only, lexical-only,
        [--split P]       random and oracle controls; or two settings (--ab diversity-cap=0,3,
        [--ab KEY=A,B]    mode, embed-header, legs.SHAPE, lexical.FIELD, any [ranking] key);
        [--ablate PART]...  or hybrid without a part (see bench-suite/README.md, or all).
        [--set KEY=V]...  --set changes every quarry arm; --arm K=V+K=V adds hybrid with those
        [--arm K=V+..]... settings, compared with hybrid; --baseline REPORT.json fails on a
        [--baseline FILE] drop beyond its 95% interval. S: full (default) or smoke. P: all
        [--doc-cases N]   (default), tuning (no held-out cases) or held-out. Writes
        [--no-controls]   bench-suite/reports/relevance[-smoke|-tuning|-held-out]
        [--no-peers]      [-ab-K|-ablate]-<commit>.*
        [--out DIR]
  bench index             time to a first result: the whole `quarry search` process on a
        [--runs N]        fresh copy of each corpus of bench-suite/index-corpora.yaml (flask,
        [--corpus C]...   tokio, quarry's crates), the index's first phase in process (MB/s),
        [--embed]         ripgrep as the reference in the same run; the second phase
                          (chunks/s) on flask, or every corpus with --embed. Default 3 runs;
                          needs the release quarry beside xtask; writes
                          bench-suite/reports/index-<commit>.*
  bench cli               a search as a whole `quarry search` process on an indexed copy of
        [--runs N]        each corpus of bench-suite/index-corpora.yaml: lexical, hybrid
        [--corpus C]...   (flask, or every corpus with --embed) and each right after an
        [--embed]         edit, p50/p95 against ripgrep over the same copy in the same run.
                          Default 20 runs; needs the release quarry beside xtask; writes
                          bench-suite/reports/cli-<commit>.*
  bench mcp --root DIR    warm semantic_search latency p50/p95 through `quarry mcp` (rmcp's
        [--calls N]       client and the official Python one, over stdio) against the same
        [--clients C]     searches in-process; then C callers x L searches over one server
        [--load-calls L]  while it re-indexes E changed files, with `quarry search` in a
        [--edits E]       loop beside it. DIR must be indexed. Defaults 100 calls, 8 x 250,
                          20 edits; writes bench-suite/reports/mcp-<commit>.*
  chunks <file>...        print the chunks quarry makes of files
         [--budget N]     characters per chunk (default: from the model's 256 tokens)
         [--text]         print each chunk's text too
         [--tree]         print the tree-sitter syntax tree instead (for writing rules)
  fuzz [--seconds N]      fuzz the chunker with cargo-fuzz (default 60 seconds;
       [-- <flag>...]     needs `cargo install cargo-fuzz`); the rest goes to libFuzzer
  help                    this text
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench::run(&args[1..], HELP),
        Some("chunks") => chunks::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("help" | "--help" | "-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n\n{HELP}"),
    }
}
