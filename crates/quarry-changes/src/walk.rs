//! The tree's walk: the files an index holds and the directories a watcher follows, by the
//! same rules.

use std::fs;
use std::ops::ControlFlow;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use ignore::{WalkBuilder, WalkState};
use quarry_store::INDEX_DIR;

use crate::{ChangesError, TreeFile, under_any};

/// What a [`walk`] found.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// The regular files, sorted by path.
    pub files: Vec<TreeFile>,
    /// Entries that could not be read or were skipped (a non-UTF-8 name), and ignore files
    /// that could not be parsed; one line each.
    pub warnings: Vec<String>,
    /// Root-relative paths of directories and files that could not be read (`""` for the
    /// root): the tree may hold files under them that the walk does not list.
    pub unreadable: Vec<String>,
    /// The directories entered, root-relative and sorted (the root itself left out): what a
    /// file-system watcher follows.
    pub directories: Vec<String>,
}

/// Walks `root`: regular files only, no symlinks followed, hidden files and directories
/// skipped (`.git` and quarry's own `.quarry/` among them), `.gitignore`, `.ignore` and git's
/// excludes honoured (`.gitignore` also outside a git repository).
///
/// An entry that cannot be read is a warning, not an error; only an unreadable `root` is.
pub fn walk(root: &Path) -> Result<Walk, ChangesError> {
    walk_in(root, None)
}

/// [`walk`] over only the files and directories at or under the root-relative `paths`
/// (each a file or a directory, present or not), with the same rules: the directories
/// above them are entered for their ignore files, and nothing else is listed.
pub fn walk_paths(root: &Path, paths: &[String]) -> Result<Walk, ChangesError> {
    walk_in(root, Some(paths))
}

/// Calls `each` with every regular file a [`walk`] of `root` lists, on the walk's threads
/// and in no order, until it breaks: then the walk stops as soon as it can, so that sizing
/// up a huge tree costs little. What [`Walk::warnings`] would say is passed over.
pub fn for_each_file(
    root: &Path,
    each: &(dyn Fn(&TreeFile) -> ControlFlow<()> + Sync),
) -> Result<(), ChangesError> {
    builder(root, None)?.build_parallel().run(|| {
        Box::new(move |entry| match visit(root, entry) {
            Some(Found::File(file)) if each(&file).is_break() => WalkState::Quit,
            _ => WalkState::Continue,
        })
    });
    Ok(())
}

pub(crate) fn walk_in(root: &Path, scope: Option<&[String]>) -> Result<Walk, ChangesError> {
    let (sender, receiver) = mpsc::channel();
    builder(root, scope)?.build_parallel().run(|| {
        let sender = sender.clone();
        Box::new(move |entry| {
            if let Some(found) = visit(root, entry) {
                // The receiver outlives the walk.
                let _ = sender.send(found);
            }
            WalkState::Continue
        })
    });
    drop(sender);

    let mut walk = Walk::default();
    for found in receiver {
        match found {
            Found::File(file) => walk.files.push(file),
            Found::Warning(warning) => walk.warnings.push(warning),
            Found::Unreadable(path, warning) => {
                walk.unreadable.push(path);
                walk.warnings.push(warning);
            }
            Found::Directory(path, warning) => {
                walk.directories.push(path);
                walk.warnings.extend(warning);
            }
        }
    }
    walk.directories.sort_unstable();
    walk.files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    walk.warnings.sort_unstable();
    walk.unreadable.sort_unstable();
    Ok(walk)
}

/// The walk of `root` by [`walk`]'s rules, over `scope` alone when given; an unreadable
/// `root` is the error.
fn builder(root: &Path, scope: Option<&[String]>) -> Result<WalkBuilder, ChangesError> {
    fs::read_dir(root).map_err(|source| ChangesError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let scope: Option<Vec<String>> = scope.map(<[String]>::to_vec);
    let root_for_filter = root.to_path_buf();
    let threads = thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let mut builder = WalkBuilder::new(root);
    builder
        .follow_links(false)
        .hidden(true)
        .require_git(false)
        .threads(threads)
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.file_name() == ".git" || entry.file_name() == INDEX_DIR {
                return false;
            }
            let Some(scope) = &scope else {
                return true;
            };
            // A path that is not UTF-8 is left to the visit, which warns about it.
            let Ok(path) = relative(&root_for_filter, entry.path()) else {
                return true;
            };
            scope.iter().any(|changed| {
                under_any(&path, std::slice::from_ref(changed))
                    || under_any(changed, std::slice::from_ref(&path))
            })
        });
    Ok(builder)
}

/// One walked entry's contribution.
enum Found {
    File(TreeFile),
    /// A directory entered, and the warning about an ignore file in it that could not be
    /// read or parsed.
    Directory(String, Option<String>),
    Warning(String),
    /// A path that could not be read, and the warning to give.
    Unreadable(String, String),
}

fn visit(root: &Path, entry: Result<ignore::DirEntry, ignore::Error>) -> Option<Found> {
    let entry = match entry {
        Ok(entry) => entry,
        Err(error) => {
            let inside = error_path(&error).filter(|path| path.starts_with(root));
            return Some(match inside.map(|path| relative(root, path)) {
                Some(Ok(path)) => {
                    let why = error
                        .io_error()
                        .map_or_else(|| error.to_string(), |e| e.to_string());
                    let warning =
                        format!("{}: {why}; indexed files under it are kept", display(&path));
                    Found::Unreadable(path, warning)
                }
                _ => Found::Warning(error.to_string()),
            });
        }
    };
    let file_type = entry.file_type()?;
    if file_type.is_dir() {
        // An ignore file in it that could not be read or parsed.
        let warning = entry.error().map(ToString::to_string);
        return match relative(root, entry.path()) {
            Ok(path) if !path.is_empty() => Some(Found::Directory(path, warning)),
            // The root, or a name that is not UTF-8 (its files are warned about).
            _ => warning.map(Found::Warning),
        };
    }
    if !file_type.is_file() {
        return None;
    }
    let path = match relative(root, entry.path()) {
        Ok(path) => path,
        Err(warning) => return Some(Found::Warning(warning)),
    };
    match entry.metadata() {
        Ok(metadata) => Some(Found::File(TreeFile {
            path,
            size: metadata.len(),
            mtime_ns: metadata.modified().map_or(0, mtime_ns),
        })),
        Err(error) => {
            let warning = format!("{path}: {error}; kept as indexed");
            Some(Found::Unreadable(path, warning))
        }
    }
}

/// The path an [`ignore::Error`] is about, if it names one.
fn error_path(error: &ignore::Error) -> Option<&Path> {
    match error {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}

/// The root-relative forms (`/`-separated) of those of `paths` (absolute: files or
/// directories, present or gone) that lie under `root`, for [`walk_paths`] and
/// [`crate::detect_changes_in`]; `None` where the whole tree is meant: a path is `root`
/// itself or above it, or is not UTF-8.
pub fn relative_paths(root: &Path, paths: &[PathBuf]) -> Option<Vec<String>> {
    let mut inside = Vec::new();
    for path in paths {
        if root.starts_with(path) {
            return None;
        }
        if path.starts_with(root) {
            inside.push(relative(root, path).ok()?);
        }
    }
    Some(inside)
}

/// `path` relative to `root` with `/` separators, or a warning if it is not UTF-8.
fn relative(root: &Path, path: &Path) -> Result<String, String> {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for component in relative.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let Some(name) = name.to_str() else {
            return Err(format!(
                "{}: skipped, its name is not UTF-8",
                relative.display()
            ));
        };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(name);
    }
    Ok(out)
}

fn display(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

fn mtime_ns(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}
