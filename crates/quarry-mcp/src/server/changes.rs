//! What the watcher counted and the indexer applied, and the freshness a call asks for
//! before it answers ([`Shared::await_fresh`]).
//!
//! Events are counted (`seen`); an index run claims what was counted when its first phase
//! begins (`claimed`), and marks it `applied` once that phase has committed. A batch is due
//! [`QUIET`] after its last event, [`LONGEST_DELAY`] after its first while events keep coming,
//! or at once when a search waits. A search first syncs with the watcher (a cookie file whose
//! event follows every earlier one), looks at the git state (a checkout whose events were
//! missed), then waits until every change counted before it is applied.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use quarry_engine::INDEX_DIR;
use serde_json::{Value, json};

use super::Shared;

/// How often the polling fallback looks at the tree.
pub(super) const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// How long the tree must be quiet before a batch of changes is applied.
pub(super) const QUIET: Duration = Duration::from_millis(100);

/// The longest a batch waits for the tree to be quiet while events keep coming.
pub(super) const LONGEST_DELAY: Duration = Duration::from_secs(1);

/// How long a search waits for the changes made before it to be applied (another process
/// may hold the writer lock) before answering with what is committed.
const FRESH_WAIT: Duration = Duration::from_secs(10);

/// How the server follows the tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum Watch {
    /// Not at all (`--no-watch`, or a server started without it).
    #[default]
    Off,
    /// By the operating system's events.
    Events,
    /// By looking at every file every [`POLL_INTERVAL`]: events were not to be had.
    Polling { why: String },
    /// Neither could start.
    Failed(String),
}

/// What the watcher counted and the indexer applied.
#[derive(Debug, Default)]
pub(super) struct Changes {
    pub(super) watch: Watch,
    /// The trees followed: the repository root and its libraries'.
    pub(super) roots: Vec<PathBuf>,
    /// The directories followed in them: those an index run walks, and the index directory.
    pub(super) followed: HashSet<PathBuf>,
    /// Directories made or uncovered since, for the refresher to follow.
    pub(super) new_dirs: Vec<PathBuf>,
    /// Whether the libraries file changed (a library added or removed elsewhere).
    pub(super) libraries_changed: bool,
    /// Events counted since the server started.
    seen: u64,
    /// `seen` as of the start of the last first phase that committed.
    applied: u64,
    /// `seen` as of the start of the first phase at work, if one is.
    claimed: u64,
    /// The paths reported since the last first phase began.
    waiting: HashSet<PathBuf>,
    /// Whether paths were reported that `waiting` had no room for: the next first phase
    /// walks the whole tree.
    overflowed: bool,
    /// When the first event of the batch not yet claimed came, and the last.
    batch: Option<(Instant, Instant)>,
    /// When a change was last applied.
    last_applied: Option<Instant>,
    /// Searches waiting for the changes before them: the batch does not wait for quiet.
    searches_waiting: usize,
    /// Why the watcher asked to be replaced by polling (out of watches), once it has.
    pub(super) fall_back: Option<String>,
    /// The repository's git state when the last first phase began.
    pub(super) git_claimed: Option<GitState>,
    /// The last cookie a search made, and those searches wait for: whether the watcher has
    /// reported its creation. A cookie reported after its search gave up is not kept.
    last_cookie: u64,
    cookies: HashMap<u64, bool>,
}

impl Changes {
    /// The watcher saw cookie `number` created.
    pub(super) fn cookie_seen(&mut self, number: u64) {
        if let Some(seen) = self.cookies.get_mut(&number) {
            *seen = true;
        }
    }

    /// Counts an event about `paths`.
    pub(super) fn note(&mut self, paths: impl IntoIterator<Item = PathBuf>) {
        self.seen += 1;
        // Bounded: a storm's paths are only counted for status.
        for path in paths {
            if self.waiting.len() < MAX_WAITING_PATHS {
                self.waiting.insert(path);
            } else {
                self.overflowed = true;
            }
        }
        let now = Instant::now();
        let first = self.batch.map_or(now, |(first, _)| first);
        self.batch = Some((first, now));
    }

    /// Whether changes wait that no first phase has claimed yet.
    pub(super) fn unclaimed(&self) -> bool {
        self.seen > self.claimed
    }

    /// How long until the unclaimed changes are due to be applied (zero: now), if any wait.
    pub(super) fn due_in(&self) -> Option<Duration> {
        if !self.unclaimed() {
            return None;
        }
        if self.searches_waiting > 0 {
            return Some(Duration::ZERO);
        }
        let Some((first, last)) = self.batch else {
            return Some(Duration::ZERO);
        };
        let quiet = QUIET.saturating_sub(last.elapsed());
        let longest = LONGEST_DELAY.saturating_sub(first.elapsed());
        Some(quiet.min(longest))
    }

    /// Whether an index run at work should apply the unclaimed changes now.
    pub(super) fn due(&self) -> bool {
        self.due_in() == Some(Duration::ZERO)
    }

    /// Files changed whose change is not yet in the index, or `None` when none wait.
    pub(super) fn files_waiting(&self) -> Option<usize> {
        (self.seen > self.applied).then_some(self.waiting.len().max(1))
    }

    /// `index status`'s account of the watch.
    pub(super) fn json(&self) -> Value {
        let (state, note) = match &self.watch {
            Watch::Off => (
                "off",
                Some(
                    "the server does not follow the working tree (--no-watch): call index with \
                     action build after changing files"
                        .to_owned(),
                ),
            ),
            Watch::Events => ("watching", None),
            Watch::Polling { why } => (
                "polling",
                Some(format!(
                    "the tree is looked at every {} s (file-system events {why}): a change \
                     reaches searches up to that much later",
                    POLL_INTERVAL.as_secs()
                )),
            ),
            Watch::Failed(why) => (
                "failed",
                Some(format!(
                    "the tree cannot be watched ({why}): call index with action build after \
                     changing files"
                )),
            ),
        };
        let mut value = json!({
            "state": state,
            "roots": self.roots,
            "files_waiting": self.files_waiting().unwrap_or(0),
            "last_change_applied_s_ago": self.last_applied.map(|t| round_seconds(t.elapsed())),
        });
        if let Some(note) = note {
            value["note"] = json!(note);
        }
        value
    }
}

/// What a git operation on the work tree (checkout, pull, stash, reset) changes even when
/// the watcher misses its events: the modification time and size of the git index and of
/// `HEAD`. Two `stat`s, cheap enough for every search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GitState([Option<(SystemTime, u64)>; 2]);

impl GitState {
    /// The state of the repository at `root`, if `root` has a `.git` directory.
    pub(super) fn of(root: &Path) -> Option<GitState> {
        let git = root.join(".git");
        let stat = |name: &str| {
            std::fs::metadata(git.join(name))
                .ok()
                .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
        };
        git.is_dir()
            .then(|| GitState([stat("index"), stat("HEAD")]))
    }
}

/// The most changed paths remembered: a larger storm is counted as at least this many
/// files, and applied by a walk of the whole tree.
const MAX_WAITING_PATHS: usize = 100_000;

fn round_seconds(time: Duration) -> f64 {
    (time.as_secs_f64() * 10.0).round() / 10.0
}

/// Whether `path` is an ignore file (`.gitignore`, `.ignore`): a change to it may hide or
/// show any file of its directory.
pub(super) fn is_ignore_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name == ".gitignore" || name == ".ignore")
}

/// A first phase's claim on the changes counted when it began.
pub(super) struct Claim {
    seen: u64,
    paths: HashSet<PathBuf>,
    overflowed: bool,
}

impl Claim {
    /// The paths to look at for these changes (an ignore file's whole directory, whose
    /// files it may hide or show), or `None` where the whole tree is to be walked: the
    /// watcher could not keep every path, or reported none.
    pub(super) fn paths(&self) -> Option<Vec<PathBuf>> {
        if self.overflowed || self.paths.is_empty() {
            return None;
        }
        let scope = self
            .paths
            .iter()
            .map(|path| match (is_ignore_file(path), path.parent()) {
                (true, Some(dir)) => dir.to_path_buf(),
                _ => path.clone(),
            });
        Some(scope.collect())
    }
}

impl Shared {
    pub(super) fn changes(&self) -> MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes whoever waits on the changes: the refresher, searches, a run between batches.
    pub(super) fn signal_changes(&self) {
        let _changes = self.changes();
        self.changes_signal.notify_all();
    }

    /// Whether an index run at work should let the writer go and apply the changes now.
    pub(super) fn changes_due(&self) -> bool {
        self.changes().due()
    }

    /// Claims the changes counted so far, for a first phase about to start.
    pub(super) fn claim_changes(&self) -> Claim {
        let git = GitState::of(&self.root);
        let mut changes = self.changes();
        changes.git_claimed = git;
        changes.claimed = changes.seen;
        changes.batch = None;
        Claim {
            seen: changes.seen,
            paths: std::mem::take(&mut changes.waiting),
            overflowed: std::mem::take(&mut changes.overflowed),
        }
    }

    /// The first phase that made `claim` committed (`applied`), or failed: then its changes
    /// wait again.
    pub(super) fn settle_claim(&self, claim: Claim, applied: bool) {
        let mut changes = self.changes();
        if applied {
            changes.applied = changes.applied.max(claim.seen);
            changes.last_applied = Some(Instant::now());
        } else {
            changes.claimed = changes.applied;
            changes.waiting.extend(claim.paths);
            changes.overflowed |= claim.overflowed;
            if changes.unclaimed() && changes.batch.is_none() {
                let now = Instant::now();
                changes.batch = Some((now, now));
            }
        }
        self.changes_signal.notify_all();
    }

    /// `index status`'s account of the watch.
    pub(super) fn watch_json(&self) -> Value {
        self.changes().json()
    }

    /// Changed files not yet in the index, if any.
    pub(super) fn files_waiting(&self) -> Option<usize> {
        self.changes().files_waiting()
    }

    /// The repository root is still where the server was started on, or the message that
    /// says it is gone.
    pub(super) fn root_present(&self) -> Result<(), String> {
        if self.root.is_dir() {
            return Ok(());
        }
        Err(format!(
            "the repository root {} is gone (removed or moved): the index can no longer be \
             checked against it; start quarry mcp again with --root at its new place",
            self.root.display()
        ))
    }

    /// Before a search: the repository is still there, and the changes counted before it
    /// was asked are applied (waiting up to [`FRESH_WAIT`] for them).
    pub(super) fn await_fresh(&self) -> Result<(), String> {
        self.root_present()?;
        if self.changes().watch == Watch::Events {
            self.sync_with_watcher();
        }
        let git = GitState::of(&self.root);
        let mut changes = self.changes();
        if changes.watch == Watch::Off {
            return Ok(());
        }
        // A checkout, pull or stash whose events were missed (or not yet polled).
        if git != changes.git_claimed && !changes.unclaimed() {
            changes.note([self.root.clone()]);
        }
        let target = changes.seen;
        if changes.applied >= target {
            return Ok(());
        }
        changes.searches_waiting += 1;
        self.changes_signal.notify_all();
        let mut changes = self
            .changes_signal
            .wait_timeout_while(changes, FRESH_WAIT, |c| {
                c.applied < target && !self.stopped.load(Ordering::SeqCst)
            })
            .unwrap_or_else(|p| p.into_inner())
            .0;
        changes.searches_waiting -= 1;
        Ok(())
    }
}

impl Shared {
    /// Waits until the watcher has reported every event before now (at most
    /// [`COOKIE_WAIT`]): it makes a cookie file in the index directory and waits for its
    /// creation's event, which the operating system delivers after every earlier one (as
    /// watchman's cookies do). Without it, a file changed a moment before a search could
    /// still be on its way to the watcher.
    fn sync_with_watcher(&self) {
        let number = {
            let mut changes = self.changes();
            changes.last_cookie += 1;
            let number = changes.last_cookie;
            changes.cookies.insert(number, false);
            number
        };
        let cookie = self
            .root
            .join(INDEX_DIR)
            .join(format!("{COOKIE_PREFIX}{}-{number}", std::process::id()));
        // `create_new` never follows a link left at the cookie's name.
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&cookie);
        if created.is_ok() {
            let changes = self.changes();
            let _ = self
                .changes_signal
                .wait_timeout_while(changes, COOKIE_WAIT, |c| {
                    c.cookies.get(&number) == Some(&false) && !self.stopped.load(Ordering::SeqCst)
                })
                .unwrap_or_else(|p| p.into_inner());
        }
        self.changes().cookies.remove(&number);
        let _ = std::fs::remove_file(&cookie);
    }
}

/// What a cookie file's name starts with; the server's process id and the cookie's number
/// follow.
const COOKIE_PREFIX: &str = "watch-cookie-";

/// The longest a search waits for its cookie's event.
const COOKIE_WAIT: Duration = Duration::from_secs(1);

/// The number of this server's cookie at `path`, if it is one.
pub(super) fn cookie_number(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?.strip_prefix(COOKIE_PREFIX)?;
    let (pid, number) = name.split_once('-')?;
    let in_index_dir = path.parent()?.file_name()? == INDEX_DIR;
    (in_index_dir && pid.parse() == Ok(std::process::id()))
        .then(|| number.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_waits_for_quiet_unless_a_search_waits() {
        let mut changes = Changes::default();
        assert_eq!(changes.due_in(), None);
        changes.note([PathBuf::from("/repo/a.rs")]);
        let wait = changes.due_in().unwrap();
        assert!(wait > Duration::ZERO && wait <= QUIET, "{wait:?}");
        changes.searches_waiting = 1;
        assert!(changes.due());
        changes.searches_waiting = 0;
        std::thread::sleep(QUIET);
        assert!(changes.due());
        assert_eq!(changes.files_waiting(), Some(1));
        changes.claimed = changes.seen;
        assert_eq!(changes.due_in(), None, "claimed by a run");
        changes.applied = changes.seen;
        assert_eq!(changes.files_waiting(), None);
    }

    #[test]
    fn cookies_are_this_servers_files_in_the_index_directory() {
        let pid = std::process::id();
        let cookie = |path: String| cookie_number(Path::new(&path));
        assert_eq!(
            cookie(format!("/repo/.quarry/watch-cookie-{pid}-7")),
            Some(7)
        );
        assert_eq!(
            cookie(format!("/repo/.quarry/watch-cookie-{}-7", pid + 1)),
            None
        );
        assert_eq!(cookie(format!("/repo/src/watch-cookie-{pid}-7")), None);
        assert_eq!(cookie("/repo/.quarry/index.redb".into()), None);
    }
}
