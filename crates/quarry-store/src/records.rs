//! What the index stores, and how it is encoded in redb.

pub use quarry_chunk::StoredChunk;
use redb::TableDefinition;
use serde::{Deserialize, Serialize};

/// Bumped whenever a table or record changes shape; an index of another version is rebuilt.
pub const SCHEMA_VERSION: u32 = 1;

/// Index-wide settings and state, by key.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Repository-relative path → [`FileState`].
pub(crate) const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("files");
/// Chunk id → [`StoredChunk`].
pub(crate) const CHUNKS: TableDefinition<u128, &[u8]> = TableDefinition::new("chunks");
/// Chunk id → its vector, little-endian `f32`s.
pub(crate) const VECTORS: TableDefinition<u128, &[u8]> = TableDefinition::new("vectors");
/// Repository-relative path → the [`Drift`] of its last re-index.
pub(crate) const DRIFT: TableDefinition<&str, &[u8]> = TableDefinition::new("drift");
/// Chunk id → the text to embed, for a chunk stored before its vector: the work an index
/// run's second phase has left. A chunk is in exactly one of this table and [`VECTORS`].
pub(crate) const PENDING: TableDefinition<u128, &str> = TableDefinition::new("pending");
/// Repository-relative path → its embedded chunks (text and vector, postcard) as they were
/// before a change whose new chunks still wait for vectors: what the file's [`Drift`] is
/// measured against once they have them.
pub(crate) const DRIFT_BASE: TableDefinition<&str, &[u8]> = TableDefinition::new("drift_base");
/// (path, name) → data another component attaches to a file (for example its PageRank).
pub(crate) const FILE_DATA: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("file_data");

pub(crate) mod meta_keys {
    pub const SCHEMA_VERSION: &str = "schema_version";
    pub const SETTINGS: &str = "settings";
    /// A counter bumped by every commit, the tag derived indexes carry. It starts at the
    /// index's creation time in nanoseconds, so a rebuilt index never repeats a tag.
    pub const GENERATION: &str = "generation";
    /// The git commit the project's files were last indexed at.
    pub const INDEXED_COMMIT: &str = "indexed_commit";
}

/// How much a file's chunks moved when it was last re-indexed.
///
/// Old and new chunks are paired: identical chunks first (drift 0), then by best cosine
/// similarity (drift `1 - cosine`, clamped to `[0, 1]`); a chunk left without a partner on
/// either side counts 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Drift {
    /// The file.
    pub path: String,
    /// Mean drift over the pairs and unpaired chunks.
    pub average: f32,
    /// Largest drift of any pair or unpaired chunk.
    pub max: f32,
    /// Chunks before the re-index.
    pub chunks_before: usize,
    /// Chunks after it.
    pub chunks_after: usize,
}

/// What the vectors in an index mean: an index is only valid for the settings it was built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexSettings {
    /// The embedding model's fingerprint (`quarry_embed::ModelFingerprint`'s display form).
    pub model: String,
    /// Length of every vector.
    pub dimensions: usize,
    /// The chunker's settings, in a form that changes when they do.
    pub chunker: String,
}

/// What the index knows about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Repository-relative, with `/` separators.
    pub path: String,
    /// A hash of the file's bytes, the arbiter of change.
    pub content_hash: u64,
    /// Modification time in nanoseconds since the Unix epoch, as last seen.
    pub mtime_ns: i128,
    /// Size in bytes, as last seen.
    pub size: u64,
    /// The file's chunks, in file order; empty for a file that was skipped.
    pub chunk_ids: Vec<u128>,
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("records always serialise")
}

pub(crate) fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(crate) fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    let mut vector = Vec::with_capacity(bytes.len() / 4);
    decode_vector_into(bytes, &mut vector);
    vector
}

/// Decodes into `vector`, replacing what it held: scans reuse one buffer for every vector.
pub(crate) fn decode_vector_into(bytes: &[u8], vector: &mut Vec<f32>) {
    vector.clear();
    vector.extend(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    );
}
