//! [`Store`]: the redb database under `.quarry/`.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use quarry_chunk::ChunkId;
use redb::{
    Builder, ConcurrencyMode, Database, ReadOnlyDatabase, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, WriteTransaction,
};

use crate::StoreError;
use crate::filter::Filter;
use crate::records::{
    CHUNKS, FILES, FileState, IndexSettings, META, SCHEMA_VERSION, StoredChunk, VECTORS,
    decode_vector, encode, encode_vector, meta_keys,
};

/// The index directory's name, at the repository root.
pub const INDEX_DIR: &str = ".quarry";
const DATABASE_FILE: &str = "index.redb";

/// A search result: a chunk and its cosine similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The chunk.
    pub id: ChunkId,
    /// Dot product with the query; cosine similarity, as stored vectors are normalised.
    pub score: f32,
}

/// How many files and chunks the index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Files, skipped ones included.
    pub files: u64,
    /// Chunks, each with its vector.
    pub chunks: u64,
}

/// The on-disk index of one repository.
#[derive(Debug)]
pub struct Store {
    db: Handle,
    path: PathBuf,
    settings: IndexSettings,
    /// A writer's exclusive lock on `writer.lock`, released when the store is dropped.
    _writer_lock: Option<fs::File>,
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
        let writer_lock = lock_for_writing(&path)?;
        let db = builder()
            .create(&path)
            .map_err(|e| database_error(&path, e.into()))?;
        let store = Self {
            db: Handle::Writer(db),
            path,
            settings,
            _writer_lock: Some(writer_lock),
        };
        store.check_or_record_settings()?;
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
        let store = Self {
            db: Handle::Reader(db),
            path,
            settings,
            _writer_lock: None,
        };
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
        match fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(StoreError::Io {
                    path,
                    source: error,
                });
            }
            _ => {}
        }
        Self::open(root, settings)
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
            let mut meta = txn.open_table(META).map_err(|e| error(e.into()))?;
            let stored = stored_settings(&meta).map_err(|e| error(e.into()))?;
            if stored.version.is_none() {
                meta.insert(meta_keys::SCHEMA_VERSION, &SCHEMA_VERSION.to_le_bytes()[..])
                    .map_err(|e| error(e.into()))?;
                meta.insert(meta_keys::SETTINGS, &encode(&self.settings)[..])
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
        Ok(Batch { store: self, txn })
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

    fn corrupt(&self, message: String) -> StoreError {
        corrupt(&self.path, message)
    }
}

/// A read-only view of the index at one commit.
pub struct Snapshot<'a> {
    txn: redb::ReadTransaction,
    path: &'a Path,
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

    /// The vector of the chunk with `id`.
    pub fn vector(&self, id: ChunkId) -> Result<Option<Vec<f32>>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            Ok(vectors.get(id.0)?.map(|v| decode_vector(v.value())))
        })
    }

    /// How many files and chunks the index holds.
    pub fn counts(&self) -> Result<Counts, StoreError> {
        self.read(|txn| {
            Ok(Counts {
                files: txn.open_table(FILES)?.len()?,
                chunks: txn.open_table(CHUNKS)?.len()?,
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
            let mut best = BinaryHeap::with_capacity(k + 1);
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
                let score = dot(query, bytes.value());
                best.push(Ranked(Hit {
                    id: ChunkId(id),
                    score,
                }));
                if best.len() > k {
                    best.pop();
                }
            }
            // `Ranked` orders best first, so the ascending sort is the ranking.
            Ok(best.into_sorted_vec().into_iter().map(|r| r.0).collect())
        })
    }

    fn read<T>(
        &self,
        body: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        body(&self.txn).map_err(|e| database_error(self.path, e))
    }

    fn corrupt(&self, message: String) -> StoreError {
        corrupt(self.path, message)
    }
}

/// A set of changes to the index, all visible at once when committed, none if dropped.
pub struct Batch<'a> {
    store: &'a Store,
    txn: WriteTransaction,
}

impl Batch<'_> {
    /// Records `state` for its file, storing `new_chunks` with their vectors and removing the
    /// file's chunks that `state` no longer lists. A chunk `state` lists and `new_chunks` does
    /// not give must already be stored (an unchanged chunk keeps its vector).
    pub fn put_file(
        &mut self,
        state: &FileState,
        new_chunks: &[(StoredChunk, &[f32])],
    ) -> Result<(), StoreError> {
        let path = &self.store.path;
        let error = |e: redb::Error| database_error(path, e);
        let dimensions = self.store.settings.dimensions;
        let mut files = self.txn.open_table(FILES).map_err(|e| error(e.into()))?;
        let mut chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let mut vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;

        let previous: Option<FileState> = files
            .get(state.path.as_str())
            .map_err(|e| error(e.into()))?
            .map(|v| decode(v.value()))
            .transpose()
            .map_err(|message| self.store.corrupt(message))?;
        let kept: HashSet<u128> = state.chunk_ids.iter().copied().collect();
        for old in previous.iter().flat_map(|p| &p.chunk_ids) {
            if !kept.contains(old) {
                chunks.remove(*old).map_err(|e| error(e.into()))?;
                vectors.remove(*old).map_err(|e| error(e.into()))?;
            }
        }
        for (chunk, vector) in new_chunks {
            if vector.len() != dimensions {
                return Err(StoreError::Dimensions {
                    chunk: chunk.id,
                    expected: dimensions,
                    found: vector.len(),
                });
            }
            chunks
                .insert(chunk.id, &encode(chunk)[..])
                .map_err(|e| error(e.into()))?;
            vectors
                .insert(chunk.id, &encode_vector(vector)[..])
                .map_err(|e| error(e.into()))?;
        }
        for id in &state.chunk_ids {
            if chunks.get(*id).map_err(|e| error(e.into()))?.is_none() {
                return Err(StoreError::MissingChunk {
                    path: state.path.clone(),
                    chunk: *id,
                });
            }
        }
        files
            .insert(state.path.as_str(), &encode(state)[..])
            .map_err(|e| error(e.into()))?;
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
        for id in previous.chunk_ids {
            chunks.remove(id).map_err(|e| error(e.into()))?;
            vectors.remove(id).map_err(|e| error(e.into()))?;
        }
        Ok(())
    }

    /// Makes every change of the batch durable and visible, at once.
    pub fn commit(self) -> Result<(), StoreError> {
        self.txn
            .commit()
            .map_err(|e| database_error(&self.store.path, e.into()))
    }
}

/// Orders hits best first: higher score, then lower id.
#[derive(PartialEq)]
struct Ranked(Hit);

impl Eq for Ranked {}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then(self.0.id.cmp(&other.0.id))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn dot(query: &[f32], stored: &[u8]) -> f32 {
    query
        .iter()
        .zip(stored.chunks_exact(4))
        .map(|(q, b)| q * f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .sum()
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

fn corrupt(path: &Path, message: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        message,
    }
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable record: {e}"))
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

fn database_error(path: &Path, error: redb::Error) -> StoreError {
    let path = path.to_path_buf();
    match error {
        redb::Error::DatabaseAlreadyOpen => StoreError::Locked { path },
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
