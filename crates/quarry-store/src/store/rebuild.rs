//! A forced rebuild beside the live index: [`Store::stage`] builds under `.quarry/rebuild/`
//! while readers read the live index, [`Store::publish`] swaps it in.

use std::fs;
use std::path::{Path, PathBuf};

use super::{
    ANN_DIR, DATABASE_FILE, Handle, LEXICAL_DIR, READER_CACHE_BYTES, ROWS_DIR, Store, WRITER_LOCK,
    create_index_dir, lock_for_writing, open_database, open_lexical_reader, remove_if_present,
    within_lock_grace,
};
use crate::StoreError;
use crate::index_dir::{FileIdentity, index_dir};
use crate::records::IndexSettings;

/// Where a forced rebuild builds its index, inside the index directory, until
/// [`Store::publish`] swaps it in.
const STAGING_DIR: &str = "rebuild";
/// Where the replaced index waits, for the moment of the swap, to be removed.
const RETIRED_DIR: &str = "retired";
/// What makes an index: the database and the indexes derived from it. Swapped in this order
/// (the database last), so that a reader that finds the database finds the rest.
const INDEX_PARTS: [&str; 4] = [LEXICAL_DIR, ANN_DIR, ROWS_DIR, DATABASE_FILE];

impl Store {
    /// Replaces the index at `root`, whatever state it is in, with an empty one: a
    /// [`Store::stage`]d index published at once.
    pub fn rebuild(root: &Path, settings: IndexSettings) -> Result<Self, StoreError> {
        let writer_lock = Self::stage(root, settings.clone())?.publish()?;
        Self::open_locked(Self::database_path(root), settings, writer_lock)
    }

    /// Starts an empty index for `root` beside the live one, which readers go on reading:
    /// a writer of a database under `.quarry/rebuild/`, holding the index's writer lock (so
    /// no other writer changes the live index meanwhile) until [`Store::publish`] swaps it
    /// in. What a killed rebuild left there is removed first.
    pub fn stage(root: &Path, settings: IndexSettings) -> Result<Self, StoreError> {
        let live = Self::database_path(root);
        create_index_dir(&live)?;
        let writer_lock = within_lock_grace(|| lock_for_writing(&live))?;
        remove_staged(root)?;
        let staged = staging_database(root);
        create_index_dir(&staged)?;
        let mut store = Self::open_locked(staged, settings, writer_lock)?;
        store.lock_path = live.with_file_name(WRITER_LOCK);
        store.live = Some(live);
        Ok(store)
    }

    /// Swaps the index this [`Store::stage`]d writer built in for the live one, closing this
    /// handle, and returns the writer lock, still held (released when dropped). A reader
    /// that opens the index during the swap (a few renames) finds none while the lock is held,
    /// and waits for it; a reader already open keeps reading the files it has open. A writer
    /// that was not staged only closes.
    pub fn publish(mut self) -> Result<fs::File, StoreError> {
        let writer_lock = self
            ._writer_lock
            .take()
            .expect("only a writer publishes, and a writer holds the lock");
        let Some(live) = self.live.take() else {
            return Ok(writer_lock);
        };
        let staged_dir = self.path.parent().expect("in a directory").to_path_buf();
        // Closed first: the database and the lexical writer let go of their files.
        drop(self);
        let index_dir = live.parent().expect("in a directory");
        let retired = index_dir.join(RETIRED_DIR);
        remove_if_present(&retired, fs::remove_dir_all(&retired))?;
        fs::create_dir(&retired).map_err(|source| StoreError::Io {
            path: retired.clone(),
            source,
        })?;
        // The database leaves first, so that from here on a reader finds no index and waits.
        for part in INDEX_PARTS.iter().rev() {
            move_if_present(&index_dir.join(part), &retired.join(part))?;
        }
        for part in INDEX_PARTS {
            move_if_present(&staged_dir.join(part), &index_dir.join(part))?;
        }
        for dir in [&retired, &staged_dir] {
            remove_if_present(dir, fs::remove_dir_all(dir))?;
        }
        Ok(writer_lock)
    }

    /// A read-only handle of this index (see [`Store::open_read_only`]), wherever it lives:
    /// a [`Store::stage`]d index is read through this before it is published.
    pub fn reader(&self) -> Result<Self, StoreError> {
        let opened = FileIdentity::of(&self.path);
        let db = open_database(&self.path, Some(READER_CACHE_BYTES), |builder| {
            builder.open_read_only(&self.path)
        })?;
        let lexical = open_lexical_reader(&self.lexical_dir())?;
        let mut reader = Self::new(
            Handle::Reader(db),
            self.path.clone(),
            self.settings.clone(),
            lexical,
            None,
        );
        reader.lock_path = self.lock_path.clone();
        reader.opened = opened;
        Ok(reader)
    }

    /// Whether a forced rebuild of the index at `root` has started and not been published
    /// (or was killed before it was).
    pub fn is_rebuilding(root: &Path) -> bool {
        let Ok(dir) = index_dir(root) else {
            return false;
        };
        dir.join(STAGING_DIR).exists() || dir.join(RETIRED_DIR).exists()
    }
}

/// A staged index dropped without [`Store::publish`] (its rebuild failed, or was given up)
/// is removed while its writer lock is still held, so that no `.quarry/rebuild/` is left for
/// the next writer to find (one killed outright still leaves it, and that writer removes it).
impl Drop for Store {
    fn drop(&mut self) {
        if self.live.is_some()
            && let Some(staged_dir) = self.path.parent()
        {
            let _ = fs::remove_dir_all(staged_dir);
        }
    }
}

/// The database a [`Store::stage`]d rebuild of the index at `root` writes.
fn staging_database(root: &Path) -> PathBuf {
    root.join(crate::INDEX_DIR)
        .join(STAGING_DIR)
        .join(DATABASE_FILE)
}

/// Removes what a rebuild of the index at `root` left unpublished (killed, or failed). The
/// caller holds the writer lock, so no rebuild is at work there.
pub(super) fn remove_staged(root: &Path) -> Result<(), StoreError> {
    let dir = root.join(crate::INDEX_DIR).join(STAGING_DIR);
    remove_if_present(&dir, fs::remove_dir_all(&dir))
}

/// Renames `from` to `to` where `from` exists.
fn move_if_present(from: &Path, to: &Path) -> Result<(), StoreError> {
    remove_if_present(from, fs::rename(from, to))
}
