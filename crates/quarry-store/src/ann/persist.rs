//! Saving and loading a vector index: the graph (hnsw_rs's dump plus its metadata) or a
//! scan-only index's rows (one contiguous file plus its metadata), each written into a
//! fresh directory swapped in by renames and read back only when its checksums hold.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use hnsw_rs::prelude::{AnnT, HnswIo};
use serde::{Deserialize, Serialize};

use super::{AnnGraph, AnnIndex, Calibration, CosineDistance, Interner, LoadedGraph, Slot};

/// Bumped whenever the metadata file changes shape.
const FORMAT_VERSION: u32 = 2;
const GRAPH_BASENAME: &str = "graph";
const META_FILE: &str = "meta.bin";
/// A scan-only index's rows, as `f32`s in the machine's byte order: the index directory is a
/// cache of this machine's, never shared.
const ROWS_FILE: &str = "rows.f32";

/// What a saved index records of its nodes, first in either metadata file (postcard writes
/// a nested struct's fields in line, so the graph's file reads as before this was split out).
#[derive(Serialize, Deserialize)]
struct SavedNodes {
    format: u32,
    generation: u64,
    dimensions: usize,
    slots: Vec<Slot>,
    paths: Interner,
    languages: Interner,
}

/// What the graph's metadata file holds.
#[derive(Serialize, Deserialize)]
struct Meta {
    nodes: SavedNodes,
    calibration: Option<Calibration>,
    graph_checksum: u64,
    data_checksum: u64,
}

/// What [`AnnIndex::save_rows`] writes beside the rows.
#[derive(Serialize, Deserialize)]
struct RowsMeta {
    nodes: SavedNodes,
    rows_checksum: u64,
}

impl SavedNodes {
    fn of(index: &AnnIndex) -> Self {
        Self {
            format: FORMAT_VERSION,
            generation: index.generation,
            dimensions: index.dimensions,
            slots: index.slots.clone(),
            paths: index.paths.clone(),
            languages: index.languages.clone(),
        }
    }

    /// Refuses nodes saved in another format or with other than `dimensions`.
    fn check(&self, dimensions: usize) -> Result<(), String> {
        if self.format != FORMAT_VERSION || self.dimensions != dimensions {
            return Err(format!(
                "saved in format {} with {} dimensions; expected format {FORMAT_VERSION} with \
                 {dimensions}",
                self.format, self.dimensions
            ));
        }
        Ok(())
    }

    /// The index of these nodes with `graph`, `calibration` and `rows`.
    fn into_index(
        mut self,
        graph: Option<AnnGraph>,
        calibration: Option<Calibration>,
        rows: Vec<f32>,
    ) -> AnnIndex {
        self.paths.reindex();
        self.languages.reindex();
        AnnIndex {
            graph,
            live: live_slots(&self.slots),
            slots: self.slots,
            paths: self.paths,
            languages: self.languages,
            generation: self.generation,
            dimensions: self.dimensions,
            calibration,
            rows,
        }
    }
}

impl AnnIndex {
    /// Writes the index into `dir`, replacing what was there. The new files are written
    /// beside it and swapped in, so a crash leaves the old index or none, never a mix.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let graph = self
            .graph
            .as_ref()
            .ok_or("a scan-only index is saved by save_rows")?;
        replace_dir(dir, |staging| {
            let basename = graph
                .with(|graph| graph.file_dump(staging, GRAPH_BASENAME))
                .map_err(|e| format!("writing the graph: {e}"))?;
            if basename != GRAPH_BASENAME {
                return Err(format!(
                    "hnsw_rs wrote {basename:?}, not {GRAPH_BASENAME:?}"
                ));
            }
            let (graph_file, data_file) = dump_files(staging);
            let meta = Meta {
                nodes: SavedNodes::of(self),
                calibration: self.calibration.clone(),
                graph_checksum: checksum(&graph_file)?,
                data_checksum: checksum(&data_file)?,
            };
            write_meta(staging, &meta)
        })
    }

    /// Writes a scan-only index ([`AnnIndex::scan_only`]) into `dir`, replacing what was
    /// there as [`AnnIndex::save`] does: its rows in one contiguous file, so that a new
    /// process's first search reads them in one go rather than decoding every vector from
    /// the database.
    pub fn save_rows(&self, dir: &Path) -> Result<(), String> {
        replace_dir(dir, |staging| {
            let rows_path = staging.join(ROWS_FILE);
            let rows: &[u8] = bytemuck::cast_slice(&self.rows);
            fs::write(&rows_path, rows).map_err(|e| describe_io(&rows_path, e))?;
            let meta = RowsMeta {
                nodes: SavedNodes::of(self),
                rows_checksum: xxhash_rust::xxh3::xxh3_64(rows),
            };
            write_meta(staging, &meta)
        })
    }

    /// Reads the scan-only index [`AnnIndex::save_rows`] wrote in `dir`: `Ok(None)` if there
    /// is none, `Err` if it is unreadable or does not fit `dimensions`.
    pub fn load_rows(dir: &Path, dimensions: usize) -> Result<Option<Self>, String> {
        let Some(meta) = read_meta::<RowsMeta>(dir)? else {
            return match dir.join(ROWS_FILE).exists() {
                true => Err(format!("its {META_FILE} is missing")),
                false => Ok(None),
            };
        };
        meta.nodes.check(dimensions)?;
        let rows_path = dir.join(ROWS_FILE);
        let mut file = fs::File::open(&rows_path).map_err(|e| describe_io(&rows_path, e))?;
        let mut rows = vec![0.0f32; meta.nodes.slots.len() * dimensions];
        let bytes = file
            .metadata()
            .map_err(|e| describe_io(&rows_path, e))?
            .len();
        if bytes != (rows.len() * size_of::<f32>()) as u64 {
            return Err(format!(
                "{} holds {bytes} bytes, not the {} of {} rows",
                rows_path.display(),
                rows.len() * size_of::<f32>(),
                meta.nodes.slots.len()
            ));
        }
        std::io::Read::read_exact(&mut file, bytemuck::cast_slice_mut(&mut rows))
            .map_err(|e| describe_io(&rows_path, e))?;
        if xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(&rows)) != meta.rows_checksum {
            return Err("the rows do not match their checksum".into());
        }
        Ok(Some(meta.nodes.into_index(None, None, rows)))
    }

    /// Checks the graph saved in `dir` against its metadata and checksums without loading
    /// it: `Ok(false)` if none is saved, `Err` saying what is wrong, as [`AnnIndex::load`]
    /// would find it.
    pub fn verify(dir: &Path, dimensions: usize) -> Result<bool, String> {
        let (graph_file, data_file) = dump_files(dir);
        let Some(meta) = read_meta::<Meta>(dir)? else {
            return match graph_file.exists() || data_file.exists() {
                true => Err(format!("its {META_FILE} is missing")),
                false => Ok(false),
            };
        };
        meta.nodes.check(dimensions)?;
        if checksum(&graph_file)? != meta.graph_checksum
            || checksum(&data_file)? != meta.data_checksum
        {
            return Err("the graph files do not match their checksums".into());
        }
        Ok(true)
    }

    /// Reads the index saved in `dir`: `Ok(None)` if there is none, `Err` if it is
    /// unreadable or does not fit `dimensions` (the caller rebuilds it).
    pub fn load(dir: &Path, dimensions: usize) -> Result<Option<Self>, String> {
        let Some(meta) = read_meta::<Meta>(dir)? else {
            return Ok(None);
        };
        meta.nodes.check(dimensions)?;
        let (graph_file, data_file) = dump_files(dir);
        if checksum(&graph_file)? != meta.graph_checksum
            || checksum(&data_file)? != meta.data_checksum
        {
            return Err("the graph files do not match their checksums".into());
        }
        let loaded = LoadedGraph::try_new(HnswIo::new(dir, GRAPH_BASENAME), |io| {
            io.load_hnsw_with_dist(CosineDistance)
        })
        .map_err(|e| format!("reading the graph: {e}"))?;
        let node_count = loaded.with_dependent(|_, graph| graph.get_nb_point());
        if node_count != meta.nodes.slots.len() {
            return Err(format!(
                "the graph has {node_count} nodes, its metadata {}",
                meta.nodes.slots.len()
            ));
        }
        let mut rows = vec![0.0; node_count * dimensions];
        loaded.with_dependent(|_, graph| {
            for point in graph.get_point_indexation() {
                let (slot, vector) = (point.get_origin_id(), point.get_v());
                if slot >= node_count || vector.len() != dimensions {
                    return Err(format!(
                        "node {slot} has {} dimensions; the graph has {node_count} nodes of \
                         {dimensions}",
                        vector.len()
                    ));
                }
                rows[slot * dimensions..(slot + 1) * dimensions].copy_from_slice(vector);
            }
            Ok(())
        })?;
        let graph = Some(AnnGraph::Loaded(loaded));
        Ok(Some(meta.nodes.into_index(graph, meta.calibration, rows)))
    }
}

/// Each live chunk's slot.
fn live_slots(slots: &[Slot]) -> HashMap<u128, u32> {
    (0..)
        .zip(slots)
        .filter(|(_, slot)| slot.alive)
        .map(|(i, slot)| (slot.id, i))
        .collect()
}

/// Replaces `dir` with what `write` puts into a fresh directory beside it, swapped in by
/// renames, so that a crash leaves the old contents or none, never a mix.
fn replace_dir(dir: &Path, write: impl FnOnce(&Path) -> Result<(), String>) -> Result<(), String> {
    let staging = sibling(dir, "tmp");
    let retired = sibling(dir, "old");
    for stale in [&staging, &retired] {
        remove_dir(stale)?;
    }
    // Not `create_dir_all`: the index directory is there, or the repository went.
    fs::create_dir(&staging).map_err(|e| describe_io(&staging, e))?;
    write(&staging)?;
    if dir.exists() {
        fs::rename(dir, &retired).map_err(|e| describe_io(dir, e))?;
    }
    fs::rename(&staging, dir).map_err(|e| describe_io(dir, e))?;
    remove_dir(&retired)
}

fn write_meta(dir: &Path, meta: &impl Serialize) -> Result<(), String> {
    let path = dir.join(META_FILE);
    let bytes = postcard::to_stdvec(meta).map_err(|e| e.to_string())?;
    fs::write(&path, bytes).map_err(|e| describe_io(&path, e))
}

/// The metadata saved in `dir`; `None` if there is none.
fn read_meta<M: serde::de::DeserializeOwned>(dir: &Path) -> Result<Option<M>, String> {
    let path = dir.join(META_FILE);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(describe_io(&path, e)),
    };
    postcard::from_bytes(&bytes)
        .map(Some)
        .map_err(|e| format!("unreadable metadata: {e}"))
}

fn dump_files(dir: &Path) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{GRAPH_BASENAME}.hnsw.graph")),
        dir.join(format!("{GRAPH_BASENAME}.hnsw.data")),
    )
}

fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_owned();
    name.push(format!(".{suffix}"));
    dir.with_file_name(name)
}

fn checksum(path: &Path) -> Result<u64, String> {
    let bytes = fs::read(path).map_err(|e| describe_io(path, e))?;
    Ok(xxhash_rust::xxh3::xxh3_64(&bytes))
}

fn remove_dir(dir: &Path) -> Result<(), String> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(describe_io(dir, e)),
        _ => Ok(()),
    }
}

fn describe_io(path: &Path, error: std::io::Error) -> String {
    format!("{}: {error}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ann::NewVector;

    #[test]
    fn the_graph_metadata_reads_as_it_did_before_its_nodes_were_split_out() {
        /// The metadata as format 2 first wrote it, every field in line.
        #[derive(Serialize)]
        struct Flat {
            format: u32,
            generation: u64,
            dimensions: usize,
            slots: Vec<Slot>,
            paths: Interner,
            languages: Interner,
            calibration: Option<Calibration>,
            graph_checksum: u64,
            data_checksum: u64,
        }
        let index = AnnIndex::scan_only(
            16,
            (0..5u64)
                .map(|i| NewVector {
                    id: i.into(),
                    path: "a.rs",
                    language: "rust",
                    vector: vec![i as f32; 16],
                })
                .collect(),
            7,
        );
        let nested = Meta {
            nodes: SavedNodes::of(&index),
            calibration: None,
            graph_checksum: 1,
            data_checksum: 2,
        };
        let flat = Flat {
            format: FORMAT_VERSION,
            generation: 7,
            dimensions: 16,
            slots: index.slots.clone(),
            paths: index.paths.clone(),
            languages: index.languages.clone(),
            calibration: None,
            graph_checksum: 1,
            data_checksum: 2,
        };
        assert_eq!(
            postcard::to_stdvec(&nested).unwrap(),
            postcard::to_stdvec(&flat).unwrap()
        );
    }
}
