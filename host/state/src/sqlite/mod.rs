//! Opening a GOAT database: identify the file, then migrate it.
//!
//! Every GOAT database is described by a [`DbSpec`] (its name for messages,
//! its `PRAGMA application_id`, its migrations, its busy timeout and journal)
//! and opened by [`open`]. The schema version is `PRAGMA user_version`:
//! migration `i` takes a file from version `i` to `i + 1`, in its own
//! `BEGIN IMMEDIATE` transaction that re-reads the header first, so two
//! GOATs opening a new file at once migrate it once.
//!
//! # Key decision: identify the file before touching it
//!
//! Opening reads the header first. Only a file that carries this database's
//! application id, or an empty new one, or a file the spec recognises as one
//! made before ids existed ([`DbSpec::legacy`]), has its journal mode changed
//! or is migrated. Garbage, another application's database, or one from a
//! newer GOAT is reported as an error and left byte-for-byte as it was, so a
//! mistaken path or a downgrade cannot cost the user their data or someone
//! else theirs.
//!
//! # Reading without writing
//!
//! Listing commands (`goat sessions list`, `goat stats`, `goat tools list`)
//! open through [`open_read_only`], which creates nothing and changes
//! nothing: a missing or empty file is "nothing yet", a file that needs
//! migrating is reported rather than upgraded, and a write-ahead-logged
//! file with no log beside it is read as immutable, because SQLite would
//! otherwise create `-wal` and `-shm` files beside it (and a read-only
//! connection cannot remove them again).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

mod error;
mod read_only;

pub use error::DbError;
pub use read_only::open_read_only;

/// The application ids of GOAT's databases, kept side by side so no two
/// can collide. Each is four ASCII letters, readable in a hex dump.
pub mod ids {
    /// The store, `goat.db` (ASCII `GSTO`).
    pub const STORE: i32 = 0x4753_544F;
    /// The permission rules, `permissions.db` (ASCII `GPRM`).
    pub const PERMISSIONS: i32 = 0x4750_524D;
    /// The plugin registry, `plugins/plugins.db` (ASCII `GPLG`).
    pub const PLUGIN_REGISTRY: i32 = 0x4750_4C47;
}

/// One step of a schema: SQL that takes the file from the version before it
/// to the next. Append only: a shipped migration is never edited.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    sql: &'static str,
}

impl Migration {
    /// A migration made of SQL statements, run as one batch.
    pub const fn sql(sql: &'static str) -> Self {
        Self { sql }
    }
}

/// How the file journals its writes. Stored in the file, so it is set only
/// once the file is known to be ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Journal {
    /// SQLite's rollback journal, left as SQLite makes it.
    Rollback,
    /// Write-ahead log: readers never wait for a writer. Refused (as
    /// [`DbError::Journal`]) if SQLite cannot switch to it.
    Wal,
    /// [`Journal::Wal`] with `synchronous = NORMAL`: a commit is durable
    /// once the log is checkpointed, never corrupt, and much cheaper than
    /// syncing every commit.
    WalSyncNormal,
}

/// Recognises a file made before its database had an application id (its
/// id is 0 and it is not empty) as one of ours, from its schema.
pub type Recognise = fn(&Connection) -> rusqlite::Result<bool>;

/// What a database is, for [`open`].
#[derive(Clone, Copy, Debug)]
pub struct DbSpec {
    /// What people call it, in messages: "permission database".
    pub name: &'static str,
    /// Its `PRAGMA application_id`; see [`ids`].
    pub application_id: i32,
    /// Its schema, step by step; the version it reaches is their number.
    pub migrations: &'static [Migration],
    /// How long to wait for another connection's lock before failing.
    pub busy_timeout: Duration,
    /// Its journal.
    pub journal: Journal,
    /// For a database that existed before it had an application id: how to
    /// recognise such a file, which is then adopted (the id is written, in a
    /// `BEGIN IMMEDIATE` transaction with any pending migration). `None`
    /// refuses every id-less file that is not empty.
    pub legacy: Option<Recognise>,
}

impl DbSpec {
    /// The schema version this build creates and understands.
    pub fn version(&self) -> i64 {
        i64::try_from(self.migrations.len()).unwrap_or(i64::MAX)
    }
}

/// Opens (creating if absent) the database `spec` describes at `path`: checks
/// it is ours, sets the busy timeout, foreign keys and journal, and runs the
/// migrations it lacks.
///
/// The parent directory must exist. The path is a file name, never a
/// `file:` URI whose query string could change how it is opened.
pub fn open(path: &Path, spec: &DbSpec) -> Result<Connection, DbError> {
    let fail =
        |err: rusqlite::Error| DbError::from_sqlite(spec.name, path, spec.busy_timeout, &err);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).map_err(fail)?;
    conn.busy_timeout(spec.busy_timeout).map_err(fail)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(fail)?;

    // One read transaction: the header and the schema are looked at as
    // one snapshot. Read one by one, another process's first migration
    // could commit between them, and its tables would be taken, beside
    // the empty header read before, for another application's.
    let found = {
        let tx = conn.transaction().map_err(fail)?;
        let found = check(path, spec, &tx)?;
        tx.commit().map_err(fail)?;
        found
    };
    set_journal(path, spec, &conn)?;
    // Only take the write lock when there is something to write: a reader
    // of an up-to-date file must not wait for a writer.
    if found.version < spec.version() || found.adopt {
        migrate(path, spec, &mut conn)?;
    }
    Ok(conn)
}

/// Whether `conn` holds every table in `tables`: the usual way for a
/// [`Recognise`] to know a legacy file.
pub fn has_tables(conn: &Connection, tables: &[&str]) -> rusqlite::Result<bool> {
    for table in tables {
        let n: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |row| row.get(0),
        )?;
        if n == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What the header says, once accepted.
pub(super) struct Found {
    pub(super) version: i64,
    /// A legacy file: its id is still to be written.
    adopt: bool,
}

/// Accepts our own file of a version this build knows, an empty one, or a
/// legacy one the spec recognises; refuses anything else.
pub(super) fn check(path: &Path, spec: &DbSpec, conn: &Connection) -> Result<Found, DbError> {
    let fail =
        |err: rusqlite::Error| DbError::from_sqlite(spec.name, path, spec.busy_timeout, &err);
    let foreign = |reason: String| DbError::Foreign {
        name: spec.name,
        path: path.to_path_buf(),
        reason,
    };
    let newer = |found: i64| DbError::NewerSchema {
        name: spec.name,
        path: path.to_path_buf(),
        found,
        known: spec.version(),
    };
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(fail)?;
    let application_id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(fail)?;
    if application_id == spec.application_id {
        if version > spec.version() {
            return Err(newer(version));
        }
        return Ok(Found {
            version,
            adopt: false,
        });
    }
    if application_id != 0 {
        return Err(foreign(format!(
            "its application id is {application_id:#010x}, not GOAT's {:#010x}",
            spec.application_id
        )));
    }
    let objects: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
        .map_err(fail)?;
    if version == 0 && objects == 0 {
        return Ok(Found {
            version: 0,
            adopt: false,
        });
    }
    if let Some(recognise) = spec.legacy {
        // Refused either way, and untouched: a newer GOAT is the likelier
        // maker of a versioned file where ours would be.
        if version > spec.version() {
            return Err(newer(version));
        }
        if version > 0 && recognise(conn).map_err(fail)? {
            return Ok(Found {
                version,
                adopt: true,
            });
        }
    }
    if version != 0 {
        return Err(foreign(format!(
            "it has schema version {version} but no GOAT application id"
        )));
    }
    Err(foreign(format!(
        "it already holds {objects} tables, indexes or other objects of another application"
    )))
}

/// How long to wait before asking for WAL again.
const JOURNAL_RETRY: Duration = Duration::from_millis(5);

fn set_journal(path: &Path, spec: &DbSpec, conn: &Connection) -> Result<(), DbError> {
    let fail =
        |err: rusqlite::Error| DbError::from_sqlite(spec.name, path, spec.busy_timeout, &err);
    if spec.journal == Journal::Rollback {
        return Ok(());
    }
    // Switching to WAL needs the file to itself, and SQLite answers busy
    // at once, without its busy handler, while another process has it
    // open (many `goat run`s starting on a new store): tried again until
    // the busy timeout, as a lock would be waited for.
    let deadline = std::time::Instant::now() + spec.busy_timeout;
    let mode: String = loop {
        match conn.pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0)) {
            Ok(mode) => break mode,
            Err(err)
                if err.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(JOURNAL_RETRY);
            }
            Err(err) => return Err(fail(err)),
        }
    };
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(DbError::Journal {
            name: spec.name,
            path: path.to_path_buf(),
            mode,
        });
    }
    if spec.journal == Journal::WalSyncNormal {
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
    }
    Ok(())
}

/// Applies the pending migrations, each in its own `BEGIN IMMEDIATE`
/// transaction, and writes the application id with the first (or alone, for
/// an adopted file already at the current version).
fn migrate(path: &Path, spec: &DbSpec, conn: &mut Connection) -> Result<(), DbError> {
    let fail =
        |err: rusqlite::Error| DbError::from_sqlite(spec.name, path, spec.busy_timeout, &err);
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        // Another process may have migrated (or replaced the file) between
        // the first look and taking the write lock.
        let found = check(path, spec, &tx)?;
        let next = usize::try_from(found.version)
            .ok()
            .and_then(|v| spec.migrations.get(v));
        match next {
            Some(migration) => {
                tx.execute_batch(migration.sql).map_err(fail)?;
                tx.pragma_update(None, "user_version", found.version + 1)
                    .map_err(fail)?;
            }
            None if found.adopt => {}
            // Up to date and ours: the transaction wrote nothing.
            None => return Ok(()),
        }
        tx.pragma_update(None, "application_id", spec.application_id)
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
pub(super) mod tests {
    use super::*;

    pub(super) const MIGRATIONS: &[Migration] = &[
        Migration::sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"),
        Migration::sql("ALTER TABLE notes ADD COLUMN at INTEGER;"),
    ];

    pub(super) const SPEC: DbSpec = DbSpec {
        name: "test database",
        application_id: 0x5445_5354,
        migrations: MIGRATIONS,
        busy_timeout: Duration::from_millis(1234),
        journal: Journal::Wal,
        legacy: None,
    };

    fn header(path: &Path) -> (i32, i64) {
        let conn = Connection::open(path).unwrap();
        let id = conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .unwrap();
        let version = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        (id, version)
    }

    fn columns(conn: &Connection) -> Vec<String> {
        conn.prepare("SELECT name FROM pragma_table_info('notes') ORDER BY cid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Processes opening a new file at once (32 `goat run`s on one store):
    /// each must see the file as a whole, never one process's header from
    /// before its first migration with another's tables from after it.
    /// Threads stand in for the processes: each has its own connection.
    #[test]
    fn files_opened_by_many_at_once_are_never_taken_for_anothers() {
        // A wait long enough for seven others' migrations on a loaded
        // machine: a lock waited out is not what this test is about.
        const PATIENT: DbSpec = DbSpec {
            busy_timeout: Duration::from_secs(20),
            ..SPEC
        };
        for round in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.db");
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let openers: Vec<_> = (0..8)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        open(&path, &PATIENT).map(drop)
                    })
                })
                .collect();
            for opener in openers {
                if let Err(e) = opener.join().unwrap() {
                    panic!("round {round}: {e}");
                }
            }
        }
    }

    #[test]
    fn an_empty_file_gets_every_migration_our_id_and_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = open(&path, &SPEC).unwrap();
        assert_eq!(columns(&conn), ["id", "body", "at"]);
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        drop(conn);
        assert_eq!(header(&path), (SPEC.application_id, 2));
    }

    #[test]
    fn an_older_version_is_migrated_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let v1 = DbSpec {
            migrations: &MIGRATIONS[..1],
            ..SPEC
        };
        let conn = open(&path, &v1).unwrap();
        conn.execute("INSERT INTO notes (body) VALUES ('kept')", [])
            .unwrap();
        drop(conn);
        assert_eq!(header(&path).1, 1);

        let conn = open(&path, &SPEC).unwrap();
        assert_eq!(columns(&conn), ["id", "body", "at"]);
        let body: String = conn
            .query_row("SELECT body FROM notes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(body, "kept");
        drop(conn);
        assert_eq!(header(&path).1, 2);
    }

    #[test]
    fn a_newer_version_is_refused_with_what_to_do_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path, &SPEC).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 3)
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        let err = open(&path, &SPEC).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::NewerSchema {
                    found: 3,
                    known: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("upgrade GOAT"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn another_application_id_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let other = Connection::open(&path).unwrap();
        other.pragma_update(None, "application_id", 7).unwrap();
        drop(other);
        let before = std::fs::read(&path).unwrap();
        let err = open(&path, &SPEC).unwrap_err();
        assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
        assert!(err.to_string().contains("0x00000007"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn an_id_less_file_with_tables_is_refused_unless_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
             INSERT INTO notes (body) VALUES ('old');
             PRAGMA user_version = 1;",
        )
        .unwrap();
        drop(old);
        let before = std::fs::read(&path).unwrap();

        let err = open(&path, &SPEC).unwrap_err();
        assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
        assert_eq!(std::fs::read(&path).unwrap(), before);

        let wrong = DbSpec {
            legacy: Some(|conn| has_tables(conn, &["sessions"])),
            ..SPEC
        };
        let err = open(&path, &wrong).unwrap_err();
        assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
        assert_eq!(std::fs::read(&path).unwrap(), before);

        let adopting = DbSpec {
            legacy: Some(|conn| has_tables(conn, &["notes"])),
            ..SPEC
        };
        let conn = open(&path, &adopting).unwrap();
        assert_eq!(columns(&conn), ["id", "body", "at"]);
        drop(conn);
        assert_eq!(header(&path), (SPEC.application_id, 2));
    }

    #[test]
    fn an_id_less_file_at_the_current_version_is_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let v1 = DbSpec {
            migrations: &MIGRATIONS[..1],
            application_id: 0,
            legacy: None,
            ..SPEC
        };
        drop(open(&path, &v1).unwrap());
        assert_eq!(header(&path), (0, 1));
        let adopting = DbSpec {
            migrations: &MIGRATIONS[..1],
            legacy: Some(|conn| has_tables(conn, &["notes"])),
            ..SPEC
        };
        drop(open(&path, &adopting).unwrap());
        assert_eq!(header(&path), (SPEC.application_id, 1));
    }

    #[test]
    fn an_id_less_file_from_a_newer_goat_is_refused_as_newer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 9)
            .unwrap();
        let adopting = DbSpec {
            legacy: Some(|_| Ok(true)),
            ..SPEC
        };
        let err = open(&path, &adopting).unwrap_err();
        assert!(
            matches!(err, DbError::NewerSchema { found: 9, .. }),
            "{err:?}"
        );
        let err = open(&path, &SPEC).unwrap_err();
        assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
    }

    #[test]
    fn garbage_is_corrupt_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        std::fs::write(&path, b"someone's notes, not sqlite").unwrap();
        let err = open(&path, &SPEC).unwrap_err();
        assert!(matches!(err, DbError::Corrupt { .. }), "{err:?}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"someone's notes, not sqlite"
        );
    }

    #[test]
    fn the_busy_timeout_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("t.db"), &SPEC).unwrap();
        let ms: i64 = conn
            .pragma_query_value(None, "busy_timeout", |r| r.get(0))
            .unwrap();
        assert_eq!(ms, 1234);
    }

    #[test]
    fn a_held_lock_outlasting_the_timeout_is_locked_and_retryable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path, &SPEC).unwrap());
        let locker = Connection::open(&path).unwrap();
        locker
            .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM notes;")
            .unwrap();
        let quick = DbSpec {
            busy_timeout: Duration::from_millis(50),
            ..SPEC
        };
        let err = open(&path, &quick).unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
    }

    #[test]
    fn the_journal_is_as_the_spec_says() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |spec: &DbSpec, name: &str| -> (String, i64) {
            let conn = open(&dir.path().join(name), spec).unwrap();
            (
                conn.pragma_query_value(None, "journal_mode", |r| r.get(0))
                    .unwrap(),
                conn.pragma_query_value(None, "synchronous", |r| r.get(0))
                    .unwrap(),
            )
        };
        let rollback = DbSpec {
            journal: Journal::Rollback,
            ..SPEC
        };
        let normal = DbSpec {
            journal: Journal::WalSyncNormal,
            ..SPEC
        };
        assert_eq!(mode(&rollback, "r.db"), ("delete".to_owned(), 2));
        assert_eq!(mode(&SPEC, "w.db"), ("wal".to_owned(), 2));
        assert_eq!(mode(&normal, "n.db"), ("wal".to_owned(), 1));
    }
}
