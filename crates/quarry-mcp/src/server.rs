//! The server: tools over a shared engine, a background indexer, and paging under a token
//! budget.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

use quarry_engine::model::ModelDir;
use quarry_engine::view::{RelatedView, SearchView, StatusView, json};
use quarry_engine::{
    ChunkId, Config, Coverage, Engine, EngineError, EngineOptions, RelatedOptions, SearchOptions,
    quoted,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, CustomRequest, CustomResult, Implementation, JsonObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::McpError;
use crate::stdio;
use arguments::{input_schema, output_schema, parse};
use paging::Cursors;

mod arguments;
mod calls;
mod changes;
mod indexer;
mod paging;
mod protocol;
mod watch;

use crate::args::{
    IndexAction, IndexArgs, RelatedArgs, ResultArgs, SearchArgs, SimilarArgs, Similarity,
    SimilarityArgs,
};
use changes::Changes;
use indexer::{Indexing, build, spawn_indexer};

/// How the server runs.
#[derive(Debug, Clone, Copy)]
pub struct ServerOptions {
    /// The most a response may hold, in tokens (estimated at four bytes a token): 8,000
    /// by default, well under what MCP clients accept from one tool call.
    pub max_tokens: usize,
    /// Bring the index up to date in the background when the server starts.
    pub index_on_start: bool,
    /// How the server follows the working tree: it indexes the files changed while it
    /// runs, and answers each search only once the changes made before it are in.
    pub watch: WatchMode,
    /// How a forced rebuild opens its engine.
    pub engine: EngineOptions,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_tokens: 8000,
            index_on_start: true,
            watch: WatchMode::Events,
            engine: EngineOptions::default(),
        }
    }
}

struct Shared {
    /// The searches (`semantic_search`, `get_related`, `find_similar`) running and waiting.
    searches: calls::Calls,
    /// The `index` calls running and waiting: workers of their own, so that a build waiting
    /// for its run never holds up a search.
    index_calls: calls::Calls,
    /// Written only for the moment a forced rebuild's engine replaces it.
    engine: RwLock<Engine>,
    /// The repository root.
    root: PathBuf,
    config: Config,
    model: ModelDir,
    options: ServerOptions,
    indexing: Mutex<Indexing>,
    /// A forced rebuild asked for while a run was at work, started when that run ends (set
    /// and taken under `indexing`'s lock).
    rebuild_queued: AtomicBool,
    /// A whole-tree run asked for (`index build`) while a run of the watcher's changes was
    /// at work: it starts when that one ends.
    tree_queued: AtomicBool,
    /// The indexer's thread, which runs one index run at a time.
    runs: indexer::Runs,
    /// What the last run handed to the indexer's thread covers.
    running: Mutex<Option<indexer::Run>>,
    /// Signalled whenever `indexing` changes, and when the server stops.
    indexing_changed: Condvar,
    /// What the watcher counted and the indexer applied.
    changes: Mutex<Changes>,
    /// Signalled when changes are counted or applied, when an index run ends, and when the
    /// server stops.
    changes_signal: Condvar,
    /// The file-system watcher, while the server follows the tree.
    watcher: Mutex<Option<Box<dyn notify::Watcher + Send>>>,
    /// Set (under `indexing`'s lock) when the server is dropped: an indexer waiting for
    /// another writer gives up.
    stopped: AtomicBool,
    /// The pages' cursors: what each names.
    cursors: Cursors,
}

/// How the server learns that files changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WatchMode {
    /// The operating system's file-system events (inotify, FSEvents, ReadDirectoryChanges),
    /// falling back to polling where they cannot be had.
    #[default]
    Events,
    /// Looking at the tree every 2 s: for file systems whose events do not arrive (a
    /// network mount changed from another machine).
    Poll,
    /// Not at all: changes are indexed by the `index` tool's build.
    Off,
}

/// quarry's MCP server for one repository.
pub struct Server {
    shared: Arc<Shared>,
    tool_router: ToolRouter<Self>,
}

const INSTRUCTIONS: &str = "quarry searches this repository's code by meaning. Use \
semantic_search to find where something is implemented or handled (a question in plain words, \
or an identifier); get_related or find_similar for code like a given chunk or line; index to \
see whether the index is current or to update it. Results give path, 1-based lines and a \
chunk_id; read the file there for more context. Pages: pass next_cursor back as cursor (no \
chunk comes twice, even when files are indexed between pages).";

/// Which workers run a tool's calls.
#[derive(Debug, Clone, Copy)]
enum Pool {
    Searches,
    Index,
}

/// A tool's outcome: a JSON value, or a message for the agent to act on.
type Outcome = Result<Value, String>;

#[tool_router]
impl Server {
    /// A server over `engine`, answering with `config`'s defaults; `model` is what a
    /// forced rebuild loads.
    pub fn new(engine: Engine, config: Config, model: ModelDir, options: ServerOptions) -> Self {
        Server {
            shared: Arc::new(Shared {
                searches: calls::Calls::new(
                    calls::Calls::search_workers(),
                    calls::MAX_QUEUED_CALLS,
                ),
                index_calls: calls::Calls::new(calls::INDEX_WORKERS, calls::MAX_QUEUED_CALLS),
                root: engine.root().to_path_buf(),
                engine: RwLock::new(engine),
                config,
                model,
                options,
                indexing: Mutex::new(Indexing::Idle),
                rebuild_queued: AtomicBool::new(false),
                tree_queued: AtomicBool::new(false),
                runs: Mutex::default(),
                running: Mutex::default(),
                indexing_changed: Condvar::new(),
                changes: Mutex::default(),
                changes_signal: Condvar::new(),
                watcher: Mutex::new(None),
                stopped: AtomicBool::new(false),
                cursors: Cursors::default(),
            }),
            tool_router: Self::tool_router(),
        }
    }

    /// The tools, as `tools/list` gives them.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }

    /// Starts bringing the index up to date on a thread of its own (unless one is running).
    pub fn index_in_background(&self) {
        spawn_indexer(Arc::clone(&self.shared), false);
    }

    /// Starts following the working tree (the repository and its registered libraries):
    /// files changed from now on are indexed in the background, and each search first
    /// waits for the changes made before it. Said on stderr when the tree can only be
    /// polled, or not watched at all.
    pub fn follow_tree(&self, mode: WatchMode) -> Result<(), McpError> {
        if mode == WatchMode::Off {
            return Ok(());
        }
        let roots = self
            .shared
            .with_engine(|engine| engine.source_roots().map_err(message))
            .map_err(McpError::Watch)?;
        watch::follow(&self.shared, roots, mode == WatchMode::Poll);
        Ok(())
    }

    #[tool(
        name = "semantic_search",
        input_schema = input_schema::<SearchArgs>(),
        output_schema = output_schema::<SearchView>(),
        description = "Find the code in this repository that does something: where a feature \
        is implemented, where an error is handled, how a concept is done. Give a question or \
        description in plain words (\"where are failed requests retried with backoff\") or an \
        identifier (\"parse_config\"); mode \"lexical\" matches keywords exactly. Returns \
        ranked chunks (functions, classes, sections) with path, 1-based lines, score and \
        chunk_id; filter by path globs, languages or scope; page with next_cursor."
    )]
    async fn semantic_search(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.call(arguments, move |shared, args: SearchArgs| {
            shared.search(&args)
        })
        .await
    }

    #[tool(
        name = "get_related",
        input_schema = input_schema::<RelatedArgs>(),
        output_schema = output_schema::<RelatedView>(),
        description = "Find code similar to a chunk from an earlier result (by its chunk_id): \
        other implementations of the same idea, callers' patterns, duplicated logic. Other \
        files only unless include_source_file; include_linked adds files connected to it by \
        imports. Needs no query."
    )]
    async fn get_related(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.call(arguments, move |shared, args: RelatedArgs| {
            let id: ChunkId = args.chunk_id.trim().parse().map_err(|_| {
                format!(
                    "{} is not a chunk id (32 hex digits): use the chunk_id of a \
                     semantic_search result, or find_similar with a path and line",
                    quoted(&args.chunk_id)
                )
            })?;
            shared.related(id, &args)
        })
        .await
    }

    #[tool(
        name = "find_similar",
        input_schema = input_schema::<SimilarArgs>(),
        output_schema = output_schema::<RelatedView>(),
        description = "Find code similar to the code at a file and line (the function or \
        section covering that line): like get_related, starting from a location instead of a \
        chunk_id. Paths are repository-relative, as results show them."
    )]
    async fn find_similar(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.call(arguments, move |shared, args: SimilarArgs| {
            let id = shared.chunk_at(&args.path, args.line)?;
            shared.related(id, &args)
        })
        .await
    }

    #[tool(
        name = "index",
        input_schema = input_schema::<IndexArgs>(),
        description = "The search index: action \"status\" (default) reports files and chunks \
        indexed, the model and backend, files changed since indexing, drift, and indexing in \
        progress; action \"build\" brings it up to date (only changed files are read again; \
        force rebuilds everything in the background)."
    )]
    async fn index(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.call_on(
            Pool::Index,
            arguments,
            move |shared, args: IndexArgs| match args.action.unwrap_or_default() {
                IndexAction::Status => shared.status(),
                IndexAction::Build if args.force == Some(true) => Ok(spawn_indexer(shared, true)),
                IndexAction::Build => build(shared),
            },
        )
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// A request rmcp could not read as any it knows: a method it serves whose params do
    /// not fit (a `tools/call` without `name`) is invalid params, naming what is wrong;
    /// any other method is not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let tools: Vec<String> = self.tools().iter().map(|t| t.name.to_string()).collect();
        Err(protocol::unreadable_request(
            &request.method,
            request.params.as_ref(),
            &tools,
        ))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Held while `stopped` is set: a thread waiting on `indexing` sees it when it wakes.
        let state = self
            .shared
            .indexing
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.indexing_changed.notify_all();
        drop(state);
        self.shared.signal_changes();
        self.shared
            .watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }
}

impl Server {
    /// A search: [`Server::call_on`] the searches' workers.
    async fn call<Args: DeserializeOwned + JsonSchema + Send + 'static>(
        &self,
        arguments: JsonObject,
        work: impl FnOnce(Arc<Shared>, Args) -> Outcome + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_on(Pool::Searches, arguments, work).await
    }

    /// Parses `arguments` as `Args`, then runs `work` on a blocking thread once one of
    /// `pool`'s workers is free ([`calls`]; busy past the queue's bound); a parse error, a
    /// busy server or `work`'s error becomes a tool error the agent can act on.
    async fn call_on<Args: DeserializeOwned + JsonSchema + Send + 'static>(
        &self,
        pool: Pool,
        arguments: JsonObject,
        work: impl FnOnce(Arc<Shared>, Args) -> Outcome + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let args = match parse::<Args>(arguments) {
            Ok(args) => args,
            Err(message) => return Ok(CallToolResult::error(vec![ContentBlock::text(message)])),
        };
        let calls = match pool {
            Pool::Searches => &self.shared.searches,
            Pool::Index => &self.shared.index_calls,
        };
        let worker = match calls.admit().await {
            Ok(worker) => worker,
            Err(busy) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    busy.message(),
                )]));
            }
        };
        let shared = Arc::clone(&self.shared);
        let outcome = tokio::task::spawn_blocking(move || {
            let _worker = worker;
            work(shared, args)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("the tool failed: {e}"), None))?;
        Ok(match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        })
    }
}

impl Shared {
    /// Runs `work` on the engine (waiting out a forced rebuild's swap), its index opened
    /// again first where another process's rebuild replaced it.
    fn with_engine<T>(&self, work: impl FnOnce(&Engine) -> Result<T, String>) -> Result<T, String> {
        let engine = self.engine.read().unwrap_or_else(|p| p.into_inner());
        engine.reopen_if_replaced().map_err(message)?;
        work(&engine)
    }

    fn search(&self, args: &SearchArgs) -> Outcome {
        if args.query.trim().is_empty() {
            return Err(
                "the query is empty: describe the code to find, or give an identifier".into(),
            );
        }
        let ask = args.page()?;
        let request = args.request(args.mode);
        self.paged(&request, &ask, |engine, ranking| {
            let options = SearchOptions {
                ranking,
                filter: request.filter(engine, &self.config)?,
                mode: request.mode(&self.config),
                ..SearchOptions::default()
            };
            let response = engine.search(&args.query, &options)?;
            let detail = request.detail(&self.config);
            Ok(SearchView::new(
                &args.query,
                &response,
                detail,
                args.explain(),
            ))
        })
    }

    fn related(&self, id: ChunkId, args: &(impl ResultArgs + SimilarityArgs)) -> Outcome {
        let Similarity {
            min_score,
            include_linked,
            include_source_file,
        } = args.similarity();
        let ask = args.page()?;
        let request = args.request(None);
        self.paged(&request, &ask, |engine, ranking| {
            let options = RelatedOptions {
                ranking,
                filter: request.filter(engine, &self.config)?,
                include_source_file: include_source_file.unwrap_or(false),
                include_linked: include_linked.unwrap_or(false),
                min_score: min_score.unwrap_or(0.0),
            };
            let response = engine.related(id, &options)?;
            let detail = request.detail(&self.config);
            Ok(RelatedView::new(&response, detail, args.explain()))
        })
    }

    /// The chunk covering `line` of `path` (the narrowest, where windows overlap).
    fn chunk_at(&self, path: &str, line: usize) -> Result<ChunkId, String> {
        // Lines move with every edit: read them as they are now.
        self.await_fresh()?;
        self.with_engine(|engine| {
            let store = engine.store();
            let Some(file) = store.file(path).map_err(message)? else {
                return Err(format!(
                    "{} is not in the index: give a repository-relative path as results \
                     show them (\"src/lib.rs\"); a new file is indexed by index build",
                    quoted(path)
                ));
            };
            let snapshot = store.snapshot().map_err(message)?;
            let mut covering = Vec::new();
            let mut span = (usize::MAX, 0);
            for id in &file.chunk_ids {
                if let Some(chunk) = snapshot.chunk(ChunkId(*id)).map_err(message)? {
                    span = (span.0.min(chunk.start_line), span.1.max(chunk.end_line));
                    if (chunk.start_line..=chunk.end_line).contains(&line) {
                        covering.push((chunk.end_line - chunk.start_line, chunk.id));
                    }
                }
            }
            match covering.into_iter().min() {
                Some((_, id)) => Ok(ChunkId(id)),
                None if file.chunk_ids.is_empty() => Err(format!(
                    "{} is indexed without chunks (it was skipped: binary, generated or too large)",
                    quoted(path)
                )),
                None => Err(format!(
                    "no chunk of {} covers line {line}; its chunks span lines {}-{}",
                    quoted(path),
                    span.0,
                    span.1
                )),
            }
        })
    }

    fn status(&self) -> Outcome {
        let mut indexing = self.indexing().json();
        if indexer::rebuild_queued(self) {
            indexing["rebuild_queued"] = Value::Bool(true);
        }
        let watch = self.watch_json();
        self.root_present()?;
        self.with_engine(|engine| {
            let status = engine
                .status(self.config.search.drift_threshold)
                .map_err(message)?;
            Ok(json(&StatusWithIndexing {
                status,
                indexing,
                watch,
            }))
        })
    }

    fn indexing(&self) -> Indexing {
        self.indexing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_indexing(&self, state: Indexing) {
        *self.indexing.lock().unwrap_or_else(|p| p.into_inner()) = state;
        self.indexing_changed.notify_all();
    }

    /// Waits while the indexer reads and chunks changed files (the first phase, seconds at
    /// most on a large repository), so that a search at start-up sees every file; after
    /// [`SEARCHABLE_WAIT`] it answers from what is committed.
    fn wait_until_searchable(&self) {
        let guard = self.indexing.lock().unwrap_or_else(|p| p.into_inner());
        let reading = |state: &mut Indexing| {
            matches!(
                state,
                Indexing::Running {
                    searchable: false,
                    ..
                }
            )
        };
        let _ = self
            .indexing_changed
            .wait_timeout_while(guard, SEARCHABLE_WAIT, reading)
            .unwrap_or_else(|p| p.into_inner());
    }

    /// Why results answered now may be incomplete, if they may be: the index is being
    /// brought up to date, nothing is indexed yet, another process writes it, or chunks
    /// wait for their vectors.
    fn partial(&self, coverage: Coverage) -> Option<String> {
        let empty = coverage.chunks == 0;
        match self.indexing() {
            Indexing::Running {
                searchable: false, ..
            } => {
                return Some(
                    "the index is being brought up to date: these results cover the files \
                     indexed so far"
                        .into(),
                );
            }
            Indexing::WaitingForWriter { .. } if empty => {
                return Some(
                    "nothing is indexed yet: another quarry process is writing the index (a \
                     `quarry index` or a search catching up), and this server indexes the \
                     repository as soon as it is done; search again then (index status says \
                     when)"
                        .into(),
                );
            }
            Indexing::WaitingForWriter { .. } => {
                return Some(
                    "another quarry process is writing the index: these results are from its \
                     last commit, and this server brings the index up to date as soon as it \
                     is done (index status says when)"
                        .into(),
                );
            }
            Indexing::Idle if empty => {
                return Some("nothing is indexed yet: call index with action build".into());
            }
            Indexing::Failed(error) if empty => {
                return Some(format!(
                    "nothing is indexed: the index run failed ({error}); call index with \
                     action build once that is fixed"
                ));
            }
            _ => {}
        }
        if let Some(files) = self.files_waiting() {
            return Some(format!(
                "{files} changed files are not in these results yet: another quarry process \
                 is writing the index, and this server indexes them as soon as it is done \
                 (index status says when)"
            ));
        }
        (coverage.pending() > 0).then(|| {
            format!(
                "{} of {} chunks wait for their vectors (index status shows the progress): \
                 these are found by their words alone until then",
                coverage.pending(),
                coverage.chunks
            )
        })
    }

    /// Sleeps for `time`, or less if the server stops; whether it still runs.
    fn pause(&self, time: Duration) -> bool {
        let state = self.indexing.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self
            .indexing_changed
            .wait_timeout_while(state, time, |_| !self.stopped.load(Ordering::SeqCst))
            .unwrap_or_else(|p| p.into_inner());
        !self.stopped.load(Ordering::SeqCst)
    }

    /// How much of the index has its vectors.
    fn coverage(&self) -> Result<Coverage, String> {
        self.with_engine(|engine| Ok(Coverage::of(engine.store().counts().map_err(message)?)))
    }
}

/// `index status`: the index's health and what the background indexer is doing.
#[derive(Serialize)]
struct StatusWithIndexing {
    #[serde(flatten)]
    status: StatusView,
    indexing: Value,
    /// Whether the server follows the working tree, what waits, and when a change was last
    /// applied.
    watch: Value,
}

/// How long a search waits for the indexer's first phase before answering anyway.
const SEARCHABLE_WAIT: Duration = Duration::from_secs(60);

fn message(error: impl Into<EngineError>) -> String {
    error.into().to_string()
}

/// Serves `engine` over stdin and stdout until the client disconnects, indexing in the
/// background first (unless `options` say not to).
pub fn serve_stdio(
    engine: Engine,
    config: Config,
    model: ModelDir,
    options: ServerOptions,
) -> Result<(), McpError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        // Tool calls take at most one blocking thread per worker; stdin and stdout one each.
        .max_blocking_threads(calls::Calls::search_workers() + calls::INDEX_WORKERS + 2)
        // An idle call thread ends after a second, not tokio's ten, and gives its memory back
        // with it (after a burst, resident memory stayed at its peak for those ten seconds).
        .thread_keep_alive(CALL_THREAD_KEEP_ALIVE)
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    let server = Server::new(engine, config, model, options);
    server.follow_tree(options.watch)?;
    if options.index_on_start {
        server.index_in_background();
    }
    let outcome = runtime.block_on(async move {
        let stdio = stdio::transport(tokio::io::stdin(), tokio::io::stdout());
        let (reader, writer) = (stdio.reader, stdio.writer);
        let service = server
            .serve((stdio.input, stdio.output))
            .await
            .map_err(|e| McpError::Handshake(e.to_string()));
        let outcome = match service {
            Ok(service) => service
                .waiting()
                .await
                .map(drop)
                .map_err(|e| McpError::Connection(e.to_string())),
            Err(error) => Err(error),
        };
        // The input has ended, or rmcp stopped reading it; either way, every answer still
        // to write is written before the server returns.
        reader.abort();
        let _ = tokio::time::timeout(OUTPUT_DRAIN, writer).await;
        outcome
    });
    // Not waiting for a read of stdin that may never return (the client keeps it open).
    runtime.shutdown_background();
    outcome
}

/// How long a call's thread waits for the next call before it ends.
const CALL_THREAD_KEEP_ALIVE: Duration = Duration::from_secs(1);

/// How long the server, stopping, waits for its last answers to be written.
const OUTPUT_DRAIN: Duration = Duration::from_secs(5);
