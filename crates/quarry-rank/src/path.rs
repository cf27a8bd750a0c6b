//! What a path says about its file (test, vendored, docs...) and what a query says about
//! its subject (tests, code). Conventions only: no file is read.

use quarry_chunk::{ChunkKind, Language};
use serde::{Deserialize, Serialize};

use quarry_chunk::StoredChunk;

/// A kind of file that is rarely the answer to "where is the code that does X?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PathClass {
    /// Tests: `tests/`, `test/`, `__tests__/`, `spec/`, `e2e/`, `testing/`, `test_helpers/`,
    /// `test_utils/`, `testutil/`; files named as
    /// their language's test runner finds them (`*_test.go`, `test_*.py`, `*_test.py`,
    /// `conftest.py`, `*.test.ts`, `*.spec.js`, `*Test.java`, `*Tests.swift`, `*Spec.scala`,
    /// `*_spec.rb`: [`test_by_name`]); and chunks of kind `test`.
    Test,
    /// Test data: `fixtures/`, `fixture/`, `testdata/`, `test_data/`, `__fixtures__/`,
    /// `__snapshots__/`.
    Fixture,
    /// Test doubles: `mocks/`, `__mocks__/`, `mock_*`, `*_mock.*`, `*.mock.*`, `MockFoo.*`,
    /// `FooMock.*`.
    Mock,
    /// Generated code: `generated/`, `__generated__/`, `dist/`, `*.pb.go`, `*_pb2.py`,
    /// `*.generated.*`, `*_generated.*`, `zz_generated*`, `*.g.dart`, `*.designer.cs`,
    /// `*.bundle.js`.
    Generated,
    /// Someone else's code: `vendor/`, `third_party/`, `node_modules/`, `bower_components/`,
    /// `Pods/`.
    Vendored,
    /// Minified files: `*.min.*`, `*-min.*`.
    Minified,
    /// Examples and demos: `examples/`, `example/`, `demo/`, `samples/`.
    Example,
    /// Prose: Markdown, reStructuredText, AsciiDoc, Org; `README`, `CHANGELOG`, `LICENSE`
    /// and the like; `.txt` under `docs/`.
    Docs,
}

impl PathClass {
    /// Every class.
    pub const ALL: [PathClass; 8] = [
        PathClass::Test,
        PathClass::Fixture,
        PathClass::Mock,
        PathClass::Generated,
        PathClass::Vendored,
        PathClass::Minified,
        PathClass::Example,
        PathClass::Docs,
    ];

    /// The class's name, as serde writes it.
    pub fn name(self) -> &'static str {
        match self {
            PathClass::Test => "test",
            PathClass::Fixture => "fixture",
            PathClass::Mock => "mock",
            PathClass::Generated => "generated",
            PathClass::Vendored => "vendored",
            PathClass::Minified => "minified",
            PathClass::Example => "example",
            PathClass::Docs => "docs",
        }
    }

    /// Tests, fixtures and mocks: what [`IncludeTests`](crate::IncludeTests) governs.
    pub fn is_test_code(self) -> bool {
        matches!(self, PathClass::Test | PathClass::Fixture | PathClass::Mock)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of [`PathClass`]es.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Classes(u8);

impl Classes {
    fn insert(&mut self, class: PathClass, present: bool) {
        if present {
            self.0 |= class.bit();
        }
    }

    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether any class is test code.
    pub(crate) fn has_test_code(self) -> bool {
        self.iter().any(PathClass::is_test_code)
    }

    /// Whether every class is test code (and there is one).
    pub(crate) fn only_test_code(self) -> bool {
        !self.is_empty() && self.iter().all(PathClass::is_test_code)
    }

    pub(crate) fn iter(self) -> impl Iterator<Item = PathClass> {
        PathClass::ALL
            .into_iter()
            .filter(move |class| self.0 & class.bit() != 0)
    }
}

/// The class a directory name (lowercase) puts its files in.
fn dir_class(dir: &str) -> Option<PathClass> {
    Some(match dir {
        "test" | "tests" | "__tests__" | "spec" | "specs" | "e2e" | "testing" | "test_helpers"
        | "test_utils" | "test_support" | "testutil" | "testutils" => PathClass::Test,
        "fixtures" | "fixture" | "testdata" | "test_data" | "test-data" | "__fixtures__"
        | "__snapshots__" => PathClass::Fixture,
        "mocks" | "mock" | "__mocks__" => PathClass::Mock,
        "generated" | "__generated__" | "dist" => PathClass::Generated,
        "vendor" | "vendored" | "third_party" | "third-party" | "thirdparty" | "node_modules"
        | "bower_components" | "pods" => PathClass::Vendored,
        "example" | "examples" | "_examples" | "demo" | "demos" | "sample" | "samples" => {
            PathClass::Example
        }
        _ => return None,
    })
}

/// Prose files by name, without an extension or with `.txt` (`LICENSE-MIT`, `README.txt`).
const PROSE_NAMES: &[&str] = &[
    "readme",
    "changelog",
    "changes",
    "history",
    "news",
    "license",
    "licence",
    "copying",
    "notice",
    "authors",
    "contributing",
    "code_of_conduct",
    "security",
];

/// `(directories, file name)`.
fn split_name(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// `(stem, extension)`; a leading dot (`.gitignore`) starts no extension.
fn split_extension(name: &str) -> (&str, &str) {
    match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => (stem, extension),
        _ => (name, ""),
    }
}

/// Whether a chunk is plain source: of no [`PathClass`] (not a test, docs, an example, a
/// generated or vendored file...), the code that answers most questions.
pub fn is_plain_source(chunk: &StoredChunk) -> bool {
    classify(chunk).is_empty()
}

/// The classes of a candidate's file (and, for tests, of the chunk itself).
pub(crate) fn classify(candidate: &StoredChunk) -> Classes {
    // Lowercasing ASCII keeps every byte offset, so the cased name is the same slice.
    let lower_path = candidate.path.to_ascii_lowercase();
    let (dirs, lower) = split_name(&lower_path);
    let name = &candidate.path[candidate.path.len() - lower.len()..];
    let (stem, _) = split_extension(name);
    let (lower_stem, extension) = split_extension(lower);

    let mut classes = Classes::default();
    let mut in_doc_dir = false;
    for dir in dirs.split('/') {
        if let Some(class) = dir_class(dir) {
            classes.insert(class, true);
        }
        in_doc_dir |= matches!(dir, "doc" | "docs" | "documentation");
    }
    // The name's inner dot-separated parts: `button.test.ts`, `jquery.min.js`, `user.pb.go`.
    for part in lower_stem.split('.').skip(1) {
        let class = match part {
            "test" | "spec" if names_tests_by_part(candidate.language) => PathClass::Test,
            "mock" => PathClass::Mock,
            "pb" | "generated" | "bundle" => PathClass::Generated,
            "g" if extension == "dart" => PathClass::Generated,
            "designer" if extension == "cs" => PathClass::Generated,
            "min" => PathClass::Minified,
            _ => continue,
        };
        classes.insert(class, true);
    }
    classes.insert(
        PathClass::Test,
        candidate.kind == ChunkKind::Test || test_by_name(candidate.language, stem, lower_stem),
    );
    classes.insert(
        PathClass::Mock,
        lower_stem.starts_with("mock_")
            || lower_stem.ends_with("_mock")
            || lower_stem.ends_with("_mocks")
            || matches!(lower_stem, "mock" | "mocks")
            // `MockServer`, `ServerMock`; not `Mockingbird`.
            || stem
                .strip_prefix("Mock")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
            || stem.ends_with("Mock"),
    );
    classes.insert(
        PathClass::Generated,
        lower_stem.ends_with("_pb2")
            || lower_stem.ends_with("_pb2_grpc")
            || lower_stem.ends_with("_generated")
            || lower_stem.starts_with("zz_generated"),
    );
    classes.insert(PathClass::Minified, lower_stem.ends_with("-min"));
    // `LICENSE-MIT`, `README.zh-CN.md`, `CHANGES.txt`, but not `license_check.rs`.
    let prose_name = matches!(extension, "" | "txt")
        && PROSE_NAMES.iter().any(|prose| {
            lower_stem
                .strip_prefix(prose)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '_', '.']))
        });
    classes.insert(
        PathClass::Docs,
        candidate.language == Language::Markdown
            || matches!(
                extension,
                "md" | "markdown"
                    | "mdx"
                    | "rst"
                    | "adoc"
                    | "asciidoc"
                    | "org"
                    | "rdoc"
                    | "textile"
            )
            || prose_name
            || (extension == "txt" && in_doc_dir),
    );
    classes
}

/// Whether a file's name (its stem, as written and lowercased) marks it a test by its
/// language's convention, the names its test runner collects, rather than by a word it
/// happens to carry: `test_*.py` is pytest's, but `lib/test_helpers.sh` is a library and
/// `openapi_spec.go` a file the Go compiler builds into its package. A name of another
/// language (`Text`: Dart, Objective-C...) is read by every suffix convention, never by a
/// prefix.
fn test_by_name(language: Language, stem: &str, lower_stem: &str) -> bool {
    use Language::*;
    let ends = |suffixes: &[&str]| suffixes.iter().any(|suffix| lower_stem.ends_with(suffix));
    // `FooTest`, `FooTests`, `FooSpec`; case-sensitive, so not `Latest`.
    let class_named = |words: &[&str]| words.iter().any(|word| stem.ends_with(word));
    matches!(lower_stem, "test" | "tests")
        || match language {
            Python => {
                lower_stem.starts_with("test_")
                    || ends(&["_test", "_tests"])
                    || lower_stem == "conftest"
            }
            Go | Elixir | Zig | Bash => ends(&["_test"]),
            Rust | C | Cpp => ends(&["_test", "_tests", "_unittest"]),
            Ruby | Lua => ends(&["_spec", "_test"]),
            JavaScript | TypeScript | Tsx => ends(&["_test", "_spec"]),
            Java | CSharp | Php => class_named(&["Test", "Tests"]),
            Kotlin | Scala | Swift | Haskell => class_named(&["Test", "Tests", "Spec"]),
            Markdown => false,
            // Text, and any language added later.
            _ => ends(&["_test", "_tests", "_spec"]) || class_named(&["Test", "Tests", "Spec"]),
        }
}

/// Whether a language names tests by an inner part of the file name (`button.test.ts`,
/// `user.spec.js`): JavaScript's runners do, and a name of another language may.
fn names_tests_by_part(language: Language) -> bool {
    matches!(
        language,
        Language::JavaScript | Language::TypeScript | Language::Tsx | Language::Text
    )
}

/// The files beside `path` that declare what it implements, whose centrality it shares: a C
/// or C++ source's header (`deflate.c`: `deflate.h`), a header's inline part's
/// (`logger-inl.h`: `logger.h`), a script's type declarations (`router.ts`: `router.d.ts`,
/// `client.py`: `client.pyi`). Files that many others import are declarations; the file
/// that implements one is what a question about it wants, and nothing imports it.
pub fn declaration_files(path: &str) -> Vec<String> {
    let (dirs, name) = split_name(path);
    let (stem, extension) = split_extension(name);
    let beside = |name: String| match dirs {
        "" => name,
        dirs => format!("{dirs}/{name}"),
    };
    let headers = |stem: &str| {
        ["h", "hpp", "hh", "hxx"]
            .iter()
            .map(|header| beside(format!("{stem}.{header}")))
            .collect()
    };
    match extension {
        "c" | "cc" | "cpp" | "cxx" | "c++" | "m" | "mm" => headers(stem),
        "h" | "hpp" | "hh" | "hxx" => stem
            .strip_suffix("-inl")
            .or_else(|| stem.strip_suffix("_inl"))
            .map_or_else(Vec::new, headers),
        "ts" | "js" | "mjs" | "cjs" if !stem.ends_with(".d") => {
            vec![beside(format!("{stem}.d.ts"))]
        }
        "py" => vec![beside(format!("{stem}.pyi"))],
        _ => Vec::new(),
    }
}

/// Whether the file lies under a source directory (`src/`, `lib/`, `pkg/`...) at any depth.
pub(crate) fn under_source_dir(path: &str) -> bool {
    const SOURCE_DIRS: &[&str] = &[
        "src", "source", "sources", "lib", "pkg", "internal", "cmd", "app", "apps",
    ];
    split_name(path)
        .0
        .split('/')
        .any(|dir| SOURCE_DIRS.iter().any(|s| dir.eq_ignore_ascii_case(s)))
}

/// The query's words, lowercase: split at anything not alphanumeric and at camelCase humps
/// (`testParseConfig` is `test`, `parse`, `config`).
fn words(query: &str) -> impl Iterator<Item = String> + '_ {
    query
        .split(|c: char| !c.is_alphanumeric())
        .flat_map(|token| {
            let mut parts = Vec::new();
            let mut start = 0;
            let mut previous_lower = false;
            for (i, c) in token.char_indices() {
                if c.is_uppercase() && previous_lower {
                    parts.push(&token[start..i]);
                    start = i;
                }
                previous_lower = c.is_lowercase() || c.is_ascii_digit();
            }
            parts.push(&token[start..]);
            parts
        })
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

const TEST_WORDS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "tested",
    "unittest",
    "unittests",
    "pytest",
    "conftest",
    "spec",
    "specs",
    "fixture",
    "fixtures",
    "testdata",
    "mock",
    "mocks",
    "mocked",
    "mocking",
    "stub",
    "stubs",
    "fake",
    "fakes",
    "e2e",
    "assert",
    "asserts",
    "assertion",
    "assertions",
];

/// Whether the query asks about tests: one of its words is a test word (`test`, `spec`,
/// `fixture`, `mock`, `stub`, `assert`... including inside identifiers like `test_parse`).
pub(crate) fn about_tests(query: &str) -> bool {
    words(query).any(|word| TEST_WORDS.contains(&word.as_str()))
}

const CODE_WORDS: &[&str] = &[
    "function",
    "functions",
    "fn",
    "func",
    "def",
    "method",
    "methods",
    "class",
    "classes",
    "struct",
    "structs",
    "enum",
    "trait",
    "impl",
    "interface",
    "constructor",
    "macro",
    "variable",
    "const",
    "constant",
    "lambda",
    "closure",
    "callback",
    "return",
    "returns",
    "async",
    "await",
    "import",
    "implementation",
    "implements",
    "signature",
    "parameter",
    "parameters",
    "argument",
    "arguments",
];

/// Whether the query is about code rather than prose: it holds an identifier-like token
/// (`parse_config`, `parseConfig`, `HashMap`, `fs::read`, `foo.bar`, `run()`) or a code
/// word (`function`, `method`, `struct`, `impl`, `returns`...).
fn about_code(query: &str) -> bool {
    query.split_whitespace().any(crate::query::identifier_like)
        || words(query).any(|word| CODE_WORDS.contains(&word.as_str()))
}

const DOC_WORDS: &[&str] = &[
    "readme",
    "docs",
    "documentation",
    "documented",
    "guide",
    "tutorial",
    "manual",
    "faq",
    "install",
    "installation",
    "installing",
    "changelog",
    "license",
    "licence",
    "contributing",
];

/// Whether the query asks for prose: it names documentation (`readme`, `docs`, `guide`,
/// `install`, `changelog`, `license`...) and nothing about code ([`about_code`]). Questions
/// about how the code works ("how is the session saved") are not, even in plain words.
pub(crate) fn about_prose(query: &str) -> bool {
    !about_code(query) && words(query).any(|word| DOC_WORDS.contains(&word.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::candidate;

    /// The classes of a chunk of `path`, in the language its extension names.
    fn classes(path: &str) -> Vec<PathClass> {
        let mut chunk = candidate(path, 1);
        chunk.language = Language::from_path(path).unwrap_or(Language::Text);
        classify(&chunk).iter().collect()
    }

    #[test]
    fn tests_are_recognised_across_languages() {
        for path in [
            "tests/parse.rs",
            "crates/x/tests/support/mod.rs",
            "test/helper.c",
            "src/__tests__/button.tsx",
            "spec/models/user_spec.rb",
            "lib/user_spec.rb",
            "server/handler_test.go",
            "pkg/test_parse.py",
            "pkg/parse_test.py",
            "conftest.py",
            "web/button.test.ts",
            "web/button.spec.js",
            "src/main/java/FooTest.java",
            "Sources/AppTests.swift",
            "src/FooSpec.scala",
            "src/Test.java",
            "src/test/java/com/acme/Parser.java",
            "numpy/testing/utils.py",
            "e2e/login.ts",
            "test/test_helpers.sh",
            "lib/parse_test.sh",
            "base/strings_unittest.cc",
            "spec/parse_spec.lua",
            "src/test_helpers/test_client.rs",
        ] {
            assert_eq!(classes(path), [PathClass::Test], "{path}");
        }
        for path in [
            "src/latest.rs",
            "src/Latest.java",
            "src/contest.py",
            "src/attest.go",
            "src/testament.rs",
            "src/Manifest.java",
            "src/inspect.py",
            // Named like another language's tests, but not by their own language's runner.
            "lib/test_helpers.sh",
            "lib/test_utils.lua",
            "src/test_vectors.rs",
            "api/openapi_spec.go",
            "src/main/java/ProductSpec.java",
            "lib/parse.test.rb",
            "PythonTypes/TypeSpec.cs",
            "providers/implementations/rands/test_rng.c",
        ] {
            assert_eq!(classes(path), [], "{path}");
        }
        let mut zig = candidate("src/parse.zig", 1);
        zig.kind = ChunkKind::Test;
        assert!(classify(&zig).has_test_code());
    }

    #[test]
    fn other_classes_are_recognised_and_combine() {
        let cases: &[(&str, &[PathClass])] = &[
            ("fixtures/chunk/rust/lib.rs", &[PathClass::Fixture]),
            ("go/testdata/input.go", &[PathClass::Fixture]),
            ("src/__fixtures__/user.json", &[PathClass::Fixture]),
            (
                "tests/fixtures/big.py",
                &[PathClass::Test, PathClass::Fixture],
            ),
            ("src/__mocks__/fs.js", &[PathClass::Mock]),
            ("internal/mock_store.go", &[PathClass::Mock]),
            ("internal/store_mock.go", &[PathClass::Mock]),
            ("src/MockServer.java", &[PathClass::Mock]),
            ("src/Mockingbird.java", &[]),
            ("api/user.pb.go", &[PathClass::Generated]),
            ("api/user_pb2.py", &[PathClass::Generated]),
            ("src/schema.generated.ts", &[PathClass::Generated]),
            ("pkg/zz_generated.deepcopy.go", &[PathClass::Generated]),
            ("lib/model.g.dart", &[PathClass::Generated]),
            ("vendor/github.com/x/y.go", &[PathClass::Vendored]),
            ("third_party/zlib/inflate.c", &[PathClass::Vendored]),
            ("web/node_modules/react/index.js", &[PathClass::Vendored]),
            ("static/jquery.min.js", &[PathClass::Minified]),
            (
                "node_modules/x/dist/x.min.js",
                &[
                    PathClass::Generated,
                    PathClass::Vendored,
                    PathClass::Minified,
                ],
            ),
            ("examples/basic.rs", &[PathClass::Example]),
            ("README.md", &[PathClass::Docs]),
            ("docs/ARCHITECTURE.md", &[PathClass::Docs]),
            ("LICENSE-MIT", &[PathClass::Docs]),
            ("CHANGELOG", &[PathClass::Docs]),
            ("docs/guide.txt", &[PathClass::Docs]),
            ("requirements.txt", &[]),
            ("CMakeLists.txt", &[]),
            ("src/license_check.rs", &[]),
        ];
        for &(path, expected) in cases {
            assert_eq!(classes(path), expected, "{path}");
        }
        let mut markdown = candidate("notes.mkd", 1);
        markdown.language = Language::Markdown;
        assert_eq!(
            classify(&markdown).iter().collect::<Vec<_>>(),
            [PathClass::Docs]
        );
    }

    #[test]
    fn an_implementation_names_the_declarations_beside_it() {
        assert_eq!(
            declaration_files("src/deflate.c"),
            [
                "src/deflate.h",
                "src/deflate.hpp",
                "src/deflate.hh",
                "src/deflate.hxx"
            ]
        );
        assert_eq!(declaration_files("logger-inl.h")[0], "logger.h");
        assert_eq!(declaration_files("web/router.ts"), ["web/router.d.ts"]);
        assert_eq!(declaration_files("pkg/client.py"), ["pkg/client.pyi"]);
        for path in [
            "src/deflate.h",
            "web/router.d.ts",
            "src/lib.rs",
            "README.md",
        ] {
            assert!(declaration_files(path).is_empty(), "{path}");
        }
    }

    /// Asserts that `predicate` holds for every text of `holds` and for none of `fails`.
    fn check(predicate: fn(&str) -> bool, holds: &[&str], fails: &[&str]) {
        for text in holds {
            assert!(predicate(text), "{text}");
        }
        for text in fails {
            assert!(!predicate(text), "{text}");
        }
    }

    #[test]
    fn source_dirs_count_at_any_depth_but_not_as_the_file_name() {
        check(
            under_source_dir,
            &[
                "src/lib.rs",
                "crates/quarry-rank/src/chain.rs",
                "pkg/api/server.go",
                "Sources/App/main.swift",
            ],
            &["scripts/release.sh", "lib", "build.rs"],
        );
    }

    #[test]
    fn queries_about_tests() {
        check(
            about_tests,
            &[
                "tests for the parser",
                "where is parse tested",
                "test_parse_config",
                "testParseConfig",
                "mock http client",
                "fixture loading",
                "rspec spec for user",
            ],
            &[
                "parse config",
                "latest release",
                "contest scoring",
                "attestation",
            ],
        );
    }

    #[test]
    fn queries_about_prose() {
        check(
            about_prose,
            &[
                "how do I install quarry",
                "where is the changelog",
                "readme",
            ],
            &[
                "how is the session saved",
                "install_hooks",
                "which function installs the handler guide",
            ],
        );
    }

    #[test]
    fn queries_about_code() {
        check(
            about_code,
            &[
                "parse_config",
                "where is parseConfig called",
                "HashMap of chunks",
                "fs::read_to_string",
                "self.cache lookup",
                "run() blocks",
                "function that retries requests",
                "which struct holds the settings",
            ],
            &[
                "how do I install quarry",
                "license terms, e.g. for redistribution",
                "what is the release process.",
                "upgrade from 1.25 to 10.50",
                "",
            ],
        );
    }
}
