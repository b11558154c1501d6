//! At a terminal: each attempt's outcome, check and diff, and the
//! person's pick of the one that lands.

use std::io::{self, Write};
use std::path::Path;

use goat_command::attempt::AttemptLayer;
use goat_session::Outcome as RunOutcome;

use super::{Ran, Shared};
use crate::text;

/// The most of one file shown in an attempt's diff.
const SHOWN_FILE_BYTES: u64 = 1024 * 1024;

/// At a terminal: each attempt's outcome, check and diff, on stderr, then
/// the person's pick (`default` on Enter), read by `read_line` (given the
/// question). `None`: none lands.
pub(super) fn pick_at_terminal(
    shared: &Shared,
    ran: &[Ran],
    default: Option<u32>,
    read_line: &mut dyn FnMut(&str) -> Option<String>,
) -> anyhow::Result<Option<u32>> {
    let mut err = io::stderr().lock();
    for r in ran {
        let check = match &r.check {
            Some((0, _)) => "check passed".to_owned(),
            Some((code, _)) => format!("check failed (exit {code})"),
            None => "no check".to_owned(),
        };
        writeln!(
            err,
            "\n== attempt {}: {}; {check}",
            r.number,
            r.outcome.map_or("no outcome", RunOutcome::as_str)
        )?;
        write!(err, "{}", layer_diff(shared, r.number))?;
    }
    let default_said = default.map_or("none".to_owned(), |n| n.to_string());
    err.flush()?;
    drop(err);
    for _ in 0..3 {
        let Some(line) = read_line(&format!(
            "\nland which attempt? a number, or none (default {default_said}): "
        )) else {
            return Ok(None);
        };
        let mut err = io::stderr().lock();
        match line.trim() {
            "" => return Ok(default),
            "none" | "n" => return Ok(None),
            word => match word.parse::<u32>() {
                Ok(n) if ran.iter().any(|r| r.number == n) => return Ok(Some(n)),
                _ => writeln!(
                    err,
                    "'{}' is not one of the attempts",
                    text::escape_controls(word)
                )?,
            },
        }
    }
    Ok(None)
}

/// What attempt `n`'s layer changed, as unified diffs of escaped lines.
fn layer_diff(shared: &Shared, n: u32) -> String {
    let layer = shared.base.join(n.to_string());
    let pending = match AttemptLayer::open(&layer).and_then(|l| l.pending(&shared.workspace)) {
        Ok(pending) => pending,
        Err(e) => return format!("its changes cannot be read: {e}\n"),
    };
    let read = |path: &Path| -> Option<Vec<u8>> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        (meta.is_file() && meta.len() <= SHOWN_FILE_BYTES)
            .then(|| std::fs::read(path).ok())
            .flatten()
    };
    let mut out = String::new();
    if pending.set.changes.is_empty() {
        out.push_str("no changes\n");
    }
    for change in &pending.set.changes {
        let shown = text::escape_controls(&change.path);
        let file = |node: &goat_command::Node| matches!(node, goat_command::Node::File { .. });
        if !file(&change.before) && !file(&change.after) {
            let what = if change.after.exists() {
                "changed"
            } else {
                "removed"
            };
            out.push_str(&format!("{shown}: {what}\n"));
            continue;
        }
        let before = file(&change.before)
            .then(|| read(&shared.workspace.join(&change.path)))
            .flatten();
        let after = file(&change.after)
            .then(|| read(&layer.join("upper").join(&change.path)))
            .flatten();
        if (file(&change.before) && before.is_none()) || (file(&change.after) && after.is_none()) {
            out.push_str(&format!("{shown}: changed; too large to show here\n"));
            continue;
        }
        crate::commands::diff::write_text_diff(
            &mut out,
            &shown,
            before.as_deref(),
            after.as_deref(),
        );
    }
    out
}
