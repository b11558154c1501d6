//! `goat run` against a scripted engine: files written or not, what is
//! streamed where, the `--json` summary, recovery, failures, resuming,
//! cancelling, and where host state may live.

use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer, Step, ev_content};
use serde_json::json;

use crate::{Env, GoatRun, json_out, malformed_write, text};

const RECOVERY_LINE: &str =
    "the model wrote a tool call as text; asking it once to use the structured format";

fn write_hello() -> Reply {
    Reply::tool_call(
        "write_file",
        r#"{"path": "notes/hello.txt", "content": "hello\n"}"#,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn run_writes_the_file_streams_the_answer_and_reports_the_call() {
    let run = GoatRun::builder()
        .replies([write_hello(), Reply::text("Wrote notes/hello.txt.")])
        .allow_writes()
        .run("Create notes/hello.txt saying hello")
        .await;
    let err = run.stderr();
    assert_eq!(run.code(), Some(0), "{err}");
    assert_eq!(run.read("notes/hello.txt"), "hello\n");
    assert_eq!(run.stdout(), "Wrote notes/hello.txt.\n");
    assert!(
        err.contains(
            "▌ goat: write_file(path=\"notes/hello.txt\", content=\"hello\\n\") -> ok: Created"
        ),
        "{err}"
    );

    let requests = run.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["model"], "qwen");
    assert_eq!(first["messages"][0]["role"], "system");
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains(run.env.ws_str()), "{system}");
    assert!(
        system.contains("relative to the workspace root"),
        "{system}"
    );
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": "Create notes/hello.txt saying hello"})
    );
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"write_file"), "{offered:?}");
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("Created 'notes/hello.txt'"), "{second}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_allow_writes_the_write_is_denied_the_turn_completes_and_exits_four() {
    let run = GoatRun::builder()
        .replies([
            write_hello(),
            Reply::text("I could not write the file: permission was denied."),
        ])
        .run("Create it")
        .await;
    let err = run.stderr();
    assert_eq!(run.code(), Some(4), "{err}");
    assert!(!run.exists("notes/hello.txt"));
    assert!(!run.exists("notes"));
    assert_eq!(
        run.stdout(),
        "I could not write the file: permission was denied.\n"
    );
    assert!(
        err.contains("write_file(path=\"notes/hello.txt\", content=\"hello\\n\") -> denied: "),
        "{err}"
    );
    assert!(err.contains("--allow-writes"), "{err}");
    // The model was told, in the call's result.
    let second = run.request_text(1);
    assert!(
        second.contains("denied: writing 'notes/hello.txt'"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_summary_reads_the_turn_back_from_the_store() {
    let run = GoatRun::builder()
        .replies([write_hello(), Reply::text("Done.")])
        .allow_writes()
        .json()
        .run("Create it")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let summary = run.summary();
    let session = summary["session_id"].as_str().unwrap();
    assert_eq!(session.len(), 16, "{summary}");
    assert!(summary["turn_id"].as_i64().unwrap() >= 1, "{summary}");
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["rounds"], 2);
    assert_eq!(
        summary["tool_calls"],
        json!([{"tool": "write_file", "status": "ok", "decision": "allow"}])
    );
    assert_eq!(summary["recovery_used"], false);
    assert_eq!(summary["error"], json!(null));
    assert_eq!(summary["answer"], "Done.");

    // The same session is in the store.
    let listed = run.sessions();
    assert_eq!(listed[0]["id"], session);
    assert_eq!(listed[0]["turns"], 1);
    assert_eq!(listed[0]["workspace"], run.env.ws_str());
    assert_eq!(listed[0]["model"], "qwen");
}

#[tokio::test(flavor = "multi_thread")]
async fn markup_written_as_text_is_recovered_once_then_the_structured_call_runs() {
    let run = GoatRun::builder()
        .replies([
            malformed_write(),
            Reply::tool_call(
                "write_file",
                r#"{"path": "hello.txt", "content": "hello\n"}"#,
            ),
            Reply::text("Created hello.txt."),
        ])
        .allow_writes()
        .json()
        .run("Create hello.txt")
        .await;
    let err = run.stderr();
    assert_eq!(run.code(), Some(0), "{err}");
    assert!(err.contains(RECOVERY_LINE), "{err}");
    let summary = run.summary();
    assert_eq!(summary["recovery_used"], true);
    assert_eq!(summary["rounds"], 3);
    assert_eq!(summary["status"], "completed");
    assert_eq!(run.read("hello.txt"), "hello\n");
    assert_eq!(run.requests().len(), 3);
    let second = run.request_text(1);
    assert!(!second.contains("<function=write_file>"), "{second}");
    assert!(second.contains("[GOAT host]"), "{second}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_malformed_answer_fails_the_turn_with_exit_eight() {
    let run = GoatRun::builder()
        .replies([malformed_write(), malformed_write()])
        .allow_writes()
        .json()
        .run("Create hello.txt")
        .await;
    assert_eq!(run.code(), Some(8), "{}", run.stderr());
    let err = run.stderr();
    assert!(err.contains("▌ goat: error: the turn failed: "), "{err}");
    assert!(err.contains("again after being asked"), "{err}");
    let summary = run.summary();
    assert_eq!(summary["status"], "failed");
    assert_eq!(summary["rounds"], 2);
    assert_eq!(summary["answer"], json!(null));
    assert!(
        summary["error"].as_str().unwrap().contains("again"),
        "{summary}"
    );
    assert!(!run.exists("hello.txt"));
}

#[tokio::test(flavor = "multi_thread")]
async fn engine_down_is_exit_seven_with_a_message_naming_the_url() {
    let env = Env::new();
    // A port nothing listens on, and no other test's server can take.
    let (_held, port) = crate::refusing_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = env
        .run_async(&["run", "--engine", &url, "--model", "qwen", "hello"])
        .await;
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("cannot connect to the engine"), "{err}");
    assert!(err.contains(&url), "{err}");
    assert_eq!(text(&out.stdout), "");

    // A new session that never reached the engine is not kept.
    let listed = json_out(&env.run(&["sessions", "list", "--json"]));
    assert_eq!(listed, serde_json::json!([]));
    assert!(err.contains("was not kept"), "{err}");

    // A session that has history keeps the failed turn, with the reason.
    let first = GoatRun::builder()
        .replies([Reply::text("Hi.")])
        .run("hello")
        .await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    let id = first.sessions()[0]["id"].as_str().unwrap().to_owned();
    let out = first.env.resume(&url, &id, "again").await;
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let shown = json_out(&first.env.run(&["sessions", "show", &id, "--json"]));
    assert_eq!(shown["turns"][1]["status"], "failed");
    assert!(
        shown["turns"][1]["error"].as_str().unwrap().contains(&url),
        "{shown}"
    );
}

#[test]
fn missing_engine_settings_are_exit_two_naming_flag_and_variable() {
    let env = Env::new();
    let out = env.run(&["run", "--model", "qwen", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--engine") && err.contains("GOAT_ENGINE_URL"),
        "{err}"
    );
    let out = env.run(&["run", "--engine", "http://127.0.0.1:9/v1", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--model") && err.contains("GOAT_MODEL"),
        "{err}"
    );
    // Nothing was created for a run that could not start.
    assert!(!env.db.exists());
    assert!(!env.permissions_db().exists());

    let out = env.run(&[
        "run",
        "--engine",
        "ftp://example.com/v1",
        "--model",
        "q",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("invalid engine URL"),
        "{}",
        text(&out.stderr)
    );
    let out = env.run(&[
        "run",
        "--engine",
        "http://127.0.0.1:9/v1",
        "--model",
        "q",
        "",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the prompt is empty"),
        "{}",
        text(&out.stderr)
    );
    let out = env.run(&["run", "--max-rounds", "0", "hi"]);
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_continues_the_same_session() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        Reply::text("The first answer."),
        Reply::text("The second answer."),
    ])
    .await;
    let run = |args: Vec<String>| {
        let mut cmd = env.cmd();
        // Engine and model from the environment this time.
        cmd.env("GOAT_ENGINE_URL", server.base_url())
            .env("GOAT_MODEL", "qwen")
            .args(args);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    let first = run(vec![
        "run".into(),
        "--json".into(),
        "Remember the word aardvark".into(),
    ])
    .await
    .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = json_out(&first)["session_id"].as_str().unwrap().to_owned();

    let second = run(vec![
        "run".into(),
        "--session".into(),
        id.clone(),
        "Which word?".into(),
    ])
    .await
    .unwrap();
    let err = text(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("resuming session {id}; 0 tool call(s)")),
        "{err}"
    );
    assert_eq!(text(&second.stdout), "The second answer.\n");
    let body = server.requests()[1].body["messages"].to_string();
    assert!(body.contains("Remember the word aardvark"), "{body}");
    assert!(body.contains("The first answer."), "{body}");
    assert!(body.contains("Which word?"), "{body}");

    let listed = json_out(&env.run(&["sessions", "list", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["turns"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_refuses_an_unknown_session_or_another_workspace() {
    let run = GoatRun::builder()
        .replies([Reply::text("ok")])
        .model("q")
        .json()
        .run("hi")
        .await;
    let (env, id) = (
        &run.env,
        run.summary()["session_id"].as_str().unwrap().to_owned(),
    );

    let out = env.run(&["run", "--session", "nope", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no session 'nope'"),
        "{}",
        text(&out.stderr)
    );

    let other = env.root.join("other");
    std::fs::create_dir(&other).unwrap();
    let out = env.run(&[
        "run",
        "--session",
        &id,
        "--workspace",
        other.to_str().unwrap(),
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("session {id} works in {}", env.ws_str())),
        "{err}"
    );
    assert_eq!(run.requests().len(), 1, "the engine was asked again");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_key_comes_from_the_named_variable() {
    let run = GoatRun::builder()
        .replies([Reply::text("ok")])
        .model("q")
        .var("MY_ENGINE_KEY", "s3cret")
        .arg("--api-key-env")
        .arg("MY_ENGINE_KEY")
        .run("hi")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(
        run.requests()[0].header("authorization"),
        Some("Bearer s3cret")
    );

    let out = run.env.run(&[
        "run",
        "--engine",
        "http://127.0.0.1:9/v1",
        "--model",
        "q",
        "--api-key-env",
        "GOAT_TEST_UNSET_KEY",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("GOAT_TEST_UNSET_KEY is not set"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn host_state_inside_the_workspace_is_refused() {
    let env = Env::new();
    let engine = ["--engine", "http://127.0.0.1:9/v1", "--model", "q"];
    let inside = env.ws.join("state").join("goat.db");
    let mut args = vec!["run", "--db", inside.to_str().unwrap()];
    args.extend(engine);
    args.push("hi");
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("inside the workspace"), "{err}");
    assert!(!env.ws.join("state").exists());

    // Through GOAT_DB, and through a symlink that leads into the workspace.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&env.ws, env.root.join("link")).unwrap();
        let mut args = vec!["run"];
        args.extend(engine);
        args.push("hi");
        let out = env
            .cmd()
            .env("GOAT_DB", env.root.join("link/goat.db"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("inside the workspace"),
            "{}",
            text(&out.stderr)
        );
        assert!(!env.ws.join("goat.db").exists());
    }

    let perms = env.ws.join("perm.db");
    let mut args = vec!["run", "--permissions", perms.to_str().unwrap()];
    args.extend(engine);
    args.push("hi");
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("permission database") && err.contains("inside the workspace"),
        "{err}"
    );
    assert!(!perms.exists());
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_the_turn_and_it_is_recorded_as_cancelled() {
    let env = Env::new();
    // The engine starts answering, then goes quiet for longer than the test.
    let server = ScriptedServer::start(vec![Reply::sse_steps(vec![
        Step::Bytes(ev_content("Thinking").into_bytes()),
        Step::Sleep(Duration::from_secs(60)),
    ])])
    .await;
    let child = env
        .cmd()
        .args([
            "run",
            "--engine",
            &server.base_url(),
            "--model",
            "q",
            "--json",
            "Take your time",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no request arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("recorded as cancelled"), "{err}");
    let summary = json_out(&out);
    assert_eq!(summary["status"], "cancelled");
    let shown = json_out(&env.run(&[
        "sessions",
        "show",
        summary["session_id"].as_str().unwrap(),
        "--json",
    ]));
    assert_eq!(shown["turns"][0]["status"], "cancelled");
    assert_eq!(shown["turns"][0]["rounds"][0]["status"], "cancelled");
}

/// Every file and directory under `dir`, sorted, as paths relative to it.
#[cfg(unix)]
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() && !path.is_symlink() {
                todo.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(unix)]
#[test]
fn host_state_symlinked_into_the_workspace_is_refused_even_dangling() {
    for (name, what) in [
        ("permissions.db", "the permission database"),
        ("goat.db", "the store"),
        ("plugins", "the plugin directory"),
    ] {
        for existing in [true, false] {
            let env = Env::new();
            let state = env.db.parent().unwrap();
            std::fs::create_dir_all(state).unwrap();
            let target = env.ws.join("state-here");
            if existing {
                if name == "plugins" {
                    std::fs::create_dir(&target).unwrap();
                } else {
                    std::fs::write(&target, "").unwrap();
                }
            }
            let link = state.join(name);
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let before = tree(&env.ws);
            let out = env.run(&[
                "run",
                "--engine",
                "http://127.0.0.1:9/v1",
                "--model",
                "q",
                "hi",
            ]);
            let err = text(&out.stderr);
            let case = format!("{name}, target existing: {existing}");
            assert_eq!(out.status.code(), Some(2), "{case}: {err}");
            assert!(
                err.contains(&format!(
                    "{what} {} (which resolves to {}) is inside the workspace {}",
                    link.display(),
                    target.display(),
                    env.ws.display()
                )),
                "{case}: {err}"
            );
            assert!(
                err.contains(&format!("Remove the symlink {}", link.display())),
                "{case}: {err}"
            );
            assert_eq!(tree(&env.ws), before, "{case}: nothing created inside");
            if existing && name != "plugins" {
                assert_eq!(std::fs::read(&target).unwrap(), b"", "{case}");
            }
        }
    }
}

/// A complete Qwen3-Coder write with no `<tool_call>` envelope (ADR-0067).
fn unwrapped_write_text() -> String {
    format!(
        "I'll create it.\n{}\n",
        goat_testkit::qwen_unwrapped_markup(
            "write_file",
            &[("path", "hello.txt"), ("content", "hello")]
        )
    )
}

/// The markup round rows of the run's store: (failure_kind, markup_channel).
fn markup_rows(run: &GoatRun) -> Vec<(Option<String>, Option<String>)> {
    let conn = rusqlite::Connection::open(&run.env.db).unwrap();
    let mut stmt = conn
        .prepare("SELECT failure_kind, markup_channel FROM rounds ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unwrapped_call_is_the_answer_unless_the_setting_is_on() {
    let off = GoatRun::builder()
        .replies([Reply::text(&unwrapped_write_text()), Reply::text("unused")])
        .allow_writes()
        .json()
        .run("Create hello.txt")
        .await;
    assert_eq!(off.code(), Some(0), "{}", off.stderr());
    assert_eq!(off.summary()["answer"], json!(unwrapped_write_text()));
    assert_eq!(off.summary()["recovery_used"], false);
    assert_eq!(off.requests().len(), 1);
    assert_eq!(markup_rows(&off), [(None, None)]);

    let on = GoatRun::builder()
        .replies([
            Reply::text(&unwrapped_write_text()),
            Reply::tool_call(
                "write_file",
                r#"{"path": "hello.txt", "content": "hello\n"}"#,
            ),
            Reply::text("Created hello.txt."),
        ])
        .var("GOAT_MARKUP_UNWRAPPED_CALLS", "1")
        .allow_writes()
        .json()
        .run("Create hello.txt")
        .await;
    let err = on.stderr();
    assert_eq!(on.code(), Some(0), "{err}");
    assert!(err.contains(RECOVERY_LINE), "{err}");
    assert_eq!(on.summary()["recovery_used"], true);
    assert_eq!(on.requests().len(), 3);
    let second = on.request_text(1);
    assert!(second.contains("[GOAT host]"), "{second}");
    assert!(!second.contains("<function=write_file>"), "{second}");
    assert_eq!(on.read("hello.txt"), "hello\n");
    assert_eq!(
        markup_rows(&on),
        [
            (Some("markup".into()), Some("content".into())),
            (None, None),
            (None, None)
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_in_the_reasoning_channel_is_recovered_once_and_stats_name_it() {
    let call = goat_testkit::qwen_unwrapped_markup(
        "write_file",
        &[("path", "hello.txt"), ("content", "hello")],
    );
    let run = GoatRun::builder()
        .replies([
            Reply::builder()
                .reasoning(
                    "reasoning_content",
                    &format!("I'll write it.\n<tool_call>\n{call}\n</tool_call>"),
                )
                .build(),
            Reply::tool_call(
                "write_file",
                r#"{"path": "hello.txt", "content": "hello\n"}"#,
            ),
            Reply::text("Created hello.txt."),
        ])
        .allow_writes()
        .json()
        .run("Create hello.txt")
        .await;
    let err = run.stderr();
    assert_eq!(run.code(), Some(0), "{err}");
    assert!(
        err.contains("the engine's reasoning parser kept the call in the reasoning channel"),
        "{err}"
    );
    assert_eq!(run.summary()["recovery_used"], true);
    assert_eq!(run.summary()["answer"], "Created hello.txt.");
    assert_eq!(run.requests().len(), 3);
    assert!(run.request_text(1).contains("[GOAT host]"));
    assert_eq!(run.read("hello.txt"), "hello\n");
    assert_eq!(
        markup_rows(&run)[0],
        (Some("markup".into()), Some("reasoning".into()))
    );

    let stats = run.env.run(&["stats"]);
    let out = text(&stats.stdout);
    assert!(
        out.contains(
            "of those, 1 response in the reasoning channel: the engine's reasoning parser kept \
             the call in the reasoning channel"
        ),
        "{out}"
    );
    let json = json_out(&run.env.run(&["stats", "--json"]));
    assert_eq!(json[0]["markup_in_reasoning"], 1);
}

/// `sleep MARKER` processes: a command's, once what comes before it in
/// the command line has run (a view's processes are seen from here too).
#[cfg(unix)]
fn sleeping(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.starts_with("sleep\0") && cmdline.contains(marker) {
            found.push(format!("{:?}: {cmdline:?}", entry.file_name()));
        }
    }
    found
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_stops_a_running_command_at_once_and_keeps_none_of_its_changes() {
    let env = Env::new();
    // A marker no other process has (tests run at once in one process):
    // the command's sleep is found by it.
    let marker = format!("3600.{}1", std::process::id());
    let command = format!("echo half > half-done.txt; sleep {marker}");
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "run_command",
            json!({ "command": command, "timeout_secs": 600 }),
        ),
        Reply::text("never asked"),
    ])
    .await;
    let child = env
        .cmd()
        .args([
            "run",
            "--engine",
            &server.base_url(),
            "--model",
            "q",
            "--allow-commands",
            "--json",
            "Build it",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut child = child;
    while sleeping(&marker).is_empty() {
        if tokio::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the command never started: {}", text(&out.stderr));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Without the interrupt this waits out the command's 600 s timeout,
    // and the harness's own timeout fails the test.
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("recorded as cancelled"), "{err}");
    // The whole group is gone, and nothing of the command landed.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !sleeping(&marker).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(sleeping(&marker), Vec::<String>::new());
    // The model was not asked again after the cancel.
    assert_eq!(server.requests().len(), 1);
    let summary = json_out(&out);
    assert_eq!(summary["status"], "cancelled");
    let shown = json_out(&env.run(&[
        "sessions",
        "show",
        summary["session_id"].as_str().unwrap(),
        "--json",
    ]));
    let call = &shown["turns"][0]["rounds"][0]["tool_calls"][0];
    assert_eq!(call["tool"], "run_command");
    assert_eq!(call["status"], "error", "{call}");
    assert_eq!(call["error_kind"], "cancelled", "{call}");
    let result = call["result"].as_str().unwrap();
    assert!(result.starts_with("cancelled with the turn"), "{result}");
    if crate::view::view_available(&env) {
        assert!(!env.ws.join("half-done.txt").exists());
        assert!(
            result.contains("none of this command's changes to the workspace were kept"),
            "{result}"
        );
    } else {
        // Landlock only: what it did is in the workspace, and on record.
        assert!(env.ws.join("half-done.txt").exists());
        assert!(result.contains("goat undo takes back"), "{result}");
    }
}
