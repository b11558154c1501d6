//! A hostile client on raw pipes: each thing it tries gets a clear answer
//! (or, for bytes that are not JSON at all, is ignored as MCP's SDKs
//! ignore them), nothing beyond what the person allowed happens, and the
//! server keeps serving the calls after it.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::{Env, processes_with, text};

/// Sends `lines` to `goat mcp serve` in `env`, closes stdin, and returns
/// the responses by id, and stderr.
fn exchange(env: &Env, lines: &[String]) -> (Vec<Value>, String) {
    let mut cmd = env.cmd();
    cmd.args(["mcp", "serve", "--workspace", env.ws_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // Every line with an id is answered but the one that is not JSON.
    let expected = lines
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("id").is_some()))
        .count();
    let reader = std::thread::spawn(move || {
        let mut responses = Vec::new();
        for line in stdout.lines() {
            let line = line.unwrap();
            responses.push(serde_json::from_str::<Value>(&line).unwrap());
            if responses.len() == expected {
                break;
            }
        }
        responses
    });
    for line in lines {
        // The server may have dropped an oversized line already; a closed
        // pipe here is its answer, checked below.
        let _ = writeln!(stdin, "{line}");
        let _ = stdin.flush();
        // One at a time, in order: the answers are checked by id anyway,
        // but the last read must come after everything hostile.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let responses = reader.join().unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (responses, text(&out.stderr))
}

pub(super) fn call(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
    .to_string()
}

fn by_id(responses: &[Value], id: u64) -> &Value {
    responses
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}: {responses:?}"))
}

fn result_text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_hostile_client_gets_clear_errors_and_the_server_keeps_serving() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "hello\n").unwrap();
    let huge = "x".repeat(goat_mcp::MAX_ARGUMENTS_BYTES + 1);
    let lines = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "evil\u{1b}]0;owned\u{7}\u{1b}[2J", "version": "1"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        // Not JSON: ignored, as the SDKs ignore it (no echo loop).
        "{\"jsonrpc\": \"2.0\", \"id\": 2, ".to_owned(),
        // JSON, but no request: an Invalid Request error.
        json!({"jsonrpc": "2.0", "id": 3, "method": 42}).to_string(),
        call(4, "no_such_tool", json!({})),
        call(5, "write_file", json!({"path": "big.txt", "content": huge})),
        call(6, "read_file", json!({"path": "/etc/passwd"})),
        call(7, "read_file", json!({"path": "../../../../etc/passwd"})),
        call(8, "read_file", json!({"path": 7})),
        // It claimed no elicitation; a write no rule decides is denied.
        call(9, "write_file", json!({"path": "w.txt", "content": "x"})),
        call(10, "read_file", json!({"path": "a.txt"})),
    ];
    let (responses, stderr) = exchange(&env, &lines);

    // rmcp answers it as JSON-RPC says to when the id cannot be trusted:
    // with none.
    let invalid = responses
        .iter()
        .find(|r| r.get("error").is_some())
        .unwrap_or_else(|| panic!("no Invalid Request error: {responses:?}"));
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    let unknown = result_text(by_id(&responses, 4));
    assert!(
        unknown.contains("unknown tool") && unknown.contains("read_file"),
        "{unknown}"
    );
    let big = by_id(&responses, 5);
    assert_eq!(big["result"]["isError"], true, "{big}");
    assert!(result_text(big).contains("over GOAT's limit"));
    assert!(!env.ws.join("big.txt").exists());
    for id in [6, 7] {
        let r = by_id(&responses, id);
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(!result_text(r).contains("root:"), "{r}");
    }
    assert!(result_text(by_id(&responses, 8)).contains("invalid arguments"));
    let denied = result_text(by_id(&responses, 9));
    assert!(denied.contains("--allow-writes"), "{denied}");
    assert!(!env.ws.join("w.txt").exists());
    // And after all that, it still serves.
    let read = by_id(&responses, 10);
    assert_eq!(read["result"]["isError"], false, "{read}");
    assert!(result_text(read).contains("hello"));
    // Its name reached the terminal escaped: no escape byte, no bell.
    assert!(stderr.contains("evil"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
}

/// A client of `goat mcp serve` is held to a deny rule on a file it
/// reaches through a hard link, as a model is (issue 39).
#[test]
fn a_hard_link_to_a_denied_file_shows_a_client_nothing() {
    let env = crate::boundary::with_hard_linked_secret();
    let lines = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        call(2, "read_file", json!({"path": "innocent.txt"})),
        call(3, "search_files", json!({"pattern": "hard-linked"})),
        call(4, "read_file", json!({"path": "b.txt"})),
    ];
    let (responses, _) = exchange(&env, &lines);
    for id in [2, 3] {
        let r = by_id(&responses, id);
        assert!(!r.to_string().contains("0123456789"), "{r}");
    }
    assert!(result_text(by_id(&responses, 4)).contains("shared-by-two-names"));
}

/// A client that cancels its `tools/call` (notifications/cancelled) stops
/// the command GOAT is running for it (ADR-0087): nothing of it is left
/// running, the call is recorded as cancelled, and the next call is served.
#[test]
fn a_clients_cancel_stops_the_command_it_asked_for() {
    let env = Env::new();
    // Unique to this test (tests run at once in one process).
    let marker = format!("3600.{}2", std::process::id());
    let mut child = env
        .cmd()
        .args([
            "mcp",
            "serve",
            "--workspace",
            env.ws_str(),
            "--allow-commands",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |value: Value| {
        writeln!(stdin, "{value}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "canceller", "version": "1"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // A timeout past the test's: only the cancel can end it in time.
    send(
        serde_json::from_str(&call(
            2,
            "run_command",
            json!({"command": format!("sleep {marker}"), "timeout_secs": 600}),
        ))
        .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while processes_with(&marker) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2, "reason": "changed my mind"}}),
    );
    send(serde_json::from_str(&call(3, "list_directory", json!({"path": "."}))).unwrap());
    // The next call is answered once the cancelled one has ended (calls
    // take the one road in turn); an answer to 2, if any, comes first.
    let mut answered = Vec::new();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "{answered:?}");
        let value: Value = serde_json::from_str(&line).unwrap();
        let id = value["id"].as_u64();
        answered.push(value);
        if id == Some(3) {
            break;
        }
    }
    assert_eq!(
        processes_with(&marker),
        0,
        "the command outlived the cancel"
    );
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let (status, kind, result): (String, String, String) = db
        .query_row(
            "SELECT status, error_kind, result FROM tool_calls WHERE tool = 'run_command'",
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
    let turn: String = db
        .query_row(
            "SELECT t.status FROM turns t JOIN rounds r ON r.turn_id = t.id \
             JOIN tool_calls c ON c.round_id = r.id WHERE c.tool = 'run_command'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(turn, "cancelled");
}

/// A client that claims it can ask its person, is asked about a write,
/// and cancels the call instead of answering: the question ends with the
/// call (a denial, nothing written), and the next call is served at once,
/// not after the question's ten minutes.
#[test]
fn a_clients_cancel_ends_the_question_it_left_unanswered() {
    let env = Env::new();
    let mut child = env
        .cmd()
        .args(["mcp", "serve", "--workspace", env.ws_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (lines, received) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if lines.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut send = |value: Value| {
        writeln!(stdin, "{value}").unwrap();
        stdin.flush().unwrap();
    };
    let next = |what: &str| {
        received
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("waiting for {what}: {e}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "silent", "version": "1"}}}),
    );
    next("the handshake");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        serde_json::from_str(&call(
            2,
            "write_file",
            json!({"path": "w.txt", "content": "x"}),
        ))
        .unwrap(),
    );
    let asked = next("the question");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2, "reason": "never mind"}}),
    );
    send(serde_json::from_str(&call(3, "list_directory", json!({"path": "."}))).unwrap());
    loop {
        let message = next("the answer to the next call");
        if message["id"] == 3 {
            assert!(message["result"].is_object(), "{message}");
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!env.ws.join("w.txt").exists());
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let status: String = db
        .query_row(
            "SELECT status FROM tool_calls WHERE tool = 'write_file'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(status, "denied");
}
