//! The runner and its containment, called directly (the hostile cases run
//! through the `goat` binary in host/cli/tests/all/command.rs).

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::time::Duration;

use goat_command::{
    Changes, CommandRequest, Containment, ContainmentMode, Exit, Network, WorkspaceRules,
};

mod attempt;

/// Only the version-control directories protected, as with no rules.
pub(crate) struct Protected;

impl WorkspaceRules for Protected {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, path: &str) -> Result<(), String> {
        if path.split('/').any(|c| c == ".git") {
            Err(format!("{path} is version-control metadata"))
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

fn containment(workspace: &Path, mode: ContainmentMode) -> Containment {
    Containment {
        workspace: workspace.canonicalize().unwrap(),
        read_paths: Vec::new(),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: goat_command::PidsCgroup::WhereAvailable,
        mode,
        home: None,
        layers_dir: None,
    }
}

/// Runs in a view and lands what the inspection lets through.
fn run_landed(workspace: &Path, command: &str) -> goat_command::CommandOutcome {
    let mut out = goat_command::run(
        &containment(workspace, ContainmentMode::Namespace),
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            timeout: Duration::from_secs(20),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .unwrap();
    if let Changes::Pending(pending) =
        std::mem::replace(&mut out.changes, Changes::Unreadable(String::new()))
    {
        let mut pending = pending;
        let found = pending.inspect(&Protected);
        if found.refused.is_empty() {
            pending.land().unwrap();
        }
    }
    out
}

#[test]
fn a_fresh_repository_root_takes_new_files_in_a_view() {
    if goat_command::namespace_support().is_err() {
        eprintln!(
            "skipped: no namespace view here: {}",
            goat_command::namespace_support().unwrap_err()
        );
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.path().join("old.txt"), "old").unwrap();
    let out = run_landed(
        ws.path(),
        "mkdir -p target/debug && echo built > target/debug/app && echo new > root.txt && rm old.txt && \
         cat /proc/self/status | grep CapEff; echo x >> .git/config; echo $?",
    );
    assert_eq!(out.exit, Exit::Code(0), "{}", out.render());
    assert!(
        out.output.text.contains("CapEff:\t0000000000000000"),
        "{}",
        out.render()
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("root.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("target/debug/app")).unwrap(),
        "built\n"
    );
    assert!(!ws.path().join("old.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
}

fn run(workspace: &Path, command: &str) -> goat_command::CommandOutcome {
    goat_command::run(
        &containment(workspace, ContainmentMode::Landlock),
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            timeout: Duration::from_secs(10),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .unwrap()
}

#[test]
fn a_command_runs_in_the_workspace_and_writes_there() {
    let ws = tempfile::tempdir().unwrap();
    let out = run(
        ws.path(),
        "echo hi > made.txt && cat made.txt && mkdir d && echo x > d/y",
    );
    assert_eq!(out.exit, Exit::Code(0), "{}", out.render());
    assert_eq!(out.output.text, "hi\n");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("d/y")).unwrap(),
        "x\n"
    );
}

#[test]
fn git_metadata_stays_read_only_but_readable() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    let out = run(
        ws.path(),
        "cat .git/config; echo evil >> .git/config; echo $?; echo ok > src/a; touch .git/hooks-x; \
         echo $?",
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.path().join(".git/hooks-x").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/a")).unwrap(),
        "ok\n"
    );
    assert!(out.output.text.starts_with("[core]\n"), "{}", out.render());
}

/// Someone edits a file while the change set waits (the person being
/// asked): landing refuses, every step is taken back, their edit stands.
#[test]
fn a_file_changed_after_the_command_is_never_replaced_by_its_landing() {
    if goat_command::namespace_support().is_err() {
        eprintln!("skipped: no namespace view here");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "old").unwrap();
    std::fs::write(ws.path().join("b.txt"), "old").unwrap();
    let out = goat_command::run(
        &containment(ws.path(), ContainmentMode::Namespace),
        &Protected,
        &CommandRequest {
            command: "echo cmd > a.txt; echo cmd > b.txt; echo new > c.txt",
            cwd: None,
            timeout: Duration::from_secs(20),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .unwrap();
    let Changes::Pending(mut pending) = out.changes else {
        panic!("no change set");
    };
    assert!(pending.inspect(&Protected).refused.is_empty());
    // The person's editor saves b.txt meanwhile (a new inode, as editors do).
    std::fs::write(ws.path().join("b.tmp"), "the person's").unwrap();
    std::fs::rename(ws.path().join("b.tmp"), ws.path().join("b.txt")).unwrap();
    let err = pending.land().unwrap_err();
    assert!(err.taken_back, "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("b.txt")).unwrap(),
        "the person's"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "old"
    );
    assert!(!ws.path().join("c.txt").exists());
}

/// A stand-in for GOAT's proxy: answers every connection with one line
/// and counts them.
#[derive(Debug, Default)]
struct Greeter {
    served: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl goat_command::ProxyLink for Greeter {
    fn serve(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        let served = self.served.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = std::io::Write::write_all(&mut stream, b"via-proxy\n");
            }
        });
        Ok(())
    }
}

/// What a proxied command may and may not do with sockets, in Python.
const SOCKET_PROBE: &str = r#"
import os, socket, sys
port = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])
def attempt(name, f):
    try:
        print(name, "ok", f())
    except OSError as e:
        print(name, "refused", e.errno)
def proxy():
    s = socket.create_connection(("127.0.0.1", port), 3)
    return s.recv(100).decode().strip()
attempt("proxy", proxy)
attempt("direct", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3) and "connected")
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM) and "made")
attempt("mptcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262) and "made")
attempt("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132) and "made")
def mptcp_connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.settimeout(3)
    s.connect(("127.0.0.1", int(sys.argv[1])))
    return "connected"
attempt("mptcp_connect", mptcp_connect)
def fastopen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    return s.sendto(b"x", 0x20000000, ("127.0.0.1", int(sys.argv[1])))
attempt("fastopen", fastopen)
attempt("bind", lambda: socket.socket().bind(("127.0.0.1", 0)) or "bound")
print("vars", os.environ.get("http_proxy"), os.environ.get("ALL_PROXY"), os.environ.get("NO_PROXY"))
"#;

/// A proxied command reaches the proxy and nothing else, in either
/// containment: a listener on the host's loopback gets no connection, and
/// UDP, MPTCP, SCTP, TCP Fast Open and binding are refused.
#[test]
fn a_proxied_command_reaches_the_proxy_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.py"), SOCKET_PROBE).unwrap();
    let direct = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    direct.set_nonblocking(true).unwrap();
    let direct_port = direct.local_addr().unwrap().port();
    for mode in [ContainmentMode::Namespace, ContainmentMode::Landlock] {
        if mode == ContainmentMode::Namespace && goat_command::namespace_support().is_err() {
            eprintln!("skipped the view: no namespace view here");
            continue;
        }
        let greeter = Greeter::default();
        let mut contained = containment(dir.path(), mode);
        contained.network = Network::Proxied;
        contained.env = vec!["NO_PROXY".to_owned()];
        let command = format!("/usr/bin/python3 probe.py {direct_port}");
        let out = goat_command::run(
            &contained,
            &Protected,
            &CommandRequest {
                command: &command,
                cwd: None,
                timeout: Duration::from_secs(20),
                proxy: Some(&greeter),
                interrupt: None,
                stdin: None,
                stdout_apart: false,
            },
        )
        .unwrap();
        let text = out.output.text.clone();
        eprintln!("{mode:?}:\n{text}");
        assert_eq!(out.exit, Exit::Code(0), "{mode:?}: {text}");
        assert!(text.contains("proxy ok via-proxy"), "{mode:?}: {text}");
        for refused in [
            "direct refused",
            "udp refused 1",
            "mptcp refused 1",
            "sctp refused 1",
            "mptcp_connect refused",
        ] {
            assert!(text.contains(refused), "{mode:?}: {refused}: {text}");
        }
        assert!(text.contains("fastopen refused"), "{mode:?}: {text}");
        assert!(text.contains("bind refused"), "{mode:?}: {text}");
        let port = match mode {
            ContainmentMode::Namespace => goat_command::VIEW_PROXY_PORT.to_string(),
            _ => String::new(),
        };
        assert!(
            text.contains(&format!("vars http://127.0.0.1:{port}")),
            "{mode:?}: {text}"
        );
        assert!(
            text.trim_end().ends_with("None"),
            "NO_PROXY passed on: {text}"
        );
        assert_eq!(greeter.served.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(
            matches!(direct.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{mode:?}: the listener outside got a connection"
        );
    }
}

/// Without a proxy to serve it, a proxied command does not run.
#[test]
fn a_proxied_command_without_a_proxy_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut contained = containment(dir.path(), ContainmentMode::Landlock);
    contained.network = Network::Proxied;
    let out = goat_command::run(
        &contained,
        &Protected,
        &CommandRequest {
            command: "touch ran",
            cwd: None,
            timeout: Duration::from_secs(20),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    );
    assert!(out.is_err());
    assert!(!dir.path().join("ran").exists());
}

/// When the test fires the interrupt.
enum Fire {
    /// Before the command is run.
    Before,
    /// Once a `sleep` with this argument runs: what the command line did
    /// before it is done.
    AtSleep(String),
}

/// Whether a `sleep ARG` process runs.
fn sleeping(arg: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        cmdline == format!("sleep\0{arg}\0").as_bytes()
    })
}

/// Runs `command` with an interrupt fired as `fire` says, with a timeout
/// far longer than the interrupt takes.
fn run_interrupted(
    workspace: &Path,
    mode: ContainmentMode,
    command: &str,
    fire: Fire,
) -> Result<goat_command::CommandOutcome, goat_command::CommandError> {
    let interrupt = goat_command::Interrupt::new();
    if matches!(fire, Fire::Before) {
        interrupt.fire();
    }
    let firing = interrupt.clone();
    let fired = std::thread::spawn(move || {
        if let Fire::AtSleep(arg) = fire {
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while !sleeping(&arg) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            firing.fire();
        }
    });
    let out = goat_command::run(
        &containment(workspace, mode),
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            // Without the interrupt the command ends here, as `TimedOut`.
            timeout: Duration::from_secs(30),
            proxy: None,
            interrupt: Some(&interrupt),
            stdin: None,
            stdout_apart: false,
        },
    );
    fired.join().unwrap();
    out
}
#[test]
fn an_interrupt_kills_the_whole_group_at_once_and_says_so() {
    let ws = tempfile::tempdir().unwrap();
    let (background, foreground) = (
        format!("600.{}1", std::process::id()),
        format!("601.{}1", std::process::id()),
    );
    // A child in the background and the shell both wait far past the
    // test; the interrupt must end both, not the timeout.
    let out = run_interrupted(
        ws.path(),
        ContainmentMode::Landlock,
        &format!("echo made > made.txt; sleep {background} & echo \"pid $!\"; sleep {foreground}"),
        Fire::AtSleep(foreground.clone()),
    )
    .unwrap();
    assert_eq!(out.exit, Exit::Interrupted, "{}", out.render());
    assert!(
        out.render().starts_with("cancelled with the turn"),
        "{}",
        out.render()
    );
    assert_eq!(out.exit_code(), None);
    let pid: u32 = out
        .output
        .text
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Killed with the group: gone, or at most a zombie waiting for init.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.split_whitespace().nth(2) == Some("Z"),
        "the background sleep outlived the interrupt: {state}"
    );
    assert!(!sleeping(&background) && !sleeping(&foreground));
    // Landlock only: what it did before is in the workspace, and seen.
    match &out.changes {
        Changes::Applied(set) => assert!(
            set.changes.iter().any(|c| c.path == "made.txt"),
            "{:?}",
            set.changes
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_interrupt_in_a_view_leaves_the_changes_pending_for_goat_to_drop() {
    if goat_command::namespace_support().is_err() {
        eprintln!(
            "skipped: no namespace view here: {}",
            goat_command::namespace_support().unwrap_err()
        );
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let foreground = format!("601.{}2", std::process::id());
    let out = run_interrupted(
        ws.path(),
        ContainmentMode::Namespace,
        &format!("echo made > made.txt; sleep {foreground}"),
        Fire::AtSleep(foreground.clone()),
    )
    .unwrap();
    assert_eq!(out.exit, Exit::Interrupted, "{}", out.render());
    assert!(!ws.path().join("made.txt").exists());
    match out.changes {
        Changes::Pending(pending) => {
            assert!(
                pending.set.changes.iter().any(|c| c.path == "made.txt"),
                "{:?}",
                pending.set.changes
            );
            pending.discard();
        }
        other => panic!("{other:?}"),
    }
    assert!(!ws.path().join("made.txt").exists());
}

#[test]
fn an_interrupt_fired_before_the_start_runs_nothing() {
    let ws = tempfile::tempdir().unwrap();
    for mode in [ContainmentMode::Landlock, ContainmentMode::Namespace] {
        if mode == ContainmentMode::Namespace && goat_command::namespace_support().is_err() {
            continue;
        }
        let out = run_interrupted(ws.path(), mode, "echo ran > ran.txt", Fire::Before);
        assert!(
            matches!(out, Err(goat_command::CommandError::Interrupted)),
            "{out:?}"
        );
        assert!(!ws.path().join("ran.txt").exists());
    }
}
