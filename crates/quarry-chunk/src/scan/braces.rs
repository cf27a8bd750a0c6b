//! Units of a brace language: each statement or `{ ... }` block at one depth, named from
//! the identifier before its opening brace or parenthesis. Braces inside comments,
//! strings and C preprocessor lines are skipped, as far as a cheap lexer can tell them.

use crate::lines::Lines;
use crate::{ChunkKind, Language};

use super::unit::{MAX_DEPTH, Named, Unit, code_line, is_identifier};

/// Lines of comments and attributes above a declaration.
const LEADING: [&str; 5] = ["//", "/*", "*", "#", "@"];

/// Keywords that declare a type or a scope, and the kind they make.
const TYPE_KEYWORDS: [(&str, ChunkKind); 15] = [
    ("class", ChunkKind::Class),
    ("struct", ChunkKind::Struct),
    ("union", ChunkKind::Struct),
    ("record", ChunkKind::Struct),
    ("enum", ChunkKind::Enum),
    ("interface", ChunkKind::Interface),
    ("protocol", ChunkKind::Interface),
    ("trait", ChunkKind::Trait),
    ("impl", ChunkKind::Impl),
    ("extension", ChunkKind::Impl),
    ("object", ChunkKind::Class),
    ("namespace", ChunkKind::Module),
    ("module", ChunkKind::Module),
    ("mod", ChunkKind::Module),
    ("package", ChunkKind::Module),
];

/// Words before a `(` that never name a function.
const NOT_NAMES: [&str; 17] = [
    "pub",
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "return",
    "func",
    "sizeof",
    "decltype",
    "alignas",
    "noexcept",
    "throw",
    "requires",
    "when",
    "using",
    "__attribute__",
];

/// A brace, semicolon or end of text, at a byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Open(usize),
    Close(usize),
    Semicolon(usize),
}

pub(super) fn units(lines: &Lines, language: Language) -> Vec<Unit> {
    let text = lines.text(0..lines.count());
    let preprocessor = matches!(language, Language::C | Language::Cpp);
    let statements = match language {
        // A `;` statement of a C# or Java type can declare a method: an interface's or an
        // abstract one's (`bool CanDecode(Type type);`), or C#'s `=> expression;` body.
        Language::CSharp | Language::Java => Statements::Signatures,
        // Kotlin's declarations end at a line's end, with or without a body (`abstract fun
        // total(): Int`, `class Cart(val id: Int)`). (Measured for Kotlin alone: `cargo
        // xtask chunks --scanners`.)
        Language::Kotlin => Statements::Paragraphs,
        _ => Statements::Unnamed,
    };
    let tokens = tokens(text, preprocessor);
    let mut reader = Reader {
        preprocessor,
        statements,
        text,
        lines,
        tokens: &tokens,
        next: 0,
    };
    reader.scope(0, 0).0
}

/// How a language's statements without a block are read.
#[derive(Debug, Clone, Copy)]
enum Statements {
    /// As one unnamed unit.
    Unnamed,
    /// As one unit, named where it reads as a function's signature.
    Signatures,
    /// Paragraph by paragraph (blank lines apart), each named where it declares a function
    /// or a type.
    Paragraphs,
}

struct Reader<'a> {
    /// `#` lines are the preprocessor's, not code (C and C++).
    preprocessor: bool,
    statements: Statements,
    text: &'a str,
    lines: &'a Lines<'a>,
    tokens: &'a [Token],
    next: usize,
}

impl Reader<'_> {
    /// The units from byte `start` to the close of the scope at `depth` (or the end), and
    /// the offset of that close.
    fn scope(&mut self, start: usize, depth: usize) -> (Vec<Unit>, Option<usize>) {
        let mut units = Vec::new();
        let mut head = start;
        while let Some(&token) = self.tokens.get(self.next) {
            self.next += 1;
            match token {
                Token::Semicolon(at) => {
                    units.extend(self.statements(head, at + 1));
                    head = at + 1;
                }
                Token::Open(at) => {
                    // Without semicolons (Go, Kotlin, Swift, JavaScript) the text before a
                    // block can hold the statements before it (`package x`, imports): the
                    // block's own head starts after the last blank line.
                    if let Some(split) = paragraph_starts(&self.text[head..at]).last() {
                        units.extend(self.statements(head, head + split));
                        head += split;
                    }
                    let (members, close) = match depth < MAX_DEPTH {
                        true => self.scope(at + 1, depth + 1),
                        false => (Vec::new(), self.skip_block()),
                    };
                    let end = close.map_or(self.text.len(), |close| close + 1);
                    let clean = clean_head(&self.text[head..at]);
                    if clean.starts_with("extern \"") {
                        // `extern "C" { ... }` wraps a C header's declarations.
                        units.extend(self.unit(head, at + 1, None));
                        units.extend(members);
                    } else {
                        units.extend(self.unit(head, end, name(&clean, members)));
                    }
                    head = end;
                }
                Token::Close(at) if depth > 0 => {
                    units.extend(self.statements(head, at));
                    return (units, Some(at));
                }
                // A stray `}` at the top ends nothing.
                Token::Close(_) => {}
            }
        }
        units.extend(self.statements(head, self.text.len()));
        (units, None)
    }

    /// Reads past the rest of a block too deep to look into, to its close.
    fn skip_block(&mut self) -> Option<usize> {
        let mut depth = 1usize;
        while let Some(&token) = self.tokens.get(self.next) {
            self.next += 1;
            match token {
                Token::Open(_) => depth += 1,
                Token::Close(at) if depth == 1 => return Some(at),
                Token::Close(_) => depth -= 1,
                Token::Semicolon(_) => {}
            }
        }
        None
    }

    /// The units of bytes `start..end` without a block, read as the language's
    /// [`Statements`] are.
    fn statements(&self, start: usize, end: usize) -> Vec<Unit> {
        let named = |start: usize, end: usize, keep: fn(ChunkKind) -> bool| {
            let named = name(&clean_head(&self.text[start..end]), Vec::new())
                .filter(|named| keep(named.kind));
            self.unit(start, end, named)
        };
        match self.statements {
            Statements::Unnamed => self.unit(start, end, None).into_iter().collect(),
            Statements::Signatures => named(start, end, |kind| kind == ChunkKind::Function)
                .into_iter()
                .collect(),
            Statements::Paragraphs => {
                let text = &self.text[start..end];
                let bounds: Vec<usize> = std::iter::once(0)
                    .chain(paragraph_starts(text))
                    .chain([text.len()])
                    .map(|offset| start + offset)
                    .collect();
                // A `package` line scopes nothing.
                bounds
                    .windows(2)
                    .filter_map(|pair| named(pair[0], pair[1], |kind| kind != ChunkKind::Module))
                    .collect()
            }
        }
    }

    /// The unit of bytes `start..end`, whole lines; none if they hold no code.
    fn unit(&self, start: usize, end: usize, named: Option<Named>) -> Option<Unit> {
        let code = skip_trivia(self.text.as_bytes(), start, self.preprocessor).min(end);
        self.text[code..end].find(|c: char| !c.is_whitespace())?;
        let lines = self.lines.line_of(code)..self.lines.line_of(end.max(code + 1) - 1) + 1;
        let code_line = code_line(self.lines, lines.clone(), &LEADING);
        // Its doc comment: the comment lines right above its code, not what came before.
        let first = (self.lines.line_of(start)..code_line)
            .rev()
            .take_while(|&l| {
                let text = self.lines.line(l).trim_start();
                LEADING.iter().any(|c| text.starts_with(c))
            })
            .last()
            .unwrap_or(code_line);
        Some(Unit {
            lines: first..lines.end,
            code_line,
            named,
        })
    }
}

/// The braces and semicolons of `text` outside comments, strings, character literals and
/// (with `preprocessor`) `#` lines.
fn tokens(text: &str, preprocessor: bool) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    let mut line_start = true;
    while at < bytes.len() {
        let byte = bytes[at];
        let rest = &bytes[at..];
        at += match byte {
            b'#' if preprocessor && line_start => line_end(bytes, at, true) - at,
            b'/' if rest.starts_with(b"//") => line_end(bytes, at, false) - at,
            b'/' if rest.starts_with(b"/*") => {
                find(bytes, at + 2, b"*/").map_or(rest.len(), |e| e + 2 - at)
            }
            b'"' | b'`' => string_end(bytes, at) - at,
            b'\'' => char_literal_len(rest),
            b'{' => push(&mut tokens, Token::Open(at)),
            b'}' => push(&mut tokens, Token::Close(at)),
            b';' => push(&mut tokens, Token::Semicolon(at)),
            _ => 1,
        };
        line_start = match byte {
            b'\n' => true,
            b' ' | b'\t' => line_start,
            _ => bytes.get(at.saturating_sub(1)) == Some(&b'\n'),
        };
    }
    tokens
}

fn push(tokens: &mut Vec<Token>, token: Token) -> usize {
    tokens.push(token);
    1
}

/// The offset of the first byte from `at` that is neither whitespace nor in a comment (nor
/// in a `#` line, with `preprocessor`).
fn skip_trivia(bytes: &[u8], mut at: usize, preprocessor: bool) -> usize {
    loop {
        while bytes.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
            at += 1;
        }
        let rest = &bytes[at.min(bytes.len())..];
        at = match rest {
            [b'/', b'/', ..] => line_end(bytes, at, false),
            [b'/', b'*', ..] => find(bytes, at + 2, b"*/").map_or(bytes.len(), |e| e + 2),
            [b'#', ..] if preprocessor => line_end(bytes, at, true),
            _ => return at,
        };
    }
}

/// The offset of the newline ending the line at `at` (lines ending in `\` continue where
/// `continued`), or the end of the text.
fn line_end(bytes: &[u8], mut at: usize, continued: bool) -> usize {
    while let Some(newline) = find(bytes, at, b"\n") {
        let before = bytes[..newline].trim_ascii_end();
        if !(continued && before.ends_with(b"\\")) {
            return newline;
        }
        at = newline + 1;
    }
    bytes.len()
}

/// The offset after the string opened at `at`: its closing quote, unescaped; a `"` string
/// ends at its line's end at the latest, a backquoted one may span lines.
fn string_end(bytes: &[u8], at: usize) -> usize {
    let quote = bytes[at];
    let mut i = at + 1;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'\\' => i += 1,
            b'\n' if quote == b'"' => return i,
            _ if byte == quote => return i + 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The length of a character literal (`'{'`, `'\n'`) at the start of `rest`, or 1 for a
/// quote that opens none (a Rust lifetime, an apostrophe).
fn char_literal_len(rest: &[u8]) -> usize {
    match rest {
        [b'\'', b'\\', _, b'\'', ..] => 4,
        [b'\'', c, b'\'', ..] if *c != b'\\' => 3,
        _ => 1,
    }
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// A block's head without comments, attributes and preprocessor lines, on one line.
fn clean_head(head: &str) -> String {
    head.lines()
        .map(|line| line.split("//").next().unwrap_or_default().trim())
        .filter(|line| !LEADING.iter().any(|l| line.starts_with(l)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The offsets in `text` of the lines that start its paragraphs after the first: each line
/// of code after a blank line, with code before it.
fn paragraph_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let (mut offset, mut blank) = (0, false);
    text.split_inclusive('\n').filter_map(move |line| {
        let start = offset;
        offset += line.len();
        if line.trim().is_empty() {
            blank = true;
            return None;
        }
        let after_blank = std::mem::replace(&mut blank, false);
        (after_blank && !text[..start].trim().is_empty()).then_some(start)
    })
}

/// What a block whose head is `head` declares, if anything. A function's body holds no
/// declarations of its own (its calls and closures are not members).
fn name(head: &str, members: Vec<Unit>) -> Option<Named> {
    let head = strip_templates(head);
    let words = words(&head);
    type_name(&words)
        .or_else(|| function_name(&words))
        .or_else(|| bound_function(&head))
        .map(|(kind, qualifiers, name)| Named {
            transparent: kind == ChunkKind::Module,
            name,
            kind,
            qualifiers,
            members: match kind {
                ChunkKind::Function => Vec::new(),
                _ => members,
            },
        })
}

type Declared = (ChunkKind, Vec<String>, String);

/// `class NAME`, `enum class NAME`, `namespace a::b`, `impl Trait for NAME`: a keyword
/// outside brackets, then the name; not where a parameter list follows later (`struct
/// foo *make_foo(void)` is a function).
fn type_name(words: &[&str]) -> Option<Declared> {
    let depths = depths(words);
    let (at, kind) = words.iter().enumerate().find_map(|(i, w)| {
        let kind = TYPE_KEYWORDS.iter().find(|(k, _)| k == w)?.1;
        (depths[i] == 0).then_some((i, kind))
    })?;
    // Names outside brackets after the keyword; an impl is named by the type after `for`.
    let mut tail: Vec<usize> = (at + 1..words.len())
        .filter(|&i| depths[i] == 0 && !matches!(words[i], "<" | ">" | "(" | ")" | "[" | "]"))
        .collect();
    if kind == ChunkKind::Impl
        && let Some(after) = tail.iter().position(|&i| words[i] == "for")
    {
        tail.drain(..=after);
    }
    let names: Vec<&str> = tail.iter().map(|&i| words[i]).collect();
    let first = tail.iter().zip(&names).find_map(|(&i, w)| {
        (is_identifier(w) && !matches!(*w, "class" | "struct") && !is_macro(w, &names)).then_some(i)
    })?;
    if kind == ChunkKind::Module {
        // `namespace Python.Runtime`, `package com.example`: one dotted name.
        let mut dotted: Vec<&str> = words[first..]
            .iter()
            .enumerate()
            .take_while(|(i, w)| {
                if i % 2 == 0 {
                    is_identifier(w)
                } else {
                    **w == "."
                }
            })
            .map(|(_, w)| *w)
            .collect();
        if dotted.last() == Some(&".") {
            dotted.pop();
        }
        if dotted.len() > 1 {
            return Some((kind, Vec::new(), dotted.concat()));
        }
    }
    let (qualifiers, name) = qualified(&words[first..]);
    let after = &words[(first + qualifiers.len() * 2 + 1).min(words.len())..];
    let called_later = after.first() != Some(&"(") && after.contains(&"(");
    let scope = matches!(kind, ChunkKind::Module | ChunkKind::Impl);
    (scope || !called_later).then_some((kind, qualifiers, name))
}

/// An all-capitals word followed by another name (`class PROTOBUF_EXPORT Message`).
fn is_macro(word: &str, rest: &[&str]) -> bool {
    let capitals = word
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    capitals && rest.iter().filter(|w| is_identifier(w)).count() > 1
}

/// The name before the first `(` outside brackets that follows a name (generics between
/// them skipped), where the parameter list closes before the brace: `void Foo::bar(int)`.
fn function_name(words: &[&str]) -> Option<Declared> {
    let depths = depths(words);
    if depths.last().is_some_and(|&d| d > 0) || words.last() == Some(&")") && words.contains(&"=") {
        return None;
    }
    words.iter().enumerate().find_map(|(i, w)| {
        if *w != "(" || depths[i] != 0 {
            return None;
        }
        let end = skip_generics_back(words, i);
        let name = words.get(end.checked_sub(1)?)?;
        if !is_identifier(name.trim_start_matches('~')) || NOT_NAMES.contains(name) {
            return None;
        }
        // A call in a statement (`return sqrt(x)`, `x = f(y)`), not a declaration.
        let statement = words[..i].iter().any(|w| matches!(*w, "=" | "return"));
        if statement {
            return None;
        }
        let (mut qualifiers, name) = qualifiers_back(words, end - 1);
        if qualifiers.is_empty() {
            qualifiers.extend(go_receiver(words));
        }
        Some((ChunkKind::Function, qualifiers, name))
    })
}

/// A JavaScript function bound to a name: `const retry = async (fn) =>`, or assigned to a
/// member (`axios.all = function all(promises)`, `AxiosError.from = (error) =>`: `all` in
/// `axios`; a `prototype` step names no container).
fn bound_function(head: &str) -> Option<Declared> {
    let head = head.trim();
    let (target, value) = head.split_once('=')?;
    let value = value.trim_start();
    let value = value.strip_prefix("async ").unwrap_or(value).trim_start();
    let function = value.starts_with("function");
    (function || head.ends_with("=>")).then_some(())?;
    let target = target.trim();
    let target = target.strip_prefix("export ").unwrap_or(target);
    if let Some(bound) = ["const ", "let ", "var "]
        .iter()
        .find_map(|keyword| target.strip_prefix(keyword))
    {
        // `const retry: Retry = ...`: the name before its type.
        let name = bound
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .next()?;
        return is_identifier(name).then(|| (ChunkKind::Function, Vec::new(), name.to_owned()));
    }
    // A member: `a.b.c`, identifiers only.
    let mut parts: Vec<&str> = target.split('.').collect();
    (parts.len() > 1 && parts.iter().all(|part| is_identifier(part))).then_some(())?;
    let name = parts.pop()?.to_owned();
    let qualifiers = parts
        .into_iter()
        .filter(|part| *part != "prototype")
        .map(str::to_owned)
        .collect();
    Some((ChunkKind::Function, qualifiers, name))
}

/// The type of a Go method's receiver (`Command` of `func (c *Command) Name()`), if any.
fn go_receiver(words: &[&str]) -> Option<String> {
    (words.first() == Some(&"func") && words.get(1) == Some(&"(")).then_some(())?;
    let mut depth = 0usize;
    let mut receiver = None;
    for word in &words[2..] {
        match *word {
            ")" if depth == 0 => return receiver,
            "(" | "[" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            word if depth == 0 && is_identifier(word) => receiver = Some(word.to_owned()),
            _ => {}
        }
    }
    None
}

/// The name at `at` and the `::` qualifiers before it, their generics skipped:
/// `RingBuffer<T, N>::size` is `size` in `[RingBuffer]`.
fn qualifiers_back(words: &[&str], at: usize) -> (Vec<String>, String) {
    let mut qualifiers = Vec::new();
    let mut end = at;
    while end >= 2 && words[end - 1] == "::" {
        let before = skip_generics_back(words, end - 1);
        match before.checked_sub(1).map(|i| words[i]) {
            Some(word) if is_identifier(word) => qualifiers.push(word.to_owned()),
            _ => break,
        }
        end = before - 1;
    }
    qualifiers.reverse();
    (qualifiers, words[at].trim_start_matches('~').to_owned())
}

/// Where the name before the `(` at `paren` ends: before a `<...>` that closes there.
fn skip_generics_back(words: &[&str], paren: usize) -> usize {
    if paren == 0 || words[paren - 1] != ">" {
        return paren;
    }
    let mut depth = 0i32;
    for j in (0..paren).rev() {
        match words[j] {
            ">" => depth += 1,
            "<" => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return j;
        }
    }
    paren
}

/// The name and qualifiers at the start of `words`: `a :: b :: c` is `c` in `[a, b]`.
fn qualified(words: &[&str]) -> (Vec<String>, String) {
    let mut parts = vec![words.first().copied().unwrap_or_default().to_owned()];
    let mut i = 1;
    while words.get(i) == Some(&"::") && words.get(i + 1).is_some_and(|w| is_identifier(w)) {
        parts.push(words[i + 1].to_owned());
        i += 2;
    }
    let name = parts.pop().unwrap_or_default();
    (parts, name.trim_start_matches('~').to_owned())
}

/// Each word's depth in `(`, `[` and `<` brackets, before it.
fn depths(words: &[&str]) -> Vec<usize> {
    let mut depth = 0usize;
    words
        .iter()
        .map(|w| {
            let before = depth;
            match *w {
                "(" | "[" | "<" => depth += 1,
                ")" | "]" | ">" => depth = depth.saturating_sub(1),
                _ => {}
            }
            match *w {
                ")" | "]" | ">" => depth,
                _ => before,
            }
        })
        .collect()
}

/// `head` without `template <...>` parameter lists, whose `class` is no declaration.
fn strip_templates(head: &str) -> String {
    let mut out = String::with_capacity(head.len());
    let mut rest = head;
    while let Some(at) = rest.find("template") {
        out.push_str(&rest[..at]);
        let after = rest[at + "template".len()..].trim_start();
        let Some(params) = after.strip_prefix('<') else {
            out.push_str("template");
            rest = &rest[at + "template".len()..];
            continue;
        };
        let mut depth = 1;
        let close = params.char_indices().find_map(|(i, c)| {
            depth += match c {
                '<' => 1,
                '>' => -1,
                _ => 0,
            };
            (depth == 0).then_some(i)
        });
        rest = close.map_or("", |i| &params[i + 1..]);
    }
    out.push_str(rest);
    out
}

/// Identifiers (with `~`), `::` and single punctuation characters.
fn words(head: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut chars = head.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        let mut end = start + c.len_utf8();
        if c.is_alphanumeric() || matches!(c, '_' | '$' | '~') {
            while let Some(&(i, next)) = chars.peek() {
                if !(next.is_alphanumeric() || matches!(next, '_' | '$')) {
                    break;
                }
                end = i + next.len_utf8();
                chars.next();
            }
        } else if c == ':' && chars.peek().is_some_and(|&(_, next)| next == ':') {
            chars.next();
            end += 1;
        }
        words.push(&head[start..end]);
    }
    words
}
