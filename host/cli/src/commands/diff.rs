//! `goat sessions diff ID`: what a session changed in its workspace, as a
//! unified diff per file (ADR-0073), and the same text for the chat's
//! `/diff` ([`session_diff`]).
//!
//! Net changes: for each file, what it held before the session's first
//! change to it against what its last change left, changes undone left
//! out. Binary files are named, not dumped; every line is escaped.

use std::fmt::Write as _;

use goat_store::{ChangeRecord, Store};
use similar::{ChangeTag, TextDiff};

use crate::text;

/// Lines of context around each change, as `diff -u` and git show.
const CONTEXT_LINES: usize = 3;

/// One file's net change.
struct Net<'a> {
    path: &'a str,
    before: Option<&'a [u8]>,
    /// The last change's hash after (`None`: absent).
    after_sha256: Option<&'a str>,
    /// Its bytes after, when kept.
    after: Option<&'a [u8]>,
    /// It existed before, but its bytes were too large to keep (a
    /// command's change, ADR-0077).
    before_unkept: bool,
}

/// The session's net file changes as unified diffs, one per file in the
/// order the session first changed them; a line saying so when there are
/// none.
pub fn session_diff(store: &Store, session_id: &str) -> anyhow::Result<String> {
    let changes = store.file_changes(session_id)?;
    let mut nets: Vec<Net<'_>> = Vec::new();
    for ChangeRecord { change, .. } in changes.iter().filter(|c| {
        // A directory has no content to show; its files are listed.
        c.undone_at.is_none()
            && c.change.before_kind != goat_store::EntryKind::Dir
            && c.change.after_kind != goat_store::EntryKind::Dir
    }) {
        let after_sha256 = change.after_sha256.as_deref();
        let after = change.after.as_deref();
        match nets.iter_mut().find(|n| n.path == change.path) {
            Some(net) => {
                net.after_sha256 = after_sha256;
                net.after = after;
            }
            None => nets.push(Net {
                path: &change.path,
                before: change.before.as_deref(),
                after_sha256,
                after,
                before_unkept: change.before.is_none() && change.before_sha256.is_some(),
            }),
        }
    }
    let mut out = String::new();
    for net in &nets {
        write_net(&mut out, net);
    }
    if out.is_empty() {
        out = format!(
            "session {} has no file changes to show\n",
            text::escape_controls(session_id)
        );
    }
    Ok(out)
}

fn write_net(out: &mut String, net: &Net<'_>) {
    let path = text::escape_controls(net.path);
    if net.before_unkept {
        let _ = writeln!(
            out,
            "{path}: {}; its earlier bytes were too large to keep",
            if net.after_sha256.is_some() {
                "changed"
            } else {
                "removed"
            }
        );
        return;
    }
    let after = match (net.after_sha256, net.after) {
        (None, _) => Some(None),
        (Some(_), Some(bytes)) => Some(Some(bytes)),
        (Some(_), None) => None,
    };
    let Some(after) = after else {
        let _ = writeln!(
            out,
            "{path}: changed; too large to show (its checkpoint keeps only a hash)"
        );
        return;
    };
    if net.before == after {
        return;
    }
    let decode = |bytes: Option<&[u8]>| match bytes {
        None => Some(String::new()),
        Some(b) => goat_workpath::encoding::decode(b).map(|(text, _)| text),
    };
    let (Some(old), Some(new)) = (decode(net.before), decode(after)) else {
        let size =
            |b: Option<&[u8]>| b.map_or("absent".to_owned(), |b| text::count(b.len(), "byte"));
        let _ = writeln!(
            out,
            "binary file {path} changed ({} before, {} after)",
            size(net.before),
            size(after)
        );
        return;
    };
    let _ = writeln!(
        out,
        "--- {}",
        if net.before.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        }
    );
    let _ = writeln!(
        out,
        "+++ {}",
        if after.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_owned()
        }
    );
    let diff = TextDiff::from_lines(&old, &new);
    for hunk in diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .iter_hunks()
    {
        let _ = writeln!(out, "{}", hunk.header());
        for change in hunk.iter_changes() {
            let sign = match change.tag() {
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
                ChangeTag::Equal => ' ',
            };
            let line = change.value();
            let line = line.strip_suffix('\n').unwrap_or(line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            let _ = writeln!(out, "{sign}{}", text::escape_controls(line));
            if change.missing_newline() {
                let _ = writeln!(out, "\\ No newline at end of file");
            }
        }
    }
}
