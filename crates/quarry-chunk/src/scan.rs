//! The structure of a file whose parse was abandoned (runaway error recovery), read
//! without a parser: the `{ ... }` blocks of the brace languages (`braces.rs`), the
//! indented statements of Python, Ruby, Lua and Elixir (`indent.rs`). Each named block at
//! the top (or in a namespace or module) is a chunk of its own and a definition, and its
//! members are definitions, so that symbol search still finds what a large file defines.

use std::ops::Range;

use crate::definition::Found;
use crate::lines::Lines;
use crate::piece::Piece;
use crate::{ChunkKind, Language};

mod braces;
mod indent;
mod unit;

use unit::{MAX_DEPTH, Named, Unit};

/// Signatures in the embedding header are cut to this many characters.
const MAX_SIGNATURE: usize = 160;

/// The pieces and definitions of a file `language` has no tree for; `None` where the
/// language has no scanner (the file is then line windows).
pub(crate) fn pieces(
    lines: &Lines,
    language: Language,
    budget: usize,
) -> Option<(Vec<Piece>, Vec<Found>)> {
    let units = match has_braces(language) {
        true => braces::units(lines, language),
        false => indent::units(lines, language)?,
    };
    let mut emitter = Emitter {
        lines,
        budget,
        pieces: Vec::new(),
        found: Vec::new(),
        cursor: 0,
        block: None,
    };
    emitter.emit(units, &[]);
    emitter.flush_block(&[]);
    if emitter.cursor < lines.count() {
        emitter.push(lines.count(), ChunkKind::Block, None, &[], None);
    }
    Some((emitter.pieces, emitter.found))
}

/// Whether a file of `language` whose parse was abandoned is read for its structure.
pub(crate) fn reads(language: Language) -> bool {
    has_braces(language) || indent::reads(language)
}

/// Whether `language` writes its blocks in braces.
fn has_braces(language: Language) -> bool {
    use Language::*;
    matches!(
        language,
        C | Cpp
            | CSharp
            | Go
            | Java
            | JavaScript
            | TypeScript
            | Tsx
            | Kotlin
            | Php
            | Rust
            | Scala
            | Swift
            | Zig
    )
}

/// Turns units into contiguous pieces: named units on their own, the rest merged into
/// blocks up to the budget. A piece starts where the previous one ended, so every line
/// is in one.
struct Emitter<'a> {
    lines: &'a Lines<'a>,
    budget: usize,
    pieces: Vec<Piece>,
    found: Vec<Found>,
    /// The first line no piece holds yet.
    cursor: usize,
    /// The end of the block being merged, if one is open.
    block: Option<usize>,
}

impl Emitter<'_> {
    fn emit(&mut self, units: Vec<Unit>, container: &[String]) {
        for unit in units {
            if unit.lines.end <= self.block.unwrap_or(self.cursor) {
                continue;
            }
            let Some(named) = unit.named else {
                self.merge(unit.lines.end, container);
                continue;
            };
            let mut path = container.to_vec();
            path.extend(named.qualifiers.iter().cloned());
            self.define(&unit.lines, unit.code_line, &named, &path);
            if named.transparent {
                let head_end = named
                    .members
                    .first()
                    .map_or(unit.lines.end, |m| m.lines.start);
                self.merge(head_end, container);
                let mut inner = path.clone();
                inner.push(named.name);
                self.emit(named.members, &inner);
                self.merge(unit.lines.end, container);
                continue;
            }
            self.define_members(&named, &path, 0);
            self.flush_block(container);
            let signature = self.signature(unit.code_line);
            self.push(
                unit.lines.end,
                named.kind,
                Some(named.name),
                &path,
                Some(signature),
            );
        }
    }

    /// Adds the lines up to `end` to the open block (which starts at the cursor), or
    /// starts one where the open block would outgrow the budget.
    fn merge(&mut self, end: usize, container: &[String]) {
        let Some(open) = self.block else {
            self.block = (end > self.cursor).then_some(end);
            return;
        };
        if end <= open {
            return;
        }
        if self.lines.chars(self.cursor..end) > self.budget {
            self.flush_block(container);
        }
        self.block = Some(end);
    }

    fn flush_block(&mut self, container: &[String]) {
        if let Some(end) = self.block.take() {
            self.push(end, ChunkKind::Block, None, container, None);
        }
    }

    fn push(
        &mut self,
        end: usize,
        kind: ChunkKind,
        name: Option<String>,
        container: &[String],
        signature: Option<String>,
    ) {
        self.pieces.push(Piece {
            lines: self.cursor..end,
            kind,
            name,
            container: container.to_vec(),
            signature,
        });
        self.cursor = end;
    }

    fn define(&mut self, lines: &Range<usize>, code_line: usize, named: &Named, path: &[String]) {
        self.found.push(Found {
            lines: lines.clone(),
            code_line,
            name: named.name.clone(),
            container: path.to_vec(),
            kind: named.kind,
            refers_to: None,
        });
    }

    /// Defines the members of a unit that stays one piece, methods where it is a type.
    fn define_members(&mut self, named: &Named, path: &[String], depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        let mut inner = path.to_vec();
        inner.push(named.name.clone());
        for member in &named.members {
            let Some(child) = &member.named else { continue };
            let kind = match (named.kind, child.kind) {
                (ChunkKind::Module, kind) => kind,
                (_, ChunkKind::Function) => ChunkKind::Method,
                (_, kind) => kind,
            };
            let mut path = inner.clone();
            path.extend(child.qualifiers.iter().cloned());
            self.found.push(Found {
                lines: member.lines.clone(),
                code_line: member.code_line,
                name: child.name.clone(),
                container: path.clone(),
                kind,
                refers_to: None,
            });
            self.define_members(child, &path, depth + 1);
        }
    }

    fn signature(&self, line: usize) -> String {
        self.lines
            .line(line)
            .trim()
            .chars()
            .take(MAX_SIGNATURE)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::unit::testing::{abandoned, keeps_the_chunk_promises};
    use crate::{ChunkKind, Language};

    proptest! {
        /// Unbalanced braces, stray quotes and comments still give chunks that cover the
        /// file within the budget.
        #[test]
        fn any_text_read_for_its_braces_keeps_the_chunk_promises(
            text in "([a-z:<>(),;=#\"'/* \n{}]|class |namespace |\\\n){0,400}",
            language in prop::sample::select(vec![Language::Cpp, Language::Rust, Language::Kotlin]),
        ) {
            keeps_the_chunk_promises(&text, language)?;
        }
    }

    /// Go's package clause and imports, a method's receiver, a C# dotted namespace and its
    /// bodiless methods, Kotlin's declarations without a body, and JavaScript functions
    /// bound to a name or a member, read for their braces; calls inside a body are not
    /// definitions.
    #[test]
    fn braces_name_what_go_csharp_kotlin_and_javascript_declare() {
        let go = "\
package cobra

import (
\t\"fmt\"
)

func (c *Command) Name() string {
\tif len(c.Use) > 0 {
\t\treturn fmt.Sprint(c.Use)
\t}
\treturn \"\"
}
";
        let (chunks, definitions) = abandoned(go, Language::Go);
        assert_eq!(
            definitions,
            [("Command::Name".into(), ChunkKind::Function, 7, 12)]
        );
        assert_eq!(chunks[0].0..=chunks[0].1, 1..=5, "{chunks:?}");
        let csharp = "\
namespace Python.Runtime
{
    interface IDecoder
    {
        bool CanDecode(PyType type);
    }

    class Converter
    {
        public bool IsInteger(Type type) => type == typeof(int);
        private int count = 0;
    }
}
";
        let (_, definitions) = abandoned(csharp, Language::CSharp);
        let names: Vec<&str> = definitions.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "Python.Runtime",
                "Python.Runtime::IDecoder",
                "Python.Runtime::IDecoder::CanDecode",
                "Python.Runtime::Converter",
                "Python.Runtime::Converter::IsInteger",
            ]
        );
        let kotlin = "\
package shop

abstract class Store(val id: Int) {
  abstract fun total(): Int

  open fun name(): String? = null
}

class Cart(
  val id: Int
) : Store(id)
";
        let (_, definitions) = abandoned(kotlin, Language::Kotlin);
        let names: Vec<&str> = definitions.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(
            names,
            ["Store", "Store::total", "Store::name", "Cart"],
            "{definitions:?}"
        );
        let js = "\
const retry = async (fn, times) => {
  return fn();
};

axios.all = function all(promises) {
  return Promise.all(promises);
};

Cancel.prototype.toString = function toString() {
  return 'Cancel';
};
";
        let (_, definitions) = abandoned(js, Language::JavaScript);
        assert_eq!(
            definitions,
            [
                ("retry".into(), ChunkKind::Function, 1, 3),
                ("axios::all".into(), ChunkKind::Function, 5, 7),
                ("Cancel::toString".into(), ChunkKind::Function, 9, 11),
            ]
        );
    }

    /// The header chunked as it is when the parse guard abandons its parse (no tree).
    #[test]
    fn an_abandoned_header_keeps_its_items_and_definitions() {
        let text = include_str!("../../../fixtures/regressions/abandoned-header.hpp");
        let (chunks, definitions) = abandoned(text, Language::Cpp);
        let (block, class, function) = (ChunkKind::Block, ChunkKind::Class, ChunkKind::Function);
        assert_eq!(
            chunks,
            [
                (1, 14, block, String::new()),
                (16, 34, class, "ring::RingBuffer".into()),
                (36, 36, ChunkKind::Enum, "ring::Overflow".into()),
                (38, 42, function, "ring::RingBuffer::size".into()),
                (44, 47, ChunkKind::Struct, "ring::Stats".into()),
                (49, 54, function, "ring::describe".into()),
                (55, 55, block, String::new()),
            ]
        );
        let method = ChunkKind::Method;
        assert_eq!(
            definitions,
            [
                ("ring".into(), ChunkKind::Module, 11, 55),
                ("ring::detail".into(), ChunkKind::Module, 12, 14),
                ("ring::RingBuffer".into(), class, 16, 34),
                ("ring::RingBuffer::push".into(), method, 22, 27),
                ("ring::RingBuffer::full".into(), method, 29, 29),
                ("ring::Overflow".into(), ChunkKind::Enum, 36, 36),
                ("ring::RingBuffer::size".into(), function, 38, 42),
                ("ring::Stats".into(), ChunkKind::Struct, 44, 47),
                ("ring::describe".into(), function, 49, 54),
            ]
        );
    }
}
