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
//!   whole number of its pages, every file and chunk record readable, and the tables agreeing
//!   (as many chunks as the files list, every chunk embedded or pending). redb checksums its
//!   pages but verifies them only in a full integrity check that reads and rewrites the file
//!   (writers only), so bytes overwritten where no check reads (the vectors, a record's
//!   bytes that still decode, free pages) are not found here; a truncated file fails to open
//!   at all. [`Store::check_pages`] runs that integrity check (`quarry status --deep`).

use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use redb::{ReadableTable, ReadableTableMetadata};

use crate::StoreError;
use crate::ann::AnnIndex;
use crate::lexical::{Depth, inspect};
use crate::panics::{catch_quietly, panic_message};
use crate::records::{FILES, FileState, PENDING};
use crate::store::{
    Counts, Snapshot, Store, decode, lock_for_writing, open_database, within_lock_grace,
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
    /// rows) and the database's header, length and file records: reads the derived indexes
    /// whole, as a first search would (about 10 ms per 10 MB).
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
