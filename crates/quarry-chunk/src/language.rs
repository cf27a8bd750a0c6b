//! Languages quarry knows, how to recognise them, and their tree-sitter grammars.

use std::fmt;
use std::str::FromStr;

/// The language of a file, which decides how it is chunked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Language {
    /// Bash and POSIX shell.
    Bash,
    /// C (and `.h` headers).
    C,
    /// C++.
    Cpp,
    /// C#.
    CSharp,
    /// Elixir.
    Elixir,
    /// Go.
    Go,
    /// Haskell.
    Haskell,
    /// Java.
    Java,
    /// JavaScript (and JSX).
    JavaScript,
    /// Kotlin.
    Kotlin,
    /// Lua.
    Lua,
    /// PHP.
    Php,
    /// Python.
    Python,
    /// Ruby.
    Ruby,
    /// Rust.
    Rust,
    /// Scala.
    Scala,
    /// Swift.
    Swift,
    /// TypeScript.
    TypeScript,
    /// TSX (TypeScript with JSX).
    Tsx,
    /// Zig.
    Zig,
    /// Markdown, split by headings.
    Markdown,
    /// Any other text, split into line windows.
    Text,
}

/// Every language, in a stable order (handy for reports and tests).
pub const ALL_LANGUAGES: &[Language] = &[
    Language::Bash,
    Language::C,
    Language::Cpp,
    Language::CSharp,
    Language::Elixir,
    Language::Go,
    Language::Haskell,
    Language::Java,
    Language::JavaScript,
    Language::Kotlin,
    Language::Lua,
    Language::Php,
    Language::Python,
    Language::Ruby,
    Language::Rust,
    Language::Scala,
    Language::Swift,
    Language::TypeScript,
    Language::Tsx,
    Language::Zig,
    Language::Markdown,
    Language::Text,
];

impl Language {
    /// A short lower-case name, stable across releases (stored in the index).
    pub fn name(self) -> &'static str {
        match self {
            Language::Bash => "bash",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Elixir => "elixir",
            Language::Go => "go",
            Language::Haskell => "haskell",
            Language::Java => "java",
            Language::JavaScript => "javascript",
            Language::Kotlin => "kotlin",
            Language::Lua => "lua",
            Language::Php => "php",
            Language::Python => "python",
            Language::Ruby => "ruby",
            Language::Rust => "rust",
            Language::Scala => "scala",
            Language::Swift => "swift",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Zig => "zig",
            Language::Markdown => "markdown",
            Language::Text => "text",
        }
    }

    /// The usual file extension, such that `Language::from_path` maps a file named
    /// `x.<extension>` back to this language (`txt` for [`Language::Text`]).
    pub fn extension(self) -> &'static str {
        match self {
            Language::Bash => "sh",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "cs",
            Language::Elixir => "ex",
            Language::Go => "go",
            Language::Haskell => "hs",
            Language::Java => "java",
            Language::JavaScript => "js",
            Language::Kotlin => "kt",
            Language::Lua => "lua",
            Language::Php => "php",
            Language::Python => "py",
            Language::Ruby => "rb",
            Language::Rust => "rs",
            Language::Scala => "scala",
            Language::Swift => "swift",
            Language::TypeScript => "ts",
            Language::Tsx => "tsx",
            Language::Zig => "zig",
            Language::Markdown => "md",
            Language::Text => "txt",
        }
    }

    /// Detects the language from a path's extension or file name, then from a `#!` line. A
    /// `.h` header is C unless its text is C++ ([`Language::looks_like_cpp`]): C++ libraries
    /// ship `.h` headers as often as `.hpp`.
    ///
    /// ```
    /// use quarry_chunk::Language;
    /// assert_eq!(Language::detect("src/lib.rs", ""), Language::Rust);
    /// assert_eq!(Language::detect("bin/deploy", "#!/usr/bin/env python3\n"), Language::Python);
    /// assert_eq!(Language::detect("notes.txt", "hello"), Language::Text);
    /// assert_eq!(Language::detect("zlib.h", "int deflate(z_streamp strm);\n"), Language::C);
    /// assert_eq!(Language::detect("log.h", "namespace spdlog {\nclass logger;\n}\n"), Language::Cpp);
    /// ```
    pub fn detect(path: &str, text: &str) -> Language {
        match Self::from_path(path) {
            Some(Language::C) if path.ends_with(".h") && Self::looks_like_cpp(text) => {
                Language::Cpp
            }
            Some(language) => language,
            None => Self::from_shebang(text)
                .or_else(|| Self::from_modeline(text))
                .unwrap_or(Language::Text),
        }
    }

    /// The language an editor modeline names: Emacs's `-*- shell-script -*-` or
    /// `-*- mode: python -*-` on the first two lines, or Vim's `vim: ft=sh` (`ex:`,
    /// `filetype=`, `syntax=`) on the first or last five. Files without an extension
    /// (bash-completion's completions, scripts in `bin/`) often say what they are this way.
    ///
    /// ```
    /// use quarry_chunk::Language;
    /// let completion = "# ssh(1) completion                -*- shell-script -*-\n_ssh() { :; }\n";
    /// assert_eq!(Language::detect("completions/ssh", completion), Language::Bash);
    /// assert_eq!(Language::from_modeline("x = 1\n# vim: set ft=python:\n"), Some(Language::Python));
    /// assert_eq!(Language::from_modeline("no modeline here\n"), None);
    /// ```
    pub fn from_modeline(text: &str) -> Option<Language> {
        let lines: Vec<&str> = text.lines().collect();
        let emacs = lines.iter().take(2).find_map(|line| {
            let (_, rest) = line.split_once("-*-")?;
            let (inside, _) = rest.split_once("-*-")?;
            let mode = inside
                .split(';')
                .find_map(|setting| match setting.split_once(':') {
                    Some((key, value)) => {
                        (key.trim().eq_ignore_ascii_case("mode")).then(|| value.trim())
                    }
                    None => Some(setting.trim()),
                })?;
            Self::from_mode_name(mode)
        });
        let last = lines.len().saturating_sub(5).max(5.min(lines.len()));
        let vim = lines.iter().take(5).chain(&lines[last..]).find_map(|line| {
            let at = ["vim:", "vi:", "ex:"]
                .iter()
                .find_map(|tag| line.find(tag))?;
            line[at..]
                .split([' ', ':', '\t'])
                .find_map(|setting| {
                    let (key, value) = setting.split_once('=')?;
                    matches!(key, "ft" | "filetype" | "syntax").then_some(value)
                })
                .and_then(Self::from_mode_name)
        });
        emacs.or(vim)
    }

    /// The language an editor's mode or file-type name stands for.
    fn from_mode_name(name: &str) -> Option<Language> {
        Some(match name.to_ascii_lowercase().as_str() {
            "sh" | "bash" | "shell-script" | "zsh" | "ksh" => Language::Bash,
            "python" => Language::Python,
            "ruby" => Language::Ruby,
            "lua" => Language::Lua,
            "c" => Language::C,
            "c++" | "cpp" => Language::Cpp,
            "js" | "javascript" => Language::JavaScript,
            "typescript" => Language::TypeScript,
            "php" => Language::Php,
            _ => return None,
        })
    }

    /// Whether a header's text is C++: a line opens with `namespace`, `template`, `class`,
    /// `using namespace` or an access label (`public:`), or the text names `std::`. C has
    /// none of these (outside comments and strings, which a header rarely starts lines with).
    pub fn looks_like_cpp(text: &str) -> bool {
        const OPENERS: [&str; 7] = [
            "namespace ",
            "template<",
            "template <",
            "class ",
            "using namespace ",
            "public:",
            "private:",
        ];
        text.contains("std::")
            || text.lines().any(|line| {
                let line = line.trim_start();
                OPENERS.iter().any(|opener| line.starts_with(opener))
            })
    }

    /// The language a file name or extension implies, if any.
    pub fn from_path(path: &str) -> Option<Language> {
        let file_name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        match file_name {
            "Rakefile" | "Gemfile" | "Guardfile" | "Vagrantfile" => return Some(Language::Ruby),
            ".bashrc" | ".bash_profile" | ".profile" | ".zshrc" | "PKGBUILD" => {
                return Some(Language::Bash);
            }
            _ => {}
        }
        let (_, ext) = file_name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "sh" | "bash" | "zsh" | "ksh" => Language::Bash,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp" => {
                Language::Cpp
            }
            "cs" => Language::CSharp,
            "ex" | "exs" => Language::Elixir,
            "go" => Language::Go,
            "hs" | "lhs" => Language::Haskell,
            "java" => Language::Java,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "kt" | "kts" => Language::Kotlin,
            "lua" => Language::Lua,
            "php" | "phtml" => Language::Php,
            "py" | "pyi" | "pyw" => Language::Python,
            "rb" | "rake" | "gemspec" => Language::Ruby,
            "rs" => Language::Rust,
            "scala" | "sc" | "sbt" => Language::Scala,
            "swift" => Language::Swift,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "zig" => Language::Zig,
            "md" | "markdown" | "mdx" => Language::Markdown,
            _ => return None,
        })
    }

    /// The words a question in prose names the language by, lower case (`c++` and `cpp`,
    /// `python`): never one that is mostly something else in English or in code (`c`, `go`,
    /// `node`, `shell`), and none for prose and plain text.
    pub fn prose_names(self) -> &'static [&'static str] {
        match self {
            Language::Bash => &["bash"],
            Language::Cpp => &["c++", "cpp"],
            Language::CSharp => &["c#", "csharp"],
            Language::Elixir => &["elixir"],
            Language::Go => &["golang"],
            Language::Haskell => &["haskell"],
            Language::Java => &["java"],
            Language::JavaScript => &["javascript", "js", "nodejs"],
            Language::Kotlin => &["kotlin"],
            Language::Lua => &["lua"],
            Language::Php => &["php"],
            Language::Python => &["python"],
            Language::Ruby => &["ruby"],
            Language::Rust => &["rust"],
            Language::Scala => &["scala"],
            Language::Swift => &["swift"],
            Language::TypeScript | Language::Tsx => &["typescript", "ts"],
            Language::Zig => &["zig"],
            Language::C | Language::Markdown | Language::Text => &[],
        }
    }

    /// The language a `#!` interpreter line names, if any.
    pub fn from_shebang(text: &str) -> Option<Language> {
        let line = text.strip_prefix("#!")?.lines().next()?;
        let mut words = line.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            program = words.find(|w| !w.starts_with('-'))?;
        }
        let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        Some(match program {
            "sh" | "bash" | "zsh" | "ksh" | "dash" => Language::Bash,
            "python" | "pypy" => Language::Python,
            "node" | "nodejs" | "deno" | "bun" => Language::JavaScript,
            "ts-node" | "tsx" => Language::TypeScript,
            "ruby" => Language::Ruby,
            "lua" | "luajit" => Language::Lua,
            "php" => Language::Php,
            "elixir" => Language::Elixir,
            "runghc" | "runhaskell" | "stack" => Language::Haskell,
            "scala" => Language::Scala,
            "swift" => Language::Swift,
            "kotlin" => Language::Kotlin,
            _ => return None,
        })
    }

    /// The tree-sitter grammar, for languages that are chunked by syntax.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        let grammar = match self {
            Language::Bash => tree_sitter_bash::LANGUAGE,
            Language::C => tree_sitter_c::LANGUAGE,
            Language::Cpp => tree_sitter_cpp::LANGUAGE,
            Language::CSharp => tree_sitter_c_sharp::LANGUAGE,
            Language::Elixir => tree_sitter_elixir::LANGUAGE,
            Language::Go => tree_sitter_go::LANGUAGE,
            Language::Haskell => tree_sitter_haskell::LANGUAGE,
            Language::Java => tree_sitter_java::LANGUAGE,
            Language::JavaScript => tree_sitter_javascript::LANGUAGE,
            Language::Kotlin => tree_sitter_kotlin_ng::LANGUAGE,
            Language::Lua => tree_sitter_lua::LANGUAGE,
            Language::Php => tree_sitter_php::LANGUAGE_PHP,
            Language::Python => tree_sitter_python::LANGUAGE,
            Language::Ruby => tree_sitter_ruby::LANGUAGE,
            Language::Rust => tree_sitter_rust::LANGUAGE,
            Language::Scala => tree_sitter_scala::LANGUAGE,
            Language::Swift => tree_sitter_swift::LANGUAGE,
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            Language::Zig => tree_sitter_zig::LANGUAGE,
            Language::Markdown | Language::Text => return None,
        };
        Some(grammar.into())
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a language name [`Language::from_str`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown language {}; known: bash, c, cpp, csharp, elixir, go, haskell, java, javascript, kotlin, lua, markdown, php, python, ruby, rust, scala, swift, text, tsx, typescript, zig",
    quarry_text::quoted(.0)
)]
pub struct UnknownLanguage(pub String);

impl FromStr for Language {
    type Err = UnknownLanguage;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_LANGUAGES
            .iter()
            .copied()
            .find(|l| l.name() == s)
            .ok_or_else(|| UnknownLanguage(s.to_owned()))
    }
}

/// A language is stored by its [`Language::name`].
impl serde::Serialize for Language {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Language {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &language in ALL_LANGUAGES {
            assert_eq!(language.name().parse::<Language>(), Ok(language));
            let json = serde_json::to_string(&language).unwrap();
            assert_eq!(json, format!("\"{}\"", language.name()));
            assert_eq!(serde_json::from_str::<Language>(&json).unwrap(), language);
        }
    }

    #[test]
    fn extensions_round_trip() {
        for &language in ALL_LANGUAGES {
            let path = format!("x.{}", language.extension());
            assert_eq!(Language::detect(&path, ""), language);
        }
    }

    #[test]
    fn every_code_language_has_a_grammar_that_loads() {
        for &language in ALL_LANGUAGES {
            if matches!(language, Language::Markdown | Language::Text) {
                continue;
            }
            let grammar = language.grammar().expect("code languages have grammars");
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&grammar)
                .unwrap_or_else(|e| panic!("{language}: {e}"));
        }
    }

    #[test]
    fn shebangs() {
        assert_eq!(Language::from_shebang("#!/bin/sh\n"), Some(Language::Bash));
        assert_eq!(
            Language::from_shebang("#!/usr/bin/env -S python3.12 -u\n"),
            Some(Language::Python)
        );
        assert_eq!(Language::from_shebang("#!/usr/bin/perl\n"), None);
        assert_eq!(Language::from_shebang("no shebang"), None);
    }

    #[test]
    fn extensions_win_over_shebangs() {
        assert_eq!(
            Language::detect("tool.rb", "#!/usr/bin/env python\n"),
            Language::Ruby
        );
    }
}
