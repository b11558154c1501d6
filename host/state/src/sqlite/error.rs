//! Why a database could not be opened or used, sorted for the caller and
//! the person.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::ErrorCode;

/// Why a database could not be opened (or, through [`DbError::from_sqlite`],
/// used).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// The file could not be opened or read at all.
    #[error(
        "the {name} {} is unreadable: {reason}; check that its directory exists and is yours",
        path.display()
    )]
    Unreadable {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// SQLite's or the system's reason.
        reason: String,
    },
    /// Not a SQLite database, or its pages are damaged.
    #[error(
        "the {name} {} is corrupt or not a database: {reason}; move it aside to start afresh",
        path.display()
    )]
    Corrupt {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// SQLite's reason.
        reason: String,
    },
    /// A SQLite database, but not this one. Left untouched.
    #[error(
        "{} is not a GOAT {name}: {reason}; it was left as it was, so give another path",
        path.display()
    )]
    Foreign {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// Made by a newer GOAT, whose data this one might misread. Left
    /// untouched.
    #[error(
        "the {name} {} was created by a newer GOAT (schema version {found}; this GOAT knows up \
         to {known}); upgrade GOAT, or give another path",
        path.display()
    )]
    NewerSchema {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// Another connection held a lock for longer than the busy timeout.
    #[error(
        "the {name} {} stayed locked by another process for {waited:?}; try again when it is done",
        path.display()
    )]
    Locked {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// The busy timeout that ran out.
        waited: Duration,
    },
    /// Made by an older GOAT and not yet migrated; a read-only open
    /// ([`open_read_only`]) reports it rather than upgrade it. Left
    /// untouched.
    #[error(
        "the {name} {} has schema version {found}, older than this GOAT's {known}; it is read \
         as it is only once upgraded, which any GOAT command that writes it does (goat run, \
         goat chat)",
        path.display()
    )]
    OlderSchema {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The version this build reads.
        known: i64,
    },
    /// A write-ahead log without the `-shm` index SQLite reads it through:
    /// a writer was killed before it closed the file. Reading it would
    /// create the index, so a read-only open ([`open_read_only`]) refuses.
    #[error(
        "the {name} {} has a write-ahead log ({}-wal) left by a GOAT that stopped before closing \
         it; reading it without writing is not possible, so run a GOAT command that writes it \
         (goat run or goat chat recover the log), then try again",
        path.display(),
        path.display()
    )]
    UnrecoveredLog {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// The write-ahead log the spec asks for could not be enabled (SQLite
    /// needs shared memory beside the file).
    #[error(
        "the {name} {} cannot use a write-ahead log (journal mode is {mode}); put it on a local \
         filesystem",
        path.display()
    )]
    Journal {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// The mode SQLite reported instead.
        mode: String,
    },
    /// Any other SQLite failure (disk full, an I/O error mid-query, a
    /// migration that failed).
    #[error("the {name} {} failed: {reason}", path.display())]
    Sqlite {
        /// The database's name.
        name: &'static str,
        /// The file.
        path: PathBuf,
        /// SQLite's reason.
        reason: String,
    },
}

impl DbError {
    /// Sorts a SQLite failure on the database `name` at `path` into what the
    /// caller and the person need to know; `busy_timeout` is what a lock
    /// outlasted.
    pub fn from_sqlite(
        name: &'static str,
        path: &Path,
        busy_timeout: Duration,
        err: &rusqlite::Error,
    ) -> Self {
        let path = path.to_path_buf();
        let reason = err.to_string();
        match err.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Self::Locked {
                name,
                path,
                waited: busy_timeout,
            },
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                Self::Corrupt { name, path, reason }
            }
            Some(
                ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::SystemIoFailure,
            ) => Self::Unreadable { name, path, reason },
            _ => Self::Sqlite { name, path, reason },
        }
    }

    /// Whether the same open may succeed if tried again later with nothing
    /// fixed (another process's lock).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Locked { .. } => true,
            Self::Unreadable { .. }
            | Self::Corrupt { .. }
            | Self::Foreign { .. }
            | Self::NewerSchema { .. }
            | Self::OlderSchema { .. }
            | Self::UnrecoveredLog { .. }
            | Self::Journal { .. }
            | Self::Sqlite { .. } => false,
        }
    }
}
