//! Lost cases: where each retrieval leg placed the targets the first arm did not rank as
//! it should, from the legs' whole hit lists ([`Engine::leg_ranks`]), so that a report says
//! whether a target was never retrieved, retrieved by one leg and outweighed by the others,
//! or fused high and moved down by the ranking.
//!
//! A case is lost when its relevant targets do not hold the first places of its results:
//! one of its `n` indexed relevant targets is missing from the top 10 (*missed*) or ranks
//! below `n`, under a result that is not one. (A secondary target ranking low lowers NDCG@10
//! without losing the case.) Each of its indexed relevant targets is recorded.

use quarry_engine::{Engine, TargetRanks};
use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::arms::Arm;
use crate::cases::{Case, Target};
use crate::metrics::{Judged, Location};

/// One relevant target of a lost case, and where the search placed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostTarget {
    /// The target.
    pub target: Target,
    /// Its rank, from 1, in the arm's top 10 results; `None`: missed.
    pub result: Option<usize>,
    /// Where the fusion and each leg that ran placed it.
    #[serde(flatten)]
    pub ranks: TargetRanks,
}

/// Whether targets found at `ranks` (0-based, in the top 10) hold the first places.
fn is_lost(ranks: &[Option<usize>]) -> bool {
    ranks
        .iter()
        .any(|rank| rank.is_none_or(|rank| rank >= ranks.len()))
}

/// The relevant targets of `case`, which `arm` answered with `results`, and where
/// `engine`'s legs placed each, when the case is lost and `arm` is quarry's; else none.
/// Targets `indexed` rejects are left out, as the metrics leave them out.
pub(crate) fn diagnose(
    engine: &Engine,
    arm: &Arm,
    case: &Case,
    results: &[Location],
    indexed: impl Fn(&str) -> bool,
) -> Result<Vec<LostTarget>, BenchError> {
    let found = Judged::new(results, &case.relevant, &[], &indexed).relevant;
    let Some(options) = arm.search_options().filter(|_| is_lost(&found)) else {
        return Ok(Vec::new());
    };
    let targets: Vec<&Target> = case.relevant.iter().filter(|t| indexed(&t.path)).collect();
    let ranks = engine.leg_ranks(&case.query, &options, &targets, |target, chunk| {
        target.hit_by(&chunk.path, chunk.start_line, chunk.end_line)
    })?;
    Ok(targets
        .into_iter()
        .zip(found)
        .zip(ranks)
        .map(|((target, found), ranks)| LostTarget {
            target: target.clone(),
            result: found.map(|rank| rank + 1),
            ranks,
        })
        .collect())
}
