//! Percentiles, a seeded random source, and paired bootstrap confidence intervals.

use serde::{Deserialize, Serialize};

/// SplitMix64: a small, seeded, reproducible random source (the benchmark must draw the
/// same "random" ranking and bootstrap samples on every run).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// A source seeded from a string (a case id, say).
    pub fn from_key(key: &str) -> Self {
        // FNV-1a: stable across runs and platforms, unlike the std hasher.
        Rng::new(key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        }))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The `quantile` (in `[0, 1]`) of sorted values, by linear interpolation.
pub fn percentile(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let position = quantile * (sorted.len() - 1) as f64;
    let (low, high) = (position.floor() as usize, position.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
}

/// A mean difference with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// The mean of the per-case differences.
    pub mean: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// Differences smaller than this are rounding (the same sums added in another order), not a
/// change: a control arm scored twice differed by 1e-17 and was called worse.
const ROUNDING: f64 = 1e-9;

impl Delta {
    /// The interval lies wholly below zero: a drop beyond what resampling explains.
    pub fn is_drop(&self) -> bool {
        self.high < -ROUNDING
    }

    /// The interval lies wholly above zero.
    pub fn is_gain(&self) -> bool {
        self.low > ROUNDING
    }
}

/// Bootstrap resamples per interval: enough for stable 2.5% and 97.5% percentiles.
pub const RESAMPLES: usize = 2000;

/// The mean of paired `differences` (one per case, B minus A) with a percentile bootstrap
/// 95% interval over cases, drawn with a fixed seed so reports are reproducible.
pub fn paired_bootstrap(differences: &[f64]) -> Delta {
    let n = differences.len();
    if n == 0 {
        return Delta {
            mean: 0.0,
            low: 0.0,
            high: 0.0,
        };
    }
    let mean = differences.iter().sum::<f64>() / n as f64;
    let mut rng = Rng::new(0x5eed);
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| (0..n).map(|_| differences[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    Delta {
        mean,
        low: percentile(&means, 0.025),
        high: percentile(&means, 0.975),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&sorted, 0.0), 1.0);
        assert_eq!(percentile(&sorted, 0.5), 2.5);
        assert_eq!(percentile(&sorted, 1.0), 4.0);
    }

    #[test]
    fn the_bootstrap_brackets_the_mean_and_sees_consistent_drops() {
        let noisy: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 0.3 } else { -0.3 })
            .collect();
        let delta = paired_bootstrap(&noisy);
        assert!(delta.low < 0.0 && delta.high > 0.0 && !delta.is_drop());
        let drops: Vec<f64> = (0..100).map(|i| -0.1 - 0.001 * i as f64).collect();
        let delta = paired_bootstrap(&drops);
        assert!(delta.is_drop() && delta.low <= delta.mean && delta.mean <= delta.high);
        assert_eq!(paired_bootstrap(&drops), delta, "the same draws every run");
        // The same scores summed in another order: rounding, neither a drop nor a gain.
        let rounding = paired_bootstrap(&[-1e-17; 50]);
        assert!(!rounding.is_drop() && !rounding.is_gain());
    }

    #[test]
    fn keyed_sources_are_stable() {
        assert_eq!(
            Rng::from_key("TC-01").next_u64(),
            Rng::from_key("TC-01").next_u64()
        );
        assert_ne!(
            Rng::from_key("TC-01").next_u64(),
            Rng::from_key("TC-02").next_u64()
        );
    }
}
