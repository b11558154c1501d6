//! Runs of attempts' landings as the store reads them (issue 42).

use goat_store::{CallStatus, FileChange, RoundOk};

use crate::{call, ok, open};

/// One `land_attempt` call of `run` for `attempt` in a session of its
/// own, ending `status` with one change to `path`.
fn landing(
    store: &mut goat_store::Store,
    dir: &std::path::Path,
    (run, attempt): (i64, u32),
    status: CallStatus,
    path: &str,
) -> String {
    let session = store
        .create_session(dir, "attempts", "goat attempts land")
        .unwrap();
    let turn = store.start_turn(&session, "land").unwrap();
    let round = store.start_round(turn).unwrap();
    let args = format!(r#"{{"run": {run}, "attempt": {attempt}}}"#);
    let rows = store
        .finish_round_ok(
            round,
            &RoundOk {
                calls: vec![call("land-attempt", "land_attempt", &args)],
                ..RoundOk::default()
            },
        )
        .unwrap();
    let mut outcome = ok("landed");
    outcome.status = status;
    outcome.changes = vec![FileChange {
        path: path.into(),
        after_sha256: Some("ab".into()),
        ..FileChange::default()
    }];
    store.finish_call(rows[0], &outcome).unwrap();
    session
}

#[test]
fn the_landing_in_the_workspace_and_one_that_failed_part_way_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let owner = store
        .create_session(dir.path(), "attempts", "goat run --attempts")
        .unwrap();
    let run = store
        .start_attempt_run(&owner, (&dir.path().to_string_lossy(), None), "task", None)
        .unwrap();
    assert_eq!(store.landing(run).unwrap(), None);
    let first = landing(&mut store, dir.path(), (run, 2), CallStatus::Ok, "a.txt");
    let swap = landing(&mut store, dir.path(), (run, 3), CallStatus::Ok, "b.txt");
    let landed = store.landing(run).unwrap().unwrap();
    assert_eq!(
        (landed.attempt, landed.session_id.as_str()),
        (3, swap.as_str())
    );
    assert_eq!(landed.sessions, [first.clone(), swap.clone()]);
    let paths: Vec<&str> = landed
        .changes
        .iter()
        .map(|c| c.change.path.as_str())
        .collect();
    assert_eq!(paths, ["a.txt", "b.txt"]);
    // The swap undone: attempt 2 again.
    let rows: Vec<i64> = store
        .file_changes(&swap)
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    store.mark_undone(&rows).unwrap();
    assert_eq!(store.landed_attempt(run).unwrap(), Some(2));
    assert_eq!(store.failed_landing(run).unwrap(), None);
    // A landing that failed part-way, its journal kept: named.
    let failed = landing(&mut store, dir.path(), (run, 1), CallStatus::Error, "c.txt");
    assert_eq!(store.failed_landing(run).unwrap(), Some(failed));
    assert_eq!(store.landed_attempt(run).unwrap(), Some(2));
    // The run's own session stays with the run.
    let err = store.remove_session(&owner).unwrap_err();
    assert!(err.to_string().contains("stays with the run"), "{err}");
}
