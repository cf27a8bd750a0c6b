//! The symbol leg: a query that is or names an identifier is looked up in the definitions
//! table the chunker fills ([`quarry_chunk::Definition`], stored per file as
//! [`DEFINITIONS_DATA`]), so the file that defines a name is retrieved whatever the words
//! around the name, and before the files that only mention it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use quarry_chunk::{ChunkKind, DEFINITIONS_VERSION, Definition};
use quarry_rank::QueryTerms;
use quarry_store::Snapshot;
use quarry_text::{file_stem, fold_name as fold};
use serde::{Deserialize, Serialize};

use crate::EngineError;
use crate::file_data::{DEFINITIONS_DATA, decode_file_data};

/// A file's definitions as the index stores them, with the chunker's
/// [`DEFINITIONS_VERSION`] that listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileDefinitions {
    pub version: u32,
    pub definitions: Vec<Definition>,
}

impl FileDefinitions {
    /// Whether the data `bytes` stored for `path` were listed by another version of the
    /// chunker, or cannot be read: the file is then read again.
    pub(crate) fn outdated(path: &str, bytes: &[u8]) -> bool {
        decode_file_data::<FileDefinitions>(path, DEFINITIONS_DATA, bytes)
            .map_or(true, |stored| stored.version != DEFINITIONS_VERSION)
    }
}

/// The most definitions the symbol leg returns: a name defined in more places than this
/// (`new`, `init`) is common, and the other legs decide among them.
pub const SYMBOL_LEG_DEPTH: usize = 30;

/// How a definition matched the name a query asks for, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SymbolMatch {
    /// The name as written, and its qualifier names an enclosing symbol or the file
    /// (`Router::merge`, `tablex.deepcompare`).
    Qualified,
    /// The name as written.
    Exact,
    /// The name without case and `_` (`parse_config` for `parseConfig`, the type
    /// `session_state` for `SessionState`), qualified as asked if it was.
    Folded,
    /// A capitalised name matched, without case, by a function, method, macro or other
    /// definition that is not a type and whose name starts in lower case (the function
    /// `list` for `List`): a namesake of the type asked for, not its definition.
    Namesake,
    /// The name, but the query's qualifier names neither an enclosing symbol nor the file.
    OtherQualifier,
    /// The query's words joined into one name (`deflate params` for `deflateParams`).
    Joined,
}

impl SymbolMatch {
    /// The match's name, as JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            SymbolMatch::Qualified => "qualified",
            SymbolMatch::Exact => "exact",
            SymbolMatch::Folded => "folded",
            SymbolMatch::Namesake => "namesake",
            SymbolMatch::OtherQualifier => "other_qualifier",
            SymbolMatch::Joined => "joined",
        }
    }
}

impl std::fmt::Display for SymbolMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A definition the symbol leg found for a query.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SymbolHit {
    /// The file that defines it.
    pub path: String,
    /// Its qualified name (`Index::search`).
    pub symbol: String,
    /// What it defines.
    pub kind: ChunkKind,
    /// Its whole span, 1-based and inclusive.
    pub start_line: usize,
    /// Its last line.
    pub end_line: usize,
    /// How it matched.
    #[serde(rename = "match")]
    pub matched: SymbolMatch,
    /// The chunk that shows it.
    #[serde(skip)]
    pub chunk: quarry_chunk::ChunkId,
}

impl SymbolHit {
    /// How well this hit answers the query, lower first, where it is a definition of the
    /// name as asked: the name as written (qualified or not) before the name folded, then
    /// a type before a function before a macro. `None` for a namesake, under another
    /// qualifier or for joined words.
    pub(crate) fn preference(&self) -> Option<(u8, u8)> {
        let tier = match self.matched {
            SymbolMatch::Qualified | SymbolMatch::Exact => 0,
            SymbolMatch::Folded => 1,
            SymbolMatch::Namesake | SymbolMatch::OtherQualifier | SymbolMatch::Joined => {
                return None;
            }
        };
        Some((tier, kind_rank(self.kind)))
    }
}

/// Every definition of an index, by its name without case and `_`.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    by_name: HashMap<String, Vec<(Arc<str>, Definition)>>,
}

/// The table of the generation it was read at, shared by the searches of that generation.
#[derive(Debug, Default)]
pub(crate) struct SymbolCache(Mutex<Option<(u64, Arc<SymbolTable>)>>);

impl SymbolCache {
    /// The table as `snapshot` has it: read once per generation of the index.
    pub(crate) fn table(&self, snapshot: &Snapshot) -> Result<Arc<SymbolTable>, EngineError> {
        let generation = snapshot.generation()?;
        let mut cached = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, table)) = cached.as_ref()
            && *at == generation
        {
            return Ok(table.clone());
        }
        let table = Arc::new(SymbolTable::read(snapshot)?);
        *cached = Some((generation, table.clone()));
        Ok(table)
    }
}

impl SymbolTable {
    fn read(snapshot: &Snapshot) -> Result<Self, EngineError> {
        let mut by_name: HashMap<String, Vec<(Arc<str>, Definition)>> = HashMap::new();
        for (path, bytes) in snapshot.file_data_named(DEFINITIONS_DATA)? {
            let stored: FileDefinitions = decode_file_data(&path, DEFINITIONS_DATA, &bytes)?;
            let path: Arc<str> = path.into();
            for definition in stored.definitions {
                by_name
                    .entry(fold(&definition.name))
                    .or_default()
                    .push((path.clone(), definition));
            }
        }
        Ok(Self { by_name })
    }

    /// The definitions `terms` asks for, best match first, at most [`SYMBOL_LEG_DEPTH`]
    /// (one per chunk), admitted by `admits` (the search's filter).
    pub(crate) fn resolve(
        &self,
        terms: &QueryTerms,
        admits: impl Fn(&str) -> bool,
    ) -> Vec<SymbolHit> {
        let mut hits: Vec<SymbolHit> = Vec::new();
        let mut wanted: Vec<Vec<String>> = match terms.symbol() {
            Some(segments) => vec![segments.to_vec()],
            None => terms
                .identifiers()
                .iter()
                .filter_map(|identifier| quarry_rank::identifier_segments(identifier))
                .collect(),
        };
        let joined = terms.joined_words();
        if let Some(joined) = joined {
            wanted.push(vec![joined.to_owned()]);
        }
        for segments in &wanted {
            let Some((name, before)) = segments.split_last() else {
                continue;
            };
            let qualifier = before.last().map(|q| fold(q));
            let is_joined = joined == Some(name.as_str());
            // A C typedef of a type defined elsewhere (`typedef struct evp_pkey_st
            // EVP_PKEY;`) stands for that type's definitions too, matched as the alias was.
            let found = self.by_name.get(&fold(name)).into_iter().flatten();
            let referred = found.clone().filter_map(|(_, definition)| {
                let tag = definition.refers_to.as_deref()?;
                Some(
                    self.by_name
                        .get(&fold(tag))?
                        .iter()
                        .filter(move |(_, d)| d.name == tag),
                )
            });
            let referred: Vec<&(Arc<str>, Definition)> = referred.flatten().collect();
            let candidates = found
                .map(|entry| (entry, false))
                .chain(referred.into_iter().map(|entry| (entry, true)));
            for ((path, definition), is_referred) in candidates {
                if !admits(path) {
                    continue;
                }
                let exact = is_referred || definition.name == *name;
                let qualified = qualifier.as_ref().map(|q| qualifies(q, definition, path));
                let namesake = quarry_rank::is_namesake(name, &definition.name, definition.kind);
                let matched = match (is_joined, qualified, exact) {
                    (true, _, _) => SymbolMatch::Joined,
                    (false, Some(false), _) => SymbolMatch::OtherQualifier,
                    (false, Some(true), true) => SymbolMatch::Qualified,
                    (false, None, true) => SymbolMatch::Exact,
                    (false, _, false) if namesake => SymbolMatch::Namesake,
                    (false, _, false) => SymbolMatch::Folded,
                };
                hits.push(SymbolHit {
                    path: path.to_string(),
                    symbol: definition.qualified_name(),
                    kind: definition.kind,
                    start_line: definition.start_line,
                    end_line: definition.end_line,
                    matched,
                    chunk: definition.chunk_id(),
                });
            }
        }
        // Best match first; then the definition proper before what names it in passing (a
        // type before a function of the same name, a longer span before a shorter one);
        // then the path, for a stable order.
        hits.sort_by(|a, b| {
            (
                a.matched,
                kind_rank(a.kind),
                std::cmp::Reverse(a.end_line - a.start_line),
            )
                .cmp(&(
                    b.matched,
                    kind_rank(b.kind),
                    std::cmp::Reverse(b.end_line - b.start_line),
                ))
                .then_with(|| a.path.cmp(&b.path))
                .then(a.start_line.cmp(&b.start_line))
        });
        let mut seen = std::collections::HashSet::new();
        hits.retain(|hit| seen.insert(hit.chunk));
        hits.truncate(SYMBOL_LEG_DEPTH);
        hits
    }
}

/// Whether `qualifier` (folded) names an enclosing symbol of `definition` or its file.
fn qualifies(qualifier: &str, definition: &Definition, path: &str) -> bool {
    definition
        .container
        .iter()
        .any(|c| quarry_text::identifiers(c).any(|(s, e)| fold(&c[s..e]) == qualifier))
        || fold(file_stem(path)) == qualifier
}

/// Types and modules first: a bare name that is both a type and a function (a constructor)
/// asks for the type; a function before a macro of its name (which wraps or renames it).
fn kind_rank(kind: ChunkKind) -> u8 {
    use ChunkKind::*;
    match kind {
        kind if kind.is_type() => 0,
        Function | Method | Test => 1,
        Macro | Impl => 2,
        _ => 3,
    }
}
