//! The import graph of a repository's files, and their PageRank.
//!
//! ```
//! use quarry_graph::{GraphBuilder, PageRankConfig};
//!
//! let mut builder = GraphBuilder::new("/work/shop");
//! builder.add_file("/work/shop/app/main.py", b"from app import models\nimport requests\n")?;
//! builder.add_file("app/__init__.py", b"")?;
//! builder.add_file("./app/models.py", b"from .db import connect\n")?;
//! builder.add_file(r"app\db.py", b"import sqlite3\n")?;
//! let graph = builder.build();
//!
//! let main = graph.key("app/main.py")?;
//! let imported: Vec<&str> = graph.imports_of(&main).unwrap().iter().map(|k| k.as_str()).collect();
//! assert_eq!(imported, ["app/models.py"]);
//! assert_eq!(graph.external_count(), 2); // requests, sqlite3
//!
//! // db.py is imported by models.py, which main.py imports: it ranks first.
//! let ranking = graph.rank(&PageRankConfig::default());
//! let db = ranking.get(&graph.key("/work/shop/app/db.py")?).unwrap();
//! assert_eq!(db.percentile, 100.0);
//! # Ok::<(), quarry_graph::GraphError>(())
//! ```
//!
//! # Keys
//!
//! A file is known by its [`FileKey`]: its path relative to the repository root with
//! `/` separators. [`graph_key`] (also [`GraphBuilder::key`] and [`FileGraph::key`])
//! makes one from an absolute, `./`-prefixed, backslashed or root-relative path;
//! every lookup takes a key, so no lookup misses because a path was spelt otherwise.
//!
//! # Imports
//!
//! Each file is parsed once, with quarry-chunk's grammar for its language, and one
//! tree-sitter query per language finds its imports (anywhere in the file) and what
//! it declares. An *import* is one name a statement refers to: each path of a Rust
//! `use` tree, each module of a Python `import a, b`, the module of a
//! `from m import x, y` (whose names that are submodules resolve to their files),
//! one specifier, include or require. An import resolves to zero or more files;
//! one that resolves to none (the standard library, a dependency) is counted as
//! external, not made an edge.
//!
//! | language | resolves |
//! |---|---|
//! | Rust | `mod x;` (`x.rs`, `x/mod.rs`, `#[path]`, inline modules); `use crate::`, `self::`, `super::`, a child module or a name another `use` bound, to the longest module path with a file; another crate of the workspace by its `Cargo.toml` name; also inside macro calls |
//! | Python | `import a.b`, `from a.b import c` from the script's directory, the root and every directory holding a top-level package; relative imports; submodules named in `from … import` |
//! | JavaScript, TypeScript | `./` and `../` specifiers of `import`, `export … from`, `import()`, `require()`: exact file, added extension, `.js` written for `.ts`, `index` files |
//! | Go | import paths inside a module of the repository (`go.mod`): every non-test file of the package directory |
//! | Java, Kotlin, Scala | imports to the files declaring the type (or, for a wildcard, every file of the package); nested types and static members through their top-level type |
//! | C# | `using` to every file of the namespace, or to the file declaring the type |
//! | C, C++ | `#include "…"` from the file's directory, the include directories, the root; `<…>` from the include directories and the root; the include directories are those configured, every `include` directory, and each directory that two includes or more are written from (`src` for `"google/protobuf/message.h"`) |
//! | Ruby | `require_relative`; `require`, `load`, `autoload` from every `lib`, `test` and `spec` directory and the root |
//! | PHP | `require`/`include` of a literal path or `__DIR__ . '/…'`; `use` to the declaring file |
//! | Lua | `require "a.b"` as `a/b.lua` or `a/b/init.lua` from the root, `lua`, `src` and `lib` directories; `dofile` |
//! | Elixir | `alias`, `import`, `require`, `use` to the file that `defmodule`s the module; `Code.require_file` |
//! | Haskell, Zig, Bash, Swift | modules by their `module` header; `@import("x.zig")`; `source`/`.` of a literal path; SwiftPM targets (`Sources/<Module>/`) |
//!
//! What is not resolved: references without an import (Go, Java, C# files of the same
//! package; Ruby constants loaded by Zeitwerk), tsconfig `paths` aliases, Python
//! packages without `__init__.py` outside the root, macros' generated paths, paths
//! computed at run time (those are not counted either).
//!
//! # Ranking
//!
//! [`FileGraph::rank`] is PageRank over the import edges (damping 0.85, dangling
//! files' scores spread over all files), giving each file a score and a percentile;
//! [`FileGraph::related`] is PageRank personalised to a set of focus files. Both
//! match networkx to 1e-6 (`tests/pagerank.rs`). [`pagerank`] and
//! [`personalized_pagerank`] run on any petgraph `DiGraph`.

mod error;
mod extract;
mod graph;
mod imports;
mod key;
mod lang;
mod rank;
mod repo;

pub use error::GraphError;
pub use graph::{FileGraph, GraphBuilder, RESOLUTION_VERSION};
pub use imports::FileImports;
pub use key::{FileKey, graph_key};
pub use rank::{FileScore, PageRank, PageRankConfig, PageRanking, pagerank, personalized_pagerank};
