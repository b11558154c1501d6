//! The permission database: one SQLite file of rules, apart from the store.
//!
//! The file is opened, identified and migrated by `goat_state::sqlite`, as
//! every GOAT database is: `PRAGMA application_id` marks it as ours, the
//! schema is versioned with `PRAGMA user_version`, and each migration runs in
//! its own `BEGIN IMMEDIATE` transaction. The file is in WAL mode, so
//! deciding (a read) never waits for the CLI editing rules.
//!
//! # Key decision: identify the file before touching it
//!
//! Only a file that is ours, or an empty new one, is switched to WAL or
//! migrated. Garbage, another application's database, or one from a newer
//! GOAT is reported as an error and left byte-for-byte as it was, so a
//! mistaken path or a downgrade cannot cost the user their rules or someone
//! else their data. Permission databases always carried their id, so there
//! is no id-less legacy file to adopt: one is refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use goat_state::sqlite::{self, DbError, DbSpec, Journal, Migration};
use rusqlite::{Connection, ErrorCode, TransactionBehavior, params};

use super::path::Pattern;
use super::{Access, Effect, GateError, NewRule, Rule, Scope};

/// How long to wait for another connection's lock before giving up (and, when
/// deciding, denying).
///
/// Rule edits and migrations hold the write lock for milliseconds, and in WAL
/// mode readers do not wait for them at all; a lock held for seconds is a
/// stuck process, and a denial that says so beats a tool call that hangs.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// `PRAGMA application_id` of a GOAT permission database (ASCII `GPRM`), so
/// the gate refuses, rather than adds tables to, another SQLite file.
const APPLICATION_ID: i32 = sqlite::ids::PERMISSIONS;

/// What the permission database is called in messages.
const NAME: &str = "permission database";

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only:
/// a shipped migration is never edited.
const MIGRATIONS: &[Migration] = &[
    // AUTOINCREMENT so a revoked id is never reused: revoking #3 from an old
    // listing, or twice, cannot remove a newer rule. The CHECKs keep the
    // values the gate reads inside its vocabulary even if the file is edited
    // with another tool; a row that still slips through fails the decision.
    Migration::sql(
        "CREATE TABLE rules (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        tool        TEXT CHECK (tool IS NULL OR length(tool) > 0),
        pattern     TEXT NOT NULL,
        access      TEXT NOT NULL CHECK (access IN ('read', 'write')),
        effect      TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
        session_id  TEXT CHECK (session_id IS NULL OR length(session_id) > 0),
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER CHECK (expires_at IS NULL OR expires_at > created_at)
    ) STRICT;",
    ),
    // Rules bound to one workspace (a person's "always" at an approval
    // question); NULL applies in every workspace, as before.
    Migration::sql(
        "ALTER TABLE rules ADD COLUMN workspace TEXT
        CHECK (workspace IS NULL OR length(workspace) > 0);",
    ),
    // Command rules (the run_command tool): a command or a prefix of
    // commands; NULL for a path rule, as before.
    Migration::sql(
        "ALTER TABLE rules ADD COLUMN command TEXT
        CHECK (command IS NULL OR length(command) > 0);",
    ),
];

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The permission database, for `goat_state::sqlite::open`.
fn spec(busy_timeout: Duration) -> DbSpec {
    DbSpec {
        name: NAME,
        application_id: APPLICATION_ID,
        migrations: MIGRATIONS,
        busy_timeout,
        // A rollback journal, not WAL (ADR-0071): a connection kept open
        // between decisions must never keep a log alive that SQLite could
        // lay over another file moved in under the name, or that a cleanup
        // could delete from under it.
        journal: Journal::Rollback,
        legacy: None,
    }
}

const SELECT_RULES: &str = "SELECT id, tool, pattern, access, effect, session_id, created_at, \
                            expires_at, workspace, command FROM rules ORDER BY id";

/// An open permission database, for managing rules.
///
/// # Security
///
/// Host API only: the CLI's `goat permissions` uses it, and
/// [`super::decide`] reads through it. Never hand it, or anything that can
/// reach it, to a tool.
#[derive(Debug)]
pub struct PermissionDb {
    conn: Connection,
    path: PathBuf,
    busy_timeout: Duration,
}

impl PermissionDb {
    /// Opens (creating if absent) the permission database at `path`, waiting
    /// up to [`DEFAULT_BUSY_TIMEOUT`] for locks.
    pub fn open(path: &Path) -> Result<Self, GateError> {
        Self::open_with_timeout(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// [`PermissionDb::open`], waiting up to `busy_timeout` for locks.
    ///
    /// The parent directory must exist. A file that is not a permission
    /// database of this or an older schema is refused and not modified.
    pub fn open_with_timeout(path: &Path, busy_timeout: Duration) -> Result<Self, GateError> {
        let fail = |err: rusqlite::Error| classify(path, busy_timeout, &err);
        let conn = sqlite::open(path, &spec(busy_timeout)).map_err(|err| gate_error(path, err))?;
        // A file an earlier GOAT made in WAL mode goes back to a rollback
        // journal as soon as no other connection has it open; until then
        // it stays WAL, and a GateHandle does not keep it open.
        let _ = conn.pragma_update(None, "journal_mode", "DELETE");
        // A file can claim our id and version and still lack the table (made
        // by hand, or by another program reusing the id).
        if let Err(err) = conn.prepare(SELECT_RULES) {
            return Err(match err.sqlite_error_code() {
                Some(ErrorCode::Unknown) | None => GateError::Foreign {
                    path: path.to_path_buf(),
                    reason: format!("its rules table is not the expected schema ({err})"),
                },
                Some(_) => fail(err),
            });
        }
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            busy_timeout,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SQLite's `PRAGMA data_version`: it changes when another connection
    /// commits to the file, so a kept reading of the rules is known to be
    /// current while it stays the same.
    pub fn data_version(&self) -> Result<i64, GateError> {
        self.conn
            .pragma_query_value(None, "data_version", |row| row.get(0))
            .map_err(|err| classify(&self.path, self.busy_timeout, &err))
    }

    /// Whether the file is (still) in WAL mode: made by an earlier GOAT
    /// and not yet converted (another connection had it open).
    pub fn is_wal(&self) -> Result<bool, GateError> {
        let mode: String = self
            .conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .map_err(|err| classify(&self.path, self.busy_timeout, &err))?;
        Ok(mode.eq_ignore_ascii_case("wal"))
    }

    /// Adds a rule, normalising its pattern, and returns it as stored.
    ///
    /// Refused: an empty tool name or `*` (leave the tool out for all tools),
    /// an empty session id, an expiry not after `created_at`, and a pattern
    /// that is absolute, leaves the workspace, or is malformed.
    pub fn add(&mut self, rule: NewRule) -> Result<Rule, GateError> {
        let invalid = |reason: &str| GateError::InvalidRule {
            reason: reason.to_owned(),
        };
        match rule.tool.as_deref() {
            Some("") => return Err(invalid("the tool name is empty")),
            Some("*") => {
                return Err(invalid(
                    "'*' is not a tool name; leave the tool out to mean all tools",
                ));
            }
            Some(_) | None => {}
        }
        let session_id = match &rule.scope {
            Scope::Session(id) if id.is_empty() => return Err(invalid("the session id is empty")),
            Scope::Session(id) => Some(id.as_str()),
            Scope::Persistent => None,
        };
        if rule.expires_at.is_some_and(|at| at <= rule.created_at) {
            return Err(invalid("it would expire before it was made"));
        }
        if rule.workspace.as_deref() == Some("") {
            return Err(invalid("the workspace is empty"));
        }
        if let Some(command) = &rule.command {
            crate::command::check_prefix(command).map_err(|why| invalid(&why))?;
        }
        let pattern = Pattern::parse(&rule.pattern)
            .map_err(|reason| GateError::InvalidPattern {
                pattern: rule.pattern.clone(),
                reason,
            })?
            .to_string();

        let fail = |err: rusqlite::Error| classify(&self.path, self.busy_timeout, &err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        tx.execute(
            "INSERT INTO rules (tool, pattern, access, effect, session_id, created_at, expires_at,
                                workspace, command)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                rule.tool,
                pattern,
                rule.access.as_str(),
                rule.effect.as_str(),
                session_id,
                rule.created_at,
                rule.expires_at,
                rule.workspace,
                rule.command,
            ],
        )
        .map_err(fail)?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(fail)?;
        Ok(Rule {
            id,
            tool: rule.tool,
            pattern,
            access: rule.access,
            effect: rule.effect,
            scope: rule.scope,
            workspace: rule.workspace,
            created_at: rule.created_at,
            expires_at: rule.expires_at,
            command: rule.command,
        })
    }

    /// Removes the rule with this id; `false` if there was none.
    pub fn revoke(&mut self, id: i64) -> Result<bool, GateError> {
        let fail = |err: rusqlite::Error| classify(&self.path, self.busy_timeout, &err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let removed = tx
            .execute("DELETE FROM rules WHERE id = ?1", [id])
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(removed > 0)
    }

    /// Every rule, expired ones included (see [`Rule::is_expired`]), in id
    /// order.
    ///
    /// # Security
    ///
    /// A row that cannot be read as a rule is an error, not skipped: the
    /// gate cannot tell whether it was a deny.
    pub fn list(&self) -> Result<Vec<Rule>, GateError> {
        let fail = |err: rusqlite::Error| classify(&self.path, self.busy_timeout, &err);
        let mut stmt = self.conn.prepare(SELECT_RULES).map_err(fail)?;
        let rows = stmt
            .query_map([], |row| {
                Ok(StoredRule {
                    id: row.get(0)?,
                    tool: row.get(1)?,
                    pattern: row.get(2)?,
                    access: row.get(3)?,
                    effect: row.get(4)?,
                    session_id: row.get(5)?,
                    created_at: row.get(6)?,
                    expires_at: row.get(7)?,
                    workspace: row.get(8)?,
                    command: row.get(9)?,
                })
            })
            .map_err(fail)?;
        let mut rules = Vec::new();
        for row in rows {
            rules.push(row.map_err(fail)?.into_rule(&self.path)?);
        }
        Ok(rules)
    }
}

/// A row as stored, before its words are checked.
struct StoredRule {
    id: i64,
    tool: Option<String>,
    pattern: String,
    access: String,
    effect: String,
    session_id: Option<String>,
    created_at: i64,
    expires_at: Option<i64>,
    workspace: Option<String>,
    command: Option<String>,
}

impl StoredRule {
    fn into_rule(self, path: &Path) -> Result<Rule, GateError> {
        let bad = |reason: String| GateError::BadRule {
            path: path.to_path_buf(),
            id: self.id,
            reason,
        };
        let access = Access::from_db(&self.access)
            .ok_or_else(|| bad(format!("unknown access {:?}", self.access)))?;
        let effect = Effect::from_db(&self.effect)
            .ok_or_else(|| bad(format!("unknown effect {:?}", self.effect)))?;
        if let Err(why) = Pattern::parse(&self.pattern) {
            return Err(bad(format!(
                "its pattern {:?} is invalid: {why}",
                self.pattern
            )));
        }
        let scope = match self.session_id {
            Some(id) => Scope::Session(id),
            None => Scope::Persistent,
        };
        Ok(Rule {
            id: self.id,
            tool: self.tool,
            pattern: self.pattern,
            access,
            effect,
            scope,
            workspace: self.workspace,
            created_at: self.created_at,
            expires_at: self.expires_at,
            command: self.command,
        })
    }
}

/// Sorts a SQLite failure into what the caller and the model need to know.
fn classify(path: &Path, busy_timeout: Duration, err: &rusqlite::Error) -> GateError {
    gate_error(path, DbError::from_sqlite(NAME, path, busy_timeout, err))
}

/// The gate's words for why its database could not be used.
fn gate_error(path: &Path, err: DbError) -> GateError {
    match err {
        DbError::Unreadable { path, reason, .. } => GateError::Unreadable { path, reason },
        DbError::Corrupt { path, reason, .. } => GateError::Corrupt { path, reason },
        DbError::Foreign { path, reason, .. } => GateError::Foreign { path, reason },
        DbError::NewerSchema {
            path, found, known, ..
        } => GateError::NewerSchema { path, found, known },
        DbError::Locked { path, waited, .. } => GateError::Locked { path, waited },
        DbError::Journal { path, mode, .. } => GateError::Sqlite {
            path,
            reason: format!("cannot use a write-ahead log (journal mode is {mode})"),
        },
        DbError::Sqlite { path, reason, .. } => GateError::Sqlite { path, reason },
        other => GateError::Sqlite {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_file_gets_the_current_schema_and_our_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perm.db");
        let db = PermissionDb::open(&path).unwrap();
        let version: i64 = db
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        let application_id: i32 = db
            .conn
            .pragma_query_value(None, "application_id", |row| row.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(application_id, 0x4750_524D, "GPRM, as every release wrote");
        let mode: String = db
            .conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "delete");
        let fk: bool = db
            .conn
            .pragma_query_value(None, "foreign_keys", |row| row.get(0))
            .unwrap();
        assert!(fk);
    }

    #[test]
    fn another_applications_database_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let other = Connection::open(&path).unwrap();
        other
            .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
            .unwrap();
        drop(other);
        let before = std::fs::read(&path).unwrap();
        let err = PermissionDb::open(&path).unwrap_err();
        assert!(matches!(err, GateError::Foreign { .. }), "{err}");
        assert!(err.to_string().contains("another application"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn our_id_without_the_rules_table_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perm.db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .unwrap();
        drop(conn);
        let err = PermissionDb::open(&path).unwrap_err();
        assert!(matches!(err, GateError::Foreign { .. }), "{err}");
        assert!(err.to_string().contains("not the expected schema"), "{err}");
    }

    #[test]
    fn a_row_outside_the_vocabulary_fails_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perm.db");
        let db = PermissionDb::open(&path).unwrap();
        // Drop the CHECKs' protection the way a hand edit could: an invalid
        // pattern passes them.
        db.conn
            .execute(
                "INSERT INTO rules (tool, pattern, access, effect, created_at)
                 VALUES (NULL, '/etc/**', 'read', 'deny', 1)",
                [],
            )
            .unwrap();
        let err = db.list().unwrap_err();
        assert!(matches!(err, GateError::BadRule { id: 1, .. }), "{err}");
    }
}
