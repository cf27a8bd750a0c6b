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

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use notify::{Event, EventKind, PollWatcher, RecursiveMode, Watcher};
use quarry_engine::{INDEX_DIR, LIBRARIES_FILE};

use super::Shared;
use super::changes::{
    GitState, LONGEST_DELAY, POLL_INTERVAL, Watch, cookie_number, is_ignore_file,
};
use super::indexer::{Run, Started, start};

/// Whether the event watcher follows each directory on its own, as inotify does (and the
/// polling fallback, always): then an ignored directory gets no watch. FSEvents and
/// ReadDirectoryChangesW follow a whole tree at no cost per directory; there, events under
/// an ignored directory are dropped as they come.
const EVENTS_PER_DIRECTORY: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// Starts following the repository's and its libraries' trees: a watcher counts changes
/// (by events, or `polling`) in every directory an index run walks (not the ignored ones),
/// and a thread of its own starts an index run for each batch. Says once on stderr when it
/// has to poll, or cannot watch at all.
pub(super) fn follow(shared: &Arc<Shared>, roots: Vec<PathBuf>, polling: bool) {
    let roots = outermost(roots);
    let dirs = directories(&shared.root, &roots, &roots);
    {
        // Before the watcher starts: its first events are weighed against them.
        let mut changes = shared.changes();
        changes.roots = roots.clone();
        changes.followed = dirs.iter().cloned().collect();
    }
    let watcher = match polling {
        true => poll(shared, &dirs, "asked for (--poll)".into()),
        false => match watch_events(shared, &roots, &dirs) {
            Ok(watcher) => Ok((watcher, Watch::Events)),
            Err(why) => poll(shared, &dirs, why),
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

/// The directories to follow at or under `under` (each inside one of `roots`): those an
/// index run's walk enters, by the same rules (`.gitignore`, hidden ones skipped), with the
/// project's index directory, where the libraries file and the searches' cookies are.
fn directories(project: &Path, roots: &[PathBuf], under: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in roots {
        let walked = match quarry_changes::relative_paths(root, under) {
            None => quarry_changes::walk(root).inspect(|_| {
                dirs.push(root.clone());
                let index = project.join(INDEX_DIR);
                if root == project && index.is_dir() {
                    dirs.push(index);
                }
            }),
            Some(inside) if inside.is_empty() => continue,
            Some(inside) => quarry_changes::walk_paths(root, &inside),
        };
        // Gone since: the run that looks at it says so.
        if let Ok(walked) = walked {
            dirs.extend(walked.directories.iter().map(|dir| root.join(dir)));
        }
    }
    dirs
}

/// A watcher on the operating system's events over `roots` (each of `dirs` on its own
/// where the system watches per directory), or why there is none.
fn watch_events(
    shared: &Arc<Shared>,
    roots: &[PathBuf],
    dirs: &[PathBuf],
) -> Result<Box<dyn Watcher + Send>, String> {
    let mut watcher = notify::recommended_watcher(handler(shared))
        .map_err(|e| format!("could not start ({e})"))?;
    let (watched, mode) = match EVENTS_PER_DIRECTORY {
        true => (dirs, RecursiveMode::NonRecursive),
        false => (roots, RecursiveMode::Recursive),
    };
    for dir in watched {
        watcher
            .watch(dir, mode)
            .map_err(|e| format!("could not watch {} ({e})", dir.display()))?;
    }
    Ok(Box::new(watcher))
}

/// The polling fallback over each of `dirs`, taken because of `why`; said once on stderr.
fn poll(
    shared: &Arc<Shared>,
    dirs: &[PathBuf],
    why: String,
) -> Result<(Box<dyn Watcher + Send>, Watch), String> {
    let config = notify::Config::default().with_poll_interval(POLL_INTERVAL);
    let mut watcher = PollWatcher::new(handler(shared), config).map_err(|e| e.to_string())?;
    for dir in dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    eprintln!(
        "quarry mcp: following the tree by looking at it every {} s: file-system events {why}",
        POLL_INTERVAL.as_secs()
    );
    Ok((Box::new(watcher), Watch::Polling { why }))
}

/// What the watcher calls with each event: counts the ones about files an index run may
/// read, and notes new directories and a changed libraries file for the refresher to
/// follow. It holds the server weakly: the watcher lives in it.
fn handler(shared: &Arc<Shared>) -> impl FnMut(notify::Result<Event>) + Send + 'static {
    let libraries = shared.root.join(INDEX_DIR).join(LIBRARIES_FILE);
    let shared: Weak<Shared> = Arc::downgrade(shared);
    move |event: notify::Result<Event>| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let event = match event {
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => return,
            Ok(event) => event,
            Err(error) => {
                let mut changes = shared.changes();
                if let notify::ErrorKind::MaxFilesWatch = error.kind {
                    let why = format!("ran out of watches ({error})");
                    changes.fall_back.get_or_insert(why);
                }
                // Whatever went wrong, the next first phase walks the whole tree.
                let roots = changes.roots.clone();
                changes.note(roots);
                drop(changes);
                shared.changes_signal.notify_all();
                return;
            }
        };
        let created = matches!(event.kind, EventKind::Create(_));
        let mut changes = shared.changes();
        if event.need_rescan() {
            let roots = changes.roots.clone();
            changes.new_dirs.extend(roots.iter().cloned());
            changes.note(roots);
        } else {
            let mut paths = Vec::new();
            for path in event.paths {
                if created && let Some(n) = cookie_number(&path) {
                    changes.cookie_seen(n);
                    continue;
                }
                if path == libraries {
                    changes.libraries_changed = true;
                    continue;
                }
                if !relevant(&changes.roots, &changes.followed, &path) {
                    continue;
                }
                let ignore_file = is_ignore_file(&path);
                if (created && path.is_dir()) || ignore_file {
                    // Followed from now on (by the refresher): its directories, or those an
                    // ignore file no longer hides.
                    let dir = if ignore_file {
                        path.parent()
                    } else {
                        Some(path.as_path())
                    };
                    changes.new_dirs.extend(dir.map(Path::to_path_buf));
                }
                paths.push(path);
            }
            if !paths.is_empty() {
                changes.note(paths);
            }
        }
        drop(changes);
        shared.changes_signal.notify_all();
    }
}

/// Whether a change at `path` may matter to an index run: in a directory followed (not
/// ignored), not inside a hidden directory (`.git`, quarry's own `.quarry`) nor a hidden
/// file, which the walk skips, except the ignore files that decide what it reads.
fn relevant(roots: &[PathBuf], followed: &HashSet<PathBuf>, path: &Path) -> bool {
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
    let in_followed =
        path.parent().is_some_and(|dir| followed.contains(dir)) || followed.contains(path);
    in_followed && (!hidden(last) || is_ignore_file(path))
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
            if !changes.new_dirs.is_empty() || changes.libraries_changed {
                drop(changes);
                follow_more(shared);
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

/// Follows what the watcher noted: directories made (or shown by an ignore file) and the
/// libraries registered since (a `quarry lib add` in another process), whose files are then
/// indexed. Before the batch's run, so that a file made in a new directory is either walked
/// by the run or seen by the new watch. Libraries removed are let go of.
fn follow_more(shared: &Arc<Shared>) {
    let (mut new_dirs, libraries_changed, roots) = {
        let mut changes = shared.changes();
        let new_dirs = std::mem::take(&mut changes.new_dirs);
        let libraries = std::mem::take(&mut changes.libraries_changed);
        (new_dirs, libraries, changes.roots.clone())
    };
    let mut now = roots.clone();
    if libraries_changed
        && let Ok(sources) =
            shared.with_engine(|engine| engine.source_roots().map_err(|e| e.to_string()))
    {
        now = outermost(sources);
        let added: Vec<PathBuf> = now.iter().filter(|r| !roots.contains(r)).cloned().collect();
        let mut watcher = shared.watcher.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(watcher) = watcher.as_mut() {
            for gone in roots.iter().filter(|r| !now.contains(r)) {
                let _ = watcher.unwatch(gone);
            }
        }
        drop(watcher);
        let mut changes = shared.changes();
        changes.roots = now.clone();
        changes.followed.retain(|dir| {
            now.iter().any(|root| dir.starts_with(root))
                || dir.starts_with(shared.root.join(INDEX_DIR))
        });
        // A new library's files are indexed by the next run.
        if !added.is_empty() {
            changes.note(added.clone());
        }
        drop(changes);
        new_dirs.extend(added);
    }
    let mut dirs = directories(&shared.root, &now, &new_dirs);
    let per_directory = {
        let changes = shared.changes();
        dirs.retain(|dir| !changes.followed.contains(dir));
        !matches!(changes.watch, Watch::Events) || EVENTS_PER_DIRECTORY
    };
    // Not under the changes' lock: the watcher's thread may be waiting for it in the
    // handler, and a watch is added by that thread.
    let mut watcher = shared.watcher.lock().unwrap_or_else(|p| p.into_inner());
    let mut out_of_watches = None;
    dirs.retain(|dir| {
        let mode = match per_directory {
            true => Some(RecursiveMode::NonRecursive),
            // A library's root, under no recursive watch yet.
            false => now.contains(dir).then_some(RecursiveMode::Recursive),
        };
        match (watcher.as_mut(), mode) {
            (Some(watcher), Some(mode)) => match watcher.watch(dir, mode) {
                Ok(()) => true,
                Err(error) => {
                    if let notify::ErrorKind::MaxFilesWatch = error.kind {
                        out_of_watches = Some(format!("ran out of watches ({error})"));
                    }
                    false
                }
            },
            _ => true,
        }
    });
    drop(watcher);
    let mut changes = shared.changes();
    changes.followed.extend(dirs);
    if let Some(why) = out_of_watches {
        changes.fall_back.get_or_insert(why);
    }
}

/// Replaces the event watcher, out of watches, by polling.
fn fall_back(shared: &Arc<Shared>, why: String) {
    let roots = shared.changes().roots.clone();
    let dirs = directories(&shared.root, &roots, &roots);
    let watch = match poll(shared, &dirs, why) {
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
    changes.followed = dirs.into_iter().collect();
    changes.note(roots.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths_and_unfollowed_directories_are_not_changes_but_ignore_files_are() {
        let roots = [PathBuf::from("/repo"), PathBuf::from("/libs/tokio")];
        let followed: HashSet<PathBuf> = ["/repo", "/repo/src", "/libs/tokio", "/libs/tokio/src"]
            .into_iter()
            .map(PathBuf::from)
            .collect();
        let relevant = |path: &str| relevant(&roots, &followed, Path::new(path));
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
        assert!(
            !relevant("/repo/target/debug/build.rs"),
            "an ignored directory"
        );
        assert!(
            relevant("/repo/target"),
            "made or removed in a followed directory"
        );
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
