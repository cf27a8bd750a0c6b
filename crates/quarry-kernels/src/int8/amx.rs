//! The AMX form (Intel since Sapphire Rapids): a block's sums on AMX's tile registers,
//! `tdpbusd` on 64 depths of up to 16 rows by 16 columns at a time (AVX-512 VNNI's
//! `vpdpbusd` does 16 columns by 4 depths), then AVX-512's rescale. The same exact `i32`
//! sums, so the same results to the bit. Depths in whole tiles only (multiples of 64, as
//! every layer of the encoder's); the rows' quantisation and other depths are AVX-512's.
//!
//! The tile instructions are written in `asm!` (their intrinsics are not stable): no Rust
//! code uses the tile registers, so they need no operands or clobbers of their own.

use std::arch::asm;
use std::arch::x86_64::_mm512_setzero_si512;
use std::marker::PhantomData;
use std::sync::OnceLock;

use super::{Block, avx512};
use crate::NR;

/// The panel's steps (four depths each) one tile product takes: 64 depths, a tile row of 64
/// bytes.
pub(super) const STEPS: usize = 16;

/// Whether this CPU has AMX's tiles and int8 products and the OS has given this process
/// their state (Linux asks each process to request it). Found once, then cached.
pub(crate) fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        // CPUID leaf 7 (present: the caller has detected AVX-512, which it describes):
        // EDX bit 24 is AMX-TILE, bit 25 AMX-INT8.
        let features = std::arch::x86_64::__cpuid_count(7, 0).edx;
        features >> 24 & 1 == 1 && features >> 25 & 1 == 1 && request_tile_data()
    })
}

/// Asks Linux for the tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`):
/// every thread of the process may use the tiles once it has been given.
#[cfg(target_os = "linux")]
fn request_tile_data() -> bool {
    const SYS_ARCH_PRCTL: isize = 158;
    const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
    const XFEATURE_XTILEDATA: usize = 18;
    let result: isize;
    // SAFETY: the system call takes its two arguments in registers and reads or writes no
    // memory of this process; it returns in rax and, as every `syscall`, overwrites rcx and
    // r11. A kernel without AMX support returns an error, and the tiles stay unused.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL => result,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags),
        );
    }
    result == 0
}

/// Other systems: the tiles stay unused (none of them runs on a CPU with AMX but Windows,
/// whose support is not written).
#[cfg(not(target_os = "linux"))]
fn request_tile_data() -> bool {
    false
}

/// The tile configuration `ldtilecfg` reads (palette 1): each tile's rows and bytes a row.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    bytes_per_row: [u16; 16],
    rows: [u8; 16],
}

/// The most rows of a block: two tiles' (16 each).
pub(super) const ROWS: usize = 32;

/// The tiles, configured for a block's rows, split into a top half (up to 16 rows) and a
/// bottom half (the rest): tiles 0 and 1 hold the top rows' sums for the panel's two halves
/// (16 `i32` a row), tiles 2 and 3 the bottom rows', tiles 4 and 5 the top and bottom rows'
/// lanes (64 bytes a row), tiles 6 and 7 the two half-panels' weights (16 steps of 16 columns
/// of four bytes). Four products a step share two loads of lanes and two of weights. Made
/// only where AMX is [`enabled`]; lives on one thread (a tile configuration is a thread's), and
/// is released when dropped.
pub(super) struct Tiles {
    /// The rows the tiles are configured for; 0 before the first block.
    rows: usize,
    not_send: PhantomData<*const ()>,
}

impl Tiles {
    /// Tiles for the products of one call. The caller has found `Int8Isa::Amx`, so AMX is
    /// [`enabled`] and AVX-512 VNNI detected.
    pub(super) fn new() -> Self {
        debug_assert!(enabled());
        Self {
            rows: 0,
            not_send: PhantomData,
        }
    }

    /// Configures the tiles for blocks of `rows` rows (1 to [`ROWS`]), unless they already
    /// are; a bottom half of no rows leaves its tiles unconfigured (unused).
    fn configure(&mut self, rows: usize) {
        if self.rows == rows {
            return;
        }
        let (top, bottom) = halves(rows);
        let mut config = TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            bytes_per_row: [0; 16],
            rows: [0; 16],
        };
        let tile_rows = [top, top, bottom, bottom, top, bottom, STEPS, STEPS];
        for (tile, rows) in tile_rows.into_iter().enumerate() {
            config.bytes_per_row[tile] = if rows > 0 { 64 } else { 0 };
            config.rows[tile] = rows as u8;
        }
        // SAFETY: `Tiles` exist only where AMX is enabled for this process; `config` is a
        // valid palette-1 configuration (at most 16 rows of at most 64 bytes a tile), 64
        // bytes, read and not kept.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &config, options(nostack, readonly)) };
        self.rows = rows;
    }

    /// One block of the output: `rows` rows (1 to [`ROWS`], checked by the caller) by the
    /// panel, its depth in whole tiles (`b.len()` a multiple of [`STEPS`]), for the columns of
    /// `out`'s last row (row stride `ldc`).
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) fn block(&mut self, block: &Block<'_>, out: &mut [f32], ldc: usize, rows: usize) {
        let steps = block.b.len();
        assert!(
            steps.is_multiple_of(STEPS) && block.a.len() == rows * steps && rows <= ROWS,
            "whole tiles of at most {ROWS} rows"
        );
        self.configure(rows);
        let bottom = halves(rows).1;
        // SAFETY: the tiles are configured (above), the bottom half's where it has rows;
        // zeroing the sums' tiles touches no memory.
        unsafe { asm!("tilezero tmm0", "tilezero tmm1", options(nomem, nostack)) };
        if bottom > 0 {
            // SAFETY: as above.
            unsafe { asm!("tilezero tmm2", "tilezero tmm3", options(nomem, nostack)) };
        }
        let (a_stride, b_stride) = (steps * 4, NR * 4);
        for first in (0..steps).step_by(STEPS) {
            // Tile 4 reads the top rows' 64 bytes from `a[first..]`, a row every `steps`
            // lanes, and tile 5 the bottom rows' from 16 rows on: the last row read ends at
            // `(rows - 1) · steps + first + 16 <= rows · steps`. Tiles 6 and 7 read 16 of the
            // panel's steps from `b[first..]`, the first and the last 64 bytes of each 128:
            // within `b`, since `first + 16 <= steps`.
            let (a, b) = (&block.a[first..], &block.b[first..first + STEPS]);
            debug_assert!((rows - 1) * steps + STEPS <= a.len());
            if bottom == 0 {
                // SAFETY: the tiles are configured for `rows` rows, all in the top half; the
                // loads read within `a` and `b` as shown above, and the products write only
                // tiles 0 and 1.
                unsafe {
                    asm!(
                        "tileloadd tmm4, [{a} + {a_stride}*1]",
                        "tileloadd tmm6, [{b} + {b_stride}*1]",
                        "tileloadd tmm7, [{b} + {b_stride}*1 + 64]",
                        "tdpbusd tmm0, tmm4, tmm6",
                        "tdpbusd tmm1, tmm4, tmm7",
                        a = in(reg) a.as_ptr(),
                        a_stride = in(reg) a_stride,
                        b = in(reg) b.as_ptr(),
                        b_stride = in(reg) b_stride,
                        options(nostack, readonly),
                    );
                }
            } else {
                let a_bottom = &a[16 * steps..];
                // SAFETY: the tiles are configured for `rows` rows, 16 on top and the rest at
                // the bottom; the loads read within `a` and `b` as shown above, and the
                // products write only tiles 0 to 3.
                unsafe {
                    asm!(
                        "tileloadd tmm4, [{a} + {a_stride}*1]",
                        "tileloadd tmm5, [{a_bottom} + {a_stride}*1]",
                        "tileloadd tmm6, [{b} + {b_stride}*1]",
                        "tileloadd tmm7, [{b} + {b_stride}*1 + 64]",
                        "tdpbusd tmm0, tmm4, tmm6",
                        "tdpbusd tmm1, tmm4, tmm7",
                        "tdpbusd tmm2, tmm5, tmm6",
                        "tdpbusd tmm3, tmm5, tmm7",
                        a = in(reg) a.as_ptr(),
                        a_bottom = in(reg) a_bottom.as_ptr(),
                        a_stride = in(reg) a_stride,
                        b = in(reg) b.as_ptr(),
                        b_stride = in(reg) b_stride,
                        options(nostack, readonly),
                    );
                }
            }
        }
        // A row's 32 sums in two registers, as AVX-512's rescale takes them.
        let mut sums = [[_mm512_setzero_si512(); 2]; ROWS];
        /// Stores the sum tiles `$left` and `$right` (a half's rows by the panel's two halves)
        /// to `$to`, 128 bytes a row.
        macro_rules! store_sums {
            ($left:literal, $right:literal, $to:expr) => {
                asm!(
                    concat!("tilestored [{c} + {stride}*1], ", $left),
                    concat!("tilestored [{c} + {stride}*1 + 64], ", $right),
                    c = in(reg) $to,
                    stride = in(reg) NR * 4,
                    options(nostack),
                )
            };
        }
        // SAFETY: the tiles are configured for the top half's rows (16 at most) of 16 `i32`;
        // they are written to the first and the second half of `sums`' first rows.
        unsafe { store_sums!("tmm0", "tmm1", sums.as_mut_ptr()) };
        if bottom > 0 {
            // SAFETY: as above, the bottom half's rows (16 at most) to `sums`' rows from 16.
            unsafe { store_sums!("tmm2", "tmm3", sums[16..].as_mut_ptr()) };
        }
        avx512::rescale(block, &sums[..rows], out, ldc);
    }
}

/// A block's rows in the top half's tiles (16 at most) and the bottom half's (the rest).
fn halves(rows: usize) -> (usize, usize) {
    let top = rows.min(16);
    (top, rows - top)
}

impl Drop for Tiles {
    fn drop(&mut self) {
        if self.rows > 0 {
            // SAFETY: releasing the configured tiles returns them to their initial state;
            // it touches no memory.
            unsafe { asm!("tilerelease", options(nomem, nostack)) };
        }
    }
}
