//! quarry's ranking pipeline: from the retriever's candidates to the results a query shows,
//! through a chain of layers built from one [`RankingConfig`].
//!
//! ```
//! use quarry_chunk::{ChunkKind, Language};
//! use quarry_chunk::StoredChunk;
//! use quarry_rank::{Effect, Pipeline, QueryTerms, RankingConfig};
//!
//! let chunk = |path: &str, line: usize| StoredChunk {
//!     id: line as u128, path: path.into(), start_line: line, end_line: line + 5,
//!     language: Language::Rust, kind: ChunkKind::Function, name: None, container: vec![],
//!     text: String::new(),
//! };
//! // One large file matches best, then its test, then two small files.
//! let mut candidates: Vec<(StoredChunk, f32)> = (0..6)
//!     .map(|i| (chunk("src/parser.rs", 1 + 10 * i), 0.9 - 0.01 * i as f32))
//!     .collect();
//! candidates.push((chunk("tests/parser.rs", 1), 0.88));
//! candidates.push((chunk("src/lexer.rs", 1), 0.6));
//! candidates.push((chunk("src/token.rs", 1), 0.5));
//!
//! let config = RankingConfig { limit: 5, ..RankingConfig::default() };
//! assert_eq!(config.fetch_count(), 100); // what to ask the retriever for: a deep pool
//! let pipeline = Pipeline::from_config(&config, None, None)?;
//! // The query is analysed once; every layer reads the analysis.
//! let ranking = pipeline.rank(&QueryTerms::of("parse_expression"), candidates)?;
//!
//! // The parser's best chunk leads; each further chunk of it counts half the one before (the
//! // soft per-file cap), so the lexer comes second; the test is penalised to the end.
//! let paths: Vec<&str> = ranking.results.iter().map(|r| r.candidate.path.as_str()).collect();
//! assert_eq!(paths, ["src/parser.rs", "src/lexer.rs", "src/parser.rs", "src/token.rs", "tests/parser.rs"]);
//! let lexer = &ranking.results[1].explanation;
//! assert_eq!(lexer.steps.last().unwrap().effect, Effect::Boosted { factor: 1.1 });
//! assert_eq!(ranking.summary.dropped_per_file(), [("src/parser.rs", 4)].into());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Pipeline::from_config`] chains, in order (each can be disabled for ablations):
//!
//! 1. [`CrossEncoderRerank`]: a [`Reranker`]'s scores replace the retriever's; only when
//!    the caller has one (the model itself lives outside this crate);
//! 2. [`Definition`]: chunks that define the symbol the query names, raised above mentions;
//! 3. [`FileEvidence`]: the best chunk of a file that many candidates come from, or whose
//!    candidates hold the query's words between them, raised;
//! 4. [`PathMatch`]: chunks of files named after the query's words, raised;
//! 5. [`PathPenalty`]: tests, fixtures, mocks, generated, vendored, minified and example
//!    code and, unless the query asks for documentation, prose, each scaled by its factor;
//! 6. [`ThinChunk`]: headers and blocks of at most one line of code (a container's opening
//!    line, one import, a comment) scaled by its factor;
//! 7. [`SourceBoost`]: files under `src/`, `lib/`, `pkg/`... scaled up;
//! 8. [`PageRankBoost`]: a bounded sigmoid of the file's PageRank percentile, when the
//!    caller has them;
//! 9. [`Threshold`]: drops what does not score above it;
//! 10. [`DiversityCap`]: at most `max_per_file` chunks per file, spilling into slots no other
//!     file fills (or, soft, decaying each extra chunk);
//! 11. [`TopK`]: the best `limit`.
//!
//! Invariants:
//!
//! - **Order:** after every layer the list is sorted by descending score, ties broken by
//!   path, then start line (then end line, then id): never by input or hash-map order.
//! - **Multiplicative adjustments:** penalties lower, boosts raise, and a score of zero stays
//!   zero (a negative score is divided, so a penalty still lowers it).
//! - **Explained:** every result carries an [`Explanation`] (its retrieval score and each
//!   layer's effect on it), and the [`Summary`] says what each layer dropped, per file.
//!   Both serialise with serde.

mod chain;
mod config;
mod error;
mod explain;
mod layers;
mod path;
mod query;

pub use chain::{Pass, Ranked, Ranking, RankingLayer, apply_chain};
pub use config::{MAX_LIMIT, MAX_PER_FILE, MAX_POOL, Pipeline, RankingConfig};
pub use error::{ConfigError, RankError, RerankError};
pub use explain::{Effect, Explanation, LayerKind, LayerReport, Step, Summary};
pub use layers::{
    CapDecay, CapMode, CrossEncoderRerank, Definition, DiversityCap, FileEvidence, IncludeTests,
    PageRankBoost, PathMatch, PathPenalty, PenaltyFactors, Percentiles, Reranker, SourceBoost,
    ThinChunk, Threshold, TopK,
};
pub use path::{PathClass, declaration_files, is_plain_source};
pub use query::{QueryShape, QueryTerms, is_namesake, segments as identifier_segments};
