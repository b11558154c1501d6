//! `goat acp` spoken to raw, without the SDK, which would never send what
//! these tests send: lines that are not JSON-RPC, bytes that are not
//! UTF-8 (idle, and while a command runs), and a mode above the one the
//! person gave (issue 39). The agent answers each with an error and goes
//! on; what the store and the disk hold is checked.

use std::io::{BufRead, BufReader, Write};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::{Env, processes_with};

/// Lines that are not JSON-RPC get an error, and the agent answers the
/// next request. Spoken raw, without the SDK, which would never send them.
#[test]
fn malformed_json_rpc_does_not_kill_the_agent() {
    let env = Env::new();
    let lines: Vec<Vec<u8>> = [
        "{not json",
        "[1, 2]",
        r#"{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"bogus": true}}"#,
        r#"{"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {"protocolVersion": 1}}"#,
    ]
    .iter()
    .map(|l| l.as_bytes().to_vec())
    .collect();
    let (seen, status) = raw_exchange(&env, &[], &lines, 8);
    let init = seen
        .iter()
        .find(|v| v["id"] == 8)
        .unwrap_or_else(|| panic!("no answer to initialize: {seen:?}"));
    assert_eq!(init["result"]["protocolVersion"], 1, "{seen:?}");
    assert!(
        seen.iter().any(|v| v["error"]["code"] == -32700),
        "no parse error: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|v| v["id"] == 7 && v["error"]["code"].is_i64()),
        "the bad prompt got no error: {seen:?}"
    );
    assert!(status.success(), "{status:?}");
}

/// Sends `lines` (raw bytes, each ended with `\n`) to `goat acp FLAGS`,
/// then reads answers until one to `last_id` comes; returns them, and how
/// the agent exited once stdin closed.
fn raw_exchange(
    env: &Env,
    flags: &[&str],
    lines: &[Vec<u8>],
    last_id: u64,
) -> (Vec<Value>, std::process::ExitStatus) {
    let mut cmd = env.cmd();
    cmd.args([
        "acp",
        "--engine",
        "http://127.0.0.1:9/v1",
        "--model",
        "qwen",
    ])
    .args(flags)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for line in lines {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while std::time::Instant::now() < deadline {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        let done = v["id"] == last_id;
        seen.push(v);
        if done {
            break;
        }
    }
    drop(stdin);
    (seen, child.wait().unwrap())
}

/// A line that is not UTF-8 is a line that is not JSON-RPC: a parse error,
/// and the agent answers the next request (it used to exit 2, issue 39).
#[test]
fn a_line_that_is_not_utf8_gets_a_parse_error_and_the_agent_goes_on() {
    let env = Env::new();
    let (seen, status) = raw_exchange(
        &env,
        &[],
        &[
            b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"initialize\", \"params\": {\"protocolVersion\": \xff}}".to_vec(),
            br#"{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1}}"#.to_vec(),
        ],
        2,
    );
    assert!(
        seen.iter().any(|v| v["error"]["code"] == -32700),
        "no parse error: {seen:?}"
    );
    let init = seen
        .iter()
        .find(|v| v["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to initialize: {seen:?}"));
    assert_eq!(init["result"]["protocolVersion"], 1, "{seen:?}");
    assert!(status.success(), "{status:?}");
}

/// The mode the person gave on the command line is a ceiling: the editor
/// may lower it, never raise it (issue 39).
#[test]
fn set_mode_above_the_command_lines_mode_is_refused() {
    let env = Env::new();
    let request = |id: u64, method: &str, params: Value| -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .into_bytes()
    };
    let new = request(
        2,
        "session/new",
        json!({"cwd": env.ws_str(), "mcpServers": []}),
    );
    let init = request(1, "initialize", json!({"protocolVersion": 1}));
    // The session's id is known only once it is answered: ask twice, the
    // second time on a session made in the same way, by id from the first.
    let (seen, _) = raw_exchange(
        &env,
        &["--mode", "read-only"],
        &[init.clone(), new.clone()],
        2,
    );
    let made = seen.iter().find(|v| v["id"] == 2).unwrap();
    let id = made["result"]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        made["result"]["modes"]["currentModeId"], "read-only",
        "{made}"
    );
    let load = request(
        2,
        "session/load",
        json!({"sessionId": id, "cwd": env.ws_str(), "mcpServers": []}),
    );
    let set = |n: u64, mode: &str| {
        request(
            n,
            "session/set_mode",
            json!({"sessionId": id, "modeId": mode}),
        )
    };
    let (seen, _) = raw_exchange(
        &env,
        &["--mode", "read-only"],
        &[
            init,
            load,
            set(3, "accept-edits"),
            set(4, "ask"),
            set(5, "read-only"),
        ],
        5,
    );
    let answer = |n: u64| seen.iter().find(|v| v["id"] == n).unwrap().clone();
    for n in [3, 4] {
        let a = answer(n);
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("never raise"),
            "{a}"
        );
    }
    assert!(answer(5)["result"].is_object(), "{}", answer(5));
}

/// What the editor does while the prompt's command runs.
#[derive(Clone, Copy, Debug)]
enum During {
    /// Sends a line that is not UTF-8, then waits for the prompt's answer.
    BadByte,
    /// Closes the agent's stdin: the editor went away.
    Leaves,
}

/// `goat acp --allow-commands` prompted into a command that sleeps just
/// over 2 s and then writes `landed.txt`; while the command runs, the
/// editor does `during`. Returns what the agent said and how it exited.
async fn prompt_into_a_command(env: &Env, n: u8, during: During) -> (Vec<Value>, ExitStatus) {
    // Unique to this test and this round.
    let marker = format!("2.{}3{n}", std::process::id());
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "run_command",
            json!({"command": format!("sleep {marker}; echo landed > landed.txt")}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let mut cmd = env.cmd();
    cmd.args(["acp", "--engine", &server.base_url(), "--model", "qwen"])
        .arg("--allow-commands")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cwd = env.ws_str().to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        // Owns stdin: dropping it closes the agent's input.
        let mut send = move |line: &[u8]| {
            stdin.write_all(line).unwrap();
            stdin.write_all(b"\n").unwrap();
            stdin.flush().unwrap();
        };
        let mut seen: Vec<Value> = Vec::new();
        let mut until = |id: u64, seen: &mut Vec<Value>| loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "{seen:?}");
            let v: Value = serde_json::from_str(&line).unwrap();
            let done = v["id"] == id;
            seen.push(v.clone());
            if done {
                return v;
            }
        };
        let request = |id: u64, method: &str, params: Value| {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
        };
        send(request(1, "initialize", json!({"protocolVersion": 1})).as_bytes());
        until(1, &mut seen);
        send(request(2, "session/new", json!({"cwd": cwd, "mcpServers": []})).as_bytes());
        let made = until(2, &mut seen);
        let session = made["result"]["sessionId"].as_str().unwrap().to_owned();
        send(
            request(
                3,
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "Build it"}]}),
            )
            .as_bytes(),
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while processes_with(&marker) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        match during {
            During::BadByte => {
                send(b"{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"\xff\xfe\"}");
                until(3, &mut seen);
                drop(send);
            }
            During::Leaves => drop(send),
        }
        (seen, child.wait().unwrap())
    })
    .await
    .unwrap()
}

/// The stored `run_command` call's status and its turn's.
fn stored(env: &Env) -> (String, String) {
    let db = rusqlite::Connection::open(&env.db).unwrap();
    db.query_row(
        "SELECT c.status, t.status FROM tool_calls c JOIN rounds r ON c.round_id = r.id \
         JOIN turns t ON r.turn_id = t.id WHERE c.tool = 'run_command'",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// A line that is not UTF-8 while a command runs: a parse error, and the
/// turn goes on to its end, answered and recorded (it used to leave the
/// turn `running` and the call `pending` for good, issue 39).
#[tokio::test(flavor = "multi_thread")]
async fn a_line_that_is_not_utf8_during_a_command_leaves_the_turn_answered_and_recorded() {
    let env = Env::new();
    let (seen, status) = prompt_into_a_command(&env, 0, During::BadByte).await;
    assert!(
        seen.iter().any(|v| v["error"]["code"] == -32700),
        "no parse error: {seen:?}"
    );
    let answer = seen.iter().find(|v| v["id"] == 3).unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(status.success(), "{status:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("landed.txt")).unwrap(),
        "landed\n"
    );
    let (call, turn) = stored(&env);
    assert_eq!((call.as_str(), turn.as_str()), ("ok", "completed"));
}

/// An editor that goes away while a command runs: the command is stopped
/// at once and none of its changes land, and the turn is recorded as
/// cancelled before the agent exits (it was left `running`).
#[tokio::test(flavor = "multi_thread")]
async fn an_editor_that_goes_away_mid_command_stops_it_and_the_turn_is_recorded() {
    let env = Env::new();
    let (_, status) = prompt_into_a_command(&env, 1, During::Leaves).await;
    assert!(status.success(), "{status:?}");
    // Past the moment the command would have written, had it lived.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !env.ws.join("landed.txt").exists(),
        "a command of an editor that went away landed its changes"
    );
    let (call, turn) = stored(&env);
    assert_eq!((call.as_str(), turn.as_str()), ("error", "cancelled"));
}
