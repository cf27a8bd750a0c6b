//! [`quoted`]: a caller's text inside a message, never longer than a line.

/// How many characters of a caller's text a message quotes.
pub const QUOTED_CHARS: usize = 40;

/// `text` quoted for an error message, as `{:?}` quotes it, but at most [`QUOTED_CHARS`]
/// characters of it, followed by its length where it is cut: an argument may be megabytes
/// long, and a message that repeats it whole would be too.
///
/// ```
/// use quarry_text::quoted;
///
/// assert_eq!(quoted("src/*.rs"), r#""src/*.rs""#);
/// let long = "x".repeat(10_000);
/// assert_eq!(quoted(&long), format!("\"{}…\" (10000 bytes)", "x".repeat(40)));
/// ```
pub fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => {
            let shown = format!("{:?}", &text[..cut]);
            let open = &shown[..shown.len() - 1];
            format!("{open}…\" ({} bytes)", text.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multibyte_text_is_cut_between_characters() {
        let text = "é".repeat(100);
        let shown = quoted(&text);
        assert!(
            shown.starts_with(&format!("\"{}", "é".repeat(40))),
            "{shown}"
        );
        assert!(shown.ends_with("…\" (200 bytes)"), "{shown}");
        assert_eq!(quoted(&"é".repeat(40)), format!("\"{}\"", "é".repeat(40)));
    }
}
