//! The store itself: where it lives, opening it, and the one way it writes.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::{SessionLock, StoreError, create_private_dir, lock, schema};

/// The store.
pub struct Store {
    pub(crate) conn: Connection,
    path: PathBuf,
}

pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Store {
    /// The default location: `$XDG_DATA_HOME/goat/goat.db`, else
    /// `~/.local/share/goat/goat.db`.
    pub fn default_path() -> Option<PathBuf> {
        goat_state::paths::default_store_path()
    }

    /// Refuses a store path inside `workspace`.
    ///
    /// # Security
    ///
    /// Tools can write anywhere in the workspace; a store there could be
    /// rewritten by a tool, and with it the history the model is shown.
    pub fn ensure_outside(db: &Path, workspace: &Path) -> Result<(), StoreError> {
        let canon = |p: &Path| -> PathBuf {
            // The file may not exist yet: resolve its directory.
            match (p.parent(), p.file_name()) {
                (Some(dir), Some(name)) => {
                    let dir = if dir.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        dir
                    };
                    dir.canonicalize()
                        .map(|d| d.join(name))
                        .unwrap_or_else(|_| p.to_owned())
                }
                _ => p.to_owned(),
            }
        };
        let workspace = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_owned());
        let db = canon(db);
        if db.starts_with(&workspace) {
            return Err(StoreError::InsideWorkspace { db, workspace });
        }
        Ok(())
    }

    /// Opens (creating, with a private directory) the store at `path` and
    /// brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_owned(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display())))?;
        }
        Ok(Self {
            conn: schema::open(path)?,
            path: path.to_owned(),
        })
    }

    /// Opens the store at `path` to read it (`goat sessions`, `goat
    /// stats`), creating and changing nothing: no directory, no file, no
    /// `-wal` or `-shm`, no migration. `None` when there is no store yet.
    /// Every method that writes fails on it.
    pub fn open_read_only(path: &Path) -> Result<Option<Self>, StoreError> {
        Ok(schema::open_read_only(path)?.map(|conn| Self {
            conn,
            path: path.to_owned(),
        }))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the lock that says this process drives session `id`: it runs
    /// the session's turns and may mark what an earlier run left pending
    /// interrupted ([`Store::interrupt_pending`]). Held until the guard is
    /// dropped or the process ends, however it ends.
    ///
    /// Fails at once with [`StoreError::SessionInUse`], naming the holder's
    /// process id when known, if another process (or another guard in this
    /// one) holds it. Reading a session needs no lock.
    ///
    /// # Security
    ///
    /// Take it before touching a resumed session: a second driver would
    /// otherwise mark the first one's live calls interrupted. The lock is
    /// named by the store file's device and inode, so a second name for
    /// it (a symlink, a hard link elsewhere) meets the same lock; a second
    /// lock file beside the database covers processes that disagree on
    /// where those live. Lock files are in private directories, opened
    /// without following symlinks.
    pub fn lock_session(&self, id: &str) -> Result<SessionLock, StoreError> {
        lock::lock_session(&self.path, id)
    }

    /// Every logical step is one `BEGIN IMMEDIATE` transaction.
    pub(crate) fn write(&mut self) -> Result<Transaction<'_>, StoreError> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }
}
