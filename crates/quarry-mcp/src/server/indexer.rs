//! The background indexer: one index run at a time on one long-lived thread, its progress
//! in [`Indexing`] for `index status` and for searches that wait out the first phase. While
//! another process writes the index, the run waits its turn, retrying with a growing pause
//! for as long as the server runs.
//!
//! The thread lives as long as the server: a watching server starts a run per edit, and a
//! thread per run left the allocator a heap per finished thread, holding the vector index
//! that thread built for the searches (resident memory crept up over a soak).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use quarry_engine::view::IndexReportView;
use quarry_engine::{Engine, EngineError, IndexEvent, IndexReport};
use serde_json::{Value, json};

use super::{Outcome, Shared, message};

/// What the background indexer is doing.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Indexing {
    Idle,
    /// Reading and chunking changed files (`searchable` false: the index's first phase),
    /// then embedding the chunks waiting for vectors.
    Running {
        searchable: bool,
        embedded: usize,
        to_embed: usize,
    },
    /// Another process writes the index: this one waits its turn (retrying until that one
    /// is done), searches answer meanwhile from its last commit.
    WaitingForWriter {
        since: Instant,
    },
    Finished(IndexReportView),
    Failed(String),
}

impl Indexing {
    pub(super) const STARTED: Indexing = Indexing::Running {
        searchable: false,
        embedded: 0,
        to_embed: 0,
    };

    /// Whether an indexer thread is at work (or waiting its turn to write).
    pub(super) fn in_progress(&self) -> bool {
        matches!(
            self,
            Indexing::Running { .. } | Indexing::WaitingForWriter { .. }
        )
    }

    pub(super) fn json(&self) -> Value {
        match self {
            Indexing::Idle => json!({"state": "idle"}),
            Indexing::Running {
                searchable,
                embedded,
                to_embed,
            } => {
                let phase = if *searchable { "vectors" } else { "files" };
                json!({"state": "running", "phase": phase, "chunks_embedded": embedded,
                    "chunks_to_embed": to_embed})
            }
            Indexing::WaitingForWriter { since } => json!({"state": "waiting",
                "waited_s": since.elapsed().as_secs(),
                "note": "another quarry process is writing the index; this server indexes as \
                         soon as it is done (it keeps checking), and searches answer from its \
                         last commit meanwhile"}),
            Indexing::Finished(report) => json!({"state": "finished", "report": report}),
            Indexing::Failed(error) => json!({"state": "failed", "error": error}),
        }
    }
}

/// What an index run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// A new index built beside the live one, then swapped in (`index build` with `force`).
    Rebuild,
    /// Every file of the project and its libraries compared with the index: at start-up and
    /// for `index build`.
    Tree,
    /// The paths the watcher reported ([`quarry_engine::Engine::index_paths`]).
    Changes,
}

/// Starts the indexer on its own thread, unless it is running; a forced run builds a new
/// index beside the live one and swaps it in. Returns the indexing state.
pub(super) fn spawn_indexer(shared: Arc<Shared>, force: bool) -> Value {
    let run = if force { Run::Rebuild } else { Run::Tree };
    let note = match start(&shared, run) {
        Started::Now => "indexing runs in the background; poll index status",
        Started::Queued => {
            "a rebuild is queued: it starts as soon as the run at work ends (index status \
             says rebuild_queued until then); poll index status"
        }
        Started::AlreadyRunning => "indexing is already running; poll index status",
    };
    json!({"indexing": shared.indexing().json(), "note": note})
}

/// What [`start`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Started {
    /// The run started.
    Now,
    /// A forced run asked for while another runs: it starts when that one ends (a forced
    /// rebuild is never dropped, for it may be what picks up an edit).
    Queued,
    /// Another run is at work, and brings the index up to date in this one's stead.
    AlreadyRunning,
}

/// Starts an index run on the indexer's thread, unless one is running: then a rebuild is
/// queued, and so is a whole-tree run while the watcher's changes are applied; the watcher's
/// changes are left to the run at work.
pub(super) fn start(shared: &Arc<Shared>, run: Run) -> Started {
    {
        let mut state = shared.indexing.lock().unwrap_or_else(|p| p.into_inner());
        if state.in_progress() {
            // Under `indexing`'s lock, which the run's end takes to look at them.
            return match run {
                Run::Rebuild => {
                    shared.rebuild_queued.store(true, Ordering::SeqCst);
                    Started::Queued
                }
                Run::Tree
                    if *shared.running.lock().unwrap_or_else(|p| p.into_inner())
                        == Some(Run::Changes) =>
                {
                    shared.tree_queued.store(true, Ordering::SeqCst);
                    Started::Queued
                }
                Run::Tree | Run::Changes => Started::AlreadyRunning,
            };
        }
        *state = Indexing::STARTED;
    }
    send_run(shared, run);
    Started::Now
}

/// Hands a run to the indexer's thread (starting one where there is none).
fn send_run(shared: &Arc<Shared>, run: Run) {
    *shared.running.lock().unwrap_or_else(|p| p.into_inner()) = Some(run);
    let mut runs = shared.runs.lock().unwrap_or_else(|p| p.into_inner());
    let sent = runs.as_ref().map(|runs| runs.send(run));
    if !matches!(sent, Some(Ok(()))) {
        // The first run, or the thread is gone (a run panicked): a thread for this one.
        let (sender, receiver) = channel();
        let weak = Arc::downgrade(shared);
        std::thread::spawn(move || serve_runs(&weak, &receiver));
        sender.send(run).expect("the new indexer thread receives");
        *runs = Some(sender);
    }
}

/// The indexer's thread: each [`Run`] received is one run. It ends with the server, whose
/// [`Shared`] holds the sender.
fn serve_runs(shared: &Weak<Shared>, runs: &Receiver<Run>) {
    while let Ok(run) = runs.recv() {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        run_indexer(&shared, run);
    }
}

/// Whether a forced run waits for the run at work to end.
pub(super) fn rebuild_queued(shared: &Shared) -> bool {
    shared.rebuild_queued.load(Ordering::SeqCst)
}

/// Where [`start`] sends runs to the indexer's thread (None until the first run).
pub(super) type Runs = Mutex<Option<Sender<Run>>>;

/// `index build`: brings the index up to date (on the indexer's thread) and answers once
/// it is. A run already at work (one the watcher started, or a forced rebuild) brings it up
/// to date as well: the answer waits for it, for [`BUILD_WRITER_WAIT`] at most. Waiting for
/// another writer, it answers after that long with the indexer still waiting its turn.
pub(super) fn build(shared: Arc<Shared>) -> Outcome {
    let ours = start(&shared, Run::Tree) == Started::Now;
    let deadline = Instant::now() + BUILD_WRITER_WAIT;
    let mut state = shared.indexing.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let late = Instant::now() >= deadline;
        match &*state {
            state if !state.in_progress() => break,
            Indexing::WaitingForWriter { .. } if late => break,
            _ if late && !ours => break,
            _ => {}
        }
        state = shared
            .indexing_changed
            .wait_timeout(state, Duration::from_millis(250))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    let indexing = state.clone();
    drop(state);
    let mut answer = json!({"indexing": indexing.json(), "coverage": shared.coverage()?});
    match indexing {
        Indexing::WaitingForWriter { .. } => {
            answer["note"] = json!(
                "another quarry process is writing the index: this server indexes as soon as \
                 it is done; poll index status"
            )
        }
        Indexing::Running { .. } => {
            answer["note"] = json!("indexing is still running; poll index status")
        }
        _ => {}
    }
    Ok(answer)
}

/// One try at an index run.
enum Attempt {
    /// Another process holds the index's writer lock.
    Locked,
    Done(Result<IndexReportView, String>),
}

/// Brings the index up to date (with `force`, builds a new one beside it and swaps it in),
/// recording progress in `shared.indexing`: searches wait for the first phase, then run
/// beside the second. While another process writes the index (a CLI search catching up
/// takes a moment; a `quarry index` may take minutes), it reports waiting and tries again
/// after a pause that grows to [`LONGEST_RETRY_PAUSE`], for as long as the server runs,
/// without holding searches up.
fn run_indexer(shared: &Arc<Shared>, run: Run) {
    shared.set_indexing(Indexing::STARTED);
    let mut pause = FIRST_RETRY_PAUSE;
    let mut waiting_since = None;
    let outcome = loop {
        match attempt(shared, run) {
            Attempt::Done(outcome) => break outcome,
            Attempt::Locked => {
                let since = *waiting_since.get_or_insert_with(Instant::now);
                shared.set_indexing(Indexing::WaitingForWriter { since });
                if !shared.pause(pause) {
                    break Err("the server stopped while another process wrote the index".into());
                }
                pause = (pause * 2).min(LONGEST_RETRY_PAUSE);
            }
        }
    };
    let ended = match outcome {
        Ok(report) => Indexing::Finished(report),
        Err(error) => Indexing::Failed(error),
    };
    let queued = {
        let mut state = shared.indexing.lock().unwrap_or_else(|p| p.into_inner());
        let queued = match (
            shared.rebuild_queued.swap(false, Ordering::SeqCst),
            shared.tree_queued.swap(false, Ordering::SeqCst),
        ) {
            (true, _) => Some(Run::Rebuild),
            (false, true) => Some(Run::Tree),
            (false, false) => None,
        };
        *state = match queued {
            Some(_) => Indexing::STARTED,
            None => ended,
        };
        queued
    };
    shared.indexing_changed.notify_all();
    if let Some(run) = queued {
        send_run(shared, run);
    }
    // The refresher starts another run for changes that came too late for this one.
    shared.signal_changes();
}

/// One index run: a forced one builds a new index beside the live one first.
fn attempt(shared: &Shared, run: Run) -> Attempt {
    let outcome = if run == Run::Rebuild {
        rebuild(shared)
    } else {
        match shared.with_engine(|engine| Ok(index_following(shared, engine, run))) {
            Ok(outcome) => outcome,
            Err(error) => return Attempt::Done(Err(error)),
        }
    };
    match outcome {
        Err(error) if error.is_locked() => Attempt::Locked,
        outcome => Attempt::Done(
            outcome
                .map(|report| IndexReportView::new(&report))
                .map_err(message),
        ),
    }
}

/// A forced run: a new index built beside the live one, which searches go on reading
/// meanwhile, then swapped in with the engine over it.
fn rebuild(shared: &Shared) -> Result<IndexReport, EngineError> {
    let rebuild = Engine::rebuild(&shared.root, &shared.model, shared.options.engine)?;
    let cache = (shared.engine.read().unwrap_or_else(|p| p.into_inner()))
        .vector_cache()
        .cloned();
    let rebuild = rebuild.with_vector_cache(cache);
    let report = index_following(shared, rebuild.engine(), Run::Tree)?;
    let engine = rebuild.finish()?;
    *shared.engine.write().unwrap_or_else(|p| p.into_inner()) = engine;
    Ok(report)
}

/// Both phases of an index run into `engine`, their progress in `shared.indexing`: the
/// first over the whole tree or the watcher's changes, as `run` says. The second phase
/// stops between batches when the watcher's changes are due: the first phase applies them
/// (the writer lock let go and taken again, so that the index answers for the files as they
/// are now), then embedding goes on with what is left.
fn index_following(shared: &Shared, engine: &Engine, run: Run) -> Result<IndexReport, EngineError> {
    let started = Instant::now();
    let mut progress = |event: IndexEvent| show(shared, event);
    let mut report = apply_changes(shared, engine, run, &mut progress)?;
    loop {
        let embedded = engine.embed_pending_while(&mut progress, &mut || !shared.changes_due())?;
        let finished = embedded.finished;
        report.add_embedded(embedded);
        if finished {
            break;
        }
        absorb(
            &mut report,
            apply_changes(shared, engine, Run::Changes, &mut progress)?,
        );
    }
    report.chunks_pending = 0;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// The first phase, which applies the changes the watcher counted before it began: over
/// the paths it reported, or over the whole tree for a run of [`Run::Tree`] (and when the
/// watcher could not keep every path).
fn apply_changes(
    shared: &Shared,
    engine: &Engine,
    run: Run,
    progress: &mut dyn FnMut(IndexEvent),
) -> Result<IndexReport, EngineError> {
    let claim = shared.claim_changes();
    let report = match claim.paths().filter(|_| run == Run::Changes) {
        Some(paths) => engine.index_paths(&paths, progress),
        None => engine.index_files(progress),
    };
    shared.settle_claim(claim, report.is_ok());
    report
}

/// Adds a later first phase's work to a run's report.
fn absorb(report: &mut IndexReport, later: IndexReport) {
    report.files_read += later.files_read;
    report.files_removed += later.files_removed;
    report.files_touched += later.files_touched;
    report.files_unchanged = later.files_unchanged;
    report.skipped.extend(later.skipped);
    report.chunks_reused += later.chunks_reused;
    report.warnings.extend(later.warnings);
    report.graph = later.graph.or(report.graph);
    report.git = later.git;
}

/// Records an index run's progress in `shared.indexing`.
fn show(shared: &Shared, event: IndexEvent) {
    match event {
        // The writer lock is taken: a run that waited for it has begun.
        IndexEvent::Changes { .. } => {
            let mut state = shared.indexing.lock().unwrap_or_else(|p| p.into_inner());
            if let Indexing::WaitingForWriter { .. } = *state {
                *state = Indexing::STARTED;
                drop(state);
                shared.indexing_changed.notify_all();
            }
        }
        IndexEvent::Searchable { pending } => shared.set_indexing(Indexing::Running {
            searchable: true,
            embedded: 0,
            to_embed: pending,
        }),
        IndexEvent::Embedded { chunks, total } => shared.set_indexing(Indexing::Running {
            searchable: true,
            embedded: chunks,
            to_embed: total,
        }),
        _ => {}
    }
}

/// The first pause before trying again while another process writes the index.
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// The longest pause between tries: how late, at most, the server starts indexing after
/// another writer is done.
const LONGEST_RETRY_PAUSE: Duration = Duration::from_millis(500);

/// How long `index build` waits for another writer before answering that it waits.
const BUILD_WRITER_WAIT: Duration = Duration::from_secs(30);
