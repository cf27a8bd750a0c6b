//! `quarry`: index a repository and search it from the command line. One function per
//! subcommand; the flags are in `args`, the progress bars in `progress`, the text output in
//! `output`.

mod args;
mod background;
mod output;
mod progress;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use clap::error::{ContextKind, ContextValue};
use quarry_engine::model::{
    DEFAULT_MODEL, EmbedError, Embedder, EmbedderOptions, KnownModel, MS_MARCO_MINILM_L6, ModelDir,
    Progress, Provisioner,
};
use quarry_engine::view::{IndexReportView, RelatedView, SearchView, json};
use quarry_engine::{
    ChunkIdPrefix, Config, Engine, EngineError, EngineOptions, Libraries, RelatedOptions,
    SearchMode, SearchOptions, VectorSaves,
};
use quarry_engine::{INDEX_DIR, quoted};
use quarry_mcp::{ServerOptions, WatchMode};

use args::{
    Cli, Command, IndexArgs, LibArgs, LibCommand, McpArgs, ModelCommand, RelatedArgs, SearchArgs,
    StatusArgs,
};
use progress::{catch_up, index, index_files, progress_bar};

/// mimalloc rather than the system's allocator: under glibc's, a `quarry mcp` answering
/// searches on many threads while it re-indexes after every edit grew by a quarter in 20
/// minutes (its arenas fragmented), and stayed flat with two arenas at half the size
/// (`bench-suite/reports/mcp-*.md`, the soak). Its v2 line (Cargo feature `v2`): v3 gives
/// freed pages back a second later and only when it next allocates, so an idle server kept
/// a burst's memory (1.16-1.37x its rest 10 s after 1,000 calls, against 1.01-1.08x).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => error.exit(), // --help, --version
        Err(error) => {
            // clap's first paragraph says what is wrong (a bad value: which, and its range or
            // its possible values), made one line; the usage and the pointer to --help after
            // it are left out, and a long value is quoted short.
            let rendered = error.to_string();
            let first = rendered.split("\n\n").next().unwrap_or_default();
            let mut line: String = first.split_whitespace().collect::<Vec<_>>().join(" ");
            if let Some(ContextValue::String(value)) = error.get(ContextKind::InvalidValue) {
                let flat: String = value.split_whitespace().collect::<Vec<_>>().join(" ");
                line = line.replace(&format!("'{flat}'"), &quoted(value));
            }
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let outcome = match cli.command {
        Command::Index(args) => run_index(args),
        Command::Search(args) => run_search(args),
        Command::Related(args) => run_related(args),
        Command::Status(args) => run_status(args),
        Command::Lib(args) => run_lib(args),
        Command::Model { command } => run_model(command),
        Command::Mcp(args) => run_mcp(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", describe(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each said once: a cause whose words the message before it
/// already holds (an I/O error its context quotes) is not repeated.
fn describe(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain().map(ToString::to_string) {
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

/// `quarry index`: both phases (or the first alone, `--lexical-only`), with a report.
fn run_index(args: IndexArgs) -> Result<()> {
    let root = repository_root(args.path.or(args.root.root))?;
    let config = Config::load(&root)?;
    let fresh = IndexDir::of(&root);
    if args.background {
        return run_background_index(&root, &config);
    }
    let options = engine_options(&config)?;
    let (engine, report) = if args.lexical_only {
        let engine = open_engine_for_words(&root, &config, true)?;
        let report = waiting_for_writer(|| Ok(index_files(&engine)?))?;
        (engine, report)
    } else if args.force {
        let model = embedding_model()?;
        // Built beside the live index, which searches read until it is swapped in.
        let rebuild = waiting_for_writer(|| Ok(Engine::rebuild(&root, &model, options)?))?;
        let rebuild = rebuild.with_vector_cache(config.index.vector_cache());
        let report = index(rebuild.engine())?;
        (rebuild.finish()?, report)
    } else {
        let engine = open_engine(&root, &config)?;
        let report = waiting_for_writer(|| index(&engine))?;
        (engine, report)
    };
    fresh.ensure_not_empty(engine)?;
    if args.json {
        println!("{}", json(&IndexReportView::new(&report)));
    } else {
        eprintln!("{}", output::report_summary(&report));
    }
    Ok(())
}

/// `quarry index --background`, what a search starts: both phases, quietly; another
/// process writing the index (an earlier background run, a `quarry mcp`) does the work, so
/// this one leaves.
fn run_background_index(root: &Path, config: &Config) -> Result<()> {
    let engine = open_engine(root, config)?;
    match engine.index(&mut |_| {}) {
        Err(error) if error.is_locked() => Ok(()),
        outcome => outcome.map(drop).map_err(Into::into),
    }
}

/// Runs `write` until it is not refused for another process writing the index (a `quarry
/// mcp` following the tree writes for a moment after each edit; another `quarry index` for
/// as long as it runs), saying once on stderr that it waits. Each refused try wrote nothing.
fn waiting_for_writer<T>(mut write: impl FnMut() -> Result<T>) -> Result<T> {
    let mut pause = Duration::from_millis(50);
    let mut said = false;
    loop {
        match write() {
            Err(error)
                if error
                    .downcast_ref::<EngineError>()
                    .is_some_and(EngineError::is_locked) =>
            {
                if !said {
                    eprintln!(
                        "waiting: another quarry process is writing this index (a `quarry mcp` \
                         following the tree, or another `quarry index`)"
                    );
                    said = true;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            outcome => return outcome,
        }
    }
}

/// `quarry search`: catch up with the changes (or answer from the last commit while another
/// process writes), then search.
fn run_search(args: SearchArgs) -> Result<()> {
    let SearchArgs {
        query,
        wait,
        no_background,
        mode,
        rerank,
        results,
    } = args;
    if query.trim().is_empty() {
        // Before indexing, which may take minutes.
        return Err(EngineError::EmptyQuery.into());
    }
    let (root, config) = root_and_config(results.root.root.clone())?;
    let fresh = IndexDir::of(&root);
    let request = results.request(mode);
    // A lexical search needs no vectors: it never waits for the model, nor needs its files.
    let dense = request.mode(&config) != SearchMode::Lexical;
    let mut engine = match dense {
        true => open_engine(&root, &config)?,
        false => open_engine_for_words(&root, &config, true)?,
    };
    if rerank {
        engine = engine.with_reranker(&provision(&MS_MARCO_MINILM_L6)?)?;
    }
    let options = SearchOptions {
        ranking: request.ranking(&config),
        filter: request.filter(&engine, &config)?,
        mode: request.mode(&config),
        ..SearchOptions::default()
    };
    let mut embedding_in_background = false;
    match catch_up(&engine, wait, dense) {
        Ok(pending) if pending > 0 && engine.model().is_some() => {
            if background::allowed(&config, no_background) {
                match background::start(&root) {
                    Ok(()) => embedding_in_background = true,
                    Err(error) => eprintln!(
                        "note: could not start embedding in the background ({error}); \
                         `quarry index` embeds the waiting chunks"
                    ),
                }
            }
        }
        Err(error) if error.is_locked() => eprintln!(
            "note: another quarry process is writing this index; answering from its last \
             commit (files changed since are not searched yet)"
        ),
        // Without the model (said when the engine was opened): --wait cannot embed, and an
        // index another model chunked cannot be brought up to date.
        Err(EngineError::NoModel { .. }) => {}
        Err(error @ EngineError::ForeignChunker { .. }) => eprintln!("note: {error}"),
        Err(error) if error.is_unwritable() => eprintln!(
            "note: the index cannot be written ({error}); answering from its last commit \
             (files changed since are not searched)"
        ),
        outcome => drop(outcome?),
    }
    let engine = fresh.ensure_not_empty(engine)?;
    let response = engine.search(&query, &options)?;
    let detail = request.detail(&config);
    let mut out = std::io::stdout().lock();
    if results.json {
        let view = SearchView::new(&query, &response, detail, true);
        writeln!(out, "{}", json(&view))?;
    } else {
        output::print_results(&mut out, &response.results, detail, results.explain)?;
        if results.explain {
            output::print_definitions(&mut out, &response.definitions)?;
        }
        let note = output::coverage_note(response.coverage, embedding_in_background);
        if let Some(note) = note.filter(|_| dense) {
            eprintln!("{note}");
        }
    }
    // The process ends here: the kernel takes the model's and the index's memory back
    // faster than dropping them piece by piece would (milliseconds of a search).
    std::mem::forget(engine);
    Ok(())
}

/// `quarry related`: more like a stored chunk.
fn run_related(args: RelatedArgs) -> Result<()> {
    let RelatedArgs {
        chunk_id,
        include_source_file,
        include_linked,
        min_score,
        results,
    } = args;
    let prefix: ChunkIdPrefix = chunk_id.trim().parse().map_err(|_| {
        anyhow::anyhow!(
            "{} is not a chunk id (8 to 32 hex digits, its start enough when only one chunk's \
             id starts so); `quarry search` prints each result's id last",
            quoted(&chunk_id)
        )
    })?;
    let (root, config) = root_and_config(results.root.root.clone())?;
    let engine = open_existing_engine(&root, &config)?;
    let id = engine.chunk_id(prefix)?;
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
        let view = RelatedView::new(&response, detail, true);
        writeln!(out, "{}", json(&view))?;
    } else {
        let source = &response.source;
        writeln!(
            out,
            "like {}:{}-{} {}\n",
            source.path,
            source.start_line,
            source.end_line,
            source.name.as_deref().unwrap_or(source.kind.name())
        )?;
        output::print_results(&mut out, &response.results, detail, results.explain)?;
    }
    Ok(())
}

/// `quarry status`: health, stale files and drift.
fn run_status(args: StatusArgs) -> Result<()> {
    let (root, config) = root_and_config(args.root.root)?;
    let engine = open_engine_for_words(&root, &config, false)?;
    let threshold = args.threshold.unwrap_or(config.search.drift_threshold);
    let status = match args.deep {
        true => engine.status_deep(threshold)?,
        false => engine.status(threshold)?,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", json(&status))?;
    } else {
        output::print_status(&mut out, &status)?;
    }
    // Damage fails the command, so that a script (or an agent) that checks the index
    // before searching it is told: the first finding, with its repair, is the error.
    match status.damage.as_slice() {
        [] => Ok(()),
        [only] => anyhow::bail!("{only}"),
        [first, rest @ ..] => anyhow::bail!(
            "{first} (and {} more damaged: see the warnings)",
            rest.len()
        ),
    }
}

/// `quarry lib add|list|remove`.
fn run_lib(args: LibArgs) -> Result<()> {
    let (root, config) = root_and_config(args.root.root)?;
    match args.command {
        LibCommand::Add { name, path, force } => {
            let engine = open_engine(&root, &config)?;
            engine.add_library(&name, &path, force)?;
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

/// `quarry model fetch|info`.
fn run_model(command: ModelCommand) -> Result<()> {
    match command {
        ModelCommand::Fetch { rerank } => {
            let mut models = vec![&DEFAULT_MODEL];
            if rerank {
                models.push(&MS_MARCO_MINILM_L6);
            }
            for model in models {
                let dir = provision(model)?;
                println!("{}\t{}\t{:?}", model.name, dir.path.display(), dir.source);
            }
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
        }
    }
    Ok(())
}

/// `quarry mcp`: serve over stdio until the client leaves.
fn run_mcp(args: McpArgs) -> Result<()> {
    let (root, config) = root_and_config(args.root.root)?;
    let model = embedding_model()?;
    let engine_options = EngineOptions {
        // The server keeps the vector index in memory: written after many changes, not each.
        vector_saves: VectorSaves::AfterChanges(quarry_mcp::UNSAVED_VECTORS),
        ..engine_options(&config)?
    };
    let engine =
        Engine::open(&root, &model, engine_options)?.with_vector_cache(config.index.vector_cache());
    let options = ServerOptions {
        max_tokens: args.max_tokens,
        index_on_start: !args.no_index,
        watch: match (args.no_watch, args.poll) {
            (true, _) => WatchMode::Off,
            (false, true) => WatchMode::Poll,
            (false, false) => WatchMode::Events,
        },
        engine: engine_options,
    };
    quarry_mcp::serve_stdio(engine, config, model, options)?;
    Ok(())
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

/// The index directory of a root as a command found it: whether the command is the one that
/// creates it, and so must take it away again if it fails for want of files.
struct IndexDir {
    path: PathBuf,
    fresh: bool,
}

impl IndexDir {
    fn of(root: &Path) -> Self {
        let path = root.join(INDEX_DIR);
        let fresh = !path.exists();
        Self { path, fresh }
    }

    /// `engine`, if its index holds files. An index without files means the wrong directory
    /// or an empty one: say so rather than answer every search with nothing, and leave the
    /// directory as it was.
    fn ensure_not_empty(self, engine: Engine) -> Result<Engine> {
        if engine.store().counts()?.files > 0 {
            return Ok(engine);
        }
        let root = engine.root().to_path_buf();
        drop(engine);
        if self.fresh {
            std::fs::remove_dir_all(&self.path)
                .with_context(|| format!("removing {}", self.path.display()))?;
        }
        anyhow::bail!(
            "{}: no files to index (hidden files and files .gitignore excludes are skipped); \
             give the repository's root",
            root.display()
        )
    }
}

fn root_and_config(root: Option<PathBuf>) -> Result<(PathBuf, Config)> {
    let root = repository_root(root)?;
    let config = Config::load(&root)?;
    Ok((root, config))
}

/// The engine's options from the repository's configuration, with what the environment
/// sets (`QUARRY_BACKEND`, `QUARRY_PRECISION`) over it.
fn engine_options(config: &Config) -> Result<EngineOptions> {
    let embedder = EmbedderOptions {
        precision: config.index.precision,
        ..EmbedderOptions::default()
    };
    Ok(EngineOptions {
        embedder: embedder.with_env()?,
        max_file_bytes: config.index.max_file_bytes,
        ..EngineOptions::default()
    })
}

/// The engine for `root` with the default model, and the machine's vector cache unless
/// the configuration turns it off.
fn open_engine(root: &Path, config: &Config) -> Result<Engine> {
    let model = embedding_model()?;
    Ok(Engine::open(root, &model, engine_options(config)?)?
        .with_vector_cache(config.index.vector_cache()))
}

/// As [`open_engine`], for a command that only reads: no index is an error, and nothing is
/// created.
fn open_existing_engine(root: &Path, config: &Config) -> Result<Engine> {
    let model = embedding_model()?;
    Ok(Engine::open_existing(
        root,
        &model,
        engine_options(config)?,
    )?)
}

/// For work that reads no weights (a search by words, status, `index --lexical-only`):
/// [`open_engine`] (with `create`) or [`open_existing_engine`] where the model's files are
/// here (nothing is downloaded for it), else the engine without them, said once on stderr.
fn open_engine_for_words(root: &Path, config: &Config, create: bool) -> Result<Engine> {
    let options = engine_options(config)?;
    let Some(model) = Provisioner::from_env().find(&DEFAULT_MODEL)? else {
        let engine = Engine::open_without_model(root, &DEFAULT_MODEL, options, create)?;
        eprintln!(
            "note: the embedding model is not here, so nothing is embedded: files are searched \
             by their words, and their chunks wait for vectors (`quarry model fetch` downloads \
             the model, then `quarry index` embeds them)"
        );
        return Ok(engine);
    };
    Ok(match create {
        true => Engine::open(root, &model, options)?,
        false => Engine::open_existing(root, &model, options)?,
    })
}

/// The default embedding model ([`provision`]), for work that needs its vectors. Where it
/// is neither here nor to be downloaded, the error says how to get it, and what works
/// without it.
fn embedding_model() -> Result<ModelDir> {
    provision(&DEFAULT_MODEL).map_err(|error| match error.downcast_ref::<EmbedError>() {
        Some(EmbedError::Unavailable { .. }) => error.context(
            "the embedding model is not here: `quarry model fetch` downloads it (or point \
             QUARRY_MODEL_DIR at a copy); until then `quarry index --lexical-only` and \
             `quarry search --mode lexical` work without it",
        ),
        _ => error,
    })
}

/// `model`, downloaded into the user cache on first use, with a progress bar.
fn provision(model: &KnownModel) -> Result<ModelDir> {
    let bar = progress_bar();
    let shown = bar.clone();
    let model = Provisioner::from_env()
        .on_progress(move |progress| match progress {
            Progress::Started { what, total } => {
                shown.set_message(format!("downloading {what}"));
                shown.set_length(total.unwrap_or(0));
                shown.set_position(0);
            }
            Progress::Advanced { done } => shown.set_position(done),
            Progress::Finished => shown.set_message("downloaded"),
        })
        .resolve(model)
        .with_context(|| format!("providing the model {}", model.name))?;
    bar.finish_and_clear();
    Ok(model)
}
