//! The index directory, `.quarry/` at the repository root: found, created and checked
//! without following symbolic links, and the identity of the database file in it.
//!
//! A cloned repository can commit `.quarry` (or something inside it) as a symbolic link, and
//! everything quarry writes or removes there would then land elsewhere: a lexical rebuild
//! empties the directory it finds, a rebuild renames and removes whole directories. So
//! nothing under `.quarry/` is ever followed: a link anywhere in it is refused before the
//! index is opened, created or replaced.

use std::fs;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// The index directory's name, at the repository root.
pub const INDEX_DIR: &str = ".quarry";

/// How deep the check looks: the index directory, its parts (`lexical/`, `vectors/`, a
/// rebuild's `rebuild/`), and the parts of a staged or retired index inside those.
const CHECKED_DEPTH: usize = 3;

/// The index directory of the repository at `root`, checked: neither it nor anything in it
/// may be a symbolic link ([`StoreError::Link`]), and it must be a directory where it exists.
/// It need not exist.
pub fn index_dir(root: &Path) -> Result<PathBuf, StoreError> {
    let dir = root.join(INDEX_DIR);
    check(&dir)?;
    Ok(dir)
}

/// Refuses the index directory `dir` if it is a link or not a directory, or holds a link.
fn check(dir: &Path) -> Result<(), StoreError> {
    match fs::symlink_metadata(dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StoreError::Io {
            path: dir.to_path_buf(),
            source,
        }),
        Ok(metadata) if metadata.file_type().is_symlink() => Err(StoreError::Link {
            path: dir.to_path_buf(),
        }),
        Ok(metadata) if !metadata.is_dir() => Err(StoreError::NotADirectory {
            path: dir.to_path_buf(),
        }),
        Ok(_) => refuse_links_below(dir, CHECKED_DEPTH),
    }
}

/// Refuses a symbolic link among the entries of `dir`, and of its directories down to
/// `depth` levels.
fn refuse_links_below(dir: &Path, depth: usize) -> Result<(), StoreError> {
    let io_error = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let kind = match entry.file_type() {
            // Removed since it was listed: a rebuild publishing, or retiring the old index.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            kind => kind.map_err(io_error)?,
        };
        if kind.is_symlink() {
            return Err(StoreError::Link { path: entry.path() });
        }
        if kind.is_dir() && depth > 1 {
            match refuse_links_below(&entry.path(), depth - 1) {
                Err(StoreError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                checked => checked?,
            }
        }
    }
    Ok(())
}

/// Creates the index directory that holds `database` (its parent; the repository root must
/// exist: a root removed while quarry runs is not made again) with its `.gitignore`, after
/// checking it holds no link.
pub(crate) fn create_index_dir(database: &Path) -> Result<(), StoreError> {
    let dir = database
        .parent()
        .expect("the database lives in the index directory");
    check(dir)?;
    let io_error = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match fs::create_dir(dir) {
        Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(io_error(error));
        }
        _ => {}
    }
    let ignore = dir.join(".gitignore");
    // `create_new` never follows a link: one made since the check is an error, not a write.
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&ignore)
    {
        // The index is derived data: keep it out of the repository.
        Ok(mut file) => std::io::Write::write_all(&mut file, b"*\n").map_err(io_error),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(io_error(error)),
    }
}

/// Which file a path names: two opens of one path read the same data while it is equal. A
/// rebuild renames a new database in, so a reader compares it with the one it opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    /// The identity of the file at `path` now; `None` where there is none.
    pub fn of(path: &Path) -> Option<Self> {
        let metadata = fs::metadata(path).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Self {
                device: metadata.dev(),
                inode: metadata.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            // No inode: a file renamed in has a creation time of its own.
            let created = metadata.created().ok()?;
            let nanos = created
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            Some(Self {
                device: 0,
                inode: nanos,
            })
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_anywhere_in_the_index_directory_are_refused() {
        let repo = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(index_dir(repo.path()).is_ok(), "no index directory yet");
        symlink(elsewhere.path(), repo.path().join(INDEX_DIR)).unwrap();
        let error = index_dir(repo.path()).unwrap_err();
        assert!(matches!(error, StoreError::Link { .. }), "{error}");
        assert!(error.to_string().contains("symbolic link"), "{error}");

        fs::remove_file(repo.path().join(INDEX_DIR)).unwrap();
        let lexical = repo.path().join(INDEX_DIR).join("rebuild").join("lexical");
        fs::create_dir_all(&lexical).unwrap();
        symlink(elsewhere.path().join("x"), lexical.join("meta.json")).unwrap();
        let error = index_dir(repo.path()).unwrap_err();
        assert!(
            matches!(&error, StoreError::Link { path } if path.ends_with("lexical/meta.json")),
            "{error}"
        );
    }

    #[test]
    fn an_index_directory_that_is_a_file_is_refused() {
        let repo = tempfile::tempdir().unwrap();
        fs::write(repo.path().join(INDEX_DIR), "").unwrap();
        let error = index_dir(repo.path()).unwrap_err();
        assert!(matches!(error, StoreError::NotADirectory { .. }), "{error}");
    }

    #[test]
    fn the_index_directory_is_not_made_where_the_root_is_gone() {
        let repo = tempfile::tempdir().unwrap();
        let gone = repo.path().join("gone");
        let error = create_index_dir(&gone.join(INDEX_DIR).join("index.redb")).unwrap_err();
        assert!(matches!(error, StoreError::Io { .. }), "{error}");
        assert!(!gone.exists());
    }

    #[test]
    fn a_replaced_file_has_another_identity() {
        let dir = tempfile::tempdir().unwrap();
        let (path, other) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&path, "1").unwrap();
        let first = FileIdentity::of(&path).unwrap();
        assert_eq!(FileIdentity::of(&path), Some(first));
        fs::write(&other, "2").unwrap();
        fs::rename(&other, &path).unwrap();
        assert_ne!(FileIdentity::of(&path), Some(first));
        fs::remove_file(&path).unwrap();
        assert_eq!(FileIdentity::of(&path), None);
    }
}
