//! Which instruction-set level this process computes at: the highest the CPU has, capped by
//! `QUARRY_CPU` (as oneDNN's `ONEDNN_MAX_CPU_ISA` caps its kernels), so that one machine can
//! run, test and measure every lower level.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// An instruction-set level the host encoder has kernels for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// No host kernels: the encoder runs on Burn's generic CPU path.
    Scalar,
    /// x86-64-v3: AVX2 and FMA (most x86 laptops and desktops).
    Avx2,
    /// x86-64-v3 with AVX-VNNI's 256-bit dot product (Intel since Alder Lake, AMD since
    /// Zen 5): the AVX2 level's kernels, and its int8 products on `vpdpbusd`.
    AvxVnni,
    /// x86-64-v4: AVX-512 F, BW, CD, DQ and VL.
    Avx512,
    /// aarch64's Advanced SIMD (every 64-bit ARM CPU).
    Neon,
}

impl Level {
    /// Every level, as `QUARRY_CPU` names them.
    pub const ALL: [Level; 5] = [
        Level::Scalar,
        Level::Avx2,
        Level::AvxVnni,
        Level::Avx512,
        Level::Neon,
    ];

    /// Its name in `QUARRY_CPU`, `quarry model info` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::AvxVnni => "avxvnni",
            Level::Avx512 => "avx512",
            Level::Neon => "neon",
        }
    }

    /// The levels this architecture has, lowest first.
    fn ladder() -> &'static [Level] {
        if cfg!(target_arch = "x86_64") {
            &[Level::Scalar, Level::Avx2, Level::AvxVnni, Level::Avx512]
        } else if cfg!(target_arch = "aarch64") {
            &[Level::Scalar, Level::Neon]
        } else {
            &[Level::Scalar]
        }
    }

    /// Whether this CPU has the level's instructions (whatever the cap).
    pub fn detected(self) -> bool {
        match self {
            Level::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Level::AvxVnni => {
                Level::Avx2.detected() && std::arch::is_x86_feature_detected!("avxvnni")
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => {
                Level::Avx2.detected()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512cd")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "aarch64")]
            Level::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The cap `QUARRY_CPU` sets, if any; an error names the levels this build knows.
    pub fn cap_from_env() -> Result<Option<Level>, String> {
        match std::env::var("QUARRY_CPU") {
            Ok(value) if !value.is_empty() => value.parse().map(Some),
            _ => Ok(None),
        }
    }

    /// The levels this process may run: those the CPU has, up to the cap, lowest first
    /// (a CPU may have AVX-512 without AVX-VNNI, as AMD's Zen 4 does). Tests run each;
    /// [`level`] is the last.
    pub fn available() -> Vec<Level> {
        let ladder = Level::ladder();
        // No cap: the whole ladder; another architecture's level: scalar alone.
        let top = match Level::cap_from_env().ok().flatten() {
            Some(cap) => ladder.iter().position(|&level| level == cap).unwrap_or(0),
            None => ladder.len() - 1,
        };
        ladder[..=top]
            .iter()
            .copied()
            .filter(|level| level.detected())
            .collect()
    }
}

/// The level this process computes at: the highest this CPU has, capped by `QUARRY_CPU`
/// (`scalar`, `avx2`, `avxvnni`, `avx512` or `neon`; a cap above the CPU changes nothing, a name of
/// another architecture's level caps at scalar, and an unknown name is ignored here: the
/// embedder refuses it, see [`Level::cap_from_env`]). Read once, then cached.
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        *Level::available()
            .last()
            .expect("scalar is always available")
    })
}

/// Records that `test` did not run for want of `needs` on this CPU (or under its cap):
/// printed, and appended to the file `QUARRY_SKIPPED_TESTS` names, where CI counts them. A
/// test that cannot run says so here rather than passing without checking anything.
/// A test that skips many cases (a property test) is recorded once.
pub fn skipped(test: &str, needs: &str) {
    use std::io::Write;
    static RECORDED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut recorded = RECORDED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if recorded.iter().any(|name| name == test) {
        return;
    }
    recorded.push(test.to_owned());
    let line = format!("skipped {test}: needs {needs} (level {})", level());
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("QUARRY_SKIPPED_TESTS") {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| writeln!(file, "{line}"));
        if let Err(error) = appended {
            eprintln!(
                "cannot record the skipped test in {}: {error}",
                path.display()
            );
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Level {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Level::ALL
            .into_iter()
            .find(|level| level.name() == text)
            .ok_or_else(|| {
                let names = Level::ALL.map(Level::name).join(", ");
                format!("unknown instruction-set level `{text}`; use one of {names}")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_and_write_their_names() {
        for level in Level::ALL {
            assert_eq!(level.name().parse::<Level>(), Ok(level));
        }
        let error = "sse4".parse::<Level>().unwrap_err();
        assert!(
            error.contains("`sse4`; use one of scalar, avx2, avxvnni, avx512, neon"),
            "{error}"
        );
    }

    #[test]
    fn the_level_in_use_is_the_highest_available() {
        let available = Level::available();
        assert_eq!(available[0], Level::Scalar);
        assert_eq!(available.last(), Some(&level()));
        assert!(available.iter().all(|level| level.detected()));
    }
}
