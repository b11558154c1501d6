//! Checkpoints and undo (ADR-0073).
//!
//! Before a Pen tool that changes files runs, the router captures what
//! each path it names holds (its bytes, or that it is absent); when the
//! call succeeds, what each holds after. A plugin's files are kept as it
//! writes them ([`Keeper`]): each the first time the fence lets it change
//! it, before the change. Both go into the store with the
//! call's outcome. [`undo`] puts a turn's files back, all of them or none:
//! every file is first checked to still hold what GOAT left there, so a
//! change someone made since is never overwritten.
//!
//! # Security
//!
//! Every path is reached from the workspace root by the kernel through no
//! link at all ([`beneath`]), so a link planted after a call is neither
//! read nor written through; protected paths (`.git`, ...) are never
//! written by undo; each restore is an atomic replace.

mod beneath;
mod keeper;
mod restore;

use std::path::{Path, PathBuf};

use goat_store::{CallErrorKind, FileChange};
use serde_json::Value;

pub(crate) use keeper::Keeper;
pub use keeper::{MAX_KEPT_BYTES_PER_CALL, MAX_KEPT_PATHS_PER_CALL};
pub use restore::{Restored, UndoError, UndoPlan, befores, plan_undo};

/// Which of a change's recorded states a path holds now (for a change set
/// GOAT stopped while landing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LandingState {
    /// What it held before the command.
    Before,
    /// What the command left.
    After,
    /// Neither (someone changed it since, or it cannot be read).
    Neither,
}

impl LandingState {
    /// As `goat sessions show` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Before => "as before the command (not landed)",
            Self::After => "as the command left it (landed)",
            Self::Neither => "neither: changed since, or unreadable",
        }
    }
}

/// Which state `change`'s path in `workspace` holds.
pub fn landing_state(workspace: &Path, change: &FileChange) -> LandingState {
    use beneath::Now;
    use goat_store::EntryKind;
    let Ok(root) = beneath::open_root(workspace) else {
        return LandingState::Neither;
    };
    let Ok(now) = beneath::now(&root, &change.path) else {
        return LandingState::Neither;
    };
    let matches =
        |kind: EntryKind, bytes: Option<&[u8]>, sha: Option<&str>, exists: bool| match &now {
            Now::Absent | Now::Blocked(_) => !exists,
            Now::Dir => exists && kind == EntryKind::Dir,
            Now::File { sha256 } => {
                exists
                    && kind == EntryKind::File
                    && (sha == Some(sha256.as_str())
                        || bytes.is_some_and(|b| beneath::sha256_hex(b) == *sha256))
            }
            Now::Link { sha256 } => {
                exists
                    && kind == EntryKind::Link
                    && (sha == Some(sha256.as_str())
                        || bytes.is_some_and(|b| beneath::sha256_hex(b) == *sha256))
            }
            Now::Other(_) => false,
        };
    if matches(
        change.after_kind,
        None,
        change.after_sha256.as_deref(),
        change.exists_after(),
    ) {
        LandingState::After
    } else if matches(
        change.before_kind,
        change.before.as_deref(),
        change.before_sha256.as_deref(),
        change.existed_before(),
    ) {
        LandingState::Before
    } else {
        LandingState::Neither
    }
}

use beneath::State;
pub(crate) use beneath::sha256_hex;

/// The bytes `path` holds in `workspace` now, if they are still the ones
/// a change recorded only by their sha256 (hex): how `sessions diff
/// --format patch` gets what a command wrote, since a command's change
/// set keeps the hash after, not the bytes. `None` when the path is gone,
/// not a regular file, changed since, over [`MAX_CHECKPOINT_BYTES`], or
/// unreadable.
///
/// # Security
///
/// Read through no link and nowhere outside the workspace ([`beneath`]);
/// and only bytes with the recorded hash are returned, so a file planted
/// or changed since yields nothing, never other content.
pub fn bytes_if_unchanged(workspace: &Path, path: &str, sha256: &str) -> Option<Vec<u8>> {
    let root = beneath::open_root(workspace).ok()?;
    match beneath::state(&root, path).ok()? {
        State::File {
            sha256: now,
            bytes: Some(bytes),
            ..
        } if now == sha256 => Some(bytes),
        _ => None,
    }
}

/// The largest file a checkpoint holds: a write, edit, move or delete of a
/// larger file is refused before it runs, because GOAT could not give it
/// back. 8 MiB is far above any source file and above what the Pen tools
/// read whole, so real edits are never refused, and it keeps one stored
/// call (before and after) within a few times the request cap.
pub const MAX_CHECKPOINT_BYTES: u64 = 8 * 1024 * 1024;

/// How a tool treats a link at the path it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Links {
    /// It writes the file the link leads to (write_file, edit_file).
    Followed,
    /// It acts on the name itself (delete_file, move_file).
    NotFollowed,
}

/// The path fields each built-in writing Pen tool changes. A plugin that
/// writes is checkpointed as it writes ([`Keeper`]); `run_command`'s
/// changes are its change set.
fn targets(tool: &str) -> &'static [(&'static str, Links)] {
    match tool {
        "write_file" | "edit_file" => &[("path", Links::Followed)],
        "delete_file" => &[("path", Links::NotFollowed)],
        "move_file" => &[("from", Links::NotFollowed), ("to", Links::NotFollowed)],
        _ => &[],
    }
}

/// Whether GOAT checkpoints what `tool` changes (the built-in Pen tools
/// that write; a plugin's tool never: its name always holds `__`).
pub(crate) fn checkpointed(tool: &str) -> bool {
    !targets(tool).is_empty()
}

/// What a call's files held before it ran.
#[derive(Debug, Default)]
pub(crate) struct Checkpoint {
    /// The workspace, canonical.
    root: PathBuf,
    /// Each path (on disk, links inside the workspace resolved) and its
    /// bytes before; `None`: absent.
    before: Vec<(String, Option<Vec<u8>>, Option<u32>)>,
}

/// Captures what the files `tool` will change hold now. `Ok(None)` for a
/// tool that changes no files GOAT checkpoints. `Err` says, for the model,
/// why the call must not run: a file whose bytes it would change or
/// remove and GOAT could not give back (larger than the cap, unreadable).
/// A call that moves a directory or link, or deletes a link, loses no
/// file's bytes: it runs, not checkpointed (`Ok(None)`).
pub(crate) fn capture(
    workspace: &Path,
    tool: &str,
    args: &Value,
) -> Result<Option<Checkpoint>, (CallErrorKind, String)> {
    let fields = targets(tool);
    if fields.is_empty() {
        return Ok(None);
    }
    let Ok(root) = workspace.canonicalize() else {
        // The sandbox reports a workspace it cannot open.
        return Ok(None);
    };
    let Ok(root_fd) = beneath::open_root(&root) else {
        return Ok(None);
    };
    let mut checkpoint = Checkpoint {
        root: root.clone(),
        before: Vec::new(),
    };
    // A move whose source cannot be kept (over the cap, a directory, a
    // link) is not checkpointed; but its destination must still be looked
    // at, since a move that replaces a file would destroy it uncopied.
    let mut unkept_move = false;
    for (field, links) in fields {
        let Some(raw) = args.get(field).and_then(Value::as_str) else {
            continue;
        };
        let Ok(lexical) = goat_workpath::resolve(raw) else {
            continue;
        };
        if lexical.is_root() {
            continue;
        }
        let Some(path) = on_disk(&root, lexical.as_str(), *links) else {
            // Leads out of the workspace: the fence refuses the call.
            continue;
        };
        let shown = path.clone();
        let refusal = |kind, what: String| {
            Err((
                kind,
                format!(
                    "not run: GOAT keeps a copy of every file a tool changes so the change can be \
                 undone, and '{shown}' {what}, so it cannot be kept; nothing was changed"
                ),
            ))
        };
        let state = beneath::state(&root_fd, &path);
        if unkept_move {
            // Without `overwrite` the tool refuses an existing destination
            // itself, and changes nothing.
            let replaces = args.get("overwrite").and_then(Value::as_bool) == Some(true);
            if replaces && let Ok(State::File { .. }) = state {
                return refusal(
                    CallErrorKind::InvalidArguments,
                    "exists, and this move (of a directory, a link or a file over the checkpoint \
                     cap) would replace it with no copy kept; move it away or delete it first"
                        .to_owned(),
                );
            }
            continue;
        }
        match state {
            Ok(State::Absent) => checkpoint.before.push((path, None, None)),
            Ok(State::File {
                bytes: Some(bytes),
                mode,
                ..
            }) => checkpoint.before.push((path, Some(bytes), Some(mode))),
            // Moving a large file loses nothing; but with one of its paths
            // unkept, undo could not reverse the move, so none is kept.
            Ok(State::File { bytes: None, .. } | State::Other(_))
                if tool == "move_file" && *field == "from" =>
            {
                unkept_move = true;
            }
            Ok(State::File {
                bytes: None, len, ..
            }) => {
                return refusal(
                    CallErrorKind::TooLarge,
                    format!(
                        "is {len} bytes, more than the {MAX_CHECKPOINT_BYTES} bytes a \
                         checkpoint holds"
                    ),
                );
            }
            // A directory or link moved, or a link deleted: no file's bytes
            // are lost, and undo says it does not reverse such a call.
            // write_file and edit_file refuse a directory or a FIFO
            // themselves and change nothing.
            Ok(State::Other(_)) => return Ok(None),
            Err(e) => return refusal(CallErrorKind::Io, format!("cannot be read ({e})")),
        }
    }
    if unkept_move {
        return Ok(None);
    }
    Ok(Some(checkpoint))
}

impl Checkpoint {
    /// What the call changed, read after it succeeded: each path's bytes
    /// and bits before, and the hash (and, within the cap, the bytes) and
    /// bits after. A path whose content did not change is left out.
    pub(crate) fn finish(self) -> Vec<FileChange> {
        let Ok(root_fd) = beneath::open_root(&self.root) else {
            return Vec::new();
        };
        let mut changes: Vec<FileChange> = Vec::new();
        for (path, before, before_mode) in self.before {
            if changes.iter().any(|c| c.path == path) {
                continue;
            }
            changes.extend(change_of(&root_fd, path, before, before_mode));
        }
        changes
    }
}

/// What `path` holds now against what it held `before` (with its bits):
/// the change, or `None` when its content did not change.
fn change_of(
    root_fd: &std::os::fd::OwnedFd,
    path: String,
    before: Option<Vec<u8>>,
    before_mode: Option<u32>,
) -> Option<FileChange> {
    let (after_sha256, after, after_mode) = match beneath::state(root_fd, &path) {
        Ok(State::Absent) => (None, None, None),
        Ok(State::File {
            sha256,
            bytes,
            mode,
            ..
        }) => (Some(sha256), bytes, Some(mode)),
        // What no Pen tool leaves behind; undo will find it changed.
        Ok(State::Other(what)) => (Some(format!("not a file: {what}")), None, None),
        Err(e) => (Some(format!("unreadable: {e}")), None, None),
    };
    let unchanged = match (&before, &after_sha256) {
        (None, None) => true,
        (Some(b), Some(a)) => beneath::sha256_hex(b) == *a,
        _ => false,
    };
    (!unchanged).then(|| FileChange {
        path,
        before,
        before_mode,
        after_sha256,
        after,
        after_mode,
        ..FileChange::default()
    })
}

/// The workspace path `lexical` leads to on disk: with [`Links::Followed`]
/// the file itself, through links inside the workspace; otherwise the name
/// in its directory's real place. `None` when that is outside the
/// workspace.
fn on_disk(root: &Path, lexical: &str, links: Links) -> Option<String> {
    let full = root.join(lexical);
    let real = match links {
        Links::Followed => real_place(&full)?,
        Links::NotFollowed => real_place(full.parent()?)?.join(full.file_name()?),
    };
    let rel = real.strip_prefix(root).ok()?.to_str()?;
    (!rel.is_empty()).then(|| rel.to_owned())
}

/// Where `path` really is: its longest existing ancestor with every link
/// resolved, and the names below it that do not exist yet (a write may
/// make the directories it needs).
fn real_place(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut missing = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(real) => return Some(missing.iter().rev().fold(real, |p, n| p.join(n))),
            Err(_) => {
                missing.push(existing.file_name()?);
                existing = existing.parent()?;
            }
        }
    }
}
