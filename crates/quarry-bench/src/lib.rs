//! quarry's relevance benchmark: pinned corpora, hand-written cases, IR metrics, and
//! reports that compare arms (A/B settings, ablations, controls) and catch regressions.
//!
//! ```
//! use quarry_bench::cases::Target;
//! use quarry_bench::metrics::{Location, score};
//!
//! // The query's answer is `src/retry.rs` (lines 10-30) and, less importantly, `src/lib.rs`.
//! let relevant: Vec<Target> = vec!["src/retry.rs:10-30".parse()?];
//! let secondary: Vec<Target> = vec!["src/lib.rs".parse()?];
//! let hit = |path: &str, start_line, end_line| Location {
//!     path: path.into(), start_line, end_line,
//! };
//! // The search returned a chunk of the right file but the wrong lines, then the answer.
//! let results = [hit("src/retry.rs", 40, 60), hit("src/retry.rs", 12, 28), hit("src/lib.rs", 1, 9)];
//!
//! let scores = score(&results, &relevant, &secondary, |_| true).unwrap();
//! assert_eq!(scores.mrr, 0.5); // the target counts at rank 2, its first overlapping chunk
//! assert_eq!(scores.recall10, 1.0);
//! assert_eq!(scores.rubric, 3.0); // every relevant file in the top 5
//! assert_eq!(scores.distinct_files, 2.0);
//! # Ok::<(), String>(())
//! ```
//!
//! - [`corpus`][mod@corpus]: `corpora.yaml`, fetching with cargo, pip and npm, and manifests.
//! - [`cases`][mod@cases]: `cases/<corpus>.yaml`.
//! - [`docs`][mod@docs]: the generated doc-comment family.
//! - [`metrics`][mod@metrics]: NDCG@10 and @5, Recall@10, MRR, the 0-3 rubric, distinct files.
//! - [`arms`][mod@arms]: quarry's configurations, settings, ablations, the peer arms (semble,
//!   ripgrep), and the random and oracle controls.
//! - [`peers`][mod@peers]: running the peers.
//! - [`run()`]: indexes each corpus once per index variant and scores every arm.
//! - [`lost`][mod@lost]: where each retrieval leg placed the targets of the cases the first
//!   arm lost.
//! - [`report`][mod@report]: summaries, paired bootstrap comparisons, regression checks, markdown and
//!   JSON.
//!
//! `cargo xtask bench relevance` is the command line; `bench-suite/README.md` the guide.

pub mod arms;
pub mod cases;
pub mod corpus;
pub mod docs;
mod error;
mod files;
pub mod lost;
pub mod metrics;
pub mod peers;
pub mod report;
mod run;
pub mod stats;
mod worktree;

pub use error::BenchError;
pub use run::{
    ArmResult, CaseResult, CorpusReport, LARGE_CORPUS_FILES, Progress, Run, RunConfig, RunOptions,
    mean_by, run,
};
