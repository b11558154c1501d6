//! What GOAT's MCP client adds (ADR-0086), against the same server
//! (`tests/mcp_servers/hostile.py probe`, stdlib Python) driven by hand,
//! interleaved in one run, medians reported:
//!
//! - `start`: spawn, `initialize` and `tools/list`. By hand: a plain
//!   child process and raw JSON lines (the baseline). Through the hub: the
//!   server started in a view (namespaces, mounts, Landlock, seccomp), the
//!   SDK's handshake, the pins checked, then the first call.
//! - `call`: one `tools/call` of `echo` once the server is up. By hand:
//!   one JSON line written and one read. Through the hub: the pump, the
//!   SDK's client, the result escaped and capped.
//!
//! Ratios reported are hub / by hand. Run: `cargo bench -p goat-mcp-client
//! --bench call`

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goat_mcp_client::{Hub, PinnedTool, ServerEntry, Trusted};
use goat_router::ExternalTools;
use serde_json::{Value, json};

const CALLS: usize = 50;
const SAMPLES: usize = 7;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Every path visible and writable: the bench measures the client, not
/// the rules.
struct Open;

impl goat_command::WorkspaceRules for Open {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn hides_anything(&self) -> bool {
        false
    }
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, name: &str) -> bool {
        name == ".git"
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/mcp_servers/hostile.py")
        .canonicalize()
        .unwrap()
}

/// The server by hand: spawned, handshake, and `calls` echo calls.
fn by_hand(calls: usize) -> (Duration, Duration) {
    let started = Instant::now();
    let mut child = Command::new("python3")
        .arg(script())
        .arg("probe")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "1"}}),
    );
    ask(2, "tools/list", json!({}));
    let start = started.elapsed();
    let began = Instant::now();
    for i in 0..calls {
        let id = 3 + u64::try_from(i).unwrap();
        let answer = ask(
            id,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hello"}}),
        );
        assert_eq!(answer["result"]["content"][0]["text"], "hello");
    }
    let per_call = began.elapsed() / u32::try_from(calls).unwrap();
    drop(stdin);
    child.wait().unwrap();
    (start, per_call)
}

/// The same through a session's hub: contained start, then `calls` calls.
fn through_hub(ws: &Path, entry: &ServerEntry, calls: usize) -> (Duration, Duration) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let containment = goat_router::default_containment(ws, home.as_deref());
    let hub = Hub::new(vec![entry.clone()], containment).unwrap();
    let interrupt = goat_command::Interrupt::new();
    let args = json!({"text": "hello"});
    let started = Instant::now();
    let first = hub.call("bench__echo", &args, &Open, &interrupt);
    assert_eq!(first.text, "hello", "{}", first.text);
    let start = started.elapsed();
    let began = Instant::now();
    for _ in 0..calls {
        let outcome = hub.call("bench__echo", &args, &Open, &interrupt);
        assert_eq!(outcome.text, "hello");
    }
    let per_call = began.elapsed() / u32::try_from(calls).unwrap();
    drop(hub);
    (start, per_call)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let echo = json!({"type": "object", "properties": {"text": {"type": "string", "description": "text to echo"}},
                      "required": ["text"], "additionalProperties": false});
    let entry = ServerEntry {
        name: "bench".to_owned(),
        command: vec![
            "python3".to_owned(),
            script().to_str().unwrap().to_owned(),
            "probe".to_owned(),
        ],
        url: None,
        bearer_env: None,
        env: Vec::new(),
        read: vec![script().parent().unwrap().to_owned()],
        writes: false,
        network: false,
        hosts: Vec::new(),
        timeout_secs: 60,
        added_at: 0,
        trusted: Some(Trusted {
            at: 0,
            tools: vec![PinnedTool::new(
                "echo",
                "Return the text unchanged.",
                echo,
                None,
            )],
        }),
    };
    let (mut hand_start, mut hand_call, mut hub_start, mut hub_call) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let (s, c) = by_hand(CALLS);
        hand_start.push(s);
        hand_call.push(c);
        let (s, c) = through_hub(&ws, &entry, CALLS);
        hub_start.push(s);
        hub_call.push(c);
    }
    let (hs, hc, gs, gc) = (
        median(hand_start),
        median(hand_call),
        median(hub_start),
        median(hub_call),
    );
    println!(
        "start: by hand {:.1} ms, through the hub (contained, first call included) {:.1} ms: {:.2}x",
        hs.as_secs_f64() * 1e3,
        gs.as_secs_f64() * 1e3,
        gs.as_secs_f64() / hs.as_secs_f64()
    );
    println!(
        "call:  by hand {:.3} ms, through the hub {:.3} ms: {:.2}x",
        hc.as_secs_f64() * 1e3,
        gc.as_secs_f64() * 1e3,
        gc.as_secs_f64() / hc.as_secs_f64()
    );
}
