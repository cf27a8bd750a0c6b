//! PageRank by power iteration, as networkx computes it.

use petgraph::graph::DiGraph;
use serde::{Deserialize, Serialize};

use crate::{FileKey, GraphError};

/// How PageRank iterates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageRankConfig {
    /// The probability of following an edge rather than jumping (networkx's `alpha`).
    pub damping: f64,
    /// Iteration stops once the scores move less than this in total (L1 norm).
    pub tolerance: f64,
    /// Iteration stops here even if the scores still move ([`PageRank::converged`]
    /// says so).
    pub max_iterations: usize,
}

impl Default for PageRankConfig {
    /// Damping 0.85; tolerance 1e-10, tight enough that scores are within ~1e-9 of
    /// the fixed point (the error is at most damping / (1 − damping) ≈ 5.7 times
    /// the last step); at most 1,000 iterations, where ~150 reach the tolerance even
    /// at the slowest rate damping allows.
    fn default() -> Self {
        PageRankConfig {
            damping: 0.85,
            tolerance: 1e-10,
            max_iterations: 1000,
        }
    }
}

/// Scores by node index, and how the iteration ended.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRank {
    /// One score per node, in node-index order; they sum to 1.
    pub scores: Vec<f64>,
    /// How many iterations ran.
    pub iterations: usize,
    /// Whether the tolerance was reached before the iteration cap.
    pub converged: bool,
}

/// PageRank of a directed graph, teleporting uniformly.
///
/// The same iteration as networkx's `pagerank`: start from the uniform vector; each
/// step, every node passes `damping` of its score along its out-edges in equal
/// shares (parallel edges count once each, self-loops count), the scores of dangling
/// nodes (no out-edges) are spread like the teleport, and `1 − damping` is
/// teleported.
///
/// ```
/// use petgraph::graph::DiGraph;
/// use quarry_graph::{PageRankConfig, pagerank};
///
/// // a → c, b → c: c ranks first, a and b tie.
/// let graph = DiGraph::<(), ()>::from_edges([(0, 2), (1, 2)]);
/// let rank = pagerank(&graph, &PageRankConfig::default());
/// assert!(rank.converged);
/// assert!(rank.scores[2] > rank.scores[0]);
/// assert!((rank.scores.iter().sum::<f64>() - 1.0).abs() < 1e-12);
/// ```
pub fn pagerank<N, E>(graph: &DiGraph<N, E>, config: &PageRankConfig) -> PageRank {
    let n = graph.node_count();
    power_iteration(graph, &vec![1.0 / n as f64; n], config)
}

/// Personalised PageRank: teleports (and spreads dangling nodes' scores) in
/// proportion to `weights`, one per node, as networkx's `pagerank(personalization=…)`
/// does. Scores then measure closeness to the weighted nodes.
///
/// # Errors
///
/// [`GraphError::BadWeights`] unless there is one finite, non-negative weight per
/// node and they have a positive sum.
pub fn personalized_pagerank<N, E>(
    graph: &DiGraph<N, E>,
    weights: &[f64],
    config: &PageRankConfig,
) -> Result<PageRank, GraphError> {
    let n = graph.node_count();
    let sum: f64 = weights.iter().sum();
    let valid = weights.len() == n
        && weights.iter().all(|w| w.is_finite() && *w >= 0.0)
        && sum > 0.0
        && sum.is_finite();
    if !valid {
        return Err(GraphError::BadWeights { nodes: n });
    }
    let teleport: Vec<f64> = weights.iter().map(|w| w / sum).collect();
    Ok(power_iteration(graph, &teleport, config))
}

fn power_iteration<N, E>(
    graph: &DiGraph<N, E>,
    teleport: &[f64],
    config: &PageRankConfig,
) -> PageRank {
    let n = graph.node_count();
    // Incoming edges by target (compressed rows), so each step is a pull in a fixed
    // order: deterministic sums.
    let mut out_degree = vec![0u32; n];
    let mut in_count = vec![0usize; n + 1];
    for edge in graph.raw_edges() {
        out_degree[edge.source().index()] += 1;
        in_count[edge.target().index() + 1] += 1;
    }
    for i in 0..n {
        in_count[i + 1] += in_count[i];
    }
    let offsets = in_count;
    let mut sources = vec![0u32; graph.edge_count()];
    let mut fill = offsets.clone();
    for edge in graph.raw_edges() {
        let target = edge.target().index();
        sources[fill[target]] = edge.source().index() as u32;
        fill[target] += 1;
    }

    let alpha = config.damping;
    let mut scores = vec![1.0 / n as f64; n];
    let mut next = vec![0.0; n];
    let mut share = vec![0.0; n];
    let mut iterations = 0;
    let mut converged = n == 0;
    while !converged && iterations < config.max_iterations {
        iterations += 1;
        let mut dangling = 0.0;
        for i in 0..n {
            if out_degree[i] == 0 {
                dangling += scores[i];
                share[i] = 0.0;
            } else {
                share[i] = scores[i] / f64::from(out_degree[i]);
            }
        }
        let mut change = 0.0;
        for j in 0..n {
            let incoming: f64 = sources[offsets[j]..offsets[j + 1]]
                .iter()
                .map(|&s| share[s as usize])
                .sum();
            next[j] = alpha * (incoming + dangling * teleport[j]) + (1.0 - alpha) * teleport[j];
            change += (next[j] - scores[j]).abs();
        }
        std::mem::swap(&mut scores, &mut next);
        converged = change < config.tolerance;
    }
    PageRank {
        scores,
        iterations,
        converged,
    }
}

/// A file's PageRank and where it stands among the graph's files.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FileScore {
    /// The PageRank; all files' scores sum to 1.
    pub score: f64,
    /// The percentage of the other files that score lower: 100 for the top file, 0
    /// for the lowest (ties share the lower value; a lone file has 100).
    pub percentile: f64,
    /// The [`RESOLUTION_VERSION`](crate::RESOLUTION_VERSION) of the graph ranked (0: one
    /// stored before versions were).
    #[serde(default)]
    pub resolution: u32,
}

/// Every file's [`FileScore`], sorted by key; serialisable as a whole, or file by
/// file through [`PageRanking::iter`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageRanking {
    files: Vec<(FileKey, FileScore)>,
    iterations: usize,
    converged: bool,
}

/// Scores closer than this (relative) are ties: the iteration leaves differences of
/// that order between files that are equally central.
const TIE: f64 = 1e-9;

impl PageRanking {
    /// `keys` and `rank.scores` in the same (sorted) order.
    pub(crate) fn new(keys: impl IntoIterator<Item = FileKey>, rank: PageRank) -> PageRanking {
        let n = rank.scores.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| rank.scores[a].total_cmp(&rank.scores[b]));
        let mut percentiles = vec![100.0; n];
        let mut tie_start = 0;
        for (position, &i) in order.iter().enumerate() {
            let first = rank.scores[order[tie_start]];
            if rank.scores[i] - first > TIE * rank.scores[i].abs() {
                tie_start = position;
            }
            if n > 1 {
                percentiles[i] = 100.0 * tie_start as f64 / (n - 1) as f64;
            }
        }
        let files = keys
            .into_iter()
            .zip(rank.scores.iter().zip(percentiles))
            .map(|(key, (&score, percentile))| {
                let resolution = crate::RESOLUTION_VERSION;
                (
                    key,
                    FileScore {
                        score,
                        percentile,
                        resolution,
                    },
                )
            })
            .collect();
        PageRanking {
            files,
            iterations: rank.iterations,
            converged: rank.converged,
        }
    }

    /// The score of the file `key`.
    pub fn get(&self, key: &FileKey) -> Option<FileScore> {
        self.files
            .binary_search_by(|(k, _)| k.cmp(key))
            .ok()
            .map(|i| self.files[i].1)
    }

    /// Every file with its score, by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&FileKey, FileScore)> {
        self.files.iter().map(|(key, score)| (key, *score))
    }

    /// The `n` best-scoring files, best first (ties by key).
    pub fn top(&self, n: usize) -> Vec<(&FileKey, FileScore)> {
        let mut files: Vec<_> = self.iter().collect();
        files.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then_with(|| a.0.cmp(b.0)));
        files.truncate(n);
        files
    }

    /// How many files are ranked.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is ranked.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// How many iterations PageRank ran.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// Whether PageRank reached its tolerance within the iteration cap.
    pub fn converged(&self) -> bool {
        self.converged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<FileKey> {
        (0..n)
            .map(|i| FileKey::try_from(format!("f{i}")).unwrap())
            .collect()
    }

    #[test]
    fn percentiles_share_ties_and_span_0_to_100() {
        let rank = PageRank {
            scores: vec![0.1, 0.4, 0.1, 0.3, 0.1 + 1e-14],
            iterations: 1,
            converged: true,
        };
        let ranking = PageRanking::new(keys(5), rank);
        let percentiles: Vec<f64> = ranking.iter().map(|(_, s)| s.percentile).collect();
        assert_eq!(percentiles, [0.0, 100.0, 0.0, 75.0, 0.0]);
        let top: Vec<&str> = ranking.top(2).iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(top, ["f1", "f3"]);
    }

    #[test]
    fn a_lone_file_is_at_the_top() {
        let graph = DiGraph::<(), ()>::from_edges([(0, 0)]);
        let ranking = PageRanking::new(keys(1), pagerank(&graph, &PageRankConfig::default()));
        let (_, score) = ranking.iter().next().unwrap();
        assert_eq!((score.score, score.percentile), (1.0, 100.0));
    }

    #[test]
    fn an_empty_graph_has_no_scores() {
        let rank = pagerank(&DiGraph::<(), ()>::new(), &PageRankConfig::default());
        assert!(rank.scores.is_empty() && rank.converged);
    }

    #[test]
    fn the_cap_stops_iteration() {
        let graph = DiGraph::<(), ()>::from_edges([(0, 1), (1, 2), (2, 0), (2, 1)]);
        let config = PageRankConfig {
            max_iterations: 3,
            ..PageRankConfig::default()
        };
        let rank = pagerank(&graph, &config);
        assert_eq!((rank.iterations, rank.converged), (3, false));
        assert!((rank.scores.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bad_weights_are_refused() {
        let graph = DiGraph::<(), ()>::from_edges([(0, 1)]);
        let config = PageRankConfig::default();
        for weights in [
            &[1.0][..],
            &[0.0, 0.0],
            &[-1.0, 2.0],
            &[f64::NAN, 1.0],
            &[f64::INFINITY, 1.0],
        ] {
            assert_eq!(
                personalized_pagerank(&graph, weights, &config),
                Err(GraphError::BadWeights { nodes: 2 }),
                "{weights:?}"
            );
        }
    }
}
