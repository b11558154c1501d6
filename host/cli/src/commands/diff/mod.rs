//! `goat sessions diff ID`: what a session changed in its workspace
//! (ADR-0073), in two forms built from the same net changes
//! ([`net_changes`]):
//!
//! - to read (the default, and the chat's `/diff`, [`session_diff`]): a
//!   unified diff per file, every line escaped, binary files named, not
//!   dumped;
//! - to apply (`--format patch`, [`patch`]): a patch in git's format,
//!   raw bytes, binary files, modes and links included, that `git apply`
//!   takes against the tree the session started from.
//!
//! Net changes: for each path, what it held before the session's first
//! change to it against what its last change left, changes undone left
//! out. A command's change set keeps the bytes before but only the hash
//! after (a build's output would otherwise fill the store), so what a
//! command left is read back from the workspace, and used only while it
//! still has the recorded hash ([`read_back`]).

pub(crate) mod patch;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use goat_store::{ChangeRecord, EntryKind, FileChange, Store};
use similar::{ChangeTag, TextDiff};

use crate::text;

/// Lines of context around each change, as `diff -u` and git show.
const CONTEXT_LINES: usize = 3;

/// How `goat sessions diff` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A unified diff per file to read: every line escaped, binary files
    /// named with their sizes.
    #[default]
    Text,
    /// A patch in git's format for `git apply`: the files' bytes as they
    /// are, binary files, modes and links included. Never printed to a
    /// terminal.
    Patch,
}

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

/// What commands left at the paths of `nets` that end as a file hashed
/// only, read back from `workspace` where it still has the recorded hash
/// ([`goat_router::checkpoint::bytes_if_unchanged`]: through no link,
/// at most the checkpoint cap): by index in `nets`, for [`fill_in`].
pub(crate) fn read_back(workspace: &Path, nets: &[Net<'_>]) -> Vec<(usize, Vec<u8>)> {
    nets.iter()
        .enumerate()
        .filter_map(|(i, net)| match net.after {
            Entry::File {
                content: Content::Unkept(sha256),
                ..
            } => goat_router::checkpoint::bytes_if_unchanged(workspace, net.path, sha256)
                .map(|bytes| (i, bytes)),
            _ => None,
        })
        .collect()
}

/// Puts the bytes [`read_back`] found into `nets`.
pub(crate) fn fill_in<'a>(nets: &mut [Net<'a>], read: &'a [(usize, Vec<u8>)]) {
    for (i, bytes) in read {
        if let Some(Net {
            after: Entry::File { content, .. },
            ..
        }) = nets.get_mut(*i)
        {
            *content = Content::Kept(bytes);
        }
    }
}

/// The session's net file changes as unified diffs, one per file in the
/// order the session first changed them; a line saying so when there are
/// none.
pub fn session_diff(store: &Store, session_id: &str) -> anyhow::Result<String> {
    let session = store.session(session_id)?;
    let changes = store.file_changes(&session.id)?;
    let mut nets = net_changes(&changes);
    let read = read_back(Path::new(&session.workspace), &nets);
    fill_in(&mut nets, &read);
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
            "{path}: changed; not shown: GOAT has only a hash of it (over 8 MiB, or written by \
             a command and changed since)"
        );
        return;
    };
    write_text_diff(out, &path, before, after);
}

/// `path`'s change from `before` to `after` (`None`: absent) as a unified
/// diff of escaped lines, or a line saying a binary file changed; nothing
/// when they are the same. `path` is already escaped.
pub(crate) fn write_text_diff(
    out: &mut String,
    path: &str,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) {
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
