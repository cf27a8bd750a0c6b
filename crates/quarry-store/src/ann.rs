//! The approximate nearest-neighbour index: an HNSW graph ([hnsw_rs]) over the stored vectors.
//!
//! It is derived from redb and may lag behind it: it records the redb generation it reflects,
//! and the store brings it up to date (inserting new vectors, tombstoning removed ones) before
//! it answers. hnsw_rs cannot delete, so removed chunks stay in the graph as tombstones that
//! searches skip, and the graph is rebuilt once they pass [`TOMBSTONE_REBUILD_FRACTION`].
//!
//! On disk it is a directory holding hnsw_rs's two dump files and a metadata file with the
//! generation, the chunk of each graph node, and checksums of the dump files: hnsw_rs asserts
//! (panics) on malformed dumps, so only dumps whose checksums match are handed to it.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::prelude::{AnnT, Hnsw, HnswIo};
use serde::{Deserialize, Serialize};

/// Below this many vectors, an exact scan answers and no graph is kept.
pub const EXACT_SCAN_BELOW: u64 = 10_000;
/// The graph is rebuilt when more than this fraction of its nodes are tombstones.
pub const TOMBSTONE_REBUILD_FRACTION: f64 = 0.25;
/// Neighbours per node and layer (hnsw_rs's `max_nb_connection`).
const MAX_CONNECTIONS: usize = 32;
/// Candidates explored per insertion.
const EF_CONSTRUCTION: usize = 200;
/// hnsw_rs's default layer cap.
const MAX_LAYERS: usize = 16;
/// Candidates explored per search; raised with `k` and with restrictive filters.
pub const EF_SEARCH: usize = 160;
/// Bumped whenever the metadata file changes shape.
const FORMAT_VERSION: u32 = 1;
const GRAPH_BASENAME: &str = "graph";
const META_FILE: &str = "meta.bin";

/// `1 - a·b`: the cosine distance between normalised vectors, clamped at 0.
///
/// hnsw_rs asserts that distances are not negative, and its own `DistDot` that the dot
/// product is at most 1, which rounding breaks for a vector compared with itself.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CosineDistance;

impl Distance<f32> for CosineDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// The dot product, with eight partial sums so that the compiler vectorises it.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

type Graph<'a> = Hnsw<'a, f32, CosineDistance>;

self_cell::self_cell!(
    /// A graph read back from disk; hnsw_rs ties its lifetime to the reader.
    struct LoadedGraph {
        owner: HnswIo,
        #[not_covariant]
        dependent: Graph,
    }
);

enum AnnGraph {
    Built(Graph<'static>),
    Loaded(LoadedGraph),
}

impl AnnGraph {
    fn with<R>(&self, body: impl FnOnce(&Graph<'_>) -> R) -> R {
        match self {
            AnnGraph::Built(graph) => body(graph),
            AnnGraph::Loaded(loaded) => loaded.with_dependent(|_, graph| body(graph)),
        }
    }
}

/// One graph node: the chunk it stands for, and what filters test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Slot {
    pub id: u128,
    pub path: u32,
    pub language: u32,
    pub alive: bool,
}

/// A vector to insert, with the chunk facts filters test.
pub(crate) struct NewVector<'a> {
    pub id: u128,
    pub path: &'a str,
    pub language: &'a str,
    pub vector: Vec<f32>,
}

/// Strings stored once, referred to by index.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Interner {
    values: Vec<String>,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl Interner {
    fn intern(&mut self, value: &str) -> u32 {
        if let Some(&i) = self.index.get(value) {
            return i;
        }
        let i = self.values.len() as u32;
        self.values.push(value.to_owned());
        self.index.insert(value.to_owned(), i);
        i
    }

    fn reindex(&mut self) {
        self.index = (0..)
            .zip(&self.values)
            .map(|(i, v)| (v.clone(), i))
            .collect();
    }

    /// Whether each value passes `test`, by index.
    pub fn admitted(&self, test: impl Fn(&str) -> bool) -> Vec<bool> {
        self.values.iter().map(|v| test(v)).collect()
    }
}

/// What the metadata file holds.
#[derive(Serialize, Deserialize)]
struct Meta {
    format: u32,
    generation: u64,
    dimensions: usize,
    slots: Vec<Slot>,
    paths: Interner,
    languages: Interner,
    graph_checksum: u64,
    data_checksum: u64,
}

/// The HNSW graph and the chunk behind each of its nodes.
pub(crate) struct AnnIndex {
    graph: AnnGraph,
    slots: Vec<Slot>,
    live: HashMap<u128, u32>,
    paths: Interner,
    languages: Interner,
    /// The redb generation this index reflects.
    pub generation: u64,
    dimensions: usize,
}

impl std::fmt::Debug for AnnIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnnIndex")
            .field("generation", &self.generation)
            .field("live", &self.live.len())
            .field("nodes", &self.slots.len())
            .finish()
    }
}

impl AnnIndex {
    /// An index of `vectors`, reflecting redb `generation`.
    pub fn build(dimensions: usize, vectors: Vec<NewVector<'_>>, generation: u64) -> Self {
        let graph = Hnsw::new(
            MAX_CONNECTIONS,
            vectors.len().max(1),
            MAX_LAYERS,
            EF_CONSTRUCTION,
            CosineDistance,
        );
        let mut index = Self {
            graph: AnnGraph::Built(graph),
            slots: Vec::new(),
            live: HashMap::new(),
            paths: Interner::default(),
            languages: Interner::default(),
            generation,
            dimensions,
        };
        index.insert(vectors);
        index
    }

    /// Adds `vectors`; a chunk already present is replaced.
    pub fn insert(&mut self, vectors: Vec<NewVector<'_>>) {
        let first = self.slots.len();
        for new in &vectors {
            self.remove(new.id);
            let slot = self.slots.len() as u32;
            self.slots.push(Slot {
                id: new.id,
                path: self.paths.intern(new.path),
                language: self.languages.intern(new.language),
                alive: true,
            });
            self.live.insert(new.id, slot);
        }
        let items: Vec<(&[f32], usize)> = vectors
            .iter()
            .enumerate()
            .map(|(i, new)| (&new.vector[..], first + i))
            .collect();
        self.graph.with(|graph| graph.parallel_insert_slice(&items));
    }

    /// Tombstones the chunk `id`, if present.
    pub fn remove(&mut self, id: u128) {
        if let Some(slot) = self.live.remove(&id) {
            self.slots[slot as usize].alive = false;
        }
    }

    /// The chunks the index holds.
    pub fn ids(&self) -> impl Iterator<Item = u128> + '_ {
        self.live.keys().copied()
    }

    /// How many live chunks it holds.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether tombstones have grown past [`TOMBSTONE_REBUILD_FRACTION`] of the graph.
    pub fn needs_rebuild(&self) -> bool {
        let dead = self.slots.len() - self.live.len();
        dead as f64 > TOMBSTONE_REBUILD_FRACTION * self.slots.len() as f64
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub fn paths(&self) -> &Interner {
        &self.paths
    }

    pub fn languages(&self) -> &Interner {
        &self.languages
    }

    /// The best `k` live chunks among the slots `admitted` marks (all live ones if `None`),
    /// with their dot products, best first. May return fewer than exist when the filter is
    /// restrictive; the caller then scans.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        admitted: Option<&[bool]>,
    ) -> Vec<(u128, f32)> {
        let slots = &self.slots;
        let admit = |id: &usize| match admitted {
            Some(admitted) => admitted[*id],
            None => slots[*id].alive,
        };
        let all_live = admitted.is_none() && self.live.len() == slots.len();
        let neighbours = self.graph.with(|graph| {
            if all_live {
                graph.search(query, k, ef)
            } else {
                graph.search_filter(query, k, ef, Some(&admit))
            }
        });
        neighbours
            .into_iter()
            .map(|n| (slots[n.d_id].id, 1.0 - n.distance))
            .collect()
    }

    /// Writes the index into `dir`, replacing what was there. The new files are written
    /// beside it and swapped in, so a crash leaves the old index or none, never a mix.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let staging = sibling(dir, "tmp");
        let retired = sibling(dir, "old");
        for stale in [&staging, &retired] {
            remove_dir(stale)?;
        }
        fs::create_dir_all(&staging).map_err(|e| describe_io(&staging, e))?;
        let basename = self
            .graph
            .with(|graph| graph.file_dump(&staging, GRAPH_BASENAME))
            .map_err(|e| format!("writing the graph: {e}"))?;
        if basename != GRAPH_BASENAME {
            return Err(format!(
                "hnsw_rs wrote {basename:?}, not {GRAPH_BASENAME:?}"
            ));
        }
        let (graph_file, data_file) = dump_files(&staging);
        let meta = Meta {
            format: FORMAT_VERSION,
            generation: self.generation,
            dimensions: self.dimensions,
            slots: self.slots.clone(),
            paths: self.paths.clone(),
            languages: self.languages.clone(),
            graph_checksum: checksum(&graph_file)?,
            data_checksum: checksum(&data_file)?,
        };
        let meta_path = staging.join(META_FILE);
        let bytes = postcard::to_stdvec(&meta).map_err(|e| e.to_string())?;
        fs::write(&meta_path, bytes).map_err(|e| describe_io(&meta_path, e))?;
        if dir.exists() {
            fs::rename(dir, &retired).map_err(|e| describe_io(dir, e))?;
        }
        fs::rename(&staging, dir).map_err(|e| describe_io(dir, e))?;
        remove_dir(&retired)
    }

    /// Reads the index saved in `dir`: `Ok(None)` if there is none, `Err` if it is
    /// unreadable or does not fit `dimensions` (the caller rebuilds it).
    pub fn load(dir: &Path, dimensions: usize) -> Result<Option<Self>, String> {
        let meta_path = dir.join(META_FILE);
        let bytes = match fs::read(&meta_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(describe_io(&meta_path, e)),
        };
        let mut meta: Meta =
            postcard::from_bytes(&bytes).map_err(|e| format!("unreadable metadata: {e}"))?;
        if meta.format != FORMAT_VERSION || meta.dimensions != dimensions {
            return Err(format!(
                "saved in format {} with {} dimensions; expected format {FORMAT_VERSION} with \
                 {dimensions}",
                meta.format, meta.dimensions
            ));
        }
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
        if node_count != meta.slots.len() {
            return Err(format!(
                "the graph has {node_count} nodes, its metadata {}",
                meta.slots.len()
            ));
        }
        meta.paths.reindex();
        meta.languages.reindex();
        let live = (0..)
            .zip(&meta.slots)
            .filter(|(_, slot)| slot.alive)
            .map(|(i, slot)| (slot.id, i))
            .collect();
        Ok(Some(Self {
            graph: AnnGraph::Loaded(loaded),
            slots: meta.slots,
            live,
            paths: meta.paths,
            languages: meta.languages,
            generation: meta.generation,
            dimensions,
        }))
    }
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

    fn unit(seed: u64, dimensions: usize) -> Vec<f32> {
        // A small xorshift: deterministic vectors without a dependency.
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f32> = (0..dimensions)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        let norm = dot(&v, &v).sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }

    fn vectors(range: std::ops::Range<u64>) -> Vec<NewVector<'static>> {
        range
            .map(|i| NewVector {
                id: i as u128,
                path: if i % 2 == 0 { "even.rs" } else { "odd.py" },
                language: if i % 2 == 0 { "rust" } else { "python" },
                vector: unit(i, 16),
            })
            .collect()
    }

    #[test]
    fn dot_matches_a_plain_sum() {
        let (a, b) = (unit(1, 19), unit(2, 19));
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-6);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn finds_each_vector_itself_and_skips_tombstones() {
        let mut index = AnnIndex::build(16, vectors(0..300), 1);
        for i in [0u64, 17, 299] {
            let best = index.search(&unit(i, 16), 1, EF_SEARCH, None);
            assert_eq!(best[0].0, i as u128);
            assert!((best[0].1 - 1.0).abs() < 1e-5);
        }
        index.remove(17);
        let best = index.search(&unit(17, 16), 5, EF_SEARCH, None);
        assert!(best.iter().all(|(id, _)| *id != 17));
        assert_eq!(best.len(), 5);
        assert_eq!(index.len(), 299);
    }

    #[test]
    fn an_admission_mask_is_applied_inside_the_search() {
        let index = AnnIndex::build(16, vectors(0..300), 1);
        let python = index.languages().admitted(|l| l == "python");
        let mask: Vec<bool> = index
            .slots()
            .iter()
            .map(|s| s.alive && python[s.language as usize])
            .collect();
        let hits = index.search(&unit(4, 16), 10, EF_SEARCH, Some(&mask));
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|(id, _)| id % 2 == 1));
    }

    #[test]
    fn saved_indexes_load_and_damaged_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ann = dir.path().join("ann");
        let mut index = AnnIndex::build(16, vectors(0..200), 7);
        index.remove(3);
        index.save(&ann).unwrap();
        index.insert(vectors(200..210));
        index.save(&ann).unwrap();

        let loaded = AnnIndex::load(&ann, 16).unwrap().unwrap();
        assert_eq!(loaded.generation, 7);
        assert_eq!(loaded.len(), 209);
        assert_eq!(loaded.search(&unit(205, 16), 1, EF_SEARCH, None)[0].0, 205);
        assert!(!loaded.live.contains_key(&3));

        assert!(AnnIndex::load(&ann, 32).is_err(), "other dimensions");
        let data = ann.join("graph.hnsw.data");
        let mut bytes = fs::read(&data).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        fs::write(&data, bytes).unwrap();
        assert!(AnnIndex::load(&ann, 16).unwrap_err().contains("checksum"));
        assert!(
            AnnIndex::load(&dir.path().join("none"), 16)
                .unwrap()
                .is_none()
        );
    }
}
