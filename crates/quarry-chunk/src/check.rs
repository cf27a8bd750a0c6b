//! The promises every chunking keeps, checkable by anyone holding the chunks.

use std::collections::HashSet;

use crate::lines::Lines;
use crate::{Chunk, MAX_CHUNKS_PER_FILE, StoredChunk};

/// A broken promise about a file's chunks (a bug in quarry-chunk).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct InvariantViolation {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

/// Checks the chunks of `text` against the promises of [`crate::Chunker::chunk`]:
/// line and byte ranges agree and lie inside the file, each chunk's text is its
/// byte range, ids are unique, every non-blank line is covered (up to the last chunk's
/// where the file reached [`MAX_CHUNKS_PER_FILE`], which it never passes), and no chunk
/// exceeds `budget` characters unless it is a single line flagged oversized.
///
/// ```
/// use quarry_chunk::{Chunker, check_chunks};
/// let text = "fn main() {\n    println!(\"hi\");\n}\n";
/// let chunker = Chunker::default();
/// let chunks = chunker.chunk("main.rs", text.as_bytes()).unwrap();
/// check_chunks(text, &chunks, chunker.config().budget).unwrap();
/// ```
pub fn check_chunks(text: &str, chunks: &[Chunk], budget: usize) -> Result<(), InvariantViolation> {
    let lines = Lines::new(text);
    let fail = |chunk: Option<&StoredChunk>, problem: String| {
        Err(InvariantViolation {
            path: chunks
                .first()
                .map(|c| c.stored.path.clone())
                .unwrap_or_default(),
            problem: match chunk {
                Some(c) => format!(
                    "chunk {}-{} ({}): {problem}",
                    c.start_line, c.end_line, c.kind
                ),
                None => problem,
            },
        })
    };
    if chunks.len() > MAX_CHUNKS_PER_FILE {
        return fail(
            None,
            format!("{} chunks, over {MAX_CHUNKS_PER_FILE}", chunks.len()),
        );
    }
    let mut covered = vec![false; lines.count()];
    let mut ids = HashSet::new();
    for Chunk {
        stored: chunk,
        byte_range,
        oversized,
        ..
    } in chunks
    {
        if chunk.start_line == 0
            || chunk.start_line > chunk.end_line
            || chunk.end_line > lines.count()
        {
            return fail(
                Some(chunk),
                format!("line range outside 1..={}", lines.count()),
            );
        }
        let line_range = chunk.start_line - 1..chunk.end_line;
        if *byte_range != lines.bytes(line_range.clone()) {
            return fail(
                Some(chunk),
                format!("byte range {:?} does not match its lines", byte_range),
            );
        }
        if chunk.text != text[byte_range.clone()] {
            return fail(Some(chunk), "text differs from the file's bytes".into());
        }
        let size = chunk.text.chars().count();
        if size > budget && !(*oversized && chunk.start_line == chunk.end_line) {
            return fail(
                Some(chunk),
                format!("{size} characters exceed the budget of {budget}"),
            );
        }
        if *oversized && size <= budget {
            return fail(Some(chunk), "flagged oversized but fits the budget".into());
        }
        if !ids.insert(chunk.id) {
            return fail(Some(chunk), format!("duplicate id {}", chunk.chunk_id()));
        }
        covered[line_range].fill(true);
    }
    // A file cut at the cap is covered up to its last chunk.
    let end = match chunks.len() == MAX_CHUNKS_PER_FILE {
        true => chunks.iter().map(|c| c.stored.end_line).max().unwrap_or(0),
        false => lines.count(),
    };
    match (0..end).find(|&l| !covered[l] && !lines.is_blank(l)) {
        Some(line) => fail(None, format!("line {} is in no chunk", line + 1)),
        None => Ok(()),
    }
}
