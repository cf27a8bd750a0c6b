//! Progress bars, and the index runs that draw them.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use quarry_engine::{Embedded, Engine, EngineError, IndexEvent, IndexReport};

use crate::output;

/// A progress bar on stderr, drawn only on a terminal.
pub fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{msg:24} [{bar:30}] {pos}/{len} {prefix} ({eta} left)")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The most chunks waiting for vectors that `quarry search` embeds before it answers
/// (about a second on two cores): an edit's new chunks, not a fresh repository's.
const EMBED_BEFORE_SEARCH: usize = 32;

/// Brings the index up to date before a search: the files that changed, and, for a search
/// by meaning (or with `--wait`), their chunks' vectors when there are few enough. Returns
/// how many chunks still wait for their vectors.
pub fn catch_up(engine: &Engine, wait: bool, dense: bool) -> Result<usize, EngineError> {
    let mut report = index_files(engine)?;
    let pending = report.chunks_pending;
    if pending > 0 && (wait || (dense && pending <= EMBED_BEFORE_SEARCH)) {
        report.add_embedded(embed_pending(engine)?);
        report.chunks_pending = 0;
    }
    if report.files_read + report.files_removed > 0 {
        eprintln!("{}", output::report_summary(&report));
    }
    Ok(report.chunks_pending)
}

/// Both phases of an index run, with a progress bar.
pub fn index(engine: &Engine) -> Result<IndexReport> {
    let bar = progress_bar();
    let report = engine.index(&mut |event| show(&bar, event))?;
    bar.finish_and_clear();
    Ok(report)
}

/// The first phase of an index run (files, words, import graph), with a progress bar.
pub fn index_files(engine: &Engine) -> Result<IndexReport, EngineError> {
    let bar = progress_bar();
    let report = engine.index_files(&mut |event| show(&bar, event))?;
    bar.finish_and_clear();
    Ok(report)
}

/// The second phase of an index run (vectors), with a progress bar.
fn embed_pending(engine: &Engine) -> Result<Embedded, EngineError> {
    let bar = progress_bar();
    let embedded = engine.embed_pending(&mut |event| show(&bar, event))?;
    bar.finish_and_clear();
    Ok(embedded)
}

fn show(bar: &ProgressBar, event: IndexEvent) {
    match event {
        IndexEvent::Changes { to_read, .. } => {
            bar.set_message("reading files");
            bar.set_prefix("files");
            bar.set_length(to_read as u64);
        }
        IndexEvent::Chunked { files, total } => {
            bar.set_length(total as u64);
            bar.set_position(files as u64);
        }
        IndexEvent::Graph => bar.set_message("import graph"),
        IndexEvent::Searchable { pending } => {
            // A new count of other things: a fresh bar, not the files' one going backwards.
            bar.reset();
            bar.set_message("embedding");
            bar.set_prefix("chunks");
            bar.set_length(pending as u64);
        }
        IndexEvent::Embedded { chunks, total } => {
            bar.set_message("embedding");
            bar.set_prefix("chunks");
            bar.set_length(total as u64);
            bar.set_position(chunks as u64);
        }
        IndexEvent::Checkpoint => bar.set_message("saving the vector index"),
    }
}
