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

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

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

    let found = check(path, spec, &conn)?;
    set_journal(path, spec, &conn)?;
    // Only take the write lock when there is something to write: a reader
    // of an up-to-date file must not wait for a writer.
    if found.version < spec.version() || found.adopt {
        migrate(path, spec, &mut conn)?;
    }
    Ok(conn)
}

/// Opens the database `spec` describes at `path` to read it, creating and
/// changing nothing: `Ok(None)` when there is no file, or an empty one
/// (nothing recorded yet).
///
/// The file is identified as [`open`] identifies it, but never migrated,
/// adopted or switched to another journal: one that needs migrating is
/// [`DbError::OlderSchema`]; a legacy file the spec recognises is read as
/// it is. The connection is read-only (`SQLITE_OPEN_READONLY` and `PRAGMA
/// query_only`).
///
/// A write-ahead-logged file with no `-wal` beside it is fully
/// checkpointed and has no writer, so it is opened `immutable`: SQLite
/// then reads the file alone and creates no `-wal` or `-shm`. (A writer
/// starting in the instant of the read writes to a new log, not the file,
/// until its first checkpoint.) With a log and its `-shm` beside it (a
/// `goat run` in progress), both are read, and no file is added. A log
/// with no `-shm` (a writer that was killed) cannot be read without
/// creating one: that is [`DbError::UnrecoveredLog`], which says what to
/// do.
///
/// # Security
///
/// `path` is turned into a `file:` URI only here, every byte outside the
/// unreserved set percent-encoded, so no character of a path can add a
/// URI parameter.
pub fn open_read_only(path: &Path, spec: &DbSpec) -> Result<Option<Connection>, DbError> {
    let fail =
        |err: rusqlite::Error| DbError::from_sqlite(spec.name, path, spec.busy_timeout, &err);
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() == 0 => return Ok(None),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(DbError::Unreadable {
                name: spec.name,
                path: path.to_path_buf(),
                reason: e.to_string(),
            });
        }
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let wal_bytes = std::fs::metadata(sibling(path, "-wal")).map(|m| m.len());
    let shm = sibling(path, "-shm").exists();
    let immutable = match (wal_bytes, shm) {
        (Err(_), _) | (Ok(0), false) => is_wal_file(path),
        (Ok(_), false) => {
            return Err(DbError::UnrecoveredLog {
                name: spec.name,
                path: path.to_path_buf(),
            });
        }
        (Ok(_), true) => false,
    };
    let uri = file_uri(path, immutable);
    let conn = Connection::open_with_flags(&uri, flags).map_err(fail)?;
    conn.busy_timeout(spec.busy_timeout).map_err(fail)?;
    conn.pragma_update(None, "query_only", true).map_err(fail)?;
    let found = check(path, spec, &conn)?;
    if found.version == 0 {
        return Ok(None);
    }
    if found.version < spec.version() {
        return Err(DbError::OlderSchema {
            name: spec.name,
            path: path.to_path_buf(),
            found: found.version,
            known: spec.version(),
        });
    }
    Ok(Some(conn))
}

/// Whether the file's header says it is in write-ahead-log mode (bytes 18
/// and 19, the read and write versions, are 2). Anything unreadable or not
/// SQLite is left for SQLite to report.
fn is_wal_file(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|()| header.starts_with(b"SQLite format 3\0") && header[18..20] == [2, 2])
}

/// `path` with `suffix` appended to its file name, as SQLite names the
/// files beside a database (`-wal`, `-shm`, `-journal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A `file:` URI naming exactly `path`, read-only, `immutable` when asked.
fn file_uri(path: &Path, immutable: bool) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    // readonly_shm: use a `-shm` that is there, never create one.
    uri.push_str("?mode=ro&readonly_shm=1");
    if immutable {
        uri.push_str("&immutable=1");
    }
    uri
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
struct Found {
    version: i64,
    /// A legacy file: its id is still to be written.
    adopt: bool,
}

/// Accepts our own file of a version this build knows, an empty one, or a
/// legacy one the spec recognises; refuses anything else.
fn check(path: &Path, spec: &DbSpec, conn: &Connection) -> Result<Found, DbError> {
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

fn set_journal(path: &Path, spec: &DbSpec, conn: &Connection) -> Result<(), DbError> {
    let fail =
        |err: rusqlite::Error| DbError::from_sqlite(spec.name, path, spec.busy_timeout, &err);
    if spec.journal == Journal::Rollback {
        return Ok(());
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
        .map_err(fail)?;
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
mod tests {
    use super::*;

    const MIGRATIONS: &[Migration] = &[
        Migration::sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"),
        Migration::sql("ALTER TABLE notes ADD COLUMN at INTEGER;"),
    ];

    const SPEC: DbSpec = DbSpec {
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

    /// Every name in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A WAL database of [`SPEC`] at `path` with one note, closed (so its
    /// log is checkpointed and removed, as GOAT leaves a store).
    fn made(path: &Path) {
        let conn = open(path, &SPEC).unwrap();
        conn.execute("INSERT INTO notes (body) VALUES ('kept')", [])
            .unwrap();
        drop(conn);
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn read_only_a_missing_or_empty_file_is_nothing_yet_and_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        assert!(open_read_only(&path, &SPEC).unwrap().is_none());
        assert!(listing(dir.path()).is_empty());
        std::fs::write(&path, b"").unwrap();
        assert!(open_read_only(&path, &SPEC).unwrap().is_none());
        assert_eq!(listing(dir.path()), ["t.db"]);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    }

    #[test]
    fn read_only_a_closed_wal_file_is_read_without_a_log_or_shm() {
        let dir = tempfile::tempdir().unwrap();
        // A name that would add URI parameters if it were not encoded.
        let path = dir.path().join("t?mode=rwc&x#%20.db");
        made(&path);
        assert_eq!(listing(dir.path()), ["t?mode=rwc&x#%20.db"]);
        let before = std::fs::read(&path).unwrap();
        let conn = open_read_only(&path, &SPEC).unwrap().unwrap();
        assert_eq!(count(&conn), 1);
        assert!(
            conn.execute("INSERT INTO notes (body) VALUES ('no')", [])
                .is_err()
        );
        drop(conn);
        assert_eq!(listing(dir.path()), ["t?mode=rwc&x#%20.db"]);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn read_only_with_a_live_writer_reads_its_log_and_adds_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        made(&path);
        let writer = open(&path, &SPEC).unwrap();
        writer
            .execute("INSERT INTO notes (body) VALUES ('logged')", [])
            .unwrap();
        let files = listing(dir.path());
        assert_eq!(files, ["t.db", "t.db-shm", "t.db-wal"]);
        let conn = open_read_only(&path, &SPEC).unwrap().unwrap();
        assert_eq!(count(&conn), 2);
        drop(conn);
        assert_eq!(listing(dir.path()), files);
    }

    #[test]
    fn read_only_a_killed_writers_log_is_reported_and_no_shm_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        made(&path);
        let writer = open(&path, &SPEC).unwrap();
        writer
            .execute("INSERT INTO notes (body) VALUES ('logged')", [])
            .unwrap();
        // What a writer killed mid-session leaves: the file and its log.
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        std::fs::copy(&path, copy.join("t.db")).unwrap();
        std::fs::copy(sibling(&path, "-wal"), copy.join("t.db-wal")).unwrap();
        let err = open_read_only(&copy.join("t.db"), &SPEC).unwrap_err();
        assert!(matches!(err, DbError::UnrecoveredLog { .. }), "{err:?}");
        assert!(err.to_string().contains("goat run"), "{err}");
        assert_eq!(listing(&copy), ["t.db", "t.db-wal"]);
    }

    #[test]
    fn read_only_an_older_version_is_reported_not_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let v1 = DbSpec {
            migrations: &MIGRATIONS[..1],
            ..SPEC
        };
        drop(open(&path, &v1).unwrap());
        let before = std::fs::read(&path).unwrap();
        let err = open_read_only(&path, &SPEC).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::OlderSchema {
                    found: 1,
                    known: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("goat run"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(listing(dir.path()), ["t.db"]);
    }

    #[test]
    fn read_only_a_legacy_file_is_read_as_it_is_not_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        made(&path);
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "application_id", 0)
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        let adopting = DbSpec {
            legacy: Some(|conn| has_tables(conn, &["notes"])),
            ..SPEC
        };
        let conn = open_read_only(&path, &adopting).unwrap().unwrap();
        assert_eq!(count(&conn), 1);
        drop(conn);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let err = open_read_only(&path, &SPEC).unwrap_err();
        assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
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
