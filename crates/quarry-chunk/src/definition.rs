//! [`Definition`]: what a file defines, with its whole span, for looking a symbol up by name.

use serde::{Deserialize, Serialize};

use crate::chunk::symbol_path;
use crate::lines::Lines;
use crate::{Chunk, ChunkId, ChunkKind};

/// The version of what the chunker lists as definitions and how it picks their chunks:
/// bumped when either changes, so that an index holding definitions of another version
/// lists them again.
pub const DEFINITIONS_VERSION: u32 = 3;

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
    /// The declaration's own first line, after its doc comments and attributes.
    pub code_line: usize,
    pub name: String,
    pub container: Vec<String>,
    pub kind: ChunkKind,
}

/// Gives each found definition its chunk: the first chunk that holds the declaration's own
/// first line (not its doc comment's) and, where one does, is named after it. Definitions
/// no chunk covers (none: every non-blank line is in a chunk) are dropped.
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
            let code = found.code_line + 1;
            let holding = || {
                chunks
                    .iter()
                    .filter(move |c| c.start_line <= code && c.end_line >= code)
            };
            let chunk = holding()
                .find(|c| c.name.as_deref() == Some(found.name.as_str()))
                .or_else(|| holding().next())?;
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

/// Shell functions found line by line (`name() {`, `function name {`): tree-sitter-bash
/// gives up on some real scripts (bash-completion's main file stops parsing at a `[[ =~ ]]`
/// regex, and every function after it is lost in the error), so a Bash file's functions are
/// also read this way. A function runs to the first later line that is `}` at its own
/// indentation. Names the tree already gave are left out.
pub(crate) fn shell_functions(lines: &Lines, known: &[Found]) -> Vec<Found> {
    let mut found = Vec::new();
    for line in 0..lines.count() {
        let text = lines.line(line);
        let Some(name) = shell_function_name(text) else {
            continue;
        };
        if known.iter().any(|k| k.name == name) {
            continue;
        }
        let indent = &text[..text.len() - text.trim_start().len()];
        let one_line = text.trim_end().ends_with('}');
        let end = match one_line {
            true => line + 1,
            false => (line + 1..lines.count())
                .find(|&l| {
                    let closing = lines.line(l);
                    closing.trim_end() == format!("{indent}}}")
                })
                .map_or(line + 1, |l| l + 1),
        };
        found.push(Found {
            lines: line..end,
            code_line: line,
            name: name.to_owned(),
            container: Vec::new(),
            kind: ChunkKind::Function,
        });
    }
    found
}

/// The function a line opens, if it opens one: `name()`, `name ()`, `function name`,
/// `function name()`, followed by nothing, `{` or `(`.
fn shell_function_name(line: &str) -> Option<&str> {
    let line = line.trim();
    let (rest, keyword) = match line.strip_prefix("function ") {
        Some(rest) => (rest.trim_start(), true),
        None => (line, false),
    };
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '.' | '@')))
        .unwrap_or(rest.len());
    let (name, after) = rest.split_at(end);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let after = after.trim_start();
    let after = match after.strip_prefix("()") {
        Some(after) => after.trim_start(),
        None if keyword => after,
        None => return None,
    };
    (after.is_empty() || after.starts_with('{') || after.starts_with('(')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_function_headers_are_recognised() {
        for (line, name) in [
            ("_init_completion()", Some("_init_completion")),
            ("    _ssh() {", Some("_ssh")),
            ("function __git_main {", Some("__git_main")),
            ("function run_tests()", Some("run_tests")),
            ("_comp_x() ( subshell )", Some("_comp_x")),
            ("echo hello", None),
            ("COMPREPLY=()", None),
            ("foo() bar", None),
            ("  local x=() ", None),
        ] {
            assert_eq!(shell_function_name(line), name, "{line}");
        }
    }

    #[test]
    fn a_shell_function_runs_to_its_closing_brace() {
        let text = "a()\n{\n    if x; then\n    }\n}\n\nb() { :; }\n";
        let lines = Lines::new(text);
        let found = shell_functions(&lines, &[]);
        let spans: Vec<(&str, std::ops::Range<usize>)> = found
            .iter()
            .map(|f| (f.name.as_str(), f.lines.clone()))
            .collect();
        assert_eq!(spans, [("a", 0..5), ("b", 6..7)]);
    }
}
