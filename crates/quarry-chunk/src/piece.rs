//! Pieces: line-aligned regions chosen by a chunking strategy, before they are cut
//! to the budget and turned into [`Chunk`]s.

use std::collections::HashMap;
use std::ops::Range;

use xxhash_rust::xxh3::Xxh3;

use crate::chunk::symbol_path;
use crate::lines::Lines;
use crate::{Chunk, ChunkKind, ChunkerConfig, Language, StoredChunk};

/// A region of whole lines (0-based, half-open) with its identity.
#[derive(Debug)]
pub(crate) struct Piece {
    pub lines: Range<usize>,
    pub kind: ChunkKind,
    pub name: Option<String>,
    pub container: Vec<String>,
    /// The declaration line, repeated in the embedding header of later parts.
    pub signature: Option<String>,
}

/// Cuts pieces to the budget and builds the chunks, with stable ids: the first `limit`
/// of them, in the file's order, and how many more the file would give. Those are counted,
/// never built, so their text is not copied (a huge file's memory is bounded by `limit`).
pub(crate) fn into_chunks(
    path: &str,
    language: Language,
    lines: &Lines,
    pieces: Vec<Piece>,
    config: &ChunkerConfig,
    limit: usize,
) -> (Vec<Chunk>, usize) {
    let mut chunks = Vec::with_capacity(pieces.len().min(limit));
    let mut left_out = 0;
    // How often each (symbol path, text) was seen, so that identical chunks in one
    // file still get distinct ids.
    let mut seen: HashMap<u128, u32> = HashMap::new();
    for piece in pieces {
        let piece_lines = lines.trim(piece.lines.clone());
        if piece_lines.is_empty() {
            continue;
        }
        let windows = if lines.chars(piece_lines.clone()) > config.budget {
            lines.windows(piece_lines, config.budget, config.overlap_lines)
        } else {
            vec![(piece_lines, false)]
        };
        let parts = windows.len();
        let room = limit.saturating_sub(chunks.len());
        left_out += parts.saturating_sub(room);
        for (index, (window, oversized)) in windows.into_iter().enumerate().take(room) {
            let text = lines.text(window.clone()).to_owned();
            let symbol = piece
                .name
                .as_deref()
                .map(|name| symbol_path(&piece.container, name));
            let content_key = hash(&[symbol.as_deref().unwrap_or(""), &text]);
            let occurrence = seen.entry(content_key).or_default();
            let id = hash(&[
                path,
                symbol.as_deref().unwrap_or(""),
                &text,
                &occurrence.to_string(),
            ]);
            *occurrence += 1;
            let part = (parts > 1).then_some((index + 1, parts));
            let embed_text = if config.embed_header {
                embed_header(
                    path,
                    &piece,
                    symbol.as_deref(),
                    part.is_some_and(|(i, _)| i > 1),
                ) + &text
            } else {
                text.clone()
            };
            chunks.push(Chunk {
                stored: StoredChunk {
                    id,
                    path: path.to_owned(),
                    language,
                    kind: piece.kind,
                    name: piece.name.clone(),
                    container: piece.container.clone(),
                    start_line: window.start + 1,
                    end_line: window.end,
                    text,
                },
                byte_range: lines.bytes(window),
                embed_text,
                part,
                oversized,
            });
        }
    }
    (chunks, left_out)
}

/// `path`, then `kind symbol`, then the signature when the text does not start with it.
fn embed_header(path: &str, piece: &Piece, symbol: Option<&str>, continued: bool) -> String {
    let mut header = format!("{path}\n");
    match symbol {
        Some(symbol) => header.push_str(&format!("{} {symbol}\n", piece.kind)),
        None if !piece.container.is_empty() => header.push_str(&format!(
            "{} in {}\n",
            piece.kind,
            piece.container.join("::")
        )),
        None => {}
    }
    if continued && let Some(signature) = &piece.signature {
        header.push_str(signature);
        header.push('\n');
    }
    header.push('\n');
    header
}

/// A 128-bit hash of strings, each ended by a NUL so that boundaries count.
fn hash(parts: &[&str]) -> u128 {
    let mut hasher = Xxh3::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(&[0]);
    }
    hasher.digest128()
}
