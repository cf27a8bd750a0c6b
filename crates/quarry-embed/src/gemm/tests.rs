use super::*;

/// A deterministic matrix of values in [-1, 1).
fn matrix(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// [`PackedLinear::forward_serial_into`] into a fresh vector.
fn serial(packed: &PackedLinear, x: &[f32], kernel: Kernel) -> Vec<f32> {
    let mut out = vec![0.0; packed.output_len(x)];
    packed.forward_serial_into(x, &mut out, kernel);
    out
}

/// [`PackedLinear::forward_into`] into a fresh vector.
fn parallel(packed: &PackedLinear, x: &[f32], kernel: Kernel) -> Vec<f32> {
    let mut out = vec![0.0; packed.output_len(x)];
    packed.forward_into(x, &mut out, kernel);
    out
}

/// The host levels this machine runs (capped by `QUARRY_CPU`), each test's loop; a test
/// with none says so ([`quarry_kernels::skipped`]).
pub(crate) fn levels(test: &str) -> Vec<HostSimd> {
    let levels = HostSimd::available();
    if levels.is_empty() {
        quarry_kernels::skipped(test, "a SIMD level with host kernels (AVX2, AVX-512, NEON)");
    }
    levels
}

#[test]
fn the_scalar_level_has_no_packed_layers() {
    assert_eq!(
        PackedLinear::new(&[0.0; 4], None, 2, 2).is_some(),
        HostSimd::detect().is_some()
    );
}

#[test]
fn matches_a_plain_product_on_ragged_shapes() {
    // Rows past a sliver and a task's block, columns past a panel, odd depths.
    let shapes = [(1, 3, 5), (13, 17, 33), (100, 64, 96), (200, 384, 40)];
    for (simd, (m, k, n)) in levels("gemm::matches_a_plain_product_on_ragged_shapes")
        .into_iter()
        .flat_map(|simd| shapes.map(|shape| (simd, shape)))
    {
        let x = matrix(m * k, 1);
        let w = matrix(k * n, 2);
        let bias = matrix(n, 3);
        let packed = PackedLinear::with_simd(simd, &w, Some(&bias), k, n);
        let out = packed.forward(&x);
        for i in 0..m {
            for j in 0..n {
                let expected: f64 = f64::from(bias[j])
                    + (0..k)
                        .map(|t| f64::from(x[i * k + t]) * f64::from(w[t * n + j]))
                        .sum::<f64>();
                let found = f64::from(out[i * n + j]);
                assert!(
                    (found - expected).abs() < 1e-4 * (k as f64).sqrt(),
                    "{simd:?}, {m}×{k}×{n} at ({i}, {j}): {found} against {expected}"
                );
            }
        }
    }
}

#[test]
fn a_row_comes_out_the_same_whatever_rows_share_its_sliver() {
    let (k, n) = (64, 40);
    let x = matrix(MR * k, 7);
    for simd in levels("gemm::a_row_comes_out_the_same_whatever_rows_share_its_sliver") {
        let packed = PackedLinear::with_simd(simd, &matrix(k * n, 8), Some(&matrix(n, 9)), k, n);
        let full = serial(&packed, &x, Kernel::F32);
        for m in 1..MR {
            let part = serial(&packed, &x[..m * k], Kernel::F32);
            assert_eq!(part, full[..m * n], "{simd:?}, {m} rows");
        }
    }
}

#[test]
fn half_precision_weights_come_close_and_out_of_range_ones_fall_back() {
    let (k, n) = (384, 100);
    let bias = matrix(n, 12);
    for simd in levels("gemm::half_precision_weights_come_close_and_out_of_range_ones_fall_back") {
        let mut w = matrix(k * n, 11);
        let product = |w: &[f32], x: &[f32], precision| {
            let packed = PackedLinear::with_simd(simd, w, Some(&bias), k, n);
            parallel(&packed, x, precision)
        };
        // Only AVX-512 widens f16 as it loads; the other levels read the f32 panels.
        let widens = simd.level() == quarry_kernels::Level::Avx512;
        // A query's few rows, and rows past a sliver.
        for m in [3, 20] {
            let x = matrix(m * k, 10);
            let (full, half) = (
                product(&w, &x, Kernel::F32),
                product(&w, &x, Kernel::F16Weights),
            );
            assert_eq!(
                full == half,
                !widens,
                "{simd:?}, {m} rows: which panels were read"
            );
            for (a, b) in full.iter().zip(&half) {
                // f16 keeps 11 significant bits: each of 384 terms off by 2^-12 at most.
                assert!((a - b).abs() < 384.0 / 4096.0, "{m} rows: {a} against {b}");
            }
        }
        w[5] = 1e6;
        let x = matrix(3 * k, 10);
        assert_eq!(
            product(&w, &x, Kernel::F32),
            product(&w, &x, Kernel::F16Weights),
            "a weight past f16's range keeps the f32 panels"
        );
    }
}

#[test]
fn half_precision_panels_round_to_nearest_even() {
    // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties to the even 1.
    let panels = [
        1.0,
        1.0 + 1.0 / 2048.0,
        1.0 + 3.0 / 2048.0,
        -2.5,
        65504.0,
        0.0,
    ];
    let half = to_half(&panels).unwrap();
    assert_eq!(half, [0x3c00, 0x3c00, 0x3c02, 0xc100, 0x7bff, 0]);
    assert_eq!(to_half(&[1e5]), None, "past f16's largest finite value");
}

#[test]
fn reduced_precision_kernels_come_close_and_split_by_columns_to_the_bit() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let (k, n) = (384, 100);
    let Some(packed) = PackedLinear::new(&matrix(k * n, 11), Some(&matrix(n, 12)), k, n) else {
        quarry_kernels::skipped("gemm::reduced_precision_kernels", "a host SIMD level");
        return;
    };
    for (kernel, supported, bound) in [
        // bfloat16 keeps 8 significant bits of each factor: 384 terms off by 2^-8 at most.
        (
            Kernel::Bf16,
            quarry_kernels::bf16_supported(),
            384.0 / 256.0,
        ),
        // int8: a 255th of the input's range and a 254th of the column's largest weight;
        // on every CPU (in portable integer arithmetic where it has no dot product).
        (Kernel::Int8, true, 384.0 / 127.0),
    ] {
        if !supported {
            let needs = format!("{kernel:?}'s instructions");
            quarry_kernels::skipped("gemm::reduced_precision_kernels", &needs);
            continue;
        }
        for m in [3, 20, 300] {
            let x = matrix(m * k, 10);
            let full = parallel(&packed, &x, Kernel::F32);
            let reduced = parallel(&packed, &x, kernel);
            for (a, b) in full.iter().zip(&reduced) {
                assert!(
                    (a - b).abs() < bound,
                    "{kernel:?}, {m} rows: {a} against {b}"
                );
            }
            let split = pool.install(|| parallel(&packed, &x, kernel));
            assert_eq!(split, reduced, "{kernel:?}, {m} rows, 3 threads");
            assert_eq!(
                serial(&packed, &x, kernel),
                reduced,
                "{kernel:?}, {m} rows, serial"
            );
        }
    }
}

#[test]
fn a_few_rows_split_by_columns_match_the_row_split_product_to_the_bit() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let test = "gemm::a_few_rows_split_by_columns_match_the_row_split_product_to_the_bit";
    for simd in levels(test) {
        for (m, k, n) in [(1, 3, 5), (5, 384, 1152), (14, 64, 200), (2, 17, 33)] {
            let x = matrix(m * k, 4);
            let packed =
                PackedLinear::with_simd(simd, &matrix(k * n, 5), Some(&matrix(n, 6)), k, n);
            let split = pool.install(|| packed.forward(&x));
            assert_eq!(
                split,
                serial(&packed, &x, Kernel::F32),
                "{simd:?}, {m}×{k}×{n}"
            );
        }
    }
}
