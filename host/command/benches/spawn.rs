//! What containment adds to starting a command: `true` and `cargo
//! --version`, run bare (`/bin/sh -c`, output read to the end) and through
//! `goat_command::run`, in one run, interleaved so both see the same
//! machine. Prints the medians, the ratio and the milliseconds added; the
//! "paired" figure is the median of each round's contained time minus the
//! bare time of the same round, which holds up best on a loaded machine.
//! "bare, own session" is the bare command with `setsid` alone: the share
//! of the contained cost that is the command's own session, not the
//! sandbox. "namespace view" is a command in a view (ADR-0077): the
//! namespaces, mounts and overlay, and its change set read after.
//!
//! Each run starts after a pause, as a tool call does: back-to-back runs
//! would hide a cost the kernel defers (joining a cgroup through
//! `cgroup.procs` waited for an RCU grace period only when the previous
//! join was more than a grace period ago, so `true` looked free and
//! `cargo --version` did not).
//!
//! `cargo bench -p goat-command --bench spawn`

#![expect(clippy::unwrap_used, reason = "a benchmark")]

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goat_command::{
    CommandRequest, Containment, ContainmentMode, Network, PidsCgroup, WorkspaceRules,
};

/// Runs of each command, each way.
const RUNS: usize = 40;

/// Pause before each measured run: longer than an RCU grace period, so
/// each run meets the kernel as a tool call seconds after the last does.
const PAUSE: Duration = Duration::from_millis(30);

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
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, name: &str) -> bool {
        name == ".git"
    }
}

/// Whether the bare command gets a session of its own, as a contained one
/// does.
#[derive(Clone, Copy)]
enum Session {
    /// The bench's own session (and scheduler autogroup).
    Shared,
    /// `setsid` in the child: a new session is a new scheduler autogroup,
    /// which on a loaded machine waits behind the other sessions' work.
    /// Measured so that share of the contained cost can be told apart.
    Own,
}

/// The command with the environment a contained one gets (the allowlist),
/// so only the containment differs: `cargo bench` itself sets variables
/// (`RUSTUP_TOOLCHAIN`) that would spare the bare rustup proxy its work.
fn bare(command: &str, session: Session) -> Duration {
    let started = Instant::now();
    let mut cmd = Command::new("/bin/sh");
    cmd.env_clear();
    for name in ["PATH", "HOME", "LANG", "TERM"] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    if let Session::Own = session {
        #[expect(unsafe_code, reason = "setsid in the child, as run_command does")]
        // SAFETY: the hook makes one async-signal-safe system call.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::setsid()?;
                Ok(())
            });
        }
    }
    let out = cmd
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    started.elapsed()
}

fn contained(containment: &Containment, command: &str) -> Duration {
    let started = Instant::now();
    let out = goat_command::run(
        containment,
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            timeout: Duration::from_secs(60),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .unwrap();
    assert_eq!(out.exit_code(), Some(0), "{}", out.render());
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    goat_command::support().unwrap();
    // A small workspace shaped like a repository: a .git directory makes
    // the root split, so the walk and per-entry rules are measured too.
    let ws = tempfile::tempdir().unwrap();
    for dir in [".git/objects", "src", "tests"] {
        std::fs::create_dir_all(ws.path().join(dir)).unwrap();
    }
    for file in ["Cargo.toml", "src/lib.rs", "tests/t.rs", ".git/config"] {
        std::fs::write(ws.path().join(file), "x\n").unwrap();
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let containment = Containment {
        workspace: ws.path().canonicalize().unwrap(),
        read_paths: home
            .as_deref()
            .map(goat_command::default_read_paths)
            .unwrap_or_default(),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: PidsCgroup::Never,
        mode: ContainmentMode::Landlock,
        home: home.clone(),
        layers_dir: None,
    };
    // As root, each command also joins a pids cgroup: measured apart.
    // A namespace view (ADR-0077) where one can be made: the mounts, the
    // overlay, the change set read after (nothing to land for these).
    let in_view = Containment {
        mode: if goat_command::namespace_support().is_ok() {
            ContainmentMode::Namespace
        } else {
            ContainmentMode::Landlock
        },
        ..containment.clone()
    };
    let with_cgroup = Containment {
        pids_cgroup: PidsCgroup::WhereAvailable,
        ..containment.clone()
    };
    for command in ["true", "cargo --version"] {
        // Warm the page cache and the toolchain's own caches.
        bare(command, Session::Shared);
        contained(&containment, command);
        contained(&with_cgroup, command);
        contained(&in_view, command);
        let mut viewed = Vec::with_capacity(RUNS);
        let mut plain = Vec::with_capacity(RUNS);
        let mut session = Vec::with_capacity(RUNS);
        let mut boxed = Vec::with_capacity(RUNS);
        let mut grouped = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            std::thread::sleep(PAUSE);
            plain.push(bare(command, Session::Shared));
            std::thread::sleep(PAUSE);
            session.push(bare(command, Session::Own));
            std::thread::sleep(PAUSE);
            boxed.push(contained(&containment, command));
            std::thread::sleep(PAUSE);
            grouped.push(contained(&with_cgroup, command));
            std::thread::sleep(PAUSE);
            viewed.push(contained(&in_view, command));
        }
        let fastest = |t: &[Duration]| t.iter().min().copied().unwrap_or_default();
        for (what, times) in [
            ("bare, own session", session),
            ("contained", boxed),
            ("+ pids cgroup (root)", grouped),
            ("namespace view", viewed),
        ] {
            for (stat, plain, boxed) in [
                ("median", median(plain.clone()), median(times.clone())),
                ("fastest", fastest(&plain), fastest(&times)),
            ] {
                println!(
                    "{command:16} {what:21} {stat:7} bare {:7.2} ms  contained {:7.2} ms  \
                     ratio {:5.2}  added {:6.2} ms",
                    plain.as_secs_f64() * 1e3,
                    boxed.as_secs_f64() * 1e3,
                    boxed.as_secs_f64() / plain.as_secs_f64(),
                    (boxed.as_secs_f64() - plain.as_secs_f64()) * 1e3
                );
            }
            let mut added: Vec<f64> = plain
                .iter()
                .zip(&times)
                .map(|(bare, boxed)| (boxed.as_secs_f64() - bare.as_secs_f64()) * 1e3)
                .collect();
            added.sort_by(f64::total_cmp);
            println!(
                "{command:16} {what:21} paired  added {:6.2} ms (median of {RUNS} rounds)",
                added[added.len() / 2]
            );
        }
    }
}
