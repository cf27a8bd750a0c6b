//! [`Definition`]: what a file defines, with its whole span, for looking a symbol up by name.

use serde::{Deserialize, Serialize};

use crate::chunk::symbol_path;
use crate::{Chunk, ChunkId, ChunkKind};

/// A named definition in a file: a type, class, struct, interface, trait, enum, module or
/// namespace, function, method, macro, constant or type alias.
///
/// Unlike a chunk, a definition spans the whole declaration even where the chunker split it
/// (a container over the budget is a header chunk and its members' chunks; a long function
/// is several parts), and it names definitions that share a chunk with their neighbours
/// (one-line declarations, `#define` constants, a `typedef`'s `struct` tag).
///
/// ```
/// use quarry_chunk::{ChunkKind, Chunker};
///
/// let source = "typedef struct point_s {\n    int x, y;\n} Point;\n\n#define ORIGIN_X 0\n";
/// let file = Chunker::default().chunk_file("geo.c", source.as_bytes())?;
/// let names: Vec<(&str, ChunkKind)> =
///     file.definitions.iter().map(|d| (d.name.as_str(), d.kind)).collect();
/// assert_eq!(
///     names,
///     [("Point", ChunkKind::Type), ("point_s", ChunkKind::Struct), ("ORIGIN_X", ChunkKind::Macro)]
/// );
/// assert_eq!((file.definitions[0].start_line, file.definitions[0].end_line), (1, 3));
/// # Ok::<(), quarry_chunk::Skip>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// Its name, without qualifiers or generics (`rows` of `Matrix<T>::rows`).
    pub name: String,
    /// Enclosing symbols, outermost first (the class of a method, a Go method's receiver).
    pub container: Vec<String>,
    /// What it defines.
    pub kind: ChunkKind,
    /// First line, 1-based (its doc comments and attributes included).
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// The chunk a reader is shown for it: the first chunk of the file holding its first
    /// line of code (a split container's header, a long function's first part).
    pub chunk: u128,
}

impl Definition {
    /// The qualified name, `Index::search` (containers joined by `::`).
    pub fn qualified_name(&self) -> String {
        symbol_path(&self.container, &self.name)
    }

    /// The [`Definition::chunk`] as a [`ChunkId`].
    pub fn chunk_id(&self) -> ChunkId {
        ChunkId(self.chunk)
    }
}

/// A definition found by the syntax chunker, before its chunk is known (0-based lines,
/// half-open).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub lines: std::ops::Range<usize>,
    pub name: String,
    pub container: Vec<String>,
    pub kind: ChunkKind,
}

/// Gives each found definition its chunk: the first chunk that overlaps its span and, where
/// one does, is named after it. Definitions no chunk covers (none: every non-blank line is
/// in a chunk) are dropped.
pub(crate) fn attach(mut found: Vec<Found>, chunks: &[Chunk]) -> Vec<Definition> {
    found.sort_by(|a, b| {
        (
            a.lines.start,
            std::cmp::Reverse(a.lines.end),
            &a.name,
            &a.container,
            a.kind,
        )
            .cmp(&(
                b.lines.start,
                std::cmp::Reverse(b.lines.end),
                &b.name,
                &b.container,
                b.kind,
            ))
    });
    found.dedup();
    found
        .into_iter()
        .filter_map(|found| {
            let (first, last) = (found.lines.start + 1, found.lines.end);
            let overlapping = || {
                chunks
                    .iter()
                    .filter(move |c| c.start_line <= last && c.end_line >= first)
            };
            let chunk = overlapping()
                .find(|c| c.name.as_deref() == Some(found.name.as_str()))
                .or_else(|| overlapping().next())?;
            Some(Definition {
                name: found.name,
                container: found.container,
                kind: found.kind,
                start_line: first,
                end_line: last,
                chunk: chunk.id.0,
            })
        })
        .collect()
}
