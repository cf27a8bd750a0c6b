//! The views of what the engine returns: one typed, serialisable view per operation, shared
//! by the CLI's `--json` output and the MCP server's tool results (whose output schemas are
//! these types' JSON schemas, with feature `schema`).
//!
//! A result: `{chunk_id, path, start_line, end_line, language, kind, symbol, container,
//! snippet, score}`, plus `text` (the whole chunk) in [`Detail::Full`] and `explanation`
//! ([`ResultExplanation`]) when asked for. `score` lies in `[0, 1]`, higher is better; lines are 1-based and
//! inclusive.
//!
//! ```
//! use quarry_engine::view::snippet;
//! assert_eq!(snippet("\nfn main() {\n\n    run();\n    exit();\n}\n").collect::<Vec<_>>(),
//!            ["fn main() {", "    run();", "    exit();"]);
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use quarry_chunk::{ChunkKind, Language};
use quarry_rank::Explanation;
use quarry_store::{Calibration, Drift, StoredChunk, VectorIndexInfo};
use serde::Serialize;

use crate::{
    Coverage, Detail, IndexReport, LegPlace, RelatedResponse, SearchResponse, SearchResult, Stale,
    SymbolHit,
};

/// A view as a JSON value, the form both front ends write: the MCP server's tool results
/// are values, and the CLI's `--json` prints one, so keys are ordered and numbers written
/// alike (and as they were before the views had types).
pub fn json(view: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(view).expect("a view serialises to JSON")
}

/// Lines of a chunk shown in compact detail.
pub const SNIPPET_LINES: usize = 3;

/// What an index run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IndexReportView {
    /// Files read and chunked.
    pub files_read: usize,
    /// Files gone from the tree, dropped from the index.
    pub files_removed: usize,
    /// Files whose modification time moved but whose content did not.
    pub files_touched: usize,
    /// Files left as they were.
    pub files_unchanged: usize,
    /// Chunks given their vectors.
    pub chunks_embedded: usize,
    /// Of those, the chunks whose vectors came from the machine's vector cache (the model
    /// made them before, for any index on this machine).
    pub chunks_from_cache: usize,
    /// Chunks whose vector was kept from before.
    pub chunks_reused: usize,
    /// Chunks still waiting for their vector.
    pub chunks_pending: usize,
    /// Files not chunked, and why.
    pub skipped: Vec<SkippedFile>,
    /// The import graph, when it was rebuilt.
    pub graph: Option<GraphSize>,
    /// What could not be read, and repairs the index made.
    pub warnings: Vec<String>,
    /// Seconds until every file was searchable by its words.
    pub searchable_seconds: f64,
    /// Seconds in all.
    pub seconds: f64,
}

/// A file an index run did not chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SkippedFile {
    /// The file.
    pub path: String,
    /// Why (binary, generated, too large...).
    pub reason: String,
}

/// The import graph's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphSize {
    /// Files in it.
    pub files: usize,
    /// Imports between them.
    pub edges: usize,
}

impl IndexReportView {
    /// The view of `report`.
    pub fn new(report: &IndexReport) -> Self {
        Self {
            files_read: report.files_read,
            files_removed: report.files_removed,
            files_touched: report.files_touched,
            files_unchanged: report.files_unchanged,
            chunks_embedded: report.chunks_embedded,
            chunks_from_cache: report.chunks_from_cache,
            chunks_reused: report.chunks_reused,
            chunks_pending: report.chunks_pending,
            skipped: report
                .skipped
                .iter()
                .map(|(path, reason)| SkippedFile {
                    path: path.clone(),
                    reason: reason.clone(),
                })
                .collect(),
            graph: report
                .graph
                .map(|(files, edges)| GraphSize { files, edges }),
            warnings: report.warnings.clone(),
            searchable_seconds: report.searchable_after.as_secs_f64(),
            seconds: report.elapsed.as_secs_f64(),
        }
    }
}

/// A search's results, best first. `coverage` says how many chunks the dense leg could
/// reach (`embedded`) of those indexed: fewer while an index run's second phase is
/// unfinished.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchView {
    /// The query.
    pub query: String,
    /// How much each leg weighed.
    pub weights: Weights,
    /// How far the dense leg reached.
    pub coverage: Coverage,
    /// Which page of the ranking this is (front ends that page: the MCP server).
    #[serde(flatten)]
    pub page: Option<Page>,
    /// The results.
    pub results: Vec<ResultView>,
    /// What the symbol leg found in the definitions table, best match first (with
    /// `explain`; left out when it found nothing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<SymbolHit>,
    /// Why the results may be incomplete, when they may be.
    #[serde(flatten)]
    pub partial: Option<Partial>,
}

impl SearchView {
    /// The view of `response` to `query`, all of it on one page.
    pub fn new(query: &str, response: &SearchResponse, detail: Detail, explain: bool) -> Self {
        Self {
            query: query.to_owned(),
            weights: Weights {
                dense: as_written(response.weights.dense),
                lexical: as_written(response.weights.lexical),
                file: as_written(response.weights.file),
            },
            coverage: response.coverage,
            page: None,
            results: ResultView::all(&response.results, detail, explain),
            definitions: match explain {
                true => response.definitions.clone(),
                false => Vec::new(),
            },
            partial: None,
        }
    }
}

/// The legs' weights in a search: dense and lexical summing to 1, the file leg's beside them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Weights {
    /// The dense (embedding) leg's.
    pub dense: f64,
    /// The lexical (BM25) leg's.
    pub lexical: f64,
    /// The file leg's (BM25 over whole files; 0 unless the query is a question).
    pub file: f64,
}

/// The `f64` nearest to the decimal that `value` is written as: a setting of 0.7 is shown as
/// 0.7, not as the `f32`'s exact binary value (0.699999988079071).
fn as_written(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

/// Code like a chunk, best first: other files only unless the source's file was asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelatedView {
    /// The chunk the results are like.
    pub source: ChunkView,
    /// Files linked to the source's by imports, when asked for.
    pub linked_files: Vec<String>,
    /// How far the dense leg reached.
    pub coverage: Coverage,
    /// Which page of the ranking this is (front ends that page: the MCP server).
    #[serde(flatten)]
    pub page: Option<Page>,
    /// The results.
    pub results: Vec<ResultView>,
    /// Why the results may be incomplete, when they may be.
    #[serde(flatten)]
    pub partial: Option<Partial>,
}

impl RelatedView {
    /// The view of `response`, all of it on one page.
    pub fn new(response: &RelatedResponse, detail: Detail, explain: bool) -> Self {
        Self {
            source: ChunkView::new(&response.source, Detail::Compact),
            linked_files: response.linked_files.clone(),
            coverage: response.coverage,
            page: None,
            results: ResultView::all(&response.results, detail, explain),
            partial: None,
        }
    }
}

/// Where a page sits in the whole ranking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Page {
    /// The first result's place in the ranking, from 0 (with a cursor: how many results the
    /// earlier pages showed).
    pub offset: usize,
    /// The offset to ask for the next page with, if there may be one.
    pub next_offset: Option<usize>,
    /// What to pass as `cursor` for the next page, if there may be one: it names the index
    /// generation this page was ranked at and the chunks shown so far, so no chunk comes
    /// twice, even when the index changes between pages.
    pub next_cursor: Option<String>,
    /// Whether the index changed since the cursor's page was ranked, when it did.
    #[serde(flatten)]
    pub moved: Option<RankingMoved>,
}

/// The index changed between a page and the next one asked for with its cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RankingMoved {
    /// Always true: the index changed since the cursor's page was ranked, so this page is
    /// ranked on the index as it is now, without the chunks earlier pages showed.
    pub ranking_moved: bool,
    /// What moved, and what this page holds.
    pub ranking_note: String,
}

/// Why a page's results may be incomplete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Partial {
    /// Always true: the results may miss files or vectors not yet indexed.
    pub partial: bool,
    /// What is missing, and what to do.
    pub note: String,
}

/// One result: a chunk and its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResultView {
    /// The chunk.
    #[serde(flatten)]
    pub chunk: ChunkView,
    /// In `[0, 1]`, higher is better.
    pub score: f32,
    /// Where the legs placed it, the retrieval score and each ranking layer's effect, when
    /// asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<ResultExplanation>,
    /// Set when `text` was cut to fit a page's budget.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub text_truncated: bool,
}

impl ResultView {
    /// The view of `result`.
    pub fn new(result: &SearchResult, detail: Detail, explain: bool) -> Self {
        Self {
            chunk: ChunkView::new(&result.chunk, detail),
            score: result.score,
            explanation: explain.then(|| ResultExplanation {
                legs: result.legs.clone(),
                ranking: result.explanation.clone(),
            }),
            text_truncated: false,
        }
    }

    /// The views of `results`, in their order.
    pub fn all(results: &[SearchResult], detail: Detail, explain: bool) -> Vec<Self> {
        results
            .iter()
            .map(|result| Self::new(result, detail, explain))
            .collect()
    }
}

/// How a result's score came about: where the retrieval legs placed it, the score they
/// fused to, then what each ranking layer did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResultExplanation {
    /// Each leg that placed the chunk, in the legs' order (left out for a related result).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub legs: Vec<LegPlace>,
    /// The retrieval score and the ranking's steps.
    #[serde(flatten)]
    pub ranking: Explanation,
}

/// A chunk: where it is, what it is, and its first lines (all of it in full detail).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChunkView {
    /// Its id: 32 hex digits, for related searches.
    pub chunk_id: String,
    /// Its file, relative to the root (`lib:NAME/...` for a library's).
    pub path: String,
    /// Its first line, from 1.
    pub start_line: usize,
    /// Its last line, inclusive.
    pub end_line: usize,
    /// Its file's language.
    pub language: Language,
    /// What it holds.
    pub kind: ChunkKind,
    /// The name it defines, if any.
    pub symbol: Option<String>,
    /// The names of what encloses it, outermost first.
    pub container: Vec<String>,
    /// Its first [`SNIPPET_LINES`] non-blank lines.
    pub snippet: String,
    /// All of it, in full detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl ChunkView {
    /// The view of `chunk` in `detail`.
    pub fn new(chunk: &StoredChunk, detail: Detail) -> Self {
        Self {
            chunk_id: chunk.chunk_id().to_string(),
            path: chunk.path.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            language: chunk.language,
            kind: chunk.kind,
            symbol: chunk.name.clone(),
            container: chunk.container.clone(),
            snippet: snippet(&chunk.text).collect::<Vec<_>>().join("\n"),
            text: (detail == Detail::Full).then(|| chunk.text.clone()),
        }
    }
}

/// The first [`SNIPPET_LINES`] non-blank lines of a chunk.
pub fn snippet(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(SNIPPET_LINES)
}

/// The index's health.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatusView {
    /// The repository root.
    pub root: PathBuf,
    /// The embedding model's fingerprint.
    pub model: String,
    /// Where the model runs.
    pub backend: String,
    /// Whether the embedding model's files are missing here: chunks wait for their vectors
    /// until `quarry model fetch` fetches it and `quarry index` embeds them.
    pub model_missing: bool,
    /// Files indexed, skipped ones included.
    pub files: u64,
    /// Files indexed without chunks.
    pub files_skipped: u64,
    /// Chunks indexed.
    pub chunks: u64,
    /// Chunks, and how many of them have their vector.
    pub coverage: Coverage,
    /// The commit the project was last indexed at.
    pub indexed_commit: Option<String>,
    /// The work tree's commit.
    pub head_commit: Option<String>,
    /// Files that differ from the index.
    pub stale: Stale,
    /// Files whose chunks moved most at their last re-index.
    pub drift: Vec<Drift>,
    /// The vector index, once built.
    pub vector_index: Option<VectorIndexView>,
    /// The registered libraries, by name.
    pub libraries: BTreeMap<String, PathBuf>,
    /// What could not be read, and repairs the index made.
    pub warnings: Vec<String>,
    /// What is damaged in the index's files ([`quarry_store::Store::check`]), one line each
    /// naming the file, the problem and the fix ("... is damaged: rebuild with `quarry index
    /// --force`"); empty when the index is whole. The lines are among the warnings too, so
    /// the JSON leaves this out.
    #[serde(skip)]
    pub damage: Vec<String>,
}

/// The vector index: its size, and how dense searches run on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VectorIndexView {
    /// Graph nodes, tombstones included.
    pub nodes: usize,
    /// Live chunks.
    pub live: usize,
    /// How dense searches run, as calibration decided.
    pub search: String,
    /// What the build measured; absent for graphs too small to calibrate.
    pub calibration: Option<Calibration>,
}

impl VectorIndexView {
    /// The view of `info`.
    pub fn new(info: &VectorIndexInfo) -> Self {
        Self {
            nodes: info.nodes,
            live: info.live,
            search: dense_search(info),
            calibration: info.calibration.clone(),
        }
    }
}

/// How dense searches run, as calibration decided.
pub fn dense_search(info: &VectorIndexInfo) -> String {
    match &info.calibration {
        None => "the graph (not calibrated)".to_owned(),
        Some(calibration) => match calibration.chosen() {
            Some(trial) => format!(
                "the graph, beam {} (recall@10 {:.3})",
                trial.ef, trial.recall
            ),
            None => "an in-memory scan (faster than the graph at the target recall)".to_owned(),
        },
    }
}
