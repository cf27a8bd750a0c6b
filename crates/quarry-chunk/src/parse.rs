//! [`SyntaxTree`]: one guarded tree-sitter parse of a file, shared by the chunker and
//! whoever else reads the tree (the import graph), so that a file is parsed once.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::ControlFlow;

use tree_sitter::{ParseOptions, ParseState, Parser, Tree};

use crate::{Language, rules};

/// The parser reports progress every 100 of its operations. Real code needs at most
/// ~30 reports per KiB (measured on tokio, the Python standard library and every
/// fixture); some malformed inputs make error recovery explode (a 1.2 KB Kotlin file
/// took minutes and gigabytes). Parses needing more than this many reports per KiB
/// are abandoned, deterministically, and the file falls back to line windows.
const MAX_PARSE_REPORTS_PER_KIB: usize = 200;

thread_local! {
    /// One parser per thread, its grammar switched per file: creating one per file
    /// costs an allocation of the parser's stacks each time.
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
}

/// A file's syntax tree and the text the parser saw: the file's text, or a copy with the
/// same offsets and lines that ends with a newline (tree-sitter-kotlin-ng 1.1.0's scanner
/// loops forever on an annotation that ends the file) and, for grammars whose scanner
/// crashes on characters above U+00FF (tree-sitter-bash 0.25.1, upstream issue #337),
/// has every non-ASCII byte replaced by `_`.
///
/// ```
/// use quarry_chunk::{Language, SyntaxTree};
///
/// let tree = SyntaxTree::parse("use std::fmt;", Language::Rust).unwrap();
/// assert_eq!(tree.text(), "use std::fmt;\n");
/// assert_eq!(tree.tree().root_node().kind(), "source_file");
/// ```
#[derive(Debug, Clone)]
pub struct SyntaxTree<'a> {
    text: Cow<'a, str>,
    tree: Tree,
    language: Language,
}

impl<'a> SyntaxTree<'a> {
    /// Parses `text` as `language`; `None` where the language has no grammar or the parse
    /// was abandoned because error recovery ran away.
    pub fn parse(text: &'a str, language: Language) -> Option<Self> {
        let grammar = language.grammar()?;
        let ascii_only = rules::rules(language).is_some_and(|rules| rules.ascii_only);
        let mut copy = (ascii_only && !text.is_ascii()).then(|| {
            text.bytes()
                .map(|b| if b.is_ascii() { b as char } else { '_' })
                .collect::<String>()
        });
        if !text.ends_with('\n') {
            copy.get_or_insert_with(|| text.to_owned()).push('\n');
        }
        let text = copy.map_or(Cow::Borrowed(text), Cow::Owned);
        let tree = PARSER.with_borrow_mut(|parser| {
            parser.set_language(&grammar).ok()?;
            guarded_parse(parser, text.as_bytes())
        })?;
        Some(Self {
            text,
            tree,
            language,
        })
    }

    /// The text the parser saw; its offsets and lines are the file's.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The language it was parsed as.
    pub fn language(&self) -> Language {
        self.language
    }
}

/// Parses `bytes` with `parser`, already set to its grammar, abandoning the parse once it
/// needs more than [`MAX_PARSE_REPORTS_PER_KIB`].
fn guarded_parse(parser: &mut Parser, bytes: &[u8]) -> Option<Tree> {
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
    let tree = parser.parse_with_options(
        &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut give_up)),
    );
    // An abandoned parse leaves the parser mid-document; the next file starts afresh.
    parser.reset();
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_sees_a_final_newline_and_ascii_where_the_grammar_needs_it() {
        let bash = SyntaxTree::parse("echo café", Language::Bash).unwrap();
        assert_eq!(bash.text(), "echo caf__\n");
        let rust = SyntaxTree::parse("fn café() {}\n", Language::Rust).unwrap();
        assert!(matches!(rust.text, Cow::Borrowed(_)));
        assert!(SyntaxTree::parse("plain words", Language::Text).is_none());
    }
}
