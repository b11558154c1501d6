//! `goat run --logs-dir`: the events, the ATIF trajectory and a patch a
//! harness reads, written whole, and never inside the workspace.

use std::path::Path;
use std::process::Command;

use goat_testkit::Reply;
use serde_json::Value;

use crate::jsonl::{check_stream, lines};
use crate::{Env, GoatRun, text};

/// Every file under `dir` (not `.git`), with its bytes and whether it is
/// executable, for comparing trees.
fn files(dir: &Path) -> std::collections::BTreeMap<String, (Vec<u8>, bool)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                let meta = std::fs::metadata(&path).unwrap();
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(
                    rel,
                    (
                        std::fs::read(&path).unwrap(),
                        meta.permissions().mode() & 0o111 != 0,
                    ),
                );
            }
        }
    }
    out
}

/// A copy of the workspace as it is now, in a repository of its own (as
/// a harness's checkout is, and so that git does not take the checkout
/// this test runs in for it): the tree a run's patch applies to.
fn starting_tree(env: &Env) -> std::path::PathBuf {
    let start = env.root.join("start");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&env.ws)
        .arg(&start)
        .status()
        .unwrap();
    assert!(copied.success());
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&start)
        .status()
        .unwrap();
    assert!(init.success());
    start
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_dir_keeps_the_events_the_trajectory_and_a_patch_git_applies() {
    let run = GoatRun::builder()
        .replies([
            Reply::tool_call(
                "write_file",
                r#"{"path": "src/new.txt", "content": "new\nfile\n"}"#,
            ),
            Reply::tool_call(
                "edit_file",
                r#"{"path": "README.md", "old_string": "old line", "new_string": "new line"}"#,
            ),
            Reply::tool_call("delete_file", r#"{"path": "gone.txt"}"#),
            Reply::text("Done."),
        ])
        .arg("--output")
        .arg("jsonl")
        .arg("--allow-writes");
    let env = run.env();
    std::fs::write(env.ws.join("README.md"), "# Title\nold line\nend\n").unwrap();
    std::fs::write(env.ws.join("gone.txt"), "bye\n").unwrap();
    let start = starting_tree(env);
    let logs = env.root.join("logs");
    let run = run
        .arg("--logs-dir")
        .arg(logs.to_str().unwrap())
        .run("Change things")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());

    // events.jsonl is the stream, line for line.
    let kept = std::fs::read(logs.join("events.jsonl")).unwrap();
    assert_eq!(text(&kept), run.stdout());
    check_stream(&lines(&kept));

    // The patch, applied to a copy of the starting tree, gives the
    // workspace.
    let applied = Command::new("git")
        .args(["apply", "--verbose"])
        .arg(logs.join("changes.patch"))
        .current_dir(&start)
        .output()
        .unwrap();
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let applied = files(&start);
    assert!(
        applied.contains_key("src/new.txt"),
        "{applied:?}\npatch: {}\nstderr: {}",
        text(&std::fs::read(logs.join("changes.patch")).unwrap()),
        run.stderr()
    );
    assert!(!applied.contains_key("gone.txt"), "{applied:?}");
    assert_eq!(applied, files(&run.env.ws));

    // The trajectory is Harbor's.
    let trajectory: Value =
        serde_json::from_slice(&std::fs::read(logs.join("trajectory.json")).unwrap()).unwrap();
    assert_eq!(trajectory["session_id"], lines(&kept)[0]["session_id"]);
    if let Some(python) = crate::atif::harbor_python() {
        let read = crate::atif::harbor_reads(&python, &logs.join("trajectory.json")).unwrap();
        assert_eq!(read["agent"][0], "goat", "{read}");
    }
}

#[test]
fn a_logs_dir_inside_the_workspace_is_refused_before_anything_is_made() {
    let env = Env::new();
    let out = env.run(&[
        "run",
        "--engine",
        "http://127.0.0.1:9/v1",
        "--model",
        "q",
        "--output",
        "jsonl",
        "--logs-dir",
        "logs",
        "Hi",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!env.ws.join("logs").exists());
    let lines = lines(&out.stdout);
    assert_eq!(lines[0]["type"], "error");
    assert!(
        lines[0]["message"]
            .as_str()
            .unwrap()
            .contains("inside the workspace"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugins_writes_are_in_files_changed_in_the_patch_and_undone_byte_for_byte() {
    let run = GoatRun::builder()
        .replies([
            Reply::tool_call(
                "writer__write",
                r#"{"path": "notes.txt", "content": "by the plugin\n"}"#,
            ),
            Reply::tool_call(
                "writer__write",
                r#"{"path": "made.txt", "content": "new\n"}"#,
            ),
            Reply::tool_call("writer__write", r#"{"path": "gone.txt", "remove": true}"#),
            Reply::text("Done."),
        ])
        .arg("--output")
        .arg("jsonl")
        .arg("--allow-writes");
    let env = run.env();
    env.add_plugin(
        &crate::dist("testing/plugin_writer.wasm"),
        &["--name", "writer"],
    );
    let notes: Vec<u8> = b"kept\r\n\x00\xff bytes\n".to_vec();
    std::fs::write(env.ws.join("notes.txt"), &notes).unwrap();
    std::fs::write(env.ws.join("gone.txt"), "bye\n").unwrap();
    let start = starting_tree(env);
    let logs = env.root.join("logs");
    let run = run
        .arg("--logs-dir")
        .arg(logs.to_str().unwrap())
        .run("Use the plugin")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let events = lines(run.stdout().as_bytes());
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "completed", "{last}");
    let mut changed: Vec<&str> = last["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    changed.sort_unstable();
    assert_eq!(changed, ["gone.txt", "made.txt", "notes.txt"], "{last}");

    // The patch, applied to the starting tree, gives the workspace.
    let applied = Command::new("git")
        .args(["apply", "--verbose"])
        .arg(logs.join("changes.patch"))
        .current_dir(&start)
        .output()
        .unwrap();
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    assert_eq!(files(&start), files(&run.env.ws));

    // Undo puts every byte back.
    let out = run.env.run(&["undo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(run.env.ws.join("notes.txt")).unwrap(), notes);
    assert_eq!(
        std::fs::read_to_string(run.env.ws.join("gone.txt")).unwrap(),
        "bye\n"
    );
    assert!(!run.env.ws.join("made.txt").exists());
}
