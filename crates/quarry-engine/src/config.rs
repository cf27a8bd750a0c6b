//! `.quarry/config.toml`: a repository's search defaults, written by its users.

use std::fs;
use std::path::{Path, PathBuf};

use quarry_embed::PrecisionChoice;
use quarry_rank::RankingConfig;
use quarry_store::INDEX_DIR;
use serde::{Deserialize, Serialize};

use crate::{EngineError, SearchMode};

/// The configuration file under `.quarry/`. quarry reads it and never writes it.
pub const CONFIG_FILE: &str = "config.toml";

/// A repository's defaults; every field may be left out, and command-line flags override
/// them.
///
/// ```toml
/// [search]
/// mode = "hybrid"        # hybrid, semantic or lexical
/// detail = "compact"     # compact or full
/// scopes = ["project"]   # "project", "lib:<name>", or "all"
/// drift_threshold = 0.1  # quarry status lists files that drifted this much
///
/// [index]
/// max_file_bytes = 2097152
/// precision = "auto"     # auto, f32, bf16 or int8 (QUARRY_PRECISION overrides it)
/// vector_cache_mb = 1024 # the machine's vector cache, per model; 0 turns it off
/// background = true      # a search that finds chunks waiting embeds them in the background
///
/// [ranking]              # quarry_rank::RankingConfig
/// limit = 10
/// max_per_file = 3
/// include_tests = "auto" # auto, always or never
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// How searches retrieve and show results.
    pub search: SearchDefaults,
    /// How files are indexed.
    pub index: IndexDefaults,
    /// How results are ranked.
    pub ranking: RankingConfig,
}

/// The `[index]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexDefaults {
    /// Files larger than this many bytes are skipped ([`crate::EngineOptions::max_file_bytes`]).
    pub max_file_bytes: u64,
    /// The precision the embedding model computes in; part of the index's identity, so a
    /// change asks for `quarry index --force`. `QUARRY_PRECISION` overrides it.
    pub precision: PrecisionChoice,
    /// MiB each model's file of the machine's vector cache may hold
    /// ([`crate::VectorCacheOptions`]); 0 turns the cache off.
    pub vector_cache_mb: u64,
    /// Whether a search that finds chunks waiting for their vectors starts a background
    /// process (at low priority, gone when done) to embed them, so that later searches have
    /// them with no other command.
    pub background: bool,
}

impl Default for IndexDefaults {
    fn default() -> Self {
        Self {
            max_file_bytes: crate::MAX_FILE_BYTES,
            precision: PrecisionChoice::Auto,
            vector_cache_mb: quarry_store::DEFAULT_VECTOR_CACHE_BYTES >> 20,
            background: true,
        }
    }
}

impl IndexDefaults {
    /// The user's vector cache as this configuration bounds it; `None` when it is off or
    /// there is no cache directory.
    pub fn vector_cache(&self) -> Option<crate::VectorCacheOptions> {
        (self.vector_cache_mb > 0)
            .then(|| crate::VectorCacheOptions::for_user(self.vector_cache_mb << 20))
            .flatten()
    }
}

/// The `[search]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchDefaults {
    /// Which retrieval legs run.
    pub mode: SearchMode,
    /// How much of each result is shown.
    pub detail: Detail,
    /// Which scopes answer: `project`, `lib:<name>`, or `all`.
    pub scopes: Vec<String>,
    /// Drift at or above which `quarry status` lists a file (mean over its chunks).
    pub drift_threshold: f32,
}

impl Default for SearchDefaults {
    fn default() -> Self {
        Self {
            mode: SearchMode::default(),
            detail: Detail::default(),
            scopes: vec![quarry_store::PROJECT_SCOPE.to_owned()],
            drift_threshold: 0.1,
        }
    }
}

/// How much of each result the CLI and the MCP server show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Location, symbol, score and the first lines.
    #[default]
    Compact,
    /// The whole chunk.
    Full,
}

impl Config {
    /// The configuration of the repository at `root`: its `.quarry/config.toml`, or the
    /// defaults when there is none.
    pub fn load(root: &Path) -> Result<Self, EngineError> {
        let path = quarry_store::index_dir(root)?.join(CONFIG_FILE);
        match fs::read_to_string(&path) {
            Ok(text) => {
                let config: Self = toml::from_str(&text).map_err(|e| EngineError::Config {
                    path: path.clone(),
                    message: e.to_string().trim_end().to_owned(),
                })?;
                config
                    .check()
                    .map_err(|message| EngineError::Config { path, message })?;
                Ok(config)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(EngineError::Io { path, source }),
        }
    }

    /// Whether every value is in its range (the ranking's counts and factors, the drift
    /// threshold): a value out of range is refused when the file is read, not when a search
    /// first uses it.
    pub fn check(&self) -> Result<(), String> {
        self.ranking.check().map_err(|e| format!("[ranking] {e}"))?;
        let drift = self.search.drift_threshold;
        if !(0.0..=1.0).contains(&drift) {
            return Err(format!(
                "[search] drift_threshold is {drift}, but it must be a number from 0 to 1"
            ));
        }
        Ok(())
    }

    /// Where the configuration of the repository at `root` lives.
    pub fn path(root: &Path) -> PathBuf {
        root.join(INDEX_DIR).join(CONFIG_FILE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_names_only_what_it_changes_and_typos_are_errors() {
        let config: Config = toml::from_str(
            "[search]\nmode = \"lexical\"\n[ranking]\nlimit = 5\ninclude_tests = \"never\"\n",
        )
        .unwrap();
        assert_eq!(config.search.mode, SearchMode::Lexical);
        assert_eq!(config.search.detail, Detail::Compact);
        assert_eq!(config.ranking.limit, 5);
        assert_eq!(
            config.ranking.source_boost,
            RankingConfig::default().source_boost
        );

        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(dir.path()).unwrap(), Config::default());
        fs::create_dir(dir.path().join(INDEX_DIR)).unwrap();
        fs::write(Config::path(dir.path()), "[search]\nmdoe = \"lexical\"\n").unwrap();
        let error = Config::load(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("config.toml") && error.contains("mdoe"),
            "{error}"
        );
    }

    #[test]
    fn values_out_of_range_are_refused_when_the_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(INDEX_DIR)).unwrap();
        for (text, names) in [
            ("[ranking]\nlimit = 1000000000000000000\n", "limit"),
            ("[ranking]\npool = 1000000000000\n", "pool"),
            ("[ranking]\nmax_per_file = 100000000\n", "max_per_file"),
            ("[ranking]\nlimit = 0\n", "limit"),
            ("[ranking]\nsource_boost = 0.5\n", "source_boost"),
            ("[search]\ndrift_threshold = -0.5\n", "drift_threshold"),
            ("[search]\ndrift_threshold = nan\n", "drift_threshold"),
            ("[ranking]\nlimit = 1e18\n", "limit"),
        ] {
            fs::write(Config::path(dir.path()), text).unwrap();
            let error = Config::load(dir.path()).unwrap_err().to_string();
            assert!(
                error.contains("config.toml") && error.contains(names),
                "{text}: {error}"
            );
        }
    }
}
