//! Whether an index's files are whole: [`Store::check`] and the [`Damage`] it reports.
//!
//! What is found, and what is not:
//!
//! - **The lexical index:** a missing or unreadable `meta.json` (or `.managed.json`), another
//!   schema, a segment file it lists that is missing, a mark left by a search that failed
//!   or panicked on it, a generation or a chunk count other than the database's; and, with
//!   [`Check::Full`], a segment file whose bytes do not match the CRC32 in its footer
//!   (tantivy writes one per file), which catches any truncation or overwrite.
//! - **The vector index and the saved rows** ([`Check::Full`]): whichever searches use, its
//!   metadata, sizes and checksums, as loading it would find them.
//! - **The database** ([`Check::Full`]): a header that is not redb's, a length that is not a
//!   whole number of its pages, every table a search or an index run opens opened (its
//!   length and its first and last entries read: a descent from its root to each end; the
//!   small ones, and those a search or an index run reads whole, read whole: the metadata,
//!   the file records, the drift records, the per-file data, the vectors and the text
//!   waiting for theirs), every chunk record readable, and the tables agreeing (as many
//!   chunks as the files list, every chunk embedded or pending); and, where no writer is at
//!   work, its record of its free pages (redb's allocator state, which a reader beside a
//!   writer never loads, and every index run's open does: damage there fails every search
//!   that indexes first). redb checksums its pages but verifies them only in a full
//!   integrity check that reads and rewrites the file (writers only), so bytes overwritten
//!   where no check reads (inside a vector, a record's bytes that still decode, free pages,
//!   redb's other records of its own) are not found here; a truncated file fails to open at
//!   all. [`Store::check_pages`] runs that integrity check (`quarry status --deep`).

use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use redb::{ReadableTable, ReadableTableMetadata};

use crate::StoreError;
use crate::ann::AnnIndex;
use crate::lexical::{Depth, inspect};
use crate::panics::{catch_quietly, panic_message};
use crate::records::{
    CHUNKS, DRIFT, DRIFT_BASE, Drift, FILE_DATA, FILES, FileState, META, PENDING, VECTORS,
};
use crate::store::{
    Counts, READER_CACHE_BYTES, Snapshot, Store, decode, lock_for_writing, open_database,
    within_lock_grace,
};

/// Which part of an index a [`Damage`] is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexPart {
    /// `index.redb`, the source of truth: only a rebuild repairs it.
    Database,
    /// `lexical/`: the next writer to open the index rebuilds it from the database.
    Lexical,
    /// `vectors/`: the next checkpoint (the end of an index run) rebuilds it.
    VectorIndex,
    /// `rows/`: the next checkpoint saves them again.
    Rows,
}

impl IndexPart {
    /// Whether it is derived from the database, so that `quarry index` rebuilds it without
    /// embedding anything.
    pub fn is_derived(self) -> bool {
        self != IndexPart::Database
    }

    /// What it is called in messages.
    pub fn name(self) -> &'static str {
        match self {
            IndexPart::Database => "the index database",
            IndexPart::Lexical => "the lexical index",
            IndexPart::VectorIndex => "the vector index",
            IndexPart::Rows => "the saved vector rows",
        }
    }
}

/// Something wrong with an index's files, found by [`Store::check`]. Its message names the
/// file, the problem and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The part of the index.
    pub part: IndexPart,
    /// Its file or directory.
    pub path: PathBuf,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {} is damaged: rebuild with `quarry index --force`",
            self.path.display(),
            self.problem,
            self.part.name()
        )?;
        if self.part.is_derived() {
            f.write_str(
                " (or run `quarry index`, which rebuilds it from the database without \
                 embedding anything)",
            )?;
        }
        Ok(())
    }
}

/// How closely [`Store::check`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The lexical index's metadata, the files it lists (present or not), a search's mark,
    /// its generation and chunk count against the database's: no file is read but
    /// metadata, so that it can run before every search.
    Quick,
    /// Also every file's checksum (the lexical index's segments, the saved vector index or
    /// rows), and the database's header, length, tables and records, and its record of free
    /// pages (see the module's list): reads the derived indexes whole, as a first search
    /// would (about 10 ms per 10 MB), and the database's tables as far as a search reads them.
    Full,
}

impl Store {
    /// What is wrong with this index's files, none if nothing (see the module's list of what
    /// is found and what is not). A lexical index behind the database is reported only when
    /// no writer is at work, which would be bringing it up to date.
    pub fn check(&self, depth: Check) -> Result<Vec<Damage>, StoreError> {
        // A database that fails to be read is itself the finding.
        match self.check_all(depth) {
            Err(StoreError::Corrupt { message, .. }) => Ok(vec![self.database_damage(message)]),
            Err(error @ (StoreError::Database { .. } | StoreError::NeedsRepair { .. })) => {
                Ok(vec![self.database_damage(error.to_string())])
            }
            checked => checked,
        }
    }

    /// redb's integrity check of the database at `root`: every page read and compared with
    /// its checksum (`quarry status --deep`). It holds the index's writer lock while it runs
    /// ([`StoreError::Locked`] while another writer works), and opens the database alone:
    /// nothing derived from it is touched. Where it finds damage, redb repairs what it can
    /// (its record of free pages); records it cannot read are reported.
    pub fn check_pages(root: &Path) -> Result<Vec<Damage>, StoreError> {
        let path = crate::index_dir(root)?.join(crate::store::DATABASE_FILE);
        if !path.is_file() {
            return Err(StoreError::NoIndex { path });
        }
        let _lock = within_lock_grace(|| lock_for_writing(&path))?;
        let damage = |problem: String| Damage {
            part: IndexPart::Database,
            path: path.clone(),
            problem,
        };
        let mut db = match open_database(&path, None, |builder| builder.open(&path)) {
            Ok(db) => db,
            Err(StoreError::Corrupt { message, .. }) => return Ok(vec![damage(message)]),
            Err(error) => return Err(error),
        };
        let checked = catch_quietly(|| db.check_integrity());
        Ok(match checked {
            Ok(Ok(true)) => Vec::new(),
            Ok(Ok(false)) => vec![damage(
                "pages did not match their checksums (redb repaired its record of free pages; \
                 rebuild to be sure of the rest)"
                    .into(),
            )],
            Ok(Err(error)) => vec![damage(format!("the integrity check failed: {error}"))],
            Err(panic) => vec![damage(format!(
                "the integrity check panicked: {}",
                panic_message(&*panic)
            ))],
        })
    }

    fn database_damage(&self, problem: String) -> Damage {
        Damage {
            part: IndexPart::Database,
            path: self.path().to_path_buf(),
            problem,
        }
    }

    fn check_all(&self, depth: Check) -> Result<Vec<Damage>, StoreError> {
        let settled_before = self.is_writer() || !writer_active(&self.lock_path);
        let snapshot = self.snapshot()?;
        let generation = snapshot.generation()?;
        let counts = snapshot.counts()?;
        let mut found = Vec::new();
        if depth == Check::Full {
            found.extend(self.check_database(&snapshot, counts)?);
            if found.is_empty()
                && let Some(problem) = self.free_pages_problem()
            {
                found.push(self.database_damage(problem));
            }
        }

        let dir = self.lexical_dir();
        let lexical = inspect(
            &dir,
            match depth {
                Check::Quick => Depth::Quick,
                Check::Full => Depth::Full,
            },
        );
        let damage = |problem: String| Damage {
            part: IndexPart::Lexical,
            path: dir.clone(),
            problem,
        };
        if lexical.absent {
            if counts.chunks > 0 {
                found.push(damage(format!(
                    "it is missing, while the database holds {} chunks",
                    counts.chunks
                )));
            }
        } else if !lexical.problems.is_empty() {
            found.extend(lexical.problems.into_iter().map(damage));
        } else {
            // Compared only when no writer was at work from the snapshot to the metadata read.
            let settled = settled_before
                && (self.is_writer() || !writer_active(&self.lock_path))
                && self.snapshot()?.generation()? == generation;
            let documents = lexical.documents.unwrap_or(0);
            match lexical.generation {
                _ if !settled => {}
                Some(found_generation) if found_generation != generation => {
                    found.push(damage(format!(
                        "it reflects commit {found_generation}, the database {generation} (a \
                         writer stopped between the two)"
                    )))
                }
                None if counts.chunks > 0 => found.push(damage(format!(
                    "it was never committed, while the database holds {} chunks",
                    counts.chunks
                ))),
                _ if documents != counts.chunks => found.push(damage(format!(
                    "it holds {documents} chunks, the database {}",
                    counts.chunks
                ))),
                _ => {}
            }
        }

        if depth == Check::Full {
            let dimensions = self.settings().dimensions;
            let (part, dir, checked) = if counts.embedded >= self.exact_scan_below {
                let dir = self.ann_dir();
                let checked = AnnIndex::verify(&dir, dimensions).map(|_| ());
                (IndexPart::VectorIndex, dir, checked)
            } else {
                let dir = self.rows_dir();
                let checked = AnnIndex::load_rows(&dir, dimensions).map(|_| ());
                (IndexPart::Rows, dir, checked)
            };
            if let Err(problem) = checked {
                found.push(Damage {
                    part,
                    path: dir,
                    problem,
                });
            }
        }
        Ok(found)
    }

    /// What a writer's open would find wrong with the database's record of its free pages
    /// (redb's allocator state), which a reader beside a writer never loads, and every index
    /// run (so every search that indexes first) does: the database is opened once more, as
    /// a writer alone would open it but read-only, under the writer's lock taken for that
    /// moment (a writer opening meanwhile retries within its grace). Nothing is said where a
    /// writer works or holds the file (it loaded the record when it opened), nor where the
    /// last writer was killed (the next one rebuilds the record: no damage).
    fn free_pages_problem(&self) -> Option<String> {
        if self.is_writer() {
            return None;
        }
        let lock = fs::File::open(&self.lock_path).ok()?;
        lock.try_lock().ok()?;
        let opened = open_database(self.path(), None, |_| {
            let mut builder = redb::Builder::new();
            builder.set_cache_size(READER_CACHE_BYTES);
            builder.open_read_only(self.path())
        });
        match opened {
            Err(StoreError::Corrupt { message, .. }) => Some(format!(
                "its record of free pages is unreadable ({message})"
            )),
            _ => None,
        }
    }

    /// The database's header and length, and whether its file records agree with its
    /// chunks.
    fn check_database(
        &self,
        snapshot: &Snapshot<'_>,
        counts: Counts,
    ) -> Result<Vec<Damage>, StoreError> {
        let path = self.path();
        let damage = |problem: String| Damage {
            part: IndexPart::Database,
            path: path.to_path_buf(),
            problem,
        };
        if let Some(problem) = database_file_problem(path) {
            return Ok(vec![damage(problem)]);
        }
        // A table that fails here would fail every search (or index run) that opens it; the
        // records below would fail the same way, so what is found here is said alone.
        let tables = check_tables(snapshot);
        if !tables.is_empty() {
            return Ok(tables.into_iter().map(damage).collect());
        }
        let (listed, pending) = snapshot.read(|txn| {
            let mut listed = Ok(0u64);
            for entry in txn.open_table(FILES)?.iter()? {
                let (key, value) = entry?;
                match decode::<FileState>(value.value()) {
                    Ok(state) => {
                        if let Ok(listed) = listed.as_mut() {
                            *listed += state.chunk_ids.len() as u64;
                        }
                    }
                    Err(message) => listed = Err(format!("{}: {message}", key.value())),
                }
            }
            Ok((listed, txn.open_table(PENDING)?.len()?))
        })?;
        // Every chunk record read and decoded: what searches show (about 1 µs a chunk).
        if let Err(error) = snapshot.for_each_chunk(|_| {}) {
            let problem = match error {
                StoreError::Corrupt { message, .. } => message,
                other => other.to_string(),
            };
            return Ok(vec![damage(format!(
                "a chunk record is unreadable: {problem}"
            ))]);
        }
        let mut found = Vec::new();
        match listed {
            Err(problem) => found.push(damage(format!("unreadable file record {problem}"))),
            Ok(listed) if listed != counts.chunks => found.push(damage(format!(
                "its files list {listed} chunks, but it holds {}",
                counts.chunks
            ))),
            Ok(_) => {}
        }
        if counts.embedded + pending != counts.chunks {
            found.push(damage(format!(
                "it holds {} chunks, but {} vectors and {pending} waiting for theirs",
                counts.chunks, counts.embedded
            )));
        }
        Ok(found)
    }
}

/// How much of a table [`check_tables`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Its length and its first and last entries: every level of its tree, at both ends.
    Ends,
    /// Every entry, key and value.
    Whole,
}

/// What is wrong with each table of the index, as a search or an index run would find it on
/// opening it: each opened, and read as far as [`Reach`] says (the file and chunk records
/// are read whole, and decoded, after this). A table that a read-only handle of an older
/// index lacks is none of this check's business.
fn check_tables(snapshot: &Snapshot<'_>) -> Vec<String> {
    [
        touch(snapshot, "meta", META, Reach::Whole, nothing),
        touch(snapshot, "files", FILES, Reach::Ends, nothing),
        touch(snapshot, "chunks", CHUNKS, Reach::Ends, nothing),
        // Read whole by every index run's checkpoint that brings the saved vector index or
        // rows up to date (their ids), so by every search that indexes first.
        touch(snapshot, "vectors", VECTORS, Reach::Whole, nothing),
        touch(snapshot, "pending", PENDING, Reach::Whole, nothing),
        // Decoded: read by `status` itself, and by every index run that re-indexes a file.
        touch(snapshot, "drift", DRIFT, Reach::Whole, |path, drift| {
            decode::<Drift>(drift.value())
                .map(drop)
                .map_err(|message| format!("unreadable drift record {}: {message}", path.value()))
        }),
        touch(snapshot, "drift_base", DRIFT_BASE, Reach::Ends, nothing),
        touch(snapshot, "file_data", FILE_DATA, Reach::Whole, nothing),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// One entry of a table, as [`touch`] reads it.
type Entry<'a, K, V> = (redb::AccessGuard<'a, K>, redb::AccessGuard<'a, V>);

/// What is wrong with `table` (called `name`) in `snapshot`, if anything: it is opened and
/// read as far as `reach` says, every key and value taken as its type (a `&str` that is not
/// UTF-8 fails here as it would in a search), and `each` checks every entry read.
fn touch<K: redb::Key + 'static, V: redb::Value + 'static>(
    snapshot: &Snapshot<'_>,
    name: &str,
    table: redb::TableDefinition<K, V>,
    reach: Reach,
    each: impl Fn(&redb::AccessGuard<'_, K>, &redb::AccessGuard<'_, V>) -> Result<(), String>,
) -> Option<String> {
    let read = snapshot.read(|txn| {
        let table = match txn.open_table(table) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Ok(())),
            Err(error) => return Err(error.into()),
        };
        table.len()?;
        let check = |(key, value): Entry<'_, K, V>| {
            let _ = (key.value(), value.value());
            each(&key, &value)
        };
        match reach {
            Reach::Ends => {
                for entry in [table.first()?, table.last()?].into_iter().flatten() {
                    if let Err(problem) = check(entry) {
                        return Ok(Err(problem));
                    }
                }
            }
            Reach::Whole => {
                for entry in table.iter()? {
                    if let Err(problem) = check(entry?) {
                        return Ok(Err(problem));
                    }
                }
            }
        }
        Ok(Ok(()))
    });
    match read {
        Ok(Ok(())) => None,
        Ok(Err(problem)) => Some(problem),
        Err(StoreError::Corrupt { message, .. }) => {
            Some(format!("its table `{name}` is unreadable ({message})"))
        }
        Err(other) => Some(format!("its table `{name}` is unreadable ({other})")),
    }
}

/// No check of an entry but that it reads, for [`touch`].
fn nothing<K: redb::Key, V: redb::Value>(
    _: &redb::AccessGuard<'_, K>,
    _: &redb::AccessGuard<'_, V>,
) -> Result<(), String> {
    Ok(())
}

/// What is wrong with the database file's header or length, if anything: redb's file
/// format opens with its magic number and the page size (a little-endian `u32` at byte 12),
/// and redb only ever sizes the file in whole pages.
fn database_file_problem(path: &Path) -> Option<String> {
    const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
    let mut header = [0u8; 16];
    let read = fs::File::open(path).and_then(|mut file| {
        file.read_exact(&mut header)?;
        file.metadata()
    });
    let length = match read {
        Ok(metadata) => metadata.len(),
        Err(error) => return Some(format!("unreadable: {error}")),
    };
    if header[..MAGIC.len()] != MAGIC {
        return Some("it is not a redb database (its header is overwritten)".into());
    }
    let page = u64::from(u32::from_le_bytes(
        header[12..16].try_into().expect("four bytes"),
    ));
    if page == 0 || !length.is_multiple_of(page) {
        return Some(format!(
            "its length, {length} bytes, is not a whole number of its {page}-byte pages (it \
             was truncated)"
        ));
    }
    None
}

/// Whether a writer holds the index's lock file `lock`: another process's, or another
/// handle's in this process (the lock is taken per open file). Taking the lock shared for a
/// moment to see makes a writer opening just then retry, within its grace.
fn writer_active(lock: &Path) -> bool {
    let Ok(file) = fs::File::open(lock) else {
        return false;
    };
    matches!(file.try_lock_shared(), Err(fs::TryLockError::WouldBlock))
}
