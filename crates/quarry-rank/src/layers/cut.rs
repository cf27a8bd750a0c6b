//! [`Threshold`] and [`TopK`]: drop what is not good enough, then what does not fit.

use super::check;
use crate::{ConfigError, LayerKind, Pass, RankError, RankingLayer};

/// Drops every candidate whose score is not above a threshold.
///
/// It judges the score as the layers before it left it: after a reranker, on the
/// reranker's scale; after penalties and boosts, on the adjusted score. A threshold of 0
/// drops candidates with no positive evidence (a negative cosine, a zero) on any scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    above: f32,
}

impl Threshold {
    /// Keeps candidates scoring strictly above `above`, which must be finite.
    pub fn new(above: f32) -> Result<Self, ConfigError> {
        let above = check("threshold", above, "finite", f32::is_finite)?;
        Ok(Self { above })
    }
}

impl RankingLayer for Threshold {
    fn kind(&self) -> LayerKind {
        LayerKind::Threshold
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        pass.keep_where(|_, ranked| ranked.score > self.above);
        Ok(())
    }
}

/// Keeps the best `k` candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct TopK {
    k: usize,
}

impl TopK {
    /// Keeps the best `k`.
    pub fn new(k: usize) -> Self {
        Self { k }
    }
}

impl RankingLayer for TopK {
    fn kind(&self) -> LayerKind {
        LayerKind::TopK
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        pass.keep_where(|i, _| i < self.k);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::{outline, run};

    const INPUT: &[(&str, usize, f32)] = &[
        ("a.rs", 1, 0.8),
        ("b.rs", 1, 0.3),
        ("a.rs", 5, 0.0),
        ("c.rs", 1, -0.2),
    ];

    #[test]
    fn the_threshold_keeps_only_scores_above_it() {
        let ranking = run(Threshold::new(0.0).unwrap(), "", INPUT);
        assert_eq!(outline(&ranking), [("a.rs", 1, 0.8), ("b.rs", 1, 0.3)]);
        assert_eq!(
            ranking.summary.layers[0].dropped_per_file,
            [("a.rs".to_string(), 1), ("c.rs".to_string(), 1)].into()
        );
        let ranking = run(Threshold::new(-1.0).unwrap(), "", INPUT);
        assert_eq!(ranking.results.len(), 4);
        assert!(Threshold::new(f32::NAN).is_err());
    }

    #[test]
    fn top_k_keeps_the_best_k() {
        let ranking = run(TopK::new(2), "", INPUT);
        assert_eq!(outline(&ranking), [("a.rs", 1, 0.8), ("b.rs", 1, 0.3)]);
        let report = &ranking.summary.layers[0];
        assert_eq!((report.received, report.kept), (4, 2));
        assert_eq!(run(TopK::new(10), "", INPUT).results.len(), 4);
    }
}
