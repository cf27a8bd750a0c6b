//! `quarry`: index a repository and search it from the command line.

mod output;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use quarry_chunk::ChunkId;
use quarry_embed::{
    DEFAULT_MODEL, Embedder, EmbedderOptions, KnownModel, MS_MARCO_MINILM_L6, ModelDir, Provisioner,
};
use quarry_engine::{
    Config, Detail, Engine, EngineError, EngineOptions, IndexEvent, IndexReport, Libraries,
    RelatedOptions, ResultRequest, SearchMode, SearchOptions, json,
};
use quarry_mcp::ServerOptions;
use quarry_rank::IncludeTests;

#[derive(Parser)]
#[command(
    name = "quarry",
    version,
    about = "Semantic code search, local and offline",
    after_help = "Defaults for search options can be set in .quarry/config.toml (see the README)."
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
    /// Search the repository's code; indexes changed files first (their words at once, their
    /// vectors when few, or with --wait).
    Search {
        /// What you are looking for: a description or an identifier.
        query: String,
        /// Embed every chunk still waiting for its vector before answering (full quality;
        /// minutes on a large fresh repository). Without it, a search embeds at most
        /// 32 waiting chunks and finds the rest by their words.
        #[arg(long)]
        wait: bool,
        /// Retrieval legs: hybrid, semantic (embedding only) or lexical (no model run).
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        /// Rescore the candidates with a cross-encoder (cross-encoder/ms-marco-MiniLM-L6-v2,
        /// downloaded on first use): better order, seconds per query on a CPU.
        #[arg(long)]
        rerank: bool,
        #[command(flatten)]
        results: ResultArgs,
    },
    /// Find code like a chunk ("more like this"), by the chunk id a search printed.
    Related {
        /// The chunk's id (`chunk_id` in --json, the last column otherwise).
        chunk_id: String,
        /// Also show the source chunk's own file.
        #[arg(long)]
        include_source_file: bool,
        /// Add the best chunk of each file that imports the source's file or that it imports.
        #[arg(long)]
        include_linked: bool,
        /// Only results scoring at least this (0 to 1).
        #[arg(long, default_value_t = 0.0)]
        min_score: f32,
        #[command(flatten)]
        results: ResultArgs,
    },
    /// Report the index's health: size, model, stale files and drift.
    Status {
        /// List files whose last re-index moved their chunks by at least this (0 to 1)
        /// [default: 0.1, or `search.drift_threshold` in .quarry/config.toml].
        #[arg(long)]
        threshold: Option<f32>,
        /// The repository root [default: the current directory's repository].
        #[arg(long)]
        root: Option<PathBuf>,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Register dependency sources to index beside the project (searched with --scope).
    Lib {
        #[command(subcommand)]
        command: LibCommand,
        /// The repository root [default: the current directory's repository].
        #[arg(long, global = true)]
        root: Option<PathBuf>,
    },
    /// Download the models into the user cache, or describe them.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Serve the repository to coding agents over the Model Context Protocol (stdio):
    /// semantic_search, get_related, find_similar and index as tools.
    Mcp {
        /// The repository root [default: the current directory's repository].
        #[arg(long)]
        root: Option<PathBuf>,
        /// Do not bring the index up to date when the server starts.
        #[arg(long)]
        no_index: bool,
        /// The most one tool response may hold, in tokens (longer result lists are paged).
        #[arg(long, default_value_t = ServerOptions::default().max_tokens)]
        max_tokens: usize,
    },
}

#[derive(Subcommand)]
enum LibCommand {
    /// Register a library and index it, as the scope `lib:NAME`.
    Add {
        /// Its name: letters, digits, '-', '_' and '.'.
        name: String,
        /// Its source directory, e.g. ~/.cargo/registry/src/*/tokio-1.48.0.
        path: PathBuf,
    },
    /// List the registered libraries.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Unregister a library and drop its files from the index.
    Remove {
        /// Its name.
        name: String,
    },
}

#[derive(Subcommand)]
enum ModelCommand {
    /// Download the embedding model (and with --rerank the cross-encoder), or find it cached.
    Fetch {
        /// Also the cross-encoder that `search --rerank` uses.
        #[arg(long)]
        rerank: bool,
    },
    /// Load the embedding model and describe it.
    Info {
        /// Print the description as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `search` and `related` share: which results, and how they are shown.
#[derive(Args)]
struct ResultArgs {
    /// How many results [default: 10].
    #[arg(short = 'k', long = "limit")]
    limit: Option<usize>,
    /// At most this many results per file (0: no cap) [default: max(3, k / 3)].
    #[arg(long)]
    max_per_file: Option<usize>,
    /// Test code: penalised unless the query is about tests (auto), or always / never shown.
    #[arg(long, value_enum)]
    include_tests: Option<IncludeTestsArg>,
    /// Only files matching this glob (repeatable).
    #[arg(long = "path")]
    paths: Vec<String>,
    /// Only files in this language (repeatable).
    #[arg(long = "lang")]
    languages: Vec<String>,
    /// Where to search: project, lib:NAME or all (repeatable) [default: project].
    #[arg(long = "scope")]
    scopes: Vec<String>,
    /// compact: location, symbol, score and the first lines; full: the whole chunk.
    #[arg(long, value_enum)]
    detail: Option<DetailArg>,
    /// The repository root [default: the current directory's repository].
    #[arg(long)]
    root: Option<PathBuf>,
    /// Print results as JSON.
    #[arg(long)]
    json: bool,
    /// Show how each result's score came about.
    #[arg(long)]
    explain: bool,
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

#[derive(Clone, Copy, ValueEnum)]
enum DetailArg {
    Compact,
    Full,
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
            let config = Config::load(&root)?;
            let model = provision(&DEFAULT_MODEL)?;
            type Open = fn(&Path, &ModelDir, EngineOptions) -> Result<Engine, EngineError>;
            let open: Open = if force { Engine::rebuild } else { Engine::open };
            let engine = open(&root, &model, engine_options(&config)?)?;
            let report = index(&engine)?;
            ensure_not_empty(&engine)?;
            if json {
                println!("{}", json::index_report(&report));
            } else {
                eprintln!("{}", output::report_summary(&report));
            }
            Ok(())
        }
        Command::Search {
            query,
            wait,
            mode,
            rerank,
            results,
        } => {
            if query.trim().is_empty() {
                // Before indexing, which may take minutes.
                return Err(EngineError::EmptyQuery.into());
            }
            let (root, config) = root_and_config(results.root.clone())?;
            let mut engine = open_engine(&root, &config)?;
            if rerank {
                engine = engine.with_reranker(&provision(&MS_MARCO_MINILM_L6)?)?;
            }
            let request = results.request(mode);
            let options = SearchOptions {
                ranking: request.ranking(&config),
                filter: request.filter(&engine, &config)?,
                mode: request.mode(&config),
                ..SearchOptions::default()
            };
            // A lexical search needs no vectors: it never waits for the model.
            let dense = options.mode != SearchMode::Lexical;
            match catch_up(&engine, wait, dense) {
                Err(error) if error.is_locked() => eprintln!(
                    "note: another quarry process is writing this index; answering from its \
                     last commit (files changed since are not searched yet)"
                ),
                outcome => outcome?,
            }
            ensure_not_empty(&engine)?;
            let response = engine.search(&query, &options)?;
            let detail = request.detail(&config);
            let mut out = std::io::stdout().lock();
            if results.json {
                let json = json::search(&query, &response, detail, true);
                writeln!(out, "{json}")?;
            } else {
                output::print_results(&mut out, &response.results, detail, results.explain)?;
                if let Some(note) = output::coverage_note(response.coverage).filter(|_| dense) {
                    eprintln!("{note}");
                }
            }
            // The process ends here: the kernel takes the model's and the index's memory back
            // faster than dropping them piece by piece would (milliseconds of a search).
            std::mem::forget(engine);
            Ok(())
        }
        Command::Related {
            chunk_id,
            include_source_file,
            include_linked,
            min_score,
            results,
        } => {
            let id: ChunkId = chunk_id.trim().parse().map_err(|_| {
                anyhow::anyhow!(
                    "{chunk_id:?} is not a chunk id (32 hex digits); `quarry search --json` \
                     gives each result's `chunk_id`"
                )
            })?;
            let (root, config) = root_and_config(results.root.clone())?;
            let engine = open_engine(&root, &config)?;
            let request = results.request(None);
            let options = RelatedOptions {
                ranking: request.ranking(&config),
                filter: request.filter(&engine, &config)?,
                include_source_file,
                include_linked,
                min_score,
            };
            let response = engine.related(id, &options)?;
            let detail = request.detail(&config);
            let mut out = std::io::stdout().lock();
            if results.json {
                writeln!(out, "{}", json::related(&response, detail, true))?;
            } else {
                let source = &response.source;
                writeln!(
                    out,
                    "like {}:{}-{} {}\n",
                    source.path,
                    source.start_line,
                    source.end_line,
                    source.name.as_deref().unwrap_or(&source.kind)
                )?;
                output::print_results(&mut out, &response.results, detail, results.explain)?;
            }
            Ok(())
        }
        Command::Status {
            threshold,
            root,
            json,
        } => {
            let (root, config) = root_and_config(root)?;
            let engine = open_engine(&root, &config)?;
            let status = engine.status(threshold.unwrap_or(config.search.drift_threshold))?;
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", json::status(&status))?;
            } else {
                output::print_status(&mut out, &status)?;
            }
            Ok(())
        }
        Command::Mcp {
            root,
            no_index,
            max_tokens,
        } => {
            let (root, config) = root_and_config(root)?;
            let model = provision(&DEFAULT_MODEL)?;
            let engine_options = engine_options(&config)?;
            let engine = Engine::open(&root, &model, engine_options)?;
            let options = ServerOptions {
                max_tokens,
                index_on_start: !no_index,
                engine: engine_options,
            };
            quarry_mcp::serve_stdio(engine, config, model, options)?;
            Ok(())
        }
        Command::Lib { command, root } => {
            let (root, config) = root_and_config(root)?;
            match command {
                LibCommand::Add { name, path } => {
                    let engine = open_engine(&root, &config)?;
                    engine.add_library(&name, &path)?;
                    let report = index(&engine)?;
                    eprintln!("{}", output::report_summary(&report));
                    eprintln!("search it with --scope lib:{name} (with --scope project too: both)");
                }
                LibCommand::List { json } => {
                    // The registry alone: no model to load, no index to lock.
                    let libraries = Libraries::load(&root)?.libraries;
                    let mut out = std::io::stdout().lock();
                    if json {
                        writeln!(out, "{}", serde_json::to_string(&libraries)?)?;
                    } else {
                        for (name, path) in &libraries {
                            writeln!(out, "lib:{name}\t{}", path.display())?;
                        }
                    }
                }
                LibCommand::Remove { name } => {
                    open_engine(&root, &config)?.remove_library(&name)?;
                    eprintln!("removed lib:{name}");
                }
            }
            Ok(())
        }
        Command::Model { command } => match command {
            ModelCommand::Fetch { rerank } => {
                let mut models = vec![&DEFAULT_MODEL];
                if rerank {
                    models.push(&MS_MARCO_MINILM_L6);
                }
                for model in models {
                    let dir = provision(model)?;
                    println!("{}\t{}\t{:?}", model.name, dir.path.display(), dir.source);
                }
                Ok(())
            }
            ModelCommand::Info { json } => {
                let model = provision(&DEFAULT_MODEL)?;
                let embedder = Embedder::load(&model, EmbedderOptions::from_env()?)?;
                let mut out = std::io::stdout().lock();
                if json {
                    writeln!(out, "{}", output::model_json(&model, &embedder))?;
                } else {
                    output::print_model(&mut out, &model, &embedder)?;
                }
                Ok(())
            }
        },
    }
}

impl ResultArgs {
    /// The flags as the engine's request; the configuration fills what they leave out.
    fn request(&self, mode: Option<ModeArg>) -> ResultRequest {
        ResultRequest {
            limit: self.limit,
            max_per_file: self.max_per_file,
            include_tests: self.include_tests.map(|arg| match arg {
                IncludeTestsArg::Auto => IncludeTests::Auto,
                IncludeTestsArg::Always => IncludeTests::Always,
                IncludeTestsArg::Never => IncludeTests::Never,
            }),
            paths: self.paths.clone(),
            languages: self.languages.clone(),
            scopes: self.scopes.clone(),
            mode: mode.map(|arg| match arg {
                ModeArg::Hybrid => SearchMode::Hybrid,
                ModeArg::Semantic => SearchMode::Semantic,
                ModeArg::Lexical => SearchMode::Lexical,
            }),
            detail: self.detail.map(|arg| match arg {
                DetailArg::Compact => Detail::Compact,
                DetailArg::Full => Detail::Full,
            }),
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

/// An index without files means the wrong directory or an empty one: say so rather than
/// answer every search with nothing.
fn ensure_not_empty(engine: &Engine) -> Result<()> {
    let counts = engine.store().counts()?;
    anyhow::ensure!(
        counts.files > 0,
        "{}: no files to index (hidden files and files .gitignore excludes are skipped); give \
         the repository's root",
        engine.root().display()
    );
    Ok(())
}

fn root_and_config(root: Option<PathBuf>) -> Result<(PathBuf, Config)> {
    let root = repository_root(root)?;
    let config = Config::load(&root)?;
    Ok((root, config))
}

fn engine_options(config: &Config) -> Result<EngineOptions> {
    Ok(EngineOptions {
        embedder: EmbedderOptions::from_env()?,
        max_file_bytes: config.index.max_file_bytes,
        ..EngineOptions::default()
    })
}

/// The engine for `root` with the default model.
fn open_engine(root: &Path, config: &Config) -> Result<Engine> {
    let model = provision(&DEFAULT_MODEL)?;
    Ok(Engine::open(root, &model, engine_options(config)?)?)
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

/// The most chunks waiting for vectors that `quarry search` embeds before it answers
/// (about a second on two cores): an edit's new chunks, not a fresh repository's.
const EMBED_BEFORE_SEARCH: usize = 32;

/// Brings the index up to date before a search: the files that changed, and, for a search
/// by meaning (or with `--wait`), their chunks' vectors when there are few enough.
fn catch_up(engine: &Engine, wait: bool, dense: bool) -> Result<(), EngineError> {
    let mut report = index_files(engine)?;
    let pending = report.chunks_pending;
    if pending > 0 && (wait || (dense && pending <= EMBED_BEFORE_SEARCH)) {
        report.chunks_embedded = embed_pending(engine)?;
        report.chunks_pending = 0;
    }
    if report.files_read + report.files_removed > 0 {
        eprintln!("{}", output::report_summary(&report));
    }
    Ok(())
}

/// Both phases of an index run, with a progress bar.
fn index(engine: &Engine) -> Result<IndexReport> {
    let bar = progress_bar();
    let report = engine.index(&mut |event| show(&bar, event))?;
    bar.finish_and_clear();
    Ok(report)
}

/// The first phase of an index run (files, words, import graph), with a progress bar.
fn index_files(engine: &Engine) -> Result<IndexReport, EngineError> {
    let bar = progress_bar();
    let report = engine.index_files(&mut |event| show(&bar, event))?;
    bar.finish_and_clear();
    Ok(report)
}

/// The second phase of an index run (vectors), with a progress bar.
fn embed_pending(engine: &Engine) -> Result<usize, EngineError> {
    let bar = progress_bar();
    let embedded = engine.embed_pending(&mut |event| show(&bar, event))?;
    bar.finish_and_clear();
    Ok(embedded)
}

fn show(bar: &ProgressBar, event: IndexEvent) {
    match event {
        IndexEvent::Changes { to_read, .. } => {
            bar.set_message("reading files");
            bar.set_length(to_read as u64);
        }
        IndexEvent::Chunked { files, total } => {
            bar.set_length(total as u64);
            bar.set_position(files as u64);
        }
        IndexEvent::Graph => bar.set_message("import graph"),
        IndexEvent::Searchable { pending } => {
            bar.set_message("embedding");
            bar.set_length(pending as u64);
            bar.set_position(0);
        }
        IndexEvent::Embedded { chunks, total } => {
            bar.set_message("embedding");
            bar.set_length(total as u64);
            bar.set_position(chunks as u64);
        }
        IndexEvent::Checkpoint => bar.set_message("saving the vector index"),
    }
}
