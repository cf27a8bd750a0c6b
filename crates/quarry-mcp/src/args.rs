//! The tools' arguments: their JSON schemas (from these types, with schemars) are what an
//! agent reads when it decides how to call a tool, so every field says what it does and
//! what it defaults to.

use quarry_engine::{Detail, IncludeTests, ResultRequest, SearchMode};
use schemars::JsonSchema;
use serde::Deserialize;

/// The most results one page may hold.
pub const MAX_LIMIT: usize = 50;
/// The deepest page: results past this are not worth an agent's reading.
pub const MAX_OFFSET: usize = 200;

/// What every tool that returns code (`semantic_search`, `get_related`, `find_similar`)
/// takes besides its own arguments: filters, paging and detail.
pub trait ResultArgs {
    /// The engine's request, with `mode` for searches.
    fn request(&self, mode: Option<SearchMode>) -> ResultRequest;
    /// The page asked for: `offset` (checked, with the limit) and `cursor`, and which search
    /// a cursor must come from.
    fn page(&self) -> Result<PageAsk, String>;
    /// Whether results carry their score explanation.
    fn explain(&self) -> bool;
}

/// The page a call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAsk {
    /// `offset`, as given.
    pub offset: Option<usize>,
    /// `cursor`, as given.
    pub cursor: Option<String>,
    /// Which search this is (a hash of its arguments but those of paging and detail): a
    /// cursor continues only the search it came from.
    pub search: u64,
}

/// Refuses an offset past the deepest page.
pub fn check_offset(offset: usize) -> Result<(), String> {
    match offset > MAX_OFFSET {
        true => Err(format!(
            "offset {offset} is past the deepest page ({MAX_OFFSET}); refine the query instead"
        )),
        false => Ok(()),
    }
}

/// A search's key: a hash of its arguments as `Debug` writes them (the same within one
/// process, which is as long as a cursor lives).
fn search_key(arguments: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    arguments.hash(&mut hasher);
    hasher.finish()
}

/// Declares a tool's argument type: its own fields, then the [`ResultArgs`] ones (written
/// once here rather than flattened, which would cost serde's errors their field names).
macro_rules! tool_args {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Deserialize, JsonSchema)]
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
            /// Results per page, 1 to 50 (default 10).
            pub limit: Option<usize>,
            /// Skip this many results: the previous response's `next_offset` reads the next
            /// page of the ranking as it is now (default 0); `cursor` is safer.
            pub offset: Option<usize>,
            /// Read the next page: pass the previous response's `next_cursor`, with the same
            /// query and filters. No chunk comes twice, even when files are indexed between
            /// pages (the page then says `ranking_moved`).
            pub cursor: Option<String>,
            /// Chunks from one file at full score; further ones rank lower, so that other
            /// files come first (default 1; 0 = no cap).
            pub max_per_file: Option<usize>,
            /// Test code: "auto" (default: shown when the query is about tests, penalised
            /// otherwise), "always" or "never".
            pub include_tests: Option<IncludeTests>,
            /// Only files whose repository-relative path matches one of these globs, such
            /// as "src/**" or "**/*.py".
            pub paths: Option<Vec<String>>,
            /// Only files in these languages, such as "rust", "python", "typescript".
            pub languages: Option<Vec<String>>,
            /// Where to look: "project" (the repository, the default), "lib:NAME" (a
            /// registered library's sources) or "all".
            pub scope: Option<Vec<String>>,
            /// "compact" (default: location, symbol, score and the first lines of each
            /// chunk) or "full" (each chunk's whole text).
            pub detail_level: Option<Detail>,
            /// Add each result's score explanation: where each retrieval leg placed it,
            /// the retrieval score, and what each ranking layer (path penalties, PageRank
            /// boost, per-file cap...) did to it (default false).
            pub explain: Option<bool>,
        }

        impl ResultArgs for $name {
            fn request(&self, mode: Option<SearchMode>) -> ResultRequest {
                ResultRequest {
                    limit: self.limit,
                    max_per_file: self.max_per_file,
                    include_tests: self.include_tests,
                    paths: self.paths.clone().unwrap_or_default(),
                    languages: self.languages.clone().unwrap_or_default(),
                    scopes: self.scope.clone().unwrap_or_default(),
                    mode,
                    detail: self.detail_level,
                }
            }

            fn page(&self) -> Result<PageAsk, String> {
                check_offset(self.offset.unwrap_or(0))?;
                match self.limit {
                    Some(limit) if limit == 0 || limit > MAX_LIMIT => {
                        return Err(format!("limit must be 1 to {MAX_LIMIT}, not {limit}"));
                    }
                    _ => {}
                }
                // The search a cursor continues: everything but how the page is cut and shown.
                let search = $name {
                    limit: None,
                    offset: None,
                    cursor: None,
                    detail_level: None,
                    explain: None,
                    ..self.clone()
                };
                Ok(PageAsk {
                    offset: self.offset,
                    cursor: self.cursor.clone(),
                    search: search_key(&format!("{search:?}")),
                })
            }

            fn explain(&self) -> bool {
                self.explain.unwrap_or(false)
            }
        }
    };
}

tool_args! {
    /// `semantic_search`.
    pub struct SearchArgs {
        /// What to find: a question or description in plain words ("where are failed requests
        /// retried with backoff"), or an identifier ("parse_config", "Router::route").
        pub query: String,
        /// "hybrid" (default: meaning and keywords), "semantic" (meaning only) or "lexical"
        /// (keywords and identifiers only).
        pub mode: Option<SearchMode>,
    }
}

tool_args! {
    /// `get_related`.
    pub struct RelatedArgs {
        /// The chunk to start from: a `chunk_id` from a previous result (32 hex digits).
        pub chunk_id: String,
        /// Only results scoring at least this similarity, 0 to 1 (default 0).
        pub min_score: Option<f32>,
        /// Also return the best chunk of each file that imports the chunk's file or that it
        /// imports, even when it reads differently (default false).
        pub include_linked: Option<bool>,
        /// Let other chunks of the same file answer (default false: other files only).
        pub include_source_file: Option<bool>,
    }
}

tool_args! {
    /// `find_similar`.
    pub struct SimilarArgs {
        /// A repository-relative file path, as results show them ("src/server.rs").
        pub path: String,
        /// A 1-based line in that file: the chunk covering it is the one to match.
        pub line: usize,
        /// Only results scoring at least this similarity, 0 to 1 (default 0).
        pub min_score: Option<f32>,
        /// Also return the best chunk of each file linked to this one by imports (default false).
        pub include_linked: Option<bool>,
        /// Let other chunks of the same file answer (default false: other files only).
        pub include_source_file: Option<bool>,
    }
}

/// What `get_related` and `find_similar` take besides where to start and the result
/// arguments.
pub struct Similarity {
    /// Only results scoring at least this.
    pub min_score: Option<f32>,
    /// Add the files linked by imports.
    pub include_linked: Option<bool>,
    /// Let other chunks of the source's file answer.
    pub include_source_file: Option<bool>,
}

/// The tools that start from a chunk: their [`Similarity`] arguments.
pub trait SimilarityArgs {
    /// The similarity arguments given.
    fn similarity(&self) -> Similarity;
}

macro_rules! similarity_args {
    ($($name:ty),*) => {$(
        impl SimilarityArgs for $name {
            fn similarity(&self) -> Similarity {
                Similarity {
                    min_score: self.min_score,
                    include_linked: self.include_linked,
                    include_source_file: self.include_source_file,
                }
            }
        }
    )*};
}

similarity_args!(RelatedArgs, SimilarArgs);

/// `index`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct IndexArgs {
    /// "status" (default: counts, model, backend, files changed since indexing, drift, and
    /// any indexing in progress) or "build" (bring the index up to date with the files now;
    /// only changed files are read again).
    pub action: Option<IndexAction>,
    /// With "build": discard the index and embed everything again (slow: minutes for a
    /// large repository). Runs in the background; poll "status" (default false).
    pub force: Option<bool>,
}

/// `index`'s `action`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexAction {
    /// Report the index's state.
    #[default]
    Status,
    /// Bring it up to date.
    Build,
}
