//! `goat sessions diff ID --format patch`: a session's net changes as a
//! patch in git's format, which `git apply` takes against the tree the
//! session started from (and `patch -p1` too, when every file is text).
//!
//! What goes in, as `git diff --binary --full-index` writes it: a `diff
//! --git` header per path; `new file mode`, `deleted file mode`, `old
//! mode`/`new mode` (git keeps only whether a file is executable:
//! `100644` or `100755`; a link is `120000`, its target the content);
//! full `index` lines (git's SHA-1 blob ids: `git apply` checks a binary
//! patch against them, so in a repository made with `--object-format=
//! sha256` it refuses binary hunks, text ones still apply); text as unified hunks of the raw lines, with `\ No
//! newline at end of file`; anything with a NUL byte as a `GIT binary
//! patch` of `literal` hunks, forward and reverse. A file that became a
//! link (or the other way) is a removal then a creation, as git writes a
//! type change. Directories are not in a patch: `git apply` makes and
//! removes them as their files need, so only an empty one made or
//! removed, or a directory's bits, are lost; [`Patch::dirs_left_out`]
//! names those.
//!
//! The bytes come from the store, and what a command left from the
//! workspace while it still has the recorded hash ([`read_back`]). A file
//! whose bytes before or after cannot be had (over the checkpoint cap, or
//! written by a command and changed since) cannot be in a patch:
//! [`patch`] fails naming every such path, rather than leave them out of
//! a patch that would then apply and be wrong.
//!
//! # Security
//!
//! A patch is data for a program, not text for a person: the files' bytes
//! go out as the session left them, unescaped, since an escaped patch
//! would not apply, and what the model wrote may hold terminal control
//! sequences. So the patch is built whole in memory and written only to
//! stdout, and only when stdout is a file or a pipe (`sessions diff`
//! refuses a terminal); never mix it into anything a terminal shows.
//! Paths, which the model also chose, are C-quoted as git quotes them, so
//! no name can break a header line or smuggle one in.

mod binary;

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use goat_store::{SessionInfo, Store};
use sha1::{Digest as _, Sha1};
use similar::{Algorithm, DiffTag};

use super::{CONTEXT_LINES, Content, Entry, Net, fill_in, net_changes, read_back};
use crate::text;

/// A whole patch, ready to write.
#[derive(Debug)]
pub(crate) struct Patch {
    /// The patch in git's format; empty when the session changed nothing
    /// a patch can hold.
    pub(crate) bytes: Vec<u8>,
    /// Directory changes a patch cannot carry, in the session's order.
    pub(crate) dirs_left_out: Vec<DirLeftOut>,
}

/// A directory change left out of a patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DirLeftOut {
    /// The directory, `/`-separated, inside the workspace.
    pub(crate) path: String,
    /// What the session did to it.
    pub(crate) change: DirChange,
}

/// What a session did to a directory that a patch cannot say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DirChange {
    /// Made it, and left nothing in it a patch creates.
    CreatedEmpty,
    /// Removed it, and nothing a patch removes was in it.
    RemovedEmpty,
    /// Changed its permission bits.
    Mode { before: u32, after: u32 },
}

impl fmt::Display for DirLeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = text::escape_controls(&self.path);
        match self.change {
            DirChange::CreatedEmpty => write!(f, "the empty directory {path}/ it made"),
            DirChange::RemovedEmpty => write!(f, "the empty directory {path}/ it removed"),
            DirChange::Mode { before, after } => write!(
                f,
                "the permissions of directory {path}/ ({before:04o} to {after:04o})"
            ),
        }
    }
}

/// Which of a path's states was not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// What it held before the session.
    Before,
    /// What the session left.
    After,
}

/// Why no patch could be made: the paths whose bytes GOAT has only a
/// hash of. An error for the binary's `main` (exit 2).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotKept(pub(crate) Vec<(String, Side)>);

impl fmt::Display for NotKept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no patch written: GOAT has only a hash of what {} held, so a patch cannot say it:",
            if self.0.len() == 1 {
                "this file"
            } else {
                "these files"
            }
        )?;
        for (path, side) in &self.0 {
            let why = match side {
                Side::Before => {
                    "before the session: too large to keep (over 8 MiB, or past 256 MiB in one \
                     command)"
                }
                Side::After => {
                    "as the session left it: too large to keep (over 8 MiB), or, written by a \
                     command, changed in the workspace since"
                }
            };
            write!(f, "\n  {} ({why})", text::escape_controls(path))?;
        }
        write!(
            f,
            "\n`goat sessions diff ID` (without --format patch) shows every change it can"
        )
    }
}

impl std::error::Error for NotKept {}

/// `session`'s net changes as one patch, what its commands left read
/// back from its workspace ([`read_back`]).
pub(crate) fn session_patch(store: &Store, session: &SessionInfo) -> anyhow::Result<Patch> {
    let changes = store.file_changes(&session.id)?;
    let mut nets = net_changes(&changes);
    let read = read_back(Path::new(&session.workspace), &nets);
    fill_in(&mut nets, &read);
    Ok(patch(&nets)?)
}

/// The session's net changes `nets` as one patch, or every path it cannot
/// hold.
pub(crate) fn patch(nets: &[Net<'_>]) -> Result<Patch, NotKept> {
    let mut not_kept = Vec::new();
    let mut bytes = Vec::new();
    for net in nets {
        match (Blob::of(net.before), Blob::of(net.after)) {
            (None, None) => {}
            (None, Some(new)) => created(&mut bytes, net.path, new, &mut not_kept),
            (Some(old), None) => removed(&mut bytes, net.path, old, &mut not_kept),
            (Some(old), Some(new)) if old.is_link != new.is_link => {
                removed(&mut bytes, net.path, old, &mut not_kept);
                created(&mut bytes, net.path, new, &mut not_kept);
            }
            (Some(old), Some(new)) => changed(&mut bytes, net.path, old, new, &mut not_kept),
        }
    }
    if !not_kept.is_empty() {
        return Err(NotKept(not_kept));
    }
    Ok(Patch {
        bytes,
        dirs_left_out: dirs_left_out(nets),
    })
}

/// A file or link as a patch states it: its content and git's mode.
#[derive(Clone, Copy)]
struct Blob<'a> {
    content: Content<'a>,
    /// `0o100644`, `0o100755` or `0o120000`.
    mode: u32,
    is_link: bool,
}

impl<'a> Blob<'a> {
    /// `None` for nothing, or a directory.
    fn of(entry: Entry<'a>) -> Option<Self> {
        match entry {
            Entry::Absent | Entry::Dir(_) => None,
            Entry::File { content, mode } => Some(Self {
                content,
                // Git keeps one bit of a file's mode: whether its owner
                // may run it (`ce_permissions`). Unrecorded bits are a
                // plain file's.
                mode: if mode.is_some_and(|m| m & 0o100 != 0) {
                    0o100_755
                } else {
                    0o100_644
                },
                is_link: false,
            }),
            Entry::Link(content) => Some(Self {
                content,
                mode: 0o120_000,
                is_link: true,
            }),
        }
    }

    /// Its bytes, or its path put on the not-kept list.
    fn bytes(self, path: &str, side: Side, not_kept: &mut Vec<(String, Side)>) -> Option<&'a [u8]> {
        match self.content {
            Content::Kept(bytes) => Some(bytes),
            Content::Unkept(_) => {
                not_kept.push((path.to_owned(), side));
                None
            }
        }
    }
}

/// Git's id of a blob holding `bytes`: the SHA-1 of `blob LEN\0` and the
/// bytes, in hex.
fn blob_id(bytes: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The id an absent side has in an `index` line.
const NO_BLOB: &str = "0000000000000000000000000000000000000000";

fn created(out: &mut Vec<u8>, path: &str, new: Blob<'_>, not_kept: &mut Vec<(String, Side)>) {
    let Some(bytes) = new.bytes(path, Side::After, not_kept) else {
        return;
    };
    header(out, path);
    line(out, format!("new file mode {:06o}", new.mode));
    line(out, format!("index {NO_BLOB}..{}", blob_id(bytes)));
    content(out, path, None, Some(bytes));
}

fn removed(out: &mut Vec<u8>, path: &str, old: Blob<'_>, not_kept: &mut Vec<(String, Side)>) {
    let Some(bytes) = old.bytes(path, Side::Before, not_kept) else {
        return;
    };
    header(out, path);
    line(out, format!("deleted file mode {:06o}", old.mode));
    line(out, format!("index {}..{NO_BLOB}", blob_id(bytes)));
    content(out, path, Some(bytes), None);
}

/// A path that is a file (or a link) before and after.
fn changed(
    out: &mut Vec<u8>,
    path: &str,
    old: Blob<'_>,
    new: Blob<'_>,
    not_kept: &mut Vec<(String, Side)>,
) {
    // The same hash on both sides is the same bytes, kept or not: a mode
    // change of a large file needs none of them.
    let same = match (old.content, new.content) {
        (Content::Kept(a), Content::Kept(b)) => a == b,
        (Content::Unkept(a), Content::Unkept(b)) => a == b,
        _ => false,
    };
    if same && old.mode == new.mode {
        return;
    }
    let (before, after) = if same {
        (None, None)
    } else {
        let before = old.bytes(path, Side::Before, not_kept);
        let after = new.bytes(path, Side::After, not_kept);
        let (Some(before), Some(after)) = (before, after) else {
            return;
        };
        (Some(before), Some(after))
    };
    header(out, path);
    if old.mode != new.mode {
        line(out, format!("old mode {:06o}", old.mode));
        line(out, format!("new mode {:06o}", new.mode));
    }
    let (Some(before), Some(after)) = (before, after) else {
        return;
    };
    let mode = if old.mode == new.mode {
        format!(" {:06o}", new.mode)
    } else {
        String::new()
    };
    line(
        out,
        format!("index {}..{}{mode}", blob_id(before), blob_id(after)),
    );
    content(out, path, Some(before), Some(after));
}

/// `diff --git a/P b/P`.
fn header(out: &mut Vec<u8>, path: &str) {
    line(
        out,
        format!("diff --git {} {}", quoted("a/", path), quoted("b/", path)),
    );
}

/// What changed between `old` and `new` (`None`: absent), as text hunks
/// or, when either holds a NUL byte (git's test for binary), as a binary
/// patch.
fn content(out: &mut Vec<u8>, path: &str, old: Option<&[u8]>, new: Option<&[u8]>) {
    let is_binary = |b: Option<&[u8]>| b.is_some_and(|b| b.contains(&0));
    if is_binary(old) || is_binary(new) {
        line(out, "GIT binary patch");
        let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
        // The reverse hunk is what `git apply -R` uses.
        binary::literal(out, new);
        binary::literal(out, old);
        return;
    }
    hunks(out, path, old, new);
}

/// Unified hunks of the lines of `old` and `new` (`None`: absent), raw.
fn hunks(out: &mut Vec<u8>, path: &str, old: Option<&[u8]>, new: Option<&[u8]>) {
    let (old_lines, new_lines) = (lines(old), lines(new));
    let ops = similar::capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines);
    let groups = similar::group_diff_ops(ops, CONTEXT_LINES);
    // An empty file made or removed: the header says it all, as git has it.
    if groups.is_empty() {
        return;
    }
    let label = |prefix: &str, side: Option<&[u8]>| match side {
        Some(_) => {
            let name = quoted(prefix, path);
            // As git: a name with a space ends with a tab, so that `patch`
            // reads it whole.
            let tab = if name.contains(' ') { "\t" } else { "" };
            format!("{name}{tab}")
        }
        None => "/dev/null".to_owned(),
    };
    line(out, format!("--- {}", label("a/", old)));
    line(out, format!("+++ {}", label("b/", new)));
    for group in groups {
        line(
            out,
            similar::udiff::UnifiedHunkHeader::new(&group).to_string(),
        );
        for op in &group {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            let (deleted, inserted, equal) = match tag {
                DiffTag::Equal => (0..0, 0..0, old_range),
                DiffTag::Delete => (old_range, 0..0, 0..0),
                DiffTag::Insert => (0..0, new_range, 0..0),
                DiffTag::Replace => (old_range, new_range, 0..0),
            };
            for l in &old_lines[equal] {
                hunk_line(out, b' ', l);
            }
            for l in &old_lines[deleted] {
                hunk_line(out, b'-', l);
            }
            for l in &new_lines[inserted] {
                hunk_line(out, b'+', l);
            }
        }
    }
}

/// The lines of `bytes` (`None`: none), each with its newline if it has
/// one.
fn lines(bytes: Option<&[u8]>) -> Vec<&[u8]> {
    bytes
        .unwrap_or_default()
        .split_inclusive(|&c| c == b'\n')
        .collect()
}

/// One line of a hunk; a last line with no newline gets git's marker.
fn hunk_line(out: &mut Vec<u8>, sign: u8, l: &[u8]) {
    out.push(sign);
    out.extend_from_slice(l);
    if !l.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

fn line(out: &mut Vec<u8>, l: impl AsRef<[u8]>) {
    out.extend_from_slice(l.as_ref());
    out.push(b'\n');
}

/// `prefix` and `path` as git writes a name in a patch: as is, or in
/// double quotes with C escapes when it holds a control character, `"`,
/// `\`, DEL or any byte past ASCII (git's `quote_c_style` with
/// `core.quotePath` on, its default; a space needs none). `git apply`
/// and GNU `patch` read both.
fn quoted(prefix: &str, path: &str) -> String {
    let name = format!("{prefix}{path}");
    let must_quote = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f;
    if !name.bytes().any(must_quote) {
        return name;
    }
    let mut q = String::from("\"");
    for b in name.bytes() {
        match b {
            b'"' => q.push_str("\\\""),
            b'\\' => q.push_str("\\\\"),
            0x07 => q.push_str("\\a"),
            0x08 => q.push_str("\\b"),
            b'\t' => q.push_str("\\t"),
            b'\n' => q.push_str("\\n"),
            0x0b => q.push_str("\\v"),
            0x0c => q.push_str("\\f"),
            b'\r' => q.push_str("\\r"),
            b if must_quote(b) => q.push_str(&format!("\\{b:03o}")),
            b => q.push(char::from(b)),
        }
    }
    q.push('"');
    q
}

/// The directory changes in `nets` a patch does not make happen: a
/// directory made with no file or link left in it, one removed with none
/// removed from it (`git apply` makes and removes the others as their
/// files need), and every change of a directory's bits.
fn dirs_left_out(nets: &[Net<'_>]) -> Vec<DirLeftOut> {
    let files_before: BTreeSet<&str> = nets
        .iter()
        .filter(|n| n.before.is_file_or_link())
        .map(|n| n.path)
        .collect();
    let files_after: BTreeSet<&str> = nets
        .iter()
        .filter(|n| n.after.is_file_or_link())
        .map(|n| n.path)
        .collect();
    let holds_one = |files: &BTreeSet<&str>, dir: &str| {
        let prefix = format!("{dir}/");
        files
            .range(prefix.as_str()..)
            .next()
            .is_some_and(|p| p.starts_with(&prefix))
    };
    let mut left_out = Vec::new();
    for net in nets {
        let change = match (net.before, net.after) {
            (Entry::Dir(before), Entry::Dir(after)) if before != after => {
                DirChange::Mode { before, after }
            }
            (Entry::Dir(_), Entry::Dir(_)) => continue,
            (_, Entry::Dir(_)) if !holds_one(&files_after, net.path) => DirChange::CreatedEmpty,
            (Entry::Dir(_), _) if !holds_one(&files_before, net.path) => DirChange::RemovedEmpty,
            _ => continue,
        };
        left_out.push(DirLeftOut {
            path: net.path.to_owned(),
            change,
        });
    }
    left_out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn file(bytes: &[u8], mode: u32) -> Entry<'_> {
        Entry::File {
            content: Content::Kept(bytes),
            mode: Some(mode),
        }
    }

    fn patch_text(nets: &[Net<'_>]) -> String {
        String::from_utf8(patch(nets).unwrap().bytes).unwrap()
    }

    #[test]
    fn blob_ids_are_gits() {
        // `git hash-object /dev/null` and `printf 'hello\n' | git hash-object --stdin`.
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        assert_eq!(
            blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn names_are_quoted_as_git_quotes_them() {
        assert_eq!(quoted("a/", "src/main.rs"), "a/src/main.rs");
        assert_eq!(quoted("a/", "my notes.txt"), "a/my notes.txt");
        assert_eq!(quoted("b/", "café.txt"), r#""b/caf\303\251.txt""#);
        assert_eq!(
            quoted("a/", "tab\there\"q\\\u{7f}\u{1}"),
            r#""a/tab\there\"q\\\177\001""#
        );
        assert_eq!(quoted("a/", "line\nbreak"), r#""a/line\nbreak""#);
    }

    #[test]
    fn an_edit_a_missing_newline_and_a_mode_change() {
        let nets = [
            Net {
                path: "a.txt",
                before: file(b"one\ntwo\n", 0o644),
                after: file(b"one\nthree", 0o644),
            },
            Net {
                path: "run.sh",
                before: file(b"echo\n", 0o644),
                after: file(b"echo\n", 0o755),
            },
        ];
        assert_eq!(
            patch_text(&nets),
            "diff --git a/a.txt b/a.txt\n\
             index 814f4a422927b82f5f8a43f8fab6d3839e3983f2..7279b450fade0f69fd140ada97bd366a8384b984 100644\n\
             --- a/a.txt\n\
             +++ b/a.txt\n\
             @@ -1,2 +1,2 @@\n \
             one\n\
             -two\n\
             +three\n\
             \\ No newline at end of file\n\
             diff --git a/run.sh b/run.sh\n\
             old mode 100644\n\
             new mode 100755\n"
        );
    }

    #[test]
    fn an_empty_file_made_has_no_hunk_and_a_link_is_its_target() {
        let nets = [
            Net {
                path: "empty",
                before: Entry::Absent,
                after: file(b"", 0o600),
            },
            Net {
                path: "my link",
                before: Entry::Absent,
                after: Entry::Link(Content::Kept(b"target")),
            },
        ];
        let text = patch_text(&nets);
        assert!(
            text.starts_with(
                "diff --git a/empty b/empty\n\
                 new file mode 100644\n\
                 index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n\
                 diff --git a/my link b/my link\n\
                 new file mode 120000\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "--- /dev/null\n\
                 +++ b/my link\t\n\
                 @@ -0,0 +1 @@\n\
                 +target\n\
                 \\ No newline at end of file\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_file_become_a_link_is_removed_then_made() {
        let nets = [Net {
            path: "x",
            before: file(b"x\n", 0o644),
            after: Entry::Link(Content::Kept(b"y")),
        }];
        let text = patch_text(&nets);
        let removal = text.find("deleted file mode 100644").unwrap();
        let creation = text.find("new file mode 120000").unwrap();
        assert!(removal < creation, "{text}");
        assert_eq!(text.matches("diff --git a/x b/x\n").count(), 2, "{text}");
    }

    #[test]
    fn unkept_bytes_fail_naming_every_path_unless_only_the_mode_changed() {
        let unkept = |sha| Entry::File {
            content: Content::Unkept(sha),
            mode: Some(0o644),
        };
        let nets = [
            Net {
                path: "big.bin",
                before: Entry::Absent,
                after: unkept("aa"),
            },
            Net {
                path: "old.bin",
                before: unkept("bb"),
                after: file(b"small", 0o644),
            },
            Net {
                path: "same.bin",
                before: unkept("cc"),
                after: Entry::File {
                    content: Content::Unkept("cc"),
                    mode: Some(0o755),
                },
            },
        ];
        assert_eq!(
            patch(&nets).unwrap_err(),
            NotKept(vec![
                ("big.bin".to_owned(), Side::After),
                ("old.bin".to_owned(), Side::Before)
            ])
        );
        assert_eq!(
            patch_text(&nets[2..]),
            "diff --git a/same.bin b/same.bin\nold mode 100644\nnew mode 100755\n"
        );
    }

    #[test]
    fn only_directory_changes_no_file_carries_are_left_out() {
        let nets = [
            Net {
                path: "made",
                before: Entry::Absent,
                after: Entry::Dir(0o755),
            },
            Net {
                path: "made/f",
                before: Entry::Absent,
                after: file(b"f\n", 0o644),
            },
            Net {
                path: "empty",
                before: Entry::Absent,
                after: Entry::Dir(0o755),
            },
            Net {
                path: "gone",
                before: Entry::Dir(0o755),
                after: Entry::Absent,
            },
            Net {
                path: "bits",
                before: Entry::Dir(0o755),
                after: Entry::Dir(0o700),
            },
        ];
        let patch = patch(&nets).unwrap();
        assert_eq!(
            patch.dirs_left_out,
            [
                DirLeftOut {
                    path: "empty".to_owned(),
                    change: DirChange::CreatedEmpty
                },
                DirLeftOut {
                    path: "gone".to_owned(),
                    change: DirChange::RemovedEmpty
                },
                DirLeftOut {
                    path: "bits".to_owned(),
                    change: DirChange::Mode {
                        before: 0o755,
                        after: 0o700
                    }
                },
            ]
        );
    }
}
