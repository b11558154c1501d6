//! Checkpoints (ADR-0073): a call's file changes stored with its outcome,
//! read back per session, marked undone once, removed with the session.

use goat_store::{FileChange, RoundOk};

use crate::{call, ok, open};

#[test]
fn changes_are_stored_with_the_call_marked_undone_once_and_removed_with_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let turn = store.start_turn(&session, "write").unwrap();
    let round = store.start_round(turn).unwrap();
    let rows = store
        .finish_round_ok(
            round,
            &RoundOk {
                calls: vec![call("c1", "write_file", "{}")],
                ..RoundOk::default()
            },
        )
        .unwrap();
    let made = FileChange {
        path: "a.txt".into(),
        before: None,
        before_mode: None,
        after_sha256: Some("ab".into()),
        after: Some(b"new".to_vec()),
        ..FileChange::default()
    };
    // An empty file before is not an absent one.
    let emptied = FileChange {
        path: "b.txt".into(),
        before: Some(Vec::new()),
        before_mode: Some(0o755),
        after_sha256: None,
        after: None,
        ..FileChange::default()
    };
    let mut outcome = ok("written");
    outcome.changes = vec![made.clone(), emptied.clone()];
    store.finish_call(rows[0], &outcome).unwrap();

    let stored = store.file_changes(&session).unwrap();
    let got: Vec<_> = stored.iter().map(|c| c.change.clone()).collect();
    assert_eq!(got, [made, emptied]);
    assert!(
        stored
            .iter()
            .all(|c| c.turn_id == turn && c.tool == "write_file")
    );
    let ids: Vec<i64> = stored.iter().map(|c| c.id).collect();
    assert_eq!(store.mark_undone(&ids).unwrap(), 2);
    assert_eq!(store.mark_undone(&ids).unwrap(), 0, "undone twice");
    assert!(
        store
            .file_changes(&session)
            .unwrap()
            .iter()
            .all(|c| c.undone_at.is_some())
    );

    assert!(store.remove_session(&session).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("state/goat.db")).unwrap();
    let left: i64 = conn
        .query_row("SELECT count(*) FROM file_changes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}
