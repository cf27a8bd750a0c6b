//! [`ResultRequest`]: what a caller asks of search or related results, before the
//! repository's defaults fill the gaps.

use quarry_rank::{IncludeTests, RankingConfig};
use quarry_store::Filter;

use crate::{Config, Detail, Engine, EngineError, SearchMode};

/// The most path globs one request may give: the set is compiled per request.
pub const MAX_PATH_GLOBS: usize = 1_000;

/// The result options every front end offers (the CLI's flags, the MCP server's tool
/// arguments); what is left out comes from the repository's [`Config`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResultRequest {
    /// How many results.
    pub limit: Option<usize>,
    /// At most this many per file (0: no cap).
    pub max_per_file: Option<usize>,
    /// What to do with test code.
    pub include_tests: Option<IncludeTests>,
    /// Only files matching these globs.
    pub paths: Vec<String>,
    /// Only files in these languages.
    pub languages: Vec<String>,
    /// Where to search: `project`, `lib:NAME`, `all`.
    pub scopes: Vec<String>,
    /// Which retrieval legs (search only).
    pub mode: Option<SearchMode>,
    /// How much of each chunk to show.
    pub detail: Option<Detail>,
}

impl ResultRequest {
    /// The ranking: the request over the configuration's `[ranking]`.
    pub fn ranking(&self, config: &Config) -> RankingConfig {
        let mut ranking = config.ranking.clone();
        if let Some(limit) = self.limit {
            ranking.limit = limit;
        }
        if self.max_per_file.is_some() {
            ranking.max_per_file = self.max_per_file;
        }
        if let Some(include_tests) = self.include_tests {
            ranking.include_tests = include_tests;
        }
        ranking
    }

    /// The paths, languages and scopes asked for (the configuration's scopes when the
    /// request names none).
    pub fn filter(&self, engine: &Engine, config: &Config) -> Result<Filter, EngineError> {
        if self.paths.len() > MAX_PATH_GLOBS {
            return Err(EngineError::SearchOptions(format!(
                "{} path globs, but a search takes at most {MAX_PATH_GLOBS}: name directories \
                 (`src/**`) rather than files",
                self.paths.len()
            )));
        }
        let mut filter = Filter::default().path_globs(self.paths.iter().map(String::as_str))?;
        for language in &self.languages {
            // A misspelt language would match nothing and look like an empty result.
            let known: quarry_chunk::Language = language.trim().to_lowercase().parse().map_err(
                |e: quarry_chunk::UnknownLanguage| EngineError::SearchOptions(e.to_string()),
            )?;
            filter = filter.language(known);
        }
        let scopes = match self.scopes.is_empty() {
            true => &config.search.scopes,
            false => &self.scopes,
        };
        engine.scope_filter(filter, scopes)
    }

    /// The retrieval mode asked for, or the configuration's.
    pub fn mode(&self, config: &Config) -> SearchMode {
        self.mode.unwrap_or(config.search.mode)
    }

    /// The detail asked for, or the configuration's.
    pub fn detail(&self, config: &Config) -> Detail {
        self.detail.unwrap_or(config.search.detail)
    }
}
