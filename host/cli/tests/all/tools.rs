//! `goat tools list` and `goat tools call`, the latter through the router
//! and the permission gate.

use std::io::Write;
use std::process::Stdio;

use crate::{Env, text};

#[test]
fn tools_list_names_each_tool_with_its_access() {
    let env = Env::new();
    let out = env.run(&["tools", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let rows: Vec<(&str, &str)> = listing
        .lines()
        .map(|l| {
            let mut cols = l.split_whitespace();
            (cols.next().unwrap(), cols.next().unwrap())
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("read_file", "read"),
            ("list_directory", "read"),
            ("find_files", "read"),
            ("search_files", "read"),
            ("write_file", "read-write"),
            ("edit_file", "read-write"),
            ("move_file", "read-write"),
            ("delete_file", "read-write"),
            ("run_command", "command"),
        ]
    );
}

#[test]
fn tools_list_json_has_full_specs() {
    let env = Env::new();
    let out = env.run(&["tools", "list", "--json"]);
    assert!(out.status.success());
    let specs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let edit = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "edit_file")
        .unwrap();
    assert_eq!(edit["access"], "read-write");
    assert_eq!(edit["path_fields"], serde_json::json!(["path"]));
    assert_eq!(
        edit["parameters"]["required"],
        serde_json::json!(["path", "old_string", "new_string"])
    );
    assert_eq!(edit["sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn call_prints_the_result_and_exits_zero() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "alpha\nbeta\n").unwrap();
    let out = env.run(&[
        "tools",
        "call",
        "read_file",
        r#"{"path":"a.txt"}"#,
        "--workspace",
        env.ws_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "     1\talpha\n     2\tbeta\n");
}

#[test]
fn writing_tool_without_allow_writes_is_denied_by_the_gate_and_nothing_is_written() {
    let env = Env::new();
    let args = r#"{"path":"new.txt","content":"x"}"#;
    let out = env.run(&[
        "tools",
        "call",
        "write_file",
        args,
        "--workspace",
        env.ws_str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.starts_with("denied: "), "{err}");
    assert!(err.contains("--allow-writes"), "{err}");
    assert!(!env.ws.join("new.txt").exists());

    let out = env.run(&[
        "tools",
        "call",
        "write_file",
        args,
        "--workspace",
        env.ws_str(),
        "--allow-writes",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("new.txt")).unwrap(),
        "x"
    );
}

#[test]
fn a_path_leaving_the_workspace_is_denied_before_the_tool_runs() {
    let env = Env::new();
    let out = env.run(&["tools", "call", "read_file", r#"{"path":"../etc/passwd"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(err.starts_with("denied: read_file was not run"), "{err}");
    assert!(err.contains("leaves the workspace"), "{err}");
}

#[test]
fn tool_failure_exits_one_with_the_models_message() {
    let env = Env::new();
    let out = env.run(&["tools", "call", "read_file", r#"{"path":"missing.txt"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(err.starts_with("read_file failed: not found: "), "{err}");

    // Arguments the schema refuses are the model's mistake too: exit 1.
    let out = env.run(&["tools", "call", "read_file", r#"{"path":"a","limit":"x"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("invalid arguments for read_file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_input_says_what_was_wrong() {
    let env = Env::new();
    let cases: [(&[&str], &str); 4] = [
        (
            &["tools", "call", "read_file", "{path: a}"],
            "ARGS_JSON is not valid JSON",
        ),
        (
            &["tools", "call", "read_file", "[1]"],
            "ARGS_JSON must be a JSON object",
        ),
        (
            &["tools", "call", "no_such_tool", "{}"],
            "no tool named 'no_such_tool'; available: read_file",
        ),
        (
            &[
                "tools",
                "call",
                "read_file",
                "{}",
                "--workspace",
                "/nonexistent/goat",
            ],
            "cannot use workspace",
        ),
    ];
    for (args, want) in cases {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_permission_database_inside_the_workspace_is_refused() {
    let env = Env::new();
    let inside = env.ws.join("perm.db");
    let out = env.run(&[
        "tools",
        "call",
        "read_file",
        r#"{"path":"a.txt"}"#,
        "--permissions",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("permission database") && err.contains("inside the workspace"),
        "{err}"
    );
    assert!(!inside.exists());
}

#[test]
fn arguments_can_come_from_stdin() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "from stdin\n").unwrap();
    let mut child = env
        .cmd()
        .args(["tools", "call", "read_file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"path": "a.txt"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "     1\tfrom stdin\n");
}

#[test]
fn closed_stdout_is_not_an_error() {
    let env = Env::new();
    let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(env.ws.join("big.txt"), big).unwrap();
    let mut child = env
        .cmd()
        .args([
            "tools",
            "call",
            "read_file",
            r#"{"path":"big.txt","limit":20000}"#,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once, as `| head -0` would.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
}

/// The first call of a built-in tool in a fresh home runs the code GOAT's
/// build compiled (issue 38): nothing is compiled, so nothing is cached,
/// and `goat --version` says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_home_calls_a_built_in_without_compiling_it() {
    use goat_testkit::{Reply, ScriptedServer};
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "alpha\n").unwrap();
    let engine = ScriptedServer::start(vec![
        Reply::tool_call("read_file", r#"{"path": "a.txt"}"#),
        Reply::text("It says alpha."),
    ])
    .await;
    let cache = env.root.join("fresh-cache");
    let mut cmd = env.cmd();
    cmd.env("GOAT_CACHE_DIR", &cache).args([
        "run",
        "--engine",
        &engine.base_url(),
        "--model",
        "qwen",
        "read a.txt",
    ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("read_file(path=\"a.txt\") -> ok"), "{err}");
    let tool_message = &engine.requests()[1].body["messages"];
    assert!(tool_message.to_string().contains("alpha"), "{tool_message}");
    let cached: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(cached, Vec::<std::ffi::OsString>::new(), "nothing compiled");

    let version = text(&env.run(&["--version"]).stdout);
    assert!(
        version.contains("8 built-in tools compiled when this binary was built"),
        "{version}"
    );
}
