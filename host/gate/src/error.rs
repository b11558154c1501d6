//! Why the permission database could not be used, or a rule not added.

use std::path::PathBuf;
use std::time::Duration;

/// A permission database or rule problem.
///
/// [`crate::decide`] turns every one of these into a denial; the CLI
/// shows them to the person managing rules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The file could not be opened or read at all.
    #[error("the permission database {} is unreadable: {reason}", path.display())]
    Unreadable {
        /// The database file.
        path: PathBuf,
        /// SQLite's or the system's reason.
        reason: String,
    },
    /// The file is not a SQLite database, or its pages are damaged.
    #[error("the permission database {} is corrupt or not a database: {reason}", path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's reason.
        reason: String,
    },
    /// A SQLite database, but not one this gate made (another application's,
    /// or one whose tables are not the expected schema). Left untouched.
    #[error("{} is not a GOAT permission database: {reason}", path.display())]
    Foreign {
        /// The database file.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// A permission database from a newer GOAT, whose rules this one might
    /// misread.
    #[error(
        "the permission database {} was created by a newer GOAT (schema version {found}; this \
         GOAT knows up to {known})",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// Another connection held a lock for longer than the busy timeout.
    #[error("the permission database {} stayed locked by another process for {waited:?}", path.display())]
    Locked {
        /// The database file.
        path: PathBuf,
        /// The busy timeout that ran out.
        waited: Duration,
    },
    /// A stored rule does not make sense (a value outside the schema's
    /// vocabulary, or a pattern that does not compile).
    #[error("rule #{id} in the permission database {} is unreadable: {reason}", path.display())]
    BadRule {
        /// The database file.
        path: PathBuf,
        /// The rule's id.
        id: i64,
        /// What is wrong with it.
        reason: String,
    },
    /// Any other SQLite failure (disk full, I/O error mid-query).
    #[error("the permission database {} failed: {reason}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's reason.
        reason: String,
    },
    /// A rule to add is inconsistent.
    #[error("invalid permission rule: {reason}")]
    InvalidRule {
        /// What is wrong.
        reason: String,
    },
    /// A rule's path pattern is not usable.
    #[error("invalid path pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong.
        reason: String,
    },
}

impl GateError {
    /// Whether the same operation may succeed if tried again later, with
    /// nothing fixed (another process's lock).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Locked { .. } => true,
            Self::Unreadable { .. }
            | Self::Corrupt { .. }
            | Self::Foreign { .. }
            | Self::NewerSchema { .. }
            | Self::BadRule { .. }
            | Self::Sqlite { .. }
            | Self::InvalidRule { .. }
            | Self::InvalidPattern { .. } => false,
        }
    }

    /// Whether the rule given to [`crate::PermissionDb::add`] was at
    /// fault, rather than the database.
    pub fn is_invalid_rule(&self) -> bool {
        match self {
            Self::InvalidRule { .. } | Self::InvalidPattern { .. } => true,
            Self::Unreadable { .. }
            | Self::Corrupt { .. }
            | Self::Foreign { .. }
            | Self::NewerSchema { .. }
            | Self::Locked { .. }
            | Self::BadRule { .. }
            | Self::Sqlite { .. } => false,
        }
    }
}
