//! Which chunks a search may return. Filters are applied while candidates are collected,
//! never after a top-k cut, so a filtered search returns as many results as exist.

use globset::{Glob, GlobSet, GlobSetBuilder};
use quarry_chunk::Language;

use crate::StoreError;
use crate::records::StoredChunk;

/// Restricts a search to some chunks; the default admits every chunk.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Each path glob as given, and as compiled.
    globs: Vec<(String, Glob)>,
    paths: Option<GlobSet>,
    languages: Vec<Language>,
    scopes: Vec<String>,
    excluded_file: Option<String>,
}

/// The scope of the project's own files.
pub const PROJECT_SCOPE: &str = "project";

/// The most bytes a filter's path globs may hold together: they compile into one automaton
/// per search, whose size (and time to build) grows with them. Globs of this size build in
/// a fraction of a second whatever their shape (all wildcards, classes, alternatives), where
/// globset's own limit (an automaton of 10 MiB) is reached from about 90,000 bytes of `*`.
pub const MAX_PATH_GLOB_BYTES: usize = 64 << 10;

/// The scope a path belongs to: a library's files are stored under `lib:<name>/`, every
/// other path is the project's.
pub fn scope_of(path: &str) -> &str {
    match path.split_once('/') {
        Some((first, _)) if first.starts_with("lib:") => first,
        _ => PROJECT_SCOPE,
    }
}

impl Filter {
    /// Only chunks of files matching one of the globs given (`src/**/*.rs`, `*.py`...; a glob
    /// without `/` matches the file name in any directory).
    pub fn path_glob(self, glob: &str) -> Result<Self, StoreError> {
        self.path_globs([glob])
    }

    /// As [`Filter::path_glob`] for many globs at once: the set is compiled once, so the cost
    /// is linear in the globs given (adding them one at a time compiles it each time). Globs
    /// of more than [`MAX_PATH_GLOB_BYTES`] together (those of the filter so far counted)
    /// are refused once each is parsed, before the set is compiled.
    pub fn path_globs<'a>(
        mut self,
        globs: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, StoreError> {
        let globs: Vec<&str> = globs.into_iter().collect();
        let mut parsed = Vec::with_capacity(globs.len());
        for glob in globs.iter().copied() {
            let pattern = if glob.contains('/') {
                glob.to_owned()
            } else {
                format!("**/{glob}")
            };
            let compiled = Glob::new(&pattern).map_err(|e| invalid_glob(glob, e))?;
            parsed.push((glob.to_owned(), compiled));
        }
        let bytes = self.globs.iter().map(|(g, _)| g.len()).sum::<usize>()
            + globs.iter().map(|g| g.len()).sum::<usize>();
        if bytes > MAX_PATH_GLOB_BYTES {
            return Err(self.too_large(
                &globs,
                format!("more than the {MAX_PATH_GLOB_BYTES} a search compiles"),
            ));
        }
        self.globs.extend(parsed);
        if self.globs.is_empty() {
            return Ok(self);
        }
        let mut builder = GlobSetBuilder::new();
        for (_, glob) in &self.globs {
            builder.add(glob.clone());
        }
        // Each glob was parsed above: what fails here is the set's automaton, of them all
        // (globset's error names no glob).
        let built = builder.build().map_err(|error| {
            self.too_large(
                &[],
                format!("past globset's limit on their automaton, 10 MiB ({error})"),
            )
        });
        self.paths = Some(built?);
        Ok(self)
    }

    /// The error for the filter's path globs and `new` (not yet among them) that are too
    /// large to compile together, as `limit` says, naming the longest of them.
    fn too_large(&self, new: &[&str], limit: String) -> StoreError {
        let all = || {
            self.globs
                .iter()
                .map(|(g, _)| g.as_str())
                .chain(new.iter().copied())
        };
        // The first of the longest.
        let longest = all().rev().max_by_key(|g| g.len()).unwrap_or_default();
        StoreError::GlobsTooLarge {
            globs: all().count(),
            bytes: all().map(str::len).sum(),
            limit,
            longest: quarry_text::quoted(longest),
        }
    }

    /// Only chunks in one of the languages given.
    pub fn language(mut self, language: Language) -> Self {
        self.languages.push(language);
        self
    }

    /// Only chunks in one of the scopes given: [`PROJECT_SCOPE`] or `lib:<name>` (see
    /// [`scope_of`]).
    pub fn scope(mut self, scope: &str) -> Self {
        self.scopes.push(scope.to_owned());
        self
    }

    /// No chunks of the file at `path`.
    pub fn exclude_file(mut self, path: &str) -> Self {
        self.excluded_file = Some(path.to_owned());
        self
    }

    /// Whether the filter admits every chunk.
    pub fn is_empty(&self) -> bool {
        !self.constrains_paths() && self.languages.is_empty()
    }

    /// Whether the filter admits some paths and not others.
    pub fn constrains_paths(&self) -> bool {
        self.paths.is_some() || !self.scopes.is_empty() || self.excluded_file.is_some()
    }

    /// Whether chunks of the file at `path` may be returned (languages aside).
    pub fn admits_path(&self, path: &str) -> bool {
        self.paths.as_ref().is_none_or(|set| set.is_match(path))
            && (self.scopes.is_empty() || self.scopes.iter().any(|s| s == scope_of(path)))
            && self.excluded_file.as_deref() != Some(path)
    }

    /// Whether chunks in `language` may be returned (paths aside).
    pub fn admits_language(&self, language: Language) -> bool {
        self.languages.is_empty() || self.languages.contains(&language)
    }

    /// Whether chunks in the language named `name` may be returned: a name no language has
    /// only when every language is.
    pub fn admits_language_named(&self, name: &str) -> bool {
        match name.parse::<Language>() {
            Ok(language) => self.admits_language(language),
            Err(_) => self.languages.is_empty(),
        }
    }

    /// The languages admitted; empty when every language is.
    pub fn languages(&self) -> &[Language] {
        &self.languages
    }

    /// The file excluded, if any.
    pub fn excluded_file(&self) -> Option<&str> {
        self.excluded_file.as_deref()
    }

    /// Whether `chunk` may be returned.
    pub fn admits(&self, chunk: &StoredChunk) -> bool {
        self.admits_path(&chunk.path) && self.admits_language(chunk.language)
    }
}

/// A glob that does not compile, quoted short: a glob may be as long as a request allows.
fn invalid_glob(glob: &str, error: globset::Error) -> StoreError {
    StoreError::Glob {
        glob: quarry_text::quoted(glob),
        message: error.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_given_at_once_filter_as_one_at_a_time_and_none_admit_every_path() {
        let none = Filter::default().path_globs([]).unwrap();
        assert!(none.is_empty() && none.admits_path("src/lib.rs"));
        let at_once = Filter::default().path_globs(["src/**", "*.py"]).unwrap();
        let one_by_one = Filter::default()
            .path_glob("src/**")
            .unwrap()
            .path_glob("*.py")
            .unwrap();
        for path in ["src/a/b.rs", "tools/x.py", "docs/a.md", "x.py"] {
            assert_eq!(
                at_once.admits_path(path),
                one_by_one.admits_path(path),
                "{path}"
            );
        }
        assert!(at_once.admits_path("tools/x.py") && !at_once.admits_path("docs/a.md"));
    }

    #[test]
    fn globs_too_large_together_are_refused_naming_the_longest_and_the_limit() {
        let globs: Vec<String> = (0..1000)
            .map(|i| format!("{i:04}{}", "a".repeat(1996)))
            .collect();
        let error = Filter::default()
            .path_globs(globs.iter().map(String::as_str))
            .unwrap_err()
            .to_string();
        assert!(error.len() < 400, "{error}");
        for said in [
            "too large to compile",
            "1000 globs",
            &format!("more than the {MAX_PATH_GLOB_BYTES}"),
            &format!("the longest is \"0000{}…\" (2000 bytes)", "a".repeat(36)),
        ] {
            assert!(error.contains(said), "{said}: {error}");
        }
        // Those of the filter so far count, and the bound's worth compiles.
        let half = "*".repeat(MAX_PATH_GLOB_BYTES / 2);
        let filter = Filter::default().path_glob(&half).unwrap();
        assert!(filter.clone().path_glob(&half).is_ok());
        let error = filter
            .path_globs([half.as_str(), "x"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("3 globs"), "{error}");
    }

    #[test]
    fn a_set_globset_cannot_compile_is_said_so_naming_the_longest() {
        // Past globset's limit, which the bound above keeps searches from reaching.
        let stars = "*".repeat(60_000);
        let filter = Filter::default().path_glob(&stars).unwrap();
        let mut builder = GlobSetBuilder::new();
        for (_, glob) in &filter.globs {
            builder.add(glob.clone());
        }
        builder.add(Glob::new(&stars).unwrap());
        let error = builder.build().unwrap_err();
        let error = filter
            .too_large(&[&stars], format!("past globset's limit ({error})"))
            .to_string();
        assert!(error.len() < 400, "{error}");
        assert!(
            error.contains("2 globs of 120000 bytes, past globset's limit (error building NFA)"),
            "{error}"
        );
        assert!(error.contains("(60000 bytes)"), "{error}");
    }

    #[test]
    fn an_invalid_glob_is_quoted_short() {
        let long = format!("src/[{}", "a".repeat(100_000));
        let error = Filter::default().path_glob(&long).unwrap_err().to_string();
        assert!(error.len() < 200, "{error}");
        assert!(error.contains("100005 bytes"), "{error}");
    }
}
