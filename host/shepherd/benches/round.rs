//! Host overhead per round: everything GOAT does around one tool call
//! (store the round and its pending call, ask the gate, route, run the call
//! in the sandbox, commit the result), with an engine that answers at once,
//! against the sandboxed call alone, measured in the same run.
//!
//! Three measurements, interleaved, medians reported:
//! - `turn`: a real Shepherd turn of ROUNDS rounds against the scripted
//!   loopback engine, each round one `read_file` of a 4 KiB file, divided
//!   by the number of rounds (includes HTTP on loopback and SSE decoding;
//!   the engine keeps the connection alive, as llama-server, vLLM and
//!   Ollama do, so the client's connection reuse is part of what is
//!   measured);
//! - `route+store`: the same work per round without the engine;
//! - `sandbox`: the sandboxed `read_file` call alone, the baseline.
//!
//! Run: `cargo bench -p goat-shepherd --bench round`

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goat_engine::{CancellationToken, EngineClient, EngineConfig, parse_arguments};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_sandbox::{Access, Pen, SandboxBuilder};
use goat_shepherd::{Shepherd, WindowChoice};
use goat_store::{NewCall, RoundOk, Store};
use goat_testkit::{Reply, ScriptedServer, ev_content, ev_done, ev_finish, ev_tool_call};

const ROUNDS: usize = 20;
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
    let store = Arc::new(Mutex::new(
        Store::open(&dir.path().join("state/goat.db")).unwrap(),
    ));
    let config = RouterConfig {
        workspace: ws.clone(),
        permissions_db: dir.path().join("state/permissions.db"),
        session_id: "bench".into(),
        interactive: Interactive::No,
        writes: WritePolicy::Default,
    };
    let args = r#"{"path": "file.rs"}"#;
    let pen = Pen::new(&ws, Access::Read).unwrap();

    let sandbox_only = || {
        let start = Instant::now();
        for _ in 0..ROUNDS {
            sandbox.call(&read_file, args, &pen).unwrap().unwrap();
        }
        start.elapsed() / ROUNDS as u32
    };

    let mut router = AppToolRouter::new(sandbox.clone(), tools.clone(), config.clone());
    let call = goat_engine::ToolCall {
        index: 0,
        id: "c".into(),
        id_generated: false,
        name: "read_file".into(),
        raw_arguments: args.into(),
        arguments: parse_arguments(args),
    };
    let mut route_and_store = || {
        // A fresh session each sample, so history does not pile up across
        // samples (the full-turn measurement does the same).
        let turn_id = {
            let mut s = store.lock().unwrap();
            let session = s.create_session(&ws, "http://127.0.0.1/v1", "m").unwrap();
            s.start_turn(&session, "bench").unwrap()
        };
        let start = Instant::now();
        for _ in 0..ROUNDS {
            let mut s = store.lock().unwrap();
            let round = s.start_round(turn_id).unwrap();
            let ok = RoundOk {
                calls: vec![NewCall {
                    call_id: "c".into(),
                    tool: "read_file".into(),
                    arguments: args.into(),
                }],
                ..RoundOk::default()
            };
            let rows = s.finish_round_ok(round, &ok).unwrap();
            s.start_call(rows[0]).unwrap();
            let routed = router.route(&call).unwrap();
            assert_eq!(routed.status, goat_store::CallStatus::Ok);
            s.finish_call(rows[0], &routed).unwrap();
        }
        start.elapsed() / ROUNDS as u32
    };

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
    let turn = || {
        rt.block_on(async {
            let mut replies: Vec<Reply> = (0..ROUNDS - 1).map(|_| call_reply()).collect();
            replies.push(Reply::sse(
                [ev_content("done"), ev_finish("stop"), ev_done()].concat(),
            ));
            let server = ScriptedServer::start_unparsed(replies).await;
            let mut engine = EngineConfig::new(server.base_url(), "m");
            engine.retries = 0;
            let session = store
                .lock()
                .unwrap()
                .create_session(&ws, &server.base_url(), "m")
                .unwrap();
            let shepherd = Shepherd::new(
                EngineClient::new(engine).unwrap(),
                AppToolRouter::new(
                    sandbox.clone(),
                    tools.clone(),
                    RouterConfig {
                        session_id: session.clone(),
                        ..config.clone()
                    },
                ),
                store.clone(),
                session,
                "bench".into(),
                ROUNDS,
            )
            // Large enough that no round is compacted: a summary request
            // would take one of the scripted replies and end the turn early.
            .with_context_window(WindowChoice::Setting(1 << 20));
            let start = Instant::now();
            let summary = shepherd
                .run_turn("bench", &CancellationToken::new(), &mut |_| {})
                .await
                .unwrap();
            let took = start.elapsed();
            assert_eq!(summary.rounds, ROUNDS);
            took / ROUNDS as u32
        })
    };

    sandbox_only();
    route_and_store();
    turn();
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        a.push(sandbox_only());
        b.push(route_and_store());
        c.push(turn());
    }
    let (a, b, c) = (median(a), median(b), median(c));
    println!("per round, median of {SAMPLES} samples of {ROUNDS} rounds");
    println!("  sandboxed read_file alone      {a:>10.2?}");
    println!(
        "  route + gate + store commits   {b:>10.2?}   ({:.2}x the sandbox call)",
        b.as_secs_f64() / a.as_secs_f64()
    );
    println!(
        "  full Shepherd round, instant engine {c:>10.2?}   ({:.2}x the sandbox call)",
        c.as_secs_f64() / a.as_secs_f64()
    );
    println!(
        "  host overhead per round (full - sandbox) {:>10.2?}   target <= 1 ms",
        c.saturating_sub(a)
    );
}
