//! A corpus's working copy and its cached index: the copy made once and then only checked,
//! its index brought up to date (first phase alone for a model-free run), and how long a
//! build took.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use quarry_embed::ModelDir;
use quarry_engine::{Engine, EngineOptions, VectorCacheOptions};
use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::files::{Index, copy_files, list_files};

/// An engine of `options` with `model` on `work`, its index brought up to date: its first
/// phase alone (files and words) when `model_free`, every chunk embedded otherwise (through
/// `vector_cache` where given), each batch told to `embedded(chunks, total)`.
pub(crate) fn open_indexed(
    model: &ModelDir,
    options: EngineOptions,
    vector_cache: Option<&VectorCacheOptions>,
    work: &Path,
    model_free: bool,
    embedded: &mut dyn FnMut(usize, usize),
) -> Result<Engine, BenchError> {
    // An index the current code would not build (another chunker, a damaged file) is
    // rebuilt: the cache holds nothing the corpus cannot give again.
    let engine = match Engine::open(work, model, options) {
        Ok(engine) => engine,
        Err(_) => Engine::rebuild(work, model, options)?.finish()?,
    };
    if model_free {
        engine.index_files(&mut |_| {})?;
        return Ok(engine);
    }
    // A chunk text an earlier build embedded (another arm's index, an earlier commit's)
    // takes its vector from the vector cache, as a user's index does.
    let engine = engine.with_vector_cache(vector_cache.cloned());
    let started = Instant::now();
    let report = engine.index(&mut |event| {
        if let quarry_engine::IndexEvent::Embedded { chunks, total } = event {
            embedded(chunks, total);
        }
    })?;
    if report.chunks_embedded > 0 || report.files_read > 0 {
        let record = BuildRecord {
            seconds: started.elapsed().as_secs_f64(),
            chunks_embedded: report.chunks_embedded,
            chunks_from_cache: report.chunks_from_cache,
        };
        let path = build_record_path(work);
        let json = serde_json::to_vec_pretty(&record).expect("a build record serialises");
        fs::write(&path, json).map_err(|source| BenchError::Io { path, source })?;
    }
    Ok(engine)
}

/// The seconds the first phase of an index run takes on a fresh copy of `source`, made
/// under `cache`.
pub(crate) fn first_phase_seconds(
    cache: &Path,
    model: &ModelDir,
    options: EngineOptions,
    source: &Path,
) -> Result<f64, BenchError> {
    let scratch = cache.join("work");
    fs::create_dir_all(&scratch).map_err(BenchError::io(&scratch))?;
    let fresh = tempfile::tempdir_in(&scratch).map_err(BenchError::io(&scratch))?;
    let work = fresh.path().join("corpus");
    copy_tree(source, &work)?;
    let engine = Engine::open(&work, model, options)?;
    let started = Instant::now();
    engine.index_files(&mut |_| {})?;
    Ok(started.elapsed().as_secs_f64())
}

/// When an index was last built, and how long that took.
#[derive(Debug, Serialize, Deserialize)]
struct BuildRecord {
    seconds: f64,
    chunks_embedded: usize,
    /// Of those, the chunks whose vectors came from the machine's vector cache (absent in
    /// records written before it).
    #[serde(default)]
    chunks_from_cache: usize,
}

/// `<worktree>.build.json`, beside the worktree.
fn build_record_path(work: &Path) -> PathBuf {
    let mut name = work.file_name().unwrap_or_default().to_os_string();
    name.push(".build.json");
    work.with_file_name(name)
}

/// The seconds the index at `work` took to build, from its build record (`None` for an
/// index built before records were kept).
pub(crate) fn build_seconds(work: &Path) -> Option<f64> {
    let bytes = fs::read(build_record_path(work)).ok()?;
    serde_json::from_slice::<BuildRecord>(&bytes)
        .ok()
        .map(|r| r.seconds)
}

/// Makes `work` hold exactly the corpus's files (its index, if any, stays): a worktree
/// is created once and then only checked.
pub(crate) fn sync_worktree(source: &Path, work: &Path) -> Result<(), BenchError> {
    if work.join(quarry_store::INDEX_DIR).is_dir() {
        return Ok(());
    }
    copy_tree(source, work)
}

/// Replaces `to` with a copy of `from`, index included.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), BenchError> {
    if to.exists() {
        fs::remove_dir_all(to).map_err(BenchError::io(to))?;
    }
    let files = list_files(from, Index::Keep)?;
    copy_files(from, to, files.iter().map(String::as_str))
}
