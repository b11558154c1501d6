//! The permission database on disk: rules round-trip with every field, and
//! every way the file can be unusable denies, with a reason naming the file,
//! and leaves the file as it was.

use std::path::Path;
use std::time::{Duration, Instant};

use goat_gate::{
    Access, Decision, Effect, Evaluation, GateError, GateRequest, Interactive, NewRule,
    PermissionDb, SCHEMA_VERSION, Scope, WritePolicy, decide, decide_with_timeout,
};
use rusqlite::Connection;

/// Short enough to keep the suite fast, long enough that the measured wait
/// is clearly the timeout and not scheduling noise.
const TEST_BUSY_TIMEOUT: Duration = Duration::from_millis(300);

fn call<'a>(access: Access, paths: &'a [&'a str]) -> GateRequest<'a> {
    GateRequest {
        session_id: "s1",
        workspace: Some("/ws"),
        tool: match access {
            Access::Write => "write_file",
            _ => "read_file",
        },
        access,
        paths,
        interactive: Interactive::No,
        writes: WritePolicy::Default,
        now: 1_000,
    }
}

fn new_rule(tool: Option<&str>, pattern: &str, access: Access, effect: Effect) -> NewRule {
    NewRule {
        tool: tool.map(str::to_owned),
        pattern: pattern.to_owned(),
        access,
        effect,
        scope: Scope::Persistent,
        workspace: None,
        created_at: 500,
        expires_at: None,
        command: None,
    }
}

fn denial(decision: &Evaluation) -> String {
    match &decision.decision {
        Decision::Deny(_) => decision.reason(),
        other => panic!("expected a denial, got {other:?}"),
    }
}

fn assert_denied_naming(decision: &Evaluation, path: &Path, says: &str) {
    let reason = denial(decision);
    assert!(
        reason.starts_with("denied: "),
        "a denial says so first: {reason}"
    );
    assert!(
        reason.contains(&path.display().to_string()),
        "names the file: {reason}"
    );
    assert!(reason.contains(says), "says {says:?}: {reason}");
}

#[test]
fn rules_round_trip_through_the_file_with_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    let mut db = PermissionDb::open(&path).unwrap();
    assert!(db.list().unwrap().is_empty());

    let first = db
        .add(new_rule(
            Some("write_file"),
            "./src//x/../**",
            Access::Write,
            Effect::Allow,
        ))
        .unwrap();
    let second = db
        .add(NewRule {
            scope: Scope::Session("session-42".to_owned()),
            workspace: Some("/home/me/project".to_owned()),
            expires_at: Some(900),
            command: None,
            ..new_rule(None, "secrets/*.key", Access::Read, Effect::Deny)
        })
        .unwrap();
    let third = db
        .add(new_rule(None, "", Access::Write, Effect::Deny))
        .unwrap();

    assert_eq!(first.pattern, "src/**", "stored normalised");
    assert_eq!(third.pattern, "**", "empty is the whole workspace");
    assert!(first.id < second.id && second.id < third.id);
    assert_eq!(second.tool, None);
    assert_eq!(second.scope, Scope::Session("session-42".to_owned()));
    assert_eq!(second.access, Access::Read);
    assert_eq!(second.effect, Effect::Deny);
    assert_eq!(second.created_at, 500);
    assert_eq!(second.expires_at, Some(900));
    assert_eq!(
        db.list().unwrap(),
        vec![first.clone(), second.clone(), third.clone()]
    );

    // The row itself, not just what the API reads back.
    let raw = Connection::open(&path).unwrap();
    let row: (
        Option<String>,
        String,
        String,
        String,
        Option<String>,
        i64,
        Option<i64>,
    ) = raw
        .query_row(
            "SELECT tool, pattern, access, effect, session_id, created_at, expires_at
             FROM rules WHERE id = ?1",
            [second.id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(
        row,
        (
            None,
            "secrets/*.key".to_owned(),
            "read".to_owned(),
            "deny".to_owned(),
            Some("session-42".to_owned()),
            500,
            Some(900)
        )
    );

    assert!(db.revoke(second.id).unwrap());
    assert!(!db.revoke(second.id).unwrap(), "already gone");
    assert_eq!(db.list().unwrap(), vec![first, third.clone()]);

    // A revoked id is never handed out again.
    let fourth = db
        .add(new_rule(None, "x", Access::Read, Effect::Allow))
        .unwrap();
    assert!(fourth.id > third.id);
}

#[test]
fn persistent_rules_survive_reopening_and_decide_calls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    let added = {
        let mut db = PermissionDb::open(&path).unwrap();
        vec![
            db.add(new_rule(None, "secrets/**", Access::Read, Effect::Deny))
                .unwrap(),
            db.add(new_rule(
                Some("write_file"),
                "src/**",
                Access::Write,
                Effect::Allow,
            ))
            .unwrap(),
        ]
    };
    assert_eq!(PermissionDb::open(&path).unwrap().list().unwrap(), added);

    let decision = decide(&path, &call(Access::Read, &["./secrets/../secrets/k"]));
    assert_eq!(
        denial(&decision),
        "denied: reading 'secrets/k' with read_file is forbidden by permission rule \
         #1: deny read 'secrets/**' for all tools, persistent"
    );
    let decision = decide(&path, &call(Access::Write, &["src/main.rs"]));
    assert!(decision.is_allow(), "{decision:?}");
    assert!(decision.reason().contains("rule #2"), "{decision:?}");
    let decision = decide(&path, &call(Access::Write, &["README.md"]));
    assert!(denial(&decision).contains("needs approval"), "{decision:?}");
}

#[test]
fn a_missing_file_in_an_existing_directory_is_created_with_no_rules() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    let decision = decide(&path, &call(Access::Read, &["a"]));
    assert!(decision.is_allow(), "{decision:?}");
    assert!(path.is_file());
    assert!(
        PermissionDb::open(&path)
            .unwrap()
            .list()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn invalid_rules_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    let mut db = PermissionDb::open(&path).unwrap();
    let base = new_rule(None, "src/**", Access::Write, Effect::Allow);
    for (rule, says) in [
        (
            NewRule {
                tool: Some("*".to_owned()),
                ..base.clone()
            },
            "leave the tool out",
        ),
        (
            NewRule {
                tool: Some(String::new()),
                ..base.clone()
            },
            "tool name is empty",
        ),
        (
            NewRule {
                scope: Scope::Session(String::new()),
                workspace: None,
                ..base.clone()
            },
            "session id is empty",
        ),
        (
            NewRule {
                expires_at: Some(500),
                command: None,
                ..base.clone()
            },
            "expire before",
        ),
        (
            NewRule {
                pattern: "/etc/**".to_owned(),
                ..base.clone()
            },
            "absolute",
        ),
        (
            NewRule {
                pattern: "src/../../x".to_owned(),
                ..base.clone()
            },
            "leaves the workspace",
        ),
        (
            NewRule {
                pattern: "secrets/".to_owned(),
                ..base.clone()
            },
            "'secrets/**'",
        ),
    ] {
        let err = db.add(rule).unwrap_err();
        assert!(err.is_invalid_rule(), "{err:?}");
        assert!(!err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains(says), "{says:?}: {err}");
    }
    assert!(db.list().unwrap().is_empty());
}

#[test]
fn a_corrupt_file_denies_and_is_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    // Long garbage (past SQLite's 100-byte header) and a short file.
    let long: Vec<u8> = (0..8192_u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for (name, garbage) in [("long.db", long), ("short.db", b"not sqlite".to_vec())] {
        let path = dir.path().join(name);
        std::fs::write(&path, &garbage).unwrap();

        let decision = decide(&path, &call(Access::Read, &["a"]));
        assert_denied_naming(&decision, &path, "corrupt or not a database");
        assert!(denial(&decision).ends_with("calls are denied until it is fixed"));
        let err = PermissionDb::open(&path).unwrap_err();
        assert!(matches!(err, GateError::Corrupt { .. }), "{name}: {err:?}");

        assert_eq!(std::fs::read(&path).unwrap(), garbage, "{name} untouched");
    }
}

#[test]
fn an_unreadable_path_denies() {
    let dir = tempfile::tempdir().unwrap();
    let a_directory = dir.path().join("perm.db");
    std::fs::create_dir(&a_directory).unwrap();
    let decision = decide(&a_directory, &call(Access::Read, &["a"]));
    assert_denied_naming(&decision, &a_directory, "unreadable");

    let no_parent = dir.path().join("missing").join("perm.db");
    let decision = decide(&no_parent, &call(Access::Read, &["a"]));
    assert_denied_naming(&decision, &no_parent, "unreadable");
    assert!(!no_parent.exists());
}

#[test]
fn a_held_exclusive_lock_denies_after_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    drop(PermissionDb::open(&path).unwrap());

    // In WAL mode a plain exclusive transaction does not block readers (see
    // the next test); exclusive locking mode takes the file itself, as a
    // stuck or hostile process could.
    let locker = Connection::open(&path).unwrap();
    locker
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM rules;")
        .unwrap();

    let started = Instant::now();
    let decision = decide_with_timeout(&path, TEST_BUSY_TIMEOUT, &call(Access::Read, &["a"]));
    let waited = started.elapsed();
    assert_denied_naming(&decision, &path, "locked");
    assert!(denial(&decision).ends_with("calls are denied while it is locked"));
    assert!(waited >= TEST_BUSY_TIMEOUT, "gave up after {waited:?}");

    let err = PermissionDb::open_with_timeout(&path, TEST_BUSY_TIMEOUT).unwrap_err();
    assert!(err.is_retryable(), "{err:?}");

    locker.execute_batch("COMMIT").unwrap();
    drop(locker);
    let decision = decide_with_timeout(&path, TEST_BUSY_TIMEOUT, &call(Access::Read, &["a"]));
    assert!(decision.is_allow(), "the lock released: {decision:?}");
}

#[test]
fn a_rule_edit_in_progress_never_lets_its_half_done_rules_decide() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    PermissionDb::open(&path)
        .unwrap()
        .add(new_rule(None, "a", Access::Read, Effect::Deny))
        .unwrap();

    // The database uses a rollback journal (ADR-0071): a decision waits
    // for an edit in progress, and one that outlasts the busy timeout
    // denies, naming the lock. It never reads the edit's uncommitted rules.
    let editor = Connection::open(&path).unwrap();
    editor
        .execute_batch("BEGIN EXCLUSIVE; DELETE FROM rules;")
        .unwrap();
    let decision = decide_with_timeout(&path, TEST_BUSY_TIMEOUT, &call(Access::Read, &["a"]));
    assert_denied_naming(&decision, &path, "locked");
    editor.execute_batch("COMMIT").unwrap();
    let decision = decide_with_timeout(&path, TEST_BUSY_TIMEOUT, &call(Access::Read, &["a"]));
    assert!(decision.is_allow(), "the commit applies: {decision:?}");
}

#[test]
fn a_newer_schema_denies_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    PermissionDb::open(&path)
        .unwrap()
        .add(new_rule(None, "**", Access::Read, Effect::Allow))
        .unwrap();
    let raw = Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(raw);
    let before = std::fs::read(&path).unwrap();

    let decision = decide(&path, &call(Access::Read, &["a"]));
    assert_denied_naming(&decision, &path, "created by a newer GOAT");
    assert!(
        denial(&decision).contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
        "{decision:?}"
    );
    let err = PermissionDb::open(&path).unwrap_err();
    assert!(
        matches!(err, GateError::NewerSchema { found, known, .. }
            if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION),
        "{err:?}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn another_applications_database_denies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("CREATE TABLE sessions (id TEXT PRIMARY KEY);")
        .unwrap();
    drop(other);
    let before = std::fs::read(&path).unwrap();
    let decision = decide(&path, &call(Access::Read, &["a"]));
    assert_denied_naming(&decision, &path, "is not a GOAT permission database");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_hand_edited_rule_outside_the_vocabulary_denies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perm.db");
    drop(PermissionDb::open(&path).unwrap());
    let raw = Connection::open(&path).unwrap();
    // Passes the table's CHECKs, but is no pattern the gate can match: were
    // it skipped, a deny would silently stop applying.
    raw.execute(
        "INSERT INTO rules (tool, pattern, access, effect, created_at)
         VALUES (NULL, '../outside/**', 'read', 'deny', 1)",
        [],
    )
    .unwrap();
    drop(raw);
    let decision = decide(&path, &call(Access::Read, &["a"]));
    assert_denied_naming(&decision, &path, "rule #1");
}

/// A database made before rules could be bound to a workspace is migrated
/// in place, keeping its rules, which still apply in every workspace.
#[test]
fn a_version_one_database_is_migrated_and_keeps_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA application_id = 1196446285;
             CREATE TABLE rules (
                id          INTEGER PRIMARY KEY AUTOINCREMENT,
                tool        TEXT CHECK (tool IS NULL OR length(tool) > 0),
                pattern     TEXT NOT NULL,
                access      TEXT NOT NULL CHECK (access IN ('read', 'write')),
                effect      TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
                session_id  TEXT CHECK (session_id IS NULL OR length(session_id) > 0),
                created_at  INTEGER NOT NULL,
                expires_at  INTEGER CHECK (expires_at IS NULL OR expires_at > created_at)
             ) STRICT;
             INSERT INTO rules (tool, pattern, access, effect, created_at)
                 VALUES ('write_file', 'src/**', 'write', 'allow', 5);
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let rules = PermissionDb::open(&path).unwrap().list().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].pattern, "src/**");
    assert_eq!(rules[0].workspace, None);
    let version: i64 = Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 3);
    assert_eq!(rules[0].command, None);
    assert!(decide(&path, &call(Access::Write, &["src/a.rs"])).is_allow());
}
