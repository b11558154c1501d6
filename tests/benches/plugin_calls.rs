//! A warm call of the same line-counting plugin in Python (componentize-py)
//! and JavaScript (componentize-js) against the Rust plugin (`wc`) and the
//! built-in `find_files`, in one run (issue 37).
//!
//! Each plugin is built with the real toolchain (skipped, with a note,
//! when `GOAT_COMPONENTIZE_PY` or `GOAT_COMPONENTIZE_JS` is not set, as
//! `.ci/run` sets them) and loaded as a plugin (which compiles it), and
//! called once; then the calls are interleaved, each a fresh instance as every GOAT call
//! is, and the report is each median as a ratio of the Rust plugin's.
//!
//! Run: `cargo bench -p goat-tests --bench plugin_calls`
//! (`GOAT_BENCH_ROUNDS` sets the rounds, 15 by default).

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use goat_sandbox::{Access, Pen, Sandbox, SandboxBuilder, Tool};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the example in `plugins/examples/DIR` with `build`, in `out`.
fn python(componentize: &Path, out: &Path) -> Vec<u8> {
    let src = out.join("python");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(
        repo().join("plugins/examples/python/app.py"),
        src.join("app.py"),
    )
    .unwrap();
    let wasm = out.join("wc_py.wasm");
    let built = Command::new(componentize)
        .arg("-d")
        .arg(repo().join("wit"))
        .args(["-w", "file-tool", "componentize", "-p"])
        .arg(&src)
        .args(["app", "-o"])
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::read(wasm).unwrap()
}

fn javascript(toolchain: &Path, out: &Path) -> Vec<u8> {
    let src = out.join("javascript");
    std::fs::create_dir_all(&src).unwrap();
    for file in ["wc.js", "build.mjs"] {
        std::fs::copy(
            repo().join("plugins/examples/javascript").join(file),
            src.join(file),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink(toolchain.join("node_modules"), src.join("node_modules")).unwrap();
    let wasm = out.join("wc_js.wasm");
    let built = Command::new("node")
        .arg(src.join("build.mjs"))
        .arg(repo().join("wit"))
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::read(wasm).unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("GOAT_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    for n in 0..20 {
        std::fs::write(
            ws.join(format!("src/f{n}.txt")),
            "a line of some words\n".repeat(200),
        )
        .unwrap();
    }
    let sandbox: Sandbox = SandboxBuilder::new()
        .cache_dir(dir.path().join("cache"))
        .build()
        .unwrap();
    let pen = Pen::new(&ws, Access::Read).unwrap();
    let find_files = sandbox
        .load_pen_tools()
        .unwrap()
        .into_iter()
        .find(|t| t.spec().name == "find_files")
        .unwrap();
    let mut tools: Vec<(&str, Tool, &str)> = vec![
        (
            "rust plugin (wc)",
            sandbox
                .load_plugin(
                    "wc",
                    &std::fs::read(repo().join("plugins/dist/examples/wc.wasm")).unwrap(),
                )
                .unwrap(),
            r#"{"glob": "**/*.txt"}"#,
        ),
        (
            "built-in find_files",
            find_files,
            r#"{"pattern": "**/*.txt"}"#,
        ),
    ];
    match std::env::var_os("GOAT_COMPONENTIZE_PY") {
        Some(c) => tools.push((
            "python plugin",
            sandbox
                .load_plugin("wcpy", &python(Path::new(&c), dir.path()))
                .unwrap(),
            r#"{"glob": "**/*.txt"}"#,
        )),
        None => println!("note: GOAT_COMPONENTIZE_PY is not set; no Python plugin"),
    }
    match std::env::var_os("GOAT_COMPONENTIZE_JS") {
        Some(t) => tools.push((
            "javascript plugin",
            sandbox
                .load_plugin("wcjs", &javascript(Path::new(&t), dir.path()))
                .unwrap(),
            r#"{"glob": "**/*.txt"}"#,
        )),
        None => println!("note: GOAT_COMPONENTIZE_JS is not set; no JavaScript plugin"),
    }
    // The first call is not what is measured.
    for (name, tool, args) in &tools {
        let started = Instant::now();
        let out = sandbox.call(tool, args, &pen).unwrap();
        assert!(out.is_ok(), "{name}: {out:?}");
        println!(
            "{name:<22} first call (compiles) {:>10.1?}",
            started.elapsed()
        );
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); tools.len()];
    for _ in 0..rounds {
        for (i, (_, tool, args)) in tools.iter().enumerate() {
            let started = Instant::now();
            sandbox.call(tool, args, &pen).unwrap().unwrap();
            samples[i].push(started.elapsed());
        }
    }
    let medians: Vec<Duration> = samples.into_iter().map(median).collect();
    let base = medians[0];
    println!("warm call, median of {rounds}, 20 files of 4 KiB:");
    for ((name, _, _), m) in tools.iter().zip(&medians) {
        println!(
            "  {name:<22} {m:>10.1?}   {:.2}x the rust plugin",
            m.as_secs_f64() / base.as_secs_f64()
        );
    }
}
