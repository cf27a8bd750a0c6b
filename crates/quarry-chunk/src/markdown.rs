//! Markdown: one piece per heading and the text under it, up to the next heading.

use crate::ChunkKind;
use crate::lines::Lines;
use crate::piece::Piece;

pub(crate) fn pieces(lines: &Lines) -> Vec<Piece> {
    let mut pieces = Vec::new();
    // The open headings, outermost first, with their levels.
    let mut outline: Vec<(usize, String)> = Vec::new();
    let mut fence: Option<&str> = None;
    let mut current = Piece {
        lines: 0..0,
        kind: ChunkKind::Section,
        name: None,
        container: Vec::new(),
        signature: None,
    };
    for line_no in 0..lines.count() {
        let line = lines.line(line_no);
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        } else if let Some((level, title)) = heading(line) {
            if current.lines.start < line_no {
                current.lines.end = line_no;
                pieces.push(current);
            }
            outline.retain(|(l, _)| *l < level);
            current = Piece {
                lines: line_no..line_no,
                kind: ChunkKind::Section,
                name: Some(title.clone()),
                container: outline.iter().map(|(_, t)| t.clone()).collect(),
                signature: Some(line.trim().to_owned()),
            };
            outline.push((level, title));
        }
    }
    current.lines.end = lines.count();
    pieces.push(current);
    pieces
}

/// An ATX heading (`## Title`, up to three spaces of indent): its level and title.
fn heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    let title = &rest[level..];
    if !(1..=6).contains(&level) || !(title.is_empty() || title.starts_with([' ', '\t'])) {
        return None;
    }
    let title = title.trim().trim_end_matches('#').trim_end();
    Some((level, title.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::heading;

    #[test]
    fn headings() {
        assert_eq!(heading("## Install ##"), Some((2, "Install".into())));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("    # indented code"), None);
        assert_eq!(heading("####### seven"), None);
    }
}
