//! The changed region between two texts, by lines, as the approval shows
//! it: marked, escaped and cut.

use crate::text::{count, escape_controls, truncate};

/// Most lines of each side of a change shown in an approval.
pub(super) const PREVIEW_LINES: usize = 8;

/// Longest preview line, in characters.
pub(super) const PREVIEW_LINE_CHARS: usize = 160;

/// The changed region between `old` and `new`, by lines: what is left when
/// the common first and last lines are set aside, as `-` and `+` lines.
pub(super) fn diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let removed = &a[prefix..a.len() - suffix];
    let added = &b[prefix..b.len() - suffix];
    if removed.is_empty() && added.is_empty() {
        // Only the line ends differ (a final newline, CRLF).
        return vec!["only line endings change".to_owned()];
    }
    let mut lines = vec![format!(
        "at line {}: -{} +{}",
        prefix + 1,
        count(removed.len(), "line"),
        count(added.len(), "line")
    )];
    lines.extend(side('-', removed));
    lines.extend(side('+', added));
    lines
}

/// Up to [`PREVIEW_LINES`] of `lines`, each marked, escaped and cut.
pub(super) fn side(mark: char, lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|line| {
            format!(
                "{mark} {}",
                truncate(
                    &escape_controls(&line.replace('\t', "    ")),
                    PREVIEW_LINE_CHARS
                )
            )
        })
        .collect();
    if lines.len() > PREVIEW_LINES {
        out.push(format!(
            "{mark} … {} more",
            count(lines.len() - PREVIEW_LINES, "line")
        ));
    }
    out
}
