//! goat-store against real database files: schema and pragmas, the record
//! of a turn, history rebuilt without failed rounds, crash recovery.

#![expect(clippy::unwrap_used, reason = "tests")]

mod attempts;
mod changes;
mod egress;
mod lock;
mod sessions;
mod turn_hooks;

use std::path::Path;
use std::time::Duration;

use goat_store::{
    CallOutcome, CallStatus, HistoryEntry, INTERRUPTED_RESULT, MarkupChannel, NewCall, Recovery,
    RoundOk, RoundStatus, SCHEMA_VERSION, Store, StoreError, TurnStatus,
};
use rusqlite::Connection;

pub(crate) fn open(dir: &Path) -> Store {
    Store::open(&dir.join("state").join("goat.db")).unwrap()
}

fn call(id: &str, tool: &str, args: &str) -> NewCall {
    NewCall {
        call_id: id.into(),
        tool: tool.into(),
        arguments: args.into(),
    }
}

fn ok(result: &str) -> CallOutcome {
    CallOutcome {
        status: CallStatus::Ok,
        result: result.into(),
        error_kind: None,
        decision: Some(goat_store::CallDecision::Allow),
        decision_reason: Some("reading inside the workspace".into()),
        duration: Duration::from_millis(3),
        exit_code: None,
        changes: Vec::new(),
        changes_stored: goat_store::ChangesStored::WithOutcome,
        refusals: Vec::new(),
        hooks: Vec::new(),
    }
}

#[test]
fn opening_sets_wal_foreign_keys_schema_and_a_private_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    drop(store);
    let db = dir.path().join("state/goat.db");
    let conn = Connection::open(&db).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!((mode.as_str(), version), ("wal", SCHEMA_VERSION));
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        [
            "attempt_runs",
            "attempts",
            "call_refusals",
            "egress_decisions",
            "file_changes",
            "hook_runs",
            "recovery_events",
            "rounds",
            "sessions",
            "summaries",
            "tool_calls",
            "turn_hook_runs",
            "turns"
        ]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("state"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    // Reopening migrates nothing and loses nothing.
    let mut store = open(dir.path());
    let id = store
        .create_session(dir.path(), "http://e/v1", "m")
        .unwrap();
    drop(store);
    assert_eq!(open(dir.path()).session(&id).unwrap().model, "m");
}

#[test]
fn a_store_from_a_newer_goat_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("goat.db");
    Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    match Store::open(&db) {
        Err(StoreError::TooNew {
            found: 99,
            supported,
            ..
        }) => assert_eq!(supported, SCHEMA_VERSION),
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("goat.db");
    std::fs::write(&db, b"this is not sqlite, it is someone's notes").unwrap();
    assert!(matches!(Store::open(&db), Err(StoreError::Open { .. })));
    assert_eq!(
        std::fs::read(&db).unwrap(),
        b"this is not sqlite, it is someone's notes"
    );
}

/// `GSTO`: what every store now carries in `PRAGMA application_id`.
const STORE_ID: i32 = 0x4753_544F;

fn application_id(db: &Path) -> i32 {
    Connection::open(db)
        .unwrap()
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap()
}

#[test]
fn a_new_store_carries_goats_application_id() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    assert_eq!(application_id(&dir.path().join("state/goat.db")), STORE_ID);
}

/// Every store made before stores had an application id is adopted, its
/// sessions kept.
#[test]
fn a_store_made_before_application_ids_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state/goat.db");
    let id = open(dir.path())
        .create_session(dir.path(), "http://e/v1", "m")
        .unwrap();
    // As every earlier GOAT left it: schema version 1, no id.
    Connection::open(&db)
        .unwrap()
        .pragma_update(None, "application_id", 0)
        .unwrap();
    assert_eq!(application_id(&db), 0);
    assert_eq!(open(dir.path()).session(&id).unwrap().model, "m");
    assert_eq!(application_id(&db), STORE_ID);
}

#[test]
fn another_applications_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    for (name, setup) in [
        (
            "other.db",
            "CREATE TABLE notes (body TEXT); PRAGMA user_version = 1;",
        ),
        ("perm.db", "PRAGMA application_id = 1196446285;"),
    ] {
        let db = dir.path().join(name);
        Connection::open(&db).unwrap().execute_batch(setup).unwrap();
        let before = std::fs::read(&db).unwrap();
        match Store::open(&db) {
            Err(err @ StoreError::Open { .. }) => {
                assert!(err.to_string().contains("not a GOAT store"), "{err}");
            }
            other => panic!("{name}: {:?}", other.err()),
        }
        assert_eq!(std::fs::read(&db).unwrap(), before, "{name}");
    }
}

#[test]
fn a_store_inside_the_workspace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    for db in [
        ws.join("goat.db"),
        ws.join("sub/../goat.db"),
        ws.join(".goat/x.db"),
    ] {
        assert!(
            matches!(
                Store::ensure_outside(&db, &ws),
                Err(StoreError::InsideWorkspace { .. })
            ),
            "{db:?}"
        );
    }
    assert!(Store::ensure_outside(&dir.path().join("goat.db"), &ws).is_ok());
    // A sibling whose name merely starts like the workspace is outside.
    assert!(Store::ensure_outside(&dir.path().join("ws2/goat.db"), &ws).is_ok());
}

#[test]
fn a_turn_is_recorded_and_history_rebuilt_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let turn = store.start_turn(&session, "read two files").unwrap();
    let round = store.start_round(turn).unwrap();
    let calls = store
        .finish_round_ok(
            round,
            &RoundOk {
                content: "Reading.".into(),
                finish_reason: Some("tool_calls".into()),
                calls: vec![
                    call("c1", "read_file", r#"{"path":"a"}"#),
                    call("c2", "read_file", r#"{"path":"b"}"#),
                ],
                ..RoundOk::default()
            },
        )
        .unwrap();
    assert_eq!(calls.len(), 2);
    store.start_call(calls[0]).unwrap();
    store.finish_call(calls[0], &ok("A")).unwrap();
    store
        .finish_call(
            calls[1],
            &CallOutcome {
                status: CallStatus::Denied,
                result: "denied: no".into(),
                error_kind: Some(goat_store::CallErrorKind::Denied),
                decision: Some(goat_store::CallDecision::Deny),
                decision_reason: Some("rule 3".into()),
                duration: Duration::ZERO,
                exit_code: None,
                changes: Vec::new(),
                changes_stored: goat_store::ChangesStored::WithOutcome,
                refusals: Vec::new(),
                hooks: Vec::new(),
            },
        )
        .unwrap();
    let round2 = store.start_round(turn).unwrap();
    store
        .finish_round_ok(
            round2,
            &RoundOk {
                content: "Done.".into(),
                finish_reason: Some("stop".into()),
                ..RoundOk::default()
            },
        )
        .unwrap();
    store
        .finish_turn(turn, TurnStatus::Completed, None)
        .unwrap();

    assert_eq!(
        store.history(&session).unwrap(),
        [
            HistoryEntry::User("read two files".into()),
            HistoryEntry::Assistant {
                content: "Reading.".into(),
                calls: vec![
                    call("c1", "read_file", r#"{"path":"a"}"#),
                    call("c2", "read_file", r#"{"path":"b"}"#)
                ],
            },
            HistoryEntry::ToolResult {
                call_id: "c1".into(),
                tool: "read_file".into(),
                status: CallStatus::Ok,
                content: "A".into()
            },
            HistoryEntry::ToolResult {
                call_id: "c2".into(),
                tool: "read_file".into(),
                status: CallStatus::Denied,
                content: "denied: no".into()
            },
            HistoryEntry::Assistant {
                content: "Done.".into(),
                calls: vec![]
            },
        ]
    );
    let turns = store.turns(&session).unwrap();
    assert_eq!(turns[0].status, TurnStatus::Completed);
    let c = &turns[0].rounds[0].calls;
    assert_eq!(
        (c[0].status, c[0].decision, c[0].duration_ms),
        (
            CallStatus::Ok,
            Some(goat_store::CallDecision::Allow),
            Some(3)
        )
    );
    assert_eq!(
        (c[1].status, c[1].decision_reason.as_deref()),
        (CallStatus::Denied, Some("rule 3"))
    );
    assert_eq!(store.list_sessions().unwrap()[0].turns, 1);
}

#[test]
fn a_recovered_round_is_kept_for_the_record_and_out_of_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let turn = store.start_turn(&session, "fix it").unwrap();
    let bad = store.start_round(turn).unwrap();
    let malformed =
        "<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>";
    store
        .record_recovery(
            bad,
            malformed,
            "",
            &Recovery {
                tool: "read_file".into(),
                markers: vec!["</tool_call>".into()],
                span: Some((0, 82)),
                channel: MarkupChannel::Content,
            },
        )
        .unwrap();
    let good = store.start_round(turn).unwrap();
    store
        .finish_round_ok(
            good,
            &RoundOk {
                content: "Fixed.".into(),
                ..RoundOk::default()
            },
        )
        .unwrap();

    let history = store.history(&session).unwrap();
    assert_eq!(
        history,
        [
            HistoryEntry::User("fix it".into()),
            HistoryEntry::Assistant {
                content: "Fixed.".into(),
                calls: vec![]
            }
        ]
    );
    let turns = store.turns(&session).unwrap();
    assert!(turns[0].recovery_used);
    assert_eq!(turns[0].rounds[0].status, RoundStatus::Failed);
    assert_eq!(turns[0].rounds[0].content, malformed);
    let conn = Connection::open(store.path()).unwrap();
    let (tool, markers, end): (String, String, i64) = conn
        .query_row(
            "SELECT tool, markers, span_end FROM recovery_events WHERE round_id = ?1",
            [bad],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (tool.as_str(), markers.as_str(), end),
        ("read_file", "</tool_call>", 82)
    );
}

#[test]
fn failed_and_cancelled_rounds_are_left_out_of_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let turn = store.start_turn(&session, "go").unwrap();
    let r1 = store.start_round(turn).unwrap();
    store
        .finish_round_failed(
            r1,
            goat_store::RoundFailure::Engine,
            "partial",
            "the engine's stream ended early",
        )
        .unwrap();
    let r2 = store.start_round(turn).unwrap();
    store
        .finish_round_failed(r2, goat_store::RoundFailure::Cancelled, "half", "cancelled")
        .unwrap();
    store
        .finish_turn(turn, TurnStatus::Cancelled, Some("cancelled by the user"))
        .unwrap();
    assert_eq!(
        store.history(&session).unwrap(),
        [HistoryEntry::User("go".into())]
    );
    let turns = store.turns(&session).unwrap();
    assert_eq!(
        turns[0].rounds.iter().map(|r| r.status).collect::<Vec<_>>(),
        [RoundStatus::Failed, RoundStatus::Cancelled]
    );
    assert_eq!(
        turns[0]
            .rounds
            .iter()
            .map(|r| r.failure_kind)
            .collect::<Vec<_>>(),
        [
            Some(goat_store::RoundFailure::Engine),
            Some(goat_store::RoundFailure::Cancelled)
        ]
    );
    assert_eq!(turns[0].error.as_deref(), Some("cancelled by the user"));
}

#[test]
fn a_session_resumed_after_a_crash_gives_pending_calls_an_interrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let session;
    {
        let mut store = open(dir.path());
        session = store
            .create_session(dir.path(), "http://e/v1", "qwen")
            .unwrap();
        let turn = store.start_turn(&session, "write it").unwrap();
        let round = store.start_round(turn).unwrap();
        let calls = store
            .finish_round_ok(
                round,
                &RoundOk {
                    calls: vec![
                        call("w1", "write_file", "{}"),
                        call("w2", "write_file", "{}"),
                    ],
                    ..RoundOk::default()
                },
            )
            .unwrap();
        store.finish_call(calls[0], &ok("Created 'a'.")).unwrap();
        store.start_call(calls[1]).unwrap();
        // The process dies here: w2 pending, a second round streaming.
        store.start_round(turn).unwrap();
    }
    let mut store = open(dir.path());
    // Even before the fix-up, history answers every call.
    let before = store.history(&session).unwrap();
    assert!(
        before.iter().any(|e| matches!(e, HistoryEntry::ToolResult { call_id, status: CallStatus::Interrupted, content, .. }
            if call_id == "w2" && content == INTERRUPTED_RESULT)),
        "{before:?}"
    );

    assert_eq!(store.interrupt_pending(&session).unwrap(), 1);
    let turns = store.turns(&session).unwrap();
    let calls = &turns[0].rounds[0].calls;
    assert_eq!(
        (calls[0].status, calls[1].status),
        (CallStatus::Ok, CallStatus::Interrupted)
    );
    assert_eq!(calls[1].result.as_deref(), Some(INTERRUPTED_RESULT));
    assert_eq!(
        calls[1].error_kind,
        Some(goat_store::CallErrorKind::Interrupted)
    );
    assert_eq!(turns[0].rounds[1].status, RoundStatus::Failed);
    assert_eq!(
        turns[0].rounds[1].failure_kind,
        Some(goat_store::RoundFailure::Interrupted)
    );
    assert_eq!(turns[0].status, TurnStatus::Failed);
    assert_eq!(store.interrupt_pending(&session).unwrap(), 0);
    assert_eq!(store.history(&session).unwrap(), before);
}

#[test]
fn unknown_sessions_are_an_error_not_an_empty_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    assert!(matches!(store.history("nope"), Err(StoreError::NoSession(id)) if id == "nope"));
    assert!(matches!(
        store.start_turn("nope", "x"),
        Err(StoreError::NoSession(_))
    ));
}

#[test]
fn stats_count_markup_recoveries_and_double_failures_per_model_and_engine() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let markup = |store: &mut Store, turn: i64| {
        let r = store.start_round(turn).unwrap();
        store
            .record_recovery(
                r,
                "<function=x></tool_call>",
                "",
                &Recovery {
                    tool: "x".into(),
                    markers: vec!["</tool_call>".into()],
                    span: None,
                    channel: MarkupChannel::Content,
                },
            )
            .unwrap();
    };
    let qwen = store
        .create_session(dir.path(), "http://a/v1", "qwen")
        .unwrap();
    // Turn 1: markup, then recovered.
    let t1 = store.start_turn(&qwen, "one").unwrap();
    markup(&mut store, t1);
    let r = store.start_round(t1).unwrap();
    store
        .finish_round_ok(
            r,
            &RoundOk {
                calls: vec![call("c", "x", "{}")],
                ..RoundOk::default()
            },
        )
        .unwrap();
    store.finish_turn(t1, TurnStatus::Completed, None).unwrap();
    // Turn 2: markup twice.
    let t2 = store.start_turn(&qwen, "two").unwrap();
    markup(&mut store, t2);
    let r = store.start_round(t2).unwrap();
    let failure = format!(
        "{} naming x (</tool_call>); no recovery left",
        goat_store::MARKUP_FAILURE_PREFIX
    );
    store
        .finish_round_failed(
            r,
            goat_store::RoundFailure::Markup,
            "<function=x></tool_call>",
            &failure,
        )
        .unwrap();
    store
        .finish_turn(t2, TurnStatus::Failed, Some("again"))
        .unwrap();
    // Another model, clean.
    let other = store
        .create_session(dir.path(), "http://b/v1", "llama")
        .unwrap();
    let t3 = store.start_turn(&other, "three").unwrap();
    let r = store.start_round(t3).unwrap();
    store.finish_round_ok(r, &RoundOk::default()).unwrap();
    store.finish_turn(t3, TurnStatus::Completed, None).unwrap();

    let stats = store.stats().unwrap();
    assert_eq!(stats.len(), 2);
    let q = &stats[0];
    assert_eq!(
        (q.model.as_str(), q.engine_url.as_str()),
        ("qwen", "http://a/v1")
    );
    assert_eq!((q.sessions, q.turns, q.rounds, q.tool_calls), (1, 2, 4, 1));
    assert_eq!(
        (
            q.markup_responses,
            q.recoveries,
            q.recovered,
            q.failed_twice
        ),
        (3, 2, 1, 1)
    );
    let l = &stats[1];
    assert_eq!(
        (
            l.model.as_str(),
            l.turns,
            l.rounds,
            l.markup_responses,
            l.recoveries
        ),
        ("llama", 1, 1, 0, 0)
    );
}

#[test]
fn a_version_1_store_gets_failure_kinds_from_its_failure_texts() {
    use goat_store::RoundFailure;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state/goat.db");
    let session;
    {
        let mut store = open(dir.path());
        session = store
            .create_session(dir.path(), "http://e/v1", "qwen")
            .unwrap();
        let turn = store.start_turn(&session, "go").unwrap();
        let markup = store.start_round(turn).unwrap();
        store
            .record_recovery(
                markup,
                "<tool_call>",
                "",
                &Recovery {
                    tool: "read_file".into(),
                    markers: vec!["<tool_call>".into()],
                    span: None,
                    channel: MarkupChannel::Content,
                },
            )
            .unwrap();
        let engine = store.start_round(turn).unwrap();
        store
            .finish_round_failed(engine, RoundFailure::Engine, "", "connection reset")
            .unwrap();
        let cancelled = store.start_round(turn).unwrap();
        store
            .finish_round_failed(cancelled, RoundFailure::Cancelled, "", "cancelled")
            .unwrap();
        let ok = store.start_round(turn).unwrap();
        store.finish_round_ok(ok, &RoundOk::default()).unwrap();
        // GOAT stops while a round streams.
        store.start_round(turn).unwrap();
    }
    store_at_version_1(&db);
    let mut store = open(dir.path());
    store.interrupt_pending(&session).unwrap();
    let kinds: Vec<_> = store.turns(&session).unwrap()[0]
        .rounds
        .iter()
        .map(|r| r.failure_kind)
        .collect();
    assert_eq!(
        kinds,
        [
            Some(RoundFailure::Markup),
            Some(RoundFailure::Engine),
            Some(RoundFailure::Cancelled),
            None,
            Some(RoundFailure::Interrupted),
        ]
    );
    assert_eq!(store.stats().unwrap()[0].markup_responses, 1);

    // A store left by a GOAT of schema 1 with a round it had marked
    // interrupted is classified by that text too.
    drop(store);
    store_at_version_1(&db);
    let store = open(dir.path());
    assert_eq!(
        store.turns(&session).unwrap()[0].rounds[4].failure_kind,
        Some(RoundFailure::Interrupted)
    );
}

/// Takes a store back to schema version 1, as GOAT left it before rounds
/// had a `failure_kind`.
fn store_at_version_1(db: &Path) {
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(
        "DROP TABLE attempts;
         DROP TABLE attempt_runs;
         ALTER TABLE sessions DROP COLUMN attempt_of;
         DROP TABLE turn_hook_runs;
         ALTER TABLE turns DROP COLUMN withheld_by;
         ALTER TABLE turns DROP COLUMN prompt_from_hook;
         DROP TABLE hook_runs;
         DROP TABLE call_refusals;
         DROP TABLE egress_decisions;
         DROP TABLE summaries;
         DROP TABLE file_changes;
         ALTER TABLE tool_calls DROP COLUMN exit_code;
         ALTER TABLE rounds DROP COLUMN cached_tokens;
         ALTER TABLE sessions DROP COLUMN elided_through_round;
         ALTER TABLE rounds DROP COLUMN markup_channel;
         ALTER TABLE rounds DROP COLUMN failure_kind; PRAGMA user_version = 1;",
    )
    .unwrap();
}

/// Takes a store back to schema version 2, as GOAT left it before markup
/// rounds said which channel held the call.
fn store_at_version_2(db: &Path) {
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(
        "DROP TABLE attempts;
         DROP TABLE attempt_runs;
         ALTER TABLE sessions DROP COLUMN attempt_of;
         DROP TABLE turn_hook_runs;
         ALTER TABLE turns DROP COLUMN withheld_by;
         ALTER TABLE turns DROP COLUMN prompt_from_hook;
         DROP TABLE hook_runs;
         DROP TABLE call_refusals;
         DROP TABLE egress_decisions;
         DROP TABLE summaries;
         DROP TABLE file_changes;
         ALTER TABLE tool_calls DROP COLUMN exit_code;
         ALTER TABLE rounds DROP COLUMN cached_tokens;
         ALTER TABLE sessions DROP COLUMN elided_through_round;
         ALTER TABLE rounds DROP COLUMN markup_channel; PRAGMA user_version = 2;",
    )
    .unwrap();
}

#[test]
fn markup_rounds_say_which_channel_held_the_call_and_stats_count_the_reasoning_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state/goat.db");
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen3.5")
        .unwrap();
    let turn = store.start_turn(&session, "go").unwrap();
    let old = store.start_round(turn).unwrap();
    let recovery = |channel| Recovery {
        tool: "read_file".into(),
        markers: vec!["<tool_call>".into()],
        span: None,
        channel,
    };
    store
        .record_recovery(old, "<tool_call>", "", &recovery(MarkupChannel::Content))
        .unwrap();
    drop(store);
    // A markup round stored before the column existed was found in the
    // content, the only channel GOAT then read.
    store_at_version_2(&db);
    let mut store = open(dir.path());
    let turn = store.start_turn(&session, "again").unwrap();
    let first = store.start_round(turn).unwrap();
    let call = "<tool_call>\n<function=read_file>\n</function>\n</tool_call>";
    store
        .record_recovery(first, "", call, &recovery(MarkupChannel::Reasoning))
        .unwrap();
    let second = store.start_round(turn).unwrap();
    store
        .finish_round_markup(second, "", call, MarkupChannel::Reasoning, "again")
        .unwrap();
    let turns = store.turns(&session).unwrap();
    let rounds: Vec<_> = turns
        .iter()
        .flat_map(|t| &t.rounds)
        .map(|r| {
            (
                r.failure_kind,
                r.markup_channel,
                r.content.as_str(),
                r.reasoning.as_str(),
            )
        })
        .collect();
    use goat_store::RoundFailure::Markup;
    assert_eq!(
        rounds,
        [
            (
                Some(Markup),
                Some(MarkupChannel::Content),
                "<tool_call>",
                ""
            ),
            (Some(Markup), Some(MarkupChannel::Reasoning), "", call),
            (Some(Markup), Some(MarkupChannel::Reasoning), "", call),
        ]
    );
    assert!(
        turns[1].rounds[0]
            .failure
            .as_deref()
            .is_some_and(|f| f.starts_with("unexecuted tool-call markup in the reasoning channel")),
        "{:?}",
        turns[1].rounds[0].failure
    );
    let stats = &store.stats().unwrap()[0];
    assert_eq!((stats.markup_responses, stats.markup_in_reasoning), (3, 2));
}
