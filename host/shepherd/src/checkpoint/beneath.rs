//! Files reached from the workspace root by the kernel, never through a
//! symbolic link: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`.
//! What a checkpoint records and what undo writes are both named this way,
//! so a link planted after a call can neither be read through nor written
//! through.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// The sha256 of `bytes`, hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The directory `dir` (a workspace path; empty for the root), opened
/// beneath the root through no link, each missing directory made.
fn open_dir(root: &OwnedFd, dir: &str) -> io::Result<OwnedFd> {
    let mut current = rustix::io::dup(root)?;
    for name in dir.split('/').filter(|c| !c.is_empty()) {
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
                match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                open(&current)?
            }
            Err(e) => return Err(e.into()),
        };
    }
    Ok(current)
}

/// `path` split into its directory (empty for the root) and name.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// A fresh temporary name per write, so two writes never share one.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` completely or not at all: into a new file
/// beside it, synced, then renamed over it. The directory is reached
/// through no link; the name itself is replaced, never written through
/// (a link or a hard-linked file at `path` is replaced, not followed).
/// Gives it `mode` (the permission bits it had when checkpointed) when
/// known, else keeps the mode of the file it replaces; a file made anew
/// without a known mode gets 0644.
pub(crate) fn write_atomic(
    root: &OwnedFd,
    path: &str,
    bytes: &[u8],
    mode: Option<u32>,
) -> io::Result<()> {
    let (dir, name) = split(path);
    let dir = open_dir(root, dir)?;
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
    // Of a fixed length, whatever the file's name: a name near the 255-byte
    // limit must not make its restore fail.
    let temporary = format!(
        ".goat-undo.{}.{}",
        std::process::id(),
        TEMPORARY.fetch_add(1, Ordering::Relaxed)
    );
    let fd = rustix::fs::openat(
        &dir,
        temporary.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?;
    // The umask applied at creation; the bits are the file's own.
    if let Err(e) = rustix::fs::fchmod(&fd, mode) {
        let _ = rustix::fs::unlinkat(&dir, temporary.as_str(), AtFlags::empty());
        return Err(e.into());
    }
    let mut file = File::from(fd);
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            rustix::fs::renameat(&dir, temporary.as_str(), &dir, name).map_err(io::Error::from)
        });
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, temporary.as_str(), AtFlags::empty());
    }
    written
}

/// Removes the name `path` (a file; a link is removed, not followed),
/// its directory reached through no link.
pub(crate) fn remove(root: &OwnedFd, path: &str) -> io::Result<()> {
    let (dir, name) = split(path);
    let dir = rustix::fs::openat2(
        root,
        if dir.is_empty() { "." } else { dir },
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        RESOLVE,
    )?;
    Ok(rustix::fs::unlinkat(&dir, name, AtFlags::empty())?)
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
        write_atomic(&root, &name, b"kept", None).unwrap();
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
        assert!(write_atomic(&root, "out/f", b"x", None).is_err());
        assert!(write_atomic(&root, "inside/g", b"x", None).is_err());
        assert!(remove(&root, "out/f").is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("f")).unwrap(),
            "secret"
        );
        assert!(!ws.join("real/g").exists());

        // Directories are made as needed; the bytes are exact.
        write_atomic(&root, "a/b/c.bin", b"\x00\xff", None).unwrap();
        let State::File {
            bytes, len, sha256, ..
        } = state(&root, "a/b/c.bin").unwrap()
        else {
            panic!("not a file");
        };
        assert_eq!((bytes.as_deref(), len), (Some(&b"\x00\xff"[..]), 2));
        assert_eq!(sha256, sha256_hex(b"\x00\xff"));
        remove(&root, "a/b/c.bin").unwrap();
        assert_eq!(state(&root, "a/b/c.bin").unwrap(), State::Absent);
    }
}
