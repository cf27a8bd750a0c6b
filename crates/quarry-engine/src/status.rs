//! Status: what the index holds, what it is behind on, and which files moved most.

use std::collections::BTreeMap;
use std::path::PathBuf;

use quarry_store::{Check, Counts, Drift, Store, VectorIndexInfo};
use serde::Serialize;

use crate::{Engine, EngineError};

/// The index's health.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The repository root.
    pub root: PathBuf,
    /// The embedding model's fingerprint (name, revision, weights digest).
    pub model: String,
    /// Where the model runs.
    pub backend: String,
    /// Files indexed, skipped ones (binary, generated...) included.
    pub files: u64,
    /// Files indexed without chunks: skipped by the chunker.
    pub files_skipped: u64,
    /// Chunks, and how many of them have their vector.
    pub coverage: Coverage,
    /// The git commit the project was last indexed at.
    pub indexed_commit: Option<String>,
    /// The work tree's current commit.
    pub head_commit: Option<String>,
    /// Files that differ from the index: the next index run reads or drops them.
    pub stale: Stale,
    /// Files whose last re-index moved their chunks by more than the threshold, most moved
    /// first.
    pub drift: Vec<Drift>,
    /// The vector index, once built: size and calibration.
    pub vector_index: Option<VectorIndexInfo>,
    /// The registered libraries.
    pub libraries: BTreeMap<String, PathBuf>,
    /// Files or libraries that could not be read, and repairs the index made; the damage
    /// lines too, so that a front end that shows warnings shows them.
    pub warnings: Vec<String>,
    /// What is damaged in the index's files ([`quarry_store::Store::check`]), one line each
    /// naming the file, the problem and the fix ("... is damaged: rebuild with `quarry index
    /// --force`"); empty when the index is whole.
    pub damage: Vec<String>,
}

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

impl Status {
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
    pub fn status_deep(&self, drift_threshold: f32) -> Result<Status, EngineError> {
        let mut status = self.status(drift_threshold)?;
        status.add_damage(Store::check_pages(&self.root)?);
        Ok(status)
    }

    /// The index's health: what it holds, the files it is behind on (by the change detection
    /// [`Engine::index`] uses; nothing is read but to compare hashes), the files whose
    /// [`Drift`] (mean over their chunks) exceeds `drift_threshold`, and what is damaged in
    /// the index's files (a full [`quarry_store::Store::check`]: the derived indexes are read
    /// whole to verify their checksums, as a first search reads them).
    pub fn status(&self, drift_threshold: f32) -> Result<Status, EngineError> {
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
        let damage: Vec<String> = store
            .check(Check::Full)?
            .iter()
            .map(ToString::to_string)
            .collect();
        let mut warnings = plan.warnings;
        warnings.extend(store.notes());
        warnings.extend(damage.iter().cloned());
        Ok(Status {
            root: self.root.clone(),
            model: match self.model() {
                Some(model) => model.fingerprint().to_string(),
                None => store.settings().model.clone(),
            },
            backend: match self.model() {
                Some(model) => model.backend()?.to_string(),
                None => "none: the model's files are not here".to_owned(),
            },
            files: files.len() as u64,
            files_skipped: files.iter().filter(|f| f.chunk_ids.is_empty()).count() as u64,
            coverage: Coverage::of(store.counts()?),
            indexed_commit: store.indexed_commit()?,
            head_commit: quarry_changes::head_commit(&self.root),
            stale,
            drift: store.drifts(drift_threshold)?,
            vector_index: store.vector_index()?,
            libraries: self.libraries()?.libraries,
            warnings,
            damage,
        })
    }
}
