//! The first `goat run` in a fresh home against the same run warm, in one
//! run of this benchmark (issue 38).
//!
//! Each sample is the whole binary: `goat run` with one `read_file` call
//! and a final answer, against an instant scripted engine, so what is
//! measured is GOAT alone. "Fresh" runs with a new, empty `HOME` (no
//! store, no permission database, no compiled-code cache), as every
//! evaluation harness's container, CI job and new user starts. "Warm"
//! reuses one home that a run before filled. The two are interleaved so
//! noise on a shared machine hits them alike; the report is medians and
//! their ratio.
//!
//! Run: `cargo bench -p goat-cli --bench first_run`
//! (`GOAT_BENCH_ROUNDS` sets the rounds, 9 by default).

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goat_testkit::{Reply, ScriptedServer};

/// One `goat run` in `home`, in the workspace `ws`.
fn run(url: &str, home: &Path, ws: &Path) -> Duration {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_goat"));
    for (name, _) in std::env::vars_os().filter(|(n, _)| {
        let n = n.to_string_lossy();
        n.starts_with("GOAT_") || n.starts_with("XDG_")
    }) {
        cmd.env_remove(name);
    }
    cmd.env("HOME", home)
        .current_dir(ws)
        .args(["run", "--engine", url, "--model", "qwen", "read a.txt"])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let start = Instant::now();
    let out = cmd.output().unwrap();
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let rounds: usize = std::env::var("GOAT_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // Each run: one read_file call, then the answer.
    let script = (0..=2 * rounds)
        .flat_map(|_| {
            [
                Reply::tool_call("read_file", r#"{"path": "a.txt"}"#),
                Reply::text("It says alpha."),
            ]
        })
        .collect();
    let engine = rt.block_on(ScriptedServer::start(script));
    let url = engine.base_url();

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    let warm_home = dir.path().join("warm");
    std::fs::create_dir(&warm_home).unwrap();
    run(&url, &warm_home, &ws);

    let (mut fresh, mut warm) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let home = dir.path().join(format!("fresh-{round}"));
        std::fs::create_dir(&home).unwrap();
        fresh.push(run(&url, &home, &ws));
        warm.push(run(&url, &warm_home, &ws));
    }
    let (fresh, warm) = (median(fresh), median(warm));
    let binary = std::fs::metadata(env!("CARGO_BIN_EXE_goat")).unwrap().len();
    println!("rounds: {rounds} (medians of whole `goat run`s: one read_file call, one answer)");
    println!(
        "built-in tools precompiled in this binary: {}",
        match goat_sandbox::precompiled_builtins() {
            Ok(n) => n.to_string(),
            Err(why) => format!("none ({why})"),
        }
    );
    println!("binary: {:.1} MB", binary as f64 / 1e6);
    println!("fresh home: {:.1} ms", ms(fresh));
    println!("warm:       {:.1} ms", ms(warm));
    println!(
        "fresh / warm: {:.2}x",
        fresh.as_secs_f64() / warm.as_secs_f64()
    );
}
