//! MCP servers inside an attempt (issue 42): each starts in a view of its
//! own with the attempt's workspace bound in, so a `--writes` server's
//! writes go into the attempt's layer, recorded as the attempt's change.

use serde_json::json;

use super::{InOrder, can_attempt, in_layer};
use crate::jsonl::lines;
use crate::{GoatRun, call_reply, content_reply, text};

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_servers_writes_go_into_its_attempts_layer_and_land_with_it() {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .attempts_in_order(2)
        .arg("--verify")
        .arg("grep -q two made.txt")
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    crate::mcp::client::hostile(env, "scribe", &["probe"], &["--writes"]);
    crate::mcp::client::allow(env, "scribe__write_file");
    crate::mcp::client::allow(env, "scribe__read_file");
    let made = env.ws.join("made.txt");
    let builder = builder.replies([
        // Attempt 1: the server writes, in attempt 1's layer.
        call_reply(
            "a1",
            "scribe__write_file",
            &json!({ "path": "made.txt", "text": "one\n" }).to_string(),
        ),
        content_reply("Done."),
        // Attempt 2: the server cannot read what it wrote for attempt 1.
        call_reply(
            "b1",
            "scribe__read_file",
            &json!({ "path": made.to_str().unwrap() }).to_string(),
        ),
        call_reply(
            "b2",
            "scribe__write_file",
            &json!({ "path": "made.txt", "text": "two\n" }).to_string(),
        ),
        content_reply("Done."),
    ]);
    let run = builder.run("Write made.txt").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let out = lines(&run.out.stdout);
    crate::jsonl::validate(&out);
    let end = out.last().unwrap();
    assert_eq!(end["landed"], 2, "{end}");
    // Each attempt's server wrote into that attempt's layer, recorded as
    // the attempt's change.
    for (n, text) in [(1, "one\n"), (2, "two\n")] {
        let attempt = &end["attempts"][n - 1];
        assert_eq!(attempt["files_changed"], json!(["made.txt"]), "{end}");
        assert_eq!(
            std::fs::read_to_string(in_layer(&run.env.root, n as u32, "made.txt").unwrap())
                .unwrap(),
            text
        );
    }
    let requests = run.server.requests();
    let read = requests
        .iter()
        .map(|r| r.body["messages"].to_string())
        .find(|m| m.contains("b1") && m.contains("\"tool\""))
        .unwrap();
    assert!(read.contains("No such file"), "{read}");
    // Attempt 2's landed; the workspace holds it.
    assert_eq!(run.read("made.txt"), "two\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn as_an_unprivileged_user_an_mcp_server_starts_inside_an_attempt_and_writes_its_layer() {
    if !can_attempt() {
        return;
    }
    let Some(nobody) = crate::Nobody::new("goat-nobody-attempts-mcp") else {
        return;
    };
    // The server's script where nobody may read it.
    let servers = nobody.base.join("servers");
    std::fs::create_dir(&servers).unwrap();
    std::fs::copy(
        crate::mcp::client::servers_dir().join("hostile.py"),
        servers.join("hostile.py"),
    )
    .unwrap();
    nobody.chown(&servers);
    nobody.chown(&servers.join("hostile.py"));
    let python = crate::mcp::client::system_python();
    let script = servers.join("hostile.py");
    for args in [
        vec![
            "mcp",
            "add",
            "scribe",
            "--read",
            servers.to_str().unwrap(),
            "--writes",
            "--",
            python,
            script.to_str().unwrap(),
            "probe",
        ],
        vec!["mcp", "trust", "scribe", "--yes"],
        vec!["permissions", "allow", "scribe__write_file", ".", "--write"],
    ] {
        let out = nobody.goat(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let server = goat_testkit::ScriptedServer::start(vec![
        call_reply(
            "a1",
            "scribe__write_file",
            &json!({ "path": "made.txt", "text": "by nobody's server\n" }).to_string(),
        ),
        content_reply("Done."),
    ])
    .await;
    let url = server.base_url();
    let mut cmd = nobody.goat(&[
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "--attempts",
        "1",
        "--output",
        "jsonl",
        "Try",
    ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let end = lines(&out.stdout).last().cloned().unwrap();
    assert_eq!(
        end["attempts"][0]["files_changed"],
        json!(["made.txt"]),
        "{end}"
    );
    assert_eq!(end["landed"], 1, "{end}");
    let landed = nobody.ws.join("made.txt");
    assert_eq!(
        std::fs::read_to_string(&landed).unwrap(),
        "by nobody's server\n"
    );
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&landed).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    std::fs::remove_dir_all(&nobody.base).unwrap();
}
