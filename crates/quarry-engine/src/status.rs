//! Status: what the index holds, what it is behind on, and which files moved most.

use std::path::PathBuf;

use quarry_graph::{FileImports, FileScore};
use quarry_store::{Check, Counts, Damage, FileState, IndexPart, Store, StoreError};
use serde::Serialize;

use crate::file_data::{
    DEFINITIONS_DATA, IMPORTS_DATA, LINKS_DATA, PAGERANK_DATA, decode_file_data,
};
use crate::symbols::FileDefinitions;
use crate::view::{StatusView, VectorIndexView};
use crate::{Engine, EngineError};

/// How far the dense leg reaches: every indexed chunk is searchable by its words, and
/// those with their vector by meaning too. An index run's first phase stores chunks, its
/// second embeds them ([`Engine::index`]); until it ends, searches answer from what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Coverage {
    /// Chunks indexed.
    pub chunks: u64,
    /// Those with their vector.
    pub embedded: u64,
}

impl Coverage {
    /// The index's coverage now.
    pub fn of(counts: Counts) -> Self {
        Self {
            chunks: counts.chunks,
            embedded: counts.embedded,
        }
    }

    /// Chunks waiting for their vector.
    pub fn pending(&self) -> u64 {
        self.chunks.saturating_sub(self.embedded)
    }
}

/// Stored paths of the files that differ from the index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Stale {
    /// New files.
    pub added: Vec<String>,
    /// Changed files (renamed ones under their new path).
    pub modified: Vec<String>,
    /// Files gone.
    pub removed: Vec<String>,
}

impl Stale {
    /// Whether the index is up to date.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

impl StatusView {
    /// Adds what redb's integrity check of the database found
    /// ([`Engine::status_deep`]) to the damage and the warnings.
    fn add_damage(&mut self, damage: Vec<quarry_store::Damage>) {
        let lines: Vec<String> = damage.iter().map(ToString::to_string).collect();
        self.warnings.extend(lines.iter().cloned());
        self.damage.extend(lines);
    }
}

impl Engine {
    /// [`Engine::status`], and redb's integrity check of the database besides
    /// ([`Store::check_pages`]: every page read against its checksum, under the writer lock,
    /// so [`quarry_store::StoreError::Locked`] while another process writes the index).
    pub fn status_deep(&self, drift_threshold: f32) -> Result<StatusView, EngineError> {
        let mut status = self.status(drift_threshold)?;
        status.add_damage(Store::check_pages(&self.root)?);
        Ok(status)
    }

    /// The index's health: what it holds, the files it is behind on (by the change detection
    /// [`Engine::index`] uses; nothing is read but to compare hashes), the files whose
    /// [`Drift`](quarry_store::Drift) (mean over their chunks) exceeds `drift_threshold`, and
    /// what is damaged in the index's files (a full [`quarry_store::Store::check`]: the
    /// derived indexes are read whole to verify their checksums, as a first search reads them,
    /// and every table of the database opened; and the per-file data decoded as searches
    /// decode it), so that an index a search would fail on is never called healthy.
    pub fn status(&self, drift_threshold: f32) -> Result<StatusView, EngineError> {
        let store = self.current_store()?;
        let files = store.files()?;
        let plan = self.plan(&store, &files, None)?;
        let paths = |list: &[(PathBuf, quarry_changes::TreeFile)]| {
            list.iter().map(|(_, f)| f.path.clone()).collect()
        };
        let stale = Stale {
            added: paths(&plan.added),
            modified: paths(&plan.modified),
            removed: plan.removed.clone(),
        };
        let mut found = store.check(Check::Full)?;
        if !found.iter().any(|d| d.part == IndexPart::Database) {
            found.extend(self.file_data_damage(&store, &files)?);
        }
        let damage: Vec<String> = found.iter().map(ToString::to_string).collect();
        let mut warnings = plan.warnings;
        warnings.extend(store.notes());
        warnings.extend(damage.iter().cloned());
        let coverage = Coverage::of(store.counts()?);
        Ok(StatusView {
            root: self.root.clone(),
            model: match self.model() {
                Some(model) => model.fingerprint().to_string(),
                None => store.settings().model.clone(),
            },
            backend: match self.model() {
                Some(model) => model.backend()?.to_string(),
                None => "none: the model's files are not here".to_owned(),
            },
            model_missing: self.model().is_none(),
            files: files.len() as u64,
            files_skipped: files.iter().filter(|f| f.chunk_ids.is_empty()).count() as u64,
            chunks: coverage.chunks,
            coverage,
            indexed_commit: store.indexed_commit()?,
            head_commit: quarry_changes::head_commit(&self.root),
            stale,
            drift: store.drifts(drift_threshold)?,
            vector_index: store.vector_index()?.as_ref().map(VectorIndexView::new),
            libraries: self.libraries()?.libraries,
            warnings,
            damage,
        })
    }
}

impl Engine {
    /// The per-file data as searches and index runs decode it, each record decoded in one
    /// pass: the definitions the symbol leg reads whole, the PageRank a search ranks by, the
    /// links of related results, and the imports an index run builds the graph from. Data
    /// the next index run writes again for every file (listed or ranked by another version
    /// of quarry: it looks at one file to tell, as here) is left alone. A record that does
    /// not decode fails every search that reads it, and only a rebuild writes it again.
    fn file_data_damage(
        &self,
        store: &Store,
        files: &[FileState],
    ) -> Result<Option<Damage>, EngineError> {
        let Some(sample) = files.iter().find(|f| !f.chunk_ids.is_empty()) else {
            return Ok(None);
        };
        let snapshot = store.snapshot()?;
        let stored = |data| snapshot.file_data(&sample.path, data);
        let listed = stored(DEFINITIONS_DATA)?
            .is_some_and(|bytes| !FileDefinitions::outdated(&sample.path, &bytes));
        let ranked = stored(PAGERANK_DATA)?.is_some_and(|bytes| {
            decode_file_data::<FileScore>(&sample.path, PAGERANK_DATA, &bytes)
                .is_ok_and(|score| score.resolution == quarry_graph::RESOLUTION_VERSION)
        });
        let decoded = snapshot.for_each_file_data(|path, name, bytes| match name {
            DEFINITIONS_DATA if listed => {
                decode_file_data::<FileDefinitions>(path, DEFINITIONS_DATA, bytes).map(drop)
            }
            PAGERANK_DATA if ranked => {
                decode_file_data::<FileScore>(path, PAGERANK_DATA, bytes).map(drop)
            }
            LINKS_DATA if ranked => {
                decode_file_data::<Vec<String>>(path, LINKS_DATA, bytes).map(drop)
            }
            IMPORTS_DATA => decode_file_data::<FileImports>(path, IMPORTS_DATA, bytes).map(drop),
            _ => Ok(()),
        });
        let problem = match decoded {
            Ok(Ok(())) => return Ok(None),
            Ok(Err(EngineError::CorruptFileData {
                path,
                data,
                message,
            })) => format!("{path}: unreadable {data} record ({message})"),
            Ok(Err(other)) => return Err(other),
            Err(StoreError::Corrupt { message, .. }) => message,
            Err(other) => return Err(other.into()),
        };
        Ok(Some(Damage {
            part: IndexPart::Database,
            path: store.path().to_path_buf(),
            problem,
        }))
    }
}
