//! The SIMD level the host encoder runs at: AVX-512, AVX2 or NEON, as
//! [`quarry_kernels::level`] picks it (the highest the CPU has, capped by `QUARRY_CPU`).
//!
//! The host kernels ([`crate::gemm`], [`crate::attention`]) are written once, generic over
//! pulp's [`Simd`]; [`on_host_simd!`] turns a [`HostSimd`] into that generic call, with the
//! level's instructions enabled. At the scalar level there is no host encoder: the model
//! runs on Burn's generic CPU path.

use pulp::Simd;
use quarry_kernels::Level;

/// A SIMD level the host kernels run at, with the proof that the CPU has it.
#[derive(Debug, Clone, Copy)]
pub enum HostSimd {
    /// x86-64-v4: sixteen `f32` lanes, 32 registers.
    #[cfg(target_arch = "x86_64")]
    Avx512(pulp::x86::V4),
    /// x86-64-v3: eight `f32` lanes, 16 registers.
    #[cfg(target_arch = "x86_64")]
    Avx2(pulp::x86::V3),
    /// aarch64's Advanced SIMD: four `f32` lanes, 32 registers.
    #[cfg(target_arch = "aarch64")]
    Neon(pulp::aarch64::Neon),
}

impl HostSimd {
    /// The level this process runs at ([`quarry_kernels::level`]), or `None` at scalar.
    pub fn detect() -> Option<Self> {
        Self::at(quarry_kernels::level())
    }

    /// `level`, where this CPU has it and the host has kernels for it.
    pub fn at(level: Level) -> Option<Self> {
        match level {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => pulp::x86::V4::try_new().map(HostSimd::Avx512),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => pulp::x86::V3::try_new().map(HostSimd::Avx2),
            #[cfg(target_arch = "aarch64")]
            Level::Neon => pulp::aarch64::Neon::try_new().map(HostSimd::Neon),
            _ => None,
        }
    }

    /// Every level this process may run with host kernels (up to the cap), lowest first:
    /// what the tests run each kernel on.
    pub fn available() -> Vec<Self> {
        Level::available()
            .into_iter()
            .filter_map(Self::at)
            .collect()
    }

    /// The level, as `QUARRY_CPU` names it.
    pub fn level(self) -> Level {
        match self {
            #[cfg(target_arch = "x86_64")]
            HostSimd::Avx512(_) => Level::Avx512,
            #[cfg(target_arch = "x86_64")]
            HostSimd::Avx2(_) => Level::Avx2,
            #[cfg(target_arch = "aarch64")]
            HostSimd::Neon(_) => Level::Neon,
        }
    }
}

/// What the host GEMM needs to know of a level beyond pulp's [`Simd`].
pub trait Lanes: Simd {
    /// Rows of the GEMM's output block: `ROWS × 2` accumulators, two vectors of weights and
    /// a broadcast input fit the level's registers.
    const ROWS: usize;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for pulp::x86::V4 {
    const ROWS: usize = 14;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for pulp::x86::V3 {
    const ROWS: usize = 6;
}

#[cfg(target_arch = "aarch64")]
impl Lanes for pulp::aarch64::Neon {
    const ROWS: usize = 14;
}

/// `$body` with `$simd` bound to `$host`'s level (a type implementing [`Lanes`]), compiled
/// once a level with its instructions enabled: a generic closure over the levels.
macro_rules! on_host_simd {
    ($host:expr, $simd:ident => $body:expr) => {
        match $host {
            #[cfg(target_arch = "x86_64")]
            $crate::simd::HostSimd::Avx512($simd) => pulp::Simd::vectorize(
                $simd,
                #[inline(always)]
                || $body,
            ),
            #[cfg(target_arch = "x86_64")]
            $crate::simd::HostSimd::Avx2($simd) => pulp::Simd::vectorize(
                $simd,
                #[inline(always)]
                || $body,
            ),
            #[cfg(target_arch = "aarch64")]
            $crate::simd::HostSimd::Neon($simd) => pulp::Simd::vectorize(
                $simd,
                #[inline(always)]
                || $body,
            ),
        }
    };
}
pub(crate) use on_host_simd;
