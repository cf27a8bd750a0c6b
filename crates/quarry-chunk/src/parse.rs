//! [`SyntaxTree`]: one guarded tree-sitter parse of a file, shared by the chunker and
//! whoever else reads the tree (the import graph), so that a file is parsed once.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::ControlFlow;

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Range, Tree};

use crate::{Language, rules};

/// The parser reports progress every 100 of its operations. Real code needs at most
/// ~30 reports per KiB (measured on tokio, the Python standard library and every
/// fixture); some malformed inputs make error recovery explode (a 1.2 KB Kotlin file
/// took minutes and gigabytes). Parses needing more than this many reports per KiB
/// are abandoned, deterministically, and the file is read for its braces (`scan.rs`).
const MAX_PARSE_REPORTS_PER_KIB: usize = 200;
/// The largest text parsed, in bytes: a syntax tree takes about 20 bytes a byte of source (a
/// 50 MB Rust file peaked at 1.2 GB, its chunks capped), so a larger file is read as when
/// its parse is abandoned, for its braces or indentation (`scan.rs`), and its imports are
/// not read. Twice the engine's default `max_file_bytes` (2 MiB): no file indexed by
/// default is affected, and a file this large is cut at [`crate::MAX_CHUNKS_PER_FILE`]
/// anyway where it is as dense as the densest source measured.
pub const MAX_PARSED_BYTES: usize = 4 << 20;
/// Macro bodies nested deeper than this (`cfg_rt! { cfg_unstable! { ... } }`) stay tokens.
const MAX_MACRO_NESTING: usize = 4;
/// Macros in modules and impls nested deeper than this are not looked for (the chunker
/// opens containers no deeper either).
const MAX_ITEM_NESTING: usize = 16;

thread_local! {
    /// One parser per thread, its grammar switched per file: creating one per file
    /// costs an allocation of the parser's stacks each time.
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
}

/// A file's syntax tree and the text the parser saw: the file's text, or a copy with the
/// same offsets and lines that ends with a newline (tree-sitter-kotlin-ng 1.1.0's scanner
/// loops forever on an annotation that ends the file) and, for grammars whose scanner
/// crashes on characters above U+00FF (tree-sitter-bash 0.25.1, upstream issue #337),
/// has every non-ASCII byte replaced by `_`. In the C family, where the file's parse errs, it
/// may be a copy with its preprocessor conditional lines (`Rules::conditionals`), then its
/// annotation macros (`Rules::annotations`), blanked, where that parse errs over fewer bytes.
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
    /// Item-level macro bodies parsed on their own, by the first byte of their macro.
    macro_bodies: Vec<(usize, Tree)>,
}

impl<'a> SyntaxTree<'a> {
    /// Parses `text` as `language`; `None` where the language has no grammar, the text is
    /// over [`MAX_PARSED_BYTES`] or the parse was abandoned because error recovery ran away.
    pub fn parse(text: &'a str, language: Language) -> Option<Self> {
        if text.len() > MAX_PARSED_BYTES {
            return None;
        }
        let grammar = language.grammar()?;
        let rules = rules::rules(language);
        let ascii_only = rules.is_some_and(|rules| rules.ascii_only);
        let mut copy = (ascii_only && !text.is_ascii()).then(|| {
            text.bytes()
                .map(|b| if b.is_ascii() { b as char } else { '_' })
                .collect::<String>()
        });
        if !text.ends_with('\n') {
            copy.get_or_insert_with(|| text.to_owned()).push('\n');
        }
        let mut text = copy.map_or(Cow::Borrowed(text), Cow::Owned);
        let blankings = [
            (
                rules.is_some_and(|rules| rules.conditionals),
                conditionals_blanked as Blanking,
            ),
            (
                rules.is_some_and(|rules| rules.annotations),
                annotations_blanked,
            ),
        ];
        let (tree, macro_bodies) = PARSER.with_borrow_mut(|parser| {
            parser.set_language(&grammar).ok()?;
            let mut tree = guarded_parse(parser, text.as_bytes(), text.len())?;
            // Each blanking in turn, on the best copy so far, while the parse errs.
            for (_, blanking) in blankings.iter().filter(|(applies, _)| *applies) {
                if !tree.root_node().has_error() {
                    break;
                }
                let better = blanking(&text).and_then(|blanked| {
                    let parsed = guarded_parse(parser, blanked.as_bytes(), blanked.len())?;
                    (damage(&parsed) < damage(&tree)).then_some((blanked, parsed))
                });
                if let Some((blanked, parsed)) = better {
                    (text, tree) = (Cow::Owned(blanked), parsed);
                }
            }
            let item_macro = rules.and_then(|rules| rules.item_macro);
            let bodies = item_macro.map_or_else(Vec::new, |kind| {
                parse_macro_bodies(parser, text.as_bytes(), &tree, kind)
            });
            Some((tree, bodies))
        })?;
        Some(Self {
            text,
            tree,
            language,
            macro_bodies,
        })
    }

    /// The items of the body of `node`, an item-level macro invocation whose braces hold
    /// items (`cfg_rt! { pub fn spawn() {} }`): the root of that body parsed on its own,
    /// with the file's offsets and lines. `None` for any other node.
    pub(crate) fn macro_body(&self, node: Node) -> Option<Node<'_>> {
        self.macro_bodies
            .iter()
            .find(|(start, _)| *start == node.start_byte())
            .map(|(_, tree)| tree.root_node())
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

/// tree-sitter-rust leaves a macro invocation's body as a flat token tree, so the items
/// tokio and others write inside `cfg_*! { ... }` would have no chunks or definitions of
/// their own. Each item-level invocation of `kind` with a braced body is parsed again,
/// that body alone (tree-sitter's included ranges keep the file's offsets and lines), and
/// kept where it parses cleanly; bodies found inside are parsed in turn.
fn parse_macro_bodies(
    parser: &mut Parser,
    bytes: &[u8],
    tree: &Tree,
    kind: &str,
) -> Vec<(usize, Tree)> {
    let mut bodies = Vec::new();
    let mut scopes = vec![tree.root_node()];
    for _ in 0..MAX_MACRO_NESTING {
        let invocations: Vec<(usize, Node)> = scopes
            .iter()
            .flat_map(|scope| item_macros(*scope, kind, 0))
            .collect();
        let mut parsed = Vec::new();
        for (start, tokens) in invocations {
            let mut clean = |ranges: &[Range]| -> Option<Tree> {
                let size = ranges.iter().map(|r| r.end_byte - r.start_byte).sum();
                parser.set_included_ranges(ranges).ok()?;
                guarded_parse(parser, bytes, size).filter(|body| !body.root_node().has_error())
            };
            let Some(range) = braced_body(tokens) else {
                continue;
            };
            // The body as items; else its brace groups together, as `cfg_if! { if
            // #[cfg(unix)] { ... } else { ... } }` holds its items (every branch's).
            let body = clean(&[range]).or_else(|| {
                let groups = brace_groups(tokens);
                (!groups.is_empty()).then(|| clean(&groups)).flatten()
            });
            parsed.extend(body.map(|body| (start, body)));
        }
        if parsed.is_empty() {
            break;
        }
        let first = bodies.len();
        bodies.extend(parsed);
        scopes = bodies[first..]
            .iter()
            .map(|(_, body)| body.root_node())
            .collect();
    }
    // The parser is shared: the next file is parsed whole.
    parser.set_included_ranges(&[]).ok();
    bodies
}

/// The invocations of `kind` among the items of `scope` and of the declaration lists below
/// it, each by its first byte, with its token tree.
fn item_macros<'t>(scope: Node<'t>, kind: &str, depth: usize) -> Vec<(usize, Node<'t>)> {
    let mut found = Vec::new();
    if depth >= MAX_ITEM_NESTING {
        return found;
    }
    let mut cursor = scope.walk();
    for child in scope.named_children(&mut cursor) {
        if child.kind() == kind {
            let mut tokens = child.walk();
            let tree = child
                .named_children(&mut tokens)
                .find(|tokens| tokens.kind() == "token_tree");
            found.extend(tree.map(|tree| (child.start_byte(), tree)));
        } else {
            found.extend(item_macros_in_lists(child, kind, depth + 1));
        }
    }
    found
}

/// [`item_macros`] of the declaration lists (impl, trait and module bodies) inside `node`.
fn item_macros_in_lists<'t>(node: Node<'t>, kind: &str, depth: usize) -> Vec<(usize, Node<'t>)> {
    let mut cursor = node.walk();
    let lists: Vec<Node> = node
        .named_children(&mut cursor)
        .filter(|child| child.kind() == "declaration_list")
        .collect();
    lists
        .into_iter()
        .flat_map(|list| item_macros(list, kind, depth))
        .collect()
}

/// The range strictly inside a token tree's `{ }`, if braced and not empty.
fn braced_body(tokens: Node) -> Option<Range> {
    let open = tokens.child(0).filter(|open| open.kind() == "{")?;
    let close = tokens
        .child(tokens.child_count().checked_sub(1)?)
        .filter(|close| close.kind() == "}")?;
    (open.end_byte() < close.start_byte()).then_some(Range {
        start_byte: open.end_byte(),
        end_byte: close.start_byte(),
        start_point: open.end_position(),
        end_point: close.start_position(),
    })
}

/// The insides of the braced token trees directly inside a token tree, in order.
fn brace_groups(tokens: Node) -> Vec<Range> {
    let mut cursor = tokens.walk();
    let groups: Vec<Node> = tokens
        .named_children(&mut cursor)
        .filter(|child| child.kind() == "token_tree")
        .collect();
    groups.into_iter().filter_map(braced_body).collect()
}

/// `text` with every line of a preprocessor conditional (`#if`, `#ifdef`, `#ifndef`, `#elif`,
/// `#else`, `#endif`, and the lines a trailing backslash continues) blanked to spaces, offsets and
/// lines kept; `None` where it has none. Both branches of a conditional are then read as
/// one: `f(int a\n#if X\n, int b\n#endif\n)` is `f(int a, int b)`, which parses.
fn conditionals_blanked(text: &str) -> Option<String> {
    const CONDITIONALS: [&str; 6] = ["if", "ifdef", "ifndef", "elif", "else", "endif"];
    let is_conditional = |line: &str| {
        line.trim_start()
            .strip_prefix('#')
            .map(|rest| rest.trim_start())
            .is_some_and(|rest| {
                let word = rest.split(|c: char| !c.is_ascii_alphabetic()).next();
                word.is_some_and(|word| CONDITIONALS.contains(&word))
            })
    };
    let mut blanked = String::with_capacity(text.len());
    let mut continued = false;
    let mut any = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if continued || is_conditional(body) {
            any = true;
            continued = body.ends_with('\\');
            blanked.extend(std::iter::repeat_n(' ', body.len()));
            blanked.push_str(&line[body.len()..]);
        } else {
            blanked.push_str(line);
        }
    }
    any.then_some(blanked)
}

/// A copy of a text with some lines or words blanked to spaces, offsets and lines kept;
/// `None` where there is nothing to blank.
type Blanking = fn(&str) -> Option<String>;

/// `text` with the annotation macros of C and C++ blanked to spaces, offsets and lines kept;
/// `None` where it has none. An annotation macro is an upper-case name with an underscore
/// (`PROTOBUF_EXPORT`, `SPDLOG_INLINE`, `ABSL_DEPRECATED("...")`), with its arguments if
/// any, where it opens a line before a declaration or stands alone on it, or between
/// `class`, `struct` or `union` and the name. Its definition is in a header the parser never
/// reads, so a grammar sees two names in a row, or a call where a member is declared, and may
/// lose the whole class to one error.
fn annotations_blanked(text: &str) -> Option<String> {
    let mut blanked = String::with_capacity(text.len());
    let mut any = false;
    for line in text.split_inclusive('\n') {
        let mut spans = Vec::new();
        let indent = blanks_end(line, 0);
        if let Some(end) = annotation_at(line, indent) {
            let rest = line[end..].trim_start();
            let declaration =
                rest.starts_with(|c: char| c.is_ascii_alphabetic() || "_~:".contains(c));
            if rest.is_empty() || declaration {
                spans.push(indent..end);
            }
        }
        for keyword in ["class ", "struct ", "union "] {
            let Some(at) = line
                .find(keyword)
                .filter(|&at| at == 0 || !is_word(line.as_bytes()[at - 1]))
            else {
                continue;
            };
            let name = blanks_end(line, at + keyword.len());
            let word = word_end(line, name);
            let followed = line[word..].starts_with([' ', '\t'])
                && line[word..]
                    .trim_start()
                    .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            if is_macro_name(&line[name..word]) && followed {
                spans.push(name..word);
            }
        }
        let mut start = 0;
        for span in spans {
            any = true;
            blanked.push_str(&line[start..span.start]);
            blanked.extend(std::iter::repeat_n(' ', span.len()));
            start = span.end;
        }
        blanked.push_str(&line[start..]);
    }
    any.then_some(blanked)
}

/// The end of the annotation macro at `start` of `line` (its name, then its arguments where
/// a balanced parenthesis follows on the line), if one is there.
fn annotation_at(line: &str, start: usize) -> Option<usize> {
    let name_end = word_end(line, start);
    if !is_macro_name(&line[start..name_end]) {
        return None;
    }
    let open = blanks_end(line, name_end);
    if !line[open..].starts_with('(') {
        return Some(name_end);
    }
    let mut depth = 0usize;
    for (offset, byte) in line.bytes().enumerate().skip(open) {
        match byte {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where the spaces and tabs from `start` of `line` end.
fn blanks_end(line: &str, start: usize) -> usize {
    line.len() - line[start..].trim_start_matches([' ', '\t']).len()
}

/// Where the word (letters, digits, `_`) at `start` of `line` ends.
fn word_end(line: &str, start: usize) -> usize {
    start
        + line.as_bytes()[start..]
            .iter()
            .take_while(|&&b| is_word(b))
            .count()
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// An upper-case name with an underscore: a macro by C's convention, not a type or a call.
fn is_macro_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.contains('_')
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// How much of `tree` its errors took: the bytes under its outermost error nodes, and one
/// for each missing node. A conditional blanked can mend one error and break a whole class
/// (both branches of an `#ifdef` inside it read as one); bytes tell the two apart, a count
/// of errors does not.
fn damage(tree: &Tree) -> usize {
    let mut damage = 0;
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if node.is_error() {
            damage += node.byte_range().len();
        } else {
            damage += usize::from(node.is_missing());
            // Only subtrees with an error hold one.
            if node.has_error() && cursor.goto_first_child() {
                continue;
            }
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return damage;
            }
        }
    }
}

/// Parses `bytes` with `parser`, already set to its grammar, abandoning the parse once it
/// needs more than [`MAX_PARSE_REPORTS_PER_KIB`] for the `size` bytes it reads.
fn guarded_parse(parser: &mut Parser, bytes: &[u8], size: usize) -> Option<Tree> {
    let max_reports = 2 * MAX_PARSE_REPORTS_PER_KIB + size * MAX_PARSE_REPORTS_PER_KIB / 1024;
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
    fn conditional_lines_are_blanked_with_their_continuations_and_offsets_kept() {
        let text =
            "int f(int a\n  #if defined(X) && \\\n  defined(Y)\n, int b\n#endif\n);\n#define Z 1\n";
        let blanked = conditionals_blanked(text).unwrap();
        assert_eq!(blanked.len(), text.len());
        assert_eq!(blanked.lines().count(), text.lines().count());
        let kept: Vec<&str> = blanked
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(kept, ["int f(int a", ", int b", ");", "#define Z 1"]);
        assert_eq!(conditionals_blanked("#define Z 1\nint x;\n"), None);
        // In C the blanked copy is parsed only where the file's own parse errs.
        let clean = "#ifdef X\nint x;\n#endif\n";
        let tree = SyntaxTree::parse(clean, Language::C).unwrap();
        assert_eq!(tree.text(), clean);
        let cut = "int f(int a\n#ifdef X\n, int b\n#endif\n) { return a; }\n";
        let tree = SyntaxTree::parse(cut, Language::C).unwrap();
        assert!(!tree.tree().root_node().has_error());
        assert_eq!(
            tree.text(),
            "int f(int a\n        \n, int b\n      \n) { return a; }\n"
        );
    }

    #[test]
    fn annotation_macros_are_blanked_where_declarations_are() {
        let text = "class PROTOBUF_EXPORT Arena final {\n public:\n  ABSL_DEPRECATED(\"Use (Create)\")\n  \
                    void* Allocate(size_t n);\n  PROTOBUF_NODISCARD T* Create();\n  CHECK_OK(x);\n  \
                    EVP_PKEY *key;\n  int MAX_SIZE = 4;\n};\nSPDLOG_INLINE void logger::flush() {}\n";
        let blanked = annotations_blanked(text).unwrap();
        assert_eq!(blanked.len(), text.len());
        let kept: Vec<&str> = blanked.lines().map(str::trim).collect();
        assert_eq!(
            kept,
            [
                "class                 Arena final {",
                "public:",
                "",
                "void* Allocate(size_t n);",
                "T* Create();",
                "CHECK_OK(x);",
                "EVP_PKEY *key;",
                "int MAX_SIZE = 4;",
                "};",
                "void logger::flush() {}",
            ]
        );
        assert_eq!(annotations_blanked("EVP_PKEY *k;\nint x;\n"), None);
        // Parsed as C++, the class and the function are read where the file's own parse
        // lost them.
        let tree = SyntaxTree::parse(text, Language::Cpp).unwrap();
        assert!(!tree.tree().root_node().has_error(), "{}", tree.text());
        assert_eq!(tree.text(), blanked);
    }

    #[test]
    fn the_parser_sees_a_final_newline_and_ascii_where_the_grammar_needs_it() {
        let bash = SyntaxTree::parse("echo café", Language::Bash).unwrap();
        assert_eq!(bash.text(), "echo caf__\n");
        let rust = SyntaxTree::parse("fn café() {}\n", Language::Rust).unwrap();
        assert!(matches!(rust.text, Cow::Borrowed(_)));
        assert!(SyntaxTree::parse("plain words", Language::Text).is_none());
    }
}
