//! What `quarry` prints for people: colour only on a terminal, `NO_COLOR` respected. The
//! JSON output is `quarry_engine::view`'s, shared with the MCP server.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

use quarry_engine::model::{Embedder, ModelDir};
use quarry_engine::view::{StatusView, snippet};
use quarry_engine::{Coverage, Detail, IndexReport, SearchResult, SymbolHit};
use serde_json::{Value, json};

pub fn report_summary(report: &IndexReport) -> String {
    let pending = match report.chunks_pending {
        0 => String::new(),
        n => format!(", {n} waiting for vectors"),
    };
    let cached = match report.chunks_from_cache {
        0 => String::new(),
        n => format!(" ({n} from the machine's vector cache)"),
    };
    format!(
        "indexed in {:.1} s (searchable after {:.1} s): {} files read, {} removed, {} \
         unchanged; {} chunks embedded{cached}, {} kept{pending}; {} skipped{}",
        report.elapsed.as_secs_f64(),
        report.searchable_after.as_secs_f64(),
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

/// The line that says a search's dense leg did not reach every chunk, if it did not, and
/// whether a background run was started to embed them.
pub fn coverage_note(coverage: Coverage, embedding_in_background: bool) -> Option<String> {
    let pending = coverage.pending();
    let remedy = match embedding_in_background {
        true => "they are being embedded in the background, for the searches after this one",
        false => "`quarry index` embeds them, or search with --wait",
    };
    (pending > 0).then(|| {
        format!(
            "note: {pending} of {} chunks wait for their vectors, so they were found by their \
             words alone; {remedy}",
            coverage.chunks
        )
    })
}

/// A path as one line of text shows it: a control character (a newline in a file's name)
/// escaped as Rust escapes it, so that one result stays one line; `--json` has it as it is.
fn shown(path: &str) -> Cow<'_, str> {
    match path.chars().any(char::is_control) {
        true => Cow::Owned(path.escape_debug().to_string()),
        false => Cow::Borrowed(path),
    }
}

/// Skipped files shown in the summary; `--json` lists them all.
const SKIPPED_SHOWN: usize = 5;

fn skipped_lines(skipped: &[(String, String)]) -> impl Iterator<Item = String> + '_ {
    let more = skipped.len().saturating_sub(SKIPPED_SHOWN);
    skipped
        .iter()
        .take(SKIPPED_SHOWN)
        .map(|(path, why)| format!("\nskipped {}: {why}", shown(path)))
        .chain((more > 0).then(|| format!("\n... and {more} more skipped (--json lists them)")))
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
            shown(&c.path),
            c.start_line,
            c.end_line,
            c.name.as_deref().unwrap_or(c.kind.name()),
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
            print_explanation(out, result)?;
        }
    }
    Ok(())
}

/// `--explain`'s lines under a result: the legs that placed it and the score they fused
/// to, then each ranking step and the score it left.
fn print_explanation(out: &mut impl Write, result: &SearchResult) -> std::io::Result<()> {
    let Style { dim, reset, .. } = Style::for_stdout();
    let legs: Vec<String> = result.legs.iter().map(ToString::to_string).collect();
    let retrieval = result.explanation.retrieval_score;
    match legs.is_empty() {
        true => writeln!(out, "    {dim}retrieval {retrieval:.3}{reset}")?,
        false => writeln!(
            out,
            "    {dim}{} → retrieval {retrieval:.3}{reset}",
            legs.join(", ")
        )?,
    }
    for step in &result.explanation.steps {
        writeln!(out, "    {dim}{step}{reset}")?;
    }
    Ok(())
}

/// What the symbol leg found (`--explain`): `definitions: exact Index::search src/index.rs:40-80`.
pub fn print_definitions(out: &mut impl Write, hits: &[SymbolHit]) -> std::io::Result<()> {
    let Style { dim, reset, .. } = Style::for_stdout();
    if hits.is_empty() {
        return Ok(());
    }
    writeln!(out, "{dim}definitions (the symbol leg):{reset}")?;
    for hit in hits {
        writeln!(
            out,
            "    {dim}{} {} {} {}:{}-{}{reset}",
            hit.matched,
            hit.kind,
            hit.symbol,
            shown(&hit.path),
            hit.start_line,
            hit.end_line
        )?;
    }
    Ok(())
}

fn truncate(line: &str, chars: usize) -> String {
    match line.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

pub fn print_status(out: &mut impl Write, status: &StatusView) -> std::io::Result<()> {
    let Style { bold, reset, .. } = Style::for_stdout();
    writeln!(out, "{bold}root{reset}        {}", status.root.display())?;
    writeln!(out, "{bold}model{reset}       {}", status.model)?;
    writeln!(out, "{bold}backend{reset}     {}", status.backend)?;
    writeln!(
        out,
        "{bold}index{reset}       {} files ({} skipped), {} chunks",
        status.files, status.files_skipped, status.coverage.chunks
    )?;
    let coverage = status.coverage;
    let fix = match status.model_missing {
        true => "the model is not here: `quarry model fetch`, then `quarry index`",
        false => "`quarry index` embeds them",
    };
    match coverage.pending() {
        0 => writeln!(
            out,
            "{bold}embedded{reset}    all {} chunks",
            coverage.embedded
        )?,
        pending => writeln!(
            out,
            "{bold}embedded{reset}    {} of {} chunks; {pending} wait for vectors ({fix})",
            coverage.embedded, coverage.chunks
        )?,
    }
    if let Some(info) = &status.vector_index {
        writeln!(
            out,
            "{bold}vectors{reset}     {} live of {} graph nodes; searched by {}",
            info.live, info.nodes, info.search
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
            "{bold}stale{reset}       none: {}",
            match status.damage.is_empty() {
                true => "the index is up to date",
                false => "no file changed since it was indexed, but the index is damaged (below)",
            }
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
                writeln!(out, "  {what:<9} {}", shown(path))?;
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
                drift.average,
                drift.max,
                drift.chunks_before,
                drift.chunks_after,
                shown(&drift.path)
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
        "precision": embedder.precision().name(),
        "cpu_level": embedder.cpu_level().map(|level| level.name()),
        "int8_instructions": embedder.int8_instructions(),
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
    writeln!(out, "precision    {}", embedder.precision())?;
    if let Some(level) = embedder.cpu_level() {
        writeln!(out, "cpu level    {level}")?;
    }
    if let Some(instructions) = embedder.int8_instructions() {
        writeln!(out, "int8 on      {instructions}")?;
    }
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
