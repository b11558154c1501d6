//! What a hook costs a call (issue 41): a `read_file` call routed with no
//! hook, with a component hook (the example guard, pure wasm, asked in a
//! fresh store), and with a command hook (a shell script run contained, as
//! `run_command` is), measured in the same run, interleaved, medians.
//!
//! Run: `cargo bench -p goat-router --bench hooks`

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goat_engine::{ToolCall, parse_arguments};
use goat_gate::{Interactive, WritePolicy};
use goat_hooks::{Event, HookEntry, Hooks, pin};
use goat_router::{AppToolRouter, RouterConfig, default_containment};
use goat_sandbox::SandboxBuilder;

const CALLS: u32 = 20;
const SAMPLES: usize = 7;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn entry(name: &str, argv: Vec<String>, component: Option<&Path>) -> HookEntry {
    let runs = match component {
        Some(path) => pin::Runs::Component(path),
        None => pin::Runs::Command(&argv),
    };
    let pins = pin::take(Event::PreToolUse, None, runs, 30).unwrap();
    HookEntry {
        name: name.to_owned(),
        event: Event::PreToolUse,
        matcher: None,
        argv,
        component: component.map(Path::to_path_buf),
        timeout_secs: 30,
        pins,
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    std::fs::write(ws.join("file.rs"), "let x = 1;\n".repeat(64)).unwrap();
    let sandbox = Arc::new(
        SandboxBuilder::new()
            .cache_dir(dir.path().join("cache"))
            .build()
            .unwrap(),
    );
    let tools = sandbox.load_pen_tools().unwrap();
    let config = RouterConfig {
        workspace: ws.clone(),
        permissions_db: dir.path().join("state/permissions.db"),
        session_id: "bench".into(),
        interactive: Interactive::No,
        writes: WritePolicy::Default,
    };
    std::fs::create_dir_all(dir.path().join("state")).unwrap();
    let script = dir.path().join("quiet.sh");
    std::fs::write(&script, "#!/bin/sh\ncat > /dev/null\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let guard = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/dist/examples/hook_guard.wasm")
        .canonicalize()
        .unwrap();
    let containment = default_containment(&ws, std::env::var_os("HOME").as_deref().map(Path::new));
    let router = |hooks: Vec<HookEntry>| {
        AppToolRouter::new(sandbox.clone(), tools.clone(), config.clone())
            .with_hooks(Hooks::new(hooks, containment.clone()))
    };
    let mut none = router(Vec::new());
    let mut component = router(vec![entry("guard", Vec::new(), Some(&guard))]);
    let mut command = router(vec![entry(
        "quiet",
        vec![script.display().to_string()],
        None,
    )]);
    let args = r#"{"path": "file.rs"}"#;
    let call = ToolCall {
        index: 0,
        id: "c".into(),
        id_generated: false,
        name: "read_file".into(),
        raw_arguments: args.into(),
        arguments: parse_arguments(args),
    };
    let time = |router: &mut AppToolRouter| {
        let start = Instant::now();
        for _ in 0..CALLS {
            let routed = router.route(&call).unwrap();
            assert_eq!(
                routed.status,
                goat_store::CallStatus::Ok,
                "{}",
                routed.result
            );
        }
        start.elapsed() / CALLS
    };
    // Warm: the component compiled, the built-in loaded.
    time(&mut none);
    time(&mut component);
    time(&mut command);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        a.push(time(&mut none));
        b.push(time(&mut component));
        c.push(time(&mut command));
    }
    let (a, b, c) = (median(a), median(b), median(c));
    println!("a read_file call, median of {SAMPLES} samples of {CALLS} calls:");
    println!("  no hook          {a:>10.2?}  1.00x");
    println!(
        "  component hook   {b:>10.2?}  {:.2}x",
        b.as_secs_f64() / a.as_secs_f64()
    );
    println!(
        "  command hook     {c:>10.2?}  {:.2}x",
        c.as_secs_f64() / a.as_secs_f64()
    );
}
