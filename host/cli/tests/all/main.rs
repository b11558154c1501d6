//! End-to-end tests of the `goat` binary: exit codes, what it prints, and
//! what it does (or refuses to do) to files on disk.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn goat() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_goat"));
    cmd.env(
        "GOAT_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cli-cache"),
    );
    cmd.env_remove("NO_COLOR");
    cmd
}

fn run(args: &[&str], workspace: &Path) -> Output {
    goat().args(args).current_dir(workspace).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn tools_list_names_each_tool_with_its_access() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["tools", "list"], dir.path());
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
        ]
    );
}

#[test]
fn tools_list_json_has_full_specs() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["tools", "list", "--json"], dir.path());
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
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").unwrap();
    let ws = dir.path().to_str().unwrap();
    let out = run(
        &[
            "tools",
            "call",
            "read_file",
            r#"{"path":"a.txt"}"#,
            "--workspace",
            ws,
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "     1\talpha\n     2\tbeta\n");
}

#[test]
fn writing_tool_without_allow_writes_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_str().unwrap();
    let args = r#"{"path":"new.txt","content":"x"}"#;
    let out = run(
        &["tools", "call", "write_file", args, "--workspace", ws],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("add --allow-writes"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("new.txt").exists());

    let out = run(
        &[
            "tools",
            "call",
            "write_file",
            args,
            "--workspace",
            ws,
            "--allow-writes",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "x"
    );
}

#[test]
fn tool_failure_exits_one_with_the_models_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["tools", "call", "read_file", r#"{"path":"../etc/passwd"}"#],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(
        err.starts_with("read_file failed: permission denied: "),
        "{err}"
    );
    assert!(err.contains("leaves the workspace"), "{err}");
}

#[test]
fn bad_input_says_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
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
        let out = run(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn arguments_can_come_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "from stdin\n").unwrap();
    let mut child = goat()
        .args(["tools", "call", "read_file", "-"])
        .current_dir(dir.path())
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
    let dir = tempfile::tempdir().unwrap();
    let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), big).unwrap();
    let mut child = goat()
        .args([
            "tools",
            "call",
            "read_file",
            r#"{"path":"big.txt","limit":20000}"#,
        ])
        .current_dir(dir.path())
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

/// The ADR-0065 failure: function markup with a closing envelope only.
const UNEXECUTED: &str = "I'll read it.\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";

fn detect_stdin(args: &[&str], input: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut child = goat()
        .arg("detect")
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn detect_reports_missing_opening_envelope_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("reply.txt"), UNEXECUTED).unwrap();
    let out = run(
        &["detect", "--tools", "read_file,write_file", "reply.txt"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"unexecuted\": true, \"tool\": \"read_file\", \"form\": \"qwen-xml\", \
         \"markers\": [\"</tool_call>\"], \"span\": [14, 101]}\n"
    );
}

#[test]
fn detect_reads_stdin_and_exits_zero_either_way() {
    let cases = [
        (
            "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {}}\n</tool_call>",
            r#"{"unexecuted": true, "tool": "write_file", "form": "hermes-json", "markers": ["<tool_call>", "</tool_call>"], "span": [0, 64]}"#,
        ),
        (
            "Example:\n```\n<function=read_file>\n</function>\n</tool_call>\n```\n",
            r#"{"unexecuted": false, "tool": null, "form": null, "markers": [], "span": null}"#,
        ),
        (
            "<function=delete_all>\n</function>\n</tool_call>",
            r#"{"unexecuted": false, "tool": null, "form": null, "markers": ["</tool_call>"], "span": null}"#,
        ),
    ];
    for (input, want) in cases {
        let out = detect_stdin(&["--tools", "read_file, write_file"], input);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), format!("{want}\n"), "{input:?}");
        let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(parsed["unexecuted"].is_boolean());
    }
}

#[test]
fn detect_bad_input_is_exit_two_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["detect", "--tools", "read_file", "no-such-file.txt"],
            "reading no-such-file.txt",
        ),
        (&["detect", "--tools", "", "x"], "none empty"),
        (
            &["detect", "--tools", "read_file,,write_file"],
            "none empty",
        ),
        (&["detect", "x"], "--tools"),
    ];
    for (args, want) in cases {
        let out = run(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
