//! The best `k` hits of a scan, kept in a bounded heap.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use quarry_chunk::ChunkId;

use crate::Hit;

/// The `k` best hits pushed so far: higher score first, then lower chunk id, so that a scan's
/// answer does not depend on the order it visits chunks in.
pub(crate) struct Best {
    k: usize,
    heap: BinaryHeap<BestFirst>,
}

impl Best {
    pub fn new(k: usize) -> Self {
        Self {
            k,
            // The heap grows as hits come; `k` alone may be far larger than any index.
            heap: BinaryHeap::with_capacity(k.saturating_add(1).min(1 << 12)),
        }
    }

    pub fn push(&mut self, id: u128, score: f32) {
        let hit = BestFirst(Hit {
            id: ChunkId(id),
            score,
        });
        if self.heap.len() < self.k {
            self.heap.push(hit);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && hit < *worst
        {
            // The heap's top is its worst hit: most pushes of a long scan end at this test.
            *worst = hit;
        }
    }

    /// The best of both: what parallel scans of disjoint parts combine with.
    pub fn merge(mut self, other: Best) -> Best {
        for ranked in other.heap {
            self.push(ranked.0.id.0, ranked.0.score);
        }
        self
    }

    /// The hits, best first.
    pub fn into_hits(self) -> Vec<Hit> {
        // `BestFirst` orders best first, so the ascending sort is the ranking.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

/// Orders hits best first: higher score, then lower id.
#[derive(PartialEq)]
struct BestFirst(Hit);

impl Eq for BestFirst {}

impl Ord for BestFirst {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then(self.0.id.cmp(&other.0.id))
    }
}

impl PartialOrd for BestFirst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Best first: higher score, then lower id.
pub(crate) fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_k_in_order_whatever_the_order_of_pushes_and_merges() {
        let scores = [(5u128, 0.2f32), (1, 0.9), (3, 0.5), (2, 0.9), (4, 0.1)];
        let mut one = Best::new(3);
        scores.iter().for_each(|&(id, s)| one.push(id, s));
        let (mut left, mut right) = (Best::new(3), Best::new(3));
        scores[..2].iter().for_each(|&(id, s)| left.push(id, s));
        scores[2..].iter().for_each(|&(id, s)| right.push(id, s));
        let expected = [1u128, 2, 3];
        let ids = |hits: Vec<Hit>| hits.iter().map(|h| h.id.0).collect::<Vec<_>>();
        assert_eq!(ids(one.into_hits()), expected);
        assert_eq!(ids(right.merge(left).into_hits()), expected);
    }
}
