//! The first tool call in a fresh home against the same call warm, in one
//! run (issue 38).
//!
//! "Fresh" is what every evaluation harness, CI job and new user pays: a
//! new sandbox over an empty compiled-code cache, the eight Pen tools
//! loaded for the offer, and one `read_file` call, which runs the code
//! compiled when GOAT was built. "Warm" is the same over a cache a run
//! before filled. "Compiled" is the fresh run where the binary's code does
//! not fit the machine (or before it carried any): the one tool called is
//! compiled. "Eager" is the fresh run as it was before components were
//! compiled on their first call: all eight compiled to read their specs,
//! then the call. Each sample is a whole run (a new
//! sandbox, as a new process would build); the three kinds are
//! interleaved so noise on a shared machine hits them alike, and the
//! report is ratios of medians.
//!
//! Run: `cargo bench -p goat-tests --bench cold_start`
//! (`GOAT_BENCH_ROUNDS` sets the rounds, 5 by default).

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::path::Path;
use std::time::{Duration, Instant};

use goat_sandbox::builtin::PEN_TOOLS;
use goat_sandbox::{Access, Pen, Sandbox, SandboxBuilder, Tool};

const READ: &str = r#"{"path": "file.rs"}"#;

/// One run: a sandbox over the cache in `home`, the tools for the offer
/// (`load`), one `read_file` call.
fn run(home: &Path, ws: &Path, load: fn(&Sandbox) -> Vec<Tool>) -> Duration {
    run_with(home, ws, load, false)
}

/// As [`run`], compiling the built-ins (`ignore_precompiled`) if `compile`.
fn run_with(home: &Path, ws: &Path, load: fn(&Sandbox) -> Vec<Tool>, compile: bool) -> Duration {
    let start = Instant::now();
    let mut builder = SandboxBuilder::new().cache_dir(home.join("cache"));
    if compile {
        builder = builder.ignore_precompiled();
    }
    let sandbox = builder.build().unwrap();
    let tools = load(&sandbox);
    let read_file = tools.iter().find(|t| t.spec().name == "read_file").unwrap();
    let pen = Pen::new(ws, Access::Read).unwrap();
    let out = sandbox.call(read_file, READ, &pen).unwrap().unwrap();
    assert!(out.contains("compute"), "{out}");
    start.elapsed()
}

fn lazy(sandbox: &Sandbox) -> Vec<Tool> {
    sandbox.load_pen_tools().unwrap()
}

fn eager(sandbox: &Sandbox) -> Vec<Tool> {
    PEN_TOOLS
        .iter()
        .map(|b| sandbox.load(b.name, b.wasm).unwrap())
        .collect()
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
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let line = format!("{:<63}\n", "    let value = compute(alpha, beta, gamma);");
    std::fs::write(ws.join("file.rs"), line.repeat(64)).unwrap();
    let warm_home = dir.path().join("warm");
    run(&warm_home, &ws, lazy);

    let (mut fresh, mut warm, mut compiled, mut before) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut cached_after_fresh = 0;
    for round in 0..rounds {
        let home = dir.path().join(format!("fresh-{round}"));
        fresh.push(run(&home, &ws, lazy));
        cached_after_fresh = std::fs::read_dir(home.join("cache")).unwrap().count();
        warm.push(run(&warm_home, &ws, lazy));
        let home = dir.path().join(format!("compiled-{round}"));
        compiled.push(run_with(&home, &ws, lazy, true));
        let home = dir.path().join(format!("eager-{round}"));
        before.push(run_with(&home, &ws, eager, true));
    }
    let [fresh, warm, compiled, before] = [fresh, warm, compiled, before].map(median);
    let ratio = |a: Duration| a.as_secs_f64() / warm.as_secs_f64();
    println!("rounds: {rounds} (medians of whole runs: sandbox, offer, one read_file call)");
    println!(
        "fresh home: {:.1} ms ({cached_after_fresh} components compiled; precompiled: {:?})",
        ms(fresh),
        goat_sandbox::precompiled_builtins()
    );
    println!("warm:       {:.1} ms", ms(warm));
    println!("fresh, the called tool compiled: {:.1} ms", ms(compiled));
    println!("fresh, all eight compiled: {:.1} ms", ms(before));
    println!(
        "fresh / warm: {:.2}x; compiled / warm: {:.1}x; all eight / warm: {:.1}x",
        ratio(fresh),
        ratio(compiled),
        ratio(before)
    );
}
