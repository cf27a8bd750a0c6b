//! Drift: how far a re-indexed file's chunks moved from what the index held before.

use std::collections::HashMap;

use crate::dot::dot;
use crate::records::Drift;

/// A chunk as drift sees it: its text decides identity, its vector closeness.
pub(crate) struct DriftChunk<'a> {
    pub text: &'a str,
    pub vector: &'a [f32],
}

/// Pairs `before` with `after`: identical texts first, then greedily by best cosine
/// similarity; what is left unpaired on either side counts 1.
pub(crate) fn drift(path: &str, before: &[DriftChunk<'_>], after: &[DriftChunk<'_>]) -> Drift {
    let mut unpaired_before: Vec<usize> = Vec::new();
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, chunk) in after.iter().enumerate() {
        by_text.entry(chunk.text).or_default().push(i);
    }
    let mut paired_after = vec![false; after.len()];
    let mut drifts: Vec<f32> = Vec::new();
    for (i, chunk) in before.iter().enumerate() {
        match by_text.get_mut(chunk.text).and_then(Vec::pop) {
            Some(j) => {
                paired_after[j] = true;
                drifts.push(0.0);
            }
            None => unpaired_before.push(i),
        }
    }
    let unpaired_after: Vec<usize> = (0..after.len()).filter(|&j| !paired_after[j]).collect();

    let mut candidates: Vec<(f32, usize, usize)> = unpaired_before
        .iter()
        .flat_map(|&i| {
            unpaired_after
                .iter()
                .map(move |&j| (dot(before[i].vector, after[j].vector), i, j))
        })
        .collect();
    // Best similarity first; indexes break ties so the pairing is deterministic.
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut used_before = vec![false; before.len()];
    let mut used_after = vec![false; after.len()];
    for (similarity, i, j) in candidates {
        if !used_before[i] && !used_after[j] {
            used_before[i] = true;
            used_after[j] = true;
            drifts.push((1.0 - similarity).clamp(0.0, 1.0));
        }
    }
    let pairs = drifts.len();
    let unpaired = before.len() + after.len() - 2 * pairs;
    drifts.extend(std::iter::repeat_n(1.0, unpaired));

    let average = if drifts.is_empty() {
        0.0
    } else {
        drifts.iter().sum::<f32>() / drifts.len() as f32
    };
    Drift {
        path: path.to_owned(),
        average,
        max: drifts.iter().copied().fold(0.0, f32::max),
        chunks_before: before.len(),
        chunks_after: after.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk<'a>(text: &'a str, vector: &'a [f32]) -> DriftChunk<'a> {
        DriftChunk { text, vector }
    }

    #[test]
    fn identical_chunks_do_not_drift() {
        let v = [1.0, 0.0];
        let d = drift("a", &[chunk("x", &v)], &[chunk("x", &v)]);
        assert_eq!((d.average, d.max), (0.0, 0.0));
    }

    #[test]
    fn edited_chunks_drift_by_their_cosine_and_unpaired_ones_count_one() {
        let (a, b, c) = ([1.0, 0.0], [0.8, 0.6], [0.0, 1.0]);
        // "x" moved to b (cosine 0.8); "y" is new and unpaired.
        let d = drift(
            "a",
            &[chunk("x", &a), chunk("same", &c)],
            &[chunk("x2", &b), chunk("same", &c), chunk("y", &c)],
        );
        assert!((d.max - 1.0).abs() < 1e-6);
        assert!((d.average - (0.0 + 0.2 + 1.0) / 3.0).abs() < 1e-6, "{d:?}");
        assert_eq!((d.chunks_before, d.chunks_after), (2, 3));
    }

    #[test]
    fn pairing_prefers_the_closest_partner() {
        let (a, near_a, b, near_b) = ([1.0, 0.0], [0.99, 0.141], [0.0, 1.0], [0.141, 0.99]);
        let d = drift(
            "a",
            &[chunk("1", &a), chunk("2", &b)],
            &[chunk("3", &near_b), chunk("4", &near_a)],
        );
        assert!(d.max < 0.02, "{d:?}");
    }
}
