//! `goat demo`: a real turn with no model at hand.
//!
//! A loopback endpoint replays a recorded coding session in Qwen3-Coder's
//! shape, including the failure ADR-0065 is about: one response whose
//! tool call came out as plain text, with a closing `</tool_call>` and no
//! opening one. Everything on GOAT's side is real: the Shepherd, the
//! detector and the one recovery, the router, the permission gate, the
//! sandboxed Pen tools editing a disposable workspace, and the store.
//! Only the model's side is a replay, and the demo says so.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use goat_engine::{EngineClient, EngineConfig};
use goat_gate::WritePolicy;
use goat_store::Store;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::args::DbArg;
use crate::session::{self, Parts, Start};
use crate::terminal::run_turn;
use crate::{Outcome, note, paths};

/// The engine a demo session is recorded with.
const DEMO_ENGINE: &str = "replay://goat-demo";

/// The request the replayed model was given.
const PROMPT: &str = "Running src/greet.py fails with a NameError. Fix it.";

/// The file the replayed model fixes.
const GREET_PY: &str = "def greet(name):\n    return \"Hello, \" + nme + \"!\"\n\n\nif __name__ == \"__main__\":\n    print(greet(\"world\"))\n";

/// Pause between streamed pieces, so the answer visibly streams.
const PIECE_DELAY: Duration = Duration::from_millis(12);

/// Most bytes of a request the replay endpoint reads; GOAT's requests in
/// this demo are a few KiB.
const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

fn sse(chunk: serde_json::Value) -> String {
    format!("data: {chunk}\n\n")
}

fn content(text: &str) -> String {
    sse(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
    )
}

fn call(id: &str, name: &str, args: &serde_json::Value) -> Vec<String> {
    // As llama-server streams it: id and name first, arguments in pieces.
    let text = args.to_string();
    let mut out = vec![sse(
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}),
    )];
    for piece in text.as_bytes().chunks(24) {
        let piece = String::from_utf8_lossy(piece);
        out.push(sse(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]})));
    }
    out
}

fn finish(reason: &str) -> Vec<String> {
    vec![
        sse(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn words(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(content).collect()
}

/// The recorded session, one response per request.
fn replay() -> Vec<Vec<String>> {
    let malformed = "The bug is a typo: `nme` should be `name`. Let me fix it.\n\
        <function=edit_file>\n<parameter=path>\nsrc/greet.py\n</parameter>\n\
        <parameter=old_string>\n\"Hello, \" + nme\n</parameter>\n\
        <parameter=new_string>\n\"Hello, \" + name\n</parameter>\n</function>\n</tool_call>";
    vec![
        [words("Let me look at the file first."), call("call_1", "read_file", &json!({"path": "src/greet.py"})), finish("tool_calls")].concat(),
        // The failure: markup as text, no opening <tool_call>, no call.
        [words(malformed), finish("stop")].concat(),
        [
            call(
                "call_2",
                "edit_file",
                &json!({"path": "src/greet.py", "old_string": "\"Hello, \" + nme", "new_string": "\"Hello, \" + name"}),
            ),
            finish("tool_calls"),
        ]
        .concat(),
        [words("Fixed: `greet` used the undefined name `nme`; it now uses `name`, so the script prints \"Hello, world!\"."), finish("stop")].concat(),
    ]
}

/// Serves `replies` in order on a loopback port; returns the base URL.
async fn serve(replies: Vec<Vec<String>>) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("starting the replay endpoint")?;
    let addr = listener.local_addr()?;
    let replies = Arc::new(Mutex::new(replies.into_iter()));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let replies = replies.clone();
            tokio::spawn(async move {
                let Some(post) = read_request(&mut socket).await else {
                    return;
                };
                // GOAT asks `/props` (window, template) with a GET; the
                // recording holds only the chat requests' answers.
                if !post {
                    let _ = socket
                        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .await;
                    return;
                }
                let next = replies.lock().ok().and_then(|mut r| r.next());
                let Some(pieces) = next else {
                    let _ = socket
                        .write_all(b"HTTP/1.1 410 Gone\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"error\": {\"message\": \"the recorded session has ended\"}}")
                        .await;
                    return;
                };
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for piece in pieces {
                    if socket.write_all(piece.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(PIECE_DELAY).await;
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok(format!("http://{addr}/v1"))
}

/// Reads one request's head and body (by content-length); `None` if the
/// client went away or sent more than the demo ever does; whether it is a
/// `POST`.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<bool> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 || buf.len() > MAX_REQUEST_BYTES {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = socket.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            return Some(head.starts_with("post "));
        }
    }
}

#[derive(clap::Args)]
#[command(mut_arg("db", |a| a.help(
    "The store to record the session in (else GOAT_DB, else the default)"
)))]
pub struct DemoArgs {
    #[command(flatten)]
    store: DbArg,
}

/// Runs the demo. `--db` as everywhere else (`--db`, `GOAT_DB`, default).
pub fn demo(args: DemoArgs) -> anyhow::Result<Outcome> {
    let store_path = paths::store_path(args.store.db.as_deref())?;
    let root: PathBuf = std::env::temp_dir().join(format!("goat-demo-{}", std::process::id()));
    let workspace = root.join("workspace");
    std::fs::create_dir_all(workspace.join("src"))
        .with_context(|| format!("creating {}", workspace.display()))?;
    std::fs::write(workspace.join("src/greet.py"), GREET_PY).context("writing the demo project")?;
    let workspace = workspace.canonicalize()?;
    paths::ensure_store_outside(&store_path, &workspace)?;
    let store_path = store_path.into_resolved();
    let permissions_db = root.join("permissions.db");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let url = runtime.block_on(serve(replay()))?;
    let mut config = EngineConfig::new(url.clone(), "qwen3-coder (replay)");
    config.retries = 0;
    let engine = EngineClient::new(config)?;

    let limits = crate::config::Settings::load()?.limits();
    let opened = session::open(Parts {
        external: None,
        // The demo replays a recorded session in a scratch workspace: the
        // person's hooks are for their own work.
        hooks: None,
        notes: &crate::stderr_note,
        workspace: workspace.clone(),
        store: Store::open(&store_path)?,
        store_path: store_path.clone(),
        permissions_db,
        engine,
        // Recorded under a fixed engine name, not the throwaway port: stats
        // group demo runs together, and resuming one says plainly there is
        // no engine to talk to.
        engine_url: DEMO_ENGINE.to_owned(),
        model: "qwen3-coder (replay)".to_owned(),
        start: Start::New { announce: false },
        // The replayed model only ever calls Pen tools: plugins stay out.
        plugins: session::Plugins::None,
        limits,
        // The workspace is a throwaway copy made for the demo, so its
        // writes are allowed up front; nothing outside it can be touched
        // either way.
        writes: WritePolicy::AllowAll,
        commands: None,
        approver: None,
        max_rounds: 8,
        // The replayed engine answers only chat requests: nothing to ask.
        context: goat_shepherd::WindowChoice::Setting(goat_shepherd::DEFAULT_CONTEXT_TOKENS),
        unwrapped_calls: false,
        mode: goat_router::ApprovalMode::Ask,
    })?;
    let session_id = opened.session_id.clone();

    note(
        "demo: the model's side of this session is a REPLAY of a recorded Qwen3-Coder session on a loopback port;",
    );
    note(
        "demo: everything GOAT does with it is real (detector, recovery, router, permission gate, sandbox, store).",
    );
    note(format_args!("demo: workspace {}", workspace.display()));
    note(format_args!("demo: prompt: {PROMPT}"));
    let (printer, events) = crate::printer::shared(true);
    let driver = goat_session::Driver::new(opened, events, goat_session::Budget::default());
    let result = run_turn(None, &runtime, &driver, PROMPT, false, None).result;
    printer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .finish(result.is_ok());
    let fixed = std::fs::read_to_string(workspace.join("src/greet.py")).unwrap_or_default();
    let mut err = io::stderr().lock();
    let _ = writeln!(err);
    match result {
        Ok(summary) => {
            note(format_args!(
                "demo: the turn completed in {} rounds; recovery used: {}",
                summary.rounds, summary.recovery_used
            ));
            note(format_args!(
                "demo: src/greet.py now reads: {}",
                fixed.lines().nth(1).unwrap_or("").trim()
            ));
            note(format_args!(
                "demo: session {session_id} is stored in {}",
                store_path.display()
            ));
            note(format_args!(
                "demo: see every round, the failed one included: goat sessions show {session_id}"
            ));
            Ok(Outcome::Ok)
        }
        Err(e) => {
            note(format_args!(
                "demo: the turn failed: {:#}",
                anyhow::Error::new(e)
            ));
            Ok(Outcome::Failed)
        }
    }
}
