//! The JSON views of what the engine returns: one schema per operation, shared by the
//! CLI's `--json` output and the MCP server's tool results.
//!
//! A result: `{chunk_id, path, start_line, end_line, language, kind, symbol, container,
//! snippet, score}`, plus `text` (the whole chunk) in [`Detail::Full`] and `explanation`
//! when asked for. `score` lies in `[0, 1]`, higher is better; lines are 1-based and
//! inclusive.

use quarry_store::{StoredChunk, VectorIndexInfo};
use serde_json::{Value, json};

use crate::{Detail, IndexReport, RelatedResponse, SearchResponse, SearchResult, Status};

/// Lines of a chunk shown in compact detail.
pub const SNIPPET_LINES: usize = 3;

/// `{files_read, files_removed, files_touched, files_unchanged, chunks_embedded,
/// chunks_reused, chunks_pending, skipped: [{path, reason}], graph: {files, edges}, warnings,
/// searchable_seconds, seconds}`.
pub fn index_report(report: &IndexReport) -> Value {
    json!({
        "files_read": report.files_read,
        "files_removed": report.files_removed,
        "files_touched": report.files_touched,
        "files_unchanged": report.files_unchanged,
        "chunks_embedded": report.chunks_embedded,
        "chunks_reused": report.chunks_reused,
        "chunks_pending": report.chunks_pending,
        "skipped": report.skipped.iter().map(|(path, why)| json!({"path": path, "reason": why})).collect::<Vec<_>>(),
        "graph": report.graph.map(|(files, edges)| json!({"files": files, "edges": edges})),
        "warnings": report.warnings,
        "searchable_seconds": report.searchable_after.as_secs_f64(),
        "seconds": report.elapsed.as_secs_f64(),
    })
}

/// `{query, weights: {dense, lexical}, coverage: {chunks, embedded}, results: [result]}`,
/// best first. `coverage` says how many chunks the dense leg could reach (`embedded`) of
/// those indexed: fewer while an index run's second phase is unfinished.
pub fn search(query: &str, response: &SearchResponse, detail: Detail, explain: bool) -> Value {
    json!({
        "query": query,
        "weights": {"dense": response.weights.0, "lexical": response.weights.1},
        "coverage": response.coverage,
        "results": results(&response.results, detail, explain),
    })
}

/// `{source: chunk, linked_files: [path], coverage: {chunks, embedded}, results: [result]}`,
/// best first.
pub fn related(response: &RelatedResponse, detail: Detail, explain: bool) -> Value {
    json!({
        "source": chunk(&response.source, Detail::Compact),
        "linked_files": response.linked_files,
        "coverage": response.coverage,
        "results": results(&response.results, detail, explain),
    })
}

/// The results, best first: each a [`chunk`] with its `score` (and `explanation`: the
/// retrieval score and each ranking layer's effect).
pub fn results(results: &[SearchResult], detail: Detail, explain: bool) -> Vec<Value> {
    results
        .iter()
        .map(|result| self::result(result, detail, explain))
        .collect()
}

/// One result.
pub fn result(result: &SearchResult, detail: Detail, explain: bool) -> Value {
    let mut value = chunk(&result.chunk, detail);
    value["score"] = json!(result.score);
    if explain {
        value["explanation"] = json!(result.explanation);
    }
    value
}

/// A chunk: where it is, what it is, and its first lines (all of it in full detail).
pub fn chunk(chunk: &StoredChunk, detail: Detail) -> Value {
    let mut value = json!({
        "chunk_id": chunk.chunk_id().to_string(),
        "path": chunk.path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "language": chunk.language,
        "kind": chunk.kind,
        "symbol": chunk.name,
        "container": chunk.container,
        "snippet": snippet(&chunk.text).collect::<Vec<_>>().join("\n"),
    });
    if detail == Detail::Full {
        value["text"] = json!(chunk.text);
    }
    value
}

/// The first [`SNIPPET_LINES`] non-blank lines of a chunk.
pub fn snippet(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(SNIPPET_LINES)
}

/// `{root, model, backend, files, files_skipped, chunks, coverage: {chunks, embedded},
/// indexed_commit, head_commit,
/// stale: {added, modified, removed}, drift, vector_index, libraries, warnings}`.
pub fn status(status: &Status) -> Value {
    json!({
        "root": status.root,
        "model": status.model,
        "backend": status.backend,
        "files": status.files,
        "files_skipped": status.files_skipped,
        "chunks": status.coverage.chunks,
        "coverage": status.coverage,
        "indexed_commit": status.indexed_commit,
        "head_commit": status.head_commit,
        "stale": {
            "added": status.stale.added,
            "modified": status.stale.modified,
            "removed": status.stale.removed,
        },
        "drift": status.drift,
        "vector_index": status.vector_index.as_ref().map(|info| json!({
            "nodes": info.nodes,
            "live": info.live,
            "search": dense_search(info),
            "calibration": info.calibration,
        })),
        "libraries": status.libraries,
        "warnings": status.warnings,
    })
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
