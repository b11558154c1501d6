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
    /// Another process is driving the session (see [`crate::SessionLock`]).
    #[error(
        "session {id} is in use: another GOAT process{} is running turns in it. Wait for that \
         process to finish (or stop it), or start a new session by leaving out --session",
        holder(*.pid)
    )]
    SessionInUse {
        /// The session.
        id: String,
        /// The process holding it, when it has said.
        pid: Option<u32>,
    },
    /// The session's lock file cannot be used.
    #[error("cannot lock the session with {path}: {reason}")]
    Lock {
        /// The lock file, or its directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No such session.
    #[error("no session '{0}' in the store")]
    NoSession(String),
    /// No such run of attempts.
    #[error("no run of attempts {0} in the store; `goat attempts list` shows them")]
    NoAttemptRun(i64),
    /// The session is a run of attempts' own: its record (which attempt
    /// each layer holds, which landed) stays while the run does.
    #[error(
        "session {id} is run {run} of attempts' own, and stays with the run; goat attempts \
         discard --run {run} removes the run's layers"
    )]
    RunSession {
        /// The session.
        id: String,
        /// The run.
        run: i64,
    },
    /// More than one session id starts with the prefix given.
    #[error(
        "'{prefix}' names more than one session ({}); give more of the id",
        matches.join(", ")
    )]
    AmbiguousSession {
        /// What was given.
        prefix: String,
        /// Some of the ids it starts.
        matches: Vec<String>,
    },
    /// SQLite failed.
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// " (pid N)" when the holder of a session is known.
fn holder(pid: Option<u32>) -> String {
    pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
}
