//! Relevance cases: a query and the files (optionally line spans) a good answer returns.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::BenchError;

/// A `bench-suite/cases/<corpus>.yaml` file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The corpus the cases query (a name in `corpora.yaml`).
    pub corpus: String,
    /// The cases, in file order.
    pub cases: Vec<Case>,
}

/// One query and its expected answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// `TC-01`...; unique within its corpus.
    pub id: String,
    /// What kind of question it is.
    pub category: Category,
    /// The query, as an agent or a person would type it.
    pub query: String,
    /// The files a good answer must return.
    pub relevant: Vec<Target>,
    /// Files that also count as a good hit, but are not required.
    #[serde(default)]
    pub secondary: Vec<Target>,
    /// The shape of question it was written to test, where it was: reports score each
    /// shape apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
}

impl Case {
    /// Whether the case is held out: about a third of the hand-written cases, chosen by a
    /// seeded hash of corpus and id (so a new case falls on either side without moving the
    /// others), that no tuning run looks at (`--split tuning` leaves them out) and that
    /// reports score apart, so that the suite measures the product rather than what was
    /// tuned on it. A generated doc case is never held out.
    pub fn held_out(&self, corpus: &str) -> bool {
        self.category != Category::Doc
            && crate::stats::Rng::from_key(&format!("held-out/{corpus}/{}", self.id)).below(3) == 0
    }
}

/// Which cases a run scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Split {
    /// Every case.
    #[default]
    All,
    /// The cases tuning may look at.
    Tuning,
    /// The held-out cases alone.
    HeldOut,
}

impl Split {
    /// Whether a case held out or not (`held_out`) belongs to this split.
    pub fn admits(self, held_out: bool) -> bool {
        match self {
            Split::All => true,
            Split::Tuning => !held_out,
            Split::HeldOut => held_out,
        }
    }
}

/// The kind of question a case asks; metrics are reported per category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// A name, bare or qualified: `copy_to_bytes`, `Router::route`.
    Symbol,
    /// A concept in plain words: "retry with exponential backoff".
    Semantic,
    /// "How does X work": an answer that spans files.
    Architecture,
    /// One function described in a user's words, written by hand, with the function's own
    /// comments left in the index (the task users have, beside the generated `doc` family).
    Description,
    /// Generated: a doc comment's words, answered by the function it documents, with the
    /// comment left out of the index (see [`crate::docs`]).
    Doc,
}

impl Category {
    /// The name used in case files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Category::Symbol => "symbol",
            Category::Semantic => "semantic",
            Category::Architecture => "architecture",
            Category::Description => "description",
            Category::Doc => "doc",
        }
    }
}

/// A shape of question where quarry once ranked the wrong file first (issue 41): the cases
/// written for one make it visible in every report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// A concept spread over many chunks of one large file, which is the answer: against a
    /// small sibling with one dense chunk.
    SpreadConcept,
    /// An answer of two files, neither enough alone.
    TwoFiles,
    /// A capitalised type name whose lowercase namesakes (functions, variables, macros)
    /// exist: the type's definition is the answer.
    TypeName,
    /// Code in a large C or C++ header.
    LargeHeader,
    /// A short noun phrase (`connection pool`, `retry backoff`), not a question.
    NounPhrase,
}

impl Shape {
    /// The name used in case files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Shape::SpreadConcept => "spread-concept",
            Shape::TwoFiles => "two-files",
            Shape::TypeName => "type-name",
            Shape::LargeHeader => "large-header",
            Shape::NounPhrase => "noun-phrase",
        }
    }
}

/// A file, or a span of lines in it, that answers a case: written `path` or
/// `path:START-END` (1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// Corpus-relative, `/`-separated.
    pub path: String,
    /// The lines that must be overlapped, when only part of the file answers.
    pub lines: Option<(usize, usize)>,
}

impl Target {
    /// Whether a result chunk at `path`, lines `start..=end`, hits this target.
    pub fn hit_by(&self, path: &str, start: usize, end: usize) -> bool {
        path == self.path
            && self
                .lines
                .is_none_or(|(first, last)| start <= last && first <= end)
    }
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let span = s.rsplit_once(':').and_then(|(path, span)| {
            let (start, end) = span.split_once('-')?;
            Some((
                path,
                start.parse::<usize>().ok()?,
                end.parse::<usize>().ok()?,
            ))
        });
        let target = match span {
            Some((path, start, end)) => {
                if start == 0 || end < start {
                    return Err(format!("{s:?}: lines are 1-based and START <= END"));
                }
                Target {
                    path: path.to_owned(),
                    lines: Some((start, end)),
                }
            }
            None => Target {
                path: s.to_owned(),
                lines: None,
            },
        };
        if target.path.is_empty() || target.path.starts_with('/') || target.path.contains('\\') {
            return Err(format!("{s:?}: expected a corpus-relative path with `/`"));
        }
        Ok(target)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lines {
            Some((start, end)) => write!(f, "{}:{start}-{end}", self.path),
            None => f.write_str(&self.path),
        }
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl CaseFile {
    /// Reads and checks a case file: ids unique, every case with a query and at least one
    /// relevant target.
    pub fn load(path: &Path) -> Result<Self, BenchError> {
        let text = std::fs::read_to_string(path).map_err(|source| BenchError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file: CaseFile = serde_norway::from_str(&text).map_err(|e| BenchError::Yaml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let invalid = |message: String| BenchError::InvalidCases {
            path: path.to_path_buf(),
            message,
        };
        let mut ids = std::collections::HashSet::new();
        for case in &file.cases {
            if !ids.insert(case.id.as_str()) {
                return Err(invalid(format!("the id {} appears twice", case.id)));
            }
            if case.query.trim().is_empty() {
                return Err(invalid(format!("{} has an empty query", case.id)));
            }
            if case.relevant.is_empty() {
                return Err(invalid(format!("{} names no relevant file", case.id)));
            }
            if case.category == Category::Doc {
                return Err(invalid(format!(
                    "{}: the doc category is generated, not written by hand",
                    case.id
                )));
            }
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_and_without_spans() {
        let plain: Target = "src/lib.rs".parse().unwrap();
        assert_eq!(plain.lines, None);
        let span: Target = "src/a:b.rs:10-20".parse().unwrap();
        assert_eq!(
            (span.path.as_str(), span.lines),
            ("src/a:b.rs", Some((10, 20)))
        );
        assert_eq!(span.to_string(), "src/a:b.rs:10-20");
        assert!("src/lib.rs:20-10".parse::<Target>().is_err());
        assert!("src/lib.rs:0-3".parse::<Target>().is_err());
        assert!("/abs/lib.rs".parse::<Target>().is_err());
    }

    #[test]
    fn a_span_is_hit_by_overlapping_chunks_only() {
        let target: Target = "a.rs:10-20".parse().unwrap();
        assert!(target.hit_by("a.rs", 1, 10));
        assert!(target.hit_by("a.rs", 20, 30));
        assert!(!target.hit_by("a.rs", 21, 30));
        assert!(!target.hit_by("b.rs", 10, 20));
        assert!("a.rs".parse::<Target>().unwrap().hit_by("a.rs", 500, 501));
    }

    #[test]
    fn case_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yaml");
        let write = |text: &str| std::fs::write(&path, text).unwrap();
        write(
            "corpus: c\ncases:\n  - {id: TC-01, category: symbol, query: q, relevant: [a.rs:1-2]}\n",
        );
        let file = CaseFile::load(&path).unwrap();
        assert_eq!(file.cases[0].relevant[0].lines, Some((1, 2)));
        for (case, error) in [
            (
                "category: symbol, query: q, relevant: []",
                "TC-01 names no relevant",
            ),
            ("category: vibes, query: q, relevant: [a]", "c.yaml"),
        ] {
            write(&format!("corpus: c\ncases:\n  - {{id: TC-01, {case}}}\n"));
            let message = CaseFile::load(&path).unwrap_err().to_string();
            assert!(message.contains(error), "{message}");
        }
    }
}
