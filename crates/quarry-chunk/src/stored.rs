//! [`StoredChunk`]: the one shape of a chunk after chunking, from the index to the results.

use serde::{Deserialize, Serialize};

use crate::chunk::symbol_path;
use crate::{ChunkId, ChunkKind, Language};

/// A chunk as the index keeps it and the ranking reads it: everything a search result
/// shows, and what filters and ranking layers test. quarry-store stores it; quarry-rank ranks
/// it; the engine's views show it. The chunker's [`Chunk`](crate::Chunk) holds one, with what
/// only chunking and embedding use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredChunk {
    /// The chunk's stable identity, a [`ChunkId`]'s value.
    pub id: u128,
    /// Repository-relative path of its file, `/`-separated.
    pub path: String,
    /// The file's language (stored by its name).
    pub language: Language,
    /// What it holds (stored by its name).
    pub kind: ChunkKind,
    /// The symbol's name (`search`), if the chunk is a named item or section.
    pub name: Option<String>,
    /// The enclosing containers, outermost first (`["Index"]` for `Index::search`).
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

    /// The symbol path, such as `Index::search`, or `None` for unnamed chunks.
    pub fn symbol_path(&self) -> Option<String> {
        let name = self.name.as_deref()?;
        Some(symbol_path(&self.container, name))
    }
}
