//! [`PathPenalty`]: lower tests, vendored, generated... code by a factor per class.

use serde::{Deserialize, Serialize};

use super::penalty;
use crate::path::{about_prose, about_tests, classify};
use crate::{ConfigError, Effect, LayerKind, Pass, PathClass, RankError, RankingLayer};

/// What to do with test code (tests, fixtures, mocks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IncludeTests {
    /// Penalise it, unless the query is about tests or every candidate is test code.
    #[default]
    Auto,
    /// Rank it like any other code.
    Always,
    /// Drop it.
    Never,
}

/// The factor each [`PathClass`] multiplies a score by, in `(0, 1]`.
///
/// The defaults are starting points, to be tuned on the relevance benchmark: strong enough
/// that a test or vendored chunk must match clearly better than a source chunk to stay above
/// it, mild for examples and prose, which are sometimes the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PenaltyFactors {
    /// Tests (0.3): they repeat the names they test, so they match well and crowd results.
    pub test: f32,
    /// Test data (0.5): rarely the code anyone looks for.
    pub fixture: f32,
    /// Test doubles (0.6): sometimes the fake is what a query about an interface wants.
    pub mock: f32,
    /// Generated code (0.5): not where a change would be made.
    pub generated: f32,
    /// Vendored code (0.5): someone else's.
    pub vendored: f32,
    /// Minified files (0.3): unreadable even when they match.
    pub minified: f32,
    /// Examples and demos (0.8): sometimes what a user wants to see.
    pub example: f32,
    /// Prose (0.5), unless the query asks for documentation.
    pub docs: f32,
}

impl Default for PenaltyFactors {
    fn default() -> Self {
        Self {
            test: 0.3,
            fixture: 0.5,
            mock: 0.6,
            generated: 0.5,
            vendored: 0.5,
            minified: 0.3,
            example: 0.8,
            docs: 0.5,
        }
    }
}

impl PenaltyFactors {
    /// The factor for `class`.
    pub fn get(&self, class: PathClass) -> f32 {
        match class {
            PathClass::Test => self.test,
            PathClass::Fixture => self.fixture,
            PathClass::Mock => self.mock,
            PathClass::Generated => self.generated,
            PathClass::Vendored => self.vendored,
            PathClass::Minified => self.minified,
            PathClass::Example => self.example,
            PathClass::Docs => self.docs,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        penalty("penalties.test", self.test)?;
        penalty("penalties.fixture", self.fixture)?;
        penalty("penalties.mock", self.mock)?;
        penalty("penalties.generated", self.generated)?;
        penalty("penalties.vendored", self.vendored)?;
        penalty("penalties.minified", self.minified)?;
        penalty("penalties.example", self.example)?;
        penalty("penalties.docs", self.docs)?;
        Ok(())
    }
}

/// Multiplies the score of a chunk whose file is in a [`PathClass`] by that class's
/// factor; a file in several classes (`vendor/x/dist/x.min.js`) gets each factor once.
///
/// - Test code (tests, fixtures, mocks) follows [`IncludeTests`]. With `Auto` it is
///   penalised unless the query is about tests (it names `test`, `spec`, `fixture`,
///   `mock`, `stub`, `assert`...) or no candidate is outside test code.
/// - Prose is penalised unless the query asks for documentation: it names `readme`,
///   `docs`, `guide`, `install`, `changelog`, `license`... and no identifier-like token
///   (`parse_config`, `fs::read`, `run()`) or code word (`function`, `struct`...). A question
///   about how the code works wants the code, not the README that describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPenalty {
    factors: PenaltyFactors,
    include_tests: IncludeTests,
}

impl PathPenalty {
    /// A penalty with these factors, each in `(0, 1]`.
    pub fn new(factors: PenaltyFactors, include_tests: IncludeTests) -> Result<Self, ConfigError> {
        factors.validate()?;
        Ok(Self {
            factors,
            include_tests,
        })
    }
}

impl RankingLayer for PathPenalty {
    fn kind(&self) -> LayerKind {
        LayerKind::PathPenalty
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        if self.include_tests == IncludeTests::Never {
            pass.keep_where(|_, ranked| !classify(&ranked.candidate).has_test_code());
        }
        let classes: Vec<_> = pass.list.iter().map(|r| classify(&r.candidate)).collect();
        let penalise_tests = match self.include_tests {
            IncludeTests::Always => false,
            // Whatever test code was there is gone.
            IncludeTests::Never => true,
            IncludeTests::Auto => {
                let has_tests = classes.iter().any(|c| c.has_test_code());
                if has_tests && about_tests(pass.query.text()) {
                    pass.report
                        .notes
                        .push("test code not penalised: the query is about tests".into());
                    false
                } else if has_tests && classes.iter().all(|c| c.only_test_code()) {
                    pass.report
                        .notes
                        .push("test code not penalised: every candidate is test code".into());
                    false
                } else {
                    true
                }
            }
        };
        let penalise_docs = !about_prose(pass.query.text());
        let has_prose = classes
            .iter()
            .any(|c| c.iter().any(|c| c == PathClass::Docs));
        if !penalise_docs && has_prose && self.factors.docs != 1.0 {
            pass.report
                .notes
                .push("prose not penalised: the query asks for documentation".into());
        }
        pass.scale_each(|index, _| {
            let applied: Vec<PathClass> = classes[index]
                .iter()
                .filter(|class| match class {
                    class if class.is_test_code() => penalise_tests,
                    PathClass::Docs => penalise_docs,
                    _ => true,
                })
                .filter(|&class| self.factors.get(class) != 1.0)
                .collect();
            let factor = applied.iter().map(|&c| self.factors.get(c)).product();
            let effect = Effect::Penalised {
                classes: applied,
                factor,
            };
            Some((factor, effect))
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::{outline, run};

    fn layer(include_tests: IncludeTests) -> PathPenalty {
        PathPenalty::new(PenaltyFactors::default(), include_tests).unwrap()
    }

    const MIXED: &[(&str, usize, f32)] = &[
        ("tests/parse.rs", 1, 0.9),
        ("vendor/x/parse.go", 1, 0.8),
        ("src/parse.rs", 1, 0.7),
        ("README.md", 1, 0.6),
    ];

    #[test]
    fn auto_penalises_tests_and_vendored_code_below_source() {
        let ranking = run(layer(IncludeTests::Auto), "parse config", MIXED);
        assert_eq!(
            outline(&ranking),
            [
                ("src/parse.rs", 1, 0.7),
                ("vendor/x/parse.go", 1, 0.4),
                ("README.md", 1, 0.3),
                ("tests/parse.rs", 1, 0.27),
            ]
        );
        let test = &ranking.results[3].explanation;
        assert_eq!(test.retrieval_score, 0.9);
        assert_eq!(
            test.steps[0].effect,
            Effect::Penalised {
                classes: vec![PathClass::Test],
                factor: 0.3
            }
        );
        assert_eq!(ranking.summary.layers[0].adjusted, 3);
    }

    #[test]
    fn a_query_about_tests_lifts_the_test_penalty() {
        let ranking = run(layer(IncludeTests::Auto), "tests for parse", MIXED);
        assert_eq!(ranking.results[0].candidate.path, "tests/parse.rs");
        assert_eq!(ranking.results[0].score, 0.9);
        assert_eq!(
            ranking.summary.layers[0].notes,
            ["test code not penalised: the query is about tests"]
        );
    }

    #[test]
    fn auto_leaves_tests_alone_when_there_is_nothing_else() {
        let only_tests = [
            ("tests/a.rs", 1, 0.9),
            ("src/a_test.go", 1, 0.8),
            ("testdata/in.go", 1, 0.7),
        ];
        let ranking = run(layer(IncludeTests::Auto), "parse", &only_tests);
        assert_eq!(outline(&ranking), only_tests);
        assert!(
            ranking
                .results
                .iter()
                .all(|r| r.explanation.steps.is_empty())
        );
    }

    #[test]
    fn always_ranks_tests_like_code_and_never_drops_them() {
        let ranking = run(layer(IncludeTests::Always), "parse", MIXED);
        assert_eq!(ranking.results[0].candidate.path, "tests/parse.rs");
        assert_eq!(ranking.results[0].score, 0.9);

        let ranking = run(layer(IncludeTests::Never), "tests for parse", MIXED);
        assert!(
            ranking
                .results
                .iter()
                .all(|r| r.candidate.path != "tests/parse.rs")
        );
        assert_eq!(
            ranking.summary.layers[0].dropped_per_file,
            [("tests/parse.rs".to_string(), 1)].into()
        );
    }

    #[test]
    fn prose_is_penalised_unless_the_query_asks_for_documentation() {
        let input = [("docs/guide.md", 1, 0.8), ("src/config.rs", 1, 0.7)];
        let prose = run(layer(IncludeTests::Auto), "how do I install it", &input);
        assert_eq!(prose.results[0].candidate.path, "docs/guide.md");
        assert_eq!(
            prose.summary.layers[0].notes,
            ["prose not penalised: the query asks for documentation"]
        );
        for query in ["load_config", "how is the configuration loaded"] {
            let code = run(layer(IncludeTests::Auto), query, &input);
            assert_eq!(
                outline(&code),
                [("src/config.rs", 1, 0.7), ("docs/guide.md", 1, 0.4)]
            );
        }
    }

    #[test]
    fn classes_multiply_and_factors_of_one_leave_no_trace() {
        let factors = PenaltyFactors {
            generated: 0.5,
            vendored: 0.5,
            minified: 1.0,
            ..PenaltyFactors::default()
        };
        let layer = PathPenalty::new(factors, IncludeTests::Auto).unwrap();
        let ranking = run(layer, "x", &[("node_modules/x/dist/x.min.js", 1, 0.8)]);
        assert_eq!(ranking.results[0].score, 0.2);
        assert_eq!(
            ranking.results[0].explanation.steps[0].effect,
            Effect::Penalised {
                classes: vec![PathClass::Generated, PathClass::Vendored],
                factor: 0.25
            }
        );
    }

    #[test]
    fn factors_outside_zero_to_one_are_refused() {
        for value in [0.0, -0.5, 1.5, f32::NAN] {
            let factors = PenaltyFactors {
                mock: value,
                ..PenaltyFactors::default()
            };
            let error = PathPenalty::new(factors, IncludeTests::Auto).unwrap_err();
            assert!(error.to_string().contains("penalties.mock"), "{error}");
        }
    }
}
