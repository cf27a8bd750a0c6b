//! Directory trees: listing a corpus's files and copying them.

use std::fs;
use std::path::Path;

use crate::BenchError;

/// Whether a listing includes the `.quarry` index directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Index {
    /// Leave it out: a corpus's own files.
    Skip,
    /// Keep it: a worktree with its index.
    Keep,
}

/// The files under `dir`, relative and `/`-separated, sorted.
pub(crate) fn list_files(dir: &Path, index: Index) -> Result<Vec<String>, BenchError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in fs::read_dir(&current).map_err(BenchError::io(&current))? {
            let entry = entry.map_err(BenchError::io(&current))?;
            let path = entry.path();
            if index == Index::Skip && entry.file_name() == quarry_store::INDEX_DIR {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                files.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Copies `files` (relative to `from`) to the same places under `to`.
pub(crate) fn copy_files<'a>(
    from: &Path,
    to: &Path,
    files: impl IntoIterator<Item = &'a str>,
) -> Result<(), BenchError> {
    for relative in files {
        let target = to.join(relative);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(BenchError::io(parent))?;
        }
        fs::copy(from.join(relative), &target).map_err(BenchError::io(&target))?;
    }
    Ok(())
}
