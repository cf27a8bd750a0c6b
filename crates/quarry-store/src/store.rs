//! [`Store`]: the redb database under `.quarry/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use quarry_chunk::ChunkId;
use redb::{Builder, ConcurrencyMode, Database, ReadOnlyDatabase, ReadableDatabase};

use crate::StoreError;
use crate::ann::{AnnIndex, DenseStrategy, EXACT_SCAN_BELOW};
use crate::filter::Filter;
use crate::index_dir::{FileIdentity, INDEX_DIR, create_index_dir, index_dir};
use crate::lexical::LexicalIndex;
use crate::records::{Drift, FileState, IndexSettings, META, SCHEMA_VERSION, StoredChunk};

mod batch;
mod rebuild;
mod settings;
mod snapshot;

use rebuild::remove_staged;
use settings::stored_settings;

pub use batch::Batch;
pub(crate) use batch::VectorChanges;
pub use snapshot::Snapshot;

pub(crate) const DATABASE_FILE: &str = "index.redb";
/// The file a writer holds locked, beside the database.
const WRITER_LOCK: &str = "writer.lock";
/// The vector index's directory, beside the database.
const ANN_DIR: &str = "vectors";
/// The lexical index's directory, beside the database.
const LEXICAL_DIR: &str = "lexical";
/// The rows of a vector index too small for a graph, beside the database.
const ROWS_DIR: &str = "rows";

/// A search result: a chunk and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The chunk.
    pub id: ChunkId,
    /// For a vector search, the dot product with the query (the cosine similarity, as stored
    /// vectors are normalised); for a lexical search, the BM25 score.
    pub score: f32,
}

/// How many files and chunks the index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Files, skipped ones included.
    pub files: u64,
    /// Chunks, searchable by their words.
    pub chunks: u64,
    /// Chunks with their vector, searchable by meaning too; the rest are pending.
    pub embedded: u64,
}

/// The on-disk index of one repository.
#[derive(Debug)]
pub struct Store {
    db: Handle,
    path: PathBuf,
    settings: IndexSettings,
    /// Below this many vectors, an exact scan answers and no graph is built.
    pub(crate) exact_scan_below: u64,
    /// How searches use the vector index.
    pub(crate) dense_strategy: DenseStrategy,
    /// The vector index, behind its own lock: a search that brings it up to date (or a
    /// checkpoint that builds it) never holds up a lexical search. A writer may share its
    /// reader's ([`Store::share_vectors`]).
    pub(crate) vectors: Arc<Mutex<Vectors>>,
    /// When a checkpoint writes the vector index to disk.
    pub(crate) vector_saves: VectorSaves,
    /// The lexical index; absent for a reader when no writer has created it yet.
    pub(crate) lexical: Mutex<Option<LexicalIndex>>,
    /// What the store repaired on its own, for the user to see.
    pub(crate) notes: Mutex<Vec<String>>,
    /// A writer's exclusive lock on `writer.lock`, released when the store is dropped.
    _writer_lock: Option<fs::File>,
    /// For a [`Store::stage`]d writer, the live database its index replaces when published.
    live: Option<PathBuf>,
    /// The file a writer of this index holds locked: beside the database, or beside the live
    /// one for a staged index (and its readers).
    pub(crate) lock_path: PathBuf,
    /// For a reader, the database file it opened: a forced rebuild renames another in.
    opened: Option<FileIdentity>,
}

/// The vector index derived from the database, brought up to date as it is used.
#[derive(Default)]
pub(crate) struct Vectors {
    /// Built when first needed, and only for indexes of [`crate::ann::EXACT_SCAN_BELOW`]
    /// vectors or more.
    pub ann: Option<AnnIndex>,
    /// The generation of the vector index on disk.
    pub saved: Option<u64>,
    /// The vector index on disk could not be read (and was reported); searches scan until a
    /// checkpoint rebuilds it.
    pub unreadable: bool,
    /// Vectors inserted or removed since the copy on disk (`saved`) was written.
    pub unsaved: usize,
}

/// When a checkpoint writes the vector index to disk. The database holds every vector, and
/// a process that loads an older copy brings it up to date (by the changes since), so the
/// copy may lag: a long-lived process that keeps the index in memory need not write it after
/// each small change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VectorSaves {
    /// At every checkpoint after a change: a process that ends after its run, whose next
    /// reader loads the copy.
    #[default]
    EveryChange,
    /// Once this many vectors were inserted or removed since the copy on disk was written,
    /// or when the graph was built again: the next process to load it catches up by at
    /// most that many.
    AfterChanges(usize),
}

impl std::fmt::Debug for Vectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vectors")
            .field("ann", &self.ann.as_ref().map(|a| a.generation))
            .field("saved", &self.saved)
            .field("unsaved", &self.unsaved)
            .finish()
    }
}

/// One process may write an index while others read it: every handle uses redb's
/// `SingleWriter` mode, in which read-only handles follow the writer's commits.
enum Handle {
    Writer(Database),
    Reader(ReadOnlyDatabase),
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Handle::Writer(_) => "Writer",
            Handle::Reader(_) => "Reader",
        })
    }
}

impl Handle {
    fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Handle::Writer(db) => db.begin_read(),
            Handle::Reader(db) => db.begin_read(),
        }
    }
}

/// A reader's page cache: a long-lived reader (`quarry mcp`) otherwise keeps every page it
/// has read, up to redb's 1 GiB, and a server re-indexing after every edit reads new pages all
/// day; the operating system's page cache serves what falls out of it.
pub(crate) const READER_CACHE_BYTES: usize = 16 << 20;

/// redb's builder for quarry's index, with a page cache of `cache_bytes` (else redb's).
fn builder(cache_bytes: Option<usize>) -> Builder {
    let mut builder = Builder::new();
    builder.set_concurrency_mode(ConcurrencyMode::SingleWriter);
    if let Some(bytes) = cache_bytes {
        builder.set_cache_size(bytes);
    }
    builder
}

impl Store {
    /// The database file of the index at `root`.
    pub fn database_path(root: &Path) -> PathBuf {
        root.join(INDEX_DIR).join(DATABASE_FILE)
    }

    /// Opens the index at `root`, creating it if there is none. An index built with other
    /// settings or another schema is an error (see [`Store::rebuild`]).
    pub fn open(root: &Path, settings: IndexSettings) -> Result<Self, StoreError> {
        let path = Self::database_path(root);
        create_index_dir(&path)?;
        // redb would make a second writer wait for the first; quarry says so at once.
        within_lock_grace(|| {
            let writer_lock = lock_for_writing(&path)?;
            // Under the lock no rebuild runs: what one left was killed before publishing.
            remove_staged(root)?;
            Self::open_locked(path.clone(), settings.clone(), writer_lock)
        })
    }

    fn open_locked(
        path: PathBuf,
        settings: IndexSettings,
        writer_lock: fs::File,
    ) -> Result<Self, StoreError> {
        let db = open_database(&path, None, |builder| builder.create(&path))?;
        let mut lexical = LexicalIndex::open_writer(&path.with_file_name(LEXICAL_DIR))?;
        let replaced = lexical.take_replaced();
        let fresh = lexical.generation().is_none();
        let store = Self::new(
            Handle::Writer(db),
            path,
            settings,
            Some(lexical),
            Some(writer_lock),
        );
        store.check_or_record_settings()?;
        let rebuilt = store.sync_lexical(&mut store.lexical())?;
        match (replaced, rebuilt) {
            (Some(why), Some(chunks)) => store.note_lexical_rebuilt(&why, chunks),
            (None, Some(chunks)) if fresh && chunks > 0 => store.note(format!(
                "{}: the lexical index was missing; rebuilt it from the database ({chunks} \
                 chunks)",
                store.lexical_dir().display()
            )),
            _ => {}
        }
        Ok(store)
    }

    /// Opens the index at `root` for reading, while another process may be writing it: each
    /// read sees the writer's last commit. The index must exist and match `settings`.
    pub fn open_read_only(root: &Path, settings: IndexSettings) -> Result<Self, StoreError> {
        Self::open_reader(root, Some(settings))
    }

    /// [`Store::open_read_only`] with the settings the index records, whatever they are: for
    /// reading an index without the model it was built with (searching by words, status).
    pub fn open_recorded(root: &Path) -> Result<Self, StoreError> {
        Self::open_reader(root, None)
    }

    fn open_reader(root: &Path, settings: Option<IndexSettings>) -> Result<Self, StoreError> {
        let path = index_dir(root)?.join(DATABASE_FILE);
        // Missing, or created by a writer that has not yet written redb's header to it.
        if !path.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Err(StoreError::NoIndex { path });
        }
        // Taken before the open: a database swapped in between is then seen as a replacement.
        let opened = FileIdentity::of(&path);
        let db = open_database(&path, Some(READER_CACHE_BYTES), |builder| {
            builder.open_read_only(&path)
        })?;
        let lexical = open_lexical_reader(&path.with_file_name(LEXICAL_DIR))?;
        let recorded = settings.is_none();
        // Replaced by the recorded ones below when none are given.
        let settings = settings.unwrap_or(IndexSettings {
            model: String::new(),
            dimensions: 0,
            chunker: String::new(),
        });
        let mut store = Self::new(Handle::Reader(db), path, settings, lexical, None);
        store.opened = opened;
        let stored = store.read(|txn| match txn.open_table(META) {
            Ok(meta) => Ok(Some(stored_settings(&meta)?)),
            // The writer has created the file but not yet committed its first transaction.
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(error) => Err(error.into()),
        })?;
        let Some(stored) = stored else {
            return Err(StoreError::NoIndex {
                path: store.path.clone(),
            });
        };
        if recorded
            && let (Some(SCHEMA_VERSION), Some(Ok(settings))) = (stored.version, &stored.settings)
        {
            store.settings = settings.clone();
        }
        store.check_stored(stored)?;
        Ok(store)
    }

    fn new(
        db: Handle,
        path: PathBuf,
        settings: IndexSettings,
        lexical: Option<LexicalIndex>,
        writer_lock: Option<fs::File>,
    ) -> Self {
        Self {
            lock_path: path.with_file_name(WRITER_LOCK),
            db,
            path,
            settings,
            exact_scan_below: EXACT_SCAN_BELOW,
            dense_strategy: DenseStrategy::default(),
            vectors: Arc::default(),
            vector_saves: VectorSaves::default(),
            lexical: Mutex::new(lexical),
            notes: Mutex::default(),
            _writer_lock: writer_lock,
            live: None,
            opened: None,
        }
    }

    /// The vector index's directory.
    pub(crate) fn ann_dir(&self) -> PathBuf {
        self.path.with_file_name(ANN_DIR)
    }

    /// The directory of the rows a small index's checkpoint saves.
    pub(crate) fn rows_dir(&self) -> PathBuf {
        self.path.with_file_name(ROWS_DIR)
    }

    /// The lexical index's directory.
    pub(crate) fn lexical_dir(&self) -> PathBuf {
        self.path.with_file_name(LEXICAL_DIR)
    }

    pub(crate) fn vectors(&self) -> MutexGuard<'_, Vectors> {
        unpoisoned(&self.vectors)
    }

    pub(crate) fn lexical(&self) -> MutexGuard<'_, Option<LexicalIndex>> {
        unpoisoned(&self.lexical)
    }

    /// Adds a note for [`Store::notes`].
    pub(crate) fn note(&self, note: String) {
        unpoisoned(&self.notes).push(note);
    }

    /// Sets how many vectors an index must hold before searches use the HNSW graph rather
    /// than an exact scan ([`EXACT_SCAN_BELOW`] by default).
    pub fn set_exact_scan_below(&mut self, vectors: u64) {
        self.exact_scan_below = vectors;
    }

    /// Sets how searches use the vector index ([`DenseStrategy::Calibrated`] by default):
    /// the others are for tests and benchmarks that compare the graph with the scan.
    pub fn set_dense_strategy(&mut self, strategy: DenseStrategy) {
        self.dense_strategy = strategy;
    }

    /// Sets when this writer's checkpoints write the vector index to disk
    /// ([`VectorSaves::EveryChange`] by default).
    pub fn set_vector_saves(&mut self, saves: VectorSaves) {
        self.vector_saves = saves;
    }

    /// Makes this writer use `reader`'s vector index, a read-only handle of the same
    /// database in this process, rather than one of its own: a checkpoint then brings the
    /// reader's index up to date (the vectors a long-lived reader holds are never loaded
    /// from disk again) and the reader's searches see it at once. Refused (`false`) for a
    /// reader of a replaced database or of another index.
    pub fn share_vectors(&mut self, reader: &Store) -> bool {
        let same = self.is_writer()
            && !reader.is_writer()
            && self.path == reader.path
            && !reader.is_replaced();
        if same {
            self.vectors = Arc::clone(&reader.vectors);
        }
        same
    }

    /// Whether this reader's database is no longer the index's: a forced rebuild (in any
    /// process) swapped another in, or the index was removed. Such a reader goes on reading
    /// the file it opened, so its owner opens the index again. One `stat`, cheap enough to
    /// ask before every request. A writer holds the index's lock, and is never replaced.
    pub fn is_replaced(&self) -> bool {
        self.opened
            .is_some_and(|opened| FileIdentity::of(&self.path) != Some(opened))
    }

    /// Whether this handle may write.
    pub fn is_writer(&self) -> bool {
        matches!(self.db, Handle::Writer(_))
    }

    /// What the store repaired on its own since it was opened (a damaged vector index rebuilt,
    /// a stale lexical index brought up to date...), for the user to see.
    pub fn notes(&self) -> Vec<String> {
        unpoisoned(&self.notes).clone()
    }

    /// Closes this writer and hands what it brought up to date to `reader`, a read-only
    /// handle of the same index in this process: its notes join the reader's, and a vector
    /// index it built or caught up (where it did not share the reader's,
    /// [`Store::share_vectors`]) replaces the reader's, so that the reader's next search
    /// neither loads nor catches up one. The swap holds the reader's vector lock for a
    /// moment only: its searches never wait for a build.
    pub fn hand_over(self, reader: &Store) {
        debug_assert_eq!(
            self.path, reader.path,
            "a writer hands over to its own index"
        );
        if !Arc::ptr_eq(&self.vectors, &reader.vectors) {
            let built = std::mem::take(&mut *self.vectors());
            if built.ann.is_some() {
                *reader.vectors() = built;
            }
        }
        let notes = std::mem::take(&mut *unpoisoned(&self.notes));
        unpoisoned(&reader.notes).extend(notes);
    }

    /// The settings the index was built with.
    pub fn settings(&self) -> &IndexSettings {
        &self.settings
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a batch of changes, committed atomically by [`Batch::commit`].
    pub fn write(&self) -> Result<Batch<'_>, StoreError> {
        let Handle::Writer(db) = &self.db else {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        };
        let txn = db
            .begin_write()
            .map_err(|e| database_error(&self.path, e.into()))?;
        Ok(Batch {
            store: self,
            txn,
            removed: Vec::new(),
            added: Vec::new(),
            vectors_changed: Vec::new(),
        })
    }

    /// A consistent view of the index as of now: later commits (by this or another process)
    /// do not change what it reads. Use one snapshot for reads that must agree.
    pub fn snapshot(&self) -> Result<Snapshot<'_>, StoreError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| database_error(&self.path, e.into()))?;
        Ok(Snapshot {
            txn,
            path: &self.path,
            dimensions: self.settings.dimensions,
        })
    }

    /// What the index knows about the file at `path` ([`Snapshot::file`]).
    pub fn file(&self, path: &str) -> Result<Option<FileState>, StoreError> {
        self.snapshot()?.file(path)
    }

    /// Every file in the index ([`Snapshot::files`]).
    pub fn files(&self) -> Result<Vec<FileState>, StoreError> {
        self.snapshot()?.files()
    }

    /// The chunk with `id` ([`Snapshot::chunk`]).
    pub fn chunk(&self, id: ChunkId) -> Result<Option<StoredChunk>, StoreError> {
        self.snapshot()?.chunk(id)
    }

    /// The vector of the chunk with `id` ([`Snapshot::vector`]).
    pub fn vector(&self, id: ChunkId) -> Result<Option<Vec<f32>>, StoreError> {
        self.snapshot()?.vector(id)
    }

    /// How many files and chunks the index holds ([`Snapshot::counts`]).
    pub fn counts(&self) -> Result<Counts, StoreError> {
        self.snapshot()?.counts()
    }

    /// Files whose last re-index drifted by `threshold` or more ([`Snapshot::drifts`]).
    pub fn drifts(&self, threshold: f32) -> Result<Vec<Drift>, StoreError> {
        self.snapshot()?.drifts(threshold)
    }

    /// The git commit the project was last indexed at ([`Snapshot::indexed_commit`]).
    pub fn indexed_commit(&self) -> Result<Option<String>, StoreError> {
        self.snapshot()?.indexed_commit()
    }

    /// The best `k` chunks for `query` by exact scan ([`Snapshot::search_exact`]).
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, StoreError> {
        self.snapshot()?.search_exact(query, k, filter)
    }

    fn read<T>(
        &self,
        body: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        self.snapshot()?.read(body)
    }

    pub(crate) fn corrupt(&self, message: String) -> StoreError {
        corrupt(&self.path, message)
    }
}

/// Opens the database at `path` with `open`: an error, or a panic inside redb (which a
/// plain open of a damaged file may raise), is the store's error.
pub(crate) fn open_database<D>(
    path: &Path,
    cache_bytes: Option<usize>,
    open: impl FnOnce(&Builder) -> Result<D, redb::DatabaseError>,
) -> Result<D, StoreError> {
    let builder = builder(cache_bytes);
    match crate::panics::catch_quietly(|| open(&builder)) {
        Ok(opened) => opened.map_err(|e| database_error(path, e.into())),
        Err(panic) => Err(corrupt(
            path,
            format!("redb panicked: {}", crate::panics::panic_message(&*panic)),
        )),
    }
}

/// A reader's lexical index in `dir`: `None` where there is none yet, and where it cannot be
/// read, so that the database opens anyway (for status to report the damage, and searches by
/// meaning); its lexical searches then say it is damaged.
fn open_lexical_reader(dir: &Path) -> Result<Option<LexicalIndex>, StoreError> {
    match LexicalIndex::open_reader(dir) {
        Err(StoreError::Damaged { .. }) => Ok(None),
        opened => opened,
    }
}

/// A panic while a derived index was being updated leaves it possibly behind the database,
/// which it tolerates: it is brought up to date when next used.
fn unpoisoned<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a writer's open retries a lock that looks taken. A process that another thread
/// forks just as the last writer lets go shares that writer's open files, and so its locks,
/// until it executes its program (a millisecond or so): a lock released a moment ago may
/// still look taken. A writer at work holds it far longer, and is refused after this.
const LOCK_GRACE: Duration = Duration::from_millis(50);

/// `open`'s result, retried while it is [`StoreError::Locked`], up to [`LOCK_GRACE`].
pub(crate) fn within_lock_grace<T>(
    mut open: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let deadline = Instant::now() + LOCK_GRACE;
    loop {
        match open() {
            Err(StoreError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            result => return result,
        }
    }
}

/// Takes the index's writer lock, or fails with [`StoreError::Locked`] if another handle
/// holds it.
pub(crate) fn lock_for_writing(database: &Path) -> Result<fs::File, StoreError> {
    let path = database.with_file_name(WRITER_LOCK);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
            path: database.to_path_buf(),
        }),
        Err(fs::TryLockError::Error(source)) => Err(StoreError::Io { path, source }),
    }
}

/// The outcome of removing `path`, where its being absent already is success.
fn remove_if_present(path: &Path, removed: std::io::Result<()>) -> Result<(), StoreError> {
    match removed {
        Err(source) if source.kind() != std::io::ErrorKind::NotFound => Err(StoreError::Io {
            path: path.to_path_buf(),
            source,
        }),
        _ => Ok(()),
    }
}

fn corrupt(path: &Path, message: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        message,
    }
}

pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable record: {e}"))
}

fn decode_u64(bytes: &[u8]) -> u64 {
    bytes.try_into().map(u64::from_le_bytes).unwrap_or(0)
}

pub(crate) fn database_error(path: &Path, error: redb::Error) -> StoreError {
    let path = path.to_path_buf();
    match error {
        redb::Error::DatabaseAlreadyOpen => StoreError::Locked { path },
        redb::Error::RepairAborted => StoreError::NeedsRepair { path },
        redb::Error::Corrupted(message) => StoreError::Corrupt { path, message },
        // A read or write failed before (a truncated file is the usual reason), and redb
        // refuses the file until it is opened again.
        redb::Error::PreviousIo => StoreError::Corrupt {
            path,
            message: "a read or write of the file failed earlier (is it truncated?)".into(),
        },
        redb::Error::Io(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            StoreError::Corrupt {
                path,
                message: "the file is truncated".into(),
            }
        }
        // redb's word for a file that is not a redb database at all.
        redb::Error::Io(source) if source.kind() == std::io::ErrorKind::InvalidData => {
            StoreError::Corrupt {
                path,
                message: source.to_string(),
            }
        }
        other => StoreError::Database {
            path,
            message: other.to_string(),
        },
    }
}
