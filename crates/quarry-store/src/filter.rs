//! Which chunks a search may return. Filters are applied while candidates are collected,
//! never after a top-k cut, so a filtered search returns as many results as exist.

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::StoreError;
use crate::records::StoredChunk;

/// Restricts a search to some chunks; the default admits every chunk.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    globs: Vec<String>,
    paths: Option<GlobSet>,
    languages: Vec<String>,
    excluded_file: Option<String>,
}

impl Filter {
    /// Only chunks of files matching one of the globs given (`src/**/*.rs`, `*.py`...; a glob
    /// without `/` matches the file name in any directory).
    pub fn path_glob(mut self, glob: &str) -> Result<Self, StoreError> {
        let pattern = if glob.contains('/') {
            glob.to_owned()
        } else {
            format!("**/{glob}")
        };
        let invalid = |e: globset::Error| StoreError::Glob {
            glob: glob.into(),
            message: e.to_string(),
        };
        Glob::new(&pattern).map_err(invalid)?;
        self.globs.push(pattern);
        let mut builder = GlobSetBuilder::new();
        for pattern in &self.globs {
            builder.add(Glob::new(pattern).map_err(invalid)?);
        }
        self.paths = Some(builder.build().map_err(invalid)?);
        Ok(self)
    }

    /// Only chunks in one of the languages given (`quarry_chunk::Language::name`).
    pub fn language(mut self, language: &str) -> Self {
        self.languages.push(language.to_owned());
        self
    }

    /// No chunks of the file at `path`.
    pub fn exclude_file(mut self, path: &str) -> Self {
        self.excluded_file = Some(path.to_owned());
        self
    }

    /// Whether the filter admits every chunk.
    pub fn is_empty(&self) -> bool {
        self.paths.is_none() && self.languages.is_empty() && self.excluded_file.is_none()
    }

    /// Whether `chunk` may be returned.
    pub fn admits(&self, chunk: &StoredChunk) -> bool {
        self.paths
            .as_ref()
            .is_none_or(|set| set.is_match(&chunk.path))
            && (self.languages.is_empty() || self.languages.contains(&chunk.language))
            && self.excluded_file.as_deref() != Some(chunk.path.as_str())
    }
}
