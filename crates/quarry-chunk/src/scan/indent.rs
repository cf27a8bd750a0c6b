//! Units of a language whose blocks show in their indentation (Python) or end in `end`
//! (Ruby, Lua, Elixir, written indented by convention), read line by line: a statement is a
//! line at the scope's column and every line after it that is indented deeper, continues an
//! open bracket or string, or closes it (`end`, `):`). A statement that declares something
//! (`def`, `class`, `module`, `function`, `defmodule`...) is named; a class's or module's
//! body is read the same way for its members.

use crate::lines::Lines;
use crate::{ChunkKind, Language};

use super::unit::{MAX_DEPTH, Named, Unit, is_identifier};

/// What a line is to the statements around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Blank,
    /// A comment alone on its line.
    Comment,
    /// A decorator or attribute (`@cached`, `@doc "..."`): it belongs to what follows.
    Leading,
    /// Code that may start a statement, at its indentation.
    Code(usize),
    /// Code at a statement's column that ends it (`end`, `):`, `]`).
    Closer(usize),
    /// A line inside a bracket or a string opened above.
    Continued,
}

/// How a language writes what the scanner reads.
struct Syntax {
    language: Language,
    comment: &'static str,
    /// A long string or comment's opening and closing delimiters (`"""`, `[[`).
    long: &'static [(&'static str, &'static str)],
    /// Whether `@` lines lead a declaration (Python's decorators, Elixir's attributes).
    at_leads: bool,
    /// Whether `#{...}` interpolates rather than comments (Ruby, Elixir).
    interpolates: bool,
}

impl Syntax {
    fn of(language: Language) -> Option<Self> {
        use Language::*;
        let triple: &'static [_] = &[("\"\"\"", "\"\"\""), ("'''", "'''")];
        let (comment, long, at_leads, interpolates): (_, &'static [_], _, _) = match language {
            Python => ("#", triple, true, false),
            Elixir => ("#", triple, true, true),
            Ruby => ("#", &[], false, true),
            Lua => ("--", &[("--[[", "]]"), ("[[", "]]")], false, false),
            _ => return None,
        };
        Some(Self {
            language,
            comment,
            long,
            at_leads,
            interpolates,
        })
    }
}

/// Whether `language` is read by its indentation.
pub(super) fn reads(language: Language) -> bool {
    Syntax::of(language).is_some()
}

/// The units of `lines`, or `None` where `language` is not read by its indentation.
pub(super) fn units(lines: &Lines, language: Language) -> Option<Vec<Unit>> {
    let syntax = Syntax::of(language)?;
    let kinds = kinds(lines, &syntax);
    Some(scope(lines, &kinds, &syntax, 0..lines.count(), 0))
}

/// Each line's [`Kind`], with brackets and long strings followed from line to line (short
/// strings and comments are skipped within a line). A line inside a bracket or long string
/// is of the kind of the line that opened it where that was a comment or a decorator. A
/// bracket the lexer misread (a `#` or quote in a regex it does not know) is dropped at the
/// first line that comes back to its opener's column without closing it.
fn kinds(lines: &Lines, syntax: &Syntax) -> Vec<Kind> {
    let mut depth = 0usize;
    let mut long: Option<&str> = None;
    let (mut opener, mut opener_indent) = (Kind::Continued, 0);
    (0..lines.count())
        .map(|l| {
            let line = lines.line(l);
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            if long.is_none()
                && depth > 0
                && !trimmed.is_empty()
                && indent <= opener_indent
                && !trimmed.starts_with([')', ']', '}'])
            {
                depth = 0;
            }
            let open = depth > 0 || long.is_some();
            let kind = if open {
                opener
            } else if trimmed.is_empty() {
                Kind::Blank
            } else if trimmed.starts_with(syntax.comment) {
                Kind::Comment
            } else if syntax.at_leads && trimmed.starts_with('@') {
                Kind::Leading
            } else if is_closer(trimmed) {
                Kind::Closer(indent)
            } else {
                Kind::Code(indent)
            };
            follow(trimmed, syntax, &mut depth, &mut long);
            if !open {
                opener = match kind {
                    Kind::Comment | Kind::Leading => kind,
                    _ => Kind::Continued,
                };
                opener_indent = indent;
            }
            kind
        })
        .collect()
}

/// Whether a line at a statement's column closes it, or goes on with it, rather than
/// starts another: `end`, `else:`, `):`, and Ruby's `private` and `protected`, which style
/// guides outdent to the class's column.
fn is_closer(trimmed: &str) -> bool {
    if matches!(trimmed.trim_end(), "private" | "protected" | "public") {
        return true;
    }
    let word_end = trimmed
        .find(|c: char| !c.is_alphanumeric() && c != '_')
        .unwrap_or(trimmed.len());
    matches!(
        &trimmed[..word_end],
        "end"
            | "else"
            | "elif"
            | "elsif"
            | "elseif"
            | "except"
            | "finally"
            | "rescue"
            | "ensure"
            | "when"
            | "catch"
            | "after"
    ) || trimmed.starts_with([')', ']', '}'])
}

/// Moves `depth` (open brackets) and `long` (the closer of an open long string) past `line`.
fn follow<'s>(line: &str, syntax: &'s Syntax, depth: &mut usize, long: &mut Option<&'s str>) {
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(close) = *long {
            match rest.find(close) {
                Some(at) => {
                    rest = &rest[at + close.len()..];
                    *long = None;
                }
                None => return,
            }
            continue;
        }
        if let Some((open, close)) = syntax.long.iter().find(|(open, _)| rest.starts_with(open)) {
            rest = &rest[open.len()..];
            *long = Some(close);
            continue;
        }
        // Ruby's and Elixir's `#{...}` interpolates (in a regex or `%` literal the lexer
        // does not know); it starts no comment.
        if rest.starts_with(syntax.comment) && !(syntax.interpolates && rest.starts_with("#{")) {
            return;
        }
        let mut chars = rest.chars();
        let c = chars.next().unwrap_or_default();
        rest = chars.as_str();
        match c {
            '(' | '[' | '{' => *depth += 1,
            ')' | ']' | '}' => *depth = depth.saturating_sub(1),
            '"' | '\'' => rest = past_quote(rest, c),
            _ => {}
        }
    }
}

/// `rest` past the quote `quote` that closes a short string on this line (all of it if none
/// does).
fn past_quote(rest: &str, quote: char) -> &str {
    let mut escaped = false;
    for (at, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == quote => return &rest[at + c.len_utf8()..],
            _ => {}
        }
    }
    ""
}

/// The statements of `range` (lines at or left of its first code's column), each a unit;
/// the members of a class or module read below `depth`.
fn scope(
    lines: &Lines,
    kinds: &[Kind],
    syntax: &Syntax,
    range: std::ops::Range<usize>,
    depth: usize,
) -> Vec<Unit> {
    let Some(column) = range.clone().find_map(|l| match kinds[l] {
        Kind::Code(indent) => Some(indent),
        _ => None,
    }) else {
        return Vec::new();
    };
    let starts: Vec<usize> = range
        .clone()
        .filter(|&l| matches!(kinds[l], Kind::Code(indent) if indent <= column))
        .collect();
    let mut units: Vec<Unit> = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let next = starts.get(i + 1).copied().unwrap_or(range.end);
        // The statement's last line of code, or its `end`; comments and decorators after
        // it lead the next, and an `end` left of its column closes the enclosing scope.
        let end = (start..next)
            .rev()
            .find(|&l| match kinds[l] {
                Kind::Code(_) | Kind::Continued => true,
                Kind::Closer(indent) => indent >= column,
                Kind::Blank | Kind::Comment | Kind::Leading => false,
            })
            .map_or(start + 1, |l| l + 1);
        let floor = units.last().map_or(range.start, |unit| unit.lines.end);
        let first = (floor..start)
            .rev()
            .take_while(|&l| matches!(kinds[l], Kind::Comment | Kind::Leading))
            .last()
            .unwrap_or(start);
        let line = lines.line(start).trim();
        if syntax.language == Language::Ruby && line.starts_with("class <<") && depth < MAX_DEPTH {
            // `class << self`: its methods are the enclosing class's.
            units.extend(scope(lines, kinds, syntax, start + 1..end, depth + 1));
            continue;
        }
        let named = declaration(line, syntax.language).map(|declared| {
            let container = matches!(
                declared.kind,
                ChunkKind::Class | ChunkKind::Module | ChunkKind::Interface | ChunkKind::Impl
            );
            let members = match container && depth < MAX_DEPTH {
                true => scope(lines, kinds, syntax, start + 1..end, depth + 1),
                false => Vec::new(),
            };
            Named {
                name: declared.name,
                transparent: declared.kind == ChunkKind::Module,
                kind: declared.kind,
                qualifiers: declared.qualifiers,
                members,
            }
        });
        units.push(Unit {
            lines: first..end,
            code_line: start,
            named,
        });
    }
    units
}

/// What a statement's first line declares.
struct Declared {
    kind: ChunkKind,
    qualifiers: Vec<String>,
    name: String,
}

/// The declaration `line` (trimmed) starts, in `language`; `None` for other statements.
fn declaration(line: &str, language: Language) -> Option<Declared> {
    let (keyword, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    let (kind, name, separators): (_, &str, &[char]) = match (language, keyword) {
        (Language::Python, "async") => return declaration(rest, language),
        (Language::Python, "def") => (ChunkKind::Function, until(rest, &['(', ':']), &[]),
        (Language::Python, "class") => (ChunkKind::Class, until(rest, &['(', ':']), &[]),
        (Language::Ruby, "def") => {
            // `def self.build`, `def valid?`: the method's own name.
            let name = until(rest, &['(', ';', ' ']);
            (ChunkKind::Function, name.rsplit('.').next()?, &[])
        }
        (Language::Ruby, "class") => (ChunkKind::Class, until(rest, &['<', ';', ' ']), &[':']),
        (Language::Ruby, "module") => (ChunkKind::Module, until(rest, &[';', ' ']), &[':']),
        (Language::Lua, "local") => return declaration(rest, language),
        (Language::Lua, "function") => (ChunkKind::Function, until(rest, &['(']), &['.', ':']),
        (Language::Lua, _) => {
            // `M.parse = function(text)`, `local parse = function(text)`.
            let (name, value) = line.split_once('=')?;
            value.trim_start().starts_with("function").then_some(())?;
            let name = name.trim().trim_start_matches("local ").trim();
            (ChunkKind::Function, name, &['.', ':'])
        }
        (Language::Elixir, "defmodule") => (ChunkKind::Module, until(rest, &[',', ' ']), &['.']),
        (Language::Elixir, "defprotocol") => {
            (ChunkKind::Interface, until(rest, &[',', ' ']), &['.'])
        }
        (Language::Elixir, "defimpl") => (ChunkKind::Impl, until(rest, &[',', ' ']), &['.']),
        (
            Language::Elixir,
            "def" | "defp" | "defmacro" | "defmacrop" | "defguard" | "defguardp" | "defdelegate",
        ) => (ChunkKind::Function, until(rest, &['(', ',', ' ']), &[]),
        _ => return None,
    };
    let mut parts: Vec<&str> = name.split(separators).filter(|p| !p.is_empty()).collect();
    let name = parts.pop()?;
    // Ruby's `valid?`, `save!` and `name=` are names; the rest must be identifiers.
    is_identifier(name.trim_end_matches(['?', '!', '='])).then_some(())?;
    parts.iter().all(|part| is_identifier(part)).then_some(())?;
    Some(Declared {
        kind,
        qualifiers: parts.into_iter().map(str::to_owned).collect(),
        name: name.to_owned(),
    })
}

/// `text` up to the first of `stops` (all of it without one).
fn until<'t>(text: &'t str, stops: &[char]) -> &'t str {
    text.find(stops).map_or(text, |at| &text[..at]).trim()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::scan::unit::testing::{abandoned, keeps_the_chunk_promises};
    use crate::{ChunkKind, Language};

    proptest! {
        /// Any indentation, unclosed brackets and strings, stray `end`s and comments still
        /// give chunks that cover the file within the budget, in order.
        #[test]
        fn any_text_read_for_its_indentation_keeps_the_chunk_promises(
            text in "( {1,6}|\n|def |class |module |function |defmodule |end|M\\.x|[a-z():=,@#'\"]|\"\"\"|--\\[\\[|\\]\\]){0,300}",
            language in prop::sample::select(vec![
                Language::Python, Language::Ruby, Language::Lua, Language::Elixir,
            ]),
        ) {
            keeps_the_chunk_promises(&text, language)?;
        }
    }

    #[test]
    fn an_abandoned_python_file_keeps_its_classes_functions_and_methods() {
        let text = "\
import os

# The cache's entries.
@dataclass
class Entry:
    \"\"\"An entry.

Text at the margin, inside the docstring.
\"\"\"
    key: str

    def size(
        self,
    ):
        return len(self.key)

async def fetch(url):
    return await get(url)

if __name__ == \"__main__\":
    fetch(os.environ[\"URL\"])
";
        let (chunks, definitions) = abandoned(text, Language::Python);
        let (block, class, function) = (ChunkKind::Block, ChunkKind::Class, ChunkKind::Function);
        assert_eq!(
            chunks,
            [
                (1, 1, block, String::new()),
                (3, 15, class, "Entry".into()),
                (17, 18, function, "fetch".into()),
                (20, 21, block, String::new()),
            ]
        );
        assert_eq!(
            definitions,
            [
                ("Entry".into(), class, 3, 15),
                ("Entry::size".into(), ChunkKind::Method, 12, 15),
                ("fetch".into(), function, 17, 18),
            ]
        );
    }

    #[test]
    fn ruby_modules_are_scopes_and_ruby_classes_hold_their_methods() {
        // `private` outdented to the class's column, `class << self`, and a regex whose `#`
        // and `(` the lexer misreads: none of them ends the class or hides a method.
        let text = "\
module Thor
  class Runner < Base
    class << self
      def start(args)
        new(args).run
      end
    end

    def valid?
      (line.match(/\\s*#\\s*module:/)) ? true : false
    end

  private

    def thor_root
      \"#{root}/thor\"
    end
  end
end
";
        let (chunks, definitions) = abandoned(text, Language::Ruby);
        assert_eq!(
            chunks,
            [
                (1, 1, ChunkKind::Block, String::new()),
                (2, 18, ChunkKind::Class, "Thor::Runner".into()),
                (19, 19, ChunkKind::Block, String::new()),
            ]
        );
        let method = ChunkKind::Method;
        assert_eq!(
            definitions,
            [
                ("Thor".into(), ChunkKind::Module, 1, 19),
                ("Thor::Runner".into(), ChunkKind::Class, 2, 18),
                ("Thor::Runner::start".into(), method, 4, 6),
                ("Thor::Runner::valid?".into(), method, 9, 11),
                ("Thor::Runner::thor_root".into(), method, 15, 17),
            ]
        );
    }

    #[test]
    fn lua_and_elixir_functions_are_named_by_their_last_segment() {
        let text = "\
local M = {}

--[[ A long comment
function not_this() ]]

function M.parse(text)
  return text
end

M.dump = function(value)
  return tostring(value)
end

return M
";
        let (_, definitions) = abandoned(text, Language::Lua);
        let function = ChunkKind::Function;
        assert_eq!(
            definitions,
            [
                ("M::parse".into(), function, 6, 8),
                ("M::dump".into(), function, 10, 12),
            ]
        );
        let text = "\
defmodule App.Router do
  @doc \"\"\"
  Routes.
  \"\"\"
  def route(conn, opts) do
    conn
  end

  defp log(conn), do: conn
end
";
        let (_, definitions) = abandoned(text, Language::Elixir);
        assert_eq!(
            definitions,
            [
                ("App::Router".into(), ChunkKind::Module, 1, 10),
                ("App::Router::route".into(), function, 2, 7),
                ("App::Router::log".into(), function, 9, 9),
            ]
        );
    }
}
