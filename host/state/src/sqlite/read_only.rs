//! Reading a database without writing: what listing commands use.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::{DbError, DbSpec, check};

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
    // One snapshot for the header and the schema, as in `open`.
    let found = {
        let tx = conn.unchecked_transaction().map_err(fail)?;
        let found = check(path, spec, &tx)?;
        tx.commit().map_err(fail)?;
        found
    };
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

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::super::tests::{MIGRATIONS, SPEC};
    use super::super::{has_tables, open};
    use super::*;

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
}
