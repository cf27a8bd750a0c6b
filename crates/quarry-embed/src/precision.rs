//! The number format the encoder's linear layers compute in: part of a model's identity, since
//! vectors made in one differ (slightly) from vectors made in another.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::EmbedError;
use crate::backend::BackendChoice;

/// What the linear layers (query, key and value, the attention output, both feed-forward
/// products) multiply in. Layer norms, softmax, GELU and pooling stay in `f32` whatever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Single precision: the reference, and what every backend and CPU runs.
    F32,
    /// Weights and inputs in bfloat16, sums in `f32` (AVX-512 BF16).
    Bf16,
    /// Weights in int8 (a scale a column), inputs in uint8 (a scale and zero point a row),
    /// exact integer sums (AVX-512 VNNI, AVX-VNNI, AVX2's `vpmaddubsw` or NEON's dot
    /// product: the same sums on each).
    Int8,
}

impl Precision {
    /// Every precision, the reference first.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::Bf16, Precision::Int8];

    /// Its name in configuration, the environment and reports.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        }
    }

    /// Whether this process can run it on the CPU: `f32` always; bf16 at the AVX-512 level
    /// ([`quarry_kernels::level`]) with AVX-512 BF16; int8 wherever the host encoder runs
    /// (a SIMD level): on the CPU's dot-product instructions where it has them
    /// ([`Precision::accelerated`]), else in portable integer arithmetic, which makes the
    /// same vectors more slowly (so an int8 index stays usable on any such CPU).
    pub fn supported(self) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Bf16 => quarry_kernels::bf16_supported(),
            Precision::Int8 => quarry_kernels::HostSimd::detect().is_some(),
        }
    }

    /// Whether this CPU runs it on instructions made for it, at full speed: what
    /// [`PrecisionChoice::Auto`] picks from. int8 needs an x86 SIMD level (AVX2 at least) or
    /// NEON's dot product ([`quarry_kernels::int8_supported`]).
    pub fn accelerated(self) -> bool {
        match self {
            Precision::Int8 => quarry_kernels::int8_supported(),
            other => other.supported(),
        }
    }

    /// What this CPU lacks to run it, for an error message.
    fn missing(self) -> &'static str {
        match self {
            Precision::F32 => "nothing",
            Precision::Bf16 => "AVX-512 with its BF16 instructions (or QUARRY_CPU caps it lower)",
            Precision::Int8 => {
                "a SIMD level for the host encoder (QUARRY_CPU=scalar runs Burn's generic path, \
                 in f32 only)"
            }
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The precision a caller asks for (`QUARRY_PRECISION`, or `precision` in the `[index]` table
/// of `.quarry/config.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PrecisionChoice {
    /// The fastest precision that keeps search quality ([`PrecisionChoice::AUTO_ORDER`]'s
    /// first that this machine runs): int8 on x86 from AVX2 up and on ARM with the dot
    /// product, then bf16, then
    /// `f32` (always on a GPU).
    #[default]
    Auto,
    /// This precision, or an error where this machine cannot run it.
    Fixed(Precision),
}

impl PrecisionChoice {
    /// The order [`PrecisionChoice::Auto`] tries: fastest first. int8 leads because the
    /// relevance suite finds its vectors as good as `f32`'s (`bench-suite/README.md`).
    pub const AUTO_ORDER: [Precision; 3] = [Precision::Int8, Precision::Bf16, Precision::F32];

    /// The precision this choice runs on `backend`: a GPU computes in `f32` only.
    pub fn resolve(self, backend: BackendChoice) -> Result<Precision, EmbedError> {
        let fastest = Self::AUTO_ORDER
            .into_iter()
            .find(|precision| precision.accelerated())
            .unwrap_or(Precision::F32);
        // Only a CPU that runs a reduced precision needs to know whether a GPU takes over.
        let on_gpu = || crate::backend::picks_gpu(backend);
        match self {
            PrecisionChoice::Auto if fastest == Precision::F32 || on_gpu() => Ok(Precision::F32),
            PrecisionChoice::Auto => Ok(fastest),
            PrecisionChoice::Fixed(Precision::F32) => Ok(Precision::F32),
            PrecisionChoice::Fixed(precision) if on_gpu() => Err(EmbedError::Precision {
                requested: precision,
                message: "the GPU backend computes in f32 only; use f32 or auto".into(),
            }),
            PrecisionChoice::Fixed(precision) if precision.supported() => Ok(precision),
            PrecisionChoice::Fixed(precision) => Err(EmbedError::Precision {
                requested: precision,
                message: format!(
                    "this CPU lacks {}; use f32 or auto (the fastest this CPU runs)",
                    precision.missing()
                ),
            }),
        }
    }
}

impl FromStr for PrecisionChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "auto" {
            return Ok(PrecisionChoice::Auto);
        }
        Precision::ALL
            .into_iter()
            .find(|precision| precision.name() == text)
            .map(PrecisionChoice::Fixed)
            .ok_or_else(|| format!("unknown precision `{text}`; use auto, f32, bf16 or int8"))
    }
}

impl TryFrom<String> for PrecisionChoice {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<PrecisionChoice> for String {
    fn from(choice: PrecisionChoice) -> String {
        choice.to_string()
    }
}

impl fmt::Display for PrecisionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrecisionChoice::Auto => f.write_str("auto"),
            PrecisionChoice::Fixed(precision) => precision.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_read_and_write_their_names() {
        for text in ["auto", "f32", "bf16", "int8"] {
            let choice: PrecisionChoice = text.parse().unwrap();
            assert_eq!(choice.to_string(), text);
        }
        let error = "fp16".parse::<PrecisionChoice>().unwrap_err();
        assert!(error.contains("auto, f32, bf16 or int8"), "{error}");
    }

    #[test]
    fn a_fixed_choice_is_checked_against_this_cpu() {
        for precision in Precision::ALL {
            let resolved = PrecisionChoice::Fixed(precision).resolve(BackendChoice::Cpu);
            match resolved {
                Ok(found) => assert!(found == precision && precision.supported()),
                Err(error) => {
                    assert!(!precision.supported());
                    assert!(error.to_string().contains("this CPU lacks"), "{error}");
                }
            }
        }
    }
}
