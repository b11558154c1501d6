//! A full sandboxed `read_file` of a 4 KiB file against `std::fs::read` of
//! the same file, measured in the same run.
//!
//! "Full" means what every real call pays: a fresh Store and WasiCtx, the
//! workspace preopen, instantiation from the InstancePre, the invoke, and
//! the tool formatting the lines. The two are measured in interleaved
//! rounds so that noise from a shared machine hits both alike; the report
//! is the ratio of medians.
//!
//! Run: `cargo bench -p goat-tests --bench read_file`
//! (`GOAT_BENCH_PROFILE=read_file` runs one path alone, for a profiler).

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use goat_sandbox::{Access, PathPolicy, Pen, SandboxBuilder};

/// A policy like one deny-read rule: `secrets/` is invisible, so every
/// read pays for the visibility check.
struct OneDenyRule;

impl PathPolicy for OneDenyRule {
    fn visible(&self, path: &str) -> bool {
        path != "secrets" && !path.starts_with("secrets/")
    }

    fn writable(&self, path: &str) -> Result<(), String> {
        if self.visible(path) {
            Ok(())
        } else {
            Err("denied".to_owned())
        }
    }

    fn governs_below(&self, _dir: &str) -> bool {
        true
    }

    fn hides_anything(&self) -> bool {
        true
    }
}

/// Interleaved measurement rounds; the median is reported.
/// `GOAT_BENCH_ROUNDS` lowers it, e.g. to run under a profiler.
const ROUNDS: usize = 31;

/// Operations timed per round, so one round is long enough to time.
const OPS_PER_ROUND: u32 = 200;

fn per_op(f: &mut dyn FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..OPS_PER_ROUND {
        f();
    }
    start.elapsed() / OPS_PER_ROUND
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // 4 KiB of source-like text: 64 lines of 64 bytes.
    let line = format!(
        "{:<63}\n",
        "    let value = compute(alpha, beta, gamma); // a line of code"
    );
    let content = line.repeat(64);
    assert_eq!(content.len(), 4096);
    let file = ws.join("file.rs");
    std::fs::write(&file, &content).unwrap();

    let sandbox = SandboxBuilder::new()
        .cache_dir(dir.path().join("cache"))
        .build()
        .unwrap();
    let read_file = goat_sandbox::builtin::PEN_TOOLS
        .iter()
        .find(|b| b.name == "read_file")
        .unwrap();
    let tool = sandbox.load(read_file.name, read_file.wasm).unwrap();
    let pen = Pen::new(&ws, Access::Read).unwrap();
    let args = r#"{"path": "file.rs"}"#;

    // Check once that the sandboxed call does the real work.
    // The same tool without the fence (wasmtime-wasi's filesystem alone),
    // and through the fence with a deny rule in force: the fence's cost.
    let unfenced_sandbox = SandboxBuilder::new()
        .cache_dir(dir.path().join("cache"))
        .unfenced()
        .build()
        .unwrap();
    let unfenced_tool = unfenced_sandbox
        .load(read_file.name, read_file.wasm)
        .unwrap();
    let ruled_pen = Pen::new(&ws, Access::Read)
        .unwrap()
        .with_policy(Arc::new(OneDenyRule));

    let text = sandbox.call(&tool, args, &pen).unwrap().unwrap();
    assert_eq!(
        unfenced_sandbox
            .call(&unfenced_tool, args, &pen)
            .unwrap()
            .unwrap(),
        text
    );
    assert_eq!(
        sandbox.call(&tool, args, &ruled_pen).unwrap().unwrap(),
        text
    );
    assert_eq!(text.lines().count(), 64);
    assert!(text.starts_with("     1\t    let value"));

    // The same sandbox path with a guest that does nothing: what the
    // sandbox itself costs per call (store, context, preopen, instantiate).
    let hostile = sandbox
        .load(
            "hostile",
            include_bytes!("../../plugins/dist/testing/hostile.wasm"),
        )
        .unwrap();
    let noop_args = r#"{"action": "noop"}"#;
    assert_eq!(
        sandbox.call(&hostile, noop_args, &pen).unwrap().unwrap(),
        ""
    );
    let mut noop = || {
        black_box(
            sandbox
                .call(&hostile, black_box(noop_args), &pen)
                .unwrap()
                .unwrap(),
        );
    };

    let mut native = || {
        black_box(std::fs::read(black_box(&file)).unwrap());
    };
    let mut sandboxed = || {
        black_box(sandbox.call(&tool, black_box(args), &pen).unwrap().unwrap());
    };
    let mut ruled = || {
        black_box(
            sandbox
                .call(&tool, black_box(args), &ruled_pen)
                .unwrap()
                .unwrap(),
        );
    };
    let mut unfenced = || {
        black_box(
            unfenced_sandbox
                .call(&unfenced_tool, black_box(args), &pen)
                .unwrap()
                .unwrap(),
        );
    };
    // `GOAT_BENCH_PROFILE=read_file|noop|ruled` runs only that call, 100,000
    // times, untimed: for `perf record` or `strace -c` on one path alone.
    if let Ok(which) = std::env::var("GOAT_BENCH_PROFILE") {
        let f: &mut dyn FnMut() = match which.as_str() {
            "read_file" => &mut sandboxed,
            "noop" => &mut noop,
            "ruled" => &mut ruled,
            other => panic!("GOAT_BENCH_PROFILE={other}: use read_file, noop or ruled"),
        };
        for _ in 0..100_000 {
            f();
        }
        return;
    }
    // Warm up both paths (page cache, code cache, allocator).
    per_op(&mut native);
    per_op(&mut sandboxed);
    per_op(&mut ruled);
    per_op(&mut unfenced);
    per_op(&mut noop);

    let (mut n, mut s, mut z) = (Vec::new(), Vec::new(), Vec::new());
    let (mut r, mut u) = (Vec::new(), Vec::new());
    let rounds = std::env::var("GOAT_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(ROUNDS);
    for _ in 0..rounds {
        n.push(per_op(&mut native));
        s.push(per_op(&mut sandboxed));
        r.push(per_op(&mut ruled));
        u.push(per_op(&mut unfenced));
        z.push(per_op(&mut noop));
    }
    let (n, s, z) = (median(n), median(s), median(z));
    let (r, u) = (median(r), median(u));
    println!("read_file 4 KiB, median of {rounds} interleaved rounds x {OPS_PER_ROUND} ops");
    println!("  std::fs::read          {:>10.2?} per op", n);
    println!("  sandboxed read_file    {:>10.2?} per op", s);
    println!("  sandboxed no-op call   {:>10.2?} per op", z);
    println!("  same, one deny rule    {:>10.2?} per op", r);
    println!("  same, without fence    {:>10.2?} per op", u);
    println!(
        "  fence cost             {:>+10.1}% (no rules), {:+.1}% (one deny rule)",
        (s.as_secs_f64() / u.as_secs_f64() - 1.0) * 100.0,
        (r.as_secs_f64() / u.as_secs_f64() - 1.0) * 100.0
    );
    println!(
        "  ratio sandboxed/native {:>10.2}x",
        s.as_secs_f64() / n.as_secs_f64()
    );
    println!(
        "  ratio no-op/native     {:>10.2}x",
        z.as_secs_f64() / n.as_secs_f64()
    );
}
