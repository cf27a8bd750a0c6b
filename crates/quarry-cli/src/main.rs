//! `quarry`: index a repository and search it from the command line.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use quarry_embed::{DEFAULT_MODEL, KnownModel, MS_MARCO_MINILM_L6, ModelDir, Provisioner};
use quarry_engine::{
    Engine, EngineError, EngineOptions, IndexEvent, IndexReport, SearchMode, SearchOptions,
    SearchResponse,
};
use quarry_rank::{IncludeTests, RankingConfig};
use quarry_store::Filter;
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "quarry",
    version,
    about = "Semantic code search, local and offline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build or update the index of a repository (only changed files are embedded again).
    Index {
        /// The repository root [default: the current directory's repository].
        path: Option<PathBuf>,
        /// Replace the index (after a model change, or a damaged index).
        #[arg(long)]
        force: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search the repository's code; indexes it first when it has changed.
    Search {
        /// What you are looking for: a description or an identifier.
        query: String,
        /// How many results.
        #[arg(short = 'k', long = "limit", default_value_t = 10)]
        limit: usize,
        /// At most this many results per file (0: no cap) [default: max(3, k / 3)].
        #[arg(long)]
        max_per_file: Option<usize>,
        /// Test code: penalised unless the query is about tests (auto), or always / never shown.
        #[arg(long, value_enum, default_value_t = IncludeTestsArg::Auto)]
        include_tests: IncludeTestsArg,
        /// Only files matching this glob (repeatable).
        #[arg(long = "path")]
        paths: Vec<String>,
        /// Only files in this language (repeatable).
        #[arg(long = "lang")]
        languages: Vec<String>,
        /// Retrieval legs: hybrid, semantic (embedding only) or lexical (no model run).
        #[arg(long, value_enum, default_value_t = ModeArg::Hybrid)]
        mode: ModeArg,
        /// The repository root [default: the current directory's repository].
        #[arg(long)]
        root: Option<PathBuf>,
        /// Print results as JSON.
        #[arg(long)]
        json: bool,
        /// Show how each result's score came about.
        #[arg(long)]
        explain: bool,
        /// Rescore the candidates with a cross-encoder (cross-encoder/ms-marco-MiniLM-L6-v2,
        /// downloaded on first use): better order, seconds per query on a CPU.
        #[arg(long)]
        rerank: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum IncludeTestsArg {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Hybrid,
    Semantic,
    Lexical,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Index { path, force, json } => {
            let root = repository_root(path)?;
            let model = provision(&DEFAULT_MODEL)?;
            type Open = fn(&Path, &ModelDir, EngineOptions) -> Result<Engine, EngineError>;
            let open: Open = if force { Engine::rebuild } else { Engine::open };
            let engine = open(&root, &model, EngineOptions::default())?;
            let report = index(&engine)?;
            if json {
                println!("{}", report_json(&report));
            } else {
                eprintln!("{}", summary(&report));
            }
            Ok(())
        }
        Command::Search {
            query,
            limit,
            max_per_file,
            include_tests,
            paths,
            languages,
            mode,
            root,
            json,
            explain,
            rerank,
        } => {
            if query.trim().is_empty() {
                // Before indexing, which may take minutes.
                return Err(EngineError::EmptyQuery.into());
            }
            let root = repository_root(root)?;
            let mut filter = Filter::default();
            for glob in &paths {
                filter = filter.path_glob(glob)?;
            }
            for language in &languages {
                filter = filter.language(language);
            }
            let options = SearchOptions {
                ranking: RankingConfig {
                    limit,
                    max_per_file,
                    include_tests: match include_tests {
                        IncludeTestsArg::Auto => IncludeTests::Auto,
                        IncludeTestsArg::Always => IncludeTests::Always,
                        IncludeTestsArg::Never => IncludeTests::Never,
                    },
                    ..RankingConfig::default()
                },
                filter,
                mode: match mode {
                    ModeArg::Hybrid => SearchMode::Hybrid,
                    ModeArg::Semantic => SearchMode::Semantic,
                    ModeArg::Lexical => SearchMode::Lexical,
                },
            };
            let model = provision(&DEFAULT_MODEL)?;
            let mut engine = Engine::open(&root, &model, EngineOptions::default())?;
            if rerank {
                engine = engine.with_reranker(&provision(&MS_MARCO_MINILM_L6)?)?;
            }
            let report = index(&engine)?;
            if report.files_read + report.files_removed > 0 {
                eprintln!("{}", summary(&report));
            }
            let response = engine.search(&query, &options)?;
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", response_json(&query, &response))?;
            } else {
                print_results(&mut out, &response, explain)?;
            }
            Ok(())
        }
    }
}

/// `path`, or the closest directory from the current one up that holds `.quarry` or
/// `.git`, or the current directory.
fn repository_root(path: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = path {
        anyhow::ensure!(
            path.is_dir(),
            "{}: not a directory; give the root of the repository",
            path.display()
        );
        return Ok(path);
    }
    let current = std::env::current_dir().context("reading the current directory")?;
    Ok(current
        .ancestors()
        .find(|dir| dir.join(".quarry").is_dir() || dir.join(".git").exists())
        .unwrap_or(&current)
        .to_path_buf())
}

/// `model`, downloaded into the user cache on first use, with a progress bar.
fn provision(model: &KnownModel) -> Result<ModelDir> {
    let bar = progress_bar();
    let shown = bar.clone();
    let model = Provisioner::from_env()
        .on_progress(move |progress| match progress {
            quarry_embed::provision::Progress::Started { what, total } => {
                shown.set_message(format!("downloading {what}"));
                shown.set_length(total.unwrap_or(0));
                shown.set_position(0);
            }
            quarry_embed::provision::Progress::Advanced { done } => shown.set_position(done),
            quarry_embed::provision::Progress::Finished => shown.set_message("downloaded"),
        })
        .resolve(model)
        .with_context(|| format!("providing the model {}", model.name))?;
    bar.finish_and_clear();
    Ok(model)
}

/// A progress bar on stderr, drawn only on a terminal.
fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{msg:24} [{bar:30}] {pos}/{len} ({eta} left)")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn index(engine: &Engine) -> Result<IndexReport> {
    let bar = progress_bar();
    let report = engine.index(&mut |event| match event {
        IndexEvent::Changes { to_read, .. } => {
            bar.set_message("chunking");
            bar.set_length(to_read as u64);
        }
        IndexEvent::Chunked { files, total } => {
            bar.set_length(total as u64);
            bar.set_position(files as u64);
        }
        IndexEvent::Embedded { chunks, total } => {
            bar.set_message("embedding");
            bar.set_length(total as u64);
            bar.set_position(chunks as u64);
        }
        IndexEvent::Graph => bar.set_message("import graph"),
        IndexEvent::Checkpoint => bar.set_message("saving the vector index"),
    })?;
    bar.finish_and_clear();
    Ok(report)
}

fn summary(report: &IndexReport) -> String {
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
        report
            .warnings
            .iter()
            .map(|w| format!("\nwarning: {w}"))
            .collect::<String>()
    )
}

fn report_json(report: &IndexReport) -> serde_json::Value {
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

/// The `--json` schema: `{query, results: [{chunk_id, path, start_line, end_line, language,
/// kind, symbol, score, text}]}`, best first; `score` in `[0, 1]`.
fn response_json(query: &str, response: &SearchResponse) -> serde_json::Value {
    json!({
        "query": query,
        "results": response.results.iter().map(|r| {
            let c = &r.chunk;
            json!({
                "chunk_id": c.chunk_id().to_string(),
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "language": c.language,
                "kind": c.kind,
                "symbol": c.name,
                "score": r.score,
                "text": c.text,
            })
        }).collect::<Vec<_>>(),
    })
}

fn print_results(out: &mut impl Write, response: &SearchResponse, explain: bool) -> Result<()> {
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let (bold, dim, reset) = if colour {
        ("\x1b[1m", "\x1b[2m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    if response.results.is_empty() {
        writeln!(out, "no results")?;
    }
    for result in &response.results {
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
        for line in c.text.lines().filter(|l| !l.trim().is_empty()).take(3) {
            writeln!(out, "    {}", truncate(line, 100))?;
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
