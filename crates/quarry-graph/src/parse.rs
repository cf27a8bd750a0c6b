//! Parsing with the same guards as quarry-chunk's, whose parse is private to it: the
//! grammars' scanners run in our process, so their known failures are contained here
//! the same way (see "Known upstream problems" in docs/ARCHITECTURE.md).

use std::borrow::Cow;
use std::ops::ControlFlow;

use quarry_chunk::Language;
use tree_sitter::{ParseOptions, ParseState, Parser, Tree};

/// The parser reports progress every 100 operations; real code needs at most ~30
/// reports per KiB, runaway error recovery far more. Same bound as quarry-chunk's.
const MAX_PARSE_REPORTS_PER_KIB: usize = 200;

/// The text the parser must see for `text`: the same offsets and lines, but ending
/// with a newline (tree-sitter-kotlin-ng 1.1.0 loops forever on an annotation at the
/// very end) and, for Bash, ASCII only (tree-sitter-bash 0.25.1 passes characters
/// above U+00FF to `isdigit` and can crash).
pub(crate) fn parser_text(language: Language, text: &str) -> Cow<'_, str> {
    let mut copy = (language == Language::Bash && !text.is_ascii()).then(|| {
        text.bytes()
            .map(|b| if b.is_ascii() { b as char } else { '_' })
            .collect::<String>()
    });
    if !text.ends_with('\n') {
        copy.get_or_insert_with(|| text.to_owned()).push('\n');
    }
    copy.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// Parses `text` (from [`parser_text`]) with `parser`, already set to its grammar;
/// `None` when the parse is abandoned because error recovery ran away.
pub(crate) fn parse(parser: &mut Parser, text: &str) -> Option<Tree> {
    let bytes = text.as_bytes();
    let max_reports =
        2 * MAX_PARSE_REPORTS_PER_KIB + bytes.len() * MAX_PARSE_REPORTS_PER_KIB / 1024;
    let mut reports = 0;
    let mut give_up = |_: &ParseState| {
        reports += 1;
        if reports > max_reports {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    parser.parse_with_options(
        &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut give_up)),
    )
}
