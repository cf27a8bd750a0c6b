//! What the ranking reads of a query: whether it names a symbol, the identifiers it
//! mentions, and its topical words.

use quarry_chunk::{ALL_LANGUAGES, Language};
use quarry_text::{identifier_parts, is_stopword, stem, words};

/// A query, analysed once: the engine's legs and every ranking layer read this analysis
/// rather than the text.
///
/// ```
/// use quarry_rank::QueryTerms;
///
/// let symbol = QueryTerms::of("Router::merge");
/// assert_eq!(symbol.symbol(), Some(&["Router".to_owned(), "merge".to_owned()][..]));
/// let words = QueryTerms::of("where do parseConfig results get cached");
/// assert_eq!(words.symbol(), None);
/// assert_eq!(words.identifiers(), ["parseConfig"]);
/// assert_eq!(words.keywords(), ["pars", "config", "result", "cach"]);
/// let bindings = QueryTerms::of("how do the C++ core and the pure-Python runtime differ?");
/// let named: Vec<_> = bindings.languages().iter().map(|(word, l)| (word.as_str(), l.name())).collect();
/// assert_eq!(named, [("c++", "cpp"), ("python", "python")]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerms {
    text: String,
    symbol: Option<Vec<String>>,
    joined: Option<String>,
    identifiers: Vec<String>,
    keywords: Vec<String>,
    words: usize,
    question: bool,
    /// The languages the query names in prose, each with the word that named it.
    languages: Vec<(String, Language)>,
    /// Chunks that define what the query names, sorted: the caller's definitions table.
    definitions: Vec<u128>,
}

/// The words that open a question about how or where something happens.
const INTERROGATIVES: [&str; 7] = ["how", "where", "what", "which", "why", "when", "who"];

/// Separators between the segments of a qualified name: `a::b`, `a.b`, `a->b`, `a\b`,
/// `a#b`.
const QUALIFIERS: [&str; 5] = ["::", "->", ".", "\\", "#"];

impl QueryTerms {
    /// Analyses `query`.
    pub fn of(query: &str) -> Self {
        let query = query.trim();
        let tokens: Vec<&str> = query.split_whitespace().collect();
        let symbol = match tokens.as_slice() {
            [token] => segments(token).filter(|segments| {
                let [only] = segments.as_slice() else {
                    return true;
                };
                !is_stopword(&only.to_lowercase())
            }),
            _ => None,
        };
        let identifiers = match symbol {
            Some(_) => Vec::new(),
            None => tokens
                .iter()
                .map(|t| t.trim_end_matches([',', ';', '?', '!', ':', '.', '"', '\'', '`']))
                .map(|t| t.trim_start_matches(['"', '\'', '`']))
                .filter(|t| identifier_like(t))
                .filter_map(|t| segments(t).map(|_| t.trim_end_matches("()").to_owned()))
                .collect(),
        };
        let mut keywords: Vec<String> = Vec::new();
        for word in words(query) {
            if word.chars().count() < 3 || is_stopword(&word) {
                continue;
            }
            let stemmed = stem(&word).into_owned();
            if !keywords.contains(&stemmed) {
                keywords.push(stemmed);
            }
        }
        // Two to four plain words may spell one name apart (`deflate params`).
        let joined = (symbol.is_none()
            && (2..=4).contains(&tokens.len())
            && tokens.iter().all(|t| {
                t.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && !is_stopword(&t.to_lowercase())
            }))
        .then(|| tokens.concat());
        let opens_with_interrogative = tokens
            .first()
            .is_some_and(|first| INTERROGATIVES.contains(&first.to_lowercase().as_str()));
        QueryTerms {
            text: query.to_owned(),
            languages: match symbol {
                Some(_) => Vec::new(),
                None => named_languages(query),
            },
            symbol,
            joined,
            identifiers,
            keywords,
            words: tokens.len(),
            question: opens_with_interrogative || query.ends_with('?'),
            definitions: Vec::new(),
        }
    }

    /// The query with the chunks that define the symbols it names, as the caller's
    /// definitions table resolved them (quarry-engine's symbol leg): the
    /// [`Definition`](crate::Definition) layer raises them whether or not a chunk is named
    /// after the symbol (a `#define` in a block, a function the parser could not read).
    pub fn with_definitions(mut self, chunks: impl IntoIterator<Item = u128>) -> Self {
        self.definitions.extend(chunks);
        self.definitions.sort_unstable();
        self.definitions.dedup();
        self
    }

    /// Whether the caller resolved the query to any definitions
    /// ([`QueryTerms::with_definitions`]).
    pub fn has_definitions(&self) -> bool {
        !self.definitions.is_empty()
    }

    /// Whether the chunk with `id` defines a symbol the query names
    /// ([`QueryTerms::with_definitions`]).
    pub fn resolves_to(&self, id: u128) -> bool {
        self.definitions.binary_search(&id).is_ok()
    }

    /// The query as asked, trimmed: for the layers that read it whole (a reranker, the
    /// words that say a query is about tests or documentation).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The segments of the symbol the query names, when the whole query is one identifier,
    /// bare (`parse_config`, `Config`, `deepcompare`) or qualified (`Router::merge`,
    /// `pl.tablex.deepcompare`, `$obj->method`): the name is the last segment.
    pub fn symbol(&self) -> Option<&[String]> {
        self.symbol.as_deref()
    }

    /// The words of a query of two to four plain words joined into one name
    /// (`deflate params` → `deflateparams`), which may be a name written apart.
    pub fn joined_words(&self) -> Option<&str> {
        self.joined.as_deref()
    }

    /// Identifiers inside a query in words (`parseConfig`, `read_to_end`, `fs::read`,
    /// `run()`): tokens with an inner `_`, a lower-to-upper case change, a qualifier or a
    /// call's parentheses.
    pub fn identifiers(&self) -> &[String] {
        &self.identifiers
    }

    /// The query's topical words, stemmed, in order: identifier parts and words of three
    /// letters or more that are not English function words.
    pub fn keywords(&self) -> &[String] {
        &self.keywords
    }

    /// The languages a query in words names (`the C++ messages`, `the pure-Python
    /// runtime`; [`Language::prose_names`]), each with its word as written, lower case.
    pub fn languages(&self) -> &[(String, Language)] {
        &self.languages
    }

    /// The query's shape, which sets how much each retrieval leg weighs.
    pub fn shape(&self) -> QueryShape {
        match (&self.symbol, self.words) {
            (Some(segments), _) if segments.len() > 1 || self.symbol_is_compound() => {
                QueryShape::Identifier
            }
            (_, n) if n >= 4 && self.question => QueryShape::Question,
            (_, n) if n >= 4 => QueryShape::Sentence,
            _ => QueryShape::Phrase,
        }
    }

    /// A one-segment symbol of several parts (`parse_config`, `parseConfig`), not a word.
    fn symbol_is_compound(&self) -> bool {
        self.symbol.as_ref().is_some_and(|segments| {
            segments
                .iter()
                .any(|s| s.contains('_') || identifier_parts(s).len() > 1)
        })
    }
}

/// The shape of a query, for the weights of the retrieval legs and the per-file cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryShape {
    /// One identifier with parts or qualifiers: `parse_config`, `parseConfig`, `fs::read`.
    Identifier,
    /// A question of four words or more, opening with how, where, what, which, why, when or
    /// who, or ending with `?`: it asks how something works, which often spans files.
    Question,
    /// A description of four words or more: what a piece of code does.
    Sentence,
    /// Anything else: a word or a few (`retry backoff`).
    Phrase,
}

/// The languages `query` names by one of their [`Language::prose_names`], in order, once
/// each: its words split at anything but letters, digits, `+` and `#` (`C++`, `C#`).
fn named_languages(query: &str) -> Vec<(String, Language)> {
    let mut named: Vec<(String, Language)> = Vec::new();
    for word in query.split(|c: char| !(c.is_alphanumeric() || c == '+' || c == '#')) {
        let word = word.to_lowercase();
        for &language in ALL_LANGUAGES {
            if language.prose_names().contains(&word.as_str())
                && !named.iter().any(|(_, l)| *l == language)
            {
                named.push((word.clone(), language));
            }
        }
    }
    named
}

/// Whether a definition named `defined`, of `kind`, is only a namesake of the name `asked`
/// it matched without case: the name asked for is capitalised and the definition is no type
/// and starts in lower case (the function `list` for `List`; the C type `session_state`
/// for `SessionState` is no namesake). Who writes a capital asks for the type.
pub fn is_namesake(asked: &str, defined: &str, kind: quarry_chunk::ChunkKind) -> bool {
    asked.starts_with(char::is_uppercase)
        && defined.starts_with(char::is_lowercase)
        && !kind.is_type()
}

/// The segments of `token` if it is a (possibly qualified) identifier, with a `()` or `$`
/// allowed around it: `Router::merge` is `Router`, `merge`.
pub fn segments(token: &str) -> Option<Vec<String>> {
    let token = token.trim_end_matches("()").trim_start_matches('$');
    let mut segments = vec![token.to_owned()];
    for separator in QUALIFIERS {
        segments = segments
            .iter()
            .flat_map(|s| s.split(separator).map(str::to_owned))
            .collect();
    }
    let identifier = |s: &String| {
        !s.is_empty()
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
            && s.chars().any(char::is_alphabetic)
    };
    segments.iter().all(identifier).then_some(segments)
}

/// Whether a whitespace-free token is code rather than a word: `parse_config`,
/// `parseConfig`, `HashMap`, `fs::read`, `foo.bar`, `$a->b`, `run()` (but not `e.g.`, `1.25`
/// or the end of a sentence).
pub(crate) fn identifier_like(token: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let chars: Vec<char> = token.chars().collect();
    let snake = (1..chars.len().saturating_sub(1))
        .any(|i| chars[i] == '_' && ident(chars[i - 1]) && ident(chars[i + 1]));
    let camel = chars
        .windows(2)
        .any(|pair| pair[0].is_lowercase() && pair[1].is_uppercase());
    let name = |part: &str| {
        part.chars().count() > 1
            && part.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && part.chars().all(ident)
    };
    let parts: Vec<&str> = token.split('.').collect();
    let dotted = parts.windows(2).any(|pair| name(pair[0]) && name(pair[1]));
    snake || camel || dotted || ["::", "->", "()"].iter().any(|s| token.contains(s))
}

/// How a chunk's or a query's name compares ([`quarry_text::fold_name`]).
pub(crate) use quarry_text::fold_name as normalise;

#[cfg(test)]
mod tests {
    use super::*;

    fn symbol(query: &str) -> Option<Vec<String>> {
        QueryTerms::of(query).symbol().map(<[String]>::to_vec)
    }

    #[test]
    fn whole_queries_that_are_identifiers_name_a_symbol() {
        assert_eq!(symbol("parse_config"), Some(vec!["parse_config".into()]));
        assert_eq!(
            symbol("Router::merge"),
            Some(vec!["Router".into(), "merge".into()])
        );
        assert_eq!(
            symbol("pl.tablex.deepcompare"),
            Some(vec!["pl".into(), "tablex".into(), "deepcompare".into()])
        );
        assert_eq!(
            symbol("$logger->pushHandler()"),
            Some(vec!["logger".into(), "pushHandler".into()])
        );
        assert_eq!(symbol("deepcompare"), Some(vec!["deepcompare".into()]));
        assert_eq!(symbol("where"), None);
        assert_eq!(symbol("parse the config"), None);
        assert_eq!(symbol("1.25"), None);
        assert_eq!(symbol("a..b"), None);
        assert_eq!(symbol(""), None);
    }

    #[test]
    fn shapes_follow_the_query() {
        use QueryShape::{Identifier, Phrase, Question, Sentence};
        for (query, shape) in [
            ("parse_config", Identifier),
            ("parseConfig", Identifier),
            ("fs::read", Identifier),
            ("parse", Phrase),
            ("retry backoff", Phrase),
            ("where is the configuration file read", Question),
            ("does the cache expire entries?", Question),
            ("read the configuration file at startup", Sentence),
            ("how retries work", Phrase),
        ] {
            assert_eq!(QueryTerms::of(query).shape(), shape, "{query}");
        }
    }

    #[test]
    fn identifiers_inside_words_are_found() {
        let terms =
            QueryTerms::of("why does read_to_end call fs::read, e.g. run() on a 1.5 GB file?");
        assert_eq!(terms.identifiers(), ["read_to_end", "fs::read", "run"]);
        assert!(
            QueryTerms::of("how are requests retried")
                .identifiers()
                .is_empty()
        );
    }

    #[test]
    fn keywords_are_topical_stems() {
        let terms = QueryTerms::of("How are the request handlers registered?");
        assert_eq!(terms.keywords(), ["request", "handler", "register"]);
        assert!(QueryTerms::of("what is it").keywords().is_empty());
        assert_eq!(normalise("parse_config"), normalise("ParseConfig"));
    }
}
