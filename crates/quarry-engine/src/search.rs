//! Searching: retrieve from the dense and lexical legs, fuse, rank.

mod legs;

use std::collections::HashMap;
use std::sync::Arc;

use quarry_embed::CrossEncoder;
use quarry_rank::{Explanation, Pipeline, QueryShape, QueryTerms, RankingConfig, Summary};
use quarry_store::{Filter, Hit, LexicalWeights, Snapshot, Store, StoredChunk};
use serde::{Deserialize, Serialize};

use crate::file_data::{PAGERANK_DATA, decode_file_data};
use crate::symbols::SymbolHit;
use crate::{Coverage, Engine, EngineError};
use quarry_graph::FileScore;

pub use legs::{Leg, LegPlace, LegRank, TargetRanks};

/// Reciprocal rank fusion's constant: a hit at rank r scores `weight / (RRF_K + r)`.
pub const RRF_K: f32 = 60.0;

/// The longest query accepted. The model reads 256 tokens (about 1,000 characters of
/// code) at most, so a longer query would be cut silently; find code like a chunk with
/// [`Engine::related`] instead.
pub const MAX_QUERY_BYTES: usize = 4096;

/// Which retrieval legs a search uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Dense and lexical, fused by score with weights from the query's shape.
    #[default]
    Hybrid,
    /// The embedding alone.
    Semantic,
    /// BM25 over code tokens alone; needs no model run.
    Lexical,
}

/// What a search asks for.
#[derive(Debug, Clone, Default)]
pub struct SearchOptions {
    /// Ranking: how many results, the per-file cap, penalties, boosts.
    pub ranking: RankingConfig,
    /// Which files may answer; applied inside both legs.
    pub filter: Filter,
    /// Which legs run.
    pub mode: SearchMode,
    /// How much each leg weighs, by the query's shape (hybrid mode).
    pub legs: LegWeights,
    /// How much each field of a chunk weighs in the lexical leg.
    pub lexical: LexicalWeights,
    /// How the legs' hits become one retrieval score.
    pub fusion: Fusion,
}

/// How the legs' hits become one retrieval score on `[0, 1]`, each leg by its weight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Reciprocal rank: a leg's `r`-th hit counts `1 / (RRF_K + r)`, spread over the fetched
    /// depth; what a leg's scores say beyond the order is dropped. The default before
    /// `Score`, kept for the benchmark's A/B.
    Rank,
    /// A leg's own scores, scaled from its last hit's (0) to its first's (1): a chunk far
    /// ahead in BM25 stays far ahead, and a flat tail stays flat, so the ranking's file-level
    /// layers move a deep chunk of the right file further. Against `Rank` on the suite:
    /// lexical NDCG@10 +0.046 on held-out cases, hybrid +0.016 (`bench-suite/README.md`).
    #[default]
    Score,
}

/// The dense leg's weight in hybrid search, by the query's [`QueryShape`]; the lexical leg
/// weighs the rest (`1 - dense`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LegWeights {
    /// A bare or qualified identifier (`parse_config`, `fs::read`): 0.15, lexical leaning,
    /// since the name itself is the best evidence and the embedding of a name alone is vague.
    pub identifier: f32,
    /// A question of four words or more (how, where, why...): 0.7, dense leaning, as for a
    /// description.
    pub question: f32,
    /// A description of four words or more: 0.7, dense leaning.
    pub sentence: f32,
    /// Anything else (a word or a few): 0.5.
    pub phrase: f32,
    /// The symbol leg's weight beside the other two, when the query names a symbol the
    /// definitions table holds (hybrid and lexical modes): 0.5. 0 leaves the leg out.
    pub symbol: f32,
    /// The file leg's weight for a question, as a share of the lexical leg's: BM25 over
    /// whole files, each file answered by one chunk ([`Store::search_lexical_files`]), so
    /// that a large file that answers a question across many chunks is a candidate, and
    /// ranks, as one: 0.5. A question (`where are retries scheduled?`) asks where in the
    /// code something happens, most often a file; a description or a name asks for a chunk,
    /// and the leg does not run for them (on the suite's tuning cases it lost them chunk
    /// precision). 0 leaves the leg out.
    pub file: f32,
}

impl Default for LegWeights {
    fn default() -> Self {
        Self {
            identifier: 0.15,
            question: 0.7,
            sentence: 0.7,
            phrase: 0.5,
            symbol: 0.5,
            file: 0.5,
        }
    }
}

impl LegWeights {
    /// The (dense, lexical) weights for `query`.
    pub fn for_query(&self, query: &QueryTerms) -> (f32, f32) {
        let dense = match query.shape() {
            QueryShape::Identifier => self.identifier,
            QueryShape::Question => self.question,
            QueryShape::Sentence => self.sentence,
            QueryShape::Phrase => self.phrase,
        };
        (dense, 1.0 - dense)
    }

    /// The file leg's weight for `query`, whose lexical leg weighs `lexical`.
    pub fn file_for(&self, query: &QueryTerms, lexical: f32) -> f32 {
        match query.shape() {
            QueryShape::Question => lexical * self.file,
            _ => 0.0,
        }
    }

    /// Checks that every weight lies in `[0, 1]`.
    pub fn validate(&self) -> Result<(), String> {
        for (shape, weight) in [
            ("identifier", self.identifier),
            ("question", self.question),
            ("sentence", self.sentence),
            ("phrase", self.phrase),
            ("symbol", self.symbol),
            ("file", self.file),
        ] {
            if !(0.0..=1.0).contains(&weight) {
                let leg = match shape {
                    "symbol" | "file" => format!("the {shape} leg's weight"),
                    _ => format!("the dense leg's weight for {shape} queries"),
                };
                return Err(format!("{leg} must lie in [0, 1], not {weight}"));
            }
        }
        Ok(())
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// The chunk, with its path, lines and text.
    pub chunk: StoredChunk,
    /// In `[0, 1]`: the fused retrieval score (1 for a chunk first in every leg that ran)
    /// after the ranking layers' penalties and boosts, divided by the largest product the
    /// boosts can reach, so that the order is the ranking's.
    pub score: f32,
    /// How the score came about, layer by layer.
    pub explanation: Explanation,
    /// Where each retrieval leg placed the chunk, in the legs' order (empty for a related
    /// result, which one vector retrieves).
    pub legs: Vec<LegPlace>,
}

/// How much each retrieval leg weighed in one search: the dense and lexical legs' shares
/// (summing to 1), and the file leg's beside them (0 unless the query is a question).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LegShares {
    /// The embedding's.
    pub dense: f32,
    /// BM25's over chunks.
    pub lexical: f32,
    /// BM25's over whole files ([`LegWeights::file`]).
    pub file: f32,
}

/// A search's results and what the ranking did.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResponse {
    /// Best first.
    pub results: Vec<SearchResult>,
    /// What each ranking layer did.
    pub summary: Summary,
    /// How much each leg weighed.
    pub weights: LegShares,
    /// What the symbol leg found in the definitions table, best match first (empty when
    /// the query names no defined symbol, or the leg did not run).
    pub definitions: Vec<SymbolHit>,
    /// How much of the index the dense leg covered.
    pub coverage: Coverage,
}

impl Engine {
    /// The chunks that best answer `query`.
    ///
    /// Each leg fetches [`RankingConfig::fetch_count`] candidates (more than the limit, for
    /// the per-file cap to choose from) with the filter applied inside it; [`Fusion`] merges
    /// them, weighted by the query's shape ([`LegWeights`]); the ranking
    /// pipeline built from `options.ranking` (with the stored PageRank percentiles) orders
    /// and cuts them.
    pub fn search(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<SearchResponse, EngineError> {
        let query = checked(query, options)?;
        let store = self.current_store()?;
        let coverage = Coverage::of(store.counts()?);
        let (retrieval, snapshot) = self.retrieve(&store, query, options)?;
        let fused = retrieval.fuse(options.fusion);
        let ids: Vec<quarry_chunk::ChunkId> = fused.iter().map(|&(id, _)| id).collect();
        let chunks = snapshot.chunks(&ids)?;
        drop(snapshot);
        let scored: Vec<(StoredChunk, f32)> = chunks
            .into_iter()
            .zip(fused)
            .filter_map(|(chunk, (_, score))| Some((chunk?, score)))
            // The legs filter inside; the symbol leg's definitions by path alone.
            .filter(|(chunk, _)| options.filter.admits(chunk))
            .collect();
        let (mut results, summary) =
            self.rank(&store, &retrieval.terms, scored, &options.ranking, true)?;
        let mut places = LegPlace::of(
            results.iter().map(|r| r.chunk.chunk_id()),
            &retrieval.legs(),
        );
        for result in &mut results {
            result.legs = places.remove(&result.chunk.chunk_id()).unwrap_or_default();
        }
        Ok(SearchResponse {
            results,
            summary,
            weights: retrieval.shares,
            definitions: retrieval.definitions,
            coverage,
        })
    }

    /// Runs the legs of the search `query` (checked) with `options`: each leg's whole hit
    /// list, and the snapshot the symbol leg read, at which the chunks are read too.
    fn retrieve<'s>(
        &self,
        store: &'s Store,
        query: &str,
        options: &SearchOptions,
    ) -> Result<(Retrieval, Snapshot<'s>), EngineError> {
        let fetch = options.ranking.fetch_count();
        // Analysed once, for the legs and every ranking layer.
        let terms = QueryTerms::of(query);
        let weights = match options.mode {
            SearchMode::Hybrid => options.legs.for_query(&terms),
            SearchMode::Semantic => (1.0, 0.0),
            SearchMode::Lexical => (0.0, 1.0),
        };
        let dense_leg = || -> Result<Vec<Hit>, EngineError> {
            let embedded = self.embedder()?.get()?.embed_query(query)?;
            Ok(store.search_dense(&embedded.vector, fetch, &options.filter)?)
        };
        let file_weight = options.legs.file_for(&terms, weights.1);
        let lexical_leg = || -> Result<(Vec<Hit>, Vec<Hit>), EngineError> {
            let (filter, lexical) = (&options.filter, &options.lexical);
            let chunks = store.search_lexical_with(query, fetch, filter, lexical)?;
            let files = match file_weight > 0.0 {
                true => store.search_lexical_files(query, fetch, filter, lexical, &chunks)?,
                false => Vec::new(),
            };
            Ok((chunks, files))
        };
        let (dense, (lexical, files)) = match (weights.0 > 0.0, weights.1 > 0.0) {
            // Side by side: the query's embedding keeps a core busy for milliseconds that
            // the lexical search would otherwise wait out. The lexical leg gets a thread of
            // its own, not a rayon task: the dense leg may hold the vector index's lock while
            // rayon's threads scan for it, and a rayon thread that waited on that lock could
            // leave none to do the scan.
            (true, true) => {
                let (dense, lexical) = std::thread::scope(|scope| {
                    let lexical = scope.spawn(lexical_leg);
                    let dense = dense_leg();
                    let lexical = lexical
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (dense, lexical)
                });
                (dense?, lexical?)
            }
            (true, false) => (dense_leg()?, (Vec::new(), Vec::new())),
            (false, _) => (Vec::new(), lexical_leg()?),
        };
        // The definitions table and the chunks are read at one commit.
        let snapshot = store.snapshot()?;
        let symbol = match options.mode != SearchMode::Semantic {
            true => options.legs.symbol,
            false => 0.0,
        };
        let definitions = match symbol > 0.0 {
            true => self
                .symbols
                .table(&snapshot)?
                .resolve(&terms, |path| options.filter.admits_path(path)),
            false => Vec::new(),
        };
        // The definitions of the name as asked are the ranking's definitions: the best found
        // (SymbolHit::preference), never those under another qualifier, nor words that
        // happen to join into a name.
        let best = definitions.iter().filter_map(SymbolHit::preference).min();
        let terms = terms.with_definitions(
            definitions
                .iter()
                .filter(|hit| best.is_some() && hit.preference() == best)
                .map(|hit| hit.chunk.0),
        );
        let symbols: Vec<Hit> = definitions
            .iter()
            .map(|hit| Hit {
                id: hit.chunk,
                score: 0.0,
            })
            .collect();
        let retrieval = Retrieval {
            terms,
            shares: LegShares {
                dense: weights.0,
                lexical: weights.1,
                file: file_weight,
            },
            symbol,
            dense,
            lexical,
            files,
            symbols,
            definitions,
            depth: fetch,
        };
        Ok((retrieval, snapshot))
    }

    /// Orders `scored` (chunks with retrieval scores in `[0, 1]`) with the pipeline built
    /// from `ranking`, the stored PageRank percentiles, and the cross-encoder when there is
    /// one and `rerank` allows it; scores the results on `[0, 1]`.
    pub(crate) fn rank(
        &self,
        store: &Store,
        query: &QueryTerms,
        scored: Vec<(StoredChunk, f32)>,
        ranking: &RankingConfig,
        rerank: bool,
    ) -> Result<(Vec<SearchResult>, Summary), EngineError> {
        let snapshot = store.snapshot()?;
        let mut candidates = Vec::with_capacity(scored.len());
        let mut percentiles = HashMap::new();
        let percentile_of = |path: &str| -> Result<Option<f32>, EngineError> {
            let Some(bytes) = snapshot.file_data(path, PAGERANK_DATA)? else {
                return Ok(None);
            };
            let score: FileScore = decode_file_data(path, PAGERANK_DATA, &bytes)?;
            Ok(Some((score.percentile / 100.0) as f32))
        };
        for (chunk, score) in scored {
            if !percentiles.contains_key(&chunk.path) {
                // A file shares the centrality of the declarations beside it (a `.c` file
                // its header's): what imports the header uses what the file implements.
                let mut found = percentile_of(&chunk.path)?;
                for declaration in quarry_rank::declaration_files(&chunk.path) {
                    if let Some(inherited) = percentile_of(&declaration)? {
                        found = Some(found.map_or(inherited, |own| own.max(inherited)));
                    }
                }
                if let Some(percentile) = found {
                    percentiles.insert(chunk.path.clone(), percentile);
                }
            }
            candidates.push((chunk, score));
        }
        drop(snapshot);
        let percentiles = (!percentiles.is_empty()).then(|| {
            Box::new(move |path: &str| percentiles.get(path).copied()) as quarry_rank::Percentiles
        });
        let reranker = match rerank {
            true => self.reranker.clone().map(|model| {
                Box::new(CrossEncoderReranker(model)) as Box<dyn quarry_rank::Reranker>
            }),
            false => None,
        };
        let pipeline = Pipeline::from_config(ranking, percentiles, reranker)?;
        let ranked = pipeline.rank(query, candidates)?;
        let ceiling = ranking.boost_ceiling();
        let results = ranked
            .results
            .into_iter()
            .map(|ranked| SearchResult {
                chunk: ranked.candidate,
                score: (ranked.score / ceiling).clamp(0.0, 1.0),
                explanation: ranked.explanation,
                legs: Vec::new(),
            })
            .collect();
        Ok((results, ranked.summary))
    }
}

/// `query` trimmed, once it and `options` are found fit to search with: before anything
/// is sized by them (the ranking's counts bound the legs' fetch).
fn checked<'q>(query: &'q str, options: &SearchOptions) -> Result<&'q str, EngineError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(EngineError::EmptyQuery);
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(EngineError::QueryTooLong { bytes: query.len() });
    }
    options.ranking.check()?;
    options
        .legs
        .validate()
        .map_err(EngineError::SearchOptions)?;
    options
        .lexical
        .validate()
        .map_err(EngineError::SearchOptions)?;
    Ok(query)
}

/// What the legs of one search retrieved, before fusion: each leg's whole hit list.
struct Retrieval {
    /// The query, analysed, with the definitions the ranking's `definition` layer raises.
    terms: QueryTerms,
    /// The dense, lexical and file legs' weights.
    shares: LegShares,
    /// The symbol leg's weight (0 where it did not run: semantic mode).
    symbol: f32,
    /// Each leg's hits, best first: at most `depth` each, the symbol leg's at most
    /// [`crate::SYMBOL_LEG_DEPTH`].
    dense: Vec<Hit>,
    lexical: Vec<Hit>,
    files: Vec<Hit>,
    symbols: Vec<Hit>,
    /// The symbol leg's definitions, as `symbols` lists them.
    definitions: Vec<SymbolHit>,
    /// How many hits each leg fetched ([`RankingConfig::fetch_count`]).
    depth: usize,
}

impl Retrieval {
    /// Each leg with its hits and weight, in the legs' order; a leg weighing 0 did not run.
    fn legs(&self) -> [(Leg, &[Hit], f32); 4] {
        [
            (Leg::Dense, &self.dense, self.shares.dense),
            (Leg::Lexical, &self.lexical, self.shares.lexical),
            (Leg::File, &self.files, self.shares.file),
            (Leg::Symbol, &self.symbols, self.symbol),
        ]
    }

    /// The legs' hits fused by `fusion`: the candidates the ranking orders, best first.
    fn fuse(&self, fusion: Fusion) -> Vec<(quarry_chunk::ChunkId, f32)> {
        fuse(
            &self.legs().map(|(_, hits, weight)| (hits, weight)),
            self.depth,
            fusion,
        )
    }
}

/// The ranked lists of at most `depth` hits, each with a weight, fused by `fusion` on
/// `[0, 1]`: 1 for a chunk first in every weighted list, 0 for one past the end of all of
/// them. Best first, ties by chunk id.
///
/// By rank, a chunk a list lacks counts as ranked `depth + 1` there. Raw RRF sums crowd
/// together (first and thirtieth place differ by a third), so the multiplicative boosts of
/// the ranking would outweigh many places of relevance; spread over the fetched depth, one
/// place near the top is worth about 5%. By score, a list whose hits all score alike (the
/// symbol leg's definitions) gives each 1.
fn fuse(legs: &[(&[Hit], f32)], depth: usize, fusion: Fusion) -> Vec<(quarry_chunk::ChunkId, f32)> {
    // A leg that found nothing (the symbol leg of a query that names no symbol) does not
    // lower the scale.
    let legs: Vec<_> = legs
        .iter()
        .filter(|(hits, w)| *w > 0.0 && !hits.is_empty())
        .collect();
    let total: f32 = legs.iter().map(|(_, w)| w).sum();
    let mut scores: HashMap<quarry_chunk::ChunkId, f32> = HashMap::new();
    for (hits, weight) in &legs {
        for (hit, place) in hits.iter().zip(places(hits, depth, fusion)) {
            *scores.entry(hit.id).or_default() += weight * place;
        }
    }
    let mut fused: Vec<_> = scores
        .into_iter()
        .map(|(id, s)| (id, (s / total).clamp(0.0, 1.0)))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused
}

/// Each hit's place in its leg by `fusion`, between the floor (0) and the leg's first (1).
fn places(hits: &[Hit], depth: usize, fusion: Fusion) -> Vec<f32> {
    match fusion {
        Fusion::Rank => {
            let reciprocal = |rank: usize| 1.0 / (RRF_K + rank as f32);
            let (first, floor) = (reciprocal(1), reciprocal(depth + 1));
            (1..=hits.len())
                .map(|rank| (reciprocal(rank) - floor) / (first - floor))
                .collect()
        }
        Fusion::Score => {
            let scores = hits.iter().map(|hit| hit.score);
            let first = scores.clone().fold(f32::NEG_INFINITY, f32::max);
            let last = scores.fold(f32::INFINITY, f32::min);
            hits.iter()
                .map(|hit| match first > last {
                    true => (hit.score - last) / (first - last),
                    false => 1.0,
                })
                .collect()
        }
    }
}

/// quarry-embed's cross-encoder as quarry-rank's [`quarry_rank::Reranker`]: the sigmoid of
/// its logit, a probability of relevance.
struct CrossEncoderReranker(Arc<CrossEncoder>);

impl quarry_rank::Reranker for CrossEncoderReranker {
    fn rerank(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, quarry_rank::RerankError> {
        Ok(self.0.relevance(query, texts)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_chunk::ChunkId;

    fn hits(ids: &[u128]) -> Vec<Hit> {
        ids.iter()
            .map(|&id| Hit {
                id: ChunkId(id),
                score: 0.0,
            })
            .collect()
    }

    fn scored(hits: &[(u128, f32)]) -> Vec<Hit> {
        hits.iter()
            .map(|&(id, score)| Hit {
                id: ChunkId(id),
                score,
            })
            .collect()
    }

    #[test]
    fn query_shape_sets_the_leg_weights() {
        let legs = LegWeights::default();
        let close = |query: &str, dense: f32| {
            let (d, l) = legs.for_query(&QueryTerms::of(query));
            assert!(
                (d - dense).abs() < 1e-6 && (d + l - 1.0).abs() < 1e-6,
                "{query}"
            );
        };
        close("parse_config", 0.15);
        close("parseConfig", 0.15);
        close("fs::read", 0.15);
        close("where is the configuration file read", 0.7);
        close("read the configuration file at startup", 0.7);
        close("retry backoff", 0.5);
        close("parse", 0.5);
        // The file leg runs for questions alone, as a share of the lexical leg.
        let file = |query: &str| legs.file_for(&QueryTerms::of(query), 0.3);
        assert!((file("where is the configuration file read") - 0.15).abs() < 1e-6);
        assert_eq!(file("read the configuration file at startup"), 0.0);
        assert_eq!(file("parse_config"), 0.0);
        assert!(
            LegWeights {
                sentence: 1.5,
                ..legs
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn fusion_rewards_agreement_and_tops_out_at_one() {
        let (dense, lexical) = (hits(&[1, 2, 3]), hits(&[2, 4]));
        let fused = fuse(&[(&dense, 0.5), (&lexical, 0.5)], 3, Fusion::Rank);
        let order: Vec<u128> = fused.iter().map(|(id, _)| id.0).collect();
        assert_eq!(order, [2, 1, 4, 3]);
        assert!(fused.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        let both_first = fuse(&[(&hits(&[9]), 0.7), (&hits(&[9]), 0.3)], 10, Fusion::Rank);
        assert!((both_first[0].1 - 1.0).abs() < 1e-6);
        // A leg that did not run does not lower the scale.
        let dense_only = fuse(&[(&hits(&[5, 6]), 1.0), (&[], 0.0)], 2, Fusion::Rank);
        assert!((dense_only[0].1 - 1.0).abs() < 1e-6);
        // First in one of two equal legs and absent from the other: half way.
        let one_leg = fuse(&[(&hits(&[7]), 0.5), (&hits(&[8]), 0.5)], 30, Fusion::Rank);
        assert!((one_leg[0].1 - 0.5).abs() < 1e-6, "{one_leg:?}");
        // Places spread over the depth: the last fetched one is a step above the floor.
        let ids: Vec<u128> = (1..=30).collect();
        let deep = fuse(&[(&hits(&ids), 1.0)], 30, Fusion::Rank);
        assert!(deep[29].1 > 0.0 && deep[29].1 < 0.05, "{:?}", deep[29]);
        assert!((deep[1].1 - 0.95).abs() < 0.01, "{:?}", deep[1]);
    }

    #[test]
    fn fusion_by_score_keeps_a_leg_s_margins() {
        // BM25: one chunk far ahead, then a flat tail; the dense leg's order differs.
        let lexical = scored(&[(1, 20.0), (2, 6.0), (3, 5.5), (4, 5.0)]);
        let dense = scored(&[(3, 0.61), (2, 0.60), (4, 0.59), (1, 0.40)]);
        let fused = fuse(&[(&lexical, 1.0)], 10, Fusion::Score);
        let at = |fused: &[(ChunkId, f32)], id: u128| {
            fused
                .iter()
                .find(|(c, _)| c.0 == id)
                .map(|(_, s)| *s)
                .unwrap()
        };
        assert!((at(&fused, 1) - 1.0).abs() < 1e-6);
        assert!(
            at(&fused, 2) < 0.1,
            "the tail stays far below the first: {fused:?}"
        );
        assert_eq!(at(&fused, 4), 0.0, "the last hit is the floor");
        // By rank, the second place is close to the first.
        let by_rank = fuse(&[(&lexical, 1.0)], 10, Fusion::Rank);
        assert!(at(&by_rank, 2) > 0.8, "{by_rank:?}");
        // Two legs: each weighs its share, and the result stays on [0, 1].
        let both = fuse(&[(&lexical, 0.5), (&dense, 0.5)], 10, Fusion::Score);
        let order: Vec<u128> = both.iter().map(|(id, _)| id.0).collect();
        assert_eq!(order, [3, 2, 1, 4], "{both:?}");
        assert!(both.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        // The symbol leg: its definitions all score alike, and each counts in full.
        let symbols = scored(&[(7, 0.0), (8, 0.0)]);
        let defined = fuse(&[(&symbols, 1.0)], 10, Fusion::Score);
        assert!(defined.iter().all(|(_, s)| (*s - 1.0).abs() < 1e-6));
    }
}
