//! `goat run --output jsonl` read the way an integrator reads it: every
//! line parses and validates against the committed schema
//! (docs/schema/events.schema.json), checked by a JSON Schema validator
//! (the `jsonschema` package on PyPI, which `.ci/run` installs; without it
//! these tests skip with a note, unless GOAT_JSONSCHEMA_REQUIRED=1), the
//! events come in order, and each outcome has its own exit code.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer, Step, ev_content};
use serde_json::{Value, json};

use crate::{Env, GoatRun, malformed_write, text};

/// The committed schema.
fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/events.schema.json")
}

/// The Python with `jsonschema`, or `None` (said) when there is none.
fn validator() -> Option<PathBuf> {
    let python = std::env::var_os("GOAT_JSONSCHEMA_PYTHON").map(PathBuf::from);
    match python {
        Some(p) if p.exists() => Some(p),
        _ => {
            assert!(
                std::env::var_os("GOAT_JSONSCHEMA_REQUIRED").is_none(),
                "GOAT_JSONSCHEMA_REQUIRED is set but GOAT_JSONSCHEMA_PYTHON names no Python"
            );
            eprintln!(
                "note: no JSON Schema validator (set GOAT_JSONSCHEMA_PYTHON to a Python with the \
                 jsonschema package; .ci/run does); the lines are checked without it"
            );
            None
        }
    }
}

/// Validates each line with the `jsonschema` package, as a reader of the
/// stream would; panics naming every line that does not validate.
pub(crate) fn validate(lines: &[Value]) {
    let Some(python) = validator() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("events.jsonl");
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, body).unwrap();
    let script = r#"
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
bad = 0
for n, line in enumerate(open(sys.argv[2]), 1):
    for e in v.iter_errors(json.loads(line)):
        bad += 1
        print(f"line {n}: {e.message} at {list(e.absolute_path)}")
sys.exit(1 if bad else 0)
"#;
    let out = Command::new(python)
        .args(["-c", script])
        .arg(schema_path())
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lines do not validate against the committed schema:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Stdout's lines, each parsed (a line that is not JSON fails the test).
pub(crate) fn lines(stdout: &[u8]) -> Vec<Value> {
    let all = text(stdout);
    assert!(all.is_empty() || all.ends_with('\n'), "last line unended");
    all.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn types(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["type"].as_str().unwrap()).collect()
}

/// The stream's invariants: numbered from 0 without gaps, one session,
/// `session.started` first and the turn's end last, `turn` on the turn's
/// events; validated. Returns the last line (the turn's end).
pub(crate) fn check_stream(lines: &[Value]) -> &Value {
    validate(lines);
    assert!(!lines.is_empty());
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], json!(i), "{line}");
        assert_eq!(line["session_id"], lines[0]["session_id"], "{line}");
    }
    assert_eq!(lines[0]["type"], "session.started", "{lines:?}");
    assert_eq!(lines[0]["schema_version"], goat_session::SCHEMA_VERSION);
    assert_eq!(lines[1]["type"], "turn.started", "{lines:?}");
    for line in &lines[1..] {
        assert_eq!(line["turn"], 1, "{line}");
    }
    let last = lines.last().unwrap();
    assert!(
        matches!(
            last["type"].as_str(),
            Some("turn.completed" | "turn.failed")
        ),
        "{last}"
    );
    last
}

/// A `goat run --output jsonl` with these replies and flags.
async fn jsonl_run(replies: Vec<Reply>, flags: &[&str], prompt: &str) -> GoatRun {
    let mut run = GoatRun::builder()
        .replies(replies)
        .arg("--output")
        .arg("jsonl");
    for flag in flags {
        run = run.arg(*flag);
    }
    run.run(prompt).await
}

fn write_hello() -> Reply {
    Reply::tool_call(
        "write_file",
        r#"{"path": "notes/hello.txt", "content": "hello\n"}"#,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_completed_turn_streams_its_events_in_order_and_exits_zero() {
    let run = jsonl_run(
        vec![write_hello(), Reply::text("Wrote it.")],
        &["--allow-writes"],
        "Create notes/hello.txt",
    )
    .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let lines = lines(&run.out.stdout);
    let end = check_stream(&lines);
    assert_eq!(
        types(&lines),
        [
            "session.started",
            "turn.started",
            "round.started",
            "tool_call.started",
            "tool_call.completed",
            "round.started",
            // The scripted engine says no window anywhere GOAT asks
            // (issue 38): said once, when the turn has gone through.
            "warning",
            "message.completed",
            "turn.completed",
        ]
    );
    assert_eq!(lines[6]["code"], "window_not_said", "{}", lines[6]);
    assert!(
        lines[6]["message"]
            .as_str()
            .unwrap()
            .contains("GOAT assumes 32768 tokens"),
        "{}",
        lines[6]
    );
    let started = &lines[0];
    assert_eq!(started["model"], "qwen");
    assert_eq!(started["mode"], "ask");
    assert_eq!(started["resumed"], false);
    assert_eq!(started["workspace"], run.env.ws_str());
    let tools = started["tools"].as_array().unwrap();
    assert!(
        tools.contains(&json!({"name": "write_file", "access": "write", "source": "builtin"})),
        "{tools:?}"
    );
    assert!(
        tools.contains(&json!({"name": "read_file", "access": "read", "source": "builtin"})),
        "{tools:?}"
    );
    let call = &lines[4];
    assert_eq!(call["tool"], "write_file");
    assert_eq!(call["status"], "ok");
    assert_eq!(call["decision"], "allow");
    assert_eq!(call["files_changed"], json!(["notes/hello.txt"]));
    assert_eq!(lines[7]["text"], "Wrote it.");
    assert_eq!(end["outcome"], "completed");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(end["answer"], "Wrote it.");
    assert_eq!(end["rounds"], 2);
    assert_eq!(end["denials"], json!([]));
    assert_eq!(end["files_changed"], json!(["notes/hello.txt"]));
    assert_eq!(run.read("notes/hello.txt"), "hello\n");
    // The session on every line is the one the store has.
    assert_eq!(run.sessions()[0]["id"], lines[0]["session_id"]);
    // Diagnostics stay on stderr; the answer is only in the events.
    assert!(run.stderr().contains("write_file("), "{}", run.stderr());
}

#[tokio::test(flavor = "multi_thread")]
async fn deltas_come_only_when_asked() {
    let quiet = jsonl_run(vec![Reply::text("Hello there.")], &[], "Hi").await;
    assert!(!types(&lines(&quiet.out.stdout)).contains(&"message.delta"));
    let run = jsonl_run(
        vec![Reply::builder().text("Hello ").text("there.").build()],
        &["--stream-deltas"],
        "Hi",
    )
    .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let lines = lines(&run.out.stdout);
    check_stream(&lines);
    let deltas: String = lines
        .iter()
        .filter(|l| l["type"] == "message.delta")
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello there.");
    // The whole message follows its deltas.
    let whole = lines.iter().position(|l| l["type"] == "message.completed");
    let last_delta = lines.iter().rposition(|l| l["type"] == "message.delta");
    assert!(whole > last_delta, "{lines:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_write_is_exit_three_unless_denials_are_allowed() {
    for (flags, code) in [
        (&["--mode", "read-only"][..], 3),
        (&["--mode", "read-only", "--allow-denials"][..], 0),
    ] {
        let run = jsonl_run(
            vec![write_hello(), Reply::text("Could not.")],
            flags,
            "Write",
        )
        .await;
        assert_eq!(run.code(), Some(code), "{flags:?}: {}", run.stderr());
        let lines = lines(&run.out.stdout);
        let end = check_stream(&lines);
        assert_eq!(end["type"], "turn.completed");
        assert_eq!(end["outcome"], "completed_with_denials");
        assert_eq!(end["exit_code"], code);
        let denial = &end["denials"][0];
        assert_eq!(denial["tool"], "write_file");
        assert_eq!(denial["targets"], json!(["notes/hello.txt"]));
        assert_eq!(denial["needs_approval"], false);
        assert!(denial["reason"].as_str().unwrap().starts_with("denied:"));
        assert!(!run.exists("notes"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_no_rule_decides_with_no_terminal_is_exit_four() {
    let run = jsonl_run(
        vec![write_hello(), Reply::text("I could not.")],
        &[],
        "Write",
    )
    .await;
    assert_eq!(run.code(), Some(4), "{}", run.stderr());
    let lines = lines(&run.out.stdout);
    let end = check_stream(&lines);
    assert_eq!(end["outcome"], "needs_approval");
    assert_eq!(end["denials"][0]["needs_approval"], true);
    let call = lines
        .iter()
        .find(|l| l["type"] == "tool_call.completed")
        .unwrap();
    assert_eq!(call["error_kind"], "needs-approval");
    assert!(!run.exists("notes"));
    // The same outcome and code in every output mode.
    let json = GoatRun::builder()
        .replies([write_hello(), Reply::text("I could not.")])
        .json()
        .run("Write")
        .await;
    assert_eq!(json.code(), Some(4), "{}", json.stderr());
    assert_eq!(json.summary()["outcome"], "needs_approval");
    let plain = GoatRun::builder()
        .replies([write_hello(), Reply::text("I could not.")])
        .run("Write")
        .await;
    assert_eq!(plain.code(), Some(4), "{}", plain.stderr());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_round_cap_is_exit_five() {
    let run = jsonl_run(
        vec![Reply::tool_call("list_directory", r#"{"path": "."}"#)],
        &["--max-rounds", "1"],
        "Look",
    )
    .await;
    assert_eq!(run.code(), Some(5), "{}", run.stderr());
    let lines = lines(&run.out.stdout);
    let end = check_stream(&lines);
    assert_eq!(end["type"], "turn.failed");
    assert_eq!(end["outcome"], "round_cap");
    assert_eq!(end["answer"], Value::Null);
    assert!(end["error"].as_str().unwrap().contains("cap of 1 rounds"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_over_the_window_is_exit_six_and_nothing_is_sent() {
    let prompt = "word ".repeat(8000);
    let run = jsonl_run(
        vec![Reply::text("never")],
        &["--context-tokens", "1024"],
        &prompt,
    )
    .await;
    assert_eq!(run.code(), Some(6), "{}", run.stderr());
    let end = check_stream(&lines(&run.out.stdout)).clone();
    assert_eq!(end["outcome"], "context_exhausted");
    assert!(run.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_failure_is_exit_seven() {
    let run = jsonl_run(
        vec![Reply::error(500, "text/plain", "the engine broke")],
        &[],
        "Hi",
    )
    .await;
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    let lines = lines(&run.out.stdout);
    let end = check_stream(&lines);
    assert_eq!(end["outcome"], "engine_failed");
    assert!(end["error"].as_str().unwrap().contains("500"), "{end}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_malformed_answer_is_exit_eight() {
    let run = jsonl_run(vec![malformed_write(), malformed_write()], &[], "Write").await;
    assert_eq!(run.code(), Some(8), "{}", run.stderr());
    let lines = lines(&run.out.stdout);
    let end = check_stream(&lines);
    assert_eq!(end["outcome"], "markup_not_recovered");
    let recovery = lines.iter().find(|l| l["type"] == "recovery").unwrap();
    assert_eq!(recovery["tool"], "write_file");
    assert_eq!(recovery["round"], 1);
    assert!(!run.exists("hello.txt"));
}

/// An engine that starts answering and then goes quiet for a minute.
async fn stalled() -> ScriptedServer {
    ScriptedServer::start(vec![Reply::sse_steps(vec![
        Step::Bytes(ev_content("Thinking").into_bytes()),
        Step::Sleep(Duration::from_secs(60)),
    ])])
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_is_exit_130_and_the_stream_ends_with_the_turn() {
    stopped_by("-INT").await;
}

/// A harness's timeout sends SIGTERM: the turn is cancelled and recorded,
/// and the stream still ends with its outcome.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_cancels_the_turn_like_ctrl_c() {
    let (env, lines) = stopped_by("-TERM").await;
    let store = goat_store::Store::open(&env.db).unwrap();
    let session = lines[0]["session_id"].as_str().unwrap();
    let turns = store.turns(session).unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].status, goat_store::TurnStatus::Cancelled);
}

/// Runs a turn against an engine that stalls, sends `signal` once the
/// request is in, and checks the run ends as cancelled, exit 130.
async fn stopped_by(signal: &str) -> (Env, Vec<Value>) {
    let env = Env::new();
    let server = stalled().await;
    let child = env
        .cmd()
        .args(["run", "--engine", &server.base_url(), "--model", "q"])
        .args(["--output", "jsonl", "Take your time"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_for_requests(1, Duration::from_secs(30)).await);
    let killed = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    let end = check_stream(&lines);
    assert_eq!(end["type"], "turn.failed");
    assert_eq!(end["outcome"], "cancelled");
    (env, lines)
}

/// Issue 36: SIGTERM at any instant of a run whose compiled-code cache is
/// cold (the store made, the tools loaded, the engine asked) ends it as
/// cancelled, exit 130, with a last line in the stream and in
/// `events.jsonl`, never the default death (143, nothing said).
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_at_any_instant_of_a_cold_start_is_exit_130_with_a_last_line() {
    for after in [100, 1000, 5000].map(Duration::from_millis) {
        let env = Env::new();
        let server = stalled().await;
        let logs = env.root.join("logs");
        let child = env
            .cmd()
            .env("GOAT_CACHE_DIR", env.root.join("cold-cache"))
            .args(["run", "--engine", &server.base_url(), "--model", "q"])
            .args(["--output", "jsonl", "--logs-dir"])
            .arg(&logs)
            .arg("Take your time")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::sleep(after).await;
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(130),
            "after {after:?}: {}",
            text(&out.stderr)
        );
        let lines = lines(&out.stdout);
        validate(&lines);
        let last = lines
            .last()
            .unwrap_or_else(|| panic!("after {after:?}: no line"));
        assert_eq!(last["outcome"], "cancelled", "after {after:?}: {last}");
        assert_eq!(last["exit_code"], 130, "after {after:?}: {last}");
        let logged = std::fs::read_to_string(logs.join("events.jsonl")).unwrap();
        let logged: Value = serde_json::from_str(logged.lines().last().unwrap()).unwrap();
        assert_eq!(&logged, last, "after {after:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wall_budget_is_exit_nine() {
    let env = Env::new();
    let server = stalled().await;
    let out = env
        .run_async(&[
            "run",
            "--engine",
            &server.base_url(),
            "--model",
            "q",
            "--output",
            "jsonl",
            "--max-wall-secs",
            "1",
            "Take your time",
        ])
        .await;
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    let end = check_stream(&lines);
    assert_eq!(end["outcome"], "budget_exhausted");
    assert!(
        end["error"].as_str().unwrap().contains("--max-wall-secs 1"),
        "{end}"
    );
    assert_eq!(lines[0]["budget"]["max_wall_secs"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_budget_stops_before_another_round() {
    let run = jsonl_run(
        vec![
            Reply::builder()
                .tool_call("list_directory", r#"{"path": "."}"#)
                .usage(900, 100)
                .build(),
            Reply::text("never asked"),
        ],
        &["--max-total-tokens", "1000"],
        "Look",
    )
    .await;
    assert_eq!(run.code(), Some(9), "{}", run.stderr());
    let end = check_stream(&lines(&run.out.stdout)).clone();
    assert_eq!(end["outcome"], "budget_exhausted");
    assert_eq!(end["usage"]["prompt_tokens"], 900);
    assert_eq!(end["usage"]["completion_tokens"], 100);
    assert_eq!(run.requests().len(), 1);
}

#[test]
fn a_failure_before_the_session_is_one_error_line_and_exit_two() {
    let env = Env::new();
    let out = env.run(&["run", "--output", "jsonl", "Hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let lines = lines(&out.stdout);
    validate(&lines);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["session_id"], Value::Null);
    assert_eq!(lines[0]["outcome"], "host_error");
    assert!(
        lines[0]["message"]
            .as_str()
            .unwrap()
            .contains("no engine URL")
    );
    // The person reads it on stderr too.
    assert!(text(&out.stderr).contains("no engine URL"));
}

/// What each of the concurrent runs does, from its prompt.
fn scripted(request: &goat_testkit::Recorded) -> Reply {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if messages.last().is_some_and(|m| m["role"] == "tool") {
        return Reply::text("Done.");
    }
    let prompt = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let n = prompt.split(' ').nth(1).unwrap_or("0");
    if prompt.starts_with("plain") {
        Reply::text("Hello.")
    } else {
        Reply::tool_call(
            "write_file",
            json!({"path": format!("f{n}.txt"), "content": n}).to_string(),
        )
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_two_runs_at_once_share_one_engine_and_one_store() {
    let env = Arc::new(Env::new());
    let server = ScriptedServer::start_with(scripted).await;
    let url = server.base_url();
    // Four kinds, eight each: completed with a write, completed with
    // nothing to write, denied by the mode, needing approval.
    let kinds: [(&str, &[&str], &str, i32); 4] = [
        ("write", &["--allow-writes"], "completed", 0),
        ("plain", &[], "completed", 0),
        (
            "write",
            &["--mode", "read-only"],
            "completed_with_denials",
            3,
        ),
        ("write", &[], "needs_approval", 4),
    ];
    let mut runs = Vec::new();
    for n in 0..32 {
        let (what, flags, outcome, code) = kinds[n % 4];
        let mut cmd = env.cmd();
        cmd.args(["run", "--engine", &url, "--model", "q", "--output", "jsonl"])
            .args(flags)
            .arg(format!("{what} {n}"));
        runs.push((
            n,
            outcome,
            code,
            tokio::task::spawn_blocking(move || cmd.output().unwrap()),
        ));
    }
    let mut sessions = std::collections::BTreeSet::new();
    let mut all = Vec::new();
    for (n, outcome, code, run) in runs {
        let out = run.await.unwrap();
        let err = text(&out.stderr);
        assert!(!err.contains("store"), "run {n}: {err}");
        assert_eq!(out.status.code(), Some(code), "run {n}: {err}");
        let lines = lines(&out.stdout);
        let end = check_stream_unvalidated(&lines);
        assert_eq!(end["outcome"], outcome, "run {n}");
        sessions.insert(lines[0]["session_id"].as_str().unwrap().to_owned());
        let written = env.ws.join(format!("f{n}.txt"));
        assert_eq!(written.exists(), code == 0 && n % 4 == 0, "run {n}");
        all.extend(lines);
    }
    validate(&all);
    assert_eq!(sessions.len(), 32);
    let listed: Value =
        serde_json::from_slice(&env.run(&["sessions", "list", "--json"]).stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 32);
    for session in listed.as_array().unwrap() {
        assert!(sessions.contains(session["id"].as_str().unwrap()));
        assert_eq!(session["turns"], 1);
    }
}

/// [`check_stream`] without the validator (run once over all the lines).
fn check_stream_unvalidated(lines: &[Value]) -> &Value {
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], json!(i), "{line}");
    }
    assert_eq!(lines[0]["type"], "session.started");
    lines.last().unwrap()
}

/// At a terminal, a write no rule decides is asked, and the question and
/// the answer are events too, with the preview the person saw.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_at_a_terminal_is_two_events_with_the_preview() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![crate::pty::write_call(), Reply::text("Done.")]).await;
    let url = server.base_url();
    let logs = env.root.join("logs");
    let args = [
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "--output",
        "jsonl",
        "--logs-dir",
        logs.to_str().unwrap(),
        "make notes/a.txt",
    ];
    let mut pty = crate::pty::Pty::spawn(&env, &args, &[("NO_COLOR", "1")]);
    pty.expect("(default deny): ");
    pty.type_keys("o\r");
    pty.expect("turn.completed");
    assert_eq!(pty.exit_code(), Some(0));
    let lines = lines(&std::fs::read(logs.join("events.jsonl")).unwrap());
    let end = check_stream(&lines);
    assert_eq!(end["outcome"], "completed");
    let asked = lines
        .iter()
        .find(|l| l["type"] == "approval.requested")
        .unwrap();
    assert_eq!(asked["tool"], "write_file");
    assert_eq!(asked["paths"], json!(["notes/a.txt"]));
    assert!(
        asked["preview"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("+ hello")),
        "{asked}"
    );
    assert!(
        asked["answers"]
            .as_array()
            .unwrap()
            .contains(&json!("once"))
    );
    let answered = lines
        .iter()
        .find(|l| l["type"] == "approval.resolved")
        .unwrap();
    assert_eq!(answered["approval"], asked["approval"]);
    assert_eq!(answered["answer"], "once");
    let call = lines
        .iter()
        .find(|l| l["type"] == "tool_call.completed")
        .unwrap();
    assert_eq!(call["decision"], "ask_allowed_once");
    assert!(asked["seq"].as_u64() < answered["seq"].as_u64());
    assert!(answered["seq"].as_u64() < call["seq"].as_u64());
}
