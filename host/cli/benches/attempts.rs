//! Four attempts at once against one attempt, in one run of this benchmark
//! (issue 42): `goat run --attempts 4 --attempts-parallel 4` and `goat run
//! --attempts 1`, each a whole binary run against a scripted engine that
//! answers every request after a fixed delay (as a local engine serving
//! several slots at once would). Each attempt writes one file and ends;
//! the check is `true`. The two are interleaved so noise on a shared
//! machine hits them alike; the report is medians and their ratio.
//!
//! Run: `cargo bench -p goat-cli --bench attempts`
//! (`GOAT_BENCH_ROUNDS` sets the rounds, 5 by default;
//! `GOAT_BENCH_DELAY_MS` the engine's delay, 500 by default).

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goat_testkit::{Reply, ScriptedServer};

/// One `goat run --attempts N` in a fresh workspace under `dir`.
fn run(url: &str, dir: &Path, n: u32, name: &str) -> Duration {
    let ws = dir.join(name);
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_goat"));
    for (var, _) in std::env::vars_os().filter(|(v, _)| {
        let v = v.to_string_lossy();
        v.starts_with("GOAT_") || v.starts_with("XDG_")
    }) {
        cmd.env_remove(var);
    }
    cmd.env("HOME", dir.join("home"))
        .current_dir(&ws)
        .args(["run", "--engine", url, "--model", "qwen", "--allow-writes"])
        .args([
            "--attempts",
            &n.to_string(),
            "--attempts-parallel",
            &n.to_string(),
        ])
        .args(["--verify", "true", "write it"])
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

fn main() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let rounds = usize::try_from(env("GOAT_BENCH_ROUNDS", 5)).unwrap();
    let delay = Duration::from_millis(env("GOAT_BENCH_DELAY_MS", 500));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let delayed = |mut reply: Reply| {
        reply.delay_headers = delay;
        reply
    };
    // Each attempt: one write, then its answer; five attempts a round.
    let script = (0..rounds * 5 + 5)
        .flat_map(|_| {
            [
                delayed(Reply::tool_call(
                    "write_file",
                    r#"{"path": "a.txt", "content": "done\n"}"#,
                )),
                delayed(Reply::text("Done.")),
            ]
        })
        .collect();
    let engine = rt.block_on(ScriptedServer::start(script));
    let url = engine.base_url();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("home")).unwrap();
    run(&url, dir.path(), 1, "warm-up");
    let (mut one, mut four) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        one.push(run(&url, dir.path(), 1, &format!("one-{round}")));
        four.push(run(&url, dir.path(), 4, &format!("four-{round}")));
    }
    let (one, four) = (median(one), median(four));
    println!(
        "rounds: {rounds}; engine delay {} ms per request (medians of whole `goat run`s)",
        delay.as_millis()
    );
    println!(
        "1 attempt:                  {:.0} ms",
        one.as_secs_f64() * 1e3
    );
    println!(
        "4 attempts, 4 at once:      {:.0} ms",
        four.as_secs_f64() * 1e3
    );
    println!(
        "4 at once / 1:              {:.2}x",
        four.as_secs_f64() / one.as_secs_f64()
    );
}
