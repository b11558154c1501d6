//! Landlock-only containment's record of a command's changes: the
//! workspace walked before and after, compared by metadata, with the bytes
//! of files kept before (smallest first, up to [`SNAPSHOT_BYTES`]) so undo
//! can bring them back. A file past that budget is recorded by what it is
//! after only, and counted as not kept.
//!
//! The command writes the workspace itself in this mode, so this is a
//! record, not a gate: nothing is inspected before it lands.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::fs::WorkspaceRules;
use crate::layer::{ChangeSet, Node, PathChange, hash_file};
use crate::limits::{MAX_WALK_ENTRIES, SNAPSHOT_BYTES};

/// What one path was, by metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    is_dir: bool,
    is_link: bool,
    /// A regular file (not a FIFO, socket or device, which are never read).
    is_file: bool,
    len: u64,
    mode: u32,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
}

/// The workspace before a command.
#[derive(Debug)]
pub(crate) struct Snapshot {
    seen: BTreeMap<String, Seen>,
    kept: BTreeMap<String, Vec<u8>>,
}

fn walk(root: &Path, rules: &dyn WorkspaceRules) -> io::Result<BTreeMap<String, Seen>> {
    let mut seen = BTreeMap::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if seen.len() >= MAX_WALK_ENTRIES {
                return Err(io::Error::other("the workspace is too large to snapshot"));
            }
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if !rules.visible(&path) {
                continue;
            }
            let meta = entry.metadata()?;
            let kind = meta.file_type();
            if kind.is_dir() && rules.is_protected_name(&name) {
                // Recorded, not walked: a new one shows as created.
                seen.insert(
                    path,
                    Seen {
                        is_dir: true,
                        is_link: false,
                        is_file: false,
                        len: 0,
                        mode: meta.mode() & 0o7777,
                        mtime_ns: 0,
                        ctime_ns: 0,
                        ino: meta.ino(),
                    },
                );
                continue;
            }
            seen.insert(
                path.clone(),
                Seen {
                    is_dir: kind.is_dir(),
                    is_link: kind.is_symlink(),
                    is_file: kind.is_file(),
                    len: meta.len(),
                    mode: meta.mode() & 0o7777,
                    mtime_ns: i128::from(meta.mtime()) * 1_000_000_000
                        + i128::from(meta.mtime_nsec()),
                    ctime_ns: i128::from(meta.ctime()) * 1_000_000_000
                        + i128::from(meta.ctime_nsec()),
                    ino: meta.ino(),
                },
            );
            if kind.is_dir() {
                stack.push((entry.path(), path));
            }
        }
    }
    Ok(seen)
}

fn node_now(root: &Path, path: &str, seen: &Seen) -> io::Result<Node> {
    let full = root.join(path);
    if seen.is_dir {
        return Ok(Node::Dir(seen.mode));
    }
    if seen.is_link {
        use std::os::unix::ffi::OsStrExt;
        return Ok(Node::Symlink(
            std::fs::read_link(&full)?.as_os_str().as_bytes().to_vec(),
        ));
    }
    if !seen.is_file {
        return Ok(Node::Special("not a regular file"));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&full)?;
    let (sha256, _) = hash_file(file, false)?;
    Ok(Node::File {
        len: seen.len,
        mode: seen.mode,
        sha256,
        bytes: None,
    })
}

impl Snapshot {
    /// Walks the workspace and keeps the bytes of its smallest files.
    pub(crate) fn take(root: &Path, rules: &dyn WorkspaceRules) -> io::Result<Self> {
        let seen = walk(root, rules)?;
        let mut files: Vec<(&String, &Seen)> = seen.iter().filter(|(_, s)| s.is_file).collect();
        files.sort_by_key(|(_, s)| s.len);
        let mut kept = BTreeMap::new();
        let mut budget = SNAPSHOT_BYTES;
        for (path, s) in files {
            if s.len > budget {
                break;
            }
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
                .open(root.join(path));
            let mut bytes = Vec::new();
            if let Ok(mut file) = opened
                && std::io::Read::read_to_end(&mut file, &mut bytes).is_ok()
            {
                budget = budget.saturating_sub(bytes.len() as u64);
                kept.insert(path.clone(), bytes);
            }
        }
        Ok(Self { seen, kept })
    }

    fn before(&self, path: &str, s: &Seen) -> Node {
        if s.is_dir {
            return Node::Dir(s.mode);
        }
        match self.kept.get(path) {
            Some(bytes) => Node::File {
                len: s.len,
                mode: s.mode,
                sha256: crate::layer::hex(&sha2::Digest::finalize(sha2::Digest::chain_update(
                    sha2::Sha256::default(),
                    bytes,
                ))),
                bytes: Some(bytes.clone()),
            },
            None => Node::File {
                len: s.len,
                mode: s.mode,
                sha256: String::new(),
                bytes: None,
            },
        }
    }

    /// What changed since the snapshot.
    pub(crate) fn changes(&self, root: &Path, rules: &dyn WorkspaceRules) -> io::Result<ChangeSet> {
        let after = walk(root, rules)?;
        let mut set = ChangeSet::default();
        for (path, old) in &self.seen {
            match after.get(path) {
                None => {
                    let before = self.before(path, old);
                    if matches!(before, Node::File { bytes: None, .. }) {
                        set.unkept += 1;
                    }
                    set.changes.push(PathChange {
                        path: path.clone(),
                        before,
                        after: Node::Absent,
                    });
                }
                Some(new) if new != old && !(old.is_dir && new.is_dir && old.mode == new.mode) => {
                    let before = self.before(path, old);
                    let now = node_now(root, path, new)?;
                    let same = match (&before, &now) {
                        (
                            Node::File {
                                sha256: a, mode: m, ..
                            },
                            Node::File {
                                sha256: b, mode: n, ..
                            },
                        ) => a == b && m == n,
                        (a, b) => a == b,
                    };
                    if same {
                        continue;
                    }
                    if matches!(before, Node::File { bytes: None, .. }) {
                        set.unkept += 1;
                    }
                    set.changes.push(PathChange {
                        path: path.clone(),
                        before,
                        after: now,
                    });
                }
                Some(_) => {}
            }
        }
        for (path, new) in &after {
            if !self.seen.contains_key(path) {
                set.changes.push(PathChange {
                    path: path.clone(),
                    before: Node::Absent,
                    after: node_now(root, path, new)?,
                });
            }
        }
        set.changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(set)
    }
}
