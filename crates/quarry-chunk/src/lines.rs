//! Line bookkeeping and the line-window splitter shared by every chunking strategy.

use std::ops::Range;

/// Byte offsets of the lines of a text. Line `i` (0-based) spans
/// `starts[i]..starts[i + 1]`, its newline included.
pub(crate) struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        if *starts.last().unwrap() != text.len() {
            starts.push(text.len());
        }
        Lines { text, starts }
    }

    /// Number of lines (a final line without a newline counts).
    pub(crate) fn count(&self) -> usize {
        self.starts.len() - 1
    }

    /// The line holding byte `offset`.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(line) => line.min(self.count().saturating_sub(1)),
            Err(next) => next - 1,
        }
    }

    /// The byte range of a range of lines.
    pub(crate) fn bytes(&self, lines: Range<usize>) -> Range<usize> {
        self.starts[lines.start]..self.starts[lines.end]
    }

    /// The text of a range of lines.
    pub(crate) fn text(&self, lines: Range<usize>) -> &'t str {
        &self.text[self.bytes(lines)]
    }

    /// The text of one line, newline excluded.
    pub(crate) fn line(&self, line: usize) -> &'t str {
        self.text(line..line + 1).trim_end_matches(['\n', '\r'])
    }

    pub(crate) fn is_blank(&self, line: usize) -> bool {
        self.line(line).trim().is_empty()
    }

    /// Length of a range of lines in characters, the unit of the chunk budget.
    pub(crate) fn chars(&self, lines: Range<usize>) -> usize {
        self.text(lines).chars().count()
    }

    /// `lines` without blank lines at either end; empty if all are blank.
    pub(crate) fn trim(&self, mut lines: Range<usize>) -> Range<usize> {
        while lines.start < lines.end && self.is_blank(lines.start) {
            lines.start += 1;
        }
        while lines.end > lines.start && self.is_blank(lines.end - 1) {
            lines.end -= 1;
        }
        lines
    }

    /// Splits `lines` into windows of at most `budget` characters that overlap by
    /// up to `overlap` lines. A line longer than the budget becomes a window of its
    /// own, flagged `true` (it cannot be split further). Blank lines at a window's
    /// edges are dropped; every non-blank line lands in some window.
    pub(crate) fn windows(
        &self,
        lines: Range<usize>,
        budget: usize,
        overlap: usize,
    ) -> Vec<(Range<usize>, bool)> {
        let mut windows = Vec::new();
        let mut start = lines.start;
        loop {
            let rest = self.trim(start..lines.end);
            if rest.is_empty() {
                return windows;
            }
            start = rest.start;
            let mut end = start + 1;
            let mut size = self.chars(start..end);
            let oversized = size > budget;
            while end < rest.end {
                let next = self.chars(end..end + 1);
                if size + next > budget {
                    break;
                }
                size += next;
                end += 1;
            }
            let window = self.trim(start..end);
            windows.push((window.clone(), oversized));
            if end >= rest.end {
                return windows;
            }
            // Step back by as many lines as fit together with the next line, so the
            // next window always makes progress.
            let mut back = 0;
            while back < overlap
                && end - back - 1 > window.start
                && self.chars(end - back - 1..end + 1) <= budget
            {
                back += 1;
            }
            start = end - back;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_offsets() {
        let lines = Lines::new("a\nbb\n\nccc");
        assert_eq!(lines.count(), 4);
        assert_eq!(lines.bytes(1..2), 2..5);
        assert_eq!(lines.line(3), "ccc");
        assert_eq!(lines.line_of(0), 0);
        assert_eq!(lines.line_of(4), 1);
        assert_eq!(lines.line_of(9), 3);
        assert_eq!(Lines::new("a\n").count(), 1);
        assert_eq!(Lines::new("").count(), 0);
    }

    #[test]
    fn windows_overlap_and_cover_everything() {
        let text: String = (0..20).map(|i| format!("line {i:02}\n")).collect();
        let lines = Lines::new(&text);
        // Each line is 8 chars: three fit in a 24-char budget.
        let windows = lines.windows(0..20, 24, 1);
        assert_eq!(windows[0], (0..3, false));
        assert_eq!(windows[1], (2..5, false));
        assert_eq!(windows.last().unwrap().0.end, 20);
    }

    #[test]
    fn a_line_over_budget_is_its_own_flagged_window() {
        let text = format!("short\n{}\nshort\n", "x".repeat(50));
        let lines = Lines::new(&text);
        assert_eq!(
            lines.windows(0..3, 10, 2),
            vec![(0..1, false), (1..2, true), (2..3, false)]
        );
    }
}
