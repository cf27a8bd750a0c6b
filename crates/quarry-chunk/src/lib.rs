//! Split source files into chunks that are good units for embedding and for
//! showing to a reader.
//!
//! ```
//! use quarry_chunk::{Chunker, ChunkKind};
//!
//! let source = "\
//! use std::fmt;
//!
//! /// Adds two numbers.
//! pub fn add(a: i32, b: i32) -> i32 {
//!     a + b
//! }
//! ";
//! let chunks = Chunker::default().chunk("src/math.rs", source.as_bytes())?;
//! assert_eq!(chunks.len(), 2);
//! assert_eq!(chunks[0].stored.kind, ChunkKind::Block);
//! let add = &chunks[1].stored;
//! assert_eq!((add.kind, add.name.as_deref()), (ChunkKind::Function, Some("add")));
//! // The doc comment stays with its function; lines are 1-based and inclusive.
//! assert_eq!((add.start_line, add.end_line), (3, 6));
//! assert!(chunks[1].embed_text.starts_with("src/math.rs\nfunction add\n"));
//! # Ok::<(), quarry_chunk::Skip>(())
//! ```
//!
//! # How a file is split
//!
//! - **Code** in one of the [`ALL_LANGUAGES`] with a grammar is parsed with tree-sitter.
//!   Every top-level function, class, struct, enum, trait, interface, type, impl and
//!   module is a chunk, with the doc comments, attributes and decorators above it.
//!   Anything else (imports, constants, statements, one-line declarations) is merged
//!   with its neighbours into [`ChunkKind::Block`]s up to the budget.
//! - A **container** (impl, class, module, namespace, object) larger than the budget
//!   is split into a [`ChunkKind::Header`] (its signature and the fields before the
//!   first member) and one chunk per member, recursively.
//! - **Markdown** is split by headings into [`ChunkKind::Section`]s.
//! - Code whose parse was **abandoned** (runaway error recovery) is read for its braces:
//!   each named top-level block (or one in a namespace) is a chunk and a definition.
//! - **Other text** is cut into overlapping line [`ChunkKind::Window`]s.
//! - Whatever is still larger than the budget is cut into overlapping line windows
//!   that keep the item's kind and name ([`Chunk::part`]). Only a single line longer
//!   than the budget can exceed it; such a chunk is flagged [`Chunk::oversized`].
//! - Binary, non-UTF-8, minified and generated files are not chunked: [`Skip`] says why.
//!
//! Every non-blank line of a chunked file lies in at least one chunk.

mod check;
mod chunk;
mod definition;
mod detect;
mod language;
mod lines;
mod markdown;
mod parse;
mod piece;
mod rules;
mod scan;
#[cfg(feature = "schema")]
mod schema;
mod stored;
mod syntax;

pub use check::{InvariantViolation, check_chunks};
pub use chunk::{ALL_KINDS, Chunk, ChunkId, ChunkIdPrefix, ChunkKind, InvalidChunkId, UnknownKind};
pub use definition::{DEFINITIONS_VERSION, Definition};
pub use detect::Skip;
pub use language::{ALL_LANGUAGES, Language, UnknownLanguage};
pub use parse::{MAX_PARSED_BYTES, SyntaxTree};
pub use stored::StoredChunk;

use lines::Lines;
use piece::Piece;

/// The most chunks one file gives: a file that would give more keeps its first ones, in the
/// file's order, and counts the rest ([`ChunkedFile::left_out`]), which are never built.
/// So the memory a file's chunks take while they are made, stored and indexed is bounded
/// by this many chunks of at most the budget, whatever the file's size (a 50 MB text file
/// gave 110,638 chunks and peaked at 832 MB). No real source file reaches it: at the
/// default budget of 652 characters, line windows of the engine's default `max_file_bytes`
/// (2 MiB) are about 3,700 chunks; of the 35 largest files over 300 KB in a cargo
/// registry's sources that are chunked (not generated, minified or data), the densest,
/// ash's 2.1 MB `vk/definitions.rs` (small structs, each a chunk), gives 8,565, and none
/// under 2 MiB gives 4,000.
pub const MAX_CHUNKS_PER_FILE: usize = 10_000;

/// How chunks are sized and what they carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkerConfig {
    /// The most characters a chunk's text may have.
    pub budget: usize,
    /// How many lines consecutive windows of a split item share.
    pub overlap_lines: usize,
    /// Put a header (path, symbol, signature) in front of the text to embed.
    /// Switch it off to measure what the header is worth.
    pub embed_header: bool,
}

impl ChunkerConfig {
    /// The context length of the default model (all-MiniLM-L6-v2), in tokens.
    pub const DEFAULT_MAX_TOKENS: usize = 256;

    /// A budget that fits a model with a context of `max_tokens` tokens: about three
    /// characters of code per token, with 15% left for the embedding header.
    ///
    /// ```
    /// # use quarry_chunk::ChunkerConfig;
    /// assert_eq!(ChunkerConfig::for_max_tokens(256).budget, 652);
    /// ```
    pub fn for_max_tokens(max_tokens: usize) -> Self {
        ChunkerConfig {
            budget: max_tokens * 3 * 85 / 100,
            overlap_lines: 2,
            embed_header: true,
        }
    }
}

impl Default for ChunkerConfig {
    fn default() -> Self {
        Self::for_max_tokens(Self::DEFAULT_MAX_TOKENS)
    }
}

/// Splits files into [`Chunk`]s. Cheap to create, `Send + Sync`, reusable.
#[derive(Debug, Clone, Default)]
pub struct Chunker {
    config: ChunkerConfig,
}

impl Chunker {
    /// A chunker with the given configuration.
    pub fn new(config: ChunkerConfig) -> Self {
        Chunker { config }
    }

    /// The configuration in use.
    pub fn config(&self) -> &ChunkerConfig {
        &self.config
    }

    /// Chunks one file. `path` is repository-relative (`\` is turned into `/`); it is
    /// stored in the chunks, feeds their ids and, with the first line, decides the
    /// language. An empty or blank file gives no chunks.
    ///
    /// # Errors
    ///
    /// A [`Skip`] if the file is binary, not UTF-8, minified or generated.
    pub fn chunk(&self, path: &str, bytes: &[u8]) -> Result<Vec<Chunk>, Skip> {
        Ok(self.chunk_file(path, bytes)?.chunks)
    }

    /// [`Chunker::chunk`], handing back the file's syntax tree as well, for other readers
    /// of the tree (the import graph) that would otherwise parse the file again.
    pub fn chunk_file<'b>(&self, path: &str, bytes: &'b [u8]) -> Result<ChunkedFile<'b>, Skip> {
        let path = path.replace('\\', "/");
        let text = detect::decode(bytes)?;
        if let Some(skip) = detect::machine_written(&path, text) {
            return Err(skip);
        }
        let language = Language::detect(&path, text);
        let syntax = SyntaxTree::parse(text, language);
        Ok(self.chunk_parsed(&path, text, language, syntax))
    }

    /// Chunks decoded text as `language` as when the parse guard abandons its parse: read
    /// for its braces or its indentation, with the definitions that reading finds. `None`
    /// where `language` has no such reading (the file is then line windows).
    /// `cargo xtask chunks --scanners` compares it with the tree's reading.
    ///
    /// ```
    /// use quarry_chunk::{Chunker, Language};
    ///
    /// let text = "class Cart:\n    def total(self):\n        return 0\n";
    /// let (_, definitions) = Chunker::default()
    ///     .chunk_unparsed("cart.py", text, Language::Python)
    ///     .unwrap();
    /// let names: Vec<String> = definitions.iter().map(|d| d.qualified_name()).collect();
    /// assert_eq!(names, ["Cart", "Cart::total"]);
    /// assert!(Chunker::default().chunk_unparsed("x.md", "# x\n", Language::Markdown).is_none());
    /// ```
    pub fn chunk_unparsed(
        &self,
        path: &str,
        text: &str,
        language: Language,
    ) -> Option<(Vec<Chunk>, Vec<Definition>)> {
        scan::reads(language).then(|| {
            let file = self.chunk_parsed(path, text, language, None);
            (file.chunks, file.definitions)
        })
    }

    /// Chunks decoded text as `language`, without the binary, minified and generated
    /// checks of [`Chunker::chunk`].
    pub fn chunk_text(&self, path: &str, text: &str, language: Language) -> Vec<Chunk> {
        self.chunk_parsed(path, text, language, SyntaxTree::parse(text, language))
            .chunks
    }

    /// Chunks `text` along `syntax`, its tree where it has one (a parse abandoned is read
    /// for its braces, `scan.rs`; a language without a grammar falls back to line windows),
    /// and lists its definitions.
    fn chunk_parsed<'b>(
        &self,
        path: &str,
        text: &'b str,
        language: Language,
        syntax: Option<SyntaxTree<'b>>,
    ) -> ChunkedFile<'b> {
        let lines = Lines::new(text);
        let mut found = Vec::new();
        let pieces = match (language, syntax.as_ref(), rules::rules(language)) {
            (_, Some(syntax), Some(rules)) => {
                let chunker = syntax::SyntaxChunker::new(syntax, &lines, rules, self.config.budget);
                let (pieces, definitions) = chunker.pieces();
                found = definitions;
                Some(pieces)
            }
            (_, None, Some(_)) => {
                scan::pieces(&lines, language, self.config.budget).map(|(pieces, definitions)| {
                    found = definitions;
                    pieces
                })
            }
            (Language::Markdown, _, _) => Some(markdown::pieces(&lines)),
            _ => None,
        };
        let mut pieces = pieces.unwrap_or_else(|| {
            vec![Piece {
                lines: 0..lines.count(),
                kind: ChunkKind::Window,
                name: None,
                container: Vec::new(),
                signature: None,
            }]
        });
        // Where a grammar loses definitions to a parse error, lines are read for them too;
        // the tree's own definitions win over a name read from the lines, a type over a
        // type and a function over a function (a class the tree lost keeps the name its
        // constructors, defined outside it, also carry).
        let scanned = match language {
            Language::Bash => definition::shell_functions(&lines),
            Language::C => definition::c_functions(&lines),
            Language::Cpp => {
                let mut scanned = definition::c_functions(&lines);
                scanned.extend(definition::cpp_types(&lines));
                scanned
            }
            _ => Vec::new(),
        };
        let unknown: Vec<definition::Found> = scanned
            .into_iter()
            .filter(|s| {
                !found
                    .iter()
                    .any(|f| f.name == s.name && f.kind.is_type() == s.kind.is_type())
            })
            .collect();
        name_lost_blocks(&mut pieces, &unknown, &lines);
        found.extend(unknown);
        let (chunks, left_out) = piece::into_chunks(
            path,
            language,
            &lines,
            pieces,
            &self.config,
            MAX_CHUNKS_PER_FILE,
        );
        if left_out > 0 {
            // Definitions past the last chunk kept have no chunk; dropped before they are
            // matched against the chunks, which costs their number times the chunks'.
            let end = chunks.last().map_or(0, |c| c.stored.end_line);
            found.retain(|f| f.code_line < end);
        }
        let definitions = definition::attach(found, &chunks);
        ChunkedFile {
            text,
            language,
            syntax,
            chunks,
            definitions,
            left_out,
        }
    }
}

/// A definition the tree lost to a parse error, read from the lines instead, names the
/// nameless block that opens it: one that holds its declaration line, starts at most
/// [`LOST_DEFINITION_LEAD`] lines before it (a `template <...>` line) and ends within it, so
/// that a class the parser could not read is still a class, by its name, in search (the
/// error may leave its end to other pieces).
fn name_lost_blocks(pieces: &mut [Piece], lost: &[definition::Found], lines: &Lines) {
    for definition in lost {
        let block = pieces.iter_mut().find(|piece| {
            piece.kind == ChunkKind::Block
                && piece.name.is_none()
                && piece.lines.contains(&definition.code_line)
                && piece.lines.start + LOST_DEFINITION_LEAD >= definition.lines.start
                && piece.lines.end <= definition.lines.end
        });
        if let Some(block) = block {
            block.kind = definition.kind;
            block.name = Some(definition.name.clone());
            block.container = definition.container.clone();
            let line = definition.code_line;
            block.signature = Some(lines.text(line..line + 1).trim().to_owned());
        }
    }
}

/// How many lines a nameless block may open before the lost definition it is named after.
const LOST_DEFINITION_LEAD: usize = 3;

/// A chunked file: its decoded text, language, syntax tree (where it has a grammar and
/// the parse was not abandoned) and chunks.
#[derive(Debug)]
pub struct ChunkedFile<'b> {
    /// The file's text.
    pub text: &'b str,
    /// Its language.
    pub language: Language,
    /// Its syntax tree.
    pub syntax: Option<SyntaxTree<'b>>,
    /// Its chunks, in order.
    pub chunks: Vec<Chunk>,
    /// What it defines, in order of their first lines ([`Definition`]).
    pub definitions: Vec<Definition>,
    /// The chunks past [`MAX_CHUNKS_PER_FILE`] that were not made (0 for almost every
    /// file): `chunks` then holds the first [`MAX_CHUNKS_PER_FILE`], and `definitions`
    /// those that lie in them.
    pub left_out: usize,
}
