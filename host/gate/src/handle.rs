//! The permission database kept open between decisions.
//!
//! Opening the database for every call (checking its header, its schema,
//! its journal, and closing it again) cost about 200 µs, more than the
//! rest of routing a call. A [`GateHandle`] keeps one connection and the
//! rules it last read, and before each decision checks that the path still
//! names the same, unchanged file (device, inode, size, modification and
//! change times) and that no other connection has committed to it since
//! (`PRAGMA data_version`). If the file changed, the connection is closed
//! and the file opened afresh; if only the rules did, they are read again.
//!
//! # Security
//!
//! Fails closed as [`crate::decide`] does: a file that cannot be opened or
//! read, or is not a permission database, denies, and nothing is kept.
//!
//! The permission database uses a rollback journal, not WAL: a kept WAL
//! connection keeps `permissions.db-wal` alive, and SQLite lays a log over
//! whatever file has the database's name (a file renamed over it was read
//! with the old file's pages), while a log deleted from under the kept
//! connection hides every later commit from it. With a rollback journal no
//! log outlives a transaction and every read checks the file itself. A file
//! an earlier GOAT made in WAL mode is converted when no other connection
//! has it open; until then the handle opens it afresh for every decision,
//! as `decide` does.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::boundary::Boundary;
use crate::db::{DEFAULT_BUSY_TIMEOUT, PermissionDb};
use crate::decide::{GateRequest, evaluate_with_boundary, unavailable};
use crate::{Evaluation, GateError, NewRule, Rule};

/// Which file a path named, and its state, when the rules were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn identity(path: &Path) -> Option<Identity> {
    std::fs::metadata(path).ok().map(|m| Identity {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// An open permission database and the rules last read from it.
#[derive(Debug)]
struct Kept {
    db: PermissionDb,
    identity: Identity,
    data_version: i64,
    rules: Arc<Vec<Rule>>,
}

/// Decides calls against the permission database at one path, keeping it
/// open between decisions (see the module docs).
#[derive(Debug)]
pub struct GateHandle {
    path: PathBuf,
    busy_timeout: Duration,
    kept: Option<Kept>,
}

impl GateHandle {
    /// A handle on the database at `path`; nothing is opened until the
    /// first decision.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            kept: None,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a connection and its reading of the rules are kept for the
    /// next decision (never for a database still in WAL mode).
    pub fn keeps_connection(&self) -> bool {
        self.kept.is_some()
    }

    /// [`crate::decide_with_boundary`], from the kept reading of the rules
    /// when it is still current.
    pub fn decide_with_boundary(
        &mut self,
        request: &GateRequest<'_>,
    ) -> (Evaluation, Option<Boundary>) {
        match self.rules() {
            Ok(rules) => evaluate_with_boundary(&rules, request),
            Err(err) => {
                self.kept = None;
                (unavailable(request, &err), None)
            }
        }
    }

    /// The boundary the rules in force for `request` hold it to, with no
    /// decision on it: what a hook run once a turn (not for a call) may
    /// see. An error when the rules cannot be read or one does not
    /// compile: the caller shows nothing then.
    pub fn boundary(&mut self, request: &GateRequest<'_>) -> Result<Boundary, String> {
        let rules = self.rules().map_err(|e| {
            self.kept = None;
            e.to_string()
        })?;
        Boundary::compile(&rules, request).map_err(|r| r.0)
    }

    /// [`crate::decide_command`], from the kept reading of the rules when
    /// it is still current: the command road uses the same kept-open
    /// database as every other call (ADR-0071).
    pub fn decide_command(
        &mut self,
        call: &crate::CommandCall<'_>,
    ) -> (Evaluation, Option<Boundary>) {
        match self.rules() {
            Ok(rules) => crate::command::decide_command_with_boundary(&rules, call),
            Err(err) => {
                self.kept = None;
                (
                    crate::command::command_unavailable(err.to_string(), err.is_retryable()),
                    None,
                )
            }
        }
    }

    /// Saves `rules` (a person's "session" or "always" answer) in order,
    /// through the kept connection when it still names the file, else one
    /// opened for them; stops at the first that cannot be saved. The next
    /// decision reads the rules again (a connection's own commit does not
    /// move its `data_version`).
    pub fn add(&mut self, rules: Vec<NewRule>) -> Result<Vec<Rule>, GateError> {
        let current = self.rules().is_ok();
        let mut opened;
        let db = match self.kept.as_mut() {
            Some(kept) if current => &mut kept.db,
            _ => {
                opened = PermissionDb::open_with_timeout(&self.path, self.busy_timeout)?;
                &mut opened
            }
        };
        let added = rules.into_iter().map(|rule| db.add(rule)).collect();
        self.kept = None;
        added
    }

    /// The rules in force now.
    fn rules(&mut self) -> Result<Arc<Vec<Rule>>, GateError> {
        let now = identity(&self.path);
        if let Some(kept) = &self.kept
            && Some(kept.identity) == now
            && kept.db.data_version()? == kept.data_version
        {
            return Ok(kept.rules.clone());
        }
        self.kept = None;
        let db = PermissionDb::open_with_timeout(&self.path, self.busy_timeout)?;
        // The version before the rules: a commit after it makes the next
        // decision read them again, never miss it.
        let data_version = db.data_version()?;
        let rules = Arc::new(db.list()?);
        // Kept only in rollback-journal mode, and only if the path named
        // the file that was read before and after the open (or none
        // before: the open created it).
        let after = identity(&self.path);
        if !db.is_wal()?
            && let Some(after) = after
            && (now.is_none() || now.map(|n| (n.dev, n.ino)) == Some((after.dev, after.ino)))
        {
            self.kept = Some(Kept {
                db,
                identity: after,
                data_version,
                rules: rules.clone(),
            });
        }
        Ok(rules)
    }
}
