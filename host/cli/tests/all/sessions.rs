//! `goat sessions list` and `goat sessions show`: the record of what
//! happened, failed rounds included.

use goat_testkit::ScriptedServer;
use serde_json::json;

use crate::{Env, call_reply, content_reply, json_out, malformed_write, text};

/// A session whose one turn recovered from markup written as text: round 1
/// failed, round 2 wrote the file, round 3 answered.
async fn recovered_session(env: &Env) -> String {
    let server = ScriptedServer::start(vec![
        malformed_write(),
        call_reply(
            "call_1",
            "write_file",
            r#"{"path": "hello.txt", "content": "hello\n"}"#,
        ),
        content_reply("Created hello.txt."),
    ])
    .await;
    let url = server.base_url();
    let out = env
        .run_async(&[
            "run",
            "--engine",
            &url,
            "--model",
            "qwen",
            "--allow-writes",
            "--json",
            "Create hello.txt saying hello",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    json_out(&out)["session_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_list_and_show_include_the_failed_round() {
    let env = Env::new();
    let id = recovered_session(&env).await;

    let out = env.run(&["sessions", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2, "{listing}");
    assert!(lines[0].starts_with("ID "), "{listing}");
    let cols: Vec<&str> = lines[1].split_whitespace().collect();
    // id, date, time, "UTC", turns, model, workspace
    assert_eq!(cols[0], id);
    assert_eq!(&cols[3..], ["UTC", "1", "qwen", env.ws_str()], "{listing}");

    let out = env.run(&["sessions", "show", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for want in [
        &format!("session {id}\n") as &str,
        &format!("  workspace  {}\n", env.ws_str()),
        "  model      qwen\n",
        "turn 1 (#1): completed, recovery used\n",
        "  prompt: Create hello.txt saying hello\n",
        "  round 1: failed: unexecuted tool-call markup: no structured call was made; asked once for one\n",
        "    text: I'll create the file. <function=write_file>",
        "  round 2: ok\n",
        "    call write_file(path=\"hello.txt\", content=\"hello\\n\") -> ok [allow: allowed: \
         writing 'hello.txt' with write_file (writes are allowed: --allow-writes)]\n",
        "  round 3: ok\n    text: Created hello.txt.\n",
    ] {
        assert!(shown.contains(want), "missing {want:?} in:\n{shown}");
    }

    let detail = json_out(&env.run(&["sessions", "show", &id, "--json"]));
    assert_eq!(detail["session"]["id"], id.as_str());
    let turn = &detail["turns"][0];
    assert_eq!(turn["status"], "completed");
    assert_eq!(turn["recovery_used"], true);
    let rounds = turn["rounds"].as_array().unwrap();
    let statuses: Vec<&str> = rounds
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["failed", "ok", "ok"]);
    assert!(
        rounds[0]["failure"]
            .as_str()
            .unwrap()
            .contains("unexecuted tool-call markup")
    );
    assert!(
        rounds[0]["content"]
            .as_str()
            .unwrap()
            .contains("<function=write_file>")
    );
    let call = &rounds[1]["tool_calls"][0];
    assert_eq!(call["tool"], "write_file");
    assert_eq!(call["status"], "ok");
    assert_eq!(call["decision"], "allow");
    assert!(
        call["decision_reason"]
            .as_str()
            .unwrap()
            .contains("--allow-writes")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_call_shows_its_decision_and_reason() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        call_reply(
            "call_1",
            "write_file",
            r#"{"path": "a.txt", "content": "x"}"#,
        ),
        content_reply("It was denied."),
    ])
    .await;
    let url = server.base_url();
    let out = env
        .run_async(&[
            "run",
            "--engine",
            &url,
            "--model",
            "q",
            "--json",
            "Write a.txt",
        ])
        .await;
    let id = json_out(&out)["session_id"].as_str().unwrap().to_owned();
    let shown = text(&env.run(&["sessions", "show", &id]).stdout);
    assert!(
        shown.contains(
            "    call write_file(path=\"a.txt\", content=\"x\") -> denied [deny: denied: writing \
             'a.txt' with write_file needs approval"
        ),
        "{shown}"
    );
    // A session holding a refusal is removed whole, as any other.
    let removed = env.run(&["sessions", "rm", &id]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert!(
        text(&env.run(&["sessions", "list"]).stdout).lines().count() <= 1,
        "the session is still listed"
    );
}

#[test]
fn an_unknown_session_is_exit_two_and_reading_creates_no_store() {
    let env = Env::new();
    let out = env.run(&["sessions", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        json_out(&env.run(&["sessions", "list", "--json"])),
        json!([])
    );
    let out = env.run(&["sessions", "show", "0123456789abcdef"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no session '0123456789abcdef'"),
        "{}",
        text(&out.stderr)
    );
    let out = env.run(&["run", "--session", "0123456789abcdef", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no session '0123456789abcdef': there is no store"),
        "{}",
        text(&out.stderr)
    );
    assert!(!env.db.exists(), "a read created the store");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_session_in_an_existing_store_is_exit_two() {
    let env = Env::new();
    recovered_session(&env).await;
    let other = env.root.join("elsewhere.db");
    for args in [
        vec!["sessions", "show", "nope"],
        vec!["sessions", "show", "nope", "--json"],
    ] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(err.contains("no session 'nope' in the store"), "{err}");
        assert!(err.contains("goat sessions list"), "{err}");
    }
    // --db wins over GOAT_DB.
    let out = env.run(&[
        "sessions",
        "list",
        "--json",
        "--db",
        other.to_str().unwrap(),
    ]);
    assert_eq!(json_out(&out), json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_shown_and_continued_by_a_prefix_of_its_id() {
    let first = crate::GoatRun::builder()
        .replies([goat_testkit::Reply::text("One.")])
        .run("first")
        .await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    let id = first.sessions()[0]["id"].as_str().unwrap().to_owned();
    let prefix = &id[..6];
    let shown = json_out(&first.env.run(&["sessions", "show", prefix, "--json"]));
    assert_eq!(shown["session"]["id"], id.as_str());

    let server = ScriptedServer::start(vec![goat_testkit::Reply::text("Two.")]).await;
    let out = first
        .env
        .run_async(&[
            "run",
            "--engine",
            &server.base_url(),
            "--model",
            "qwen",
            "--session",
            prefix,
            "second",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = json_out(&first.env.run(&["sessions", "show", &id, "--json"]));
    assert_eq!(shown["turns"].as_array().unwrap().len(), 2);
    // The resumed request carried the first exchange.
    let body = &server.requests()[0].body;
    assert_eq!(body["messages"][1]["content"], "first");
}
