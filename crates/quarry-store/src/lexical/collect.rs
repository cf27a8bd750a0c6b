//! The top `k` chunks of a lexical query, best first, ties by chunk id: a tantivy
//! collector that lets the query skip documents that cannot make the cut.

use std::collections::BinaryHeap;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::query::Weight;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use super::{ID_HI, ID_LO};

/// A hit; orders best first: higher score, then lower id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ChunkScore {
    pub(super) score: Score,
    pub(super) id: u128,
}

impl Eq for ChunkScore {}

impl Ord for ChunkScore {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.id.cmp(&other.id))
    }
}

impl PartialOrd for ChunkScore {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Collects the best `k` chunks. tantivy's `TopDocs` breaks ties by document address, which
/// depends on segment layout; this breaks them by chunk id, so results are deterministic.
pub(super) struct TopChunks {
    pub(super) k: usize,
}

pub(super) struct SegmentTopChunks {
    id_hi: Column<u64>,
    id_lo: Column<u64>,
    pub(super) k: usize,
    /// The worst kept hit on top.
    best: BinaryHeap<ChunkScore>,
}

impl SegmentTopChunks {
    /// The score a hit must exceed to be worth collecting. A hit equal to the worst kept one
    /// may still win on its id, hence the next float down.
    fn threshold(&self) -> Score {
        match self.best.peek() {
            Some(worst) if self.best.len() >= self.k => worst.score.next_down(),
            _ => Score::MIN,
        }
    }
}

impl SegmentCollector for SegmentTopChunks {
    type Fruit = Vec<ChunkScore>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let (Some(hi), Some(lo)) = (self.id_hi.first(doc), self.id_lo.first(doc)) else {
            return;
        };
        let hit = ChunkScore {
            score,
            id: (u128::from(hi) << 64) | u128::from(lo),
        };
        if self.best.len() < self.k {
            self.best.push(hit);
        } else if self.best.peek().is_some_and(|worst| hit < *worst) {
            self.best.pop();
            self.best.push(hit);
        }
    }

    fn harvest(self) -> Vec<ChunkScore> {
        self.best.into_sorted_vec()
    }
}

impl Collector for TopChunks {
    type Fruit = Vec<ChunkScore>;
    type Child = SegmentTopChunks;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentTopChunks> {
        let fast = reader.fast_fields();
        Ok(SegmentTopChunks {
            id_hi: fast.u64(ID_HI)?,
            id_lo: fast.u64(ID_LO)?,
            k: self.k,
            best: BinaryHeap::with_capacity(self.k.saturating_add(1).min(1024)),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<ChunkScore>>) -> tantivy::Result<Vec<ChunkScore>> {
        let mut all: Vec<ChunkScore> = fruits.into_iter().flatten().collect();
        all.sort_unstable();
        all.truncate(self.k);
        Ok(all)
    }

    /// Like the default, but lets the query skip documents that cannot make the top `k`.
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<ChunkScore>> {
        let mut collector = self.for_segment(segment, reader)?;
        let alive = reader.alive_bitset();
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if alive.is_none_or(|alive| alive.is_alive(doc)) {
                collector.collect(doc, score);
            }
            collector.threshold()
        })?;
        Ok(collector.harvest())
    }
}
