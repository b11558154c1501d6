//! The permission database kept open between decisions (`GateHandle`):
//! every decision still sees the rules as they are on disk now, whoever
//! changed them and however the file was changed.

use goat_gate::{
    Access, Decision, Effect, GateHandle, GateRequest, Interactive, NewRule, PermissionDb, Scope,
    WritePolicy,
};

fn read(path: &str) -> GateRequest<'_> {
    GateRequest {
        session_id: "s1",
        workspace: Some("/ws"),
        tool: "read_file",
        access: Access::Read,
        paths: std::slice::from_ref(Box::leak(Box::new(path))),
        interactive: Interactive::No,
        writes: WritePolicy::Default,
        now: 1_000,
    }
}

fn deny_read(pattern: &str) -> NewRule {
    NewRule {
        tool: None,
        pattern: pattern.to_owned(),
        access: Access::Read,
        effect: Effect::Deny,
        scope: Scope::Persistent,
        workspace: None,
        created_at: 500,
        expires_at: None,
        command: None,
    }
}

fn allowed(handle: &mut GateHandle, path: &str) -> bool {
    let (evaluation, boundary) = handle.decide_with_boundary(&read(path));
    match evaluation.decision {
        Decision::Allow { .. } => {
            assert!(boundary.is_some(), "an allowed call has a boundary");
            true
        }
        Decision::Deny(_) => {
            assert!(boundary.is_none(), "a denied call has none");
            false
        }
        Decision::Ask { .. } => panic!("a read is never asked"),
    }
}

#[test]
fn a_rule_another_process_adds_applies_at_the_next_decision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    assert!(allowed(&mut handle, "secret.txt"), "kept, still allowed");
    // `goat permissions add` from another process: another connection.
    PermissionDb::open(&path)
        .unwrap()
        .add(deny_read("secret.txt"))
        .unwrap();
    assert!(!allowed(&mut handle, "secret.txt"), "the new deny applies");
    assert!(allowed(&mut handle, "other.txt"));
    // And one removed stops applying.
    let mut db = PermissionDb::open(&path).unwrap();
    let id = db.list().unwrap()[0].id;
    assert!(db.revoke(id).unwrap());
    assert!(allowed(&mut handle, "secret.txt"));
}

#[test]
fn a_rule_the_handle_saves_applies_at_its_next_decision_and_is_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    assert!(
        handle.keeps_connection(),
        "kept, so the save goes through it"
    );
    let saved = handle
        .add(vec![deny_read("secret.txt"), deny_read("notes/**")])
        .unwrap();
    assert_eq!(saved.len(), 2);
    // Its own commit does not move its data_version: the next decision
    // must read the rules again, not trust what it kept.
    assert!(
        !allowed(&mut handle, "secret.txt"),
        "the saved deny applies"
    );
    assert!(!allowed(&mut handle, "notes/a.txt"));
    assert!(allowed(&mut handle, "other.txt"));
    let on_disk = PermissionDb::open(&path).unwrap().list().unwrap();
    assert_eq!(
        on_disk.iter().map(|r| r.id).collect::<Vec<_>>(),
        saved.iter().map(|r| r.id).collect::<Vec<_>>()
    );
}

#[test]
fn a_save_to_a_file_that_is_no_longer_a_permission_database_fails_and_denies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    // Replaced under the kept connection by something else entirely.
    let swapped = dir.path().join("swapped");
    std::fs::write(&swapped, b"not a database, not at all, no").unwrap();
    std::fs::rename(&swapped, &path).unwrap();
    assert!(handle.add(vec![deny_read("secret.txt")]).is_err());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"not a database, not at all, no",
        "nothing was written into it"
    );
    assert!(
        !allowed(&mut handle, "other.txt"),
        "and decisions fail closed"
    );
}

#[test]
fn a_file_swapped_in_under_the_name_is_read_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let other = dir.path().join("other.db");
    PermissionDb::open(&other)
        .unwrap()
        .add(deny_read("secret.txt"))
        .unwrap();
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    // Renamed over the kept one: its connection would never see the deny.
    std::fs::rename(&other, &path).unwrap();
    assert!(!allowed(&mut handle, "secret.txt"));
}

#[test]
fn a_file_replaced_by_one_that_is_not_a_permission_database_denies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "a.txt"));
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, vec![b'x'; 8192]).unwrap();
    std::fs::rename(&garbage, &path).unwrap();
    let (evaluation, boundary) = handle.decide_with_boundary(&read("a.txt"));
    assert!(boundary.is_none());
    let reason = evaluation.reason();
    assert!(matches!(evaluation.decision, Decision::Deny(_)), "{reason}");
    assert!(reason.contains(&path.display().to_string()), "{reason}");
    // The garbage is left as it was.
    assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; 8192]);
}

#[test]
fn a_file_swapped_in_just_after_another_process_wrote_is_read_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let other = dir.path().join("other.db");
    PermissionDb::open(&other)
        .unwrap()
        .add(deny_read("y.txt"))
        .unwrap();
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "x.txt"));
    // Another process commits while the handle holds the file open: its
    // pages wait in the log the handle keeps alive...
    PermissionDb::open(&path)
        .unwrap()
        .add(deny_read("x.txt"))
        .unwrap();
    // ...and a file with other rules is moved in before the next decision.
    std::fs::rename(&other, &path).unwrap();
    assert!(!allowed(&mut handle, "y.txt"), "the new file's deny holds");
    assert!(allowed(&mut handle, "x.txt"), "the old file's rule is gone");
    let rules = PermissionDb::open(&path).unwrap().list().unwrap();
    assert_eq!(rules.len(), 1, "{rules:?}");
}

/// Two sessions keep the database open; the file is replaced (`mv
/// restored.db permissions.db`); the session that decides first reopens the
/// new file, and a deny is then added to it. In WAL mode the other session's
/// first decision after the swap copied the new file's frames from the
/// shared log into the orphaned old inode, and the deny was lost. Whether
/// `two` decides again before `one` does not matter.
fn a_deny_added_after_a_swap_holds(two_decides_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let other = dir.path().join("restored.db");
    PermissionDb::open(&other).unwrap();
    let mut one = GateHandle::new(&path);
    let mut two = GateHandle::new(&path);
    assert!(allowed(&mut one, "secret.txt"));
    assert!(allowed(&mut two, "secret.txt"));
    std::fs::rename(&other, &path).unwrap();
    assert!(allowed(&mut two, "secret.txt"), "two reopens the new file");
    PermissionDb::open(&path)
        .unwrap()
        .add(deny_read("secret.txt"))
        .unwrap();
    if two_decides_first {
        assert!(!allowed(&mut two, "secret.txt"), "two sees the deny");
    }
    // `one` still holds the old file: its first decision after the swap.
    assert!(!allowed(&mut one, "secret.txt"), "one sees the deny");
    assert!(!allowed(&mut two, "secret.txt"), "two sees the deny");
    assert_eq!(
        PermissionDb::open(&path).unwrap().list().unwrap().len(),
        1,
        "the rule is still in the file"
    );
}

#[test]
fn a_deny_added_after_a_swap_is_not_lost_to_the_old_connection() {
    a_deny_added_after_a_swap_holds(true);
}

#[test]
fn a_deny_added_after_a_swap_before_the_old_handle_decides_is_kept() {
    a_deny_added_after_a_swap_holds(false);
}

/// Run in a child process by the test below (a no-op otherwise); adds a deny
/// for `secret.txt` to the database named by GOAT_TEST_GATE_DB.
#[test]
fn child_adds_a_deny() {
    if let Some(path) = std::env::var_os("GOAT_TEST_GATE_DB") {
        PermissionDb::open(std::path::Path::new(&path))
            .unwrap()
            .add(deny_read("secret.txt"))
            .unwrap();
    }
}

/// Files beside the database are deleted while a session keeps it open (a
/// cleanup, a sync tool), and another process adds a deny. In WAL mode the
/// commit went to a new log the kept connection never looked at, and the
/// kept rules went on deciding without the deny; with a rollback journal
/// there is no such log, and the deny applies.
#[test]
fn a_deny_another_process_adds_after_a_cleanup_applies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    for ext in ["db-wal", "db-shm", "db-journal"] {
        let _ = std::fs::remove_file(path.with_extension(ext));
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "handle::child_adds_a_deny", "--quiet"])
        .env("GOAT_TEST_GATE_DB", &path)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        !allowed(&mut handle, "secret.txt"),
        "the kept handle sees it"
    );
}

/// A database an earlier GOAT made in WAL mode: converted to a rollback
/// journal when nothing else is reading it; while something is, it stays
/// WAL and the handle opens it afresh for every decision (a kept WAL
/// connection is what let a moved-in file or a deleted log hide a deny).
#[test]
fn a_wal_database_is_converted_or_never_kept_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    PermissionDb::open(&path).unwrap();
    let wal = |p: &std::path::Path| {
        let conn = rusqlite::Connection::open(p).unwrap();
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn
    };
    drop(wal(&path));
    assert!(
        !PermissionDb::open(&path).unwrap().is_wal().unwrap(),
        "converted"
    );
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    assert!(handle.keeps_connection());

    // Being read in WAL mode by another process: not converted, not kept.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.db");
    PermissionDb::open(&path).unwrap();
    let holder = wal(&path);
    holder.execute_batch("BEGIN").unwrap();
    let _: i64 = holder
        .query_row("SELECT count(*) FROM rules", [], |r| r.get(0))
        .unwrap();
    assert!(PermissionDb::open(&path).unwrap().is_wal().unwrap());
    let mut handle = GateHandle::new(&path);
    assert!(allowed(&mut handle, "secret.txt"));
    assert!(!handle.keeps_connection());
    PermissionDb::open(&path)
        .unwrap()
        .add(deny_read("secret.txt"))
        .unwrap();
    assert!(!allowed(&mut handle, "secret.txt"), "the deny applies");
    holder.execute_batch("COMMIT").unwrap();
}
