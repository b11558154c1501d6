//! `goat sessions diff ID`: what a session changed in its workspace, as a
//! unified diff per file (ADR-0073), and the same text for the chat's
//! `/diff` ([`session_diff`]).
//!
//! Net changes ([`net_changes`]): for each path, what it held before the
//! session's first change to it against what its last change left,
//! changes undone left out. Binary files are named, not dumped; every
//! line is escaped.

use std::collections::HashMap;
use std::fmt::Write as _;

use goat_store::{ChangeRecord, EntryKind, FileChange, Store};
use similar::{ChangeTag, TextDiff};

use crate::text;

/// Lines of context around each change, as `diff -u` and git show.
const CONTEXT_LINES: usize = 3;

/// What a path held at one end of a session's net change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// Nothing.
    Absent,
    /// A regular file and its permission bits (`0o7777`; `None`: not
    /// recorded).
    File {
        content: Content<'a>,
        mode: Option<u32>,
    },
    /// A symbolic link and its target.
    Link(Content<'a>),
    /// A directory and its permission bits.
    Dir(u32),
}

/// A file's bytes (or a link's target) as the store holds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Content<'a> {
    /// Kept whole.
    Kept(&'a [u8]),
    /// Too large to keep (ADR-0073, ADR-0077): only a hash was recorded,
    /// the sha256 in hex (or a word saying why not even that).
    Unkept(&'a str),
}

impl<'a> Entry<'a> {
    /// What `change`'s path held before it.
    fn before(change: &'a FileChange) -> Self {
        match change.before_kind {
            EntryKind::Dir => change.before_mode.map_or(Self::Absent, Self::Dir),
            EntryKind::Link => change
                .before
                .as_deref()
                .map_or(Self::Absent, |t| Self::Link(Content::Kept(t))),
            EntryKind::File => {
                let content = match (&change.before, &change.before_sha256) {
                    (Some(bytes), _) => Content::Kept(bytes),
                    (None, Some(sha256)) => Content::Unkept(sha256),
                    (None, None) => return Self::Absent,
                };
                Self::File {
                    content,
                    mode: change.before_mode,
                }
            }
        }
    }

    /// What `change` left at its path.
    fn after(change: &'a FileChange) -> Self {
        if change.after_kind == EntryKind::Dir {
            return change.after_mode.map_or(Self::Absent, Self::Dir);
        }
        let Some(sha256) = &change.after_sha256 else {
            return Self::Absent;
        };
        let content = change
            .after
            .as_deref()
            .map_or(Content::Unkept(sha256), Content::Kept);
        match change.after_kind {
            EntryKind::Link => Self::Link(content),
            _ => Self::File {
                content,
                // Rows an older GOAT wrote hold no file's bits after: the
                // bits it had before this change are the best guess (no
                // Pen tool changes them).
                mode: change.after_mode.or(match change.before_kind {
                    EntryKind::File => change.before_mode,
                    EntryKind::Link | EntryKind::Dir => None,
                }),
            },
        }
    }

    /// Its bytes for the text diff: `Some(None)` for nothing to show (a
    /// directory has no content; its files are listed), `None` when not
    /// kept.
    fn shown_bytes(self) -> Option<Option<&'a [u8]>> {
        match self {
            Self::Absent | Self::Dir(_) => Some(None),
            Self::File { content, .. } | Self::Link(content) => match content {
                Content::Kept(bytes) => Some(Some(bytes)),
                Content::Unkept(_) => None,
            },
        }
    }

    /// Whether a file or link is there.
    fn is_file_or_link(self) -> bool {
        matches!(self, Self::File { .. } | Self::Link(_))
    }
}

/// One path's net change over a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Net<'a> {
    /// The path inside the workspace, `/`-separated.
    pub(crate) path: &'a str,
    /// What it held before the session's first change to it.
    pub(crate) before: Entry<'a>,
    /// What its last change left.
    pub(crate) after: Entry<'a>,
}

/// The net change of each path `changes` (a session's, oldest first)
/// touch, in the order the session first changed them; changes undone
/// are left out. Undo takes back a whole turn, latest first, so what is
/// left of a path is a run from its first change.
pub(crate) fn net_changes(changes: &[ChangeRecord]) -> Vec<Net<'_>> {
    let mut nets: Vec<Net<'_>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for ChangeRecord { change, .. } in changes.iter().filter(|c| c.undone_at.is_none()) {
        let after = Entry::after(change);
        match index.get(change.path.as_str()) {
            Some(&i) => nets[i].after = after,
            None => {
                index.insert(&change.path, nets.len());
                nets.push(Net {
                    path: &change.path,
                    before: Entry::before(change),
                    after,
                });
            }
        }
    }
    nets
}

/// The session's net file changes as unified diffs, one per file in the
/// order the session first changed them; a line saying so when there are
/// none.
pub fn session_diff(store: &Store, session_id: &str) -> anyhow::Result<String> {
    let changes = store.file_changes(session_id)?;
    let mut out = String::new();
    for net in &net_changes(&changes) {
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
    let Some(before) = net.before.shown_bytes() else {
        let _ = writeln!(
            out,
            "{path}: {}; its earlier bytes were too large to keep",
            if net.after.is_file_or_link() {
                "changed"
            } else {
                "removed"
            }
        );
        return;
    };
    let Some(after) = net.after.shown_bytes() else {
        let _ = writeln!(
            out,
            "{path}: changed; too large to show (its checkpoint keeps only a hash)"
        );
        return;
    };
    if before == after {
        return;
    }
    let decode = |bytes: Option<&[u8]>| match bytes {
        None => Some(String::new()),
        Some(b) => goat_workpath::encoding::decode(b).map(|(text, _)| text),
    };
    let (Some(old), Some(new)) = (decode(before), decode(after)) else {
        let size =
            |b: Option<&[u8]>| b.map_or("absent".to_owned(), |b| text::count(b.len(), "byte"));
        let _ = writeln!(
            out,
            "binary file {path} changed ({} before, {} after)",
            size(before),
            size(after)
        );
        return;
    };
    let _ = writeln!(
        out,
        "--- {}",
        if before.is_some() {
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
