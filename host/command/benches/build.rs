//! What a namespace view with change capture costs a real build (issue
//! 21, ADR-0077): `cargo build` of a small generated crate, bare (`sh -c`
//! with the same environment) and contained (`goat_command::run` in a
//! view, then the change set inspected and landed, as the router does), in
//! one run, interleaved. Reports medians and their ratio for a fresh build
//! (target removed first) and a no-op build, the number of files the fresh
//! build leaves, and the time to read and land a change set of 10,000 new
//! files against making them bare.
//!
//! `cargo bench -p goat-command --bench build` (`GOAT_BENCH_ROUNDS`, default
//! 3; `GOAT_BENCH_CRATES`, default 100).

#![expect(clippy::unwrap_used, clippy::expect_used, reason = "a benchmark")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goat_command::{
    Changes, CommandRequest, Containment, ContainmentMode, Network, PidsCgroup, WorkspaceRules,
};

struct Protected;

impl WorkspaceRules for Protected {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, path: &str) -> Result<(), String> {
        if path.split('/').any(|c| c == ".git") {
            Err("version-control metadata".to_owned())
        } else {
            Ok(())
        }
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

fn env_of(home: &Path) -> Vec<(String, String)> {
    vec![
        ("PATH".into(), std::env::var("PATH").unwrap()),
        ("HOME".into(), home.display().to_string()),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

/// The command with the same environment and a session of its own (as a
/// contained one has: a new session is a new scheduler autogroup, which on
/// a loaded machine is scheduled apart from the bench's own).
fn bare(dir: &Path, home: &Path, command: &str) -> Duration {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let mut cmd = Command::new("/bin/sh");
    // SAFETY: one system call in the child.
    #[expect(
        unsafe_code,
        reason = "setsid in the child, as the contained command gets"
    )]
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
    let out = cmd
        .args(["-c", command])
        .current_dir(dir)
        .env_clear()
        .envs(env_of(home))
        .env("TMPDIR", std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// Runs contained and lands; the whole time, and the landing's share.
fn contained(containment: &Containment, command: &str) -> (Duration, Duration, usize) {
    let started = Instant::now();
    let mut out = goat_command::run(
        containment,
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            timeout: Duration::from_secs(600),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .unwrap();
    assert_eq!(out.exit_code(), Some(0), "{}", out.render());
    let taken = std::mem::replace(&mut out.changes, Changes::Unreadable(String::new()));
    let Changes::Pending(mut pending) = taken else {
        panic!("not in a view: {}", out.render());
    };
    let found = pending.inspect(&Protected);
    assert!(found.refused.is_empty(), "{found:?}");
    let n = pending.set.changes.len();
    let landing = Instant::now();
    pending.land().unwrap();
    (started.elapsed(), landing.elapsed(), n)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    n
}

/// A Cargo workspace of `crates` small library crates (`modules` modules
/// each) and a binary using them all: a fresh debug build leaves some
/// twenty files per crate (fingerprints, `deps`, incremental state).
fn make_crate(dir: &Path, crates: usize, modules: usize) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let members: Vec<String> = (0..crates).map(|c| format!("\"c{c}\"")).collect();
    let deps: String = (0..crates)
        .map(|c| format!("c{c} = {{ path = \"c{c}\" }}\n"))
        .collect();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"benched\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\n{deps}\n[workspace]\nmembers = [{}]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    let mut main = String::from("fn main() {\n    let mut x = 1u64;\n");
    for c in 0..crates {
        let src = dir.join(format!("c{c}/src"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(
            dir.join(format!("c{c}/Cargo.toml")),
            format!("[package]\nname = \"c{c}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )
        .unwrap();
        let mut lib = String::new();
        for m in 0..modules {
            lib.push_str(&format!(
                "pub mod m{m} {{ pub fn f(x: u64) -> u64 {{ x.wrapping_mul({}) ^ (x >> 3) }} }}\n",
                c * modules + m + 7
            ));
        }
        std::fs::write(src.join("lib.rs"), lib).unwrap();
        main.push_str(&format!("    x = c{c}::m0::f(x);\n"));
    }
    main.push_str("    println!(\"{x}\");\n}\n");
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
}

fn main() {
    goat_command::namespace_support().expect("a namespace view is needed for this bench");
    let rounds: usize = std::env::var("GOAT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let crates: usize = std::env::var("GOAT_BENCH_CRATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let modules = 5;
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let base = tempfile::tempdir().unwrap();
    let bare_dir = base.path().join("bare");
    let boxed_dir = base.path().join("boxed");
    make_crate(&bare_dir, crates, modules);
    make_crate(&boxed_dir, crates, modules);
    let containment = Containment {
        workspace: boxed_dir.canonicalize().unwrap(),
        read_paths: goat_command::default_read_paths(&home),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: PidsCgroup::WhereAvailable,
        mode: ContainmentMode::Namespace,
        home: Some(home.clone()),
        layers_dir: None,
    };
    let build = "cargo build --offline --quiet";
    // Warm the toolchain's caches once each way.
    bare(&bare_dir, &home, build);
    contained(&containment, build);

    let (mut fresh_bare, mut fresh_boxed, mut fresh_land) = (Vec::new(), Vec::new(), Vec::new());
    let (mut noop_bare, mut noop_boxed) = (Vec::new(), Vec::new());
    let mut files = 0;
    let mut changed = 0;
    for _ in 0..rounds {
        std::fs::remove_dir_all(bare_dir.join("target")).unwrap();
        std::fs::remove_dir_all(boxed_dir.join("target")).unwrap();
        fresh_bare.push(bare(&bare_dir, &home, build));
        let (t, land, n) = contained(&containment, build);
        fresh_boxed.push(t);
        fresh_land.push(land);
        changed = n;
        files = count_files(&boxed_dir.join("target"));
        noop_bare.push(bare(&bare_dir, &home, build));
        noop_boxed.push(contained(&containment, build).0);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let report = |what: &str, b: Vec<Duration>, c: Vec<Duration>| {
        let (b, c) = (median(b), median(c));
        println!(
            "{what:28} bare {:9.1} ms  contained {:9.1} ms  ratio {:5.3}",
            ms(b),
            ms(c),
            c.as_secs_f64() / b.as_secs_f64()
        );
    };
    println!(
        "workspace: {crates} crates and a binary; fresh build leaves {files} files in target/ \
         ({changed} paths in its change set); {rounds} rounds"
    );
    report("fresh cargo build", fresh_bare, fresh_boxed);
    println!(
        "{:28} landing alone {:9.1} ms (median)",
        "",
        ms(median(fresh_land))
    );
    report("no-op cargo build", noop_bare, noop_boxed);

    // Landing a change set of 10,000 new files, against making them bare.
    let many =
        "mkdir many && cd many && i=0; while [ $i -lt 10000 ]; do echo $i > f$i; i=$((i+1)); done";
    let (mut make_bare, mut make_boxed, mut land) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let _ = std::fs::remove_dir_all(bare_dir.join("many"));
        let _ = std::fs::remove_dir_all(boxed_dir.join("many"));
        make_bare.push(bare(&bare_dir, &home, many));
        let (t, l, n) = contained(&containment, many);
        assert_eq!(n, 10_001);
        make_boxed.push(t);
        land.push(l);
    }
    report("10,000 new files", make_bare, make_boxed);
    println!(
        "{:28} landing alone {:9.1} ms (median)",
        "",
        ms(median(land))
    );
}
