//! Files reached from the workspace root by the kernel, never through a
//! symbolic link: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`.
//! What a checkpoint records and what undo writes are both named this way,
//! so a link planted after a call can neither be read through nor written
//! through.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use super::MAX_CHECKPOINT_BYTES;

/// How every path below the root is resolved: beneath it, and through no
/// link of any kind.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// What a workspace path holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Nothing.
    Absent,
    /// A regular file.
    File {
        /// The sha256 of all its bytes, hex.
        sha256: String,
        /// Its bytes, when within [`MAX_CHECKPOINT_BYTES`].
        bytes: Option<Vec<u8>>,
        /// How many bytes it has.
        len: u64,
        /// Its permission bits (`0o7777`).
        mode: u32,
    },
    /// Something a checkpoint does not hold: a link (here or in a
    /// directory above), a directory, a FIFO...; says which.
    Other(&'static str),
}

/// The workspace root, opened as a directory.
pub(crate) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// What `path` (a workspace path, `/`-separated) holds, read without
/// following any link and without blocking (a FIFO is named, not read).
pub(crate) fn state(root: &impl AsFd, path: &str) -> io::Result<State> {
    let fd = match rustix::fs::openat2(
        root,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
        RESOLVE,
    ) {
        Ok(fd) => fd,
        // ENOTDIR: a file where a directory of the path should be.
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(State::Absent),
        Err(Errno::LOOP) => return Ok(State::Other("a symbolic link")),
        Err(Errno::XDEV) => return Ok(State::Other("outside the workspace")),
        Err(e) => return Err(e.into()),
    };
    let stat = rustix::fs::fstat(&fd)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Ok(State::Other("a directory")),
        _ => return Ok(State::Other("not a regular file")),
    }
    let mut file = File::from(fd);
    let mut hasher = Sha256::new();
    let mut kept = Some(Vec::new());
    let mut len: u64 = 0;
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
        len = len.saturating_add(n as u64);
        if len > MAX_CHECKPOINT_BYTES {
            kept = None;
        } else if let Some(kept) = kept.as_mut() {
            kept.extend_from_slice(chunk);
        }
    }
    Ok(State::File {
        sha256: hex(&hasher.finalize()),
        bytes: kept,
        len,
        mode: stat.st_mode & 0o7777,
    })
}

/// What is at a workspace path, without reading a file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Nothing.
    Absent,
    /// A regular file, its length and permission bits.
    File { len: u64, mode: u32 },
    /// A directory, its permission bits.
    Dir(u32),
    /// A symbolic link, its target.
    Link(Vec<u8>),
    /// Something else (a FIFO, a device), or a link on the way; says what.
    Other(&'static str),
}

/// What is at `path`, reached beneath `root` through no link (a link on
/// the way is [`Entry::Other`]); a file's bytes are not read.
pub(crate) fn entry(root: &impl AsFd, path: &str) -> io::Result<Entry> {
    let (dir, name) = split(path);
    let parent = if dir.is_empty() {
        rustix::io::dup(root.as_fd())?
    } else {
        match rustix::fs::openat2(
            root,
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            RESOLVE,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Entry::Absent),
            Err(Errno::LOOP) => return Ok(Entry::Other("beneath a symbolic link")),
            Err(Errno::XDEV) => return Ok(Entry::Other("outside the workspace")),
            Err(e) => return Err(e.into()),
        }
    };
    let stat = match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(Entry::Absent),
        Err(e) => return Err(e.into()),
    };
    Ok(match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Entry::File {
            len: u64::try_from(stat.st_size).unwrap_or(u64::MAX),
            mode: stat.st_mode & 0o7777,
        },
        FileType::Directory => Entry::Dir(stat.st_mode & 0o7777),
        FileType::Symlink => {
            Entry::Link(rustix::fs::readlinkat(&parent, name, Vec::new())?.into_bytes())
        }
        _ => Entry::Other("not a regular file"),
    })
}

/// The sha256 of `bytes`, hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `path` split into its directory (empty for the root) and name.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// A name for a temporary or backup entry beside the file it is for:
/// random, so it can be neither guessed nor planted in advance, and of a
/// fixed length, so a file name near the 255-byte limit restores.
fn random_name() -> io::Result<String> {
    Ok(format!(".goat-undo-{}", crate::random::random_hex(12)?))
}

/// Tries `make` with fresh random names until one is free.
fn with_fresh_name(mut make: impl FnMut(&str) -> rustix::io::Result<()>) -> io::Result<String> {
    for _ in 0..16 {
        let name = random_name()?;
        match make(&name) {
            Ok(()) => return Ok(name),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// What a path holds now, as undo's check needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Now {
    /// Nothing, and its directory is there (or can be made).
    Absent,
    /// Nothing can be put there: a directory on the way is something
    /// else; says what.
    Blocked(String),
    /// A regular file.
    File { sha256: String },
    /// A symbolic link, with the sha256 of its target.
    Link { sha256: String },
    /// A directory.
    Dir,
    /// Something undo never writes over; says what.
    Other(&'static str),
}

/// What `path` holds now, reached through no link; a file on the way to it
/// (`Blocked`) is told apart from nothing there (`Absent`).
pub(crate) fn now(root: &OwnedFd, path: &str) -> io::Result<Now> {
    let (dir, name) = split(path);
    let mut at = rustix::io::dup(root)?;
    let mut walked = String::new();
    for part in dir.split('/').filter(|c| !c.is_empty()) {
        if !walked.is_empty() {
            walked.push('/');
        }
        walked.push_str(part);
        match rustix::fs::statat(&at, part, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => return Ok(Now::Absent),
            Err(e) => return Err(e.into()),
            Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::Directory => {
                return Ok(Now::Blocked(format!(
                    "it is now beneath '{walked}', which is not a directory"
                )));
            }
            Ok(_) => {}
        }
        at = rustix::fs::openat2(
            &at,
            part,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            RESOLVE,
        )?;
    }
    let stat = match rustix::fs::statat(&at, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(Now::Absent),
        Err(e) => return Err(e.into()),
    };
    Ok(match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => match state(root, path)? {
            State::File { sha256, .. } => Now::File { sha256 },
            State::Absent => Now::Absent,
            State::Other(what) => Now::Other(what),
        },
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(&at, name, Vec::new())?;
            Now::Link {
                sha256: sha256_hex(target.as_bytes()),
            }
        }
        FileType::Directory => Now::Dir,
        _ => Now::Other("not a regular file"),
    })
}

/// Removes the backup directory when a rollback is done.
struct BackupsDropped<'a>(&'a Option<String>, &'a OwnedFd);

impl Drop for BackupsDropped<'_> {
    fn drop(&mut self) {
        if let Some(backups) = self.0 {
            let _ = rustix::fs::unlinkat(self.1, backups.as_str(), AtFlags::REMOVEDIR);
        }
    }
}

/// One step of an undo, and how to take it back.
#[derive(Debug)]
enum Step {
    /// `name` in `dir` was replaced; what it held is kept at `backup` (a
    /// workspace path).
    Replaced {
        dir: String,
        name: String,
        backup: String,
    },
    /// `name` in `dir` was made where nothing was.
    Created { dir: String, name: String },
    /// `name` in `dir` was moved aside to `backup`.
    Moved {
        dir: String,
        name: String,
        backup: String,
    },
    /// A directory was made (`path`).
    MadeDir(String),
    /// A directory's bits were `old`.
    Chmodded { path: String, old: u32 },
    /// An empty directory was removed, with these bits.
    RemovedDir { path: String, mode: u32 },
}

/// The steps of one undo, each atomic, taken back in reverse order if a
/// later one fails ([`Journal::rollback`]); the backups are removed only
/// when all have succeeded ([`Journal::commit`]).
pub(crate) struct Journal<'r> {
    root: &'r OwnedFd,
    steps: Vec<Step>,
    /// The directory at the root the backups go to (a random name, made
    /// at the first need), so a directory emptied by undo is empty.
    backups: Option<String>,
    count: usize,
}

impl<'r> Journal<'r> {
    pub(crate) fn new(root: &'r OwnedFd) -> Self {
        Self {
            root,
            steps: Vec::new(),
            backups: None,
            count: 0,
        }
    }

    /// Keeps `name` in `dir` (`dir_path`) at a new backup path: in the
    /// backup directory, or beside it where that is another filesystem (a
    /// mount inside the workspace). `link`: a second name (the entry stays);
    /// otherwise it is moved.
    fn keep(
        &mut self,
        dir_path: &str,
        dir: &OwnedFd,
        name: &str,
        link: bool,
    ) -> io::Result<String> {
        if self.backups.is_none() {
            let made =
                with_fresh_name(|n| rustix::fs::mkdirat(self.root, n, Mode::from_raw_mode(0o700)))?;
            self.backups = Some(made);
        }
        let backups = self.backups.clone().unwrap_or_default();
        self.count += 1;
        let n = format!("{}", self.count);
        let bk = self.reopen(&backups)?;
        let moved = if link {
            rustix::fs::linkat(dir, name, &bk, n.as_str(), AtFlags::empty())
        } else {
            rustix::fs::renameat_with(
                dir,
                name,
                &bk,
                n.as_str(),
                rustix::fs::RenameFlags::NOREPLACE,
            )
        };
        match moved {
            Ok(()) => Ok(format!("{backups}/{n}")),
            Err(Errno::XDEV) => {
                let beside = with_fresh_name(|b| {
                    if link {
                        rustix::fs::linkat(dir, name, dir, b, AtFlags::empty())
                    } else {
                        rustix::fs::renameat_with(
                            dir,
                            name,
                            dir,
                            b,
                            rustix::fs::RenameFlags::NOREPLACE,
                        )
                    }
                })?;
                Ok(if dir_path.is_empty() {
                    beside
                } else {
                    format!("{dir_path}/{beside}")
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Renames the backup at `backup` back to `name` in `dir`.
    fn bring_back(&self, backup: &str, dir: &str, name: &str) -> io::Result<()> {
        let (bdir, bname) = split(backup);
        let bdir = self.reopen(bdir)?;
        let dir = self.reopen(dir)?;
        Ok(rustix::fs::renameat(&bdir, bname, &dir, name)?)
    }

    /// Removes the backup directory (empty, or with what it still holds).
    fn drop_backups(&self) {
        let Some(backups) = &self.backups else {
            return;
        };
        if let Ok(bk) = self.reopen(backups) {
            for n in 1..=self.count {
                let _ = rustix::fs::unlinkat(&bk, format!("{n}").as_str(), AtFlags::empty());
            }
        }
        let _ = rustix::fs::unlinkat(self.root, backups.as_str(), AtFlags::REMOVEDIR);
    }

    /// The directory `dir` (a workspace path; empty for the root), opened
    /// beneath the root through no link, each missing directory made (and
    /// recorded, so a rollback removes it).
    fn dir(&mut self, dir: &str) -> io::Result<OwnedFd> {
        let mut current = rustix::io::dup(self.root)?;
        let mut walked = String::new();
        for name in dir.split('/').filter(|c| !c.is_empty()) {
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(name);
            let open = |at: &OwnedFd| {
                rustix::fs::openat2(
                    at,
                    name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                    RESOLVE,
                )
            };
            current = match open(&current) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => {
                    rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o755))?;
                    self.steps.push(Step::MadeDir(walked.clone()));
                    open(&current)?
                }
                Err(e) => return Err(e.into()),
            };
        }
        Ok(current)
    }

    fn reopen(&self, dir: &str) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat2(
            self.root,
            if dir.is_empty() { "." } else { dir },
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            RESOLVE,
        )?)
    }

    /// Puts a prepared temporary entry over `name`, keeping what was
    /// there as a backup.
    fn place(
        &mut self,
        dir_path: &str,
        dir: &OwnedFd,
        temporary: &str,
        name: &str,
    ) -> io::Result<()> {
        let existing = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok();
        let backup = if existing {
            Some(self.keep(dir_path, dir, name, true)?)
        } else {
            None
        };
        if let Err(e) = rustix::fs::renameat(dir, temporary, dir, name) {
            if let Some(b) = &backup {
                let (bdir, bname) = split(b);
                if let Ok(bdir) = self.reopen(bdir) {
                    let _ = rustix::fs::unlinkat(&bdir, bname, AtFlags::empty());
                }
            }
            return Err(e.into());
        }
        self.steps.push(match backup {
            Some(backup) => Step::Replaced {
                dir: dir_path.to_owned(),
                name: name.to_owned(),
                backup,
            },
            None => Step::Created {
                dir: dir_path.to_owned(),
                name: name.to_owned(),
            },
        });
        Ok(())
    }

    /// Writes `bytes` to `path` completely or not at all: into a new file
    /// beside it, synced, then renamed over it, with `mode` when known
    /// (else the mode of the file it replaces, else 0644). The name itself
    /// is replaced, never written through.
    pub(crate) fn write(&mut self, path: &str, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        let (dir_path, name) = split(path);
        let dir = self.dir(dir_path)?;
        let mode = match (
            mode,
            rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW),
        ) {
            (Some(mode), _) => Mode::from_raw_mode(mode & 0o7777),
            (None, Ok(stat)) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                Mode::from_raw_mode(stat.st_mode & 0o7777)
            }
            _ => Mode::from_raw_mode(0o644),
        };
        let mut fd = None;
        let temporary = with_fresh_name(|t| {
            fd = Some(rustix::fs::openat(
                &dir,
                t,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            )?);
            Ok(())
        })?;
        let written = (|| -> io::Result<()> {
            let fd = fd
                .take()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
            // The umask applied at creation; the bits are the file's own.
            rustix::fs::fchmod(&fd, mode)?;
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()
        })()
        .and_then(|()| self.place(dir_path, &dir, &temporary, name));
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&dir, temporary.as_str(), AtFlags::empty());
        }
        written
    }

    /// Makes `path` a symbolic link to `target`, replacing what is there.
    pub(crate) fn link(&mut self, path: &str, target: &[u8]) -> io::Result<()> {
        let (dir_path, name) = split(path);
        let dir = self.dir(dir_path)?;
        let temporary = with_fresh_name(|t| rustix::fs::symlinkat(target, &dir, t))?;
        let placed = self.place(dir_path, &dir, &temporary, name);
        if placed.is_err() {
            let _ = rustix::fs::unlinkat(&dir, temporary.as_str(), AtFlags::empty());
        }
        placed
    }

    /// Moves the file or link `path` aside (removed for good at commit).
    pub(crate) fn remove(&mut self, path: &str) -> io::Result<()> {
        let (dir_path, name) = split(path);
        let dir = self.reopen(dir_path)?;
        let backup = self.keep(dir_path, &dir, name, false)?;
        self.steps.push(Step::Moved {
            dir: dir_path.to_owned(),
            name: name.to_owned(),
            backup,
        });
        Ok(())
    }

    /// Makes `path` a directory (if it is not one) with `mode` (if known).
    pub(crate) fn directory(&mut self, path: &str, mode: Option<u32>) -> io::Result<()> {
        let dir = self.dir(path)?;
        if let Some(mode) = mode {
            let old = rustix::fs::fstat(&dir)?.st_mode & 0o7777;
            rustix::fs::fchmod(&dir, Mode::from_raw_mode(mode & 0o7777))?;
            self.steps.push(Step::Chmodded {
                path: path.to_owned(),
                old,
            });
        }
        Ok(())
    }

    /// Removes the directory `path` if it is empty; `false` when it is not.
    pub(crate) fn remove_empty_dir(&mut self, path: &str) -> io::Result<bool> {
        let (dir_path, name) = split(path);
        let dir = self.reopen(dir_path)?;
        let mode = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode & 0o7777;
        match rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR) {
            Ok(()) => {
                self.steps.push(Step::RemovedDir {
                    path: path.to_owned(),
                    mode,
                });
                Ok(true)
            }
            Err(Errno::NOTEMPTY | Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Takes back every step, newest first; best effort (each is a rename
    /// or a removal of what this undo made).
    pub(crate) fn rollback(mut self) {
        let _cleanup = BackupsDropped(&self.backups.clone(), self.root);
        while let Some(step) = self.steps.pop() {
            let _ = (|| -> io::Result<()> {
                match &step {
                    Step::Replaced { dir, name, backup } | Step::Moved { dir, name, backup } => {
                        self.bring_back(backup, dir, name)?;
                    }
                    Step::Created { dir, name } => {
                        let dir = self.reopen(dir)?;
                        rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty())?;
                    }
                    Step::MadeDir(path) | Step::RemovedDir { path, .. } => {
                        let (parent, name) = split(path);
                        let parent = self.reopen(parent)?;
                        if let Step::RemovedDir { mode, .. } = &step {
                            rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(*mode))?;
                        } else {
                            rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR)?;
                        }
                    }
                    Step::Chmodded { path, old } => {
                        let dir = self.reopen(path)?;
                        rustix::fs::fchmod(&dir, Mode::from_raw_mode(*old))?;
                    }
                }
                Ok(())
            })();
        }
    }

    /// Removes the backups: the undo stands.
    pub(crate) fn commit(self) {
        for step in &self.steps {
            if let Step::Replaced { backup, .. } | Step::Moved { backup, .. } = step {
                let (bdir, bname) = split(backup);
                if let Ok(bdir) = self.reopen(bdir) {
                    let _ = rustix::fs::unlinkat(&bdir, bname, AtFlags::empty());
                }
            }
        }
        self.drop_backups();
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_name_at_the_length_limit_is_restored() {
        let dir = tempfile::tempdir().unwrap();
        let root = open_root(dir.path()).unwrap();
        let name = "n".repeat(255);
        let mut journal = Journal::new(&root);
        journal.write(&name, b"kept", None).unwrap();
        journal.commit();
        assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"kept");
        // Nothing temporary is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn nothing_is_read_or_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, outside) = (dir.path().join("ws"), dir.path().join("outside"));
        std::fs::create_dir_all(ws.join("real")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("f"), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
        std::os::unix::fs::symlink("real", ws.join("inside")).unwrap();
        let root = open_root(&ws).unwrap();

        assert_eq!(
            state(&root, "out/f").unwrap(),
            State::Other("a symbolic link")
        );
        assert_eq!(
            state(&root, "inside").unwrap(),
            State::Other("a symbolic link")
        );
        assert_eq!(state(&root, "real/none").unwrap(), State::Absent);
        assert!(Journal::new(&root).write("out/f", b"x", None).is_err());
        assert!(Journal::new(&root).write("inside/g", b"x", None).is_err());
        assert!(Journal::new(&root).remove("out/f").is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("f")).unwrap(),
            "secret"
        );
        assert!(!ws.join("real/g").exists());

        // Directories are made as needed; the bytes are exact.
        let mut journal = Journal::new(&root);
        journal.write("a/b/c.bin", b"\x00\xff", None).unwrap();
        journal.commit();
        let State::File {
            bytes, len, sha256, ..
        } = state(&root, "a/b/c.bin").unwrap()
        else {
            panic!("not a file");
        };
        assert_eq!((bytes.as_deref(), len), (Some(&b"\x00\xff"[..]), 2));
        assert_eq!(sha256, sha256_hex(b"\x00\xff"));
        let mut journal = Journal::new(&root);
        journal.remove("a/b/c.bin").unwrap();
        journal.commit();
        assert_eq!(state(&root, "a/b/c.bin").unwrap(), State::Absent);
    }
}
