//! The background indexer: one index run at a time on a thread of its own, its progress in
//! [`Indexing`] for `index status` and for searches that wait out the first phase.

use std::sync::Arc;

use quarry_engine::view::IndexReportView;
use quarry_engine::{Engine, IndexEvent};
use serde_json::{Value, json};

use super::{Shared, message};

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
    /// Another process writes the index: this one waits its turn, searches answer meanwhile.
    WaitingForWriter,
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
        matches!(self, Indexing::Running { .. } | Indexing::WaitingForWriter)
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
            Indexing::WaitingForWriter => json!({"state": "waiting",
                "note": "another quarry process is writing the index; searches answer from \
                         its last commit meanwhile"}),
            Indexing::Finished(report) => json!({"state": "finished", "report": report}),
            Indexing::Failed(error) => json!({"state": "failed", "error": error}),
        }
    }
}

/// Starts the indexer on its own thread, unless it is running; a forced run first replaces
/// the index with an empty one. Returns the indexing state.
pub(super) fn spawn_indexer(shared: Arc<Shared>, force: bool) -> Value {
    {
        let mut state = shared.indexing.lock().unwrap_or_else(|p| p.into_inner());
        if state.in_progress() {
            return json!({"indexing": state.json(), "note": "indexing is already running; poll index status"});
        }
        *state = Indexing::STARTED;
    }
    let thread_shared = Arc::clone(&shared);
    std::thread::spawn(move || {
        if force && let Err(error) = rebuild(&thread_shared) {
            thread_shared.set_indexing(Indexing::Failed(error));
            return;
        }
        run_indexer(&thread_shared);
    });
    json!({"indexing": shared.indexing().json(),
        "note": "indexing runs in the background; poll index status"})
}

/// Replaces the engine with one over an empty index.
fn rebuild(shared: &Shared) -> Result<(), String> {
    let mut guard = shared.engine.write().unwrap_or_else(|p| p.into_inner());
    let root = match guard.take() {
        Some(engine) => engine.root().to_path_buf(),
        None => return Err("no engine to rebuild".into()),
    };
    let engine = Engine::rebuild(&root, &shared.model, shared.options.engine).map_err(message)?;
    *guard = Some(engine);
    Ok(())
}

/// Brings the index up to date, recording progress in `shared.indexing`: searches wait
/// for the first phase, then run beside the second. While another process writes the index
/// (a CLI search catching up takes a moment; a `quarry index` may take minutes), it waits
/// up to [`WRITER_WAIT`] without holding searches up, then gives up with a message.
pub(super) fn run_indexer(shared: &Shared) {
    shared.set_indexing(Indexing::STARTED);
    let deadline = std::time::Instant::now() + WRITER_WAIT;
    let outcome = loop {
        let outcome = shared.with_engine(|engine| {
            Ok(engine.index(&mut |event| match event {
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
            }))
        });
        match outcome {
            Ok(Err(error)) if error.is_locked() && std::time::Instant::now() < deadline => {
                shared.set_indexing(Indexing::WaitingForWriter);
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Ok(Err(error)) if error.is_locked() => {
                break Err(format!(
                    "{error} (waited {} s); searches answer from its last commit meanwhile; \
                     call index build again once it is done",
                    WRITER_WAIT.as_secs()
                ));
            }
            Ok(result) => {
                break result
                    .map(|report| IndexReportView::new(&report))
                    .map_err(message);
            }
            Err(error) => break Err(error),
        }
    };
    shared.set_indexing(match outcome {
        Ok(report) => Indexing::Finished(report),
        Err(error) => Indexing::Failed(error),
    });
}

/// How long the indexer waits for another process to stop writing the index.
const WRITER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
