//! Planning an index run: what differs between the index and the project's and libraries'
//! trees (or only at the paths a watcher reported), and the files whose definitions table
//! is missing or outdated.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use quarry_changes::{GitUse, TreeFile, detect_changes, detect_changes_in, relative_paths};
use quarry_store::{FileState, Store, scope_of};

use crate::file_data::DEFINITIONS_DATA;
use crate::symbols::FileDefinitions;
use crate::{Engine, EngineError};

/// What an indexing run has to do, over the project and every library, in stored paths.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Files the index lacks, with where to read them.
    pub added: Vec<(PathBuf, TreeFile)>,
    /// Indexed files whose content changed (renamed ones under their new path).
    pub modified: Vec<(PathBuf, TreeFile)>,
    /// Indexed files gone: deleted, renamed away, or of a library no longer registered.
    pub removed: Vec<String>,
    /// Files whose metadata alone changed, with their content hash.
    pub touched: Vec<(TreeFile, u64)>,
    /// Files as the index has them.
    pub unchanged: usize,
    /// What git contributed to the project's change detection.
    pub git: Option<GitUse>,
    /// Files or libraries that could not be read, one line each.
    pub warnings: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.modified.is_empty()
            && self.removed.is_empty()
            && self.touched.is_empty()
    }
}

impl Engine {
    /// Adds to `plan` the indexed files without their [`DEFINITIONS_DATA`], or with the data
    /// of another [`quarry_chunk::DEFINITIONS_VERSION`] (an index made before definitions were stored, or
    /// listed otherwise): read and chunked again, they keep their chunks and vectors and
    /// gain the table. One file is looked at when every file is up to date.
    pub(super) fn plan_definitions(
        &self,
        store: &Store,
        indexed: &[FileState],
        plan: &mut Plan,
    ) -> Result<(), EngineError> {
        let snapshot = store.snapshot()?;
        let lacks = |file: &FileState| -> Result<bool, EngineError> {
            Ok(!file.chunk_ids.is_empty()
                && snapshot
                    .file_data(&file.path, DEFINITIONS_DATA)?
                    .is_none_or(|bytes| FileDefinitions::outdated(&file.path, &bytes)))
        };
        match indexed.iter().find(|f| !f.chunk_ids.is_empty()) {
            Some(sample) if lacks(sample)? => {}
            _ => return Ok(()),
        }
        let planned: HashSet<&str> = plan
            .added
            .iter()
            .chain(&plan.modified)
            .map(|(_, file)| file.path.as_str())
            .chain(plan.removed.iter().map(String::as_str))
            .collect();
        let mut sources = self.sources()?;
        // The longest prefix first: the project's is empty and matches every path.
        sources.sort_by_key(|source| std::cmp::Reverse(source.prefix.len()));
        let mut backfill = Vec::new();
        for file in indexed {
            if planned.contains(file.path.as_str()) || !lacks(file)? {
                continue;
            }
            let Some(source) = sources
                .iter()
                .find(|source| file.path.starts_with(&source.prefix))
            else {
                continue;
            };
            let tree_file = TreeFile {
                path: file.path.clone(),
                size: file.size,
                mtime_ns: file.mtime_ns,
            };
            backfill.push((
                source.root.join(source.relative_path(&file.path)),
                tree_file,
            ));
        }
        plan.unchanged = plan.unchanged.saturating_sub(backfill.len());
        plan.modified.extend(backfill);
        Ok(())
    }

    /// What differs between `indexed` and the project's and libraries' trees (see
    /// [`detect_changes`]), or only at the paths of `scope` ([`Engine::index_paths`]). A
    /// library whose directory is gone is a warning; its files stay.
    pub(crate) fn plan(
        &self,
        store: &Store,
        indexed: &[FileState],
        scope: Option<&[PathBuf]>,
    ) -> Result<Plan, EngineError> {
        let sources = self.sources()?;
        let mut plan = Plan::default();
        let mut by_scope: HashMap<&str, Vec<FileState>> = HashMap::new();
        for file in indexed {
            by_scope
                .entry(scope_of(&file.path))
                .or_default()
                .push(file.clone());
        }
        for source in &sources {
            let files: Vec<FileState> = by_scope
                .remove(source.scope.as_str())
                .unwrap_or_default()
                .into_iter()
                .map(|file| FileState {
                    path: source.relative_path(&file.path).to_owned(),
                    ..file
                })
                .collect();
            if !source.is_project() && !source.root.is_dir() {
                plan.warnings.push(format!(
                    "{}: library {} is gone; its {} files stay indexed until `quarry lib \
                     remove` or the directory is back",
                    source.root.display(),
                    source.scope,
                    files.len()
                ));
                plan.unchanged += files.len();
                continue;
            }
            let commit = match source.is_project() {
                true => store.indexed_commit()?,
                false => None,
            };
            let changes = match scope.and_then(|paths| relative_paths(&source.root, paths)) {
                Some(paths) => detect_changes_in(&source.root, &files, &paths)?,
                None => detect_changes(&source.root, &files, commit.as_deref())?,
            };
            let located = |file: &TreeFile| {
                let path = source.root.join(&file.path);
                let stored = TreeFile {
                    path: source.stored_path(&file.path),
                    ..file.clone()
                };
                (path, stored)
            };
            plan.added.extend(changes.added.iter().map(located));
            plan.modified.extend(
                changes
                    .modified
                    .iter()
                    .chain(changes.renamed.iter().map(|r| &r.to))
                    .map(located),
            );
            plan.removed.extend(
                changes
                    .deleted
                    .iter()
                    .chain(changes.renamed.iter().map(|r| &r.from))
                    .map(|path| source.stored_path(path)),
            );
            plan.touched.extend(
                changes
                    .touched
                    .iter()
                    .map(|(file, hash)| (located(file).1, *hash)),
            );
            plan.unchanged += changes.unchanged;
            plan.warnings.extend(changes.warnings);
            if source.is_project() {
                plan.git = Some(changes.git);
            }
        }
        // What is left belongs to libraries no longer registered.
        plan.removed
            .extend(by_scope.into_values().flatten().map(|file| file.path));
        Ok(plan)
    }
}
