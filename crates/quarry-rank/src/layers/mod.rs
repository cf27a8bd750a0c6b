//! The layers [`Pipeline::from_config`](crate::Pipeline::from_config) chains.

mod boost;
mod cap;
mod cut;
mod evidence;
mod penalty;
mod query_match;
mod rerank;
mod thin;

pub use boost::{PageRankBoost, Percentiles, SourceBoost};
pub use cap::{CapDecay, CapMode, DiversityCap};
pub use cut::{Threshold, TopK};
pub use evidence::FileEvidence;
pub use penalty::{IncludeTests, PathPenalty, PenaltyFactors};
pub use query_match::{Definition, PathMatch};
pub use rerank::{CrossEncoderRerank, Reranker};
pub use thin::ThinChunk;

use crate::ConfigError;

/// `value` if `valid` says it is, else an error naming the setting and its range.
fn check(
    setting: &'static str,
    value: f32,
    expected: &'static str,
    valid: impl Fn(f32) -> bool,
) -> Result<f32, ConfigError> {
    if valid(value) {
        Ok(value)
    } else {
        Err(ConfigError::OutOfRange {
            setting,
            value,
            expected,
        })
    }
}

/// Factors that may only raise a score: finite and at least 1.
fn boost(setting: &'static str, value: f32) -> Result<f32, ConfigError> {
    check(setting, value, "finite and at least 1", |v| {
        v.is_finite() && v >= 1.0
    })
}

/// How much a boost may add (`1 + strength × ...`): finite and at least 0.
fn strength(setting: &'static str, value: f32) -> Result<f32, ConfigError> {
    check(setting, value, "finite and at least 0", |v| {
        v.is_finite() && v >= 0.0
    })
}

/// Factors that may only lower a score: `(0, 1]`.
fn penalty(setting: &'static str, value: f32) -> Result<f32, ConfigError> {
    check(setting, value, "in (0, 1]", |v| v > 0.0 && v <= 1.0)
}
