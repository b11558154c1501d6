//! The per-call overhead of a served `read_file` (issue 27): the same
//! 4 KiB read three ways, interleaved in one run, medians reported:
//!
//! - `sandbox`: the sandboxed `read_file` call alone, the baseline;
//! - `session`: the call inside a GOAT session, one Shepherd round each,
//!   against a scripted engine on loopback that answers at once (what a
//!   chat's call costs the host, HTTP and SSE decoding included);
//! - `served`: the call from an MCP client: a `tools/call` written as
//!   JSON-RPC to `goat_mcp::serve` over in-memory pipes, and its answer
//!   read back (JSON-RPC both ways, the direct call's turn, round and call
//!   rows, the gate, the sandbox).
//!
//! The ratio reported is served / session. Run: `cargo bench -p goat-mcp
//! --bench served`

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goat_engine::{CancellationToken, EngineClient, EngineConfig};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_sandbox::{Access, Pen, SandboxBuilder};
use goat_session::direct::{DirectOptions, prepare};
use goat_shepherd::Shepherd;
use goat_store::Store;
use goat_testkit::{Reply, ScriptedServer, ev_content, ev_done, ev_finish, ev_tool_call};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const CALLS: usize = 20;
const SAMPLES: usize = 9;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(
        ws.join("file.rs"),
        format!("{:<63}\n", "let x = compute(a, b);").repeat(64),
    )
    .unwrap();
    let state = dir.path().join("state");
    let args = r#"{"path": "file.rs"}"#;

    let sandbox = Arc::new(
        SandboxBuilder::new()
            .cache_dir(dir.path().join("cache"))
            .build()
            .unwrap(),
    );
    let tools = sandbox.load_pen_tools().unwrap();
    let read_file = tools
        .iter()
        .find(|t| t.spec().name == "read_file")
        .unwrap()
        .clone();
    let pen = Pen::new(&ws, Access::Read).unwrap();
    let sandbox_only = || {
        let start = Instant::now();
        for _ in 0..CALLS {
            sandbox.call(&read_file, args, &pen).unwrap().unwrap();
        }
        start.elapsed() / CALLS as u32
    };

    let store = Arc::new(Mutex::new(Store::open(&state.join("session.db")).unwrap()));
    let call_reply = || {
        Reply::sse(
            [
                ev_tool_call(0, Some("c"), Some("read_file"), Some(args)),
                ev_finish("tool_calls"),
                ev_done(),
            ]
            .concat(),
        )
    };
    let session = || {
        rt.block_on(async {
            let mut replies: Vec<Reply> = (0..CALLS).map(|_| call_reply()).collect();
            replies.push(Reply::sse(
                [ev_content("done"), ev_finish("stop"), ev_done()].concat(),
            ));
            let server = ScriptedServer::start_unparsed(replies).await;
            let mut engine = EngineConfig::new(server.base_url(), "m");
            engine.retries = 0;
            let id = store
                .lock()
                .unwrap()
                .create_session(&ws, &server.base_url(), "m")
                .unwrap();
            let router = AppToolRouter::new(
                sandbox.clone(),
                tools.clone(),
                RouterConfig {
                    workspace: ws.clone(),
                    permissions_db: state.join("permissions.db"),
                    session_id: id.clone(),
                    interactive: Interactive::No,
                    writes: WritePolicy::Default,
                },
            );
            let shepherd = Shepherd::new(
                EngineClient::new(engine).unwrap(),
                router,
                store.clone(),
                id,
                "bench".into(),
                CALLS + 1,
            )
            // Room for every result: the round is measured, not compaction.
            .with_context_window(goat_shepherd::WindowChoice::Setting(1 << 20));
            let start = Instant::now();
            let summary = shepherd
                .run_turn("bench", &CancellationToken::new(), &mut |_| {})
                .await
                .unwrap();
            let took = start.elapsed();
            // The last round only ends the turn; the calls are the rest.
            // (The engine's `/props` question may take one scripted reply.)
            let calls = summary.rounds - 1;
            assert!(calls >= CALLS - 1, "{} rounds", summary.rounds);
            took / calls as u32
        })
    };

    // One served connection for the whole run, as a client keeps one.
    let prepared = prepare(
        &DirectOptions {
            workspace: Some(ws.clone()),
            db: Some(state.join("served.db")),
            ..DirectOptions::default()
        },
        &|_| {},
    )
    .unwrap();
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    rt.spawn(goat_mcp::serve(
        prepared,
        Box::new(|_| {}),
        (server_read, server_write),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut id = 0u64;
    let mut send = |message: serde_json::Value| {
        rt.block_on(async {
            client_write
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
            if message.get("id").is_some() {
                let line = lines.next_line().await.unwrap().unwrap();
                let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
                assert!(answer.get("error").is_none(), "{answer}");
                assert_ne!(answer["result"]["isError"], true, "{answer}");
            }
        });
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}),
    );
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut served = || {
        let start = Instant::now();
        for _ in 0..CALLS {
            id += 1;
            send(
                serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": "file.rs"}}}),
            );
        }
        start.elapsed() / CALLS as u32
    };

    sandbox_only();
    session();
    served();
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        a.push(sandbox_only());
        b.push(session());
        c.push(served());
    }
    let (a, b, c) = (median(a), median(b), median(c));
    println!("per read_file call, median of {SAMPLES} samples of {CALLS} calls");
    println!("  sandboxed read_file alone            {a:>10.2?}");
    println!(
        "  in a GOAT session (Shepherd round)   {b:>10.2?}   ({:.2}x the sandbox call)",
        b.as_secs_f64() / a.as_secs_f64()
    );
    println!(
        "  served over MCP (tools/call)         {c:>10.2?}   ({:.2}x the sandbox call)",
        c.as_secs_f64() / a.as_secs_f64()
    );
    println!(
        "  served / in a session                {:>10.2}x",
        c.as_secs_f64() / b.as_secs_f64()
    );
}
