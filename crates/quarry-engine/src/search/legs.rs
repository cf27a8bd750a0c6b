//! Where each retrieval leg placed a result: what `--explain` shows before the ranking's
//! steps, so that a result's retrieval score can be read back to the legs that made it;
//! and where each leg placed a chunk the search did not return ([`Engine::leg_ranks`]), so
//! that a benchmark can say which leg lost it.

use std::collections::HashMap;
use std::fmt;

use quarry_chunk::ChunkId;
use quarry_store::{Hit, StoredChunk};
use serde::{Deserialize, Serialize};

use super::{SearchOptions, checked};
use crate::{Engine, EngineError};

/// A retrieval leg of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Leg {
    /// The query's embedding against the chunks' vectors.
    Dense,
    /// BM25 over chunks.
    Lexical,
    /// BM25 over whole files, each file answered by one chunk.
    File,
    /// The definitions of the symbol the query names.
    Symbol,
}

impl Leg {
    /// The leg's name, as the JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            Leg::Dense => "dense",
            Leg::Lexical => "lexical",
            Leg::File => "file",
            Leg::Symbol => "symbol",
        }
    }
}

impl fmt::Display for Leg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where one leg placed a result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LegPlace {
    /// The leg.
    pub leg: Leg,
    /// The result's place among the leg's hits, from 1.
    pub rank: usize,
    /// The leg's own score: the cosine similarity (dense) or the BM25 score (lexical, file);
    /// none for the symbol leg, whose definitions are found by name, not scored.
    pub score: Option<f32>,
}

impl LegPlace {
    /// The places of `chunks` (the results) in the `legs` that ran (a weight above 0), each
    /// chunk's in the legs' order; a chunk no leg holds has none.
    pub(crate) fn of(
        chunks: impl IntoIterator<Item = ChunkId>,
        legs: &[(Leg, &[Hit], f32)],
    ) -> HashMap<ChunkId, Vec<LegPlace>> {
        let mut places: HashMap<ChunkId, Vec<LegPlace>> =
            chunks.into_iter().map(|id| (id, Vec::new())).collect();
        for &(leg, hits, _) in legs.iter().filter(|(_, _, weight)| *weight > 0.0) {
            for (rank, hit) in (1..).zip(hits) {
                if let Some(found) = places.get_mut(&hit.id) {
                    found.push(LegPlace {
                        leg,
                        rank,
                        score: (leg != Leg::Symbol).then_some(hit.score),
                    });
                }
            }
        }
        places
    }
}

/// Where one leg's whole hit list placed a target ([`Engine::leg_ranks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegRank {
    /// The leg, one that ran (a weight above 0).
    pub leg: Leg,
    /// The best place, from 1, of a hit that answers the target; `None` when none of the
    /// leg's `hits` does: the leg did not retrieve it within its pool.
    pub rank: Option<usize>,
    /// How many hits the leg returned: its pool, or fewer where fewer matched.
    pub hits: usize,
}

/// Where a search's legs and their fusion placed one target ([`Engine::leg_ranks`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRanks {
    /// The best place, from 1, of a chunk answering the target among the fused
    /// candidates, before the ranking's layers reorder and cut them; `None` when no leg
    /// retrieved one.
    pub fused: Option<usize>,
    /// How many candidates the fusion gave the ranking.
    pub candidates: usize,
    /// Each leg that ran, in the legs' order.
    pub legs: Vec<LegRank>,
}

impl Engine {
    /// Where each leg of [`Engine::search`]`(query, options)` placed each of `targets`, in
    /// the leg's whole hit list rather than the ranked results: for each leg that ran, the
    /// best rank of a hit for which `answers(target, chunk)` holds (a chunk overlapping the
    /// target's lines, say), with the list's length; and the best rank among the fused
    /// candidates. One entry per target, in order. The legs run as the search runs them
    /// (the same code, weights and filter), then the ranking does not run.
    ///
    /// Each list is as deep as the search's: the dense and lexical legs fetch
    /// [`crate::RankingConfig::fetch_count`] chunks (the `pool`, 100 by default; the dense
    /// leg's through the vector index, approximate on a large index); the file leg as many
    /// files (questions only), each answered by one chunk, so a file whose answering chunk
    /// is another than the target's lines does not place the target; the symbol leg at most
    /// [`crate::SYMBOL_LEG_DEPTH`] definitions of the name the query asks for. A target a
    /// leg did not place (`rank` `None`) lies beyond its pool, or, where the list is shorter
    /// than the pool, matched nothing in that leg.
    pub fn leg_ranks<T>(
        &self,
        query: &str,
        options: &SearchOptions,
        targets: &[T],
        answers: impl Fn(&T, &StoredChunk) -> bool,
    ) -> Result<Vec<TargetRanks>, EngineError> {
        let query = checked(query, options)?;
        let store = self.current_store()?;
        let (retrieval, snapshot) = self.retrieve(&store, query, options)?;
        let fused: Vec<ChunkId> = retrieval
            .fuse(options.fusion)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let legs: Vec<(Leg, Vec<ChunkId>)> = retrieval
            .legs()
            .into_iter()
            .filter(|(_, _, weight)| *weight > 0.0)
            .map(|(leg, hits, _)| (leg, hits.iter().map(|hit| hit.id).collect()))
            .collect();
        // The fused candidates are every leg's hits, so they name every chunk to read.
        let chunks: HashMap<ChunkId, StoredChunk> = fused
            .iter()
            .copied()
            .zip(snapshot.chunks(&fused)?)
            .filter_map(|(id, chunk)| Some((id, chunk?)))
            .collect();
        drop(snapshot);
        let best = |ids: &[ChunkId], target: &T| {
            (1..)
                .zip(ids)
                .find(|(_, id)| chunks.get(id).is_some_and(|chunk| answers(target, chunk)))
                .map(|(rank, _)| rank)
        };
        Ok(targets
            .iter()
            .map(|target| TargetRanks {
                fused: best(&fused, target),
                candidates: fused.len(),
                legs: legs
                    .iter()
                    .map(|(leg, ids)| LegRank {
                        leg: *leg,
                        rank: best(ids, target),
                        hits: ids.len(),
                    })
                    .collect(),
            })
            .collect())
    }
}

impl fmt::Display for LegPlace {
    /// `lexical #3 (12.410)`; `symbol #1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} #{}", self.leg, self.rank)?;
        match self.score {
            Some(score) => write!(f, " ({score:.3})"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: u128, score: f32) -> Hit {
        Hit {
            id: ChunkId(id),
            score,
        }
    }

    #[test]
    fn a_result_holds_its_place_in_every_leg_that_ran() {
        let lexical = [hit(1, 9.0), hit(2, 4.5), hit(3, 1.0)];
        let file = [hit(2, 20.0)];
        let dense = [hit(2, 0.8)];
        let symbol = [hit(1, 0.0)];
        let results = [ChunkId(1), ChunkId(2), ChunkId(4)];
        let places = LegPlace::of(
            results,
            &[
                (Leg::Dense, &dense, 0.0),
                (Leg::Lexical, &lexical, 1.0),
                (Leg::File, &file, 0.5),
                (Leg::Symbol, &symbol, 0.5),
            ],
        );
        let shown = |id: u128| -> Vec<String> {
            places[&ChunkId(id)]
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(shown(1), ["lexical #1 (9.000)", "symbol #1"]);
        // The dense leg weighed nothing, so it placed nothing.
        assert_eq!(shown(2), ["lexical #2 (4.500)", "file #1 (20.000)"]);
        // A result no leg holds has no places; a hit that is no result is not looked at.
        assert!(shown(4).is_empty());
        assert!(!places.contains_key(&ChunkId(3)));
    }
}
