//! Direct calls (`DirectCalls`, for `goat mcp serve`): a call no model
//! made is routed down the one road and recorded as a chat's is, a turn
//! of one round of one call with its decision, result and checkpoint, so
//! undo can put it back.

use std::sync::{Arc, Mutex};

use goat_gate::{Interactive, WritePolicy};
use goat_router::checkpoint::plan_undo;
use goat_router::{AppToolRouter, DirectCalls, RouterConfig};
use goat_store::{CallDecision, CallStatus, RoundStatus, Store, TurnStatus};

use crate::shepherd::shared_sandbox;

fn call(name: &str, args: &str) -> goat_engine::ToolCall {
    goat_engine::ToolCall {
        index: 0,
        id: "mcp-1".into(),
        id_generated: true,
        name: name.into(),
        raw_arguments: args.into(),
        arguments: goat_engine::parse_arguments(args),
    }
}

fn direct(writes: WritePolicy) -> (tempfile::TempDir, Arc<Mutex<Store>>, DirectCalls) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let mut store = Store::open(&dir.path().join("state/goat.db")).unwrap();
    let session = store.create_session(&ws, "mcp:stdio", "client").unwrap();
    let store = Arc::new(Mutex::new(store));
    let (sandbox, tools) = shared_sandbox();
    let router = AppToolRouter::new(
        sandbox,
        tools,
        RouterConfig {
            workspace: ws,
            permissions_db: dir.path().join("state/permissions.db"),
            session_id: session.clone(),
            interactive: Interactive::No,
            writes,
        },
    );
    let calls = DirectCalls::new(router, store.clone(), session);
    (dir, store, calls)
}

#[tokio::test]
async fn a_direct_write_is_a_recorded_turn_that_undo_can_put_back() {
    let (dir, store, calls) = direct(WritePolicy::AllowAll);
    let ws = dir.path().join("ws");
    let outcome = calls
        .call(
            "client called write_file over MCP",
            &call("write_file", r#"{"path": "a.txt", "content": "after\n"}"#),
        )
        .await
        .unwrap();
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.result);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "after\n"
    );

    let store = store.lock().unwrap();
    let turns = store.turns(calls.session_id()).unwrap();
    assert_eq!(turns.len(), 1);
    let turn = &turns[0];
    assert_eq!(turn.prompt, "client called write_file over MCP");
    assert_eq!(turn.status, TurnStatus::Completed);
    assert_eq!(turn.rounds.len(), 1);
    assert_eq!(turn.rounds[0].status, RoundStatus::Ok);
    let recorded = &turn.rounds[0].calls;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].status, CallStatus::Ok);
    assert_eq!(recorded[0].decision, Some(CallDecision::Allow));

    // The checkpoint is there, and puts the file back.
    let changes = store.file_changes(calls.session_id()).unwrap();
    assert_eq!(changes.len(), 1);
    let refs: Vec<_> = changes.iter().collect();
    let (_, _, failed) = plan_undo(&ws, &refs).unwrap().apply();
    assert!(failed.is_none(), "{failed:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
}

#[tokio::test]
async fn a_direct_write_no_rule_decides_is_denied_and_recorded() {
    let (dir, store, calls) = direct(WritePolicy::Default);
    let outcome = calls
        .call(
            "client called write_file over MCP",
            &call("write_file", r#"{"path": "a.txt", "content": "after\n"}"#),
        )
        .await
        .unwrap();
    assert_eq!(outcome.status, CallStatus::Denied);
    assert!(
        outcome.result.contains("--allow-writes"),
        "{}",
        outcome.result
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(),
        "before\n"
    );
    let store = store.lock().unwrap();
    let turns = store.turns(calls.session_id()).unwrap();
    assert_eq!(turns[0].rounds[0].calls[0].status, CallStatus::Denied);
}
