//! Why the store failed.

use std::path::PathBuf;

/// Why the store failed. Every variant ends the turn: the record must not
/// silently diverge from what happened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file or its directory cannot be used.
    #[error("cannot open the GOAT store at {path}: {reason}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The database was written by a newer GOAT.
    #[error(
        "the GOAT store at {path} has schema version {found}, newer than this GOAT's {supported}; upgrade GOAT or use another --db"
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// Ours.
        supported: i64,
    },
    /// The store would live inside the workspace, where tools can write.
    #[error(
        "the GOAT store {db} is inside the workspace {workspace}; tools could reach it. Use --db or GOAT_DB to put it elsewhere"
    )]
    InsideWorkspace {
        /// The store file.
        db: PathBuf,
        /// The workspace.
        workspace: PathBuf,
    },
    /// No such session.
    #[error("no session '{0}' in the store")]
    NoSession(String),
    /// SQLite failed.
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}
