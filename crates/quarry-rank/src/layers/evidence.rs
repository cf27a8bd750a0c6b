//! [`FileEvidence`]: a file that several candidates come from, or whose candidates hold the
//! query's words between them, is likely the answer.

use std::collections::{HashMap, HashSet};

use crate::{
    ConfigError, Effect, LayerKind, Pass, RankError, Ranked, RankingLayer, declaration_files,
};

/// Raises the best chunk of each file by `1 + strength × share`, where `share` is the sum of
/// the file's candidate scores over the largest such sum among the files (1 for the file
/// with the most evidence).
///
/// A file's evidence is often spread over several small chunks (a class and its methods, a
/// module's helpers), none of which scores high alone while two chunks of a wrong file fill
/// the top. Only the best chunk is raised, so the file climbs without flooding the results;
/// a file with one strong chunk still gets its share.
///
/// The boost is then multiplied by `1 + coverage × covered`, where `covered` is the share of
/// the query's keywords that the file's candidates hold between them (each keyword weighted
/// by how few of the candidates' files hold it): a large file that answers a question across
/// several chunks overtakes a small sibling whose one chunk repeats one of its words.
///
/// A declaration and its implementation are one file's evidence when both are candidates
/// and the query names no symbol ([`declaration_files`]: `x.h` and `x.c`, `x.d.ts` and
/// `x.ts`): their scores and words count together, and only the implementation's best chunk
/// is raised. A header's comments hold a question's words more densely than the code that
/// does what it asks; a name asked for may be defined in either, so a symbol query keeps
/// each file apart.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEvidence {
    strength: f32,
    coverage: f32,
}

impl FileEvidence {
    /// A boost of up to `strength` for evidence and up to `coverage` for the query's words
    /// (each finite, at least 0).
    pub fn new(strength: f32, coverage: f32) -> Result<Self, ConfigError> {
        let strength = super::strength("file_evidence", strength)?;
        let coverage = super::strength("file_coverage", coverage)?;
        Ok(Self { strength, coverage })
    }
}

impl RankingLayer for FileEvidence {
    fn kind(&self) -> LayerKind {
        LayerKind::FileEvidence
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        // Only positive evidence counts; in ranking order, so the first of a file is its best.
        let list = &*pass.list;
        let implementations = match pass.query.symbol() {
            Some(_) => HashMap::new(),
            None => implementations(list),
        };
        let mut sums: HashMap<&str, f32> = HashMap::new();
        for ranked in list {
            *sums
                .entry(unit(&implementations, ranked.candidate.path.as_str()))
                .or_default() += ranked.score.max(0.0);
        }
        let largest = sums.values().copied().fold(0.0_f32, f32::max);
        if largest <= 0.0 {
            return Ok(());
        }
        let shares: Vec<Option<f32>> = {
            let mut seen: HashSet<&str> = HashSet::new();
            list.iter()
                .map(|ranked| {
                    let path = ranked.candidate.path.as_str();
                    (unit(&implementations, path) == path && seen.insert(path))
                        .then(|| sums[path] / largest)
                })
                .collect()
        };
        let coverage = match self.coverage > 0.0 {
            true => coverage_of(pass.query.keywords(), list, &implementations),
            false => HashMap::new(),
        };
        let covers: Vec<f32> = list
            .iter()
            .map(|ranked| {
                let path = ranked.candidate.path.as_str();
                coverage.get(path).copied().unwrap_or(0.0)
            })
            .collect();
        pass.scale_each(|index, _| {
            let share = shares[index]?;
            let covered = covers[index];
            let factor = (1.0 + self.strength * share) * (1.0 + self.coverage * covered);
            Some((
                factor,
                Effect::FileEvidence {
                    share,
                    covered,
                    factor,
                },
            ))
        });
        Ok(())
    }
}

/// Each file's share of the query's keywords that its candidates hold between them (in their
/// text or its path), each keyword weighted by how few of the candidates' files hold it: a
/// large file that answers a question across several chunks covers what a small file's one
/// dense chunk does not.
fn coverage_of<'a>(
    keywords: &[String],
    list: &'a [Ranked],
    implementations: &HashMap<&'a str, &'a str>,
) -> HashMap<&'a str, f32> {
    // A bit a keyword; a query's first 64 are plenty.
    // Found as substrings of the lowercased text: a light stem is a prefix of its words,
    // once a final `i` (`dependency` gives `dependenci`) is dropped.
    let needles: Vec<&str> = (keywords.iter().take(64))
        .map(|k| match k.len() > 4 {
            true => k.strip_suffix('i').unwrap_or(k),
            false => k,
        })
        .collect();
    let mut masks: HashMap<&str, u64> = HashMap::new();
    for ranked in list {
        let candidate = &ranked.candidate;
        let text = candidate.text.to_ascii_lowercase();
        let path = candidate.path.to_ascii_lowercase();
        let mask = (needles.iter().enumerate())
            .filter(|(_, needle)| text.contains(**needle) || path.contains(**needle))
            .fold(0u64, |mask, (i, _)| mask | 1 << i);
        *masks
            .entry(unit(implementations, candidate.path.as_str()))
            .or_default() |= mask;
    }
    let files = masks.len() as f32;
    let weights: Vec<f32> = (0..needles.len())
        .map(|i| {
            let holding = masks.values().filter(|mask| *mask & 1 << i != 0).count() as f32;
            match holding > 0.0 {
                true => (1.0 + files / holding).ln(),
                false => 0.0,
            }
        })
        .collect();
    let total: f32 = weights.iter().sum();
    if total <= 0.0 {
        return HashMap::new();
    }
    masks
        .into_iter()
        .map(|(path, mask)| {
            let held: f32 = (weights.iter().enumerate())
                .filter(|(i, _)| mask & 1 << i != 0)
                .map(|(_, weight)| weight)
                .sum();
            (path, held / total)
        })
        .collect()
}

/// The file whose evidence a chunk of `path` adds to: its own, or, for a declaration, its
/// implementation's.
fn unit<'a>(implementations: &HashMap<&'a str, &'a str>, path: &'a str) -> &'a str {
    implementations.get(path).copied().unwrap_or(path)
}

/// Each declaration among the candidates whose implementation is one too, with that
/// implementation (the best ranked, if a header has two).
fn implementations(list: &[Ranked]) -> HashMap<&str, &str> {
    let paths: HashSet<&str> = list.iter().map(|r| r.candidate.path.as_str()).collect();
    let mut implementations = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    // Each file once, in ranking order (a file has many chunks among the candidates).
    for ranked in list {
        let path = ranked.candidate.path.as_str();
        if !seen.insert(path) {
            continue;
        }
        for declaration in declaration_files(path) {
            if let Some(&declaration) = paths.get(declaration.as_str()) {
                implementations.entry(declaration).or_insert(path);
            }
        }
    }
    implementations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::{candidate, outline, run};
    use crate::{QueryTerms, apply_chain};
    use quarry_chunk::StoredChunk;

    #[test]
    fn a_file_with_more_evidence_overtakes_a_single_strong_chunk() {
        let input = [
            ("src/wrong.rs", 1, 0.60),
            ("src/right.rs", 1, 0.55),
            ("src/right.rs", 20, 0.50),
            ("src/right.rs", 40, 0.45),
        ];
        let ranking = run(FileEvidence::new(0.3, 0.0).unwrap(), "", &input);
        let order = outline(&ranking);
        assert_eq!(order[0].0, "src/right.rs", "{order:?}");
        assert_eq!(order[0].1, 1);
        // Only the best chunk of each file is raised.
        assert_eq!(ranking.summary.layers[0].adjusted, 2);
        let right_second = ranking
            .results
            .iter()
            .find(|r| r.candidate.path == "src/right.rs" && r.candidate.start_line == 20)
            .unwrap();
        assert!(right_second.explanation.steps.is_empty());
    }

    #[test]
    fn a_header_s_evidence_raises_its_implementation() {
        let input = [
            ("src/codec.h", 10, 0.60),
            ("src/codec.h", 40, 0.50),
            ("src/codec.c", 100, 0.50),
            ("src/other.c", 1, 0.55),
        ];
        // A question: the header's and the source's chunks are one file's evidence (1.6,
        // the largest), which raises the source's best chunk alone.
        let ranking = run(
            FileEvidence::new(1.0, 0.0).unwrap(),
            "how are codecs chosen",
            &input,
        );
        let order = outline(&ranking);
        assert_eq!(order[0], ("src/codec.c", 100, 1.0), "{order:?}");
        assert_eq!(order[1], ("src/other.c", 1, 0.7391), "{order:?}");
        assert_eq!(order[2], ("src/codec.h", 10, 0.6), "{order:?}");
        // A symbol may be defined in the header: each file keeps its own evidence.
        let ranking = run(FileEvidence::new(1.0, 0.0).unwrap(), "codec_init", &input);
        let order = outline(&ranking);
        assert_eq!(order[0], ("src/codec.h", 10, 1.2), "{order:?}");
    }

    #[test]
    fn a_file_whose_chunks_hold_the_query_between_them_overtakes_one_dense_chunk() {
        let chunk = |path: &str, line: usize, text: &str, score: f32| {
            let text = text.to_owned();
            (
                StoredChunk {
                    text,
                    ..candidate(path, line)
                },
                score,
            )
        };
        // The small sibling's chunk holds one of the question's words, twice; the large
        // file's chunks hold the rest between them, none of them scoring high alone.
        let input = vec![
            chunk("src/retry_policy.rs", 1, "fn retry() { retry() }", 0.60),
            chunk(
                "src/client.rs",
                1,
                "fn send(request) { connection.write() }",
                0.50,
            ),
            chunk(
                "src/client.rs",
                30,
                "fn retry_after(status) { backoff }",
                0.40,
            ),
            chunk("src/client.rs", 60, "fn timeout() { deadline }", 0.30),
        ];
        let query = QueryTerms::of("how does the client retry a request after a timeout");
        let rank = |layer: FileEvidence| {
            let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(layer)];
            let ranking = apply_chain(&layers, &query, input.clone()).unwrap();
            (ranking.results.into_iter())
                .map(|r| (r.candidate.path, r.candidate.start_line))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            rank(FileEvidence::new(0.0, 0.0).unwrap())[0].0,
            "src/retry_policy.rs"
        );
        let order = rank(FileEvidence::new(0.0, 0.5).unwrap());
        assert_eq!(order[0], ("src/client.rs".into(), 1), "{order:?}");
        assert!(FileEvidence::new(0.2, -0.5).is_err());
    }

    #[test]
    fn zero_strength_changes_nothing_and_bad_values_are_refused() {
        let input = [("src/a.rs", 1, 0.6), ("src/b.rs", 1, 0.5)];
        let ranking = run(FileEvidence::new(0.0, 0.0).unwrap(), "", &input);
        assert!(
            ranking
                .results
                .iter()
                .all(|r| r.explanation.steps.is_empty())
        );
        assert!(FileEvidence::new(-1.0, 0.0).is_err());
        assert!(FileEvidence::new(f32::NAN, 0.0).is_err());
    }
}
