//! What the scanners read a file into: units of whole lines, named where they declare
//! something, and the helpers both scanners share.

use std::ops::Range;

use crate::ChunkKind;
use crate::lines::Lines;

/// Blocks nested deeper than this are not read for members.
pub(super) const MAX_DEPTH: usize = 8;

/// A run of whole lines (0-based, half-open) at one level of the file, and what it is.
#[derive(Debug)]
pub(super) struct Unit {
    pub lines: Range<usize>,
    /// The line its declaration starts on, after its comments.
    pub code_line: usize,
    pub named: Option<Named>,
}

/// A unit that declares something.
#[derive(Debug)]
pub(super) struct Named {
    pub name: String,
    pub kind: ChunkKind,
    /// Qualifiers the declaration itself names (`Foo` of `void Foo::bar()`).
    pub qualifiers: Vec<String>,
    /// Its members' units, for definitions (the unit stays one piece).
    pub members: Vec<Unit>,
    /// A namespace: its members are items of the enclosing scope, not of one chunk.
    pub transparent: bool,
}

/// The line of the first code in `lines`, past blank lines and comments.
pub(super) fn code_line(lines: &Lines, range: Range<usize>, comments: &[&str]) -> usize {
    range
        .clone()
        .find(|&l| {
            let text = lines.line(l).trim();
            !text.is_empty() && !comments.iter().any(|c| text.starts_with(c))
        })
        .unwrap_or(range.start)
}

/// Whether `word` can be a name: letters, digits and `_`, not starting with a digit.
pub(super) fn is_identifier(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        && !word.starts_with(|c: char| c.is_ascii_digit())
}

/// What the scanners' tests share: a file chunked without a tree, in outline, and the chunk
/// promises checked.
#[cfg(test)]
pub(super) mod testing {
    use proptest::prelude::*;

    use crate::{ChunkKind, Chunker, Language, check_chunks};

    /// A chunk's lines, kind and symbol path; a definition's qualified name, kind and lines.
    pub(in crate::scan) type Outline = (
        Vec<(usize, usize, ChunkKind, String)>,
        Vec<(String, ChunkKind, usize, usize)>,
    );

    /// `text` chunked as when the parse guard abandons its parse (no tree), in outline.
    pub(in crate::scan) fn abandoned(text: &str, language: Language) -> Outline {
        let file = Chunker::default().chunk_parsed("x", text, language, None);
        let chunks = file
            .chunks
            .iter()
            .map(|c| &c.stored)
            .map(|c| {
                let path = c.symbol_path().unwrap_or_default();
                (c.start_line, c.end_line, c.kind, path)
            })
            .collect();
        let definitions = file
            .definitions
            .iter()
            .map(|d| (d.qualified_name(), d.kind, d.start_line, d.end_line))
            .collect();
        (chunks, definitions)
    }

    /// `text`, chunked without a tree at a budget of 120, is covered by chunks within the
    /// budget, in order, and each definition's lines run forward.
    pub(in crate::scan) fn keeps_the_chunk_promises(
        text: &str,
        language: Language,
    ) -> Result<(), TestCaseError> {
        let chunker = Chunker::new(crate::ChunkerConfig {
            budget: 120,
            ..Default::default()
        });
        let file = chunker.chunk_parsed("x", text, language, None);
        let (chunks, definitions) = (file.chunks, file.definitions);
        prop_assert!(check_chunks(text, &chunks, 120).is_ok());
        prop_assert!(
            chunks
                .windows(2)
                .all(|w| w[0].stored.start_line <= w[1].stored.start_line)
        );
        prop_assert!(definitions.iter().all(|d| d.start_line <= d.end_line));
        Ok(())
    }
}
