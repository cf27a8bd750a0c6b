//! Property tests: whatever the input and the budget, the chunker keeps its promises
//! (see `check_chunks`), is deterministic and does not panic.

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use quarry_chunk::{ALL_LANGUAGES, Chunker, ChunkerConfig, Language, check_chunks};

/// The fixture sources, one per language: `(path, text)`.
static FIXTURES: LazyLock<Vec<(String, String)>> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/chunk");
    let mut files = Vec::new();
    for language in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(language.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "chunks") {
                continue;
            }
            let relative = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            files.push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
    files.sort();
    files
});

fn language() -> impl Strategy<Value = Language> {
    prop::sample::select(ALL_LANGUAGES)
}

fn config() -> impl Strategy<Value = ChunkerConfig> {
    (20usize..1500, 0usize..5, any::<bool>()).prop_map(|(budget, overlap_lines, embed_header)| {
        ChunkerConfig {
            budget,
            overlap_lines,
            embed_header,
        }
    })
}

/// Chunks `text` twice and checks every promise; returns a failure message for proptest.
fn holds(path: &str, text: &str, config: ChunkerConfig) -> Result<(), TestCaseError> {
    let chunker = Chunker::new(config);
    let Ok(chunks) = chunker.chunk(path, text.as_bytes()) else {
        return Ok(()); // skipped as machine-written: nothing to check
    };
    check_chunks(text, &chunks, chunker.config().budget)
        .map_err(|v| TestCaseError::fail(v.to_string()))?;
    prop_assert_eq!(
        &chunks,
        &chunker.chunk(path, text.as_bytes()).unwrap(),
        "not deterministic"
    );
    Ok(())
}

#[derive(Debug, Clone)]
enum Edit {
    /// Delete `len` lines at a position (a fraction of the file).
    Delete(f64, usize),
    /// Repeat a run of lines `times` times (makes items and containers large).
    Repeat(f64, usize, usize),
    /// Insert lines of another fixture (mixes languages, unbalances brackets).
    Splice(f64, usize, f64, usize),
    /// Cut the file at a position.
    Truncate(f64),
    /// Indent or dedent a run of lines.
    Indent(f64, usize, bool),
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), 1usize..20).prop_map(|(a, n)| Edit::Delete(a, n)),
        (at.clone(), 1usize..15, 1usize..8).prop_map(|(a, n, t)| Edit::Repeat(a, n, t)),
        (at.clone(), 0usize..100, at.clone(), 1usize..30)
            .prop_map(|(a, f, b, n)| Edit::Splice(a, f, b, n)),
        at.clone().prop_map(Edit::Truncate),
        (at, 1usize..30, any::<bool>()).prop_map(|(a, n, i)| Edit::Indent(a, n, i)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let pos = |lines: &Vec<String>, at: f64| (at * lines.len() as f64) as usize;
    for edit in edits {
        match *edit {
            Edit::Delete(at, n) => {
                let start = pos(&lines, at);
                lines.drain(start..(start + n).min(lines.len()));
            }
            Edit::Repeat(at, n, times) => {
                let start = pos(&lines, at);
                let run: Vec<String> = lines[start..(start + n).min(lines.len())].to_vec();
                for _ in 0..times {
                    lines.splice(start..start, run.iter().cloned());
                }
            }
            Edit::Splice(at, fixture, from, n) => {
                let other: Vec<&str> = FIXTURES[fixture % FIXTURES.len()].1.lines().collect();
                let from = (from * other.len() as f64) as usize;
                let insert = other[from..(from + n).min(other.len())]
                    .iter()
                    .map(|l| l.to_string());
                let start = pos(&lines, at);
                lines.splice(start..start, insert);
            }
            Edit::Truncate(at) => lines.truncate(pos(&lines, at)),
            Edit::Indent(at, n, indent) => {
                let start = pos(&lines, at);
                for line in lines.iter_mut().skip(start).take(n) {
                    *line = if indent {
                        format!("    {line}")
                    } else {
                        line.trim_start().to_owned()
                    };
                }
            }
        }
    }
    lines.join("\n")
}

/// A generated Rust or Python file: nested modules/classes of random depth and size.
fn generated_source() -> impl Strategy<Value = (String, String)> {
    let leaf = (1usize..40, "[a-z][a-z0-9_]{0,12}")
        .prop_map(|(lines, name)| Node::Function { name, lines });
    let tree = leaf.prop_recursive(4, 64, 8, |inner| {
        ("[A-Z][a-zA-Z0-9]{0,10}", prop::collection::vec(inner, 0..8))
            .prop_map(|(name, members)| Node::Container { name, members })
    });
    (prop::collection::vec(tree, 1..6), any::<bool>()).prop_map(|(items, python)| {
        let mut out = String::new();
        for item in &items {
            item.render(python, 0, &mut out);
            out.push('\n');
        }
        (if python { "gen.py" } else { "gen.rs" }.to_owned(), out)
    })
}

#[derive(Debug, Clone)]
enum Node {
    Function { name: String, lines: usize },
    Container { name: String, members: Vec<Node> },
}

impl Node {
    fn render(&self, python: bool, depth: usize, out: &mut String) {
        let pad = "    ".repeat(depth);
        match self {
            Node::Function { name, lines } if python => {
                out.push_str(&format!(
                    "{pad}# Computes {name}.\n{pad}def {name}(self, x):\n"
                ));
                for i in 0..*lines {
                    out.push_str(&format!("{pad}    x = x * {i} + len(str(x))  # step {i}\n"));
                }
                out.push_str(&format!("{pad}    return x\n"));
            }
            Node::Function { name, lines } => {
                out.push_str(&format!(
                    "{pad}/// Computes {name}.\n{pad}pub fn {name}(x: u64) -> u64 {{\n"
                ));
                for i in 0..*lines {
                    out.push_str(&format!(
                        "{pad}    let x = x.wrapping_mul({i}) + 7; // step {i}\n"
                    ));
                }
                out.push_str(&format!("{pad}    x\n{pad}}}\n"));
            }
            Node::Container { name, members } if python => {
                out.push_str(&format!(
                    "{pad}class {name}:\n{pad}    \"\"\"A {name}.\"\"\"\n"
                ));
                out.push_str(&format!("{pad}    size = 0\n"));
                for member in members {
                    member.render(python, depth + 1, out);
                }
            }
            Node::Container { name, members } => {
                out.push_str(&format!(
                    "{pad}pub mod {name} {{\n{pad}    const SIZE: usize = 0;\n"
                ));
                for member in members {
                    member.render(python, depth + 1, out);
                }
                out.push_str(&format!("{pad}}}\n"));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn edited_real_sources(
        fixture in 0usize..100,
        edits in prop::collection::vec(edit(), 0..6),
        crlf in any::<bool>(),
        config in config(),
    ) {
        let (path, text) = &FIXTURES[fixture % FIXTURES.len()];
        let mut text = apply(text, &edits);
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        holds(path, &text, config)?;
    }

    #[test]
    fn generated_nested_sources((path, text) in generated_source(), config in config()) {
        holds(&path, &text, config)?;
    }

    #[test]
    fn arbitrary_text(text in "(?s).{0,600}", language in language(), config in config()) {
        holds(&format!("file.{}", language.extension()), &text, config)?;
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        language in language(),
    ) {
        let path = format!("file.{}", language.extension());
        let chunker = Chunker::default();
        if let Ok(chunks) = chunker.chunk(&path, &bytes) {
            let text = std::str::from_utf8(&bytes).expect("chunked input is UTF-8");
            check_chunks(text, &chunks, chunker.config().budget)
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
        }
    }
}
