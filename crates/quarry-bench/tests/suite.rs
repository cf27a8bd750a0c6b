//! The committed suite holds together: every corpus pinned and manifested, every case's
//! paths and line spans present in its corpus (checked against the manifest the fetch
//! verifies, so no network is needed), and the suite as large and varied as promised.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use quarry_bench::cases::{CaseFile, Category, Shape};
use quarry_bench::corpus::{CorporaFile, Manifest, Suite, manifest_path};

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-suite")
}

fn load() -> (CorporaFile, Vec<CaseFile>) {
    let dir = suite_dir();
    let corpora = CorporaFile::load(&dir.join("corpora.yaml")).unwrap();
    let cases = corpora
        .corpora
        .iter()
        .map(|c| CaseFile::load(&dir.join("cases").join(format!("{}.yaml", c.name))).unwrap())
        .collect();
    (corpora, cases)
}

#[test]
fn every_case_names_files_and_lines_its_corpus_has() {
    let (corpora, case_files) = load();
    let mut problems = Vec::new();
    for (corpus, file) in corpora.corpora.iter().zip(&case_files) {
        assert_eq!(
            file.corpus, corpus.name,
            "cases/{}.yaml names another corpus",
            corpus.name
        );
        let manifest = match corpus.source.path.as_ref() {
            Some(local) => Manifest::of(&suite_dir().join(local)).unwrap(),
            None => Manifest::load(&manifest_path(&suite_dir(), &corpus.name))
                .unwrap_or_else(|e| panic!("{e}: fetch the corpus once to write its manifest")),
        };
        for case in &file.cases {
            for target in case.relevant.iter().chain(&case.secondary) {
                match (manifest.files.get(&target.path), target.lines) {
                    (None, _) => problems.push(format!(
                        "{}/{}: no file {}",
                        corpus.name, case.id, target.path
                    )),
                    (Some(&(_, lines)), Some((_, end))) if end > lines => problems.push(format!(
                        "{}/{}: {target} ends past line {lines}",
                        corpus.name, case.id
                    )),
                    _ => {}
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_full_suite_is_large_and_varied() {
    let (corpora, case_files) = load();
    let full: Vec<(&quarry_bench::corpus::Corpus, &CaseFile)> = corpora
        .corpora
        .iter()
        .zip(&case_files)
        .filter(|(c, _)| c.suite == Suite::Full)
        .collect();
    let languages: BTreeSet<&str> = full.iter().map(|(c, _)| c.language.as_str()).collect();
    assert!(full.len() >= 14, "{} corpora", full.len());
    assert!(languages.len() >= 10, "{languages:?}");
    for (corpus, _) in &full {
        assert!(
            corpus.source.version.is_some(),
            "{} is not pinned to a registry version",
            corpus.name
        );
    }
    let mut per_category: BTreeMap<Category, usize> = BTreeMap::new();
    for (corpus, file) in &full {
        for (i, case) in file.cases.iter().enumerate() {
            assert_eq!(
                case.id,
                format!("TC-{:02}", i + 1),
                "{}: ids run TC-01, TC-02...",
                corpus.name
            );
            *per_category.entry(case.category).or_default() += 1;
        }
        assert!(
            file.cases.len() >= 20,
            "{}: {} cases, at least 20 per corpus",
            corpus.name,
            file.cases.len()
        );
        for category in [Category::Symbol, Category::Semantic, Category::Architecture] {
            let asked = file.cases.iter().filter(|c| c.category == category).count();
            assert!(
                asked >= 5,
                "{}: {asked} {} cases; every category is asked at least 5 times",
                corpus.name,
                category.name()
            );
        }
    }
    let total: usize = per_category.values().sum();
    assert!(total >= 320, "{total} hand-written cases: {per_category:?}");
    // About a third held out from tuning, on every side of the suite.
    let held_out = full
        .iter()
        .flat_map(|(corpus, file)| file.cases.iter().map(|c| c.held_out(&corpus.name)))
        .filter(|&h| h)
        .count();
    let share = held_out as f64 / total as f64;
    assert!(
        (0.25..=0.42).contains(&share),
        "{held_out} of {total} held out"
    );
}

/// The corpora added to see symbol lookups lose (issue 30): C and C++ libraries and large
/// repositories, each with symbol cases whose answer is a definition's span.
#[test]
fn the_symbol_corpora_cover_c_cpp_and_large_repositories() {
    let (corpora, case_files) = load();
    let added: Vec<_> = corpora
        .corpora
        .iter()
        .zip(&case_files)
        .filter(|(c, _)| c.group.as_deref() == Some("symbols"))
        .collect();
    assert!(
        added.len() >= 6,
        "{} corpora in the symbols group",
        added.len()
    );
    let count = |language: &str| added.iter().filter(|(c, _)| c.language == language).count();
    assert!(
        count("c") >= 2 && count("cpp") >= 2,
        "C {}, C++ {}",
        count("c"),
        count("cpp")
    );
    let large = added
        .iter()
        .filter(|(c, _)| {
            let manifest = Manifest::load(&manifest_path(&suite_dir(), &c.name)).unwrap();
            manifest.files.len() >= quarry_bench::LARGE_CORPUS_FILES
        })
        .count();
    assert!(large >= 3, "{large} corpora of 2,000 files or more");
    let symbol_cases: Vec<_> = added
        .iter()
        .flat_map(|(_, file)| &file.cases)
        .filter(|case| case.category == Category::Symbol)
        .collect();
    assert!(
        symbol_cases.len() >= 60,
        "{} symbol cases",
        symbol_cases.len()
    );
    for case in symbol_cases {
        assert!(
            case.relevant.iter().any(|target| target.lines.is_some()) || case.query.contains('.'),
            "{}: a symbol case answers with the definition's lines (or names a module)",
            case.id
        );
    }
}

/// The cases written for the shapes of question where the wrong file once came first (issue
/// 41): every shape several times, over many corpora, a third of them held out, each shaped
/// as its name says.
#[test]
fn the_shape_cases_cover_every_shape() {
    let (corpora, case_files) = load();
    let mut by_shape: BTreeMap<Shape, usize> = BTreeMap::new();
    let mut corpora_with_shapes = BTreeSet::new();
    let mut held_out = 0;
    for (corpus, file) in corpora.corpora.iter().zip(&case_files) {
        for case in &file.cases {
            let Some(shape) = case.shape else { continue };
            *by_shape.entry(shape).or_default() += 1;
            corpora_with_shapes.insert(corpus.name.as_str());
            held_out += usize::from(case.held_out(&corpus.name));
            let problem = match shape {
                Shape::TwoFiles => (case.relevant.len() < 2).then_some("names two files or more"),
                Shape::TypeName => {
                    let capitalised = case.query.starts_with(|c: char| c.is_ascii_uppercase());
                    let spanned = case.relevant.iter().all(|t| t.lines.is_some());
                    (!capitalised || !spanned)
                        .then_some("is a capitalised name answered by a definition's lines")
                }
                Shape::NounPhrase => {
                    let words = case.query.split_whitespace().count();
                    (!(2..=4).contains(&words) || case.query.ends_with('?'))
                        .then_some("is a phrase of two to four words, not a question")
                }
                Shape::LargeHeader => (!["c", "cpp"].contains(&corpus.language.as_str()))
                    .then_some("is asked of a C or C++ corpus"),
                Shape::SpreadConcept => None,
            };
            if let Some(problem) = problem {
                panic!(
                    "{}/{}: a {} case {problem}",
                    corpus.name,
                    case.id,
                    shape.name()
                );
            }
        }
    }
    let total: usize = by_shape.values().sum();
    assert!(total >= 60, "{total} shape cases: {by_shape:?}");
    assert_eq!(by_shape.len(), 5, "every shape: {by_shape:?}");
    assert!(
        by_shape.values().all(|&n| n >= 8),
        "each shape eight times or more: {by_shape:?}"
    );
    assert!(
        corpora_with_shapes.len() >= 10,
        "{} corpora",
        corpora_with_shapes.len()
    );
    assert!(held_out * 5 >= total, "{held_out} of {total} held out");
}
