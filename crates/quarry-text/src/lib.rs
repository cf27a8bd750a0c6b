//! The words of code and of queries, analysed one way for every part of quarry that matches
//! them: the lexical index (quarry-store) and the ranking layers that compare a query with
//! paths and symbols (quarry-rank); and [`quoted`], a caller's text shortened for a message.
//!
//! ```
//! use quarry_text::{identifier_parts, identifiers, is_stopword, stem};
//!
//! let text = "fn parseHTTPResponse(read_to_string)";
//! let found: Vec<&str> = identifiers(text).map(|(start, end)| &text[start..end]).collect();
//! assert_eq!(found, ["fn", "parseHTTPResponse", "read_to_string"]);
//!
//! let parts: Vec<&str> = identifier_parts("parseHTTPResponse")
//!     .into_iter()
//!     .map(|(start, end)| &"parseHTTPResponse"[start..end])
//!     .collect();
//! assert_eq!(parts, ["parse", "HTTP", "Response"]);
//!
//! // Inflections of one word meet at one stem; identifiers are never stemmed whole.
//! assert_eq!(stem("handlers"), stem("handler"));
//! assert_eq!(stem("parsing"), stem("parse"));
//! assert_eq!(stem("dependencies"), stem("dependency"));
//! assert!(is_stopword("the") && !is_stopword("router"));
//! ```

use std::borrow::Cow;

mod quote;

pub use quote::{QUOTED_CHARS, quoted};

/// The byte ranges of the identifiers in `text`: runs of alphanumeric characters (any
/// script) and `_`.
pub fn identifiers(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let in_identifier = |c: char| c.is_alphanumeric() || c == '_';
        let (start, _) = chars.find(|&(_, c)| in_identifier(c))?;
        let mut end = text.len();
        while let Some(&(i, c)) = chars.peek() {
            if !in_identifier(c) {
                end = i;
                break;
            }
            chars.next();
        }
        Some((start, end))
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Upper,
    /// Lowercase, and letters without case (CJK...), which never start a part by case.
    Lower,
    Digit,
}

fn class(c: char) -> Class {
    if c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else {
        Class::Lower
    }
}

/// The byte ranges of an identifier's parts, `_` excluded. Parts split at `_`, at
/// lower-to-upper case changes (`parseConfig`), before the last capital of a run followed by
/// a lowercase letter (`HTTPResponse`), and between letters and digits (`utf8Decode`).
pub fn identifier_parts(identifier: &str) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    for (word_start, word) in split_keep_offsets(identifier, '_') {
        let chars: Vec<(usize, Class)> = word.char_indices().map(|(i, c)| (i, class(c))).collect();
        let mut part_start = 0;
        for j in 1..chars.len() {
            let (offset, here) = chars[j];
            let before = chars[j - 1].1;
            let after = chars.get(j + 1).map(|&(_, c)| c);
            let boundary = match (before, here) {
                (Class::Digit, Class::Digit) => false,
                (Class::Digit, _) | (_, Class::Digit) => true,
                (Class::Lower, Class::Upper) => true,
                // The last capital of a run starts a word: HTTP|Response.
                (Class::Upper, Class::Upper) => after == Some(Class::Lower),
                _ => false,
            };
            if boundary {
                parts.push((word_start + part_start, word_start + offset));
                part_start = offset;
            }
        }
        parts.push((word_start + part_start, word_start + word.len()));
    }
    parts
}

/// The lowercase words of `text`: each identifier's parts (`parseConfig` gives `parse`,
/// `config`).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    identifiers(text).flat_map(move |(start, end)| {
        let identifier = &text[start..end];
        identifier_parts(identifier)
            .into_iter()
            .map(move |(from, to)| identifier[from..to].to_lowercase())
    })
}

/// The non-empty pieces of `text` between `separator`s, with their byte offsets.
fn split_keep_offsets(text: &str, separator: char) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    text.split(separator).filter_map(move |piece| {
        let start = offset;
        offset += piece.len() + separator.len_utf8();
        (!piece.is_empty()).then_some((start, piece))
    })
}

/// A light stem of one lowercase word, so that inflections meet: plurals (`handlers`,
/// `dependencies`, `classes`), `-ing` and `-ed` (`parsing`, `parsed`, `running`), a final
/// `e` (`parse`) and a final `y` (`dependency` and `dependencies` both give `dependenci`).
/// Words of three letters or fewer, and words that are not plain ASCII letters, are left as
/// they are: short words are mostly keywords and abbreviations, where a cut merges unrelated
/// ones.
///
/// Deliberately weaker than Porter's: no derivational suffixes (`parser` and `parse` stay
/// apart, as do `connection` and `connect`), which in code name different things.
pub fn stem(word: &str) -> Cow<'_, str> {
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Cow::Borrowed(word);
    }
    let mut stem = word;
    let mut ends_in_i = false;
    if let Some(base) = word.strip_suffix("ies").filter(|b| b.len() >= 2) {
        stem = base;
        ends_in_i = true;
    } else if word.ends_with("sses") {
        stem = &word[..word.len() - 2];
    } else if word.ends_with('s') && !["ss", "us", "is"].iter().any(|s| word.ends_with(s)) {
        stem = &word[..word.len() - 1];
    } else if let Some(base) = word.strip_suffix("ing").filter(|b| stemmable(b)) {
        stem = undouble(base);
    } else if let Some(base) = word
        .strip_suffix("ed")
        .filter(|b| word.len() >= 6 && stemmable(b))
    {
        stem = undouble(base);
    }
    if stem.len() >= 4 && stem.ends_with('e') {
        stem = &stem[..stem.len() - 1];
    }
    let bytes = stem.as_bytes();
    let n = bytes.len();
    if n >= 4 && bytes[n - 1] == b'y' && !is_vowel(bytes[n - 2]) {
        stem = &stem[..n - 1];
        ends_in_i = true;
    }
    match ends_in_i {
        true => Cow::Owned(format!("{stem}i")),
        false => Cow::Borrowed(stem),
    }
}

/// What is left after cutting `-ing` or `-ed` must still look like a word.
fn stemmable(base: &str) -> bool {
    base.len() >= 3 && base.bytes().any(is_vowel)
}

/// `runn` (from `running`) is `run`; `call` and `pass` keep their double letters.
fn undouble(base: &str) -> &str {
    let bytes = base.as_bytes();
    let n = bytes.len();
    let doubled = n >= 4
        && bytes[n - 1] == bytes[n - 2]
        && !is_vowel(bytes[n - 1])
        && !matches!(bytes[n - 1], b'l' | b's' | b'z');
    if doubled { &base[..n - 1] } else { base }
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// English function words that carry no topic: what a question in words is mostly made of
/// ("how does the router find the handler for a path"). Lowercase.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "any", "are", "as", "at", "be", "been", "before",
    "being", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done",
    "during", "each", "either", "else", "every", "for", "from", "get", "gets", "has", "have",
    "having", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "may", "me",
    "might", "more", "most", "much", "must", "my", "no", "nor", "not", "of", "off", "on", "once",
    "one", "only", "or", "other", "our", "out", "over", "own", "same", "should", "so", "some",
    "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "upon", "us", "very", "was", "we",
    "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "whose", "why",
    "will", "with", "within", "without", "would", "you", "your",
];

/// How two names compare: lowercase, without `_`, so `parse_config`, `parseConfig` and
/// `ParseConfig` are one name.
///
/// ```
/// assert_eq!(quarry_text::fold_name("parse_config"), quarry_text::fold_name("ParseConfig"));
/// ```
pub fn fold_name(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A path's file name without its extensions (`router` for `src/router.test.ts`; a name
/// that starts with its only dot, `.eslintrc`, is kept whole): what a module is called.
///
/// ```
/// assert_eq!(quarry_text::file_stem("src/router.test.ts"), "router");
/// assert_eq!(quarry_text::file_stem(".eslintrc"), ".eslintrc");
/// ```
pub fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.find('.') {
        Some(0) | None => name,
        Some(dot) => &name[..dot],
    }
}

/// Whether `word` (lowercase) is an English function word.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(identifier: &str) -> Vec<&str> {
        identifier_parts(identifier)
            .into_iter()
            .map(|(s, e)| &identifier[s..e])
            .collect()
    }

    #[test]
    fn identifiers_split_at_case_underscores_and_digits() {
        assert_eq!(parts("parseHTTPResponse"), ["parse", "HTTP", "Response"]);
        assert_eq!(parts("read_to_string"), ["read", "to", "string"]);
        assert_eq!(parts("utf8Decode"), ["utf", "8", "Decode"]);
        assert_eq!(parts("IOError"), ["IO", "Error"]);
        assert_eq!(parts("__init__"), ["init"]);
        assert!(parts("_").is_empty());
    }

    #[test]
    fn identifiers_are_runs_of_word_characters() {
        let text = "a::b.c-d(é_1) 名前";
        let found: Vec<&str> = identifiers(text).map(|(s, e)| &text[s..e]).collect();
        assert_eq!(found, ["a", "b", "c", "d", "é_1", "名前"]);
        assert_eq!(identifiers("").count(), 0);
        assert_eq!(identifiers("  ").count(), 0);
    }

    #[test]
    fn stems_join_inflections_and_leave_short_words() {
        for (a, b) in [
            ("handlers", "handler"),
            ("parsing", "parse"),
            ("parsed", "parse"),
            ("caching", "cache"),
            ("running", "run"),
            ("stopped", "stop"),
            ("dependencies", "dependency"),
            ("classes", "class"),
            ("matches", "match"),
            ("requests", "request"),
            ("middlewares", "middleware"),
            ("cookies", "cookie"),
            ("retries", "retrying"),
            ("bodies", "body"),
            ("responses", "response"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        for (a, b) in [
            ("parser", "parse"),
            ("connection", "connect"),
            ("status", "state"),
        ] {
            assert_ne!(stem(a), stem(b), "{a} / {b}");
        }
        assert_eq!(stem("bytes"), stem("byte"));
        assert_eq!(stem("this"), "this");
        assert_eq!(stem("use"), "use");
        assert_eq!(stem("embed"), stem("embedding"));
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("analysis"), "analysis");
        assert_eq!(stem("address"), "address");
        assert_eq!(stem("Routes"), "Routes"); // not lowercase: not a word to stem
        assert_eq!(stem("sha256"), "sha256");
    }

    #[test]
    fn stopwords_are_sorted_for_the_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("where") && is_stopword("a"));
        assert!(!is_stopword("request"));
    }
}
