//! The top `k` chunks of a lexical query, best first, ties by chunk id: a tantivy collector
//! that lets the query skip documents that cannot make the cut, then a rescoring of what it
//! kept that does not depend on how the index is cut into segments.
//!
//! tantivy sums a document's clause scores in an order that follows its segment's history
//! (block-max WAND sorts the clauses by their current document), so the same chunk scores a
//! few units in the last place apart in an index built afresh and in one updated
//! incrementally, and near-ties swap. The collector therefore keeps, beside the best `k`,
//! every hit within [`SLACK`] of the `k`th, and [`rescore`] sums each kept chunk's clause
//! scores in the query's own order: the same bits for the same chunk and statistics,
//! whatever the segments.

use std::collections::{BTreeMap, BinaryHeap};

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::postings::Postings;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, Searcher, SegmentOrdinal, SegmentReader, Term};

use super::{ID_HI, ID_LO};

/// How far below the `k`th hit (relative to its score) hits are kept for [`rescore`]: far
/// more than a different order of summing a few hundred clauses moves a score.
const SLACK: Score = 1e-4;

/// The lowest score kept beside hits as good as `score`.
fn floor(score: Score) -> Score {
    score - score.abs() * SLACK - Score::EPSILON
}

/// A hit; orders best first: higher score, then lower id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ChunkScore {
    pub(super) score: Score,
    pub(super) id: u128,
    /// Where it is: its segment and document there.
    segment: SegmentOrdinal,
    doc: DocId,
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

/// Collects the best `k` chunks, and those within [`SLACK`] of the `k`th. tantivy's
/// `TopDocs` breaks ties by document address, which depends on segment layout; these are
/// broken by chunk id once [`rescore`]d, so results are deterministic.
pub(super) struct TopChunks {
    pub(super) k: usize,
}

pub(super) struct SegmentTopChunks {
    id_hi: Column<u64>,
    id_lo: Column<u64>,
    segment: SegmentOrdinal,
    pub(super) k: usize,
    /// The worst kept hit on top.
    best: BinaryHeap<ChunkScore>,
    /// Hits below the best `k`, kept while they are within the slack of the `k`th.
    near: Vec<ChunkScore>,
}

impl SegmentTopChunks {
    /// The lowest score worth keeping: `None` until `k` hits are kept.
    fn floor(&self) -> Option<Score> {
        match self.best.peek() {
            Some(worst) if self.best.len() >= self.k => Some(floor(worst.score)),
            _ => None,
        }
    }

    /// The score a hit must exceed to be worth collecting (a hit at the floor still is).
    fn threshold(&self) -> Score {
        self.floor().map_or(Score::MIN, Score::next_down)
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
            segment: self.segment,
            doc,
        };
        if self.best.len() < self.k {
            self.best.push(hit);
            return;
        }
        let below = match self.best.peek() {
            Some(worst) if hit < *worst => {
                let worst = self.best.pop().expect("peeked");
                self.best.push(hit);
                worst
            }
            _ => hit,
        };
        let floor = self.floor().unwrap_or(Score::MIN);
        if below.score >= floor {
            self.near.push(below);
            if self.near.len() > self.k.max(64) * 2 {
                self.near.retain(|hit| hit.score >= floor);
            }
        }
    }

    fn harvest(self) -> Vec<ChunkScore> {
        let floor = self.floor().unwrap_or(Score::MIN);
        let mut hits = self.best.into_vec();
        hits.extend(self.near.into_iter().filter(|hit| hit.score >= floor));
        hits
    }
}

impl Collector for TopChunks {
    type Fruit = Vec<ChunkScore>;
    type Child = SegmentTopChunks;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentTopChunks> {
        let fast = reader.fast_fields();
        Ok(SegmentTopChunks {
            id_hi: fast.u64(ID_HI)?,
            id_lo: fast.u64(ID_LO)?,
            segment,
            k: self.k,
            best: BinaryHeap::with_capacity(self.k.saturating_add(1).min(1024)),
            near: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    /// Every segment's hits that are among the best `k` overall, or within the slack of the
    /// `k`th, best first by the scores tantivy gave them.
    fn merge_fruits(&self, fruits: Vec<Vec<ChunkScore>>) -> tantivy::Result<Vec<ChunkScore>> {
        let mut all: Vec<ChunkScore> = fruits.into_iter().flatten().collect();
        all.sort_unstable();
        if let Some(kth) = all.get(self.k.saturating_sub(1)).map(|hit| hit.score) {
            let floor = floor(kth);
            all.retain(|hit| hit.score >= floor);
        }
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

/// The best `k` of `hits` (what [`TopChunks`] kept), each scored again as the sum, in the
/// order of `clauses` (a term and its field's weight: the query's scoring clauses), of its
/// clauses' BM25 scores under `statistics`; best first, ties by chunk id.
pub(super) fn rescore(
    searcher: &Searcher,
    statistics: &dyn Bm25StatisticsProvider,
    clauses: &[(Term, Score)],
    mut hits: Vec<ChunkScore>,
    k: usize,
) -> tantivy::Result<Vec<ChunkScore>> {
    let weights = clauses
        .iter()
        .map(|(term, weight)| {
            Ok(Bm25Weight::for_terms(statistics, std::slice::from_ref(term))?.boost_by(*weight))
        })
        .collect::<tantivy::Result<Vec<_>>>()?;
    let mut by_segment: BTreeMap<SegmentOrdinal, Vec<usize>> = BTreeMap::new();
    for (i, hit) in hits.iter().enumerate() {
        by_segment.entry(hit.segment).or_default().push(i);
    }
    for (segment, mut kept) in by_segment {
        kept.sort_unstable_by_key(|&i| hits[i].doc);
        let reader = searcher.segment_reader(segment);
        let mut scores = vec![0.0 as Score; kept.len()];
        for ((term, _), weight) in clauses.iter().zip(&weights) {
            let inverted = reader.inverted_index(term.field())?;
            let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::WithFreqs)?
            else {
                continue;
            };
            let norms = reader.get_fieldnorms_reader(term.field())?;
            for (score, &i) in scores.iter_mut().zip(&kept) {
                let doc = hits[i].doc;
                if postings.doc() < doc {
                    postings.seek(doc);
                }
                if postings.doc() == doc {
                    *score += weight.score(norms.fieldnorm_id(doc), postings.term_freq());
                }
            }
        }
        for (score, &i) in scores.iter().zip(&kept) {
            hits[i].score = *score;
        }
    }
    hits.sort_unstable();
    hits.truncate(k);
    Ok(hits)
}
