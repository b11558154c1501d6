//! The changed region between two texts, by lines, as the approval shows
//! it: marked, escaped and cut.

use crate::text::{count, escape_controls, truncate};

/// Most lines of each side of a change shown in an approval.
pub(super) const PREVIEW_LINES: usize = 8;

/// How much of a change a preview shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// Up to [`PREVIEW_LINES`] of each side: the question itself.
    Short,
    /// Every line (`[v]iew`, through the pager), up to [`FULL_PREVIEW_LINES`].
    Full,
}

impl Extent {
    fn lines(self) -> usize {
        match self {
            Self::Short => PREVIEW_LINES,
            Self::Full => FULL_PREVIEW_LINES,
        }
    }
}

/// Most lines of each side a full view shows: far more than any change a
/// person reads before answering (the file itself is capped at 1 MiB), a
/// bound on what is piped to the pager.
pub(super) const FULL_PREVIEW_LINES: usize = 100_000;

/// Longest preview line, in characters.
pub(super) const PREVIEW_LINE_CHARS: usize = 160;

/// The changed region between `old` and `new`, by lines: what is left when
/// the common first and last lines are set aside, as `-` and `+` lines.
pub(super) fn diff(old: &str, new: &str, extent: Extent) -> Vec<String> {
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
    lines.extend(side('-', removed, extent));
    lines.extend(side('+', added, extent));
    lines
}

/// As many of `lines` as `extent` shows, each marked, escaped and cut.
pub(super) fn side(mark: char, lines: &[&str], extent: Extent) -> Vec<String> {
    let limit = extent.lines();
    let mut out: Vec<String> = lines
        .iter()
        .take(limit)
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
    if lines.len() > limit {
        let more = if extent == Extent::Short {
            "more ([v]iew shows them)"
        } else {
            "more"
        };
        out.push(format!(
            "{mark} … {} {more}",
            count(lines.len() - limit, "line")
        ));
    }
    out
}
