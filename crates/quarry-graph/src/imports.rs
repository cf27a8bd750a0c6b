//! What one file imports and declares, read from its text alone.

use quarry_chunk::Language;
use serde::{Deserialize, Serialize};

/// The imports and declarations of one file, before they are resolved against the
/// rest of the repository by [`crate::GraphBuilder::build`].
///
/// [`FileImports::extract`] needs nothing but the file, so callers may run it on many
/// threads and hand the results to [`crate::GraphBuilder::add`]. A chunker that parsed
/// the file already hands its tree to [`FileImports::from_parsed`] instead; the result
/// serialises, so that an index keeps it per file and rebuilds the graph without reading
/// a file again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileImports {
    pub(crate) language: Option<Language>,
    pub(crate) imports: Vec<Import>,
    pub(crate) declared: Vec<Declared>,
}

/// One import as written: what a statement names, not yet a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Import {
    /// Rust `mod name;`, inside the inline modules `inline`, maybe with `#[path]`.
    RustMod {
        inline: Vec<String>,
        name: String,
        path: Option<String>,
    },
    /// One path of a Rust `use` tree, inside the inline modules `inline`.
    RustUse {
        inline: Vec<String>,
        path: Vec<String>,
    },
    /// Python `import a.b` (no names) or `from ..a.b import c, d` (`level` dots).
    Python {
        level: usize,
        module: Vec<String>,
        names: Vec<String>,
    },
    /// A JavaScript or TypeScript module specifier.
    Js(String),
    /// A Go import path.
    Go(String),
    /// A dotted name looked up among the declarations of `family`.
    Qualified {
        family: Family,
        name: String,
        /// Whether an unknown name may fall back to the longest declared prefix
        /// (a nested class, a static member).
        prefixes: bool,
    },
    /// A file path searched from `bases`, trying each of `suffixes` appended.
    Path {
        path: String,
        bases: Bases,
        suffixes: Suffixes,
    },
    /// A Swift module.
    Swift(String),
}

/// Where an [`Import::Path`] is looked for, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Bases {
    /// The importing file's directory.
    FileDir,
    /// The importing file's directory, then the repository root.
    FileDirThenRoot,
    /// The repository root only.
    Root,
    /// C `#include "…"`: the file's directory, the include directories, the root.
    Quoted,
    /// C `#include <…>`: the include directories, the root.
    System,
    /// Ruby's load path: every `lib` directory, then every `test` and `spec` one
    /// (Rake's and RSpec's additions), then the root.
    RubyLoadPath,
    /// Lua's `package.path`: the root, then every `lua`, `src` and `lib` directory.
    LuaPath,
}

/// What an [`Import::Path`] may have appended to find its file, tried in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Suffixes {
    /// The path as written.
    Exact,
    /// Ruby's `require`: `.rb`, then the path as written.
    Ruby,
    /// Lua's `require`: `.lua`, then `/init.lua`.
    Lua,
}

impl Suffixes {
    pub(crate) fn list(self) -> &'static [&'static str] {
        match self {
            Suffixes::Exact => &[""],
            Suffixes::Ruby => &[".rb", ""],
            Suffixes::Lua => &[".lua", "/init.lua"],
        }
    }
}

/// Languages that share one namespace of dotted names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Family {
    /// Java, Kotlin and Scala: packages and top-level types.
    Jvm,
    /// C#: namespaces and top-level types.
    DotNet,
    /// PHP: namespaces, classes, interfaces, traits, enums and functions.
    Php,
    /// Elixir modules.
    Elixir,
    /// Haskell modules.
    Haskell,
}

/// Something a file declares that other files' imports resolve to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Declared {
    /// A dotted name (a type, an Elixir or Haskell module).
    Name(Family, String),
    /// A package or namespace some of the file's names live in.
    Namespace(Family, String),
    /// A Rust library crate's name (`-` as `_`), from its `Cargo.toml`.
    Crate(String),
    /// A Go module path, from its `go.mod`.
    GoModule(String),
}

impl FileImports {
    /// The language the file was read as; `None` for the manifests read for names.
    pub fn language(&self) -> Option<Language> {
        self.language
    }

    /// How many imports the file has (a `use` tree or a `from … import` may be
    /// several; see the crate docs).
    pub fn import_count(&self) -> usize {
        self.imports.len()
    }
}
