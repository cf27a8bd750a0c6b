//! Reading one file's imports and declarations: its language's query over its syntax tree
//! (quarry-graph's `lang`), or its manifest.

use quarry_chunk::{Language, SyntaxTree};
use tree_sitter::{QueryCursor, StreamingIterator};

use crate::FileKey;
use crate::imports::{Declared, FileImports};
use crate::lang::{self, Found, Sink};

impl FileImports {
    /// Reads what the file at `key` imports and declares. The language comes from
    /// quarry-chunk's [`Language::detect`]; `Cargo.toml` and `go.mod` are read for
    /// the crate and module names that imports of other files resolve to. Anything
    /// else (and a parse abandoned as runaway) imports nothing.
    ///
    /// Bytes that are not UTF-8 are read as U+FFFD, which matches no import.
    pub fn extract(key: &FileKey, bytes: &[u8]) -> FileImports {
        let text = String::from_utf8_lossy(bytes);
        let language = Language::detect(key.as_str(), &text);
        let syntax = lang::query(language).and_then(|_| SyntaxTree::parse(&text, language));
        Self::from_parsed(key, &text, language, syntax.as_ref())
    }

    /// [`FileImports::extract`] for a file already read as `language` and parsed
    /// (`syntax`, `None` where it has no grammar or the parse was abandoned): the chunker
    /// hands over its tree, and the file is parsed once.
    pub fn from_parsed(
        key: &FileKey,
        text: &str,
        language: Language,
        syntax: Option<&SyntaxTree>,
    ) -> FileImports {
        match key.file_name() {
            "Cargo.toml" => return manifest(lang::rust::crate_name(text).map(Declared::Crate)),
            "go.mod" => return manifest(lang::go::module_path(text).map(Declared::GoModule)),
            _ => {}
        }
        let mut found = FileImports {
            language: Some(language),
            ..FileImports::default()
        };
        let (Some((query, collect)), Some(syntax)) = (lang::query(language), syntax) else {
            return found;
        };
        let text = syntax.text();
        let mut sink = Sink::default();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(query, syntax.tree().root_node(), text.as_bytes());
        while let Some(m) = matches.next() {
            collect(
                &Found {
                    query,
                    captures: m.captures(),
                    text,
                },
                &mut sink,
            );
        }
        if language == Language::Rust {
            lang::rust::finish(&mut sink);
        }
        found.imports = sink.imports;
        found.declared = sink.declared;
        found
    }
}

fn manifest(declared: Option<Declared>) -> FileImports {
    FileImports {
        language: None,
        imports: Vec::new(),
        declared: declared.into_iter().collect(),
    }
}
