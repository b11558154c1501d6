//! A checkpoint made while a call writes, for a tool whose files GOAT
//! cannot know before it runs (a plugin's, ADR-0095): each path is kept the
//! first time the fence lets the tool change it, before the change, so what
//! it held is in the checkpoint whatever the tool then does; when the call
//! ends, each kept path is compared with what it holds now.
//!
//! # Security
//!
//! A hostile plugin chooses what it touches, so everything here is bounded
//! before anything is read: a file's length is looked at before its bytes
//! (over [`MAX_CHECKPOINT_BYTES`] it is refused, never read), one call keeps
//! at most [`MAX_KEPT_BYTES_PER_CALL`] bytes before and as many after (past
//! that only a hash is kept after, as for a command), looks at most at
//! [`MAX_KEPT_PATHS_PER_CALL`] paths, and never hashes a file longer than
//! [`MAX_HASHED_BYTES`]. What it cannot give back it refuses at the write:
//! a name that is not UTF-8 (the fence names it lossily), something that is
//! neither a file, a directory nor a link. Directories are not renamed
//! while a keeper holds the call (`governs_below` in the router's policy):
//! a renamed tree would move what was kept under names it does not cover.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::Path;

use goat_store::{EntryKind, FileChange};

use super::MAX_CHECKPOINT_BYTES;
use super::beneath::{self, Entry, State};

/// The most bytes one plugin call's checkpoint holds before, all files
/// together (and as many after): what a command's snapshot holds. A plugin
/// that would change more existing bytes than this in one call is refused
/// the change past it, so it cannot make GOAT read and hold the workspace.
pub const MAX_KEPT_BYTES_PER_CALL: u64 = 64 * 1024 * 1024;

/// The most paths one plugin call's checkpoint looks at.
pub const MAX_KEPT_PATHS_PER_CALL: usize = 10_000;

/// The longest file whose hash is taken after a call: a longer one (a
/// sparse file a plugin grew) is recorded as changed without reading it,
/// and undo will not write over it.
pub const MAX_HASHED_BYTES: u64 = 1024 * 1024 * 1024;

/// What a path held before the plugin first changed it.
#[derive(Debug)]
enum Before {
    Absent,
    File { bytes: Vec<u8>, mode: u32 },
    Dir(u32),
    Link(Vec<u8>),
}

/// A plugin call's checkpoint, kept as it writes.
pub(crate) struct Keeper {
    root_fd: OwnedFd,
    /// Each path kept, in the order the plugin first touched it.
    before: Vec<(String, Before)>,
    /// Every path kept.
    seen: BTreeSet<String>,
    /// Paths refused, and why: refused again without being read again.
    refused: BTreeMap<String, String>,
    /// Bytes kept before, all files together.
    kept_bytes: u64,
}

impl Keeper {
    /// A keeper for `workspace`; `None` when it cannot be opened (the
    /// sandbox then reports the workspace itself).
    pub(crate) fn new(workspace: &Path) -> Option<Self> {
        let root = workspace.canonicalize().ok()?;
        let root_fd = beneath::open_root(&root).ok()?;
        Some(Self {
            root_fd,
            before: Vec::new(),
            seen: BTreeSet::new(),
            refused: BTreeMap::new(),
            kept_bytes: 0,
        })
    }

    /// Keeps what `path` (a workspace path, links resolved, as the fence
    /// reached it) holds now, the first time the tool is about to change
    /// it. `Err`, in words for the model, when GOAT could not give it back:
    /// the change is refused.
    pub(crate) fn keep(&mut self, path: &str) -> Result<(), String> {
        if self.seen.contains(path) {
            return Ok(());
        }
        if let Some(why) = self.refused.get(path) {
            return Err(why.clone());
        }
        let kept = self.look(path);
        match &kept {
            Ok(()) => {
                self.seen.insert(path.to_owned());
            }
            Err(why) if self.refused.len() < MAX_KEPT_PATHS_PER_CALL => {
                self.refused.insert(path.to_owned(), why.clone());
            }
            Err(_) => {}
        }
        kept
    }

    /// [`keep`](Self::keep) for a path not looked at before.
    fn look(&mut self, path: &str) -> Result<(), String> {
        let refusal = |what: String| {
            format!(
                "not written: GOAT keeps a copy of everything a tool changes so the change can \
                 be undone, and '{path}' {what}, so it cannot be kept"
            )
        };
        if path.contains(char::REPLACEMENT_CHARACTER) {
            return Err(refusal("has a name that is not UTF-8".to_owned()));
        }
        if self.seen.len() >= MAX_KEPT_PATHS_PER_CALL {
            return Err(refusal(format!(
                "would be past the {MAX_KEPT_PATHS_PER_CALL} paths one call's checkpoint holds"
            )));
        }
        let before = match beneath::entry(&self.root_fd, path) {
            Err(e) => return Err(refusal(format!("cannot be read ({e})"))),
            Ok(Entry::Absent) => Before::Absent,
            Ok(Entry::File { len, .. }) if len > MAX_CHECKPOINT_BYTES => {
                return Err(refusal(format!(
                    "is {len} bytes, more than the {MAX_CHECKPOINT_BYTES} bytes a checkpoint holds"
                )));
            }
            Ok(Entry::File { len, .. })
                if self.kept_bytes.saturating_add(len) > MAX_KEPT_BYTES_PER_CALL =>
            {
                return Err(refusal(format!(
                    "would take what this call's checkpoint holds past \
                     {MAX_KEPT_BYTES_PER_CALL} bytes"
                )));
            }
            Ok(Entry::File { .. }) => match beneath::state(&self.root_fd, path) {
                Ok(State::File {
                    bytes: Some(bytes),
                    mode,
                    ..
                }) => {
                    self.kept_bytes = self.kept_bytes.saturating_add(bytes.len() as u64);
                    Before::File { bytes, mode }
                }
                Ok(_) => return Err(refusal("changed while it was read".to_owned())),
                Err(e) => return Err(refusal(format!("cannot be read ({e})"))),
            },
            Ok(Entry::Dir(mode)) => Before::Dir(mode),
            Ok(Entry::Link(target)) => Before::Link(target),
            Ok(Entry::Other(what)) => return Err(refusal(format!("is {what}"))),
        };
        self.before.push((path.to_owned(), before));
        Ok(())
    }

    /// What the call changed, read after it ended (a plugin that failed
    /// half-way may have changed files too), in the order the plugin first
    /// touched each path.
    pub(crate) fn finish(self) -> Vec<FileChange> {
        let mut budget = MAX_KEPT_BYTES_PER_CALL;
        let mut changes = Vec::new();
        for (path, before) in self.before {
            let after = beneath::entry(&self.root_fd, &path).unwrap_or(Entry::Other("unreadable"));
            let mut change = FileChange {
                path,
                ..FileChange::default()
            };
            let unchanged = match (&before, &after) {
                (Before::Absent, Entry::Absent) => true,
                (Before::Dir(a), Entry::Dir(b)) => a == b,
                (Before::Link(a), Entry::Link(b)) => a == b,
                _ => false,
            };
            if unchanged {
                continue;
            }
            match before {
                Before::Absent => {}
                Before::File { bytes, mode } => {
                    change.before = Some(bytes);
                    change.before_mode = Some(mode);
                }
                Before::Dir(mode) => {
                    change.before_kind = EntryKind::Dir;
                    change.before_mode = Some(mode);
                }
                Before::Link(target) => {
                    change.before_kind = EntryKind::Link;
                    change.before = Some(target);
                }
            }
            match after {
                Entry::Absent => {}
                Entry::File { len, mode } if len > MAX_HASHED_BYTES => {
                    change.after_sha256 = Some(format!("not hashed: {len} bytes"));
                    change.after_mode = Some(mode);
                }
                Entry::File { .. } => match beneath::state(&self.root_fd, &change.path) {
                    Ok(State::File {
                        sha256,
                        bytes,
                        mode,
                        ..
                    }) => {
                        let same = change
                            .before
                            .as_deref()
                            .is_some_and(|b| beneath::sha256_hex(b) == sha256)
                            && change.before_kind == EntryKind::File
                            && change.before_mode == Some(mode);
                        if same {
                            continue;
                        }
                        // Past the budget only the hash is kept, as for a
                        // command: undo still checks it, a patch reads the
                        // bytes back from the workspace if they are unchanged.
                        change.after = bytes.filter(|b| {
                            let len = b.len() as u64;
                            let fits = len <= budget;
                            if fits {
                                budget -= len;
                            }
                            fits
                        });
                        change.after_sha256 = Some(sha256);
                        change.after_mode = Some(mode);
                    }
                    Ok(_) | Err(_) => {
                        change.after_sha256 = Some("unreadable".to_owned());
                    }
                },
                Entry::Dir(mode) => {
                    change.after_kind = EntryKind::Dir;
                    change.after_mode = Some(mode);
                }
                Entry::Link(target) => {
                    change.after_kind = EntryKind::Link;
                    change.after_sha256 = Some(beneath::sha256_hex(&target));
                    change.after = Some(target);
                }
                Entry::Other(what) => change.after_sha256 = Some(format!("not a file: {what}")),
            }
            changes.push(change);
        }
        changes
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use goat_store::EntryKind;

    use super::{Keeper, MAX_CHECKPOINT_BYTES, MAX_KEPT_BYTES_PER_CALL};

    #[test]
    fn a_keeper_holds_at_most_its_cap_and_refuses_the_change_past_it() {
        let dir = tempfile::tempdir().unwrap();
        // Nine files of 8 MiB: eight fit under 64 MiB, the ninth does not.
        let size = usize::try_from(MAX_CHECKPOINT_BYTES).unwrap();
        let count = MAX_KEPT_BYTES_PER_CALL / MAX_CHECKPOINT_BYTES;
        for n in 0..=count {
            std::fs::write(dir.path().join(format!("f{n}")), vec![b'x'; size]).unwrap();
        }
        let mut keeper = Keeper::new(dir.path()).unwrap();
        for n in 0..count {
            keeper.keep(&format!("f{n}")).unwrap();
        }
        let refused = keeper.keep(&format!("f{count}")).unwrap_err();
        assert!(refused.contains("past"), "{refused}");
        // Refused again, not let through on a second try.
        assert!(keeper.keep(&format!("f{count}")).is_err());
        // A new file holds no bytes: still kept.
        keeper.keep("new.txt").unwrap();
        // The same path again is free.
        keeper.keep("f0").unwrap();
    }

    #[test]
    fn a_huge_sparse_file_is_refused_unread_and_never_hashed_after() {
        let dir = tempfile::tempdir().unwrap();
        let huge = std::fs::File::create(dir.path().join("huge")).unwrap();
        huge.set_len(1 << 40).unwrap();
        let mut keeper = Keeper::new(dir.path()).unwrap();
        let started = std::time::Instant::now();
        assert!(keeper.keep("huge").is_err());
        // One the plugin makes and grows is recorded without being read.
        keeper.keep("grown").unwrap();
        let grown = std::fs::File::create(dir.path().join("grown")).unwrap();
        grown.set_len(1 << 40).unwrap();
        let changes = keeper.finish();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(changes.len(), 1);
        assert!(
            changes[0]
                .after_sha256
                .as_deref()
                .unwrap()
                .starts_with("not hashed")
        );
    }

    #[test]
    fn links_and_directories_are_recorded_as_what_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir(ws.join("old")).unwrap();
        std::os::unix::fs::symlink("target", ws.join("was_link")).unwrap();
        let mut keeper = Keeper::new(ws).unwrap();
        for path in ["old", "was_link", "made", "link"] {
            keeper.keep(path).unwrap();
        }
        std::fs::remove_dir(ws.join("old")).unwrap();
        std::fs::remove_file(ws.join("was_link")).unwrap();
        std::fs::write(ws.join("was_link"), "a file now").unwrap();
        std::fs::create_dir(ws.join("made")).unwrap();
        std::os::unix::fs::symlink("made", ws.join("link")).unwrap();
        let changes = keeper.finish();
        let kinds: Vec<(&str, EntryKind, EntryKind)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.before_kind, c.after_kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("old", EntryKind::Dir, EntryKind::File),
                ("was_link", EntryKind::Link, EntryKind::File),
                ("made", EntryKind::File, EntryKind::Dir),
                ("link", EntryKind::File, EntryKind::Link),
            ]
        );
        // Gone, a file where a link was, a directory and a link made.
        assert!(changes[0].after_sha256.is_none() && !changes[0].exists_after());
        assert_eq!(changes[1].before.as_deref(), Some(b"target".as_slice()));
        assert!(changes[1].after_sha256.is_some());
        assert_eq!(changes[3].after.as_deref(), Some(b"made".as_slice()));
    }

    #[test]
    fn a_name_that_is_not_utf8_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut keeper = Keeper::new(dir.path()).unwrap();
        assert!(keeper.keep("bad\u{FFFD}name").is_err());
    }
}
