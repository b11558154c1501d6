//! `goat chat`'s composer, slash commands, approval modes and the newer
//! approval answers, driven at a pseudo-terminal as a person would: a
//! paste is one prompt, Up recalls the last prompt (also in the next
//! chat), slash commands never reach the engine, accept-edits writes
//! without a question, read-only writes nothing and says why, a denial
//! carries the person's sentence, a directory answer covers a second
//! file, and `[v]iew` shows the whole change through `$PAGER`.

use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer, Step, ev_content, ev_done, ev_finish, ev_tool_call};
use serde_json::Value;

use crate::pty::{Pty, write_call};
use crate::{Env, GoatRun, call_reply, content_reply};

/// Lets the line editor take the terminal after its prompt is shown, so
/// keys typed next are read by it, not by the terminal's line mode.
pub(crate) fn settle() {
    std::thread::sleep(Duration::from_millis(150));
}

pub(crate) fn chat(env: &Env, url: &str, extra: &[&str], vars: &[(&str, &str)]) -> Pty {
    let mut args = vec!["chat", "--engine", url, "--model", "qwen"];
    args.extend_from_slice(extra);
    let mut pty = Pty::spawn(env, &args, vars);
    pty.expect("chatting with qwen");
    pty
}

/// The content of the last tool message in the request: the latest
/// result the model got.
fn tool_result(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_owned()
}

/// The last user message in the request.
fn last_user(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_owned()
}

pub(crate) fn leave(pty: &mut Pty) {
    settle();
    pty.type_keys("\x04");
    assert_eq!(pty.exit_code(), Some(0), "{}", pty.transcript());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pasted_traceback_is_one_prompt() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![content_reply("One turn.")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys(
        "\x1b[200~Traceback (most recent call last):\n  File \"a.py\", line 1\n    x()\nNameError: x\x1b[201~",
    );
    pty.type_keys("\r");
    pty.expect("One turn.");
    pty.expect("> ");
    leave(&mut pty);
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{}", pty.transcript());
    assert_eq!(
        last_user(&requests[0].body),
        "Traceback (most recent call last):\n  File \"a.py\", line 1\n    x()\nNameError: x"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn alt_enter_adds_a_line_to_the_same_prompt() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![content_reply("Both lines.")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("first line\x1b\rsecond line\r");
    pty.expect("Both lines.");
    pty.expect("> ");
    leave(&mut pty);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(last_user(&requests[0].body), "first line\nsecond line");
}

#[tokio::test(flavor = "multi_thread")]
async fn up_recalls_the_last_prompt_and_the_history_outlives_the_chat() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        content_reply("First."),
        content_reply("Again."),
        content_reply("Still there."),
    ])
    .await;
    let url = server.base_url();
    let mut pty = chat(&env, &url, &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("summarise src/lib.rs\r");
    pty.expect("First.");
    pty.expect("> ");
    settle();
    pty.type_keys("\x1b[A\r");
    pty.expect("Again.");
    pty.expect("> ");
    leave(&mut pty);

    // A second chat starts with the first one's prompts.
    let mut pty = chat(&env, &url, &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("\x1b[A\r");
    pty.expect("Still there.");
    pty.expect("> ");
    leave(&mut pty);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(last_user(&request.body), "summarise src/lib.rs");
    }
    // Beside the store, private, and never in the workspace.
    let history = env.db.with_file_name("chat-history");
    let saved = std::fs::read_to_string(&history).unwrap();
    assert!(saved.contains("summarise src/lib.rs"), "{saved}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&history).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(&env.ws).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_commands_never_reach_the_engine() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![content_reply("unused")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("/help\r");
    pty.expect("commands (never sent to the model):");
    pty.expect("/mode [ask|accept-edits|read-only]");
    pty.expect("Alt-Enter starts a new line");
    pty.expect("> ");
    settle();
    pty.type_keys("/frobnicate the thing\r");
    pty.expect("▌ goat: unknown command /frobnicate; nothing was sent to the model");
    pty.expect("commands (never sent to the model):");
    pty.expect("> ");
    settle();
    pty.type_keys("/mode\r");
    pty.expect("▌ goat: mode ask (writes and commands no rule decides are asked about)");
    pty.expect("> ");
    settle();
    pty.type_keys("/mode sideways\r");
    pty.expect("▌ goat: 'sideways' is not a mode; use ask, accept-edits or read-only");
    pty.expect("> ");
    settle();
    pty.type_keys("/mode read-only\r");
    pty.expect("▌ goat: mode read-only: no writes and no commands");
    pty.expect("read-only> ");
    settle();
    pty.type_keys("/exit\r");
    assert_eq!(pty.exit_code(), Some(0), "{}", pty.transcript());
    assert!(server.requests().is_empty(), "{}", pty.transcript());
}

#[tokio::test(flavor = "multi_thread")]
async fn tab_completes_a_slash_command() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![content_reply("unused")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("/sta\t\r");
    pty.expect("  model      qwen");
    pty.expect("> ");
    leave(&mut pty);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn status_shows_the_session_tokens_mode_and_rules() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        write_call(),
        Reply::builder().text("Done.").usage(1200, 34).build(),
    ])
    .await;
    let url = server.base_url();
    let mut pty = chat(&env, &url, &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("make notes/a.txt\r");
    pty.expect("(default deny): ");
    pty.type_keys("s\r");
    pty.expect("Done.");
    pty.expect("> ");
    settle();
    pty.type_keys("/status\r");
    pty.expect("/status");
    pty.expect("rules      1 in force");
    pty.expect("> ");
    // From the first line to the next prompt's cursor codes.
    let all = pty.transcript();
    let start = all.rfind("  model ").unwrap();
    let end = start + all[start..].find('\x1b').unwrap();
    let shown = all[start..end].replace("\r\n", "\n");
    leave(&mut pty);
    let list = crate::json_out(&env.run(&["sessions", "list", "--json"]));
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    let scrubbed = shown
        .replace(&id, "[SESSION]")
        .replace(env.root.to_str().unwrap(), "[ROOT]")
        .replace(port, "[PORT]");
    // The estimate counts the system prompt, which holds the workspace's
    // path: its figure depends on where the test runs.
    let scrubbed = match scrubbed.split_once("  context    about ") {
        Some((before, after)) => {
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            format!("{before}  context    about [TOKENS]{}", &after[digits..])
        }
        None => scrubbed,
    };
    insta::assert_snapshot!("chat_status", scrubbed);
}

#[tokio::test(flavor = "multi_thread")]
async fn accept_edits_writes_without_asking_after_mode_switch() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![write_call(), content_reply("Written.")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("/mode accept-edits\r");
    pty.expect("▌ goat: mode accept-edits");
    pty.expect("accept-edits> ");
    settle();
    pty.type_keys("make notes/a.txt\r");
    pty.expect("Written.");
    pty.expect("> ");
    leave(&mut pty);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/a.txt")).unwrap(),
        "hello\n"
    );
    assert!(!pty.transcript().contains("allow?"), "{}", pty.transcript());
}

#[tokio::test(flavor = "multi_thread")]
async fn accept_edits_still_obeys_deny_rules_and_protected_paths() {
    let env = Env::new();
    assert!(
        env.run(&["permissions", "deny", "*", "notes/**", "--write"])
            .status
            .success()
    );
    let server = ScriptedServer::start(vec![
        write_call(),
        call_reply(
            "call_2",
            "write_file",
            r#"{"path": ".git/config", "content": "x"}"#,
        ),
        content_reply("Both refused."),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), &["--mode", "accept-edits"], &[]);
    pty.expect("mode accept-edits");
    pty.expect("accept-edits> ");
    settle();
    pty.type_keys("try\r");
    pty.expect("Both refused.");
    pty.expect("> ");
    leave(&mut pty);
    assert!(!env.ws.join("notes").exists());
    assert!(!env.ws.join(".git").exists());
    let by_rule = tool_result(&server.requests()[1].body);
    assert!(by_rule.starts_with("denied:"), "{by_rule}");
    assert!(by_rule.contains("notes/**"), "{by_rule}");
    let protected = tool_result(&server.requests()[2].body);
    assert!(protected.starts_with("denied:"), "{protected}");
    assert!(protected.contains(".git"), "{protected}");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_writes_nothing_and_tells_the_model_why() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "before\n").unwrap();
    let server = ScriptedServer::start(vec![
        call_reply(
            "call_1",
            "write_file",
            r#"{"path": "a.txt", "content": "after\n"}"#,
        ),
        content_reply("I could not write."),
    ])
    .await;
    // Even with --allow-writes: read-only is narrower than every rule.
    let mut pty = chat(
        &env,
        &server.base_url(),
        &["--mode", "read-only", "--allow-writes"],
        &[],
    );
    pty.expect("read-only> ");
    settle();
    pty.type_keys("change a.txt\r");
    pty.expect("I could not write.");
    pty.expect("> ");
    leave(&mut pty);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "before\n"
    );
    assert!(!pty.transcript().contains("allow?"));
    assert_eq!(
        tool_result(&server.requests()[1].body),
        goat_router::READ_ONLY_REASON
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_carries_the_persons_sentence_to_the_model() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![write_call(), content_reply("Will do.")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("make notes/a.txt\r");
    pty.expect("d: <why> to deny and tell the model why");
    pty.expect("(default deny): ");
    pty.type_keys("d: use the existing helper in util.rs instead\r");
    pty.expect("Will do.");
    pty.expect("> ");
    leave(&mut pty);
    assert!(!env.ws.join("notes").exists());
    assert_eq!(
        tool_result(&server.requests()[1].body),
        "denied: the person at the terminal did not allow it (write_file wants to write \
         'notes/a.txt'; allow it?); they said: \"use the existing helper in util.rs instead\""
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_answer_covers_a_second_file_there_for_the_session() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        write_call(),
        call_reply(
            "call_2",
            "write_file",
            r#"{"path": "notes/b.txt", "content": "bee\n"}"#,
        ),
        content_reply("Two files."),
        call_reply(
            "call_3",
            "write_file",
            r#"{"path": "other/c.txt", "content": "sea\n"}"#,
        ),
        content_reply("Asked."),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("make two notes\r");
    pty.expect("[dir] for all of 'notes/**' this session");
    pty.expect("(default deny): ");
    pty.type_keys("dir\r");
    pty.expect("Two files.");
    pty.expect("> ");
    // Outside the directory it is asked again.
    settle();
    pty.type_keys("and another\r");
    pty.expect("write_file wants to write 'other/c.txt'");
    pty.expect("(default deny): ");
    pty.type_keys("\r");
    pty.expect("Asked.");
    pty.expect("> ");
    leave(&mut pty);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/b.txt")).unwrap(),
        "bee\n"
    );
    assert!(env.ws.join("notes/a.txt").exists());
    assert!(!env.ws.join("other").exists());
    assert_eq!(pty.transcript().matches("allow? [o]nce").count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn view_pages_through_the_whole_new_file_before_answering() {
    let env = Env::new();
    let content: String = (1..=120).map(|n| format!("line {n}\n")).collect();
    let args = serde_json::json!({"path": "long.txt", "content": content}).to_string();
    let server = ScriptedServer::start(vec![
        call_reply("call_1", "write_file", &args),
        content_reply("Long file."),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), &[], &[("PAGER", "cat")]);
    pty.expect("> ");
    settle();
    pty.type_keys("write a long file\r");
    pty.expect("+ … 112 lines more ([v]iew shows them)");
    pty.expect("(default deny): ");
    assert!(!pty.transcript().contains("line 120"));
    pty.type_keys("v\r");
    pty.expect("+ line 9");
    pty.expect("+ line 120");
    pty.expect("(default deny): ");
    pty.type_keys("o\r");
    pty.expect("Long file.");
    pty.expect("> ");
    leave(&mut pty);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("long.txt")).unwrap(),
        content
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_typed_while_the_model_works_do_not_answer_the_question() {
    let env = Env::new();
    let slow_call = Reply::sse_steps(vec![
        Step::Bytes(ev_content("Working on it. ").into_bytes()),
        Step::Sleep(Duration::from_millis(1500)),
        Step::Bytes(
            ev_tool_call(
                0,
                Some("call_1"),
                Some("write_file"),
                Some(r#"{"path": "notes/a.txt", "content": "hello\n"}"#),
            )
            .into_bytes(),
        ),
        Step::Bytes(ev_finish("tool_calls").into_bytes()),
        Step::Bytes(ev_done().into_bytes()),
    ]);
    let server = ScriptedServer::start(vec![slow_call, content_reply("Not written.")]).await;
    let mut pty = chat(&env, &server.base_url(), &[], &[]);
    pty.expect("> ");
    settle();
    pty.type_keys("make notes/a.txt\r");
    pty.expect("Working on it.");
    // A stray "yes" before the question exists.
    pty.type_keys("o\r");
    pty.expect("(default deny): ");
    settle();
    pty.type_keys("d\r");
    pty.expect("Not written.");
    pty.expect("> ");
    leave(&mut pty);
    assert!(!env.ws.join("notes").exists(), "{}", pty.transcript());
    assert!(tool_result(&server.requests()[1].body).starts_with("denied:"));
}

#[tokio::test(flavor = "multi_thread")]
async fn goat_run_takes_the_mode_flag_without_a_terminal() {
    let write = || {
        Reply::tool_call(
            "write_file",
            r#"{"path": "notes/hello.txt", "content": "hello\n"}"#,
        )
    };
    // accept-edits allows the write no rule decides, with no one to ask.
    let run = GoatRun::builder()
        .replies([write(), Reply::text("Wrote it.")])
        .arg("--mode")
        .arg("accept-edits")
        .run("Create notes/hello.txt")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.read("notes/hello.txt"), "hello\n");

    // read-only refuses it even with --allow-writes.
    let run = GoatRun::builder()
        .replies([write(), Reply::text("Could not.")])
        .allow_writes()
        .arg("--mode")
        .arg("read-only")
        .run("Create notes/hello.txt")
        .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("notes/hello.txt"));
    assert_eq!(
        tool_result(&run.requests()[1].body),
        goat_router::READ_ONLY_REASON
    );
}

#[test]
fn an_unknown_mode_is_refused_with_the_modes_named() {
    let env = Env::new();
    let out = env.run(&["run", "--mode", "yolo", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = crate::text(&out.stderr);
    assert!(
        err.contains("'yolo' is not a mode; use ask, accept-edits or read-only"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mode_can_come_from_the_config_file_and_a_wrong_one_is_refused() {
    let run = GoatRun::builder()
        .replies([
            Reply::tool_call(
                "write_file",
                r#"{"path": "notes/hello.txt", "content": "hello\n"}"#,
            ),
            Reply::text("Wrote it."),
        ])
        .config("mode = \"accept-edits\"\n")
        .run("Create notes/hello.txt")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.read("notes/hello.txt"), "hello\n");

    let env = Env::new();
    let out = env
        .cmd()
        .args([
            "run",
            "--engine",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "hi",
        ])
        .env("GOAT_MODE", "yolo")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = crate::text(&out.stderr);
    assert!(
        err.contains("env GOAT_MODE: 'yolo' is not a mode; use ask, accept-edits or read-only"),
        "{err}"
    );
}
