//! Turns the person's hooks held back or wrote (issue 41).

use goat_store::{HistoryEntry, TurnStatus};

use crate::open;

#[test]
fn screened_withheld_and_stranded_hook_turns_stay_out_of_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    // Screened and never let through (a crash while its hooks ran): out.
    let cut_off = store.start_screened_turn(&session).unwrap();
    // Withheld by a hook: out, its prompt blank.
    let withheld = store.start_screened_turn(&session).unwrap();
    store.withhold_prompt(withheld, "no-secrets").unwrap();
    // Let through: in, with its prompt.
    let admitted = store.start_screened_turn(&session).unwrap();
    store.admit_prompt(admitted, "go").unwrap();
    // A stop hook's words the model never answered: in while it is the
    // newest turn (the next request is built from it), out once another
    // turn began.
    let hooked = store
        .start_turn_from_hook(&session, "[goat: the stop hook says]", "tests")
        .unwrap();
    assert_eq!(
        store.history(&session).unwrap(),
        [
            HistoryEntry::User("go".into()),
            HistoryEntry::User("[goat: the stop hook says]".into())
        ]
    );
    store
        .finish_turn(hooked, TurnStatus::Cancelled, None)
        .unwrap();
    store.start_turn(&session, "next").unwrap();
    assert_eq!(
        store.history(&session).unwrap(),
        [
            HistoryEntry::User("go".into()),
            HistoryEntry::User("next".into())
        ]
    );
    let turns = store.turns(&session).unwrap();
    assert_eq!(turns[0].id, cut_off);
    assert_eq!(turns[0].withheld_by.as_deref(), Some(""));
    assert_eq!(
        (turns[1].prompt.as_str(), turns[1].withheld_by.as_deref()),
        ("", Some("no-secrets"))
    );
    assert_eq!(turns[2].withheld_by, None);
    assert_eq!(turns[3].prompt_from_hook.as_deref(), Some("tests"));
}

#[test]
fn a_session_with_refusals_and_hook_runs_is_removed_whole() {
    use goat_store::{HookRan, Refusal, RefusedBy, RoundOk};
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let ran = HookRan {
        hook: "guard".into(),
        event: "pre_tool_use".into(),
        verdict: "deny".into(),
        reason: "no".into(),
        duration_ms: 3,
    };
    // A prompt a hook withheld, and a call a hook and a rule refused.
    let withheld = store.start_screened_turn(&session).unwrap();
    store.withhold_prompt(withheld, "guard").unwrap();
    store
        .record_turn_hooks(
            withheld,
            &[HookRan {
                event: "user_prompt_submit".into(),
                ..ran.clone()
            }],
        )
        .unwrap();
    let turn = store.start_turn(&session, "write").unwrap();
    let round = store.start_round(turn).unwrap();
    let rows = store
        .finish_round_ok(
            round,
            &RoundOk {
                calls: vec![crate::call("c1", "write_file", "{}")],
                ..RoundOk::default()
            },
        )
        .unwrap();
    let mut outcome = crate::ok("refused");
    outcome.refusals = vec![Refusal::new(
        RefusedBy::Rule,
        Some("a.txt".into()),
        "denied",
    )];
    outcome.hooks = vec![ran];
    store.finish_call(rows[0], &outcome).unwrap();
    assert!(store.remove_session(&session).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("state/goat.db")).unwrap();
    for table in [
        "call_refusals",
        "hook_runs",
        "turn_hook_runs",
        "tool_calls",
        "turns",
    ] {
        let left: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0, "{table}");
    }
}
