//! [`Definition`] and [`PathMatch`]: the query's own words in a chunk's symbol or its file's
//! name are strong evidence that the chunk is the answer.

use quarry_text::{file_stem, identifiers, stem, words};

use super::boost;
use crate::query::{is_namesake, normalise, segments};
use crate::{ConfigError, Effect, LayerKind, Pass, RankError, Ranked, RankingLayer};

/// Raises the chunks that define the symbol a query names over those that merely mention it.
///
/// A chunk defines `name` when its symbol is `name` (compared without case and `_`, so
/// `parse_config` finds `parseConfig`), unless it is only a namesake of a capitalised name
/// ([`is_namesake`]: the function `list` for `List`). When the whole query is the identifier
/// ([`QueryTerms::symbol`](crate::QueryTerms::symbol)), a definition is scaled by `factor`; when the query qualifies it
/// (`Router::merge`, `pl.tablex.deepcompare`) and the qualifier names neither an enclosing
/// symbol nor the file, by `√factor` only. Identifiers inside a query in words
/// ([`QueryTerms::identifiers`](crate::QueryTerms::identifiers)) earn the square root of what they would alone: the query
/// may only mention them. Where the caller's definitions table resolved the query
/// ([`QueryTerms::with_definitions`](crate::QueryTerms::with_definitions)), the chunks it resolved to are the definitions raised,
/// whatever their own names.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    factor: f32,
}

impl Definition {
    /// A boost by `factor`, finite and at least 1.
    pub fn new(factor: f32) -> Result<Self, ConfigError> {
        let factor = boost("definition_boost", factor)?;
        Ok(Self { factor })
    }
}

/// A symbol the query asks for.
struct Wanted {
    /// The name as written.
    asked: String,
    /// The name, normalised.
    name: String,
    /// The segment before it, normalised, if the query qualified it.
    qualifier: Option<String>,
    /// The boost of a fully matched definition.
    factor: f32,
}

impl Wanted {
    fn of(segments: &[String], factor: f32) -> Option<Self> {
        let (name, before) = segments.split_last()?;
        Some(Wanted {
            asked: name.clone(),
            name: normalise(name),
            qualifier: before.last().map(|q| normalise(q)),
            factor,
        })
    }

    /// The factor for `ranked`, if it defines this symbol.
    fn factor(&self, ranked: &Ranked) -> Option<f32> {
        let candidate = &ranked.candidate;
        let name = candidate.name.as_deref()?;
        if normalise(name) != self.name || is_namesake(&self.asked, name, candidate.kind) {
            return None;
        }
        let Some(qualifier) = &self.qualifier else {
            return Some(self.factor);
        };
        let in_container = candidate.container.iter().any(|container| {
            identifiers(container).any(|(s, e)| normalise(&container[s..e]) == *qualifier)
        });
        let in_file = normalise(file_stem(&candidate.path)) == *qualifier;
        Some(match in_container || in_file {
            true => self.factor,
            false => self.factor.sqrt(),
        })
    }
}

impl RankingLayer for Definition {
    fn kind(&self) -> LayerKind {
        LayerKind::Definition
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        let terms = pass.query;
        let wanted: Vec<Wanted> = match terms.symbol() {
            Some(segments) => Wanted::of(segments, self.factor).into_iter().collect(),
            None => terms
                .identifiers()
                .iter()
                .filter_map(|identifier| Wanted::of(&segments(identifier)?, self.factor.sqrt()))
                .collect(),
        };
        // Where the caller's definitions table resolved the query, its definitions are the
        // ones raised (it knows their kinds and qualifiers better than a chunk's name does:
        // a class rather than its constructors, the namespace asked for rather than another
        // language's class of that name).
        let resolved = match terms.symbol() {
            Some(_) => self.factor,
            None => self.factor.sqrt(),
        };
        pass.scale_each(|_, ranked| {
            let factor = match terms.has_definitions() {
                true => terms.resolves_to(ranked.candidate.id).then_some(resolved),
                false => wanted
                    .iter()
                    .filter_map(|w| w.factor(ranked))
                    .max_by(f32::total_cmp),
            }?;
            Some((factor, Effect::Defines { factor }))
        });
        Ok(())
    }
}

/// Raises chunks whose file is named after the query's words: `1 + strength × share`, where
/// `share` is the fraction of the query's [`keywords`](crate::QueryTerms::keywords) found among the
/// words of the file's name and its directory's (`src/routing/router.rs`: `routing`,
/// `router`). Words match when their stems are equal or one begins the other and both have
/// four letters or more (`config` and `configuration`).
///
/// Developers name files after the concept inside; a question about that concept often uses
/// the same words, which in the file's text may appear only once or not at all.
///
/// A file's extension names its language too: where the query names the chunk's language
/// ([`QueryTerms::languages`](crate::QueryTerms::languages): `the C++ messages`, `the Rust
/// crate`), the chunk is raised by `1 + language` more. In a repository of several
/// languages (a library with bindings), that is what the question sets apart; in a
/// repository of one, every chunk of code is raised alike.
#[derive(Debug, Clone, PartialEq)]
pub struct PathMatch {
    strength: f32,
    language: f32,
}

impl PathMatch {
    /// A boost of up to `strength` for the file's name, and of `language` for its language
    /// (both finite, at least 0).
    pub fn new(strength: f32, language: f32) -> Result<Self, ConfigError> {
        let strength = super::strength("path_match", strength)?;
        let language = super::strength("language_match", language)?;
        Ok(Self { strength, language })
    }
}

impl RankingLayer for PathMatch {
    fn kind(&self) -> LayerKind {
        LayerKind::PathMatch
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        let keywords = match self.strength {
            0.0 => &[][..],
            _ => pass.query.keywords(),
        };
        let languages = match self.language {
            0.0 => &[][..],
            _ => pass.query.languages(),
        };
        if keywords.is_empty() && languages.is_empty() {
            return Ok(());
        }
        let mut by_path: std::collections::HashMap<String, Vec<String>> =
            std::collections::HashMap::new();
        pass.scale_each(|_, ranked| {
            let mut matched = by_path
                .entry(ranked.candidate.path.clone())
                .or_insert_with(|| matched_keywords(keywords, &ranked.candidate.path))
                .clone();
            let mut factor =
                1.0 + self.strength * matched.len() as f32 / keywords.len().max(1) as f32;
            if let Some((word, _)) = languages
                .iter()
                .find(|(_, language)| *language == ranked.candidate.language)
            {
                matched.push(word.clone());
                factor *= 1.0 + self.language;
            }
            if matched.is_empty() {
                return None;
            }
            let effect = Effect::PathMatch {
                words: matched,
                factor,
            };
            Some((factor, effect))
        });
        Ok(())
    }
}

/// The keywords found among the words of the file's name and its directory's.
fn matched_keywords(keywords: &[String], path: &str) -> Vec<String> {
    let (dirs, _) = path.rsplit_once('/').unwrap_or(("", path));
    let parent = dirs.rsplit('/').next().unwrap_or("");
    let names: Vec<String> = words(file_stem(path))
        .chain(words(parent))
        .map(|w| stem(&w).into_owned())
        .collect();
    let matches = |keyword: &str, name: &str| {
        let (shorter, longer) = match keyword.len() <= name.len() {
            true => (keyword, name),
            false => (name, keyword),
        };
        shorter == longer || (shorter.len() >= 4 && longer.starts_with(shorter))
    };
    keywords
        .iter()
        .filter(|k| names.iter().any(|n| matches(k, n)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::candidate;
    use crate::{QueryTerms, RankingLayer, apply_chain};
    use quarry_chunk::{Language, StoredChunk};

    fn symbol(path: &str, line: usize, name: &str, container: &[&str]) -> StoredChunk {
        StoredChunk {
            name: Some(name.into()),
            container: container.iter().map(|c| c.to_string()).collect(),
            ..candidate(path, line)
        }
    }

    fn rank(
        layer: impl RankingLayer + 'static,
        query: &str,
        input: Vec<(StoredChunk, f32)>,
    ) -> Vec<(String, usize)> {
        let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(layer)];
        apply_chain(&layers, &QueryTerms::of(query), input)
            .unwrap()
            .results
            .into_iter()
            .map(|r| (r.candidate.path, r.candidate.start_line))
            .collect()
    }

    #[test]
    fn a_definition_outranks_mentions() {
        let input = vec![
            (symbol("src/app.rs", 1, "main", &[]), 0.9),
            (symbol("src/config.rs", 10, "parseConfig", &[]), 0.5),
            (candidate("src/other.rs", 1), 0.8),
        ];
        let order = rank(Definition::new(2.0).unwrap(), "parse_config", input.clone());
        assert_eq!(order[0], ("src/config.rs".into(), 10));
        // In a sentence the identifier earns √2: 0.5 × 1.41 = 0.71, below 0.8.
        let order = rank(
            Definition::new(2.0).unwrap(),
            "where is parse_config called",
            input,
        );
        assert_eq!(order[2], ("src/config.rs".into(), 10));
    }

    #[test]
    fn a_capitalised_name_raises_types_not_lowercase_functions() {
        let class = StoredChunk {
            kind: quarry_chunk::ChunkKind::Struct,
            ..symbol("src/state.c", 1, "session_state", &[])
        };
        let input = vec![
            (symbol("src/seq.lua", 1, "list", &["seq"]), 0.5),
            (class, 0.5),
            (candidate("src/other.rs", 1), 0.6),
        ];
        let raised = |query: &str| {
            let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(Definition::new(2.0).unwrap())];
            let ranking = apply_chain(&layers, &QueryTerms::of(query), input.clone()).unwrap();
            let mut raised: Vec<String> = ranking
                .results
                .iter()
                .filter(|r| r.score > 0.5 && r.candidate.path != "src/other.rs")
                .map(|r| r.candidate.path.clone())
                .collect();
            raised.sort();
            raised
        };
        // The function `list` is a namesake of `List`; the type `session_state` is what
        // `SessionState` asks for.
        assert!(raised("List").is_empty());
        assert_eq!(raised("list"), ["src/seq.lua"]);
        assert_eq!(raised("SessionState"), ["src/state.c"]);
        assert_eq!(raised("session_state"), ["src/state.c"]);
    }

    #[test]
    fn a_qualifier_must_name_the_container_or_the_file() {
        let input = vec![
            (
                symbol("src/routing/mod.rs", 300, "merge", &["impl<S> Router<S>"]),
                0.5,
            ),
            (symbol("src/json.rs", 10, "merge", &["impl Value"]), 0.55),
            (candidate("src/other.rs", 1), 0.6),
        ];
        let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(Definition::new(4.0).unwrap())];
        let ranking = apply_chain(&layers, &QueryTerms::of("Router::merge"), input).unwrap();
        let factors: Vec<(usize, f32)> = ranking
            .results
            .iter()
            .filter_map(|r| match r.explanation.steps.first()?.effect {
                Effect::Defines { factor } => Some((r.candidate.start_line, factor)),
                _ => None,
            })
            .collect();
        assert_eq!(factors, [(300, 4.0), (10, 2.0)]);
    }

    #[test]
    fn files_named_after_the_query_rise() {
        let input = vec![
            (candidate("src/app.rs", 1), 0.6),
            (candidate("src/sessions.rs", 1), 0.5),
            (candidate("src/session/store.rs", 1), 0.45),
        ];
        let order = rank(
            PathMatch::new(1.0, 0.0).unwrap(),
            "how are sessions stored?",
            input,
        );
        // Both words name src/session/store.rs: 0.45 × 2; one names sessions.rs: 0.5 × 1.5.
        assert_eq!(
            order,
            [
                ("src/session/store.rs".into(), 1),
                ("src/sessions.rs".into(), 1),
                ("src/app.rs".into(), 1)
            ]
        );
        assert_eq!(
            matched_keywords(&["configur".into()], "lib/config.js"),
            ["configur"]
        );
        assert!(matched_keywords(&["con".into()], "lib/config.js").is_empty());
    }

    #[test]
    fn the_language_a_question_names_rises() {
        let written_in = |path: &str, language| StoredChunk {
            language,
            ..candidate(path, 1)
        };
        let input = || {
            vec![
                (written_in("java/Parser.java", Language::Java), 0.6),
                (written_in("src/parser.cc", Language::Cpp), 0.5),
                (written_in("python/parser.py", Language::Python), 0.45),
            ]
        };
        let paths = |order: Vec<(String, usize)>| -> Vec<String> {
            order.into_iter().map(|(path, _)| path).collect()
        };
        // C++ by its symbol: 0.5 × 1.5 passes Java's 0.6; Python is not named.
        let order = rank(
            PathMatch::new(0.0, 0.5).unwrap(),
            "how do the C++ messages parse the wire format?",
            input(),
        );
        assert_eq!(
            paths(order),
            ["src/parser.cc", "java/Parser.java", "python/parser.py"]
        );
        // A word inside another (`pure-Python`) names it too; 0 leaves the order alone.
        let question = "how does the pure-Python runtime encode fields";
        let order = rank(PathMatch::new(0.0, 0.5).unwrap(), question, input());
        assert_eq!(paths(order)[0], "python/parser.py");
        let order = rank(PathMatch::new(0.0, 0.0).unwrap(), question, input());
        assert_eq!(paths(order)[0], "java/Parser.java");
        // The step says which word named it.
        let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(PathMatch::new(0.0, 0.5).unwrap())];
        let ranking = apply_chain(&layers, &QueryTerms::of(question), input()).unwrap();
        assert_eq!(
            ranking.results[0].explanation.steps[0].effect,
            Effect::PathMatch {
                words: vec!["python".into()],
                factor: 1.5
            }
        );
    }
}
