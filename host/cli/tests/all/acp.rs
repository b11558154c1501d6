//! `goat acp` driven by a real ACP client no one here wrote: the official
//! TypeScript SDK (`@agentclientprotocol/sdk`, pinned in .ci/run, which
//! installs it outside the repository and names it in GOAT_ACP_SDK), through
//! the small script `host/cli/tests/acp/client.mjs`. Without the SDK these
//! tests skip with a note, unless GOAT_ACP_SDK_REQUIRED=1.
//!
//! The scripted engine plays the model; the tests look at what reached the
//! disk, the store, and the engine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer, Step, ev_content, ev_done, ev_finish};
use serde_json::{Value, json};

use crate::{Env, text};

/// The SDK's directory, or `None` (said) when it is not installed.
pub(crate) fn sdk() -> Option<PathBuf> {
    let dir = std::env::var_os("GOAT_ACP_SDK").map(PathBuf::from);
    match dir {
        Some(d)
            if d.join("node_modules/@agentclientprotocol/sdk/package.json")
                .exists() =>
        {
            Some(d)
        }
        _ => {
            assert!(
                std::env::var_os("GOAT_ACP_SDK_REQUIRED").is_none(),
                "GOAT_ACP_SDK_REQUIRED is set but GOAT_ACP_SDK names no installed \
                 @agentclientprotocol/sdk"
            );
            eprintln!(
                "note: no ACP client SDK (set GOAT_ACP_SDK to a directory where \
                 @agentclientprotocol/sdk is installed; .ci/run does); skipped"
            );
            None
        }
    }
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.mjs")
}

/// `goat acp` with the scripted engine, as the client starts it.
fn agent(url: &str, flags: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> = [
        env!("CARGO_BIN_EXE_goat"),
        "acp",
        "--engine",
        url,
        "--model",
        "qwen",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    argv.extend(flags.iter().map(|s| (*s).to_owned()));
    argv
}

/// Runs the client with `scenario` (its `agent` and `cwd` filled in) and
/// returns its transcript.
pub(crate) async fn client(env: &Env, sdk: &Path, url: &str, mut scenario: Value) -> Vec<Value> {
    let flags: Vec<String> = scenario
        .get("flags")
        .and_then(Value::as_array)
        .map(|f| f.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    scenario["agent"] = json!(agent(url, &flags));
    if scenario.get("cwd").is_none() {
        scenario["cwd"] = json!(env.ws_str());
    }
    let mut cmd = Command::new("node");
    env.isolate(&mut cmd);
    cmd.arg(client_script()).arg(sdk).arg(scenario.to_string());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    assert_eq!(report["agentExit"], 0, "{report}\n{}", text(&out.stderr));
    report["transcript"].as_array().unwrap().clone()
}

/// The responses and errors, in order, by step.
pub(crate) fn answers(transcript: &[Value]) -> Vec<&Value> {
    transcript
        .iter()
        .filter(|t| t["type"] == "response" || t["type"] == "error")
        .collect()
}

/// The `session/update`s of one kind.
pub(crate) fn updates<'a>(transcript: &'a [Value], kind: &str) -> Vec<&'a Value> {
    transcript
        .iter()
        .filter(|t| t["type"] == "update" && t["params"]["update"]["sessionUpdate"] == kind)
        .map(|t| &t["params"]["update"])
        .collect()
}

pub(crate) fn agent_text(transcript: &[Value]) -> String {
    updates(transcript, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

pub(crate) fn prompt(text: &str) -> Value {
    json!({"op": "prompt", "text": text})
}

pub(crate) fn opening() -> Vec<Value> {
    vec![json!({"op": "initialize"}), json!({"op": "new"})]
}

pub(crate) fn steps(mut first: Vec<Value>, more: &[Value]) -> Value {
    first.extend(more.iter().cloned());
    Value::Array(first)
}

/// Starts a scripted engine with `replies` and runs the client through
/// `initialize`, `new` and one prompt of `text`, answering its permission
/// requests with `permissions` in order. The engine is returned for its
/// requests, with the transcript.
async fn prompted(
    env: &Env,
    sdk: &Path,
    replies: Vec<Reply>,
    text: &str,
    permissions: &[&str],
) -> (ScriptedServer, Vec<Value>) {
    let server = ScriptedServer::start(replies).await;
    let transcript = client(
        env,
        sdk,
        &server.base_url(),
        json!({"steps": steps(opening(), &[prompt(text)]), "permissions": permissions}),
    )
    .await;
    (server, transcript)
}

/// The store's calls: tool, status, decision.
fn stored_calls(env: &Env) -> Vec<(String, String, Option<String>)> {
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let mut stmt = db
        .prepare("SELECT tool, status, decision FROM tool_calls ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

pub(crate) fn edit_one_to_two() -> Reply {
    Reply::tool_call(
        "edit_file",
        r#"{"path": "a.txt", "old_string": "one", "new_string": "two"}"#,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_reads_a_file_and_streams_the_answer() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "alpha\n").unwrap();
    let (server, t) = prompted(
        &env,
        &sdk,
        vec![
            Reply::tool_call("read_file", r#"{"path": "a.txt"}"#),
            Reply::text("It says alpha."),
        ],
        "What is in a.txt?",
        &[],
    )
    .await;
    let answers = answers(&t);
    let init = &answers[0]["result"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    let new = &answers[1]["result"];
    assert_eq!(new["modes"]["currentModeId"], "ask", "{new}");
    let modes: Vec<&str> = new["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["ask", "accept-edits", "read-only"]);
    assert_eq!(answers[2]["result"]["stopReason"], "end_turn", "{t:?}");

    let call = updates(&t, "tool_call");
    assert_eq!(call.len(), 1, "{t:?}");
    assert_eq!(call[0]["kind"], "read");
    assert_eq!(
        call[0]["locations"][0]["path"],
        env.ws.join("a.txt").to_str().unwrap()
    );
    let done = updates(&t, "tool_call_update");
    assert_eq!(done[0]["toolCallId"], call[0]["toolCallId"]);
    assert_eq!(done[0]["status"], "completed");
    assert!(
        done[0]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("alpha"),
        "{done:?}"
    );
    assert_eq!(agent_text(&t), "It says alpha.");
    // The engine saw the file through the Pen, not through the client.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("alpha"));
    assert!(
        !t.iter().any(|e| e["type"] == "permission"),
        "a read asks nothing: {t:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_approved_in_the_editor_lands_on_disk() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let (_server, t) = prompted(
        &env,
        &sdk,
        vec![edit_one_to_two(), Reply::text("Done.")],
        "Make it two",
        &["allow-once"],
    )
    .await;
    assert_eq!(answers(&t)[2]["result"]["stopReason"], "end_turn", "{t:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "two\n"
    );
    // The edit was shown whole, before and after.
    let call = updates(&t, "tool_call");
    assert_eq!(call[0]["kind"], "edit");
    let diff = &call[0]["content"][0];
    assert_eq!(diff["type"], "diff", "{diff}");
    assert_eq!(diff["oldText"], "one\n");
    assert_eq!(diff["newText"], "two\n");
    assert_eq!(diff["path"], env.ws.join("a.txt").to_str().unwrap());
    // The terminal's answers, about this call.
    let asked: Vec<&Value> = t.iter().filter(|e| e["type"] == "permission").collect();
    assert_eq!(asked.len(), 1);
    let options: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow-once", "allow-session", "allow-always", "reject"]
    );
    assert_eq!(
        asked[0]["params"]["toolCall"]["toolCallId"],
        call[0]["toolCallId"]
    );
    assert_eq!(
        stored_calls(&env),
        [(
            "edit_file".to_owned(),
            "ok".to_owned(),
            Some("ask-allowed".to_owned())
        )]
    );
}

/// Rejected, or answered with an option GOAT never offered: the file is
/// untouched and the store records a denial.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_rejected_or_answered_with_an_unknown_option_is_denied() {
    let Some(sdk) = sdk() else { return };
    for answer in ["reject", "allow", "allow-everything"] {
        let env = Env::new();
        std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
        let (_server, t) = prompted(
            &env,
            &sdk,
            vec![edit_one_to_two(), Reply::text("Not done.")],
            "Make it two",
            &[answer],
        )
        .await;
        assert_eq!(answers(&t)[2]["result"]["stopReason"], "end_turn", "{t:?}");
        assert_eq!(
            std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
            "one\n",
            "{answer}"
        );
        assert_eq!(
            stored_calls(&env),
            [(
                "edit_file".to_owned(),
                "denied".to_owned(),
                Some("ask-denied".to_owned())
            )],
            "{answer}"
        );
        let done = updates(&t, "tool_call_update");
        assert_eq!(done[0]["status"], "failed", "{answer}");
    }
}

/// A command, approved in the editor, runs in GOAT's sandbox (never the
/// editor's terminal); the editor sees its kind, its exit code and its
/// output.
#[tokio::test(flavor = "multi_thread")]
async fn a_command_approved_in_the_editor_shows_its_exit_code_and_output() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let (_server, t) = prompted(
        &env,
        &sdk,
        vec![
            Reply::tool_call(
                "run_command",
                r#"{"command": "echo hello-from-goat; exit 3"}"#,
            ),
            Reply::text("It exited 3."),
        ],
        "Run it",
        &["allow-once"],
    )
    .await;
    assert_eq!(answers(&t)[2]["result"]["stopReason"], "end_turn", "{t:?}");
    let call = updates(&t, "tool_call");
    assert_eq!(call[0]["kind"], "execute", "{t:?}");
    assert!(
        call[0]["title"]
            .as_str()
            .unwrap()
            .contains("echo hello-from-goat"),
        "{t:?}"
    );
    let done = updates(&t, "tool_call_update");
    let shown = done[0]["content"][0]["content"]["text"].as_str().unwrap();
    assert!(shown.starts_with("exit code 3\n"), "{shown}");
    assert!(shown.contains("hello-from-goat"), "{shown}");
    assert_eq!(done[0]["rawOutput"]["exit_code"], 3, "{done:?}");
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let code: i64 = db
        .query_row("SELECT exit_code FROM tool_calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(code, 3);
}

/// A deny rule decides before anyone is asked: the editor never sees the
/// call as something it could allow.
#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_is_never_put_to_the_editor() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let out = env.run(&["permissions", "deny", "*", "a.txt"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_server, t) = prompted(
        &env,
        &sdk,
        vec![edit_one_to_two(), Reply::text("Denied.")],
        "Make it two",
        &["allow-once"],
    )
    .await;
    assert!(
        !t.iter().any(|e| e["type"] == "permission"),
        "asked about a denied call: {t:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        stored_calls(&env),
        [(
            "edit_file".to_owned(),
            "denied".to_owned(),
            Some("deny".to_owned())
        )]
    );
}

/// A refusal the gate did not make reaches the editor too (issue 36): a
/// write into a denied directory through a link is refused by the fence,
/// and the editor sees the call failed with the refusal named first, as
/// a headless run counts it.
#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_by_the_fence_is_a_failed_call_for_the_editor() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret", "--write"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::os::unix::fs::symlink("secret", env.ws.join("door")).unwrap();
    let (_server, t) = prompted(
        &env,
        &sdk,
        vec![
            Reply::tool_call("write_file", r#"{"path": "door/a.txt", "content": "x\n"}"#),
            Reply::text("Refused."),
        ],
        "Write it",
        &["allow-once"],
    )
    .await;
    assert!(!env.ws.join("secret/a.txt").exists());
    let done = updates(&t, "tool_call_update");
    let last = done.last().unwrap();
    assert_eq!(last["status"], "failed", "{t:?}");
    let said = last["content"].to_string();
    assert!(said.contains("refused (fence)"), "{said}");
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let by: String = db
        .query_row("SELECT refused_by FROM call_refusals", [], |r| r.get(0))
        .unwrap();
    assert_eq!(by, "fence");
}

/// session/set_mode switches GOAT's approval mode: in accept-edits the edit
/// lands without a question; a mode GOAT does not have is an error.
#[tokio::test(flavor = "multi_thread")]
async fn set_mode_switches_the_approval_mode() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let server = ScriptedServer::start(vec![edit_one_to_two(), Reply::text("Done.")]).await;
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": steps(opening(), &[
            json!({"op": "set_mode", "modeId": "yolo"}),
            json!({"op": "set_mode", "modeId": "accept-edits"}),
            prompt("Make it two"),
        ])}),
    )
    .await;
    let a = answers(&t);
    assert_eq!(a[2]["type"], "error", "{t:?}");
    assert_eq!(a[3]["type"], "response", "{t:?}");
    assert_eq!(a[4]["result"]["stopReason"], "end_turn", "{t:?}");
    assert!(!t.iter().any(|e| e["type"] == "permission"), "{t:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "two\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_mid_turn_ends_it_with_cancelled() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let (server, t) = prompted(
        &env,
        &sdk,
        vec![edit_one_to_two(), Reply::text("Never asked.")],
        "Make it two",
        &["cancel-turn"],
    )
    .await;
    assert_eq!(answers(&t)[2]["result"]["stopReason"], "cancelled", "{t:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let status: String = db
        .query_row("SELECT status FROM turns", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "cancelled");
    // The turn stopped: the engine was not asked again.
    assert_eq!(server.requests().len(), 1);
}

/// The editor's stop button while the engine is still streaming: the turn
/// ends at once with `cancelled`, not when the engine would have finished.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_while_the_engine_streams_ends_the_turn_at_once() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let server = ScriptedServer::start(vec![Reply::sse_steps(vec![
        Step::Bytes(ev_content("Working on it. ").into_bytes()),
        Step::Sleep(Duration::from_secs(30)),
        Step::Bytes(ev_content("Done.").into_bytes()),
        Step::Bytes(ev_finish("stop").into_bytes()),
        Step::Bytes(ev_done().into_bytes()),
    ])])
    .await;
    let started = std::time::Instant::now();
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": steps(opening(), &[json!({
            "op": "prompt", "text": "Work", "cancelOnUpdate": "agent_message_chunk",
        })])}),
    )
    .await;
    assert_eq!(answers(&t)[2]["result"]["stopReason"], "cancelled", "{t:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the turn waited for the engine: {:?}",
        started.elapsed()
    );
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let status: String = db
        .query_row("SELECT status FROM turns", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn session_load_replays_and_continues_the_stored_session() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let (server, first) = prompted(
        &env,
        &sdk,
        vec![Reply::text("Hi there."), Reply::text("Again.")],
        "Say hi",
        &[],
    )
    .await;
    let id = answers(&first)[1]["result"]["sessionId"].clone();
    let second = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": [
            {"op": "initialize"},
            {"op": "load", "sessionId": id},
            prompt("Once more"),
        ]}),
    )
    .await;
    let a = answers(&second);
    assert_eq!(a[1]["type"], "response", "{second:?}");
    assert_eq!(a[2]["result"]["stopReason"], "end_turn", "{second:?}");
    // Replayed before the load answered: the request, then the answer.
    let load_at = second
        .iter()
        .position(|e| e["type"] == "response" && e["op"] == "load")
        .unwrap();
    // And `/undo` advertised, before the answer too (issue 36).
    let commands = "available_commands_update";
    let advertised = second[..load_at]
        .iter()
        .filter(|e| e["params"]["update"]["sessionUpdate"] == commands)
        .count();
    assert_eq!(advertised, 1, "{second:?}");
    let replayed: Vec<(&str, &str)> = second[..load_at]
        .iter()
        .filter(|e| e["type"] == "update" && e["params"]["update"]["sessionUpdate"] != commands)
        .map(|e| {
            (
                e["params"]["update"]["sessionUpdate"].as_str().unwrap(),
                e["params"]["update"]["content"]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user_message_chunk", "Say hi"),
            ("agent_message_chunk", "Hi there.")
        ]
    );
    // The engine's next request carries the earlier conversation.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let said: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("user", "Say hi"),
            ("assistant", "Hi there."),
            ("user", "Once more")
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_reaches_the_engine_before_the_first_prompt() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let server = ScriptedServer::start(vec![Reply::text("unused")]).await;
    let t = client(&env, &sdk, &server.base_url(), json!({"steps": opening()})).await;
    assert!(answers(&t)[1]["result"]["sessionId"].is_string(), "{t:?}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(server.probes().is_empty(), "{:?}", server.probes());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_cwd_or_mcp_servers_are_refused_and_the_agent_goes_on() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let server = ScriptedServer::start(vec![Reply::text("unused")]).await;
    // The store would land inside this one.
    let around_store = env.db.parent().unwrap().to_str().unwrap().to_owned();
    std::fs::create_dir_all(&around_store).unwrap();
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": [
            {"op": "initialize"},
            {"op": "new", "cwd": "relative/dir"},
            {"op": "new", "cwd": env.root.join("nowhere").to_str().unwrap()},
            {"op": "new", "cwd": around_store},
            {"op": "new", "cwd": env.root.to_str().unwrap()},
            {"op": "new", "mcpServers": [{"name": "x", "command": "/bin/true", "args": [], "env": []}]},
            {"op": "new"},
        ]}),
    )
    .await;
    let a = answers(&t);
    let error = |i: usize| -> String {
        assert_eq!(a[i]["type"], "error", "step {i}: {t:?}");
        a[i]["error"]["message"].as_str().unwrap().to_owned()
    };
    assert!(error(1).contains("not an absolute path"), "{}", error(1));
    assert!(error(2).contains("nowhere"), "{}", error(2));
    assert!(error(3).contains("inside the workspace"), "{}", error(3));
    assert!(error(4).contains("inside the workspace"), "{}", error(4));
    assert!(error(5).contains("MCP"), "{}", error(5));
    // Still serving, and a good cwd works.
    assert!(a[6]["result"]["sessionId"].is_string(), "{t:?}");
    // Nothing was made in the refused places, and only one session exists.
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let sessions: i64 = db
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sessions, 1);
}

/// How a turn ended reaches the editor: the round cap as
/// `max_turn_requests`, an engine failure as a JSON-RPC error naming the
/// outcome (not `refusal`: GOAT keeps the turn).
#[tokio::test(flavor = "multi_thread")]
async fn the_round_cap_and_an_engine_failure_answer_as_the_table_says() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "alpha\n").unwrap();
    let server = ScriptedServer::start(vec![
        Reply::tool_call("read_file", r#"{"path": "a.txt"}"#),
        Reply::error(
            400,
            "application/json",
            r#"{"error": {"message": "bad request"}}"#,
        ),
    ])
    .await;
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({
            "flags": ["--max-rounds", "1"],
            "steps": steps(opening(), &[prompt("Read it"), prompt("Again")]),
        }),
    )
    .await;
    let a = answers(&t);
    assert_eq!(a[2]["result"]["stopReason"], "max_turn_requests", "{t:?}");
    assert_eq!(a[3]["type"], "error", "{t:?}");
    assert_eq!(a[3]["error"]["code"], -32603, "{t:?}");
    assert_eq!(a[3]["error"]["data"]["outcome"], "engine_failed", "{t:?}");
}

/// `goat acp --workspace DIR` pins the one directory a client may use.
#[tokio::test(flavor = "multi_thread")]
async fn with_workspace_given_another_cwd_is_refused() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let elsewhere = env.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let server = ScriptedServer::start(vec![Reply::text("unused")]).await;
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({
            "flags": ["--workspace", env.ws_str()],
            "steps": [
                {"op": "initialize"},
                {"op": "new", "cwd": elsewhere.to_str().unwrap()},
                {"op": "new"},
            ],
        }),
    )
    .await;
    let a = answers(&t);
    assert_eq!(a[1]["type"], "error", "{t:?}");
    let message = a[1]["error"]["message"].as_str().unwrap();
    assert!(message.contains("another directory"), "{message}");
    assert!(a[2]["result"]["sessionId"].is_string(), "{t:?}");
}

/// The editor's stop button while a command runs: the command is stopped
/// at once (ADR-0087), not waited for to its timeout, and the call is
/// stored as cancelled.
#[tokio::test(flavor = "multi_thread")]
async fn the_editors_stop_button_stops_a_running_command() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    let out = env.run(&["permissions", "allow", "run_command", "--command", "sleep"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without the interrupt the turn would end at the 600 s timeout.
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "run_command",
            json!({"command": "sleep 3600", "timeout_secs": 600}),
        ),
        Reply::text("Never asked."),
    ])
    .await;
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": steps(opening(), &[json!({
            "op": "prompt", "text": "Build it", "cancelOnUpdate": "tool_call",
        })])}),
    )
    .await;
    assert_eq!(answers(&t)[2]["result"]["stopReason"], "cancelled", "{t:?}");
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let (status, kind, result): (String, String, String) = db
        .query_row(
            "SELECT status, error_kind, result FROM tool_calls",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (status.as_str(), kind.as_str()),
        ("error", "cancelled"),
        "{result}"
    );
    assert!(result.starts_with("cancelled with the turn"), "{result}");
    assert_eq!(server.requests().len(), 1);
}
