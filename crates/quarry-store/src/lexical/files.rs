//! The file leg: BM25 over whole files, summed from the chunks' own postings, each file
//! answered by its best chunk.
//!
//! A question about a concept spread over a large file finds each of the file's chunks
//! weakly, and a small sibling's one dense chunk first; the file as one document holds all
//! of the question's words. A file's document is the union of its live chunks: a term's
//! frequency in the text fields (name, containers, comments, body) is the sum over its
//! chunks, in the path fields (file name, directories, the same in every chunk) one chunk's;
//! its length is its chunks' body tokens. Terms are weighted by how few files hold them, as
//! BM25 weighs them (by document frequency, here over files), and the fields by
//! [`LexicalWeights`](super::LexicalWeights) as the chunk leg weighs them.
//!
//! No second index: the chunks' postings and a fast field naming each chunk's file
//! ([`FILE_KEY`]) are enough, and which file each document belongs to is read once per
//! segment and set of deletes and cached. Frequencies are summed as integers and weighed in
//! the query's order, so a file scores the same bits however its chunks lie in segments.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use tantivy::postings::Postings;
use tantivy::query::{AllQuery, EnableScoring, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, Searcher, SegmentReader, TERMINATED, Term};

use super::analysis::query_tokens;
use super::health::reading;
use super::stats::{SegmentState, segment_state};
use super::{ID_HI, ID_LO, LexicalFilter, LexicalIndex, LexicalWeights, SCORED, TOKEN_COUNTS};
use crate::StoreError;

/// The fast field holding a hash of each chunk's file path: which chunks make one file.
pub(super) const FILE_KEY: &str = "file_key";

/// BM25's term-frequency saturation, as tantivy's.
const K1: f64 = 1.2;
/// BM25's length normalisation, as tantivy's: a long file needs more of a term than a
/// short one to score as high.
const B: f64 = 0.75;
/// [`SCORED`]'s fields that hold the file's path, the same in each of its chunks.
const SHARED: [bool; SCORED.len()] = [false, false, true, true, false, false];
/// The index in [`SCORED`] of the body: a file's length is its chunks' tokens there.
const LENGTH_FIELD: usize = SCORED.len() - 1;
/// No file: a deleted document.
const NONE: u32 = u32::MAX;

/// The files of one searcher's live documents.
#[derive(Debug)]
pub(super) struct FileTable {
    /// For each of the searcher's segments, in its order, each document's file (an index
    /// into `lengths`), [`NONE`] if dead.
    documents: Vec<Vec<u32>>,
    /// Each file's body tokens, over its live chunks.
    lengths: Vec<u64>,
}

/// The [`FileTable`] of the last searcher, kept between searches.
#[derive(Debug, Default)]
pub(super) struct Files {
    cached: Mutex<Option<(Vec<SegmentState>, Arc<FileTable>)>>,
}

impl Files {
    /// The table of `searcher`'s live documents, built anew when its segments (in order) or
    /// their deletes differ from the last one's.
    pub(super) fn table(&self, searcher: &Searcher) -> tantivy::Result<Arc<FileTable>> {
        let states: Vec<SegmentState> = (searcher.segment_readers().iter())
            .map(segment_state)
            .collect();
        let mut cached = self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, table)) = cached.as_ref()
            && *seen == states
        {
            return Ok(Arc::clone(table));
        }
        let table = Arc::new(FileTable::of(searcher)?);
        *cached = Some((states, Arc::clone(&table)));
        Ok(table)
    }
}

impl FileTable {
    fn of(searcher: &Searcher) -> tantivy::Result<Self> {
        let mut files: HashMap<u64, u32> = HashMap::new();
        let mut lengths = Vec::new();
        let mut documents = Vec::new();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let keys = fast.u64(FILE_KEY)?;
            let tokens = fast.u64(TOKEN_COUNTS[LENGTH_FIELD])?;
            let mut of_doc = vec![NONE; segment.max_doc() as usize];
            for doc in segment.doc_ids_alive() {
                let Some(key) = keys.first(doc) else { continue };
                let next = files.len() as u32;
                let file = *files.entry(key).or_insert(next);
                if file == next {
                    lengths.push(0);
                }
                lengths[file as usize] += tokens.first(doc).unwrap_or(0);
                of_doc[doc as usize] = file;
            }
            documents.push(of_doc);
        }
        Ok(Self { documents, lengths })
    }
}

impl LexicalIndex {
    /// Best `k` files for `query` by BM25 over whole files ([`search`]), the fields weighted by
    /// `weights`, among the chunks `filter` admits: each as one chunk's id (the first of
    /// `ranked` it holds, else its best) and the file's score, best first, ties by chunk id.
    /// A query without tokens finds nothing.
    pub(crate) fn search_files(
        &self,
        query: &str,
        k: usize,
        filter: &LexicalFilter,
        weights: &LexicalWeights,
        ranked: &[u128],
    ) -> Result<Vec<(u128, f32)>, StoreError> {
        let tokens = query_tokens(query);
        if k == 0 || tokens.is_empty() || filter.paths.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let filter = (!filter.admits_all()).then(|| self.filtered(Box::new(AllQuery), filter));
        let searcher = self.reader.searcher();
        let (scored, weights) = (self.fields.scored(), weights.fields());
        let fields = std::array::from_fn(|i| (scored[i], weights[i].1));
        reading(&self.dir, || {
            let table = self.files.table(&searcher)?;
            let query = FileQuery {
                searcher: &searcher,
                table: &table,
                fields,
                filter: filter.as_deref(),
            };
            search(&query, &tokens, k, ranked)
        })
        .inspect_err(|error| self.mark_if_damaged(error))
    }
}

/// What [`search`] needs of the index.
pub(super) struct FileQuery<'a> {
    pub(super) searcher: &'a Searcher,
    pub(super) table: &'a FileTable,
    /// The scored fields with their weights, in [`SCORED`]'s order (0: left out).
    pub(super) fields: [(Field, f32); SCORED.len()],
    /// Only the documents this query matches may answer (the search's filter).
    pub(super) filter: Option<&'a dyn Query>,
}

/// A token's frequencies in one file or chunk, per scored field.
type Counts = [u32; SCORED.len()];

/// The best `k` files for `tokens` by BM25 over whole files, best first (ties by the chunk
/// id), each as one chunk's id and the file's score. The chunk is the first of `ranked` (the
/// chunk leg's hits, best first) that the file holds, else the one that holds the most of
/// the query's weight (by the same saturation and term weights, unnormalised).
pub(super) fn search(
    query: &FileQuery<'_>,
    tokens: &BTreeSet<String>,
    k: usize,
    ranked: &[u128],
) -> tantivy::Result<Vec<(u128, f32)>> {
    let segments = query.searcher.segment_readers();
    let admitted = match query.filter {
        Some(filter) => Some(admitted(query.searcher, filter)?),
        None => None,
    };
    let documents = &query.table.documents;
    let lengths = &query.table.lengths;
    let files = lengths.len();
    let average = lengths.iter().sum::<u64>() as f64 / files.max(1) as f64;
    let mut scores = vec![0.0f64; files];
    // (segment, document) -> the chunk's score so far.
    let mut chunk_scores: HashMap<(u32, DocId), f64> = HashMap::new();
    let mut file_counts = vec![Counts::default(); files];
    for token in tokens {
        let mut touched: Vec<u32> = Vec::new();
        let mut chunk_counts: HashMap<(u32, DocId), Counts> = HashMap::new();
        for (field_index, &(field, weight)) in query.fields.iter().enumerate() {
            if weight <= 0.0 {
                continue;
            }
            let term = Term::from_field_text(field, token);
            for (ordinal, segment) in segments.iter().enumerate() {
                let inverted = segment.inverted_index(field)?;
                let Some(mut postings) =
                    inverted.read_postings(&term, IndexRecordOption::WithFreqs)?
                else {
                    continue;
                };
                let admits = admitted.as_ref().map(|sets| &sets[ordinal]);
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let file = documents[ordinal]
                        .get(doc as usize)
                        .copied()
                        .unwrap_or(NONE);
                    if file != NONE && admits.is_none_or(|set| set.contains(doc)) {
                        let frequency = postings.term_freq();
                        let counts = &mut file_counts[file as usize];
                        if counts.iter().all(|&c| c == 0) {
                            touched.push(file);
                        }
                        counts[field_index] = match SHARED[field_index] {
                            true => counts[field_index].max(frequency),
                            false => counts[field_index] + frequency,
                        };
                        chunk_counts.entry((ordinal as u32, doc)).or_default()[field_index] =
                            frequency;
                    }
                    doc = postings.advance();
                }
            }
        }
        // Weighed by how few files hold the token, as BM25's idf over files.
        let holding = touched.len() as f64;
        let idf = (1.0 + (files as f64 - holding + 0.5) / (holding + 0.5)).ln();
        for &file in &touched {
            let counts = std::mem::take(&mut file_counts[file as usize]);
            let norm = 1.0 - B + B * lengths[file as usize] as f64 / average.max(1.0);
            let frequency: f64 = (query.fields.iter().zip(counts).zip(SHARED))
                .map(|((&(_, weight), count), shared)| {
                    let weighted = f64::from(weight) * f64::from(count);
                    match shared {
                        true => weighted,
                        false => weighted / norm,
                    }
                })
                .sum();
            scores[file as usize] += idf * frequency * (K1 + 1.0) / (K1 + frequency);
        }
        for (chunk, counts) in chunk_counts {
            let frequency: f64 = (query.fields.iter().zip(counts))
                .map(|(&(_, weight), count)| f64::from(weight) * f64::from(count))
                .sum();
            *chunk_scores.entry(chunk).or_default() += idf * frequency / (K1 + frequency);
        }
    }
    best_files(segments, documents, &scores, chunk_scores, k, ranked)
}

/// The best `k` files by `scores`, each as the first of `ranked` it holds, else as its best
/// chunk by `chunk_scores` (ties by id).
fn best_files(
    segments: &[SegmentReader],
    documents: &[Vec<u32>],
    scores: &[f64],
    chunk_scores: HashMap<(u32, DocId), f64>,
    k: usize,
    ranked: &[u128],
) -> tantivy::Result<Vec<(u128, f32)>> {
    // Ranked first: a chunk's place in `ranked` outweighs any chunk score.
    let places: HashMap<u128, usize> = (ranked.iter().enumerate())
        .map(|(place, &id)| (id, place))
        .collect();
    let preference = |score: f64, id: u128| match places.get(&id) {
        Some(&place) => (1, -(place as f64)),
        None => (0, score),
    };
    let ids = segments
        .iter()
        .map(|segment| {
            let fast = segment.fast_fields();
            Ok((fast.u64(ID_HI)?, fast.u64(ID_LO)?))
        })
        .collect::<tantivy::Result<Vec<_>>>()?;
    // file -> (its best chunk's preference, id).
    let mut best: HashMap<u32, ((u8, f64), u128)> = HashMap::new();
    for ((ordinal, doc), score) in chunk_scores {
        let (hi, lo) = &ids[ordinal as usize];
        let (Some(hi), Some(lo)) = (hi.first(doc), lo.first(doc)) else {
            continue;
        };
        let id = u128::from(hi) << 64 | u128::from(lo);
        let file = documents[ordinal as usize][doc as usize];
        let entry = best.entry(file).or_insert(((0, f64::NEG_INFINITY), id));
        let this = preference(score, id);
        if this > entry.0 || (this == entry.0 && id < entry.1) {
            *entry = (this, id);
        }
    }
    let mut ranked: Vec<(u128, f64)> = best
        .into_iter()
        .map(|(file, (_, id))| (id, scores[file as usize]))
        .filter(|&(_, score)| score > 0.0)
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    Ok(ranked
        .into_iter()
        .map(|(id, score)| (id, score as f32))
        .collect())
}

/// For each segment of `searcher`, the documents `filter` matches.
fn admitted(searcher: &Searcher, filter: &dyn Query) -> tantivy::Result<Vec<BitSet>> {
    let weight = filter.weight(EnableScoring::disabled_from_searcher(searcher))?;
    searcher
        .segment_readers()
        .iter()
        .map(|segment| {
            let mut set = BitSet::with_max_value(segment.max_doc());
            let mut scorer = weight.scorer(segment, 1.0)?;
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                set.insert(doc);
                doc = scorer.advance();
            }
            Ok(set)
        })
        .collect()
}

/// The key of a file's path in [`FILE_KEY`].
pub(super) fn file_key(path: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(path.as_bytes())
}
