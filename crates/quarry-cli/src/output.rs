//! What `quarry` prints: text for people (colour only on a terminal, `NO_COLOR`
//! respected) and one JSON schema per command for programs.
//!
//! A result in JSON: `{chunk_id, path, start_line, end_line, language, kind, symbol,
//! container, score, snippet}`, plus `text` (the whole chunk) with `--detail full` and
//! `explanation` with `--explain`. `score` lies in `[0, 1]`, higher is better; lines are
//! 1-based and inclusive.

use std::io::{IsTerminal, Write};

use quarry_embed::{Embedder, ModelDir};
use quarry_engine::{Detail, IndexReport, RelatedResponse, SearchResponse, SearchResult, Status};
use quarry_store::{StoredChunk, VectorIndexInfo};
use serde_json::{Value, json};

/// Lines of a chunk shown in compact detail.
const SNIPPET_LINES: usize = 3;

pub fn report_summary(report: &IndexReport) -> String {
    format!(
        "indexed in {:.1} s: {} files read, {} removed, {} unchanged; {} chunks embedded, {} \
         kept; {} skipped{}",
        report.elapsed.as_secs_f64(),
        report.files_read,
        report.files_removed,
        report.files_unchanged,
        report.chunks_embedded,
        report.chunks_reused,
        report.skipped.len(),
        skipped_lines(&report.skipped)
            .chain(report.warnings.iter().map(|w| format!("\nwarning: {w}")))
            .collect::<String>()
    )
}

/// Skipped files shown in the summary; `--json` lists them all.
const SKIPPED_SHOWN: usize = 5;

fn skipped_lines(skipped: &[(String, String)]) -> impl Iterator<Item = String> + '_ {
    let more = skipped.len().saturating_sub(SKIPPED_SHOWN);
    skipped
        .iter()
        .take(SKIPPED_SHOWN)
        .map(|(path, why)| format!("\nskipped {path}: {why}"))
        .chain((more > 0).then(|| format!("\n... and {more} more skipped (--json lists them)")))
}

pub fn report_json(report: &IndexReport) -> Value {
    json!({
        "files_read": report.files_read,
        "files_removed": report.files_removed,
        "files_touched": report.files_touched,
        "files_unchanged": report.files_unchanged,
        "chunks_embedded": report.chunks_embedded,
        "chunks_reused": report.chunks_reused,
        "skipped": report.skipped.iter().map(|(path, why)| json!({"path": path, "reason": why})).collect::<Vec<_>>(),
        "graph": report.graph.map(|(files, edges)| json!({"files": files, "edges": edges})),
        "warnings": report.warnings,
        "seconds": report.elapsed.as_secs_f64(),
    })
}

/// `{query, weights: {dense, lexical}, results: [result]}`, best first.
pub fn search_json(query: &str, response: &SearchResponse, detail: Detail) -> Value {
    json!({
        "query": query,
        "weights": {"dense": response.weights.0, "lexical": response.weights.1},
        "results": results_json(&response.results, detail),
    })
}

/// `{source: chunk, linked_files: [path], results: [result]}`, best first.
pub fn related_json(response: &RelatedResponse, detail: Detail) -> Value {
    json!({
        "source": chunk_json(&response.source, Detail::Compact),
        "linked_files": response.linked_files,
        "results": results_json(&response.results, detail),
    })
}

fn results_json(results: &[SearchResult], detail: Detail) -> Vec<Value> {
    results
        .iter()
        .map(|result| {
            let mut value = chunk_json(&result.chunk, detail);
            value["score"] = json!(result.score);
            value["explanation"] = json!(format!("{:?}", result.explanation));
            value
        })
        .collect()
}

fn chunk_json(chunk: &StoredChunk, detail: Detail) -> Value {
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

/// The first non-blank lines of a chunk.
fn snippet(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(SNIPPET_LINES)
}

struct Style {
    bold: &'static str,
    dim: &'static str,
    reset: &'static str,
}

impl Style {
    /// Colour on a terminal, unless `NO_COLOR` is set.
    fn for_stdout() -> Self {
        match std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            true => Self {
                bold: "\x1b[1m",
                dim: "\x1b[2m",
                reset: "\x1b[0m",
            },
            false => Self {
                bold: "",
                dim: "",
                reset: "",
            },
        }
    }
}

/// `path:start-end  symbol  score  chunk_id`, then the snippet or the whole chunk.
pub fn print_results(
    out: &mut impl Write,
    results: &[SearchResult],
    detail: Detail,
    explain: bool,
) -> std::io::Result<()> {
    let Style { bold, dim, reset } = Style::for_stdout();
    if results.is_empty() {
        writeln!(out, "no results")?;
    }
    for result in results {
        let c = &result.chunk;
        writeln!(
            out,
            "{bold}{}:{}-{}{reset}  {}  {:.3}  {dim}{}{reset}",
            c.path,
            c.start_line,
            c.end_line,
            c.name.as_deref().unwrap_or(&c.kind),
            result.score,
            c.chunk_id()
        )?;
        match detail {
            Detail::Compact => {
                for line in snippet(&c.text) {
                    writeln!(out, "    {}", truncate(line, 100))?;
                }
            }
            Detail::Full => {
                for (number, line) in (c.start_line..).zip(c.text.lines()) {
                    writeln!(out, "{dim}{number:>6}{reset}  {line}")?;
                }
                writeln!(out)?;
            }
        }
        if explain {
            writeln!(out, "    {dim}{:?}{reset}", result.explanation)?;
        }
    }
    Ok(())
}

fn truncate(line: &str, chars: usize) -> String {
    match line.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

pub fn status_json(status: &Status) -> Value {
    json!({
        "root": status.root,
        "model": status.model,
        "backend": status.backend,
        "files": status.files,
        "files_skipped": status.files_skipped,
        "chunks": status.chunks,
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
fn dense_search(info: &VectorIndexInfo) -> String {
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

pub fn print_status(out: &mut impl Write, status: &Status) -> std::io::Result<()> {
    let Style { bold, reset, .. } = Style::for_stdout();
    writeln!(out, "{bold}root{reset}        {}", status.root.display())?;
    writeln!(out, "{bold}model{reset}       {}", status.model)?;
    writeln!(out, "{bold}backend{reset}     {}", status.backend)?;
    writeln!(
        out,
        "{bold}index{reset}       {} files ({} skipped), {} chunks",
        status.files, status.files_skipped, status.chunks
    )?;
    if let Some(info) = &status.vector_index {
        writeln!(
            out,
            "{bold}vectors{reset}     {} live of {} graph nodes; searched by {}",
            info.live,
            info.nodes,
            dense_search(info)
        )?;
    }
    let commit = |c: &Option<String>| {
        c.as_deref()
            .map_or("none", |c| &c[..c.len().min(12)])
            .to_owned()
    };
    writeln!(
        out,
        "{bold}commit{reset}      indexed {}, HEAD {}",
        commit(&status.indexed_commit),
        commit(&status.head_commit)
    )?;
    for (name, path) in &status.libraries {
        writeln!(
            out,
            "{bold}library{reset}     lib:{name} {}",
            path.display()
        )?;
    }
    let stale = &status.stale;
    if stale.is_empty() {
        writeln!(
            out,
            "{bold}stale{reset}       none: the index is up to date"
        )?;
    } else {
        writeln!(
            out,
            "{bold}stale{reset}       {} added, {} modified, {} removed (`quarry index` updates)",
            stale.added.len(),
            stale.modified.len(),
            stale.removed.len()
        )?;
        let lists = [
            ("added", &stale.added),
            ("modified", &stale.modified),
            ("removed", &stale.removed),
        ];
        for (what, paths) in lists {
            for path in paths {
                writeln!(out, "  {what:<9} {path}")?;
            }
        }
    }
    if status.drift.is_empty() {
        writeln!(out, "{bold}drift{reset}       none above the threshold")?;
    } else {
        writeln!(out, "{bold}drift{reset}       mean   max    chunks  file")?;
        for drift in &status.drift {
            writeln!(
                out,
                "            {:.3}  {:.3}  {:>3}>{:<3} {}",
                drift.average, drift.max, drift.chunks_before, drift.chunks_after, drift.path
            )?;
        }
    }
    for warning in &status.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}

pub fn model_json(model: &ModelDir, embedder: &Embedder) -> Value {
    json!({
        "model": embedder.fingerprint().to_string(),
        "directory": model.path,
        "source": format!("{:?}", model.source),
        "backend": embedder.backend().to_string(),
        "dimensions": embedder.dimensions(),
        "max_tokens": embedder.max_tokens(),
    })
}

pub fn print_model(
    out: &mut impl Write,
    model: &ModelDir,
    embedder: &Embedder,
) -> std::io::Result<()> {
    let config = embedder.config();
    writeln!(out, "model        {}", embedder.fingerprint())?;
    writeln!(
        out,
        "directory    {} ({:?})",
        model.path.display(),
        model.source
    )?;
    writeln!(out, "backend      {}", embedder.backend())?;
    writeln!(out, "dimensions   {}", embedder.dimensions())?;
    writeln!(out, "max tokens   {}", embedder.max_tokens())?;
    writeln!(
        out,
        "encoder      {} layers, {} hidden, {} heads, {:?}, pooling {:?}",
        config.bert.num_hidden_layers,
        config.bert.hidden_size,
        config.bert.num_attention_heads,
        config.bert.hidden_act,
        config.pooling
    )
}
