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
    let (sandbox, tools) = shared_sandbox();
    direct_with(writes, sandbox, tools)
}

fn direct_with(
    writes: WritePolicy,
    sandbox: Arc<goat_sandbox::Sandbox>,
    tools: Vec<goat_sandbox::Tool>,
) -> (tempfile::TempDir, Arc<Mutex<Store>>, DirectCalls) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let mut store = Store::open(&dir.path().join("state/goat.db")).unwrap();
    let session = store.create_session(&ws, "mcp:stdio", "client").unwrap();
    let store = Arc::new(Mutex::new(store));
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

/// The built-ins and the test guest `dist/testing/FILE.wasm` loaded as the
/// plugin `label`, offered as `exposed`.
fn with_plugin(
    file: &str,
    label: &str,
    exposed: &str,
) -> (Arc<goat_sandbox::Sandbox>, Vec<goat_sandbox::Tool>) {
    let (sandbox, mut tools) = shared_sandbox();
    let wasm = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../plugins/dist/testing/{file}.wasm")),
    )
    .unwrap();
    tools.push(
        sandbox
            .load_plugin(label, &wasm)
            .unwrap()
            .exposed_as(exposed)
            .unwrap(),
    );
    (sandbox, tools)
}

/// The built-ins and the read-write hostile guest as the plugin `rw`.
fn with_writing_plugin() -> (Arc<goat_sandbox::Sandbox>, Vec<goat_sandbox::Tool>) {
    with_plugin("hostile_rw", "rw", "rw__hostile_rw")
}

/// Undoes every change the session recorded, which must all go back.
fn undo_session(store: &Arc<Mutex<Store>>, calls: &DirectCalls, ws: &std::path::Path) {
    let store = store.lock().unwrap();
    let changes = store.file_changes(calls.session_id()).unwrap();
    let refs: Vec<_> = changes.iter().collect();
    let (_, _, failed) = plan_undo(ws, &refs).unwrap().apply();
    assert!(failed.is_none(), "{failed:?}");
}

#[tokio::test]
async fn what_a_plugin_writes_is_kept_as_it_writes_and_undo_puts_it_back_byte_for_byte() {
    let (sandbox, tools) = with_writing_plugin();
    let (dir, store, calls) = direct_with(WritePolicy::AllowAll, sandbox, tools);
    let ws = dir.path().join("ws");
    // Bytes that are not text, and a mode of their own, to come back whole.
    let original: Vec<u8> = (0..=255u8).chain(b"before\n".iter().copied()).collect();
    std::fs::write(ws.join("a.txt"), &original).unwrap();
    std::fs::set_permissions(
        ws.join("a.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    for (path, content) in [("a.txt", "by the plugin"), ("sub/new.txt", "made")] {
        if path.contains('/') {
            let mkdir = serde_json::json!({"action": "mkdir", "path": "sub"}).to_string();
            calls
                .call("client", &call("rw__hostile_rw", &mkdir))
                .await
                .unwrap();
        }
        let args = serde_json::json!({"action": "write", "path": path, "content": content});
        let outcome = calls
            .call(
                "client called the plugin",
                &call("rw__hostile_rw", &args.to_string()),
            )
            .await
            .unwrap();
        assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.result);
        assert_eq!(outcome.changes.len(), 1, "{path}: {:?}", outcome.changes);
        assert_eq!(outcome.changes[0].path, path);
    }
    assert!(ws.join("sub").is_dir());
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "by the plugin"
    );

    // The store holds both, with a.txt's bytes before; undo puts both back.
    let changes = store
        .lock()
        .unwrap()
        .file_changes(calls.session_id())
        .unwrap();
    let paths: Vec<&str> = changes.iter().map(|c| c.change.path.as_str()).collect();
    // The directory it made is a change of its own, so undo removes it.
    assert_eq!(paths, ["a.txt", "sub", "sub/new.txt"]);
    assert_eq!(
        changes[0].change.before.as_deref(),
        Some(original.as_slice())
    );
    undo_session(&store, &calls, &ws);
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), original);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(ws.join("a.txt")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o7777, 0o640);
    assert!(!ws.join("sub").exists());
}

#[tokio::test]
async fn a_plugin_cannot_change_a_file_too_large_to_keep_and_says_so() {
    let (sandbox, tools) = with_writing_plugin();
    let (dir, _store, calls) = direct_with(WritePolicy::AllowAll, sandbox, tools);
    let ws = dir.path().join("ws");
    let big = vec![b'x'; 8 * 1024 * 1024 + 1];
    std::fs::write(ws.join("big.bin"), &big).unwrap();
    let args = serde_json::json!({"action": "write", "path": "big.bin", "content": "small"});
    let outcome = calls
        .call("client", &call("rw__hostile_rw", &args.to_string()))
        .await
        .unwrap();
    assert_ne!(outcome.status, CallStatus::Ok, "{}", outcome.result);
    assert_eq!(outcome.refusals.len(), 1, "{:?}", outcome.refusals);
    assert_eq!(outcome.refusals[0].by, goat_store::RefusedBy::Limit);
    assert_eq!(outcome.refusals[0].target.as_deref(), Some("big.bin"));
    assert!(
        outcome.refusals[0].reason.contains("cannot be kept"),
        "{}",
        outcome.refusals[0].reason
    );
    assert_eq!(std::fs::read(ws.join("big.bin")).unwrap(), big);
}

/// The writing test plugin as `pw`, beside the built-ins.
fn with_plugin_writer() -> (Arc<goat_sandbox::Sandbox>, Vec<goat_sandbox::Tool>) {
    with_plugin("plugin_writer", "pw", "pw__write")
}

#[tokio::test]
async fn a_plugin_may_not_rename_a_directory_but_its_file_renames_and_links_are_undone() {
    let (sandbox, tools) = with_plugin_writer();
    let (dir, store, calls) = direct_with(WritePolicy::AllowAll, sandbox, tools);
    let ws = dir.path().join("ws");
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/x"), "x\n").unwrap();
    let run = |args: serde_json::Value| {
        let calls = &calls;
        async move {
            calls
                .call("client", &call("pw__write", &args.to_string()))
                .await
                .unwrap()
        }
    };
    // A directory rename would move what is kept under names the
    // checkpoint does not cover: refused, nothing moved.
    let moved = run(serde_json::json!({"path": "src", "rename_to": "lib"})).await;
    assert_ne!(moved.status, CallStatus::Ok, "{}", moved.result);
    assert!(ws.join("src/x").exists() && !ws.join("lib").exists());
    // A file's rename is two changes, both kept.
    let renamed = run(serde_json::json!({"path": "a.txt", "rename_to": "b.txt"})).await;
    assert_eq!(renamed.status, CallStatus::Ok, "{}", renamed.result);
    let paths: Vec<&str> = renamed.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "b.txt"]);

    undo_session(&store, &calls, &ws);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
    assert!(!ws.join("b.txt").exists());
}

#[tokio::test]
async fn a_link_a_plugin_makes_is_recorded_as_a_link_and_undone() {
    let (sandbox, tools) = with_writing_plugin();
    let (dir, store, calls) = direct_with(WritePolicy::AllowAll, sandbox, tools);
    let ws = dir.path().join("ws");
    let args = serde_json::json!({"action": "symlink", "path": "l", "content": "a.txt"});
    let outcome = calls
        .call("client", &call("rw__hostile_rw", &args.to_string()))
        .await
        .unwrap();
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.result);
    assert_eq!(outcome.changes.len(), 1, "{:?}", outcome.changes);
    assert_eq!(outcome.changes[0].after_kind, goat_store::EntryKind::Link);
    undo_session(&store, &calls, &ws);
    assert!(std::fs::symlink_metadata(ws.join("l")).is_err());
}
