//! [`Definition`]: what a file defines, with its whole span, for looking a symbol up by name.

use serde::{Deserialize, Serialize};

use crate::chunk::symbol_path;
use crate::lines::Lines;
use crate::{Chunk, ChunkId, ChunkKind};

/// The version of what the chunker lists as definitions and how it picks their chunks:
/// bumped when either changes, so that an index holding definitions of another version
/// lists them again.
pub const DEFINITIONS_VERSION: u32 = 16;

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
    /// The type a C `typedef` names without defining it (`evp_pkey_st` for
    /// `typedef struct evp_pkey_st EVP_PKEY;`): the definition a reader of the alias wants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refers_to: Option<String>,
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
    /// See [`Definition::refers_to`].
    pub refers_to: Option<String>,
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
                    .map(|c| &c.stored)
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
                chunk: chunk.id,
                refers_to: found.refers_to,
            })
        })
        .collect()
}

/// Shell functions found line by line (`name() {`, `function name {`): tree-sitter-bash
/// gives up on some real scripts (bash-completion's main file stops parsing at a `[[ =~ ]]`
/// regex, and every function after it is lost in the error), so a Bash file's functions are
/// also read this way. A function runs to the first later line that is `}` at its own
/// indentation.
pub(crate) fn shell_functions(lines: &Lines) -> Vec<Found> {
    let mut found = Vec::new();
    for line in 0..lines.count() {
        let text = lines.line(line);
        let Some(name) = shell_function_name(text) else {
            continue;
        };
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
            refers_to: None,
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

/// C and C++ function definitions found line by line: a line at column 0 that names a
/// function (`int ZEXPORT deflateParams(z_streamp strm, int level)`), whose parameter list
/// closes before a `{`. tree-sitter cannot parse a definition whose declaration holds a
/// macro it does not know (`ZEXPORT`, `ZLIB_INTERNAL`, `LIBSSH2_API`) and makes a block of
/// it, so the table would lack the function; a prototype (`;` after the list) is not one.
/// A function runs to the first later line that is `}` at column 0; a name's first
/// definition is kept.
pub(crate) fn c_functions(lines: &Lines) -> Vec<Found> {
    let mut found = Vec::new();
    for line in 0..lines.count() {
        let text = lines.line(line);
        let Some((container, name, open)) = c_function_head(text) else {
            continue;
        };
        if found.iter().any(|f: &Found| f.name == name) {
            continue;
        }
        let Some(body) = c_body_start(lines, line, open) else {
            continue;
        };
        let end = (body + 1..lines.count())
            .find(|&l| lines.line(l).trim_end() == "}")
            .map_or(body + 1, |l| l + 1);
        found.push(Found {
            lines: line..end,
            code_line: line,
            name,
            container,
            kind: ChunkKind::Function,
            refers_to: None,
        });
    }
    found
}

/// C++ classes, structs, unions and enums found line by line, for files whose tree lost
/// them (a macro tree-sitter cannot read inside a namespace turns the rest of the file into
/// an error): `class Error : public std::runtime_error {`, the body opening before any `;`.
/// A type runs to the first later line that closes it at its own indentation (`};`). Its
/// containers are the namespaces open around it (`namespace CLI {` to a `}` whose comment
/// names the namespace, as clang-format writes it). A name's first definition is kept.
pub(crate) fn cpp_types(lines: &Lines) -> Vec<Found> {
    let mut found = Vec::new();
    let mut namespaces: Vec<String> = Vec::new();
    for line in 0..lines.count() {
        let text = lines.line(line);
        let trimmed = text.trim();
        if let Some(rest) = trimmed.strip_prefix("namespace ") {
            let name = rest.trim_end_matches('{').trim();
            if trimmed.ends_with('{') && !name.is_empty() {
                namespaces.extend(name.split("::").map(str::to_owned));
            }
            continue;
        }
        if trimmed.starts_with('}') && trimmed.contains("namespace") {
            namespaces.pop();
            continue;
        }
        let Some((kind, name)) = cpp_type_head(trimmed) else {
            continue;
        };
        if found.iter().any(|f: &Found| f.name == name) {
            continue;
        }
        let Some(body) = (line..(line + 10).min(lines.count())).find_map(|l| {
            let text = lines.line(l);
            let text = if l == line { trimmed } else { text };
            match (text.find('{'), text.find(';')) {
                (Some(brace), semicolon) if semicolon.is_none_or(|s| brace < s) => Some(Ok(l)),
                (_, Some(_)) => Some(Err(())),
                _ => None,
            }
        }) else {
            continue;
        };
        let Ok(body) = body else { continue };
        let indent = &text[..text.len() - text.trim_start().len()];
        let one_line = body == line && trimmed.trim_end_matches(';').ends_with('}');
        let end = (body + 1..lines.count())
            .filter(|_| !one_line)
            .find(|&l| {
                let closing = lines.line(l).trim_end();
                closing
                    .strip_prefix(indent)
                    .is_some_and(|c| c.starts_with("};"))
            })
            .map_or(body + 1, |l| l + 1);
        found.push(Found {
            lines: line..end,
            code_line: line,
            name,
            container: namespaces.clone(),
            kind,
            refers_to: None,
        });
    }
    found
}

/// The kind and name a type's head declares: `class NAME`, `struct NAME final : BASE`,
/// `enum class NAME`, with an optional `template <...>` before it on the line.
fn cpp_type_head(trimmed: &str) -> Option<(ChunkKind, String)> {
    let mut rest = trimmed;
    if let Some(after) = rest.strip_prefix("template") {
        rest = after.trim_start().strip_prefix('<')?;
        rest = rest.split_once('>')?.1.trim_start();
    }
    let (kind, after) = [
        ("enum class ", ChunkKind::Enum),
        ("enum struct ", ChunkKind::Enum),
        ("enum ", ChunkKind::Enum),
        ("class ", ChunkKind::Class),
        ("struct ", ChunkKind::Struct),
        ("union ", ChunkKind::Struct),
    ]
    .into_iter()
    .find_map(|(keyword, kind)| Some((kind, rest.strip_prefix(keyword)?)))?;
    let mut words = after.split_whitespace();
    let mut name = words.next()?;
    // An export macro between the keyword and the name (`class PROTOBUF_EXPORT Message`).
    if name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && let Some(next) = words.next()
    {
        name = next;
    }
    let name = name.trim_end_matches(['{', ':']);
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    valid.then(|| (kind, name.to_owned()))
}

/// Words that open a line of code but never a function's name.
const C_KEYWORDS: [&str; 14] = [
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "else",
    "do",
    "case",
    "typedef",
    "defined",
    "static_assert",
    "decltype",
    "operator",
];

/// The qualifiers, name and byte offset of the `(` of a function head at column 0:
/// `TYPE... NAME(`, with the return type on the line (`static int NAME(`) or above it.
fn c_function_head(text: &str) -> Option<(Vec<String>, String, usize)> {
    if text.starts_with(|c: char| c.is_whitespace() || matches!(c, '#' | '/' | '*' | '}' | '{'))
        || text.is_empty()
    {
        return None;
    }
    let open = text.find('(')?;
    let before = text[..open].trim_end();
    let start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '~'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let qualified = &before[start..];
    let mut parts: Vec<String> = qualified.split("::").map(str::to_owned).collect();
    let name = parts.pop()?;
    let valid = |s: &str| {
        !s.is_empty()
            && s.trim_start_matches('~')
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    if !valid(&name) || !parts.iter().all(|p| valid(p)) || C_KEYWORDS.contains(&name.as_str()) {
        return None;
    }
    // The words before the name are a return type: identifiers, `*`, `&`, templates'
    // brackets, nothing that ends a statement or calls.
    let prefix = &before[..start];
    let typed = prefix.chars().all(|c| {
        c.is_alphanumeric()
            || c.is_whitespace()
            || matches!(c, '_' | '*' | '&' | '<' | '>' | ',' | ':')
    }) && !prefix.split_whitespace().any(|w| C_KEYWORDS.contains(&w));
    // A name alone on its line (GNU style, the type on the line above) passes too: code at
    // column 0 is a declaration, not a call.
    typed.then_some((parts, name, open))
}

/// The line of the `{` that opens the body of the function whose parameter list opens at
/// byte `open` of line `head`: the list closes, then nothing but attributes or a trailing
/// return type comes before the `{` (a `;` makes it a prototype).
fn c_body_start(lines: &Lines, head: usize, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut closed = false;
    for line in head..(head + 40).min(lines.count()) {
        let text = lines.line(line);
        let text = if line == head { &text[open..] } else { text };
        for (i, c) in text.char_indices() {
            if closed {
                match c {
                    '{' => return Some(line),
                    // A prototype, an initialiser, or a macro call followed by more code.
                    ';' | '=' | '(' => return None,
                    _ => {}
                }
                continue;
            }
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        closed = true;
                        let rest = text[i + 1..].trim();
                        if rest.starts_with("//") || rest.starts_with("/*") {
                            break;
                        }
                    }
                }
                ';' if depth == 0 => return None,
                _ => {}
            }
        }
    }
    None
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
    fn c_functions_behind_unknown_macros_are_found_and_prototypes_are_not() {
        let text = "\
int ZEXPORT deflateParams(z_streamp strm, int level,
                          int strategy)
{
    return 0;
}

void ZLIB_INTERNAL _tr_init(deflate_state *s);

local void gen_codes(ct_data *tree, int max_code) {
    if (x) {
    }
}

int Socket::send(const char *data)
{
}
";
        let lines = Lines::new(text);
        let found = c_functions(&lines);
        let spans: Vec<(String, std::ops::Range<usize>)> = found
            .iter()
            .map(|f| (symbol_path(&f.container, &f.name), f.lines.clone()))
            .collect();
        assert_eq!(
            spans,
            [
                ("deflateParams".to_owned(), 0..5),
                ("gen_codes".to_owned(), 8..12),
                ("Socket::send".to_owned(), 13..16),
            ]
        );
    }

    #[test]
    fn cpp_types_the_tree_lost_are_found_in_their_namespaces() {
        let text = "\
namespace CLI {
class Error : public std::runtime_error {
    int code;
};
class Success;
template <typename T> struct Holder {
  T value;
};
}  // namespace CLI
enum class Level { Debug, Info };
";
        let lines = Lines::new(text);
        let found = cpp_types(&lines);
        let spans: Vec<(String, ChunkKind, std::ops::Range<usize>)> = found
            .iter()
            .map(|f| (symbol_path(&f.container, &f.name), f.kind, f.lines.clone()))
            .collect();
        assert_eq!(
            spans,
            [
                ("CLI::Error".to_owned(), ChunkKind::Class, 1..4),
                ("CLI::Holder".to_owned(), ChunkKind::Struct, 5..8),
                ("Level".to_owned(), ChunkKind::Enum, 9..10),
            ]
        );
    }

    #[test]
    fn a_shell_function_runs_to_its_closing_brace() {
        let text = "a()\n{\n    if x; then\n    }\n}\n\nb() { :; }\n";
        let lines = Lines::new(text);
        let found = shell_functions(&lines);
        let spans: Vec<(&str, std::ops::Range<usize>)> = found
            .iter()
            .map(|f| (f.name.as_str(), f.lines.clone()))
            .collect();
        assert_eq!(spans, [("a", 0..5), ("b", 6..7)]);
    }
}
