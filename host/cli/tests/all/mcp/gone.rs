//! A client of `goat mcp serve` that goes away (issue 39): by closing its
//! input, or its input and its output, while a command runs or while a
//! question waits for its person. What it left running is stopped at
//! once: a command is killed and none of its changes land, a question is
//! a denial, and the store says so.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::hostile::call;
use crate::{Env, processes_with, text};

/// How the client leaves.
#[derive(Clone, Copy, Debug)]
enum Leaves {
    /// Closes its input, still reading.
    Input,
    /// Closes its input and its output.
    Both,
}

/// `goat mcp serve` with `flags`, handshaken as a client with
/// `capabilities`.
fn served(env: &Env, flags: &[&str], capabilities: Value) -> (Child, ChildStdin, ChildStdout) {
    let mut child = env
        .cmd()
        .args(["mcp", "serve", "--workspace", env.ws_str()])
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": {"name": "leaver", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ] {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_some() {
            read_message(&mut stdout);
        }
    }
    (child, stdin, stdout)
}

/// One line from `stdout`, byte by byte (nothing is buffered past it).
fn read_message(stdout: &mut ChildStdout) -> Value {
    let mut line = Vec::new();
    let mut byte = [0u8];
    while std::io::Read::read(stdout, &mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    serde_json::from_slice(&line).unwrap_or_else(|e| panic!("{e}: {}", text(&line)))
}

/// The client leaves as `leaves` says; then serve must end by itself.
/// Returns its stderr.
fn leave(mut child: Child, stdin: ChildStdin, stdout: ChildStdout, leaves: Leaves) -> String {
    drop(stdin);
    let reading = match leaves {
        Leaves::Input => Some(std::thread::spawn(move || {
            BufReader::new(stdout).lines().count()
        })),
        Leaves::Both => {
            drop(stdout);
            None
        }
    };
    // Generous: a question would otherwise wait ten minutes.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve outlived its client");
        std::thread::sleep(Duration::from_millis(50));
    };
    if let Some(reading) = reading {
        reading.join().unwrap();
    }
    let stderr = text(
        &std::io::Read::bytes(child.stderr.take().unwrap())
            .map(Result::unwrap)
            .collect::<Vec<u8>>(),
    );
    assert!(status.success(), "{leaves:?}: {stderr}");
    stderr
}

/// The stored call to `tool`: status, error kind, and its turn's status.
fn stored(env: &Env, tool: &str) -> (String, Option<String>, String) {
    let db = rusqlite::Connection::open(&env.db).unwrap();
    db.query_row(
        "SELECT c.status, c.error_kind, t.status FROM tool_calls c \
         JOIN rounds r ON c.round_id = r.id JOIN turns t ON r.turn_id = t.id \
         WHERE c.tool = ?1",
        [tool],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

#[test]
fn a_client_that_goes_away_stops_the_command_it_left_running() {
    for (n, leaves) in [Leaves::Input, Leaves::Both].into_iter().enumerate() {
        let env = Env::new();
        // Unique to this test and this round: a sleep of just over 2 s.
        let marker = format!("2.{}{n}1", std::process::id());
        let (child, mut stdin, stdout) = served(&env, &["--allow-commands"], json!({}));
        let command = format!("sleep {marker}; echo orphan > orphan.txt");
        writeln!(
            stdin,
            "{}",
            call(
                2,
                "run_command",
                json!({"command": command, "timeout_secs": 600})
            )
        )
        .unwrap();
        stdin.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while processes_with(&marker) == 0 {
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let stderr = leave(child, stdin, stdout, leaves);
        // Past the moment the command would have written, had it lived.
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(
            processes_with(&marker),
            0,
            "{leaves:?}: the command outlived its client"
        );
        assert!(
            !env.ws.join("orphan.txt").exists(),
            "{leaves:?}: a command of a client that went away landed its changes"
        );
        let (status, kind, turn) = stored(&env, "run_command");
        assert_eq!(
            (status.as_str(), kind.as_deref(), turn.as_str()),
            ("error", Some("cancelled"), "cancelled"),
            "{leaves:?}"
        );
        assert!(
            stderr.contains("leaver went away during run_command"),
            "{stderr}"
        );
        assert!(stderr.contains("run_command: cancelled"), "{stderr}");
    }
}

#[test]
fn a_client_that_goes_away_while_asked_is_a_denial() {
    for leaves in [Leaves::Input, Leaves::Both] {
        let env = Env::new();
        let (child, mut stdin, mut stdout) = served(&env, &[], json!({"elicitation": {}}));
        writeln!(
            stdin,
            "{}",
            call(2, "write_file", json!({"path": "w.txt", "content": "x"}))
        )
        .unwrap();
        stdin.flush().unwrap();
        let asked = read_message(&mut stdout);
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        leave(child, stdin, stdout, leaves);
        assert!(!env.ws.join("w.txt").exists(), "{leaves:?}");
        let (status, _, turn) = stored(&env, "write_file");
        assert_eq!(
            (status.as_str(), turn.as_str()),
            ("denied", "completed"),
            "{leaves:?}"
        );
    }
}
