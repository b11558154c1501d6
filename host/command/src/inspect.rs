//! What GOAT checks in a change set before any of it lands, and what makes
//! it ask the person first.
//!
//! **Refused** (the whole set: nothing lands, and the result names each
//! path and why): a path the rules keep from being written, which covers
//! a protected name (`.git`, `.hg`, `.svn`, `.jj`) at any depth, new or
//! existing, in any spelling the gate knows; a device node; a file with
//! the setuid or setgid bit. The whole set, not the rest of it: a command
//! that moved a file into a refused place would otherwise lose the file
//! (its removal landing, its new copy not).
//!
//! **Left out** (the rest lands, and the result names them): a FIFO or
//! socket the command created. Leaving one out loses nothing.
//!
//! **Guarded**: a set that removes or replaces more than
//! [`GUARD_FILES`] existing files or [`GUARD_BYTES`] of their bytes, or
//! removes a file git tracks, is put to the person before it lands
//! ([`Guard`]).

use std::path::Path;

use crate::fs::WorkspaceRules;
use crate::layer::{ChangeSet, Node, Op};

/// Existing files a command may remove or replace before the person is
/// asked: a build rewrites a few sources' outputs, a runaway `rm` or a
/// `git clean` many more.
pub const GUARD_FILES: usize = 20;

/// Bytes of existing files a command may remove or replace before the
/// person is asked.
pub const GUARD_BYTES: u64 = 10 * 1024 * 1024;

/// What the inspection found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inspection {
    /// Paths that refuse the whole set, each with why.
    pub refused: Vec<(String, String)>,
    /// Paths left out (special files the command created), each with what
    /// they are.
    pub left_out: Vec<(String, &'static str)>,
}

/// Whether a directory holding these names is one git would take for a
/// repository's metadata (its `is_git_directory`: `HEAD`, `objects` and
/// `refs`, or a `commondir` file), whatever the directory is called. A
/// bare repository planted under any name runs its `core.pager` or hooks
/// when the person next runs git there.
pub fn looks_like_git_dir<I, N>(names: I) -> bool
where
    I: IntoIterator<Item = N>,
    N: AsRef<std::ffi::OsStr>,
{
    let (mut head, mut objects, mut refs) = (false, false, false);
    for name in names {
        match name.as_ref().as_encoded_bytes() {
            b"HEAD" => head = true,
            b"objects" => objects = true,
            b"refs" => refs = true,
            b"commondir" => return true,
            _ => {}
        }
    }
    head && objects && refs
}

/// The names in directory `rel` as the command left it: the upper layer's
/// entries over the workspace's.
fn merged_names(upper: &Path, workspace: &Path, rel: &str) -> Vec<std::ffi::OsString> {
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    for base in [upper, workspace] {
        if let Ok(entries) = std::fs::read_dir(base.join(rel)) {
            names.extend(entries.flatten().map(|e| e.file_name()));
        }
    }
    names
}

/// Checks `set` against `rules`; removes what is left out from the set
/// (and from `upper`, so it does not land inside a new directory).
pub(crate) fn inspect(
    set: &mut ChangeSet,
    rules: &dyn WorkspaceRules,
    upper: &Path,
    workspace: &Path,
) -> Inspection {
    let mut found = Inspection::default();
    // Every path a landing step touches is asked about, an unchanged
    // copy-up included (a `touch` or an xattr on a protected file).
    for op in &set.ops {
        let path = op.path();
        if !set.changes.iter().any(|c| c.path == path)
            && let Err(why) = rules.writable_why(path)
        {
            found.refused.push((path.to_owned(), why));
        }
    }
    // A directory the command made or changed that git would take for a
    // repository, under any name.
    let mut dirs: Vec<String> = vec![String::new()];
    for change in &set.changes {
        let mut at = change.path.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            dirs.push(parent.to_owned());
            at = parent;
        }
        if matches!(change.after, Node::Dir(_)) {
            dirs.push(change.path.clone());
        }
    }
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let touched = set.changes.iter().any(|c| {
            c.after.exists()
                && c.path.rsplit_once('/').map_or("", |(p, _)| p) == dir
                && matches!(
                    c.path.rsplit('/').next(),
                    Some("HEAD" | "objects" | "refs" | "commondir" | "config" | "hooks")
                )
        }) || set
            .changes
            .iter()
            .any(|c| c.path == dir && c.after.exists());
        if touched && looks_like_git_dir(merged_names(upper, workspace, &dir)) {
            found.refused.push((
                if dir.is_empty() { ".".to_owned() } else { dir },
                "it is a git repository's metadata (HEAD, objects, refs), which no command may \
                 create or change under any name"
                    .to_owned(),
            ));
        }
    }
    for change in &set.changes {
        if let Err(why) = rules.writable_why(&change.path) {
            found.refused.push((change.path.clone(), why));
            continue;
        }
        match &change.after {
            Node::Special(what @ ("a FIFO" | "a socket")) if !change.before.exists() => {
                found.left_out.push((change.path.clone(), what));
            }
            Node::Special(what) => found.refused.push((
                change.path.clone(),
                format!("it is {what}, which a command may not make"),
            )),
            Node::File { mode, .. } if mode & 0o6000 != 0 => found.refused.push((
                change.path.clone(),
                "it has the setuid or setgid bit, which a command may not set".to_owned(),
            )),
            _ => {}
        }
    }
    if !found.left_out.is_empty() {
        let left: Vec<String> = found.left_out.iter().map(|(p, _)| p.clone()).collect();
        set.changes.retain(|c| !left.contains(&c.path));
        set.ops
            .retain(|op| !matches!(op, Op::Place(p, _) if left.contains(p)));
        for path in &left {
            // Inside a new directory it would land with it: if it cannot
            // be removed from the layer, the set is refused instead.
            let full = upper.join(path);
            let removed = std::fs::remove_file(&full).or_else(|_| {
                let parent = full.parent().ok_or(std::io::ErrorKind::NotFound)?;
                std::fs::set_permissions(
                    parent,
                    std::os::unix::fs::PermissionsExt::from_mode(0o700),
                )?;
                std::fs::remove_file(&full)
            });
            if let Err(e) = removed
                && e.kind() != std::io::ErrorKind::NotFound
            {
                found.refused.push((
                    path.clone(),
                    format!("it is a special file GOAT could not leave out ({e})"),
                ));
            }
        }
    }
    found
}

/// A change set's size, as the guard weighs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guard {
    /// Existing files (and links) removed.
    pub removed: usize,
    /// Existing files replaced.
    pub replaced: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Removed files that git tracks (from the repository's index).
    pub tracked_removed: Vec<String>,
    /// Files created.
    pub created: usize,
}

impl Guard {
    /// Weighs `set`; `tracked` answers whether git tracks a path.
    pub fn weigh(set: &ChangeSet, tracked: &dyn Fn(&str) -> bool) -> Self {
        let mut guard = Self::default();
        for change in &set.changes {
            let len = match &change.before {
                Node::File { len, .. } => Some(*len),
                Node::Symlink(_) => Some(0),
                _ => None,
            };
            match (len, change.after.exists()) {
                (Some(len), false) => {
                    guard.removed += 1;
                    guard.bytes += len;
                    if tracked(&change.path) {
                        guard.tracked_removed.push(change.path.clone());
                    }
                }
                (Some(len), true) => {
                    guard.replaced += 1;
                    guard.bytes += len;
                }
                (None, true) if !matches!(change.after, Node::Dir(_)) => guard.created += 1,
                (None, _) => {}
            }
        }
        guard
    }

    /// Whether the person should see the set before it lands.
    pub fn needs_asking(&self) -> bool {
        self.removed + self.replaced > GUARD_FILES
            || self.bytes > GUARD_BYTES
            || !self.tracked_removed.is_empty()
    }

    /// One line for the person and the model.
    pub fn summary(&self) -> String {
        let mut parts = vec![
            format!("{} created", self.created),
            format!("{} changed", self.replaced),
            format!("{} removed", self.removed),
        ];
        if !self.tracked_removed.is_empty() {
            parts.push(format!(
                "{} of them tracked by git",
                self.tracked_removed.len()
            ));
        }
        format!(
            "{} ({} of existing files)",
            parts.join(", "),
            crate::inspect::human_bytes(self.bytes)
        )
    }
}

/// `n` bytes for a person.
pub fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20))
    } else if n >= 1 << 10 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} bytes")
    }
}
