//! How text becomes tokens: the code-aware tokenizer, a query's tokens, a chunk's comments.

use std::collections::BTreeSet;

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Tokens longer than this (in bytes) are skipped: minified code, base64 and hashes, which
/// nobody types as a query.
const MAX_TOKEN_BYTES: usize = 64;

/// tantivy [`Tokenizer`] for source code, registered as `quarry_code_v2`.
///
/// Text is split into identifiers ([`quarry_text::identifiers`]: runs of alphanumeric
/// characters, any script, and `_`). Each identifier gives its whole self, lowercased, then
/// the light stem ([`quarry_text::stem`]) of each of its parts when it has more than that
/// one part ([`quarry_text::identifier_parts`]: at `_`, at case changes, between letters and
/// digits; kebab-case is split already, as `-` ends an identifier), or of itself when the
/// stem differs. An exact identifier thus matches its whole token and its parts, an
/// inflection (`handlers`, `parsing`) its stems:
///
/// ```
/// use quarry_store::CodeTokenizer;
/// use tantivy::tokenizer::{TokenStream, Tokenizer};
///
/// let mut tokenizer = CodeTokenizer::default();
/// let mut stream = tokenizer.token_stream("parseHTTPResponse(sha256)");
/// let mut tokens = Vec::new();
/// while let Some(token) = stream.next() {
///     tokens.push(token.text.clone());
/// }
/// assert_eq!(tokens, ["parsehttpresponse", "pars", "http", "respons", "sha256", "sha", "256"]);
/// ```
///
/// Single-character parts are kept (`getX` gives `x`, `utf8` gives `8`): BM25 weighs such
/// common tokens little, and dropping them would make `x` unsearchable. Identifiers without
/// a letter or digit (`_`) give nothing, and tokens over 64 bytes are skipped.
#[derive(Debug, Clone, Default)]
pub struct CodeTokenizer {
    /// Reused between texts.
    tokens: Vec<Token>,
}

/// The tokens of one text, from [`CodeTokenizer`].
#[derive(Debug)]
pub struct CodeTokenStream<'a> {
    tokens: &'a mut Vec<Token>,
    /// How many tokens `advance` has passed over.
    advanced: usize,
    /// What `token` returns before the first `advance` or after the last.
    none: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokens.clear();
        push_tokens(text, &mut self.tokens);
        CodeTokenStream {
            tokens: &mut self.tokens,
            advanced: 0,
            none: Token::default(),
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.advanced < self.tokens.len() {
            self.advanced += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        match self.advanced.checked_sub(1) {
            Some(i) => &self.tokens[i],
            None => &self.none,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.advanced.checked_sub(1) {
            Some(i) => &mut self.tokens[i],
            None => &mut self.none,
        }
    }
}

/// The tokens of `text`, as [`CodeTokenizer`] gives them: what a chunk's fields are
/// indexed as (pre-tokenized, so that the index records how many each holds).
pub(super) fn tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    push_tokens(text, &mut tokens);
    tokens
}

/// The distinct tokens a query searches for: its tokens without English function words
/// (`where`, `the`, `is`), unless that would leave none.
pub(super) fn query_tokens(query: &str) -> BTreeSet<String> {
    let mut all = Vec::new();
    let mut topical = Vec::new();
    for (start, end) in quarry_text::identifiers(query) {
        let function_word = quarry_text::is_stopword(&query[start..end].to_lowercase());
        let from = all.len();
        push_identifier(query, start, end, &mut all);
        if !function_word {
            topical.extend(all[from..].iter().map(|t: &Token| t.text.clone()));
        }
    }
    match topical.is_empty() {
        true => all.into_iter().map(|t| t.text).collect(),
        false => topical.into_iter().collect(),
    }
}

fn push_tokens(text: &str, tokens: &mut Vec<Token>) {
    for (start, end) in quarry_text::identifiers(text) {
        push_identifier(text, start, end, tokens);
    }
}

/// Pushes the tokens of the identifier at `text[start..end]`: the whole identifier,
/// lowercased, then each part's stem when it has more than one part, or the whole one's stem
/// when that differs.
fn push_identifier(text: &str, start: usize, end: usize, tokens: &mut Vec<Token>) {
    let identifier = &text[start..end];
    let parts = quarry_text::identifier_parts(identifier);
    let Some(&(first_start, first_end)) = parts.first() else {
        return;
    };
    let only_part = parts.len() == 1 && first_start == 0 && first_end == identifier.len();
    let mut push = |from: usize, to: usize, stemmed: bool| {
        let lowered = text[from..to].to_lowercase();
        let token = match stemmed {
            true => quarry_text::stem(&lowered).into_owned(),
            false => lowered,
        };
        if token.len() <= MAX_TOKEN_BYTES {
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position: tokens.len(),
                text: token,
                position_length: 1,
            });
        }
    };
    push(start, end, false);
    if only_part {
        let lowered = identifier.to_lowercase();
        if quarry_text::stem(&lowered) != lowered.as_str() {
            push(start, end, true);
        }
    } else {
        for (from, to) in parts {
            push(start + from, start + to, true);
        }
    }
}

/// Preprocessor lines and attributes that open with `#` but are code, not comments.
const HASH_DIRECTIVES: &[&str] = &[
    "#[",
    "#!",
    "#include",
    "#define",
    "#if",
    "#else",
    "#elif",
    "#endif",
    "#undef",
    "#pragma",
    "#import",
    "#region",
    "#endregion",
];

/// The comment and docstring lines of a chunk's text, joined: lines that open with a
/// comment marker (`//`, `/*`, `*`, `#` but not `#[`, `#include`..., `--`, `;;`), and the
/// lines of a triple-quoted string that opens a line (Python's docstrings).
pub(super) fn comments(text: &str) -> String {
    const QUOTES: [&str; 2] = ["\"\"\"", "'''"];
    let mut kept = String::new();
    let mut in_docstring: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let comment = if let Some(quote) = in_docstring {
            if trimmed.contains(quote) {
                in_docstring = None;
            }
            true
        } else if let Some(quote) = QUOTES
            .into_iter()
            .find(|q| trimmed.trim_start_matches(['r', 'b', 'u']).starts_with(q))
        {
            let opened = trimmed.find(quote).map_or(0, |i| i + quote.len());
            if !trimmed[opened..].contains(quote) {
                in_docstring = Some(quote);
            }
            true
        } else {
            ["//", "/*", "* ", "--", ";;"]
                .iter()
                .any(|marker| trimmed.starts_with(marker))
                || trimmed == "*"
                || (trimmed.starts_with('#')
                    && !HASH_DIRECTIVES.iter().any(|d| trimmed.starts_with(d)))
        };
        if comment {
            kept.push_str(trimmed);
            kept.push('\n');
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        tokens(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_split_into_their_parts() {
        assert_eq!(
            texts("parseHTTPResponse"),
            ["parsehttpresponse", "pars", "http", "respons"]
        );
        assert_eq!(
            texts("read_to_string"),
            ["read_to_string", "read", "to", "string"]
        );
        assert_eq!(texts("HttpClient"), ["httpclient", "http", "client"]);
        assert_eq!(texts("utf8Decode"), ["utf8decode", "utf", "8", "decod"]);
        assert_eq!(texts("sha256"), ["sha256", "sha", "256"]);
        assert_eq!(
            texts("MAX_TOKEN_LEN"),
            ["max_token_len", "max", "token", "len"]
        );
        assert_eq!(texts("IOError"), ["ioerror", "io", "error"]);
        assert_eq!(texts("getX"), ["getx", "get", "x"]);
    }

    #[test]
    fn single_part_identifiers_give_one_token_and_their_stem() {
        assert_eq!(texts("parse"), ["parse", "pars"]);
        assert_eq!(texts("Parse"), ["parse", "pars"]);
        assert_eq!(texts("config"), ["config"]);
        assert_eq!(texts("x"), ["x"]);
        assert_eq!(texts("42"), ["42"]);
        // Underscores around one part still make it a part of its own.
        assert_eq!(texts("__init__"), ["__init__", "init"]);
    }

    #[test]
    fn punctuation_separates_identifiers() {
        assert_eq!(
            texts("fn parse(x: &str) -> Config {"),
            ["fn", "parse", "pars", "x", "str", "config"]
        );
        assert_eq!(texts("kebab-case"), ["kebab", "case", "cas"]);
        assert_eq!(
            texts("src/http_client/retry.rs"),
            [
                "src",
                "http_client",
                "http",
                "client",
                "retry",
                "retri",
                "rs"
            ]
        );
        assert_eq!(texts("_ __ -- !!"), Vec::<String>::new());
        assert_eq!(texts(""), Vec::<String>::new());
    }

    #[test]
    fn offsets_and_positions_point_into_the_text() {
        let text = "let readToEnd = 1;";
        let tokens = tokens(text);
        for (position, token) in tokens.iter().enumerate() {
            assert_eq!(token.position, position);
            assert_eq!(
                text[token.offset_from..token.offset_to].to_lowercase(),
                token.text
            );
        }
        assert_eq!(tokens[1].offset_from, 4);
        assert_eq!(tokens[3].text, "to");
    }

    #[test]
    fn unicode_letters_do_not_panic() {
        assert_eq!(texts("größeÄndern"), ["größeändern", "größe", "ändern"]);
        assert_eq!(texts("日本語テキスト"), ["日本語テキスト"]);
        assert_eq!(texts("名前Name"), ["名前name", "名前", "nam"]);
        assert_eq!(texts("ǅemal İstanbul ﬁx"), ["ǆemal", "i̇stanbul", "ﬁx"]);
        assert_eq!(texts("x²"), ["x²", "x", "²"]);
        let _ = texts("🦀crab\u{301}e\u{0}\u{FFFF}ß");
    }

    #[test]
    fn inflections_meet_and_exact_identifiers_keep_a_token_of_their_own() {
        assert_eq!(texts("handlers"), ["handlers", "handler"]);
        assert_eq!(texts("handler"), ["handler"]);
        assert_eq!(texts("parseRequests"), ["parserequests", "pars", "request"]);
        let query = query_tokens("Where are the request handlers registered?");
        assert_eq!(
            query.into_iter().collect::<Vec<_>>(),
            ["handler", "handlers", "register", "registered", "request"]
        );
        // A query of function words alone still searches for them.
        assert_eq!(query_tokens("is it").len(), 2);
    }

    #[test]
    fn comments_and_docstrings_are_gathered() {
        let rust =
            "/// Parses the file.\n#[inline]\nfn parse() {\n    // the header first\n    x\n}\n";
        assert_eq!(
            comments(rust),
            "/// Parses the file.\n// the header first\n"
        );
        let python =
            "def f():\n    \"\"\"Return the\n    answer.\"\"\"\n    # cached\n    return 42\n";
        assert_eq!(
            comments(python),
            "\"\"\"Return the\nanswer.\"\"\"\n# cached\n"
        );
        let c = "#include <stdio.h>\n/* open the stream */\nint x;\n";
        assert_eq!(comments(c), "/* open the stream */\n");
    }

    #[test]
    fn long_tokens_are_skipped() {
        let long = "a".repeat(65);
        assert_eq!(texts(&long), Vec::<String>::new());
        let at_limit = "b".repeat(64);
        assert_eq!(texts(&at_limit), [at_limit]);
        // Too long whole, its parts still count.
        let joined = format!("{long}_parse");
        assert_eq!(texts(&joined), ["pars"]);
    }

    #[test]
    fn the_stream_yields_every_token_once() {
        let mut tokenizer = CodeTokenizer::default();
        let mut stream = tokenizer.token_stream("fooBar baz");
        assert_eq!(stream.token().text, "");
        let mut seen = Vec::new();
        while stream.advance() {
            seen.push(stream.token().text.clone());
        }
        assert!(!stream.advance());
        assert_eq!(seen, ["foobar", "foo", "bar", "baz"]);
        // The buffer is reused, not appended to.
        let mut stream = tokenizer.token_stream("one");
        assert_eq!(stream.next().map(|t| t.text.clone()), Some("one".into()));
        assert!(stream.next().is_none());
    }
}
