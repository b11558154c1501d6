//! `run_command` through the real binary: a build-and-test loop works, and
//! each thing a command must not do is refused or contained, with the
//! outcome checked on disk, on a socket, in the process table and in the
//! store (ADR-0070).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use goat_testkit::Reply;
use serde_json::json;

use crate::{Env, GoatRun, json_out, text};

/// `goat tools call run_command ARGS --workspace WS --allow-commands`,
/// with extra environment for goat.
fn command(env: &Env, args: &serde_json::Value, vars: &[(&str, &str)]) -> Output {
    let mut cmd = env.cmd();
    cmd.envs(vars.iter().copied()).args([
        "tools",
        "call",
        "run_command",
        &args.to_string(),
        "--workspace",
        env.ws_str(),
        "--allow-commands",
    ]);
    cmd.output().unwrap()
}

/// The result the model would see, from stdout (ran) or stderr (failed).
fn result(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// A home directory of the test's own, with a planted key and a toolchain
/// directory.
fn fake_home(env: &Env) -> PathBuf {
    let home = env.root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PLANTED-PRIVATE-KEY\n").unwrap();
    home
}

/// Processes whose working directory is inside `dir`: what a command left
/// running.
fn processes_in(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Ok(cwd) = std::fs::read_link(entry.path().join("cwd"))
            && cwd.starts_with(dir)
        {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(format!("{pid}: {}", String::from_utf8_lossy(&cmdline)));
        }
    }
    found
}

/// Waits briefly for the kernel to finish tearing processes down.
fn settle(dir: &Path) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let left = processes_in(dir);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tools_list_offers_run_command() {
    let env = Env::new();
    let out = env.run(&["tools", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.starts_with("run_command"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(line.contains("command"), "{line}");
    assert!(!line.contains("not offered"), "{line}");
    let specs = json_out(&env.run(&["tools", "list", "--json"]));
    let spec = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "run_command")
        .unwrap();
    assert_eq!(spec["access"], "command");
    assert_eq!(spec["parameters"]["required"], json!(["command"]));
}

#[test]
fn cwd_is_a_directory_inside_the_workspace() {
    let env = Env::new();
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&env.root, env.ws.join("up")).unwrap();
    let out = command(&env, &json!({"command": "pwd", "cwd": "sub"}), &[]);
    assert!(
        result(&out).ends_with(&format!("{}/sub\n", env.ws.display())),
        "{}",
        result(&out)
    );
    for cwd in ["..", "/etc", "up", "missing"] {
        let out = command(&env, &json!({"command": "pwd", "cwd": cwd}), &[]);
        assert!(!out.status.success(), "{cwd}: {}", result(&out));
        assert!(
            !result(&out).contains("exit code"),
            "{cwd}: {}",
            result(&out)
        );
    }
}

#[test]
fn a_build_and_test_loop_in_a_small_project_works() {
    let env = Env::new();
    let ws = &env.ws;
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\
         #[test] fn adds() { assert_eq!(add(2, 2), 4); }\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/main.rs"),
        "fn main() { println!(\"built and ran\"); }\n",
    )
    .unwrap();
    // A .git directory makes the workspace root a place where nothing can
    // be created: the build writes below it, in target/.
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    let home = std::env::var("HOME").unwrap();
    let toolchains = format!("{home}/.cargo:{home}/.rustup");
    let vars = [("GOAT_COMMANDS_READ_PATHS", toolchains.as_str())];

    let build = command(
        &env,
        &json!({"command": "rustc --edition 2021 -o target/app src/main.rs && ./target/app"}),
        &vars,
    );
    let shown = result(&build);
    assert!(build.status.success(), "{shown}");
    assert!(shown.starts_with("exit code 0;"), "{shown}");
    assert!(shown.contains("built and ran"), "{shown}");
    assert!(ws.join("target/app").is_file());

    let test = command(
        &env,
        &json!({"command": "rustc --edition 2021 --test -o target/t src/lib.rs && ./target/t"}),
        &vars,
    );
    let shown = result(&test);
    assert!(shown.starts_with("exit code 0;"), "{shown}");
    assert!(shown.contains("test result: ok. 1 passed"), "{shown}");

    // Break the code: the test run reports the failure and its exit code.
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a - b }\n\
         #[test] fn adds() { assert_eq!(add(2, 2), 4); }\n",
    )
    .unwrap();
    let failing = command(
        &env,
        &json!({"command": "rustc --edition 2021 --test -o target/t src/lib.rs && ./target/t"}),
        &vars,
    );
    let shown = result(&failing);
    assert!(shown.starts_with("exit code 101;"), "{shown}");
    assert!(shown.contains("1 failed"), "{shown}");
}

#[test]
fn writing_outside_the_workspace_is_refused() {
    let env = Env::new();
    let home = fake_home(&env);
    let outside = std::env::temp_dir().join(format!("goat-escape-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let out = command(
        &env,
        &json!({"command": format!(
            "echo x > {}; echo x > $HOME/escaped; echo x > {}/beside; echo inside > ok.txt; \
             ln /etc/hostname linked",
            outside.display(),
            env.root.display()
        )}),
        &[("HOME", home.to_str().unwrap())],
    );
    let shown = result(&out);
    // What the command was told depends on where the workspace is: with
    // Landlock only, writing outside is not permitted; in a view the rest
    // of the machine is read-only or absent, but a path under /tmp is in
    // the command's private /tmp, written and discarded. What matters is
    // the machine afterwards (below), and that the hard link failed.
    assert!(shown.contains("ln: failed to create hard link"), "{shown}");
    assert!(!outside.exists(), "wrote {}", outside.display());
    assert!(!home.join("escaped").exists());
    assert!(!env.root.join("beside").exists());
    // A hard link to a file outside would be writable through its name.
    assert!(!env.ws.join("linked").exists(), "{shown}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("ok.txt")).unwrap(),
        "inside\n"
    );
}

#[test]
fn a_key_in_the_home_directory_cannot_be_read() {
    let env = Env::new();
    let home = fake_home(&env);
    let out = command(
        &env,
        &json!({"command": "cat $HOME/.ssh/id_rsa; ls $HOME"}),
        &[("HOME", home.to_str().unwrap())],
    );
    let shown = result(&out);
    assert!(!shown.contains("PLANTED-PRIVATE-KEY"), "{shown}");
    assert!(!shown.contains(".ssh\n"), "{shown}");
    // In a view the home directory is an empty scratch one; with Landlock
    // only, it is there but not readable.
    assert!(
        shown.contains("Permission denied") || shown.contains("No such file or directory"),
        "{shown}"
    );
    // And GOAT does not suggest granting a key's directory.
    assert!(!shown.contains("commands.read_paths"), "{shown}");
}

#[test]
fn git_config_is_never_written() {
    let env = Env::new();
    std::fs::create_dir_all(env.ws.join(".git/hooks")).unwrap();
    std::fs::write(env.ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(env.ws.join("src")).unwrap();
    let out = command(
        &env,
        &json!({"command": "cat .git/config; echo '\tfsmonitor = evil' >> .git/config; \
                rm -f .git/config; echo evil > .git/hooks/pre-commit; mv .git moved; \
                echo fine > src/edited.rs"}),
        &[],
    );
    let shown = result(&out);
    assert!(shown.contains("[core]"), "it stays readable: {shown}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!env.ws.join(".git/hooks/pre-commit").exists());
    assert!(!env.ws.join("moved").exists());
    assert_eq!(
        std::fs::read_to_string(env.ws.join("src/edited.rs")).unwrap(),
        "fine\n"
    );
}

#[test]
fn deny_rules_on_workspace_paths_hold_for_commands() {
    let env = Env::new();
    std::fs::create_dir_all(env.ws.join("secrets")).unwrap();
    std::fs::write(env.ws.join("secrets/token"), "TOP-SECRET\n").unwrap();
    std::fs::write(env.ws.join("locked.txt"), "as it was\n").unwrap();
    for rule in [
        &["permissions", "deny", "*", "secrets"][..],
        &["permissions", "deny", "*", "locked.txt", "--write"][..],
    ] {
        let out = env.run(rule);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = command(
        &env,
        &json!({"command": "cat secrets/token; echo changed > locked.txt; cat locked.txt"}),
        &[],
    );
    let shown = result(&out);
    assert!(!shown.contains("TOP-SECRET"), "{shown}");
    assert!(shown.contains("as it was"), "still readable: {shown}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("locked.txt")).unwrap(),
        "as it was\n"
    );
}

/// A hard link in the workspace to a file a rule hides is covered in the
/// view as the file itself is (issue 39); two names of a visible file
/// still read.
#[test]
fn a_hard_link_to_a_denied_file_is_hidden_from_a_command() {
    let env = crate::boundary::with_hard_linked_secret();
    // In a view, and with Landlock alone, which judges a path, not the
    // file: the other name gets no grant there (issue 39).
    for containment in ["namespace", "landlock"] {
        let out = command(
            &env,
            &json!({"command": "cat innocent.txt; cat b.txt"}),
            &[("GOAT_COMMANDS_CONTAINMENT", containment)],
        );
        let shown = result(&out);
        assert!(!shown.contains("hard-linked"), "{containment}: {shown}");
        assert!(
            shown.contains("shared-by-two-names"),
            "{containment}: {shown}"
        );
    }
}

/// Connects to `port` from inside a command, with Python (a TCP client
/// `sh` lacks).
fn connect(port: u16) -> serde_json::Value {
    json!({"command": format!(
        "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3); \
         print(\"connected\")'"
    )})
}

#[test]
fn a_tcp_listener_on_localhost_gets_no_connection() {
    let env = Env::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = command(&env, &connect(port), &[]);
    let shown = result(&out);
    assert!(!shown.contains("connected\n"), "{shown}");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener got a connection"
    );
    // UDP and other families are refused too (seccomp).
    let udp = command(
        &env,
        &json!({"command": "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)'"}),
        &[],
    );
    assert!(
        result(&udp).contains("Operation not permitted"),
        "{}",
        result(&udp)
    );

    // The same command with the network opened connects: the test can see
    // a connection when there is one.
    let open = command(&env, &connect(port), &[("GOAT_COMMANDS_NETWORK", "1")]);
    assert!(result(&open).contains("connected"), "{}", result(&open));
    listener.set_nonblocking(false).unwrap();
    assert!(listener.accept().is_ok());
}

#[test]
fn the_api_key_in_goats_environment_never_reaches_a_command() {
    let env = Env::new();
    let out = command(
        &env,
        &json!({"command": "env; echo \"[$OPENAI_API_KEY][$LLAMA_API_KEY]\"; \
                             tr '\\0' '\\n' < /proc/$PPID/environ"}),
        &[
            ("OPENAI_API_KEY", "sk-planted-openai"),
            ("LLAMA_API_KEY", "sk-planted-llama"),
            ("GOAT_API_KEY_ENV", "LLAMA_API_KEY"),
        ],
    );
    let shown = result(&out);
    assert!(!shown.contains("sk-planted"), "{shown}");
    // Nor through GOAT's /proc entry: with Landlock only it is refused;
    // in a view GOAT is not there at all (the command's parent is outside
    // its PID namespace, so $PPID is 0).
    assert!(
        shown.contains("environ: Permission denied") || shown.contains("environ: No such file"),
        "{shown}"
    );
    assert!(!shown.contains("CARGO_BIN_EXE_goat"), "{shown}");
    assert!(shown.contains("[][]"), "{shown}");
    assert!(shown.contains("TMPDIR="), "{shown}");
}

#[test]
fn a_fork_bomb_is_stopped_and_nothing_is_left() {
    let env = Env::new();
    let started = Instant::now();
    let out = command(
        &env,
        &json!({"command": "bomb() { bomb | bomb & }; bomb; sleep 30", "timeout_secs": 3}),
        &[],
    );
    let shown = result(&out);
    assert!(started.elapsed() < Duration::from_secs(20), "{shown}");
    assert!(
        shown.contains("timed out after 3 s") || shown.starts_with("exit code"),
        "{shown}"
    );
    assert_eq!(settle(&env.ws), Vec::<String>::new());
}

/// Whether GOAT gives each command a pids cgroup here: root, with the
/// cgroup v1 `pids` hierarchy mounted (as in CI).
fn pids_cgroup_available() -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    root && Path::new("/sys/fs/cgroup/pids/cgroup.procs").exists()
}

/// The fork bomb above ends at its timeout by the group kill even with no
/// process cap at all (seen: with the pids cgroup and `RLIMIT_NPROC` taken
/// out it still passed, the bomb held only by an outer cgroup put around
/// the test run), so the cap itself is checked here, with a bounded number
/// of processes that is safe to start on a shared machine if the cap is
/// ever lost.
#[test]
fn a_command_cannot_start_more_processes_than_its_cap() {
    if !pids_cgroup_available() {
        // As another user the cap is RLIMIT_NPROC (4096 for all the
        // user's processes), too many to start in a test.
        eprintln!("skipped: no pids cgroup here (not root, or no cgroup v1 pids hierarchy)");
        return;
    }
    let env = Env::new();
    let started = Instant::now();
    // 600: above the cgroup's 512 (goat_command::limits::MAX_PROCESSES).
    let out = command(
        &env,
        &json!({"command": "i=0; while [ $i -lt 600 ]; do sleep 30 & i=$((i+1)); done; \
                            echo all 600 started", "timeout_secs": 60}),
        &[],
    );
    let shown = result(&out);
    assert!(!shown.contains("all 600 started"), "{shown}");
    // dash's word for fork's EAGAIN; the shell gives up there.
    assert!(shown.contains("Cannot fork"), "{shown}");
    assert!(shown.starts_with("exit code 2;"), "{shown}");
    assert!(started.elapsed() < Duration::from_secs(30), "{shown}");
    assert_eq!(settle(&env.ws), Vec::<String>::new());
}

#[test]
fn a_loop_whose_child_ignores_sigterm_is_killed_at_the_timeout() {
    let env = Env::new();
    let started = Instant::now();
    let out = command(
        &env,
        &json!({
            "command": "sh -c 'trap \"\" TERM; while :; do :; done' & trap '' TERM; while :; do :; done",
            "timeout_secs": 2
        }),
        &[],
    );
    let shown = result(&out);
    assert!(
        shown.contains("timed out after 2 s: the command and every process it started were killed"),
        "{shown}"
    );
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(15), "{shown}");
    assert_eq!(settle(&env.ws), Vec::<String>::new());
}

#[test]
fn a_background_process_is_gone_after_the_call() {
    let env = Env::new();
    let started = Instant::now();
    let out = command(
        &env,
        &json!({"command": "sleep 300 & nohup sleep 301 >/dev/null 2>&1 & \
                (setsid sleep 302 >/dev/null 2>&1 &); echo started"}),
        &[],
    );
    let shown = result(&out);
    assert!(shown.starts_with("exit code 0;"), "{shown}");
    assert!(shown.contains("started"), "{shown}");
    assert!(started.elapsed() < Duration::from_secs(20), "{shown}");
    assert_eq!(settle(&env.ws), Vec::<String>::new());
}

#[test]
fn a_hundred_megabytes_of_output_is_capped_head_and_tail() {
    let env = Env::new();
    let out = command(
        &env,
        &json!({"command": "echo FIRST-LINE; head -c 100000000 /dev/zero | tr '\\0' x; echo; echo LAST-LINE"}),
        &[],
    );
    let shown = result(&out);
    assert!(shown.len() < 64 * 1024, "{} bytes", shown.len());
    assert!(shown.contains("FIRST-LINE"), "head kept");
    assert!(shown.trim_end().ends_with("LAST-LINE"), "tail kept");
    assert!(
        shown.contains("bytes of output cut here; 100000022 bytes in all"),
        "{}",
        &shown[..shown.len().min(400)]
    );
}

#[test]
fn without_allow_commands_or_a_terminal_a_command_is_denied_and_does_not_run() {
    let env = Env::new();
    let out = env.run(&[
        "tools",
        "call",
        "run_command",
        r#"{"command":"touch ran.txt"}"#,
        "--workspace",
        env.ws_str(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("needs approval and no one is at a terminal"),
        "{}",
        text(&out.stderr)
    );
    assert!(!env.ws.join("ran.txt").exists());

    // An allow rule by prefix lets it run; a deny rule wins over the flag.
    let allow = env.run(&["permissions", "allow", "run_command", "--command", "touch"]);
    assert!(allow.status.success(), "{}", text(&allow.stderr));
    let bare = env.run(&["permissions", "allow", "run_command", "--command", "*"]);
    assert!(!bare.status.success());
    let out = env.run(&[
        "tools",
        "call",
        "run_command",
        r#"{"command":"touch ran.txt"}"#,
        "--workspace",
        env.ws_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(env.ws.join("ran.txt").exists());
    let deny = env.run(&["permissions", "deny", "*", "--command", "rm"]);
    assert!(deny.status.success(), "{}", text(&deny.stderr));
    let out = command(&env, &json!({"command": "true && rm ran.txt"}), &[]);
    assert!(
        result(&out).contains("forbidden by permission rule"),
        "{}",
        result(&out)
    );
    assert!(env.ws.join("ran.txt").exists());
}

#[tokio::test]
async fn the_store_keeps_the_command_exit_code_duration_and_output() {
    let run = GoatRun::builder()
        .replies([
            Reply::tool_call(
                "run_command",
                json!({"command": "echo hello-from-command; exit 3"}),
            ),
            Reply::text("Done."),
        ])
        .arg("--allow-commands")
        .run("Run it")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = run.sessions()[0]["id"].as_str().unwrap().to_owned();
    let shown = json_out(&run.env.run(&["sessions", "show", &id, "--json"]));
    let call = &shown["turns"][0]["rounds"][0]["tool_calls"][0];
    assert_eq!(call["tool"], "run_command");
    assert_eq!(call["status"], "ok");
    assert!(
        call["arguments"]
            .to_string()
            .contains("hello-from-command; exit 3")
    );
    let result = call["result"].as_str().unwrap();
    assert!(result.starts_with("exit code 3;"), "{result}");
    assert!(result.contains("hello-from-command\n"), "{result}");
    assert!(call["duration_ms"].as_i64().is_some(), "{call}");
    assert_eq!(call["exit_code"], 3, "{call}");
    // The model was told how it ended.
    assert!(run.request_text(1).contains("exit code 3"));

    let text_view = text(&run.env.run(&["sessions", "show", &id]).stdout);
    assert!(
        text_view.contains("run_command(")
            && text_view.contains("-> ok")
            && text_view.contains("exit code 3"),
        "{text_view}"
    );
}

#[test]
fn a_link_in_the_workspace_to_the_home_directory_grants_nothing() {
    for repository in [false, true] {
        let env = Env::new();
        let home = fake_home(&env);
        if repository {
            // The root is then granted entry by entry: the link is one.
            std::fs::create_dir(env.ws.join(".git")).unwrap();
        }
        std::os::unix::fs::symlink(home.join(".ssh"), env.ws.join("keys")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), env.ws.join("key")).unwrap();
        let out = command(
            &env,
            &json!({"command": "cat keys/id_rsa; cat key; echo x > keys/new"}),
            &[("HOME", home.to_str().unwrap())],
        );
        let shown = result(&out);
        assert!(!shown.contains("PLANTED-PRIVATE-KEY"), "{shown}");
        assert!(!home.join(".ssh/new").exists(), "{shown}");
    }
}

#[test]
fn a_command_cannot_signal_goat() {
    let env = Env::new();
    // $PPID is the goat process running the command.
    let out = command(
        &env,
        &json!({"command": "echo ppid=$PPID; kill -TERM $PPID; echo term=$?; kill -KILL $PPID; echo kill=$?"}),
        &[],
    );
    let shown = result(&out);
    assert!(out.status.success(), "goat was killed: {shown}");
    // With Landlock only the signals are refused; in a view GOAT is not
    // even in the command's PID namespace ($PPID is 0, and a signal to 0
    // reaches only the command's own group).
    assert!(
        (shown.contains("term=1") && shown.contains("kill=1")) || shown.contains("ppid=0\n"),
        "{shown}"
    );
}

#[test]
fn a_descriptor_goat_inherited_does_not_reach_the_command() {
    let env = Env::new();
    let secret = env.root.join("secret.txt");
    std::fs::write(&secret, "INHERITED-SECRET\n").unwrap();
    // Whoever starts goat may leave a descriptor open without
    // close-on-exec: here fd 5, on a file outside the workspace.
    let goat = env.cmd().get_program().to_owned();
    let mut sh = std::process::Command::new("/bin/sh");
    env.isolate(&mut sh);
    let args = json!({"command": "cat <&5; echo rc=$?"}).to_string();
    let out = sh
        .arg("-c")
        .arg(r#"exec 5< "$1"; shift; exec "$@""#)
        .arg("sh")
        .arg(&secret)
        .arg(&goat)
        .args([
            "tools",
            "call",
            "run_command",
            &args,
            "--workspace",
            env.ws_str(),
            "--allow-commands",
        ])
        .output()
        .unwrap();
    let shown = result(&out);
    assert!(!shown.contains("INHERITED-SECRET"), "{shown}");
    assert!(
        shown.contains("rc=2") || shown.contains("Bad file descriptor"),
        "{shown}"
    );
}

#[test]
fn a_readable_directory_holding_goats_own_files_is_refused() {
    let env = Env::new();
    let state = env.db.parent().unwrap().to_str().unwrap().to_owned();
    std::fs::create_dir_all(&state).unwrap();
    let out = command(
        &env,
        &json!({"command": "true"}),
        &[("GOAT_COMMANDS_READ_PATHS", state.as_str())],
    );
    assert_eq!(out.status.code(), Some(2), "{}", result(&out));
    let shown = text(&out.stderr);
    assert!(
        shown.contains("run_command would be able to read")
            && shown.contains("commands.read_paths"),
        "{shown}"
    );
}
