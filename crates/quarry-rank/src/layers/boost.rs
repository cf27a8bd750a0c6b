//! [`SourceBoost`] and [`PageRankBoost`]: raise chunks of files that are likely the answer.

use std::fmt;

use super::boost;
use crate::path::{classify, under_source_dir};
use crate::{ConfigError, Effect, LayerKind, Pass, RankError, RankingLayer};

/// Multiplies the score of a chunk under a source directory (`src/`, `source/`, `lib/`,
/// `pkg/`, `internal/`, `cmd/`, `app/`, at any depth) by a factor of at least 1.
///
/// A file in any [`PathClass`](crate::PathClass) is not source, whatever its directories:
/// Maven's `src/test/` holds tests, `src/__mocks__/` mocks.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceBoost {
    factor: f32,
}

impl SourceBoost {
    /// A boost by `factor`, finite and at least 1.
    pub fn new(factor: f32) -> Result<Self, ConfigError> {
        let factor = boost("source_boost", factor)?;
        Ok(Self { factor })
    }
}

impl RankingLayer for SourceBoost {
    fn kind(&self) -> LayerKind {
        LayerKind::SourceBoost
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        let effect = Effect::Boosted {
            factor: self.factor,
        };
        pass.scale_each(|_, ranked| {
            let source =
                under_source_dir(&ranked.candidate.path) && classify(&ranked.candidate).is_empty();
            source.then(|| (self.factor, effect.clone()))
        });
        Ok(())
    }
}

/// A file's PageRank percentile, by path: 0 for the least central file, 1 for the most;
/// `None` for a file the graph does not know.
pub type Percentiles = Box<dyn Fn(&str) -> Option<f32> + Send + Sync>;

/// How steep the sigmoid is: the middle half of the percentiles spans 70% of the boost
/// (`s(0.25) ≈ 0.15`, `s(0.75) ≈ 0.85`), so the ends of the range differ little among
/// themselves.
const STEEPNESS: f64 = 6.0;

/// Multiplies a chunk's score by `1 + strength × s(p)`, where `p` is its file's PageRank
/// percentile and `s` a sigmoid rescaled so that `s(0) = 0` and `s(1) = 1`.
///
/// The boost is bounded (`1` to `1 + strength`), monotone in the percentile, and
/// multiplicative, so a chunk of zero relevance stays at zero however central its file.
/// A file without a percentile is not boosted.
pub struct PageRankBoost {
    strength: f32,
    percentiles: Percentiles,
}

impl PageRankBoost {
    /// A boost of up to `strength` (finite, at least 0) by the `percentiles` of each path.
    pub fn new(
        strength: f32,
        percentiles: impl Fn(&str) -> Option<f32> + Send + Sync + 'static,
    ) -> Result<Self, ConfigError> {
        let strength = super::strength("pagerank_strength", strength)?;
        Ok(Self {
            strength,
            percentiles: Box::new(percentiles),
        })
    }

    /// The factor for a file at `percentile` (clamped to `0..=1`).
    pub fn factor(&self, percentile: f32) -> f32 {
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        let low = sigmoid(-STEEPNESS / 2.0);
        let high = sigmoid(STEEPNESS / 2.0);
        let p = f64::from(percentile.clamp(0.0, 1.0));
        let s = (sigmoid(STEEPNESS * (p - 0.5)) - low) / (high - low);
        (1.0 + f64::from(self.strength) * s) as f32
    }
}

impl fmt::Debug for PageRankBoost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageRankBoost")
            .field("strength", &self.strength)
            .finish_non_exhaustive()
    }
}

impl RankingLayer for PageRankBoost {
    fn kind(&self) -> LayerKind {
        LayerKind::PageRank
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        pass.scale_each(|_, ranked| {
            // A NaN percentile says nothing about the file.
            let percentile = (self.percentiles)(&ranked.candidate.path).filter(|p| !p.is_nan())?;
            let factor = self.factor(percentile);
            Some((factor, Effect::PageRank { percentile, factor }))
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::chain::tests::{outline, run};

    #[test]
    fn source_files_are_boosted_unless_they_are_tests_or_mocks() {
        let ranking = run(
            SourceBoost::new(1.5).unwrap(),
            "",
            &[
                ("scripts/gen.py", 1, 0.6),
                ("src/test/java/ParserTest.java", 1, 0.5),
                ("src/parse.rs", 1, 0.5),
                ("src/__mocks__/fs.js", 1, 0.5),
            ],
        );
        assert_eq!(
            outline(&ranking),
            [
                ("src/parse.rs", 1, 0.75),
                ("scripts/gen.py", 1, 0.6),
                ("src/__mocks__/fs.js", 1, 0.5),
                ("src/test/java/ParserTest.java", 1, 0.5),
            ]
        );
        assert_eq!(ranking.summary.layers[0].adjusted, 1);
        assert!(SourceBoost::new(0.9).is_err());
    }

    #[test]
    fn pagerank_lifts_central_files_and_leaves_unknown_ones() {
        let percentiles: HashMap<String, f32> =
            [("core.rs".into(), 1.0), ("leaf.rs".into(), 0.0)].into();
        let layer = PageRankBoost::new(0.5, move |path| percentiles.get(path).copied()).unwrap();
        let ranking = run(
            layer,
            "",
            &[
                ("leaf.rs", 1, 0.6),
                ("unknown.rs", 1, 0.55),
                ("core.rs", 1, 0.5),
                ("core.rs", 20, 0.0),
            ],
        );
        assert_eq!(
            outline(&ranking),
            [
                ("core.rs", 1, 0.75),
                ("leaf.rs", 1, 0.6),
                ("unknown.rs", 1, 0.55),
                ("core.rs", 20, 0.0),
            ]
        );
        assert_eq!(
            ranking.results[0].explanation.steps[0].effect,
            Effect::PageRank {
                percentile: 1.0,
                factor: 1.5
            }
        );
    }

    #[test]
    fn the_pagerank_factor_is_a_bounded_rising_sigmoid() {
        let layer = PageRankBoost::new(0.2, |_| None).unwrap();
        assert_eq!(layer.factor(0.0), 1.0);
        assert_eq!(layer.factor(1.0), 1.2);
        assert!((layer.factor(0.5) - 1.1).abs() < 1e-6);
        assert!((layer.factor(0.25) - 1.03).abs() < 0.002);
        assert_eq!(layer.factor(-3.0), 1.0);
        assert_eq!(layer.factor(7.0), 1.2);
        let steps: Vec<f32> = (0..=100).map(|i| layer.factor(i as f32 / 100.0)).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]));
        assert!(PageRankBoost::new(-0.1, |_| None).is_err());
    }
}
