//! [`ThinChunk`]: lower chunks that hold one line of code and define nothing.

use quarry_chunk::{ChunkKind, StoredChunk};

use super::penalty;
use crate::{ConfigError, Effect, LayerKind, Pass, RankError, RankingLayer};

/// Multiplies by a factor in `(0, 1]` the score of a chunk that holds one line of code
/// besides comments, conditionals of the C preprocessor and lone brackets, and is not
/// itself a definition: a split container's header with nothing but its opening line
/// (`impl<'tcx> TyCtxt<'tcx> {`, `namespace System.Net {`), or a block of one import or
/// module line.
///
/// Such a chunk names what a query names (the type, the namespace, the project) and so
/// ranks high in either leg, yet shows a reader nothing: on the suite's large corpora they
/// held several of the top ten places of a case. A one-line function or constant is a
/// definition, and is left alone.
#[derive(Debug, Clone, PartialEq)]
pub struct ThinChunk {
    factor: f32,
}

impl ThinChunk {
    /// A penalty by `factor`, in `(0, 1]`.
    pub fn new(factor: f32) -> Result<Self, ConfigError> {
        Ok(Self {
            factor: penalty("thin_chunk", factor)?,
        })
    }
}

impl RankingLayer for ThinChunk {
    fn kind(&self) -> LayerKind {
        LayerKind::ThinChunk
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        if self.factor == 1.0 {
            return Ok(());
        }
        let effect = Effect::Thin {
            factor: self.factor,
        };
        pass.scale_each(|_, ranked| {
            is_thin(&ranked.candidate).then(|| (self.factor, effect.clone()))
        });
        Ok(())
    }
}

/// Whether `chunk` is a header or block of one line of code. One of comments alone is
/// not: a banner (`// Date time pattern appenders`) titles a section of a large file, and
/// is sometimes the only chunk of the right file a question finds.
fn is_thin(chunk: &StoredChunk) -> bool {
    matches!(chunk.kind, ChunkKind::Header | ChunkKind::Block)
        && chunk.text.lines().filter(|line| is_code(line)).count() == 1
}

/// Whether `line` holds code: not blank, not a comment alone, not a conditional of the C
/// preprocessor, not a lone bracket. A `#define` or `#include` is code.
fn is_code(line: &str) -> bool {
    const NOT_CODE: [&str; 14] = [
        "//", "/*", "*", "--", "<!--", "'''", "\"\"\"", "# ", "#!", "#if", "#else", "#elif",
        "#endif", "#pragma",
    ];
    let line = line.trim();
    !line.is_empty()
        && line != "#"
        && !NOT_CODE.iter().any(|start| line.starts_with(start))
        && !line.chars().all(|c| "{}()[];,".contains(c))
}

#[cfg(test)]
mod tests {
    use quarry_chunk::Language;

    use super::*;

    fn chunk(kind: ChunkKind, text: &str) -> StoredChunk {
        StoredChunk {
            id: 1,
            path: "src/a.rs".into(),
            start_line: 1,
            end_line: text.lines().count().max(1),
            language: Language::Rust,
            kind,
            name: None,
            container: vec![],
            text: text.into(),
        }
    }

    #[test]
    fn headers_and_blocks_of_one_line_of_code_are_thin() {
        for text in [
            "impl<'tcx> TyCtxt<'tcx> {",
            "namespace System.Net {\n",
            "// This pass is public to allow external drivers\npub mod cleanup;",
            "#ifdef HAVE_X\n#include <x.h>\n#endif",
            "#include <stdio.h>\n# a comment",
            "package org.josm.data;\n\n/* generated */\n}",
        ] {
            let kind = match text.contains('{') {
                true => ChunkKind::Header,
                false => ChunkKind::Block,
            };
            assert!(is_thin(&chunk(kind, text)), "{text:?}");
        }
    }

    #[test]
    fn definitions_comments_alone_and_two_lines_of_code_are_not() {
        assert!(!is_thin(&chunk(ChunkKind::Function, "fn empty() {}")));
        assert!(!is_thin(&chunk(
            ChunkKind::Block,
            "/***\n * SFTP File Ops\n ***/"
        )));
        assert!(!is_thin(&chunk(ChunkKind::Method, "private Missing() { }")));
        assert!(!is_thin(&chunk(
            ChunkKind::Header,
            "pub struct Config {\n    pub path: PathBuf,\n"
        )));
        assert!(!is_thin(&chunk(
            ChunkKind::Block,
            "use std::fs;\nuse std::io;\n"
        )));
        assert!(!is_thin(&chunk(
            ChunkKind::Block,
            "#define MAX 4\n#define MIN 1\n"
        )));
    }
}
