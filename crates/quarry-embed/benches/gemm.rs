//! The linear layers' GEMM on MiniLM's shapes (a batch of 32 texts of 256 tokens: 8,192 rows),
//! quarry's packed kernels (`f32` and int8, at this CPU's level or the one `QUARRY_CPU` caps it
//! to) against Burn's `flex` matmul in the same run. Throughput is in operations (2·m·k·n per
//! product).

use burn::tensor::{Device, Tensor, TensorData};
use criterion::{Criterion, Throughput};
use quarry_embed::gemm::{Kernel, PackedLinear};

/// (name, rows, inputs, outputs): the fused query-key-value projection, the feed-forward
/// layer's expansion and its contraction.
const SHAPES: [(&str, usize, usize, usize); 3] = [
    ("qkv 8192x384x1152", 8192, 384, 1152),
    ("up 8192x384x1536", 8192, 384, 1536),
    ("down 8192x1536x384", 8192, 1536, 384),
];

fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                / (1 << 24) as f32
                - 0.5
        })
        .collect()
}

fn gemm(c: &mut Criterion) {
    let device = Device::flex();
    for (name, m, k, n) in SHAPES {
        let mut group = c.benchmark_group(name);
        group.sample_size(10);
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        let x = values(m * k, 1);
        let w = values(k * n, 2);
        let bias = values(n, 3);
        if let Some(packed) = PackedLinear::new(&w, Some(&bias), k, n) {
            let level = packed.simd().level();
            let mut out = vec![0.0; m * n];
            for (kernel, name) in [(Kernel::F32, "f32"), (Kernel::Int8, "int8")] {
                group.bench_function(format!("quarry {level} {name}"), |b| {
                    b.iter(|| packed.forward_into(&x, &mut out, kernel))
                });
            }
        }
        let xt = Tensor::<2>::from_data(TensorData::new(x.clone(), [m, k]), &device);
        let wt = Tensor::<2>::from_data(TensorData::new(w.clone(), [k, n]), &device);
        group.bench_function("burn flex matmul", |b| {
            b.iter(|| xt.clone().matmul(wt.clone()).into_data())
        });
        group.finish();
    }
}

// What `criterion_group!`/`criterion_main!` expand to, minus an undocumented `pub fn`.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    gemm(&mut criterion);
    criterion.final_summary();
}
