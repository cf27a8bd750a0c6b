//! How the weights are laid out for the micro-kernels: `G` consecutive values of the depth
//! share one 32-bit lane (two bf16, four int8), the first in the lowest bits. The inputs keep
//! their rows, in lanes of the same kind (see each kernel's `rows_to_lanes`).

use crate::NR;

/// A `k × n` weight given by its rows (`row(i)`, `n` values each) as panels of [`NR`]
/// columns: panel `p` is `k.div_ceil(G)` steps of `NR` lanes, lane `c` of step `s` holding
/// `encode(w[s·G + t][p·NR + c], column)` for `t` in `0..G` in its `t`-th `32 / G` bits.
/// Columns past `n` and depths past `k` are 0.
pub(crate) fn panels<'a, const G: usize>(
    row: impl Fn(usize) -> &'a [f32],
    k: usize,
    n: usize,
    encode: impl Fn(f32, usize) -> u32,
) -> Vec<[u32; NR]> {
    let bits = 32 / G;
    let steps = k.div_ceil(G);
    let mut panels = vec![[0u32; NR]; n.div_ceil(NR) * steps];
    for s in 0..steps {
        // Each of the step's rows fetched once, then read along.
        for t in 0..G.min(k - s * G) {
            let values = row(s * G + t);
            assert_eq!(values.len(), n, "rows of {n} values");
            for (column, &value) in values.iter().enumerate() {
                let lane = &mut panels[column / NR * steps + s][column % NR];
                *lane |= encode(value, column) << (t * bits);
            }
        }
    }
    panels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_put_pairs_of_depths_in_a_lane_and_pad_with_zeros() {
        // 3 × 33: two panels, two steps (the second half empty).
        let (k, n) = (3, 33);
        let weight: Vec<f32> = (0..k * n).map(|i| i as f32).collect();
        let panels = panels::<2>(|i| &weight[i * n..(i + 1) * n], k, n, |w, _| w as u32 + 1);
        assert_eq!(panels.len(), 4);
        // Panel 0, step 0, column 5: rows 0 and 1.
        assert_eq!(panels[0][5], (5 + 1) | ((n as u32 + 5 + 1) << 16));
        // Panel 0, step 1, column 5: row 2 only.
        assert_eq!(panels[1][5], 2 * n as u32 + 5 + 1);
        // Panel 1 holds column 32 and zeros.
        assert_eq!(panels[2][0], (32 + 1) | ((n as u32 + 32 + 1) << 16));
        assert_eq!(panels[2][1], 0);
    }
}
