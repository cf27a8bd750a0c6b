//! The [`Level`] as pulp's safe SIMD types: code written once, generic over pulp's `Simd`,
//! runs at the level [`crate::level`] picks through [`on_host_simd!`](crate::on_host_simd)
//! (quarry-embed's `f32` kernels, quarry-store's dot product). At the scalar level there is
//! no [`HostSimd`]: callers keep their plain code.

use crate::Level;

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
    /// The level this process runs at ([`crate::level`]), or `None` at scalar.
    pub fn detect() -> Option<Self> {
        Self::at(crate::level())
    }

    /// `level`, where this CPU has it and the host has kernels for it.
    pub fn at(level: Level) -> Option<Self> {
        match level {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => pulp::x86::V4::try_new().map(HostSimd::Avx512),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 | Level::AvxVnni => pulp::x86::V3::try_new().map(HostSimd::Avx2),
            #[cfg(target_arch = "aarch64")]
            Level::Neon => pulp::aarch64::Neon::try_new().map(HostSimd::Neon),
            _ => None,
        }
    }

    /// Every level this process may run with pulp's types (up to the cap), lowest first, each
    /// once (AVX-VNNI's level runs the AVX2 level's): what the tests run each kernel on.
    pub fn available() -> Vec<Self> {
        let mut available: Vec<Self> = Level::available()
            .into_iter()
            .filter_map(Self::at)
            .collect();
        available.dedup_by_key(|simd| simd.level());
        available
    }

    /// The level whose registers it computes in, as `QUARRY_CPU` names it (AVX2's for the
    /// AVX-VNNI level too: [`crate::level`] says which of the two a process runs).
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

/// `$body` with `$simd` bound to the pulp type of `$host`'s level (a [`HostSimd`]), compiled
/// once a level with its instructions enabled: a closure generic over the levels.
#[macro_export]
macro_rules! on_host_simd {
    ($host:expr, $simd:ident => $body:expr) => {
        match $host {
            #[cfg(target_arch = "x86_64")]
            $crate::HostSimd::Avx512($simd) => $crate::pulp::Simd::vectorize(
                $simd,
                #[inline(always)]
                || $body,
            ),
            #[cfg(target_arch = "x86_64")]
            $crate::HostSimd::Avx2($simd) => $crate::pulp::Simd::vectorize(
                $simd,
                #[inline(always)]
                || $body,
            ),
            #[cfg(target_arch = "aarch64")]
            $crate::HostSimd::Neon($simd) => $crate::pulp::Simd::vectorize(
                $simd,
                #[inline(always)]
                || $body,
            ),
        }
    };
}
