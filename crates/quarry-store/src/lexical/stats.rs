//! BM25's statistics over the live chunks alone, so that an index updated incrementally
//! ranks exactly as one built afresh from the same chunks.
//!
//! tantivy deletes a document by marking it dead in its segment; until a merge rewrites the
//! segment, its searcher still counts the dead document in the statistics BM25 weighs terms
//! by: the number of documents, each term's document frequency, and each field's total
//! tokens (the average field length). After a few edits, the same query over the same
//! chunks scored up to 0.045 apart from a clean build and reordered the top 20 of most
//! queries. A merge would purge the dead documents, but it rewrites whole segments (the
//! initial build's is most of the index) and records a merged segment's token total only
//! approximately (from the lossy per-document field norms). So the statistics are counted
//! over live documents instead:
//!
//! - documents: the segments' live counts;
//! - a term's document frequency: as recorded in a segment without deletes, counted over its
//!   live postings in one with deletes (work in proportion to the term's postings there,
//!   about what scoring them costs anyway);
//! - a field's tokens: the sum over live documents of the exact count each document
//!   records in a fast field of its own ([`super::TOKEN_COUNTS`]), summed once per segment
//!   and set of deletes and cached.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use tantivy::index::SegmentId;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, Searcher, SegmentReader, TERMINATED, Term};

use super::{SCORED, TOKEN_COUNTS};

/// A segment as of one set of deletes: what a cache of a segment's live documents is keyed
/// by.
pub(super) type SegmentState = (SegmentId, Option<u64>);

/// `segment`'s [`SegmentState`].
pub(super) fn segment_state(segment: &SegmentReader) -> SegmentState {
    (segment.segment_id(), segment.delete_opstamp())
}

/// Each segment's live token totals per scored field, kept between searches.
#[derive(Debug, Default)]
pub(super) struct TokenTotals {
    by_segment: Mutex<HashMap<SegmentState, [u64; SCORED.len()]>>,
}

impl TokenTotals {
    /// The tokens the live documents of `searcher` hold in each scored field, in
    /// [`SCORED`]'s order. Segments seen before are not read again; those gone are forgotten.
    pub(super) fn of(&self, searcher: &Searcher) -> tantivy::Result<[u64; SCORED.len()]> {
        let mut cache = self
            .by_segment
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut totals = [0u64; SCORED.len()];
        let mut current = HashSet::new();
        for segment in searcher.segment_readers() {
            let state = segment_state(segment);
            current.insert(state);
            let sums = match cache.get(&state) {
                Some(sums) => *sums,
                None => {
                    let sums = segment_tokens(segment)?;
                    cache.insert(state, sums);
                    sums
                }
            };
            for (total, sum) in totals.iter_mut().zip(sums) {
                *total += sum;
            }
        }
        cache.retain(|state, _| current.contains(state));
        Ok(totals)
    }
}

/// The tokens the live documents of `segment` hold in each scored field.
fn segment_tokens(segment: &SegmentReader) -> tantivy::Result<[u64; SCORED.len()]> {
    let fast = segment.fast_fields();
    let columns = TOKEN_COUNTS
        .iter()
        .map(|name| fast.u64(name))
        .collect::<tantivy::Result<Vec<_>>>()?;
    let mut sums = [0u64; SCORED.len()];
    for doc in segment.doc_ids_alive() {
        for (sum, column) in sums.iter_mut().zip(&columns) {
            *sum += column.first(doc).unwrap_or(0);
        }
    }
    Ok(sums)
}

/// BM25's statistics for one search, over the live documents of its searcher.
pub(super) struct LiveStatistics<'a> {
    pub(super) searcher: &'a Searcher,
    /// The scored fields, in [`SCORED`]'s order.
    pub(super) fields: [Field; SCORED.len()],
    /// Their live token totals ([`TokenTotals::of`]).
    pub(super) tokens: [u64; SCORED.len()],
}

impl Bm25StatisticsProvider for LiveStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        match self.fields.iter().position(|f| *f == field) {
            Some(i) => Ok(self.tokens[i]),
            None => Bm25StatisticsProvider::total_num_tokens(self.searcher, field),
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.searcher.num_docs())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut total = 0u64;
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(term.field())?;
            let Some(alive) = segment.alive_bitset() else {
                total += u64::from(inverted.doc_freq(term)?);
                continue;
            };
            if let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    total += u64::from(alive.is_alive(doc));
                    doc = postings.advance();
                }
            }
        }
        Ok(total)
    }
}
