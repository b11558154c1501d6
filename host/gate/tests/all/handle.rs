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
