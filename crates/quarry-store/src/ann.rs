//! The approximate nearest-neighbour index: an HNSW graph ([hnsw_rs]) over the stored vectors.
//!
//! It is derived from redb and may lag behind it: it records the redb generation it reflects,
//! and the store brings it up to date (inserting new vectors, tombstoning removed ones) before
//! it answers. hnsw_rs cannot delete, so removed chunks stay in the graph as tombstones that
//! searches skip, and the graph is rebuilt once they pass [`TOMBSTONE_REBUILD_FRACTION`].
//!
//! hnsw_rs's search descends the upper layers one hop each, so on vectors without structure
//! (uniform random ones, say) a graph search needs a very wide beam before it finds the true
//! neighbours, and may then cost more than scanning every vector. So each build *calibrates*:
//! it holds back a sample of the vectors, inserts the rest, searches for the sample with
//! widening beams against an exact scan, and inserts the sample last. Searches then use the
//! narrowest beam that reached [`RECALL_TARGET`] on that sample, or scan (in memory, over the
//! vectors, kept row by row beside the graph) when no beam reached it faster than the scan.
//!
//! On disk it is a directory holding hnsw_rs's two dump files and a metadata file with the
//! generation, the chunk of each graph node, and checksums of the dump files: hnsw_rs asserts
//! (panics) on malformed dumps, so only dumps whose checksums match are handed to it.

use std::collections::HashMap;
use std::time::Instant;

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::prelude::{Hnsw, HnswIo};
use quarry_chunk::ChunkId;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Hit;

mod persist;
use crate::best::Best;
use crate::dot::dot;

/// Below this many vectors, an exact scan answers and no graph is kept.
pub const EXACT_SCAN_BELOW: u64 = 10_000;
/// The graph is rebuilt when more than this fraction of its nodes are tombstones.
pub const TOMBSTONE_REBUILD_FRACTION: f64 = 0.25;
/// Neighbours per node and layer (hnsw_rs's `max_nb_connection`).
pub const MAX_CONNECTIONS: usize = 32;
/// Candidates explored per insertion.
pub const EF_CONSTRUCTION: usize = 200;
/// hnsw_rs's default layer cap.
pub const MAX_LAYERS: usize = 16;
/// The narrowest beam calibration tries, and the beam of graphs too small to calibrate.
pub const EF_SEARCH: usize = 160;
/// The widest beam a search uses; a search that would need more scans instead.
pub const MAX_EF: usize = 4096;
/// The recall@10 against the exact scan that calibration asks of a beam, on its held-out
/// sample. Set above the 0.99 goal: a sample of 100 queries estimates it within about ±0.005.
pub const RECALL_TARGET: f64 = 0.995;
/// Vectors held out for calibration (fewer in graphs under ten times as many).
pub const CALIBRATION_QUERIES: usize = 100;
/// Graphs too small to hold out this many are not calibrated.
const MIN_CALIBRATION_QUERIES: usize = 10;
/// Neighbours calibration compares, as search results are usually asked for.
const CALIBRATION_K: usize = 10;
/// Vectors per task of a parallel scan.
const SCAN_TASK: usize = 4096;
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

/// The HNSW graph and the chunk behind each of its nodes; or, for an index too small to
/// need a graph, the vectors alone, scanned in memory.
pub(crate) struct AnnIndex {
    /// `None` in a scan-only index ([`AnnIndex::scan_only`]).
    graph: Option<AnnGraph>,
    slots: Vec<Slot>,
    live: HashMap<u128, u32>,
    paths: Interner,
    languages: Interner,
    /// The redb generation this index reflects.
    pub generation: u64,
    dimensions: usize,
    /// How searches are answered; `None` for graphs too small to calibrate.
    calibration: Option<Calibration>,
    /// Every node's vector, row by row in slot order: what scans read. hnsw_rs keeps each
    /// vector in its own allocation, and a scan that follows those pointers runs several
    /// times slower than one over contiguous rows.
    rows: Vec<f32>,
}

/// How dense searches are answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DenseStrategy {
    /// As the graph's calibration found best: the graph with the narrowest beam that reached
    /// [`RECALL_TARGET`], or an exact scan where no beam reached it faster. Filters that
    /// admit few chunks are scanned when that is cheaper than widening the beam.
    #[default]
    Calibrated,
    /// The graph, with the calibrated beam (the widest one tried where none reached the
    /// target), whatever it costs; still a scan where a filter would need a beam wider than
    /// [`MAX_EF`] or the graph finds fewer results than exist.
    Graph,
    /// An exact scan of the vectors held in memory.
    Scan,
}

/// What a build measured of its graph, searching for held-out vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Calibration {
    /// Held-out vectors searched for.
    pub queries: usize,
    /// Milliseconds per query for an exact scan of the graph's vectors.
    pub scan_ms: f64,
    /// The beams tried, narrowest first, until one reached [`RECALL_TARGET`] or cost more
    /// than the scan.
    pub trials: Vec<BeamTrial>,
}

/// One beam width calibration tried.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BeamTrial {
    /// hnsw_rs's `ef`: the candidates kept while searching the bottom layer.
    pub ef: usize,
    /// Recall@10 against the exact scan; a result scoring at least the exact tenth score
    /// counts, so identical vectors tie.
    pub recall: f64,
    /// Milliseconds per query.
    pub ms: f64,
}

impl Calibration {
    /// The narrowest beam that reached [`RECALL_TARGET`], if any.
    pub fn reaching_target(&self) -> Option<&BeamTrial> {
        self.trials.iter().find(|t| t.recall >= RECALL_TARGET)
    }

    /// The beam searches use, if the graph beats the scan.
    pub fn chosen(&self) -> Option<&BeamTrial> {
        self.reaching_target().filter(|t| t.ms < self.scan_ms)
    }
}

/// What the store says of its vector index.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorIndexInfo {
    /// Graph nodes, tombstones included.
    pub nodes: usize,
    /// Live chunks.
    pub live: usize,
    /// The database generation it reflects.
    pub generation: u64,
    /// What its build measured; `None` for graphs too small to calibrate.
    pub calibration: Option<Calibration>,
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
    /// An index of `vectors`, reflecting redb `generation`, calibrated on a held-out sample
    /// of them (see the module docs).
    pub fn build(dimensions: usize, vectors: Vec<NewVector<'_>>, generation: u64) -> Self {
        let graph = Hnsw::new(
            MAX_CONNECTIONS,
            vectors.len().max(1),
            MAX_LAYERS,
            EF_CONSTRUCTION,
            CosineDistance,
        );
        let mut index = Self::empty(Some(AnnGraph::Built(graph)), dimensions, generation);
        let held_out = CALIBRATION_QUERIES.min(vectors.len() / 10);
        if held_out < MIN_CALIBRATION_QUERIES {
            index.insert(vectors);
            return index;
        }
        // Every n-th vector, so the sample spreads over the files as they were stored.
        let stride = vectors.len() / held_out;
        let (sample, rest): (Vec<_>, Vec<_>) = vectors
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % stride == 0 && i / stride < held_out);
        index.insert(rest.into_iter().map(|(_, v)| v).collect());
        let sample: Vec<NewVector<'_>> = sample.into_iter().map(|(_, v)| v).collect();
        index.calibration = Some(index.calibrate(&sample));
        index.insert(sample);
        index
    }

    /// An index of `vectors` without a graph, reflecting redb `generation`: every search
    /// scans the rows in memory. For indexes under [`EXACT_SCAN_BELOW`] vectors, where a
    /// scan is exact and costs a millisecond, but reading the vectors from the database for
    /// each search costs several.
    pub fn scan_only(dimensions: usize, vectors: Vec<NewVector<'_>>, generation: u64) -> Self {
        let mut index = Self::empty(None, dimensions, generation);
        index.insert(vectors);
        index
    }

    fn empty(graph: Option<AnnGraph>, dimensions: usize, generation: u64) -> Self {
        Self {
            graph,
            slots: Vec::new(),
            live: HashMap::new(),
            paths: Interner::default(),
            languages: Interner::default(),
            generation,
            dimensions,
            calibration: None,
            rows: Vec::new(),
        }
    }

    /// Whether the index has its graph (it is not [`AnnIndex::scan_only`]).
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// Searches for `sample` (vectors not in the graph) with beams from [`EF_SEARCH`] up,
    /// doubling, against an exact scan, until a beam reaches [`RECALL_TARGET`] or costs more
    /// than the scan.
    fn calibrate(&self, sample: &[NewVector<'_>]) -> Calibration {
        let started = Instant::now();
        let truth: Vec<Vec<Hit>> = sample
            .iter()
            .map(|q| self.scan(&q.vector, CALIBRATION_K, &|_| true))
            .collect();
        let scan_ms = per_query_ms(started, sample.len());
        let mut trials = Vec::new();
        let mut ef = EF_SEARCH;
        loop {
            let started = Instant::now();
            let found: Vec<Vec<Hit>> = sample
                .iter()
                .map(|q| self.graph_search(&q.vector, CALIBRATION_K, ef))
                .collect();
            let ms = per_query_ms(started, sample.len());
            let recall = found
                .iter()
                .zip(&truth)
                .map(|(found, truth)| recall(found, truth))
                .sum::<f64>()
                / sample.len() as f64;
            trials.push(BeamTrial { ef, recall, ms });
            if recall >= RECALL_TARGET || ms >= scan_ms || ef >= MAX_EF {
                break;
            }
            ef = (ef * 2).min(MAX_EF);
        }
        Calibration {
            queries: sample.len(),
            scan_ms,
            trials,
        }
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
            self.rows.extend_from_slice(&new.vector);
        }
        let items: Vec<(&[f32], usize)> = vectors
            .iter()
            .enumerate()
            .map(|(i, new)| (&new.vector[..], first + i))
            .collect();
        if let Some(graph) = &self.graph {
            graph.with(|graph| graph.parallel_insert_slice(&items));
        }
    }

    /// Tombstones the chunk `id`, if present.
    pub fn remove(&mut self, id: u128) {
        if let Some(slot) = self.live.remove(&id) {
            self.slots[slot as usize].alive = false;
        }
    }

    /// Whether the index holds the chunk `id` (not tombstoned).
    pub fn contains(&self, id: u128) -> bool {
        self.live.contains_key(&id)
    }

    /// The chunks the index holds.
    pub fn ids(&self) -> impl Iterator<Item = u128> + '_ {
        self.live.keys().copied()
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
    /// best first, as `strategy` says. Returns as many as exist up to `k`: a graph search
    /// that finds fewer is followed by a scan.
    ///
    /// Tombstones and a filter are applied to the graph's candidate beam, which is widened by
    /// the inverse of the fraction of nodes they admit so that about as many admitted
    /// candidates remain as an unfiltered search keeps (hnsw_rs's own filtered search never
    /// takes its early exit, and costs several times as much).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        admitted: Option<&[bool]>,
        strategy: DenseStrategy,
    ) -> Vec<Hit> {
        let slots = &self.slots;
        let admit = |slot: usize| match admitted {
            Some(admitted) => admitted[slot],
            None => slots[slot].alive,
        };
        let admitted_count = admitted.map_or(self.live.len(), |m| m.iter().filter(|&&a| a).count());
        let share = admitted_count as f64 / slots.len().max(1) as f64;
        let scan = || self.scan(query, k, &admit);
        let Some(graph) = &self.graph else {
            return scan();
        };
        let ef = match (strategy, &self.calibration) {
            (DenseStrategy::Scan, _) => return scan(),
            (_, None) => EF_SEARCH,
            (DenseStrategy::Calibrated, Some(c)) => match c.chosen() {
                Some(trial) => trial.ef,
                None => return scan(),
            },
            (DenseStrategy::Graph, Some(c)) => c
                .reaching_target()
                .or(c.trials.last())
                .map_or(EF_SEARCH, |t| t.ef),
        };
        let base = ef.max(k);
        let widened = (base as f64 / share.max(f64::MIN_POSITIVE)).ceil();
        if widened > MAX_EF as f64 {
            return scan();
        }
        let widened = widened as usize;
        if strategy == DenseStrategy::Calibrated
            && let Some(c) = &self.calibration
            && let Some(trial) = c.chosen()
        {
            // A beam's cost grows about linearly with its width; a scan's with what it admits.
            let graph_ms = trial.ms * widened as f64 / trial.ef as f64;
            if c.scan_ms * share < graph_ms {
                return scan();
            }
        }
        let hits: Vec<Hit> = graph
            .with(|graph| graph.search(query, widened, widened))
            .into_iter()
            .filter(|n| admit(n.d_id))
            .take(k)
            .map(|n| Hit {
                id: ChunkId(slots[n.d_id].id),
                score: 1.0 - n.distance,
            })
            .collect();
        if hits.len() < k.min(admitted_count) {
            return scan();
        }
        hits
    }

    /// The best `k` among `admit`ted slots by an exact scan of the rows, in parallel;
    /// tombstones are for `admit` to refuse.
    fn scan(&self, query: &[f32], k: usize, admit: &(dyn Fn(usize) -> bool + Sync)) -> Vec<Hit> {
        let task = SCAN_TASK * self.dimensions;
        self.rows
            .par_chunks(task)
            .enumerate()
            .map(|(t, rows)| {
                let mut best = Best::new(k);
                for (i, row) in rows.chunks_exact(self.dimensions).enumerate() {
                    let slot = t * SCAN_TASK + i;
                    if admit(slot) {
                        best.push(self.slots[slot].id, dot(query, row));
                    }
                }
                best
            })
            .reduce(|| Best::new(k), Best::merge)
            .into_hits()
    }

    /// An unfiltered graph search of beam `ef`, for calibration (every node is live then).
    fn graph_search(&self, query: &[f32], k: usize, ef: usize) -> Vec<Hit> {
        let Some(graph) = &self.graph else {
            return self.scan(query, k, &|slot| self.slots[slot].alive);
        };
        graph
            .with(|graph| graph.search(query, k, ef))
            .into_iter()
            .map(|n| Hit {
                id: ChunkId(self.slots[n.d_id].id),
                score: 1.0 - n.distance,
            })
            .collect()
    }

    /// What the store reports of this index.
    pub fn info(&self) -> VectorIndexInfo {
        VectorIndexInfo {
            nodes: self.slots.len(),
            live: self.live.len(),
            generation: self.generation,
            calibration: self.calibration.clone(),
        }
    }
}

/// The share of the exact top `k` that `found` holds; a hit scoring at least the exact k-th
/// score counts, so that identical vectors tie whichever of them each side picked.
fn recall(found: &[Hit], truth: &[Hit]) -> f64 {
    let Some(last) = truth.last() else {
        return 1.0;
    };
    // Scores from the graph went through `1 - (1 - dot)`; allow for that rounding.
    let matched = found
        .iter()
        .filter(|h| h.score >= last.score - 1e-6)
        .count()
        .min(truth.len());
    matched as f64 / truth.len() as f64
}

fn per_query_ms(started: Instant, queries: usize) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0 / queries.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dot::unit;

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
    fn finds_each_vector_itself_and_skips_tombstones() {
        let mut index = AnnIndex::build(16, vectors(0..300), 1);
        for i in [0u64, 17, 299] {
            let best = index.search(&unit(i, 16), 1, None, DenseStrategy::Graph);
            assert_eq!(best[0].id.0, i as u128);
            assert!((best[0].score - 1.0).abs() < 1e-5);
        }
        index.remove(17);
        let best = index.search(&unit(17, 16), 5, None, DenseStrategy::Graph);
        assert!(best.iter().all(|h| h.id.0 != 17));
        assert_eq!(best.len(), 5);
        assert_eq!(index.info().live, 299);
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
        let hits = index.search(&unit(4, 16), 10, Some(&mask), DenseStrategy::Graph);
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|h| h.id.0 % 2 == 1));
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
        assert_eq!(loaded.info().live, 209);
        let best = loaded.search(&unit(205, 16), 1, None, DenseStrategy::Graph);
        assert_eq!(best[0].id.0, 205);
        assert_eq!(loaded.calibration, index.calibration);
        assert!(!loaded.live.contains_key(&3));

        assert!(AnnIndex::load(&ann, 32).is_err(), "other dimensions");
        let data = ann.join("graph.hnsw.data");
        let mut bytes = std::fs::read(&data).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&data, bytes).unwrap();
        assert!(AnnIndex::load(&ann, 16).unwrap_err().contains("checksum"));
        assert!(
            AnnIndex::load(&dir.path().join("none"), 16)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn calibration_holds_out_a_sample_and_every_strategy_finds_the_exact_answer() {
        let index = AnnIndex::build(16, vectors(0..3_000), 1);
        assert_eq!(
            index.info().live,
            3_000,
            "the sample is inserted after calibrating"
        );
        let calibration = index
            .calibration
            .clone()
            .expect("large enough to calibrate");
        assert_eq!(calibration.queries, CALIBRATION_QUERIES);
        assert_eq!(calibration.trials[0].ef, EF_SEARCH);
        assert!(
            calibration
                .trials
                .windows(2)
                .all(|w| w[1].ef == (w[0].ef * 2).min(MAX_EF))
        );
        // Sixteen dimensions are easy for the graph: the first beam reaches the target.
        assert!(calibration.reaching_target().is_some(), "{calibration:?}");

        for q in 0..20u64 {
            let query = unit(50_000 + q, 16);
            let exact = index.search(&query, 10, None, DenseStrategy::Scan);
            let truth: Vec<u128> = {
                let mut all: Vec<(u128, f32)> = (0..3_000)
                    .map(|i| (i as u128, dot(&query, &unit(i, 16))))
                    .collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                all.iter().take(10).map(|p| p.0).collect()
            };
            assert_eq!(exact.iter().map(|h| h.id.0).collect::<Vec<_>>(), truth);
            for strategy in [DenseStrategy::Graph, DenseStrategy::Calibrated] {
                let found = index.search(&query, 10, None, strategy);
                assert_eq!(found.len(), 10);
                assert!(recall(&found, &exact) >= 0.8, "{strategy:?}");
            }
        }
    }

    #[test]
    fn an_untrained_graph_is_not_calibrated() {
        assert!(AnnIndex::build(16, vectors(0..50), 1).calibration.is_none());
    }
}
