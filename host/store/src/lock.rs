//! Who drives a session: one process at a time.
//!
//! A process that runs turns in a session (`goat run`, `goat chat`) holds
//! an exclusive OS advisory lock (`flock`) on two files per session:
//!
//! - one named by the store's identity, its device and inode, in one
//!   private directory for all the user's stores
//!   ([`goat_state::paths::session_lock_root`]), so every name of the
//!   file (a symlink, a hard link in another directory) meets the same
//!   lock;
//! - one in a private directory beside the database (`goat.db-locks/`
//!   for `goat.db`, named like SQLite's own `-wal` and `-shm` files),
//!   which two processes that disagree on that root (another
//!   `XDG_RUNTIME_DIR` or `TMPDIR`) still share for one name.
//!
//! Either one held by another process refuses the session. The kernel
//! drops the lock when the process exits, however it exits (`kill -9`
//! included), so a lock can never go stale the way a row in the database
//! could. The lock files themselves are left in place: removing one while
//! another process has it open would let two processes hold "the" lock on
//! two different files.
//!
//! Only driving takes the lock. Reading the record (`goat sessions`,
//! `goat stats`) does not: SQLite keeps readers consistent on its own.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::{StoreError, create_private_dir};

/// The most of a lock file read back for its holder's process id: a
/// decimal `u32` and a newline, with room to spare. A file that says more
/// than this was not written by GOAT, and its holder is reported unknown.
const MAX_PID_TEXT: u64 = 32;

/// The lock on one session, held until dropped.
///
/// # Security
///
/// The lock keeps two GOAT processes from writing one session's record at
/// once: without it, a second process resuming the session marks the
/// first one's live tool calls and streaming round interrupted, and the
/// history the next prompt is rebuilt from no longer says what happened.
/// It is advisory: it binds GOAT processes, not other programs.
#[derive(Debug)]
pub struct SessionLock {
    /// Closing them (dropping the guard, or the process ending) releases
    /// the lock: the one beside the store, then the one named by its
    /// identity.
    _files: [File; 2],
    path: PathBuf,
    identity_path: PathBuf,
}

impl SessionLock {
    /// The lock file beside the store.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file named by the store's device and inode.
    pub fn identity_path(&self) -> &Path {
        &self.identity_path
    }
}

/// The directory of lock files for the store at `db`.
pub(crate) fn lock_dir(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_owned();
    name.push("-locks");
    db.with_file_name(name)
}

/// The lock file's name for session `id`. GOAT's ids are hex and used as
/// they are; anything else (a hand-edited store) is hex-encoded behind a
/// `%`, which no id used as it is contains, so no id can name a file
/// outside the directory or share another id's file.
fn file_name(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plain {
        format!("{id}.lock")
    } else {
        let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
        format!("%{hex}.lock")
    }
}

/// Takes the lock on session `id` for the store at `db` (resolved), or
/// says which process holds it.
pub(crate) fn lock_session(db: &Path, id: &str) -> Result<SessionLock, StoreError> {
    let path = lock_dir(db).join(file_name(id));
    let beside = lock_file(&path, id)?;
    let identity_path = identity_lock(db, id)?;
    let identity = lock_file(&identity_path, id)?;
    Ok(SessionLock {
        _files: [beside, identity],
        path,
        identity_path,
    })
}

/// The lock file for session `id` named by the identity of the store at
/// `db`: `DEV-INO-ID.lock` in the private root, which is made if missing
/// and refused if another user owns it or may write it.
#[cfg(unix)]
fn identity_lock(db: &Path, id: &str) -> Result<PathBuf, StoreError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(db).map_err(|e| StoreError::Lock {
        path: db.to_owned(),
        reason: format!("cannot read the store's device and inode: {e}"),
    })?;
    let root = goat_state::paths::session_lock_root();
    goat_state::fs::open_private_dir(&root).map_err(|e| StoreError::Lock {
        path: root.clone(),
        reason: format!(
            "{e}; session locks for every store live there (set XDG_RUNTIME_DIR to a private \
             directory to use another)"
        ),
    })?;
    Ok(root.join(format!(
        "{:x}-{:x}-{}",
        meta.dev(),
        meta.ino(),
        file_name(id)
    )))
}

/// See the unix version: without device and inode, the lock beside the
/// store twice.
#[cfg(not(unix))]
fn identity_lock(db: &Path, id: &str) -> Result<PathBuf, StoreError> {
    Ok(lock_dir(db).join(format!("identity-{}", file_name(id))))
}

/// Takes the exclusive lock on the file at `path` for session `id`, its
/// directory made private if missing; writes this process's id in it.
fn lock_file(path: &Path, id: &str) -> Result<File, StoreError> {
    let io_err = |path: &Path, e: std::io::Error| StoreError::Lock {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    if let Some(dir) = path.parent() {
        create_private_dir(dir).map_err(|e| io_err(dir, e))?;
    }
    let mut file = open(path).map_err(|e| io_err(path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(StoreError::SessionInUse {
                id: id.to_owned(),
                pid: holder(&mut file),
            });
        }
        Err(TryLockError::Error(e)) => return Err(io_err(path, e)),
    }
    // Ours now: say who holds it, for the next process that asks. A failure
    // here costs only that report, never the lock.
    let _ = file
        .set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| writeln!(file, "{}", std::process::id()));
    Ok(file)
}

/// Opens (creating, mode 0600) the lock file, never through a symlink.
#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )?;
    Ok(File::from(fd))
}

/// See the unix version.
#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// The process id the holder wrote, if it has written one yet.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(MAX_PID_TEXT).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_files_live_beside_the_database_and_never_leave_their_directory() {
        assert_eq!(
            lock_dir(Path::new("/s/goat.db")),
            Path::new("/s/goat.db-locks")
        );
        assert_eq!(file_name("00ff1a2b3c4d5e6f"), "00ff1a2b3c4d5e6f.lock");
        assert_eq!(file_name("../x"), "%2e2e2f78.lock");
        assert_eq!(file_name(""), "%.lock");
        assert_eq!(file_name("a/b"), "%612f62.lock");
    }
}
