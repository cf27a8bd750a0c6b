//! Following the working tree: a file-system watcher (`notify`: inotify, FSEvents or
//! ReadDirectoryChanges; polling where those are missing or out of watches) counts the
//! changes under the repository and its libraries, and the indexer applies them.
//!
//! A change is applied by the index run's first phase, which walks the tree as every run
//! does (`.gitignore`, hidden files, quarry's own skip rules), so a missed event in a burst
//! is caught with the rest. Changes are batched: a run starts [`QUIET`] after the last
//! event (or at once when a search waits for them, or after [`LONGEST_DELAY`] of events
//! without a pause), so that a `git checkout` of thousands of files is one run. A run at work
//! takes new changes between its batches of vectors: the writer lock is let go, the files
//! are chunked again, and embedding goes on.
//!
//! What is counted, claimed and applied, and what a search waits for, is in `changes.rs`.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::{Event, EventKind, PollWatcher, RecursiveMode, Watcher};

use super::Shared;
use super::changes::{GitState, LONGEST_DELAY, Watch, cookie_number};
use super::indexer::{Run, Started, start};

/// How often the polling fallback looks at the tree.
pub(super) const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Starts following the repository's and its libraries' trees: a watcher counts changes
/// (by events, or `polling`), and a thread of its own starts an index run for each batch.
/// Says once on stderr when it has to poll, or cannot watch at all.
pub(super) fn follow(shared: &Arc<Shared>, roots: Vec<PathBuf>, polling: bool) {
    let roots = outermost(roots);
    let watcher = match polling {
        true => poll(shared, &roots, "asked for (--poll)".into()),
        false => match watch_events(shared, &roots) {
            Ok(watcher) => Ok((watcher, Watch::Events)),
            Err(why) => poll(shared, &roots, why),
        },
    };
    let watch = match watcher {
        Ok((watcher, watch)) => {
            *shared.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watcher);
            watch
        }
        Err(why) => {
            eprintln!("quarry mcp: not following the working tree: {why}");
            Watch::Failed(why)
        }
    };
    {
        let git = GitState::of(&shared.root);
        let mut changes = shared.changes();
        changes.watch = watch;
        changes.roots = roots;
        // Changes before the watch are the start-up index run's (or `--no-index`'s) to take.
        changes.git_claimed = git;
    }
    let shared = Arc::clone(shared);
    std::thread::spawn(move || refresh(&shared));
}

/// `roots` without those inside another: a recursive watch covers them.
fn outermost(mut roots: Vec<PathBuf>) -> Vec<PathBuf> {
    roots.sort();
    roots.dedup();
    let all = roots.clone();
    roots.retain(|root| {
        !all.iter()
            .any(|other| other != root && root.starts_with(other))
    });
    roots
}

/// A watcher on the operating system's events over `roots`, or why there is none.
fn watch_events(
    shared: &Arc<Shared>,
    roots: &[PathBuf],
) -> Result<Box<dyn Watcher + Send>, String> {
    let mut watcher = notify::recommended_watcher(handler(shared, roots))
        .map_err(|e| format!("could not start ({e})"))?;
    for root in roots {
        watcher
            .watch(root, RecursiveMode::Recursive)
            .map_err(|e| format!("could not watch {} ({e})", root.display()))?;
    }
    Ok(Box::new(watcher))
}

/// The polling fallback over `roots`, taken because of `why`; said once on stderr.
fn poll(
    shared: &Arc<Shared>,
    roots: &[PathBuf],
    why: String,
) -> Result<(Box<dyn Watcher + Send>, Watch), String> {
    let config = notify::Config::default().with_poll_interval(POLL_INTERVAL);
    let mut watcher =
        PollWatcher::new(handler(shared, roots), config).map_err(|e| e.to_string())?;
    for root in roots {
        watcher
            .watch(root, RecursiveMode::Recursive)
            .map_err(|e| format!("{}: {e}", root.display()))?;
    }
    eprintln!(
        "quarry mcp: following the tree by looking at it every {} s: file-system events {why}",
        POLL_INTERVAL.as_secs()
    );
    Ok((Box::new(watcher), Watch::Polling { why }))
}

/// What the watcher calls with each event: counts the ones about files an index run may
/// read. It holds the server weakly: the watcher lives in it.
fn handler(
    shared: &Arc<Shared>,
    roots: &[PathBuf],
) -> impl FnMut(notify::Result<Event>) + Send + 'static {
    let shared: Weak<Shared> = Arc::downgrade(shared);
    let roots = roots.to_vec();
    move |event: notify::Result<Event>| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let paths = match event {
            Ok(event) if event.need_rescan() => roots.clone(),
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => return,
            Ok(event) => {
                if matches!(event.kind, EventKind::Create(_)) {
                    let cookies: Vec<u64> = event
                        .paths
                        .iter()
                        .filter_map(|p| cookie_number(p))
                        .collect();
                    if !cookies.is_empty() {
                        let mut changes = shared.changes();
                        cookies.into_iter().for_each(|n| changes.cookie_seen(n));
                        drop(changes);
                        shared.changes_signal.notify_all();
                        return;
                    }
                }
                let paths: Vec<PathBuf> = event
                    .paths
                    .into_iter()
                    .filter(|path| relevant(&roots, path))
                    .collect();
                if paths.is_empty() {
                    return;
                }
                paths
            }
            Err(error) => {
                if let notify::ErrorKind::MaxFilesWatch = error.kind {
                    let why = format!("ran out of watches ({error})");
                    shared.changes().fall_back.get_or_insert(why);
                }
                // Whatever went wrong, the next first phase walks the whole tree.
                roots.clone()
            }
        };
        shared.changes().note(paths);
        shared.changes_signal.notify_all();
    }
}

/// Whether a change at `path` may matter to an index run: not inside a hidden directory
/// (`.git`, quarry's own `.quarry`) nor a hidden file, which the walk skips, except the
/// ignore files that decide what it reads.
fn relevant(roots: &[PathBuf], path: &Path) -> bool {
    let Some(relative) = roots.iter().find_map(|root| path.strip_prefix(root).ok()) else {
        return false;
    };
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let Some((last, parents)) = names.split_last() else {
        // The root itself: removed or moved.
        return true;
    };
    let hidden = |name: &std::ffi::OsStr| name.to_string_lossy().starts_with('.');
    if parents.iter().any(|name| hidden(name)) {
        return false;
    }
    !hidden(last) || *last == ".gitignore" || *last == ".ignore"
}

/// The refresher: waits for a batch of changes to be due, then starts an index run; while
/// one is at work, that run takes the changes between its batches, or this starts another
/// once it ends. Ends when the server stops.
fn refresh(shared: &Arc<Shared>) {
    loop {
        let mut changes = shared.changes();
        loop {
            if shared.stopped.load(Ordering::SeqCst) {
                return;
            }
            if let Some(why) = changes.fall_back.take() {
                drop(changes);
                fall_back(shared, why);
                changes = shared.changes();
                continue;
            }
            changes = match changes.due_in() {
                None => shared
                    .changes_signal
                    .wait(changes)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(wait) if wait.is_zero() => break,
                Some(wait) => {
                    shared
                        .changes_signal
                        .wait_timeout(changes, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
        drop(changes);
        if start(shared, Run::Changes) == Started::Now {
            // The run claims the changes as it begins.
            let changes = shared.changes();
            let _ = shared
                .changes_signal
                .wait_timeout_while(changes, LONGEST_DELAY, |c| c.unclaimed())
                .unwrap_or_else(|p| p.into_inner());
            continue;
        }
        // A run is at work: it takes the changes between batches, or signals as it ends.
        let changes = shared.changes();
        let _ = shared
            .changes_signal
            .wait_timeout_while(changes, LONGEST_DELAY, |c| {
                c.unclaimed() && shared.indexing().in_progress()
            })
            .unwrap_or_else(|p| p.into_inner());
    }
}

/// Replaces the event watcher, out of watches, by polling.
fn fall_back(shared: &Arc<Shared>, why: String) {
    let roots = shared.changes().roots.clone();
    let watch = match poll(shared, &roots, why) {
        Ok((watcher, watch)) => {
            *shared.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watcher);
            watch
        }
        Err(why) => {
            eprintln!("quarry mcp: no longer following the working tree: {why}");
            Watch::Failed(why)
        }
    };
    let mut changes = shared.changes();
    changes.watch = watch;
    changes.note(roots.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths_are_not_changes_but_ignore_files_are() {
        let roots = [PathBuf::from("/repo"), PathBuf::from("/libs/tokio")];
        let relevant = |path: &str| relevant(&roots, Path::new(path));
        assert!(relevant("/repo/src/lib.rs"));
        assert!(relevant("/repo"), "the root itself going away");
        assert!(relevant("/libs/tokio/src/time.rs"));
        assert!(relevant("/repo/.gitignore"));
        assert!(relevant("/repo/src/.ignore"));
        assert!(!relevant("/repo/.quarry/index.redb"));
        assert!(!relevant("/repo/.git/index"));
        assert!(!relevant("/repo/src/.hidden.rs"));
        assert!(!relevant("/repo/.venv/lib/site.py"));
        assert!(!relevant("/elsewhere/file.rs"));
    }

    #[test]
    fn libraries_inside_the_root_are_not_watched_twice() {
        let roots = outermost(vec![
            PathBuf::from("/repo"),
            PathBuf::from("/repo/vendor/lib"),
            PathBuf::from("/libs/a"),
        ]);
        assert_eq!(roots, [PathBuf::from("/libs/a"), PathBuf::from("/repo")]);
    }
}
