//! [`FileEvidence`]: a file that several candidates come from is likely the answer.

use std::collections::{HashMap, HashSet};

use crate::{ConfigError, Effect, LayerKind, Pass, RankError, RankingLayer};

/// Raises the best chunk of each file by `1 + strength × share`, where `share` is the sum of
/// the file's candidate scores over the largest such sum among the files (1 for the file
/// with the most evidence).
///
/// A file's evidence is often spread over several small chunks (a class and its methods, a
/// module's helpers), none of which scores high alone while two chunks of a wrong file fill
/// the top. Only the best chunk is raised, so the file climbs without flooding the results;
/// a file with one strong chunk still gets its share.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEvidence {
    strength: f32,
}

impl FileEvidence {
    /// A boost of up to `strength` (finite, at least 0).
    pub fn new(strength: f32) -> Result<Self, ConfigError> {
        let strength = super::strength("file_evidence", strength)?;
        Ok(Self { strength })
    }
}

impl RankingLayer for FileEvidence {
    fn kind(&self) -> LayerKind {
        LayerKind::FileEvidence
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        // Only positive evidence counts; in ranking order, so the first of a file is its best.
        let list = &*pass.list;
        let mut sums: HashMap<&str, f32> = HashMap::new();
        for ranked in list {
            *sums.entry(ranked.candidate.path.as_str()).or_default() += ranked.score.max(0.0);
        }
        let largest = sums.values().copied().fold(0.0_f32, f32::max);
        if largest <= 0.0 {
            return Ok(());
        }
        let shares: Vec<Option<f32>> = {
            let mut seen: HashSet<&str> = HashSet::new();
            list.iter()
                .map(|ranked| {
                    let path = ranked.candidate.path.as_str();
                    seen.insert(path).then(|| sums[path] / largest)
                })
                .collect()
        };
        pass.scale_each(|index, _| {
            let share = shares[index]?;
            let factor = 1.0 + self.strength * share;
            Some((factor, Effect::FileEvidence { share, factor }))
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::{outline, run};

    #[test]
    fn a_file_with_more_evidence_overtakes_a_single_strong_chunk() {
        let input = [
            ("src/wrong.rs", 1, 0.60),
            ("src/right.rs", 1, 0.55),
            ("src/right.rs", 20, 0.50),
            ("src/right.rs", 40, 0.45),
        ];
        let ranking = run(FileEvidence::new(0.3).unwrap(), "", &input);
        let order = outline(&ranking);
        assert_eq!(order[0].0, "src/right.rs", "{order:?}");
        assert_eq!(order[0].1, 1);
        // Only the best chunk of each file is raised.
        assert_eq!(ranking.summary.layers[0].adjusted, 2);
        let right_second = ranking
            .results
            .iter()
            .find(|r| r.candidate.path == "src/right.rs" && r.candidate.start_line == 20)
            .unwrap();
        assert!(right_second.explanation.steps.is_empty());
    }

    #[test]
    fn zero_strength_changes_nothing_and_bad_values_are_refused() {
        let input = [("src/a.rs", 1, 0.6), ("src/b.rs", 1, 0.5)];
        let ranking = run(FileEvidence::new(0.0).unwrap(), "", &input);
        assert!(
            ranking
                .results
                .iter()
                .all(|r| r.explanation.steps.is_empty())
        );
        assert!(FileEvidence::new(-1.0).is_err());
        assert!(FileEvidence::new(f32::NAN).is_err());
    }
}
