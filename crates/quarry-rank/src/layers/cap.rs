//! [`DiversityCap`]: keep one file from filling the results.

use std::collections::HashMap;

use super::penalty;
use crate::chain::keep_where;
use crate::{ConfigError, Effect, LayerKind, LayerReport, RankError, Ranked, RankingLayer};

/// How [`DiversityCap`] treats a file's chunks beyond the cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CapMode {
    /// Drop them, except to fill result slots that no other file can.
    Hard,
    /// Keep them, each scaled by `decay` once more than the one before it: the first
    /// beyond the cap by `decay`, the next by `decay²`... `decay` is in `(0, 1]`.
    Soft {
        /// The decay per extra chunk.
        decay: f32,
    },
}

/// At most `max_per_file` chunks of any one file among the results; 0 disables the cap.
///
/// In [`CapMode::Hard`] a file's chunks beyond the cap are set aside, then, when fewer than
/// `limit` chunks remain, the best of them fill the empty slots (recorded as
/// [`Effect::Spilled`]): a query that only one or two files answer still gets `limit`
/// results. The cap only removes candidates, so it never reorders the ones it keeps.
///
/// For the cap to choose, the retriever must fetch more than `limit` candidates:
/// [`RankingConfig::fetch_count`](crate::RankingConfig::fetch_count) says how many.
#[derive(Debug, Clone, PartialEq)]
pub struct DiversityCap {
    max_per_file: usize,
    limit: usize,
    mode: CapMode,
}

impl DiversityCap {
    /// A cap of `max_per_file` chunks per file for a query that wants `limit` results.
    pub fn new(max_per_file: usize, limit: usize, mode: CapMode) -> Result<Self, ConfigError> {
        if let CapMode::Soft { decay } = mode {
            penalty("soft_cap_decay", decay)?;
        }
        Ok(Self {
            max_per_file,
            limit,
            mode,
        })
    }
}

impl RankingLayer for DiversityCap {
    fn kind(&self) -> LayerKind {
        LayerKind::DiversityCap
    }

    fn apply(
        &self,
        _query: &str,
        list: &mut Vec<Ranked>,
        report: &mut LayerReport,
    ) -> Result<(), RankError> {
        if self.max_per_file == 0 {
            return Ok(());
        }
        // Each chunk's place among its file's chunks, in score order, from 1. The map is
        // only counted in, never iterated, so its order cannot leak into the results.
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let nth: Vec<usize> = list
            .iter()
            .map(|ranked| {
                let count = seen.entry(ranked.candidate.path.as_str()).or_default();
                *count += 1;
                *count
            })
            .collect();
        match self.mode {
            CapMode::Hard => {
                let within = nth.iter().filter(|&&n| n <= self.max_per_file).count();
                let mut empty_slots = self.limit.saturating_sub(within);
                let mut keep = Vec::with_capacity(nth.len());
                for (ranked, &n) in list.iter_mut().zip(&nth) {
                    // In score order, so the best of the set-aside chunks fill the slots.
                    let spill = n > self.max_per_file && empty_slots > 0;
                    if spill {
                        empty_slots -= 1;
                        report.spilled += 1;
                        let effect = Effect::Spilled { nth_in_file: n };
                        ranked.record(LayerKind::DiversityCap, effect);
                    }
                    keep.push(n <= self.max_per_file || spill);
                }
                keep_where(list, report, |i, _| keep[i]);
            }
            CapMode::Soft { decay } => {
                for (ranked, &n) in list.iter_mut().zip(&nth) {
                    if n <= self.max_per_file {
                        continue;
                    }
                    let exponent = i32::try_from(n - self.max_per_file).unwrap_or(i32::MAX);
                    let factor = decay.powi(exponent);
                    let effect = Effect::Decayed {
                        nth_in_file: n,
                        factor,
                    };
                    if ranked.scale(LayerKind::DiversityCap, factor, effect) {
                        report.adjusted += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::{outline, run};

    /// One large file whose 20 chunks all match well, and three small files that match less.
    fn large_and_small() -> Vec<(&'static str, usize, f32)> {
        let mut input: Vec<_> = (0..20)
            .map(|i| ("src/large.rs", 1 + 10 * i, 0.9 - 0.01 * i as f32))
            .collect();
        input.extend([
            ("src/a.rs", 1, 0.6),
            ("src/b.rs", 1, 0.55),
            ("src/c.rs", 1, 0.5),
        ]);
        input
    }

    fn paths(ranking: &crate::Ranking) -> Vec<&str> {
        ranking
            .results
            .iter()
            .map(|r| r.candidate.path.as_str())
            .collect()
    }

    #[test]
    fn the_cap_lets_smaller_files_into_the_results() {
        let ranking = run(
            DiversityCap::new(3, 6, CapMode::Hard).unwrap(),
            "",
            &large_and_small(),
        );
        assert_eq!(
            paths(&ranking),
            [
                "src/large.rs",
                "src/large.rs",
                "src/large.rs",
                "src/a.rs",
                "src/b.rs",
                "src/c.rs"
            ]
        );
        let report = &ranking.summary.layers[0];
        assert_eq!(
            report.dropped_per_file,
            [("src/large.rs".to_string(), 17)].into()
        );
        assert_eq!(report.spilled, 0);
    }

    #[test]
    fn capped_chunks_spill_into_slots_no_other_file_fills() {
        let ranking = run(
            DiversityCap::new(3, 10, CapMode::Hard).unwrap(),
            "",
            &large_and_small(),
        );
        assert_eq!(ranking.results.len(), 10);
        assert_eq!(
            paths(&ranking)
                .iter()
                .filter(|&&p| p == "src/large.rs")
                .count(),
            7
        );
        // The best four set-aside chunks, in score order, and no reordering.
        let spilled: Vec<_> = ranking
            .results
            .iter()
            .filter(|r| !r.explanation.steps.is_empty())
            .map(|r| r.candidate.start_line)
            .collect();
        assert_eq!(spilled, [31, 41, 51, 61]);
        assert_eq!(
            ranking.results[3].explanation.steps[0].effect,
            Effect::Spilled { nth_in_file: 4 }
        );
        let report = &ranking.summary.layers[0];
        assert_eq!(report.spilled, 4);
        assert_eq!(
            report.dropped_per_file,
            [("src/large.rs".to_string(), 13)].into()
        );
    }

    #[test]
    fn the_soft_cap_decays_each_extra_chunk_and_keeps_them_all() {
        let input = [
            ("big.rs", 1, 0.9),
            ("big.rs", 2, 0.9),
            ("big.rs", 3, 0.9),
            ("small.rs", 1, 0.4),
        ];
        let ranking = run(
            DiversityCap::new(1, 10, CapMode::Soft { decay: 0.5 }).unwrap(),
            "",
            &input,
        );
        assert_eq!(
            outline(&ranking),
            [
                ("big.rs", 1, 0.9),
                ("big.rs", 2, 0.45),
                ("small.rs", 1, 0.4),
                ("big.rs", 3, 0.225)
            ]
        );
        assert_eq!(
            ranking.results[3].explanation.steps[0].effect,
            Effect::Decayed {
                nth_in_file: 3,
                factor: 0.25
            }
        );
        assert!(DiversityCap::new(1, 10, CapMode::Soft { decay: 0.0 }).is_err());
    }

    #[test]
    fn a_cap_of_zero_changes_nothing() {
        let input = large_and_small();
        let ranking = run(DiversityCap::new(0, 5, CapMode::Hard).unwrap(), "", &input);
        let results: Vec<_> = ranking
            .results
            .iter()
            .map(|r| (r.candidate.path.as_str(), r.candidate.start_line, r.score))
            .collect();
        assert_eq!(results, input);
        assert!(
            ranking
                .results
                .iter()
                .all(|r| r.explanation.steps.is_empty())
        );
    }
}
