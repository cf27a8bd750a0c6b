//! [`Store`]: the redb database under `.quarry/`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use quarry_chunk::ChunkId;
use redb::{
    Builder, ConcurrencyMode, Database, ReadOnlyDatabase, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, WriteTransaction,
};

use crate::StoreError;
use crate::ann::{AnnIndex, DenseStrategy, EXACT_SCAN_BELOW, dot};
use crate::best::Best;
use crate::filter::Filter;
use crate::lexical::LexicalIndex;
use crate::pending::{Content, DriftTables, read_chunks};
use crate::records::{
    CHUNKS, DRIFT, DRIFT_BASE, Drift, FILE_DATA, FILES, FileState, IndexSettings, META, PENDING,
    SCHEMA_VERSION, StoredChunk, VECTORS, decode_vector, decode_vector_into, encode, encode_vector,
    meta_keys,
};

/// The index directory's name, at the repository root.
pub const INDEX_DIR: &str = ".quarry";
const DATABASE_FILE: &str = "index.redb";
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
    /// checkpoint that builds it) never holds up a lexical search.
    pub(crate) vectors: Mutex<Vectors>,
    /// The lexical index; absent for a reader when no writer has created it yet.
    pub(crate) lexical: Mutex<Option<LexicalIndex>>,
    /// What the store repaired on its own, for the user to see.
    pub(crate) notes: Mutex<Vec<String>>,
    /// A writer's exclusive lock on `writer.lock`, released when the store is dropped.
    _writer_lock: Option<fs::File>,
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
}

impl std::fmt::Debug for Vectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vectors")
            .field("ann", &self.ann.as_ref().map(|a| a.generation))
            .field("saved", &self.saved)
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

fn builder() -> Builder {
    let mut builder = Builder::new();
    builder.set_concurrency_mode(ConcurrencyMode::SingleWriter);
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
            Self::open_locked(path.clone(), settings.clone(), writer_lock)
        })
    }

    fn open_locked(
        path: PathBuf,
        settings: IndexSettings,
        writer_lock: fs::File,
    ) -> Result<Self, StoreError> {
        let db = builder()
            .create(&path)
            .map_err(|e| database_error(&path, e.into()))?;
        let lexical = LexicalIndex::open_writer(&path.with_file_name(LEXICAL_DIR))?;
        let store = Self::new(
            Handle::Writer(db),
            path,
            settings,
            Some(lexical),
            Some(writer_lock),
        );
        store.check_or_record_settings()?;
        store.sync_lexical(&mut store.lexical())?;
        Ok(store)
    }

    /// Opens the index at `root` for reading, while another process may be writing it: each
    /// read sees the writer's last commit. The index must exist and match `settings`.
    pub fn open_read_only(root: &Path, settings: IndexSettings) -> Result<Self, StoreError> {
        let path = Self::database_path(root);
        if !path.is_file() {
            return Err(StoreError::NoIndex { path });
        }
        let db = builder()
            .open_read_only(&path)
            .map_err(|e| database_error(&path, e.into()))?;
        let lexical = LexicalIndex::open_reader(&path.with_file_name(LEXICAL_DIR))?;
        let store = Self::new(Handle::Reader(db), path, settings, lexical, None);
        let stored = store.read(|txn| match txn.open_table(META) {
            Ok(meta) => Ok(Some(stored_settings(&meta)?)),
            // The writer has created the file but not yet committed its first transaction.
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(error) => Err(error.into()),
        })?;
        let Some(stored) = stored else {
            return Err(StoreError::NoIndex { path: store.path });
        };
        store.check_stored(stored)?;
        Ok(store)
    }

    /// Replaces the index at `root`, whatever state it is in, with an empty one.
    pub fn rebuild(root: &Path, settings: IndexSettings) -> Result<Self, StoreError> {
        let path = Self::database_path(root);
        create_index_dir(&path)?;
        let writer_lock = within_lock_grace(|| lock_for_writing(&path))?;
        remove_if_present(&path, fs::remove_file(&path))?;
        for derived in [ANN_DIR, LEXICAL_DIR, ROWS_DIR] {
            let dir = path.with_file_name(derived);
            remove_if_present(&dir, fs::remove_dir_all(&dir))?;
        }
        Self::open_locked(path, settings, writer_lock)
    }

    fn new(
        db: Handle,
        path: PathBuf,
        settings: IndexSettings,
        lexical: Option<LexicalIndex>,
        writer_lock: Option<fs::File>,
    ) -> Self {
        Self {
            db,
            path,
            settings,
            exact_scan_below: EXACT_SCAN_BELOW,
            dense_strategy: DenseStrategy::default(),
            vectors: Mutex::default(),
            lexical: Mutex::new(lexical),
            notes: Mutex::default(),
            _writer_lock: writer_lock,
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
    /// handle of the same index in this process: the vector index it built or caught up
    /// replaces the reader's, so that the reader's next search neither loads nor catches up
    /// one, and its notes join the reader's. The swap holds the reader's vector lock for a
    /// moment only: its searches never wait for a build.
    pub fn hand_over(self, reader: &Store) {
        debug_assert_eq!(
            self.path, reader.path,
            "a writer hands over to its own index"
        );
        let built = std::mem::take(&mut *self.vectors());
        if built.ann.is_some() {
            *reader.vectors() = built;
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

    fn check_or_record_settings(&self) -> Result<(), StoreError> {
        let Handle::Writer(db) = &self.db else {
            unreachable!("only a writer records settings")
        };
        let error = |e: redb::Error| database_error(&self.path, e);
        let txn = db.begin_write().map_err(|e| error(e.into()))?;
        {
            // Readers expect every table, even in an empty index.
            txn.open_table(FILES).map_err(|e| error(e.into()))?;
            txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
            txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
            txn.open_table(DRIFT).map_err(|e| error(e.into()))?;
            txn.open_table(PENDING).map_err(|e| error(e.into()))?;
            txn.open_table(DRIFT_BASE).map_err(|e| error(e.into()))?;
            txn.open_table(FILE_DATA).map_err(|e| error(e.into()))?;
            let mut meta = txn.open_table(META).map_err(|e| error(e.into()))?;
            let stored = stored_settings(&meta).map_err(|e| error(e.into()))?;
            if stored.version.is_none() {
                meta.insert(meta_keys::SCHEMA_VERSION, &SCHEMA_VERSION.to_le_bytes()[..])
                    .map_err(|e| error(e.into()))?;
                meta.insert(meta_keys::SETTINGS, &encode(&self.settings)[..])
                    .map_err(|e| error(e.into()))?;
                let created = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64);
                meta.insert(meta_keys::GENERATION, &created.to_le_bytes()[..])
                    .map_err(|e| error(e.into()))?;
            } else {
                self.check_stored(stored)?;
            }
        }
        txn.commit().map_err(|e| error(e.into()))
    }

    /// Compares what an existing index records with what this handle was opened for.
    fn check_stored(&self, stored: StoredSettings) -> Result<(), StoreError> {
        match (stored.version, stored.settings) {
            (Some(found), _) if found != SCHEMA_VERSION => Err(StoreError::SchemaMismatch {
                path: self.path.clone(),
                found,
                expected: SCHEMA_VERSION,
            }),
            (Some(_), Some(Ok(stored))) if stored != self.settings => {
                Err(StoreError::SettingsMismatch {
                    path: self.path.clone(),
                    stored: describe(&stored),
                    wanted: describe(&self.settings),
                })
            }
            (Some(_), Some(Ok(_))) => Ok(()),
            _ => Err(self.corrupt("the index settings are missing or unreadable".into())),
        }
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

/// A read-only view of the index at one commit.
pub struct Snapshot<'a> {
    txn: redb::ReadTransaction,
    path: &'a Path,
    dimensions: usize,
}

impl Snapshot<'_> {
    /// What the index knows about the file at `path`.
    pub fn file(&self, path: &str) -> Result<Option<FileState>, StoreError> {
        self.read(|txn| {
            let files = txn.open_table(FILES)?;
            Ok(files.get(path)?.map(|v| decode(v.value())).transpose())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// Every file in the index, by path.
    pub fn files(&self) -> Result<Vec<FileState>, StoreError> {
        self.read(|txn| {
            let files = txn.open_table(FILES)?;
            let mut all = Vec::new();
            for entry in files.iter()? {
                all.push(decode(entry?.1.value()));
            }
            Ok(all.into_iter().collect::<Result<Vec<_>, _>>())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// The chunk with `id`.
    pub fn chunk(&self, id: ChunkId) -> Result<Option<StoredChunk>, StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            Ok(chunks.get(id.0)?.map(|v| decode(v.value())).transpose())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// The chunks with `ids`, in their order, `None` for those the index lacks: the table is
    /// opened once for all of them.
    pub fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<Option<StoredChunk>>, StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                found.push(chunks.get(id.0)?.map(|v| decode(v.value())).transpose());
            }
            Ok(found.into_iter().collect::<Result<Vec<_>, String>>())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// Which of `ids` the index holds, in their order: a key lookup each, nothing decoded.
    pub fn contains_chunks(&self, ids: &[ChunkId]) -> Result<Vec<bool>, StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            ids.iter()
                .map(|id| Ok(chunks.get(id.0)?.is_some()))
                .collect()
        })
    }

    /// The vector of the chunk with `id`.
    pub fn vector(&self, id: ChunkId) -> Result<Option<Vec<f32>>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            Ok(vectors.get(id.0)?.map(|v| decode_vector(v.value())))
        })
    }

    /// The drift of the file at `path`'s last re-index, if it was re-indexed.
    pub fn drift(&self, path: &str) -> Result<Option<Drift>, StoreError> {
        self.read(|txn| {
            let drift = txn.open_table(DRIFT)?;
            Ok(drift.get(path)?.map(|v| decode(v.value())).transpose())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// Files whose last re-index drifted by `threshold` or more on average, most drifted
    /// first (then by path).
    pub fn drifts(&self, threshold: f32) -> Result<Vec<Drift>, StoreError> {
        let mut drifts = self
            .read(|txn| {
                let table = txn.open_table(DRIFT)?;
                let mut all = Vec::new();
                for entry in table.iter()? {
                    all.push(decode::<Drift>(entry?.1.value()));
                }
                Ok(all.into_iter().collect::<Result<Vec<_>, _>>())
            })?
            .map_err(|message| self.corrupt(message))?;
        drifts.retain(|d| d.average >= threshold);
        drifts.sort_by(|a, b| b.average.total_cmp(&a.average).then(a.path.cmp(&b.path)));
        Ok(drifts)
    }

    /// What `name` attached to the file at `path` ([`Batch::set_file_data`]).
    pub fn file_data(&self, path: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(|txn| {
            let data = txn.open_table(FILE_DATA)?;
            Ok(data.get((path, name))?.map(|v| v.value().to_vec()))
        })
    }

    /// The git commit the project was last indexed at ([`Batch::set_indexed_commit`]).
    pub fn indexed_commit(&self) -> Result<Option<String>, StoreError> {
        self.read(|txn| {
            let meta = txn.open_table(META)?;
            Ok(meta
                .get(meta_keys::INDEXED_COMMIT)?
                .map(|v| String::from_utf8_lossy(v.value()).into_owned()))
        })
    }

    /// The commit counter derived indexes are tagged with.
    pub(crate) fn generation(&self) -> Result<u64, StoreError> {
        self.read(|txn| {
            let meta = txn.open_table(META)?;
            Ok(meta
                .get(meta_keys::GENERATION)?
                .map_or(0, |v| decode_u64(v.value())))
        })
    }

    /// Every indexed path.
    pub(crate) fn paths(&self) -> Result<Vec<String>, StoreError> {
        self.read(|txn| {
            let files = txn.open_table(FILES)?;
            let mut paths = Vec::new();
            for entry in files.iter()? {
                paths.push(entry?.0.value().to_owned());
            }
            Ok(paths)
        })
    }

    /// Every chunk, in id order.
    pub(crate) fn for_each_chunk(
        &self,
        mut each: impl FnMut(StoredChunk),
    ) -> Result<(), StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            for entry in chunks.iter()? {
                match decode(entry?.1.value()) {
                    Ok(chunk) => each(chunk),
                    Err(message) => return Ok(Err(message)),
                }
            }
            Ok(Ok(()))
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// Every chunk that has its vector, with it, in id order.
    pub(crate) fn for_each_embedded(
        &self,
        mut each: impl FnMut(StoredChunk, Vec<f32>),
    ) -> Result<(), StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            let vectors = txn.open_table(VECTORS)?;
            for entry in vectors.iter()? {
                let (id, vector) = entry?;
                let Some(chunk) = chunks.get(id.value())? else {
                    let id = id.value();
                    return Ok(Err(format!("vector {id:032x} has no chunk")));
                };
                match decode(chunk.value()) {
                    Ok(chunk) => each(chunk, decode_vector(vector.value())),
                    Err(message) => return Ok(Err(message)),
                }
            }
            Ok(Ok(()))
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// The id of every chunk that has its vector.
    pub(crate) fn embedded_ids(&self) -> Result<HashSet<u128>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            let mut ids = HashSet::new();
            for entry in vectors.iter()? {
                ids.insert(entry?.0.value());
            }
            Ok(ids)
        })
    }

    /// How many files and chunks the index holds.
    pub fn counts(&self) -> Result<Counts, StoreError> {
        self.read(|txn| {
            Ok(Counts {
                files: txn.open_table(FILES)?.len()?,
                chunks: txn.open_table(CHUNKS)?.len()?,
                embedded: txn.open_table(VECTORS)?.len()?,
            })
        })
    }

    /// The `k` chunks most similar to `query` among those `filter` admits, best first, by an
    /// exact scan of every vector. Ties are broken by chunk id, so the order is deterministic.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            let chunks = txn.open_table(CHUNKS)?;
            let mut best = Best::new(k);
            let mut vector = Vec::with_capacity(self.dimensions);
            for entry in vectors.iter()? {
                let (id, bytes) = entry?;
                let id = id.value();
                if !filter.is_empty() {
                    let Some(chunk) = chunks.get(id)? else {
                        continue;
                    };
                    match decode::<StoredChunk>(chunk.value()) {
                        Ok(chunk) if filter.admits(&chunk) => {}
                        _ => continue,
                    }
                }
                decode_vector_into(bytes.value(), &mut vector);
                best.push(id, dot(query, &vector));
            }
            Ok(best.into_hits())
        })
    }

    /// The vector length of this index.
    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub(crate) fn read<T>(
        &self,
        body: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        body(&self.txn).map_err(|e| database_error(self.path, e))
    }

    pub(crate) fn corrupt(&self, message: String) -> StoreError {
        corrupt(self.path, message)
    }
}

/// A set of changes to the index, all visible at once when committed, none if dropped.
pub struct Batch<'a> {
    pub(crate) store: &'a Store,
    pub(crate) txn: WriteTransaction,
    /// Chunks removed or replaced, for the lexical index.
    removed: Vec<u128>,
    /// Chunks stored, for the lexical index.
    added: Vec<StoredChunk>,
}

impl Batch<'_> {
    /// Records `state` for its file, storing `new_chunks` with their vectors and removing the
    /// file's chunks that `state` no longer lists. A chunk `state` lists and `new_chunks` does
    /// not give must already be stored (an unchanged chunk keeps its vector). When the
    /// file's chunks change, its [`Drift`] is recorded.
    pub fn put_file(
        &mut self,
        state: &FileState,
        new_chunks: &[(StoredChunk, &[f32])],
    ) -> Result<(), StoreError> {
        let contents: Vec<(&StoredChunk, Content<'_>)> = new_chunks
            .iter()
            .map(|(chunk, vector)| (chunk, Content::Vector(vector)))
            .collect();
        self.store_file(state, &contents)
    }

    /// [`Batch::put_file`] for chunks whose vectors come later: each is stored with the text
    /// to embed, searchable by words at once and by meaning once [`Batch::put_vectors`] gives
    /// its vector ([`Snapshot::pending`] lists what is left). The file's [`Drift`] is
    /// recorded when the last of its chunks has its vector.
    pub fn put_file_pending(
        &mut self,
        state: &FileState,
        new_chunks: &[(StoredChunk, &str)],
    ) -> Result<(), StoreError> {
        let contents: Vec<(&StoredChunk, Content<'_>)> = new_chunks
            .iter()
            .map(|(chunk, text)| (chunk, Content::Pending(text)))
            .collect();
        self.store_file(state, &contents)
    }

    fn store_file(
        &mut self,
        state: &FileState,
        new_chunks: &[(&StoredChunk, Content<'_>)],
    ) -> Result<(), StoreError> {
        let path = &self.store.path;
        let error = |e: redb::Error| database_error(path, e);
        let dimensions = self.store.settings.dimensions;
        let mut files = self.txn.open_table(FILES).map_err(|e| error(e.into()))?;
        let mut chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let mut vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
        let mut pending = self.txn.open_table(PENDING).map_err(|e| error(e.into()))?;

        let previous: Option<FileState> = files
            .get(state.path.as_str())
            .map_err(|e| error(e.into()))?
            .map(|v| decode(v.value()))
            .transpose()
            .map_err(|message| self.store.corrupt(message))?;
        for (chunk, content) in new_chunks {
            if let Content::Vector(vector) = content
                && vector.len() != dimensions
            {
                return Err(StoreError::Dimensions {
                    chunk: chunk.id,
                    expected: dimensions,
                    found: vector.len(),
                });
            }
        }
        // The file's embedded chunks before the change, unless it is still waiting for its
        // first vectors (then, as for a new file, there is nothing to drift from).
        let before = match &previous {
            Some(previous) if previous.chunk_ids != state.chunk_ids || !new_chunks.is_empty() => {
                let before = read_chunks(&chunks, &vectors, &previous.chunk_ids).map_err(error)?;
                (!before.is_empty() || previous.chunk_ids.is_empty()).then_some(before)
            }
            _ => None,
        };
        let kept: HashSet<u128> = state.chunk_ids.iter().copied().collect();
        for old in previous.iter().flat_map(|p| &p.chunk_ids) {
            if !kept.contains(old) {
                chunks.remove(*old).map_err(|e| error(e.into()))?;
                vectors.remove(*old).map_err(|e| error(e.into()))?;
                pending.remove(*old).map_err(|e| error(e.into()))?;
                self.removed.push(*old);
            }
        }
        for (chunk, content) in new_chunks {
            let replaced = chunks
                .insert(chunk.id, &encode(*chunk)[..])
                .map_err(|e| error(e.into()))?
                .is_some();
            if replaced {
                self.removed.push(chunk.id);
            }
            match content {
                Content::Vector(vector) => {
                    vectors
                        .insert(chunk.id, &encode_vector(vector)[..])
                        .map_err(|e| error(e.into()))?;
                    pending.remove(chunk.id).map_err(|e| error(e.into()))?;
                }
                Content::Pending(text) => {
                    vectors.remove(chunk.id).map_err(|e| error(e.into()))?;
                    pending
                        .insert(chunk.id, *text)
                        .map_err(|e| error(e.into()))?;
                }
            }
            self.added.push((*chunk).clone());
        }
        for id in &state.chunk_ids {
            if chunks.get(*id).map_err(|e| error(e.into()))?.is_none() {
                return Err(StoreError::MissingChunk {
                    path: state.path.clone(),
                    chunk: *id,
                });
            }
        }
        let mut drifts = DriftTables::open(&self.txn).map_err(error)?;
        drifts
            .settle(&state.path, &state.chunk_ids, before, &chunks, &vectors)
            .map_err(error)?;
        files
            .insert(state.path.as_str(), &encode(state)[..])
            .map_err(|e| error(e.into()))?;
        Ok(())
    }

    /// Attaches `data` under `name` to the file at `path` (for example its PageRank); removed
    /// with the file.
    pub fn set_file_data(&mut self, path: &str, name: &str, data: &[u8]) -> Result<(), StoreError> {
        let index = &self.store.path;
        let mut table = self
            .txn
            .open_table(FILE_DATA)
            .map_err(|e| database_error(index, e.into()))?;
        table
            .insert((path, name), data)
            .map_err(|e| database_error(index, e.into()))?;
        Ok(())
    }

    /// Records the git commit the project's files are indexed at.
    pub fn set_indexed_commit(&mut self, commit: &str) -> Result<(), StoreError> {
        let index = &self.store.path;
        let mut meta = self
            .txn
            .open_table(META)
            .map_err(|e| database_error(index, e.into()))?;
        meta.insert(meta_keys::INDEXED_COMMIT, commit.as_bytes())
            .map_err(|e| database_error(index, e.into()))?;
        Ok(())
    }

    /// Removes the file at `path` and its chunks; nothing happens if it is not indexed.
    pub fn remove_file(&mut self, path: &str) -> Result<(), StoreError> {
        let index = &self.store.path;
        let error = |e: redb::Error| database_error(index, e);
        let mut files = self.txn.open_table(FILES).map_err(|e| error(e.into()))?;
        let Some(previous) = files.remove(path).map_err(|e| error(e.into()))? else {
            return Ok(());
        };
        let previous: FileState =
            decode(previous.value()).map_err(|message| self.store.corrupt(message))?;
        let mut chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let mut vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
        let mut pending = self.txn.open_table(PENDING).map_err(|e| error(e.into()))?;
        for id in previous.chunk_ids {
            chunks.remove(id).map_err(|e| error(e.into()))?;
            vectors.remove(id).map_err(|e| error(e.into()))?;
            pending.remove(id).map_err(|e| error(e.into()))?;
            self.removed.push(id);
        }
        let mut drift = self.txn.open_table(DRIFT).map_err(|e| error(e.into()))?;
        drift.remove(path).map_err(|e| error(e.into()))?;
        let mut base = self
            .txn
            .open_table(DRIFT_BASE)
            .map_err(|e| error(e.into()))?;
        base.remove(path).map_err(|e| error(e.into()))?;
        let mut data = self
            .txn
            .open_table(FILE_DATA)
            .map_err(|e| error(e.into()))?;
        data.retain_in((path, "")..(path, "\u{10FFFF}"), |_, _| false)
            .map_err(|e| error(e.into()))?;
        Ok(())
    }

    /// Makes every change of the batch durable and visible, at once, then brings the lexical
    /// index up to date. If that fails the batch is still committed, and the lexical index is
    /// rebuilt when next used.
    pub fn commit(self) -> Result<(), StoreError> {
        let path = &self.store.path;
        let error = |e: redb::Error| database_error(path, e);
        let generation = {
            let mut meta = self.txn.open_table(META).map_err(|e| error(e.into()))?;
            let generation = meta
                .get(meta_keys::GENERATION)
                .map_err(|e| error(e.into()))?
                .map_or(0, |v| decode_u64(v.value()))
                .wrapping_add(1);
            meta.insert(meta_keys::GENERATION, &generation.to_le_bytes()[..])
                .map_err(|e| error(e.into()))?;
            generation
        };
        self.txn.commit().map_err(|e| error(e.into()))?;
        if let Some(lexical) = self.store.lexical().as_mut() {
            let added: Vec<&StoredChunk> = self.added.iter().collect();
            lexical.apply(&self.removed, &added, generation)?;
        }
        Ok(())
    }
}

/// A panic while a derived index was being updated leaves it possibly behind the database,
/// which it tolerates: it is brought up to date when next used.
fn unpoisoned<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn create_index_dir(database: &Path) -> Result<(), StoreError> {
    let dir = database
        .parent()
        .expect("the database lives in the index directory");
    let io_error = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(io_error)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        // The index is derived data: keep it out of the repository.
        fs::write(&ignore, "*\n").map_err(io_error)?;
    }
    Ok(())
}

/// What an index records about itself; `None` where it records nothing (a new index).
struct StoredSettings {
    version: Option<u32>,
    settings: Option<Result<IndexSettings, String>>,
}

fn stored_settings(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<StoredSettings, redb::StorageError> {
    Ok(StoredSettings {
        version: meta
            .get(meta_keys::SCHEMA_VERSION)?
            .map(|v| decode_version(v.value())),
        settings: meta.get(meta_keys::SETTINGS)?.map(|v| decode(v.value())),
    })
}

/// How long a writer's open retries a lock that looks taken. A process that another thread
/// forks just as the last writer lets go shares that writer's open files, and so its locks,
/// until it executes its program (a millisecond or so): a lock released a moment ago may
/// still look taken. A writer at work holds it far longer, and is refused after this.
const LOCK_GRACE: Duration = Duration::from_millis(50);

/// `open`'s result, retried while it is [`StoreError::Locked`], up to [`LOCK_GRACE`].
fn within_lock_grace<T>(mut open: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
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
fn lock_for_writing(database: &Path) -> Result<fs::File, StoreError> {
    let path = database.with_file_name("writer.lock");
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

fn decode_version(bytes: &[u8]) -> u32 {
    bytes.try_into().map(u32::from_le_bytes).unwrap_or(0)
}

fn describe(settings: &IndexSettings) -> String {
    format!(
        "model {} ({} dimensions), chunker {}",
        settings.model, settings.dimensions, settings.chunker
    )
}

pub(crate) fn database_error(path: &Path, error: redb::Error) -> StoreError {
    let path = path.to_path_buf();
    match error {
        redb::Error::DatabaseAlreadyOpen => StoreError::Locked { path },
        redb::Error::RepairAborted => StoreError::NeedsRepair { path },
        redb::Error::Corrupted(message) => StoreError::Corrupt { path, message },
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
