//! Which files changed since the index was built, without reading the files that did not.
//!
//! [`detect_changes`] compares the [`FileState`]s the index holds with a [`walk`] of the tree.
//! A tree file the index lacks is added and an indexed file the tree lacks is deleted; an
//! added file with the size and content hash of a deleted one is a rename. For a file in both,
//! the chain is:
//!
//! 1. **`git diff` against the last indexed commit**, when `root` is in a git work tree: the
//!    files git reports are hashed even when their mtime and size match. This catches an edit
//!    that kept both (same size, within the file system's mtime granularity, or with the mtime
//!    set back), because git also checks the inode's change time and, when in doubt, content.
//!    Git's trouble (not installed, not a repository, the commit gone after a rebase) is said
//!    in [`ChangeSet::git`] and detection goes on with the rest of the chain.
//! 2. **mtime and size**: a file whose mtime and size are what the index recorded is unchanged
//!    without being read; one whose size differs is modified without being read.
//! 3. **A content hash as the arbiter** for the rest: a file whose mtime moved but whose
//!    content hash is what the index holds is only [`touched`](ChangeSet::touched), and nothing
//!    is re-chunked or re-embedded for it.
//!
//! Outside git, an edit that keeps the size and the mtime is missed by design: the price of
//! not reading every file. Inside git, such an edit is still missed in an untracked file, or
//! when it puts the indexed commit's content back into a file that differed from it when it
//! was indexed.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use quarry_store::FileState;

mod walk;

use walk::walk_in;
pub use walk::{Walk, for_each_file, relative_paths, walk, walk_paths};

/// Why the tree could not be walked.
#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    /// The root directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

/// The hash the index keeps of a file's bytes ([`FileState::content_hash`]): XXH3, 64 bits.
pub fn content_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// A regular file of the tree, as a [`walk`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Relative to the walked root, with `/` separators.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
}

/// A file that moved: the content the index holds for `from` is now at `to.path`, and `from`
/// is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// The indexed path, no longer in the tree.
    pub from: String,
    /// The new file, not in the index.
    pub to: TreeFile,
}

/// What git contributed to a [`ChangeSet`]. Anything but [`GitUse::Used`] means mtime and
/// size alone decided which files were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitUse {
    /// The root is not in a git work tree.
    NotARepository,
    /// The root is in a git work tree, but no indexed commit was given to compare with.
    NoIndexedCommit,
    /// `git diff` against the indexed commit named the files to read whatever their mtime.
    Used {
        /// The indexed commit.
        since: String,
        /// How many files git reported as differing from it.
        reported: usize,
    },
    /// Git could not be used; the message says why (git missing, the commit gone, ...).
    Failed(String),
    /// Only the paths a file-system watcher reported were looked at ([`detect_changes_in`]),
    /// every indexed file among them hashed: git was not asked.
    NotAsked,
}

impl fmt::Display for GitUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitUse::NotARepository => f.write_str("not a git repository; mtime and size decided"),
            GitUse::NoIndexedCommit => {
                f.write_str("git repository without an indexed commit; mtime and size decided")
            }
            GitUse::Used { since, reported } => {
                write!(f, "git diff against {since}: {reported} files differ")
            }
            GitUse::Failed(why) => write!(f, "git not used ({why}); mtime and size decided"),
            GitUse::NotAsked => f.write_str("only the paths reported as changed were looked at"),
        }
    }
}

/// What changed between the files the index knows and the tree. Every list is sorted by path
/// (renames by their new path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeSet {
    /// Files the index does not know.
    pub added: Vec<TreeFile>,
    /// Indexed files whose content changed.
    pub modified: Vec<TreeFile>,
    /// Indexed paths no longer in the tree.
    pub deleted: Vec<String>,
    /// Indexed content at a new path, its old path gone.
    pub renamed: Vec<Rename>,
    /// Indexed files whose mtime or size changed but whose content hash (given) did not: only
    /// their [`FileState`] needs updating.
    pub touched: Vec<(TreeFile, u64)>,
    /// Indexed files found as the index has them, and indexed files under an
    /// [unreadable](Walk::unreadable) path, which are kept (see `warnings`).
    pub unchanged: usize,
    /// How many files were read and hashed.
    pub hashed: usize,
    /// What git contributed.
    pub git: GitUse,
    /// Files that could not be walked or read, one line each.
    pub warnings: Vec<String>,
}

impl ChangeSet {
    /// Whether the index matches the tree: nothing to re-index, no state to update.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.modified.is_empty()
            && self.deleted.is_empty()
            && self.renamed.is_empty()
            && self.touched.is_empty()
    }
}

/// What changed between the files the index knows (`indexed`, as of `indexed_commit` when the
/// tree is a git work tree) and the tree at [`walk`]`(root)`.
///
/// A file in both is read only when `git diff` reports it as differing from `indexed_commit`
/// or its mtime moved; one whose size changed is modified unread, and the content hash decides
/// the rest. Outside git, an edit that keeps both size and mtime goes unseen: the price of not
/// reading every file. Added files of a deleted file's size are read to find renames.
///
/// Git never makes detection fail: what it contributed is [`ChangeSet::git`]. Only an
/// unreadable `root` is an error.
pub fn detect_changes(
    root: &Path,
    indexed: &[FileState],
    indexed_commit: Option<&str>,
) -> Result<ChangeSet, ChangesError> {
    let (walked, git) = thread::scope(|scope| {
        let git = scope.spawn(|| git_changes(root, indexed_commit));
        let walked = walk(root);
        let git = git
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (walked, git)
    });
    Ok(compare(root, indexed, walked?, git, None))
}

/// [`detect_changes`] over the root-relative `paths` a file-system watcher reported (files
/// or directories, present or gone) rather than the whole tree: only they are walked, and
/// the indexed files elsewhere are taken as unchanged. Git is not asked; every indexed file
/// under `paths` whose size is the same is hashed, so an edit that kept the mtime is seen
/// too. Its cost grows with `paths`, not with the tree.
pub fn detect_changes_in(
    root: &Path,
    indexed: &[FileState],
    paths: &[String],
) -> Result<ChangeSet, ChangesError> {
    let walked = walk_in(root, Some(paths))?;
    Ok(compare(
        root,
        indexed,
        walked,
        (GitUse::NotAsked, None),
        Some(paths),
    ))
}

/// The change set between `indexed` and the `walked` tree; with `scope`, the walk covered
/// only those paths, and indexed files outside them are unchanged.
fn compare(
    root: &Path,
    indexed: &[FileState],
    walked: Walk,
    (git, git_changed): (GitUse, Option<HashSet<String>>),
    scope: Option<&[String]>,
) -> ChangeSet {
    let Walk {
        files,
        mut warnings,
        unreadable,
        directories: _,
    } = walked;

    let by_path: HashMap<&str, &FileState> = indexed.iter().map(|s| (s.path.as_str(), s)).collect();
    let in_tree: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();

    let mut unchanged = 0;
    let mut deleted: Vec<&FileState> = Vec::new();
    for state in indexed {
        if in_tree.contains(state.path.as_str()) {
            continue;
        }
        if scope.is_some_and(|scope| !under_any(&state.path, scope))
            || under_any(&state.path, &unreadable)
        {
            unchanged += 1;
        } else {
            deleted.push(state);
        }
    }
    deleted.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let deleted_sizes: HashSet<u64> = deleted.iter().map(|s| s.size).collect();

    // Tree files to hash: indexed ones to check, and added ones that may be renames.
    let mut modified = Vec::new();
    let mut to_check: Vec<(&TreeFile, &FileState)> = Vec::new();
    let mut added: Vec<&TreeFile> = Vec::new();
    let mut candidates: Vec<&TreeFile> = Vec::new();
    for file in &files {
        match by_path.get(file.path.as_str()) {
            None if deleted_sizes.contains(&file.size) => candidates.push(file),
            None => added.push(file),
            Some(state) if state.size != file.size => modified.push(file.clone()),
            Some(state)
                if scope.is_some()
                    || state.mtime_ns != file.mtime_ns
                    || git_changed.as_ref().is_some_and(|c| c.contains(&file.path)) =>
            {
                to_check.push((file, state));
            }
            Some(_) => unchanged += 1,
        }
    }

    let paths: Vec<&str> = to_check
        .iter()
        .map(|(file, _)| file.path.as_str())
        .chain(candidates.iter().map(|file| file.path.as_str()))
        .collect();
    let mut hashes = hash_files(root, &paths);
    let candidate_hashes = hashes.split_off(to_check.len());
    let mut hashed = 0;
    let mut hash_of = |file: &TreeFile, result: io::Result<u64>, so: &str| match result {
        Ok(hash) => {
            hashed += 1;
            Some(hash)
        }
        Err(error) => {
            warnings.push(format!("{}: {error}; {so}", file.path));
            None
        }
    };

    let mut touched = Vec::new();
    for ((file, state), result) in to_check.into_iter().zip(hashes) {
        match hash_of(file, result, "reported as modified") {
            Some(hash) if hash == state.content_hash => {
                if file.mtime_ns == state.mtime_ns {
                    unchanged += 1;
                } else {
                    touched.push((file.clone(), hash));
                }
            }
            // Unreadable now: the indexer's own read will say what it makes of that.
            _ => modified.push(file.clone()),
        }
    }

    let mut gone: HashMap<(u64, u64), Vec<&str>> = HashMap::new();
    for state in deleted.iter().rev() {
        gone.entry((state.size, state.content_hash))
            .or_default()
            .push(&state.path);
    }
    let mut renamed = Vec::new();
    let mut renamed_from = HashSet::new();
    for (file, result) in candidates.into_iter().zip(candidate_hashes) {
        let from = hash_of(file, result, "reported as added")
            .and_then(|hash| gone.get_mut(&(file.size, hash)))
            .and_then(Vec::pop);
        match from {
            Some(from) => {
                renamed_from.insert(from);
                renamed.push(Rename {
                    from: from.to_owned(),
                    to: file.clone(),
                });
            }
            None => added.push(file),
        }
    }

    added.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    modified.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    ChangeSet {
        added: added.into_iter().cloned().collect(),
        modified,
        deleted: deleted
            .into_iter()
            .filter(|s| !renamed_from.contains(s.path.as_str()))
            .map(|s| s.path.clone())
            .collect(),
        renamed,
        touched,
        unchanged,
        hashed,
        git,
        warnings,
    }
}

/// Whether `path` is one of `prefixes` or under one of them (`""` is the root).
pub(crate) fn under_any(path: &str, prefixes: &[String]) -> bool {
    prefixes.iter().any(|prefix| {
        prefix.is_empty()
            || path
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Hashes the files at `paths` (relative to `root`), in order, on a few threads.
fn hash_files(root: &Path, paths: &[&str]) -> Vec<io::Result<u64>> {
    let threads = thread::available_parallelism()
        .map_or(1, |n| n.get().min(8))
        .min(paths.len().div_ceil(16));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut buffer = vec![0; 64 * 1024];
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(path) = paths.get(i) else {
                return done;
            };
            done.push((i, hash_file(&root.join(path), &mut buffer)));
        }
    };
    let done: Vec<(usize, io::Result<u64>)> = if threads <= 1 {
        work()
    } else {
        thread::scope(|scope| {
            let workers: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            workers
                .into_iter()
                .flat_map(|worker| {
                    worker
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    let mut ordered: Vec<Option<io::Result<u64>>> = paths.iter().map(|_| None).collect();
    for (i, result) in done {
        ordered[i] = Some(result);
    }
    ordered
        .into_iter()
        .map(|result| result.expect("every path is hashed once"))
        .collect()
}

/// [`content_hash`] of the file at `path`, read in `buffer`-sized pieces.
fn hash_file(path: &Path, buffer: &mut [u8]) -> io::Result<u64> {
    let mut file = fs::File::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    loop {
        match file.read(buffer) {
            Ok(0) => return Ok(hasher.digest()),
            Ok(n) => hasher.update(&buffer[..n]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// The commit `HEAD` names in the git work tree at `root`; `None` outside one, in a repository
/// without commits, or when git cannot be run. What the caller records as the indexed commit
/// after bringing the index up to date (also when nothing changed, so that files committed
/// since are not read again).
pub fn head_commit(root: &Path) -> Option<String> {
    let output = git(root)
        .args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .output()
        .ok()?;
    let head = String::from_utf8(output.stdout).ok()?;
    let head = head.trim();
    (output.status.success() && is_commit_id(head)).then(|| head.to_owned())
}

/// A `git` command for the work tree at `root`, unaffected by the caller's git environment.
fn git(root: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .arg("--no-optional-locks")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    command
}

fn is_commit_id(id: &str) -> bool {
    (4..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What git says about the tree at `root`, and the root-relative paths that differ from
/// `indexed_commit` (`None` when git was not used).
fn git_changes(root: &Path, indexed_commit: Option<&str>) -> (GitUse, Option<HashSet<String>>) {
    let failed =
        |what: &str, error: &dyn fmt::Display| (GitUse::Failed(format!("{what}: {error}")), None);
    let inside = match git(root)
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
    {
        Ok(output) => output,
        Err(error) => return failed("git could not be run", &error),
    };
    if !inside.status.success() {
        let stderr = String::from_utf8_lossy(&inside.stderr);
        return if stderr.contains("not a git repository") {
            (GitUse::NotARepository, None)
        } else {
            failed("git rev-parse failed", &stderr.trim())
        };
    }
    if inside.stdout.trim_ascii() != b"true" {
        return (GitUse::NotARepository, None);
    }
    let Some(commit) = indexed_commit else {
        return (GitUse::NoIndexedCommit, None);
    };
    if !is_commit_id(commit) {
        return failed(
            "the indexed commit is not a commit id",
            &format!("{commit:?}"),
        );
    }
    // The commit against the work tree: staged and unstaged edits of tracked files alike.
    // Untracked files are the walk's; renames are this module's, so git reports both paths.
    let diff = git(root)
        .args([
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--relative",
            "--ignore-submodules=all",
            commit,
            "--",
        ])
        .output();
    let diff = match diff {
        Ok(diff) => diff,
        Err(error) => return failed("git could not be run", &error),
    };
    if !diff.status.success() {
        let stderr = String::from_utf8_lossy(&diff.stderr);
        let first = stderr.lines().next().unwrap_or("").trim();
        return failed(&format!("git diff against {commit} failed"), &first);
    }
    // Paths that are not UTF-8 are skipped by the walk too.
    let changed: HashSet<String> = diff
        .stdout
        .split(|&b| b == 0)
        .filter(|path| !path.is_empty())
        .filter_map(|path| std::str::from_utf8(path).ok())
        .map(str::to_owned)
        .collect();
    let used = GitUse::Used {
        since: commit.to_owned(),
        reported: changed.len(),
    };
    (used, Some(changed))
}
