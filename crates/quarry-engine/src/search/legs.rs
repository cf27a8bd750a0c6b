//! Where each retrieval leg placed a result: what `--explain` shows before the ranking's
//! steps, so that a result's retrieval score can be read back to the legs that made it.

use std::collections::HashMap;
use std::fmt;

use quarry_chunk::ChunkId;
use quarry_store::Hit;
use serde::Serialize;

/// A retrieval leg of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
