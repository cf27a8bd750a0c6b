//! [`StoredChunk`]: the one shape of a chunk after chunking, from the index to the results.

use serde::{Deserialize, Serialize};

use crate::{Chunk, ChunkId, ChunkKind, Language};

/// A chunk as the index keeps it and the ranking reads it: everything a search result
/// shows, and what filters and ranking layers test. quarry-store stores it; quarry-rank ranks
/// it; the engine's views show it. Its `From<&Chunk>` is the one conversion from the chunker's
/// output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredChunk {
    /// The chunk's id.
    pub id: u128,
    /// Repository-relative path of its file.
    pub path: String,
    /// The file's language (stored by its name).
    pub language: Language,
    /// What it holds (stored by its name).
    pub kind: ChunkKind,
    /// Its symbol, if it has one.
    pub name: Option<String>,
    /// Enclosing symbols, outermost first.
    pub container: Vec<String>,
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// The chunk's source text.
    pub text: String,
}

impl StoredChunk {
    /// The chunk's [`ChunkId`].
    pub fn chunk_id(&self) -> ChunkId {
        ChunkId(self.id)
    }
}

impl From<&Chunk> for StoredChunk {
    fn from(chunk: &Chunk) -> Self {
        Self {
            id: chunk.id.0,
            path: chunk.path.clone(),
            language: chunk.language,
            kind: chunk.kind,
            name: chunk.name.clone(),
            container: chunk.container.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            text: chunk.text.clone(),
        }
    }
}
