//! Libraries: dependency sources registered by name, indexed beside the project under
//! `lib:<name>/` and searchable alone or with it (see [`quarry_store::scope_of`]).

use std::collections::BTreeMap;
use std::fs;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use quarry_store::{Filter, PROJECT_SCOPE};
use serde::{Deserialize, Serialize};

use crate::{Engine, EngineError};

/// The registry's file under `.quarry/`: written by quarry, kept when the index is rebuilt.
pub const LIBRARIES_FILE: &str = "libraries.toml";

/// The registered libraries: name to source directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Libraries {
    /// By name.
    pub libraries: BTreeMap<String, PathBuf>,
}

impl Libraries {
    /// The registry's file, in an index directory checked for links.
    fn path(root: &Path) -> Result<PathBuf, EngineError> {
        Ok(quarry_store::index_dir(root)?.join(LIBRARIES_FILE))
    }

    /// The registry of the repository at `root`; empty when there is none.
    pub fn load(root: &Path) -> Result<Self, EngineError> {
        let path = Self::path(root)?;
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(EngineError::Io { path, source }),
        };
        toml::from_str(&text).map_err(|e| EngineError::Config {
            path,
            message: e.to_string(),
        })
    }

    /// Writes the registry: to a temporary file, then renamed over the old one.
    fn save(&self, root: &Path) -> Result<(), EngineError> {
        let path = Self::path(root)?;
        let text = format!(
            "# Libraries indexed beside the project, managed by `quarry lib add|remove`.\n{}",
            toml::to_string(self).expect("a map of strings to paths serialises")
        );
        let temporary = path.with_extension("toml.tmp");
        fs::write(&temporary, text)
            .and_then(|()| fs::rename(&temporary, &path))
            .map_err(|source| EngineError::Io { path, source })
    }
}

/// The longest library name, in bytes.
pub const MAX_LIBRARY_NAME: usize = 64;

/// The most files a library may hold to index before it must be forced: far more than a
/// dependency's sources (tokio's are 355), far fewer than a cache or a registry of them.
pub const MAX_LIBRARY_FILES: u64 = 10_000;

/// The most bytes a library's files to index may hold before it must be forced, 64 MiB:
/// some 170,000 chunks, hours of embedding on a laptop (tokio's 3.3 MB are 8,752).
pub const MAX_LIBRARY_BYTES: u64 = 64 << 20;

/// The scope that stands for the project and every library.
pub const ALL_SCOPES: &str = "all";

/// The scope name of library `name`.
pub fn library_scope(name: &str) -> String {
    format!("lib:{name}")
}

/// Where indexed files come from: the project, or one library.
pub(crate) struct Source {
    /// [`PROJECT_SCOPE`] or `lib:<name>`.
    pub scope: String,
    /// The directory walked.
    pub root: PathBuf,
    /// What stored paths start with: empty for the project, `lib:<name>/` for a library.
    pub prefix: String,
}

impl Source {
    pub fn project(root: &Path) -> Self {
        Self {
            scope: PROJECT_SCOPE.to_owned(),
            root: root.to_path_buf(),
            prefix: String::new(),
        }
    }

    pub fn library(name: &str, root: &Path) -> Self {
        let scope = library_scope(name);
        Self {
            prefix: format!("{scope}/"),
            scope,
            root: root.to_path_buf(),
        }
    }

    pub fn is_project(&self) -> bool {
        self.prefix.is_empty()
    }

    /// The stored path of `relative`, a path under this source's root.
    pub fn stored_path(&self, relative: &str) -> String {
        format!("{}{relative}", self.prefix)
    }

    /// The path under this source's root of `stored`, a stored path of this source.
    pub fn relative_path<'a>(&self, stored: &'a str) -> &'a str {
        stored.strip_prefix(&self.prefix).unwrap_or(stored)
    }
}

impl Engine {
    /// The registered libraries.
    pub fn libraries(&self) -> Result<Libraries, EngineError> {
        Libraries::load(&self.root)
    }

    /// Registers the source directory `path` as library `name` (letters, digits, `-`, `_`,
    /// `.`, a letter or digit first); the next [`Engine::index`] indexes it under the scope
    /// `lib:<name>`. Registering a name again points it at the new path.
    ///
    /// Refused: the repository, a directory inside it or one holding it (however linked),
    /// and, unless `force`, one with more than [`MAX_LIBRARY_FILES`] files or
    /// [`MAX_LIBRARY_BYTES`] bytes to index.
    pub fn add_library(&self, name: &str, path: &Path, force: bool) -> Result<(), EngineError> {
        let valid = (1..=MAX_LIBRARY_NAME).contains(&name.len())
            // Not `.`, `..` (`lib:../x.rs` reads as a path that climbs) nor a flag.
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            // They read as the scopes `all` and `project` where a library's is `lib:<name>`.
            && name != ALL_SCOPES
            && name != PROJECT_SCOPE;
        if !valid {
            return Err(EngineError::LibraryName { name: name.into() });
        }
        if !path.is_dir() {
            return Err(EngineError::NotADirectory {
                path: path.to_path_buf(),
            });
        }
        // A library's sources are walked like the project's.
        crate::check_root(path)?;
        let canonical = |path: &Path| {
            path.canonicalize().map_err(|source| EngineError::Io {
                path: path.to_path_buf(),
                source,
            })
        };
        let path = canonical(path)?;
        let root = canonical(&self.root)?;
        // The project's files (or the index's own, under `.quarry/`) would be indexed twice.
        let relation = if path == root {
            Some("is")
        } else if path.starts_with(&root) {
            Some("is inside")
        } else if root.starts_with(&path) {
            Some("holds")
        } else {
            None
        };
        if let Some(relation) = relation {
            return Err(EngineError::LibraryOverlapsProject {
                path,
                root,
                relation,
            });
        }
        if !force {
            self.check_library_size(&path)?;
        }
        let mut registry = self.libraries()?;
        registry.libraries.insert(name.to_owned(), path);
        registry.save(&self.root)
    }

    /// Refuses a library with more files or bytes to index than the limits, counted by the
    /// index's own walk, which stops as soon as either is passed.
    fn check_library_size(&self, path: &Path) -> Result<(), EngineError> {
        let files = AtomicU64::new(0);
        let bytes = AtomicU64::new(0);
        let max_file_bytes = self.options.max_file_bytes;
        quarry_changes::for_each_file(path, &|file| {
            // A file over the size limit is recorded as skipped, not read.
            if file.size > max_file_bytes {
                return ControlFlow::Continue(());
            }
            let over_files = files.fetch_add(1, Ordering::Relaxed) + 1 > MAX_LIBRARY_FILES;
            let over_bytes =
                bytes.fetch_add(file.size, Ordering::Relaxed) + file.size > MAX_LIBRARY_BYTES;
            if over_files || over_bytes {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        let (files, bytes) = (files.into_inner(), bytes.into_inner());
        if files > MAX_LIBRARY_FILES || bytes > MAX_LIBRARY_BYTES {
            return Err(EngineError::LibraryTooLarge {
                path: path.to_path_buf(),
                files,
                bytes,
            });
        }
        Ok(())
    }

    /// Unregisters library `name` and drops its files from the index.
    pub fn remove_library(&self, name: &str) -> Result<(), EngineError> {
        let mut registry = self.libraries()?;
        if registry.libraries.remove(name).is_none() {
            return Err(EngineError::UnknownLibrary {
                name: name.into(),
                known: registry.libraries.keys().cloned().collect(),
            });
        }
        let prefix = format!("{}/", library_scope(name));
        self.writing(|writer| {
            let mut batch = writer.write()?;
            for file in writer.files()? {
                if file.path.starts_with(&prefix) {
                    batch.remove_file(&file.path)?;
                }
            }
            Ok(batch.commit()?)
        })?;
        registry.save(&self.root)
    }

    /// `filter` restricted to `scopes`: [`PROJECT_SCOPE`], `lib:<name>` of a registered
    /// library, or [`ALL_SCOPES`] (no restriction).
    pub fn scope_filter(
        &self,
        mut filter: Filter,
        scopes: &[String],
    ) -> Result<Filter, EngineError> {
        if scopes.iter().any(|s| s == ALL_SCOPES) {
            return Ok(filter);
        }
        let registry = self.libraries()?;
        for scope in scopes {
            let known = scope == PROJECT_SCOPE
                || scope
                    .strip_prefix("lib:")
                    .is_some_and(|name| registry.libraries.contains_key(name));
            if !known {
                return Err(EngineError::UnknownScope {
                    scope: scope.clone(),
                    known: std::iter::once(PROJECT_SCOPE.to_owned())
                        .chain(registry.libraries.keys().map(|name| library_scope(name)))
                        .chain(std::iter::once(ALL_SCOPES.to_owned()))
                        .collect(),
                });
            }
        }
        // Scopes that name every source admit every file: nothing to check per chunk (a
        // repository without libraries searched in `project`, the default, pays nothing).
        let every_source = scopes.iter().any(|s| s == PROJECT_SCOPE)
            && registry
                .libraries
                .keys()
                .all(|name| scopes.contains(&library_scope(name)));
        if every_source {
            return Ok(filter);
        }
        for scope in scopes {
            filter = filter.scope(scope);
        }
        Ok(filter)
    }

    /// The directories an index run walks: the repository root, then each registered
    /// library's source directory.
    pub fn source_roots(&self) -> Result<Vec<PathBuf>, EngineError> {
        Ok(self.sources()?.into_iter().map(|s| s.root).collect())
    }

    /// The project and every registered library.
    pub(crate) fn sources(&self) -> Result<Vec<Source>, EngineError> {
        let registry = self.libraries()?;
        Ok(std::iter::once(Source::project(&self.root))
            .chain(
                registry
                    .libraries
                    .iter()
                    .map(|(name, path)| Source::library(name, path)),
            )
            .collect())
    }
}
