//! The command's scratch area and what its upper layer says it changed.
//!
//! A [`Layer`] is a private directory GOAT makes for one command, on the
//! workspace's filesystem (so that landing is renames): the overlay's
//! `upper` and `work` directories, the new root's mount point, the private
//! `/tmp`, and the empty file and directory that cover hidden paths. It is
//! removed with everything in it when dropped.
//!
//! When the command has ended, [`Layer::changes`] reads the upper directory
//! into a [`ChangeSet`]: every path created, replaced, removed or given new
//! permission bits, in overlayfs's own terms (a whiteout is a removal, an
//! opaque directory replaces the one below it), with what the workspace
//! held there before and what the command left.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::limits::{MAX_CHANGE_ENTRIES, MAX_KEPT_BYTES_PER_FILE, MAX_KEPT_BYTES_TOTAL};

/// What a path holds, before or after the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// Nothing.
    Absent,
    /// A regular file.
    File {
        /// Its length.
        len: u64,
        /// Its permission bits (`0o7777`).
        mode: u32,
        /// The sha256 of its bytes, hex.
        sha256: String,
        /// Its bytes, when kept (within [`MAX_KEPT_BYTES_PER_FILE`] and the
        /// whole set's [`MAX_KEPT_BYTES_TOTAL`]).
        bytes: Option<Vec<u8>>,
    },
    /// A symbolic link, with its target.
    Symlink(Vec<u8>),
    /// A directory, with its permission bits.
    Dir(u32),
    /// A FIFO, socket or device node: never landed.
    Special(&'static str),
}

impl Node {
    /// Whether something is there.
    pub fn exists(&self) -> bool {
        !matches!(self, Self::Absent)
    }
}

/// One path the command changed: what the workspace held there before and
/// what it holds once the set has landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathChange {
    /// The path inside the workspace, `/`-separated.
    pub path: String,
    /// Before the command.
    pub before: Node,
    /// After the command.
    pub after: Node,
}

/// What the workspace held at a path when the change set was read: its
/// inode and change time (`None`: nothing). Landing checks it again, so
/// what someone put there since is never replaced or removed unrecorded.
pub(crate) type Ident = Option<(u64, i64, u64)>;

/// How to land one top-level change: the order matters (removals first,
/// then what is placed, parents before children).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Remove what the workspace holds at this path (a file, a link or a
    /// whole directory).
    Remove(String, Ident),
    /// Move the upper layer's entry at this path (a file, a link or a whole
    /// new directory) into the workspace.
    Place(String, Ident),
    /// Give an existing directory these permission bits.
    Chmod(String, u32),
}

impl Op {
    /// The path it lands.
    pub(crate) fn path(&self) -> &str {
        match self {
            Self::Remove(p, _) | Self::Place(p, _) | Self::Chmod(p, _) => p,
        }
    }
}

/// What `name` in `dir` is now, by inode and change time.
pub(crate) fn ident(dir: &impl AsFd, name: &[u8]) -> io::Result<Ident> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some((st.st_ino, st.st_ctime, st.st_ctime_nsec))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Everything a command changed in the workspace, read from its upper
/// layer.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    /// Every path changed, files inside new or removed directories
    /// included, in path order.
    pub changes: Vec<PathChange>,
    /// How to land them.
    pub(crate) ops: Vec<Op>,
    /// Whether some before-bytes were not kept (a file over the per-file
    /// cap, or past the set's total): undo cannot bring those back.
    pub unkept: usize,
}

impl ChangeSet {
    /// Whether the command changed nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// The command's private scratch directory.
#[derive(Debug)]
pub(crate) struct Layer {
    pub dir: PathBuf,
    /// Kept when dropped: a landing that could not be taken back leaves
    /// what the workspace held in its backups.
    pub keep: bool,
    /// The opaque-directory marker the overlay was mounted to write
    /// ([`opaque_xattr`]); the other spelling is an ordinary attribute a
    /// process inside may set, and is never read as the marker.
    pub opaque: &'static str,
}

/// The overlay's `user.` (in a user namespace) and `trusted.` spellings of
/// the opaque-directory marker.
pub(crate) const OPAQUE_XATTRS: &[&str] = &["user.overlay.opaque", "trusted.overlay.opaque"];

/// The opaque-directory marker an overlay mounted with (`userxattr`, in a
/// user namespace) or without a user namespace writes.
pub(crate) fn opaque_xattr(user_ns: bool) -> &'static str {
    if user_ns {
        "user.overlay.opaque"
    } else {
        "trusted.overlay.opaque"
    }
}

impl Layer {
    /// Makes the scratch directory under `base` (mode 0700) with its parts.
    pub(crate) fn create(base: &Path) -> io::Result<Self> {
        let mut random = [0u8; 8];
        rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())?;
        let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let dir = base.join(format!("goat-layer-{name}"));
        rustix::fs::mkdir(&dir, Mode::from_raw_mode(0o700))?;
        let layer = Self {
            dir,
            keep: false,
            opaque: opaque_xattr(true),
        };
        for part in ["upper", "work", "root", "tmp", "emptydir", "backup"] {
            std::fs::create_dir(layer.dir.join(part))?;
        }
        rustix::fs::chmod(layer.dir.join("tmp"), Mode::from_raw_mode(0o700))?;
        rustix::fs::chmod(layer.dir.join("emptydir"), Mode::from_raw_mode(0o555))?;
        File::create(layer.dir.join("empty"))?;
        rustix::fs::chmod(layer.dir.join("empty"), Mode::from_raw_mode(0o444))?;
        Ok(layer)
    }

    pub(crate) fn upper(&self) -> PathBuf {
        self.dir.join("upper")
    }

    /// Reads what the command changed, comparing the upper layer with the
    /// workspace below it.
    pub(crate) fn changes(&self, workspace: &Path) -> io::Result<ChangeSet> {
        let upper = open_dir_path(&self.upper())?;
        let lower = open_dir_path(workspace)?;
        let mut reader = Reader {
            opaque: self.opaque,
            set: ChangeSet::default(),
            kept_total: 0,
            entries: 0,
        };
        reader.walk_upper(&upper, Some(&lower), "")?;
        reader.set.changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(reader.set)
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        // The emptied directories are read-only; give them back their
        // write bit so they can be removed.
        let _ = rustix::fs::chmod(self.dir.join("emptydir"), Mode::from_raw_mode(0o700));
        let _ = remove_tree(&self.dir);
    }
}

/// Removes `dir` and everything in it, making directories writable first
/// (a command may leave read-only directories in its layer).
pub(crate) fn remove_tree(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(dir);
            std::fs::remove_dir_all(dir)
        }
    }
}

fn make_writable(dir: &Path) {
    let _ = rustix::fs::chmod(dir, Mode::from_raw_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

pub(crate) fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?)
}

pub(crate) fn open_dir_at(dir: &impl AsFd, name: &[u8]) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )?)
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}

/// The names in a directory, `.` and `..` left out, sorted.
pub(crate) fn names(dir: &impl AsFd) -> io::Result<Vec<Vec<u8>>> {
    let listing = rustix::fs::openat(
        dir,
        c".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(&listing)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(name.to_vec());
        }
    }
    out.sort();
    Ok(out)
}

struct Reader {
    opaque: &'static str,
    set: ChangeSet,
    kept_total: u64,
    entries: usize,
}

impl Reader {
    fn count(&mut self) -> io::Result<()> {
        self.entries += 1;
        if self.entries > MAX_CHANGE_ENTRIES {
            return Err(io::Error::other(format!(
                "the command changed more than {MAX_CHANGE_ENTRIES} paths, more than GOAT \
                 inspects and lands in one change set"
            )));
        }
        Ok(())
    }

    /// What `name` in `dir` is, without following a link; its bytes read
    /// (and kept within the caps) when it is a regular file.
    fn node(&mut self, dir: &impl AsFd, name: &[u8], keep: bool) -> io::Result<Node> {
        let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Node::Absent),
            Err(e) => return Err(e.into()),
        };
        let mode = stat.st_mode & 0o7777;
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {
                let fd = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                let len = u64::try_from(stat.st_size).unwrap_or(0);
                let keep = keep
                    && len <= MAX_KEPT_BYTES_PER_FILE
                    && self.kept_total.saturating_add(len) <= MAX_KEPT_BYTES_TOTAL;
                let (sha256, bytes) = hash_file(File::from(fd), keep)?;
                if let Some(bytes) = &bytes {
                    self.kept_total += bytes.len() as u64;
                }
                Node::File {
                    len,
                    mode,
                    sha256,
                    bytes,
                }
            }
            FileType::Directory => Node::Dir(mode),
            FileType::Symlink => {
                Node::Symlink(rustix::fs::readlinkat(dir, name, Vec::new())?.into_bytes())
            }
            FileType::Fifo => Node::Special("a FIFO"),
            FileType::Socket => Node::Special("a socket"),
            FileType::CharacterDevice => Node::Special("a character device"),
            FileType::BlockDevice => Node::Special("a block device"),
            FileType::Unknown => Node::Special("a file of unknown type"),
        })
    }

    /// Records everything below a workspace directory that is removed.
    fn removed_tree(&mut self, dir: &impl AsFd, rel: &str) -> io::Result<()> {
        for name in names(dir)? {
            self.count()?;
            let Some(text) = std::str::from_utf8(&name).ok() else {
                return Err(unnamed(rel));
            };
            let path = join(rel, text);
            let before = self.node(dir, &name, true)?;
            if matches!(before, Node::Dir(_)) {
                let sub = open_dir_at(dir, &name)?;
                self.removed_tree(&sub, &path)?;
            }
            if matches!(before, Node::File { bytes: None, .. }) {
                self.set.unkept += 1;
            }
            self.set.changes.push(PathChange {
                path,
                before,
                after: Node::Absent,
            });
        }
        Ok(())
    }

    /// Records everything below a new directory of the upper layer.
    fn created_tree(&mut self, dir: &impl AsFd, rel: &str) -> io::Result<()> {
        for name in names(dir)? {
            self.count()?;
            let Some(text) = std::str::from_utf8(&name).ok() else {
                return Err(unnamed(rel));
            };
            let path = join(rel, text);
            let after = self.node(dir, &name, false)?;
            if matches!(after, Node::Dir(_)) {
                let sub = open_dir_at(dir, &name)?;
                self.created_tree(&sub, &path)?;
            }
            self.set.changes.push(PathChange {
                path,
                before: Node::Absent,
                after,
            });
        }
        Ok(())
    }

    /// Walks the upper directory `upper` at `rel`, with the workspace's
    /// directory at the same place (`None` when there is none).
    fn walk_upper(
        &mut self,
        upper: &OwnedFd,
        lower: Option<&OwnedFd>,
        rel: &str,
    ) -> io::Result<()> {
        for name in names(upper)? {
            self.count()?;
            let Some(text) = std::str::from_utf8(&name).ok() else {
                return Err(unnamed(rel));
            };
            let path = join(rel, text);
            let stat = rustix::fs::statat(upper, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW)?;
            let kind = FileType::from_raw_mode(stat.st_mode);
            let before = match lower {
                Some(lower) => self.node(lower, &name, true)?,
                None => Node::Absent,
            };
            let whiteout = kind == FileType::CharacterDevice && stat.st_rdev == 0;
            // What was there goes first when it is replaced by something of
            // another kind, or removed.
            let replaced_dir = matches!(before, Node::Dir(_));
            if whiteout {
                if before.exists() {
                    self.remove(lower, &name, &path, before)?;
                }
                continue;
            }
            let after = self.node(upper, &name, false)?;
            match (&before, &after) {
                (Node::Dir(old_mode), Node::Dir(new_mode))
                    if !opaque(upper, &name, self.opaque) =>
                {
                    if old_mode != new_mode {
                        self.set.ops.push(Op::Chmod(path.clone(), *new_mode));
                        self.set.changes.push(PathChange {
                            path: path.clone(),
                            before: before.clone(),
                            after: after.clone(),
                        });
                    }
                    let sub_upper = open_dir_at(upper, &name)?;
                    let sub_lower = match lower {
                        Some(lower) => Some(open_dir_at(lower, &name)?),
                        None => None,
                    };
                    self.walk_upper(&sub_upper, sub_lower.as_ref(), &path)?;
                }
                _ => {
                    let was = match lower {
                        Some(lower) => ident(lower, &name)?,
                        None => None,
                    };
                    if same_content(&before, &after) {
                        // Copied up but left as it was (opened for
                        // writing, touched): still placed, so times land,
                        // but nothing to record.
                        self.set.ops.push(Op::Place(path, was));
                        continue;
                    }
                    if before.exists() {
                        if replaced_dir || matches!(after, Node::Dir(_)) {
                            self.remove(lower, &name, &path, before.clone())?;
                        } else {
                            if matches!(before, Node::File { bytes: None, .. }) {
                                self.set.unkept += 1;
                            }
                            // Replaced in one rename: recorded, not removed.
                            self.set.changes.push(PathChange {
                                path: path.clone(),
                                before: before.clone(),
                                after: after.clone(),
                            });
                            self.set.ops.push(Op::Place(path, was));
                            continue;
                        }
                    }
                    if matches!(after, Node::Dir(_)) {
                        let sub = open_dir_at(upper, &name)?;
                        self.created_tree(&sub, &path)?;
                    }
                    self.set.changes.push(PathChange {
                        path: path.clone(),
                        before: Node::Absent,
                        after,
                    });
                    // What was there is removed first (when anything was).
                    self.set.ops.push(Op::Place(path, None));
                }
            }
        }
        Ok(())
    }

    fn remove(
        &mut self,
        lower: Option<&OwnedFd>,
        name: &[u8],
        path: &str,
        before: Node,
    ) -> io::Result<()> {
        let was = match lower {
            Some(lower) => ident(lower, name)?,
            None => None,
        };
        if let (Node::Dir(_), Some(lower)) = (&before, lower) {
            let sub = open_dir_at(lower, name)?;
            self.removed_tree(&sub, path)?;
        }
        if matches!(before, Node::File { bytes: None, .. }) {
            self.set.unkept += 1;
        }
        self.set.changes.push(PathChange {
            path: path.to_owned(),
            before,
            after: Node::Absent,
        });
        self.set.ops.push(Op::Remove(path.to_owned(), was));
        Ok(())
    }
}

fn unnamed(rel: &str) -> io::Error {
    io::Error::other(format!(
        "the command made a name that is not UTF-8 in '{}', which no permission rule can be \
         asked about",
        if rel.is_empty() { "." } else { rel }
    ))
}

/// Whether the upper layer's directory `name` hides the one below it, by
/// the marker `attr` its overlay writes.
fn opaque(dir: &OwnedFd, name: &[u8], attr: &str) -> bool {
    open_dir_at(dir, name).is_ok_and(|fd| is_opaque(&fd, attr))
}

/// Whether the directory `fd` carries the opaque marker `attr`.
pub(crate) fn is_opaque(fd: &OwnedFd, attr: &str) -> bool {
    let mut value = [0u8; 4];
    matches!(rustix::fs::fgetxattr(fd, attr, &mut value), Ok(n) if value.get(..n) == Some(b"y"))
}

fn same_content(before: &Node, after: &Node) -> bool {
    match (before, after) {
        (
            Node::File {
                sha256: a, mode: m, ..
            },
            Node::File {
                sha256: b, mode: n, ..
            },
        ) => a == b && m == n,
        (Node::Symlink(a), Node::Symlink(b)) => a == b,
        _ => false,
    }
}

/// The sha256 of a file's bytes, and the bytes when `keep`.
pub(crate) fn hash_file(mut file: File, keep: bool) -> io::Result<(String, Option<Vec<u8>>)> {
    let mut hasher = Sha256::new();
    let mut kept = keep.then(Vec::new);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        hasher.update(chunk);
        if let Some(kept) = kept.as_mut() {
            kept.extend_from_slice(chunk);
        }
    }
    Ok((hex(&hasher.finalize()), kept))
}

/// Lower-case hex.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
