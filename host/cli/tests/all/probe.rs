//! `goat probe`: classifies what the engine returns; never runs a tool.

use goat_testkit::ScriptedServer;

use crate::{Env, call_reply, content_reply, malformed_write, text};

#[tokio::test(flavor = "multi_thread")]
async fn probe_classifies_structured_markup_and_plain_answers_and_runs_nothing() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        call_reply("c1", "read_file", r#"{"path": "README.md"}"#),
        malformed_write(),
        content_reply("The first line is probably a title."),
    ])
    .await;
    let url = server.base_url();
    let out = env
        .run_async(&["probe", "--engine", &url, "--model", "qwen", "--count", "3"])
        .await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[1].starts_with(
            "  1. structured call: read_file({\"path\":\"README.md\"}); first token after"
        ),
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("  2. UNEXECUTED MARKUP: write_file written as text (</tool_call>);"),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with(
            "  3. neither: answered in text without calling a tool: \"The first line is probably a title.\";"
        ),
        "{stdout}"
    );
    assert!(
        lines[4].starts_with("verdict: 1 of 3 responses wrote the tool call as text"),
        "{stdout}"
    );
    assert!(
        lines[4].contains("--jinja") && lines[4].contains("--tool-call-parser"),
        "{stdout}"
    );
    // Never ran anything: the markup named write_file with hello.txt.
    assert!(!env.ws.join("hello.txt").exists());
    // Each request offered the Pen tools with tool_choice auto.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "list_directory",
            "find_files",
            "search_files",
            "write_file",
            "edit_file",
            "move_file",
            "delete_file"
        ]
    );
    assert_eq!(requests[0].body["tool_choice"], "auto");
}

#[tokio::test(flavor = "multi_thread")]
async fn probe_passes_when_every_call_is_structured() {
    let env = Env::new();
    let replies = (0..2)
        .map(|i| call_reply(&format!("c{i}"), "read_file", r#"{"path": "README.md"}"#))
        .collect();
    let server = ScriptedServer::start(replies).await;
    let url = server.base_url();
    let out = env
        .run_async(&["probe", "--engine", &url, "--model", "qwen", "--count", "2"])
        .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("verdict: tool calling works: 2 of 2"),
        "{stdout}"
    );
    // This engine says no window anywhere GOAT asks (issue 38).
    assert!(
        stdout.contains("context window: the engine did not say its context window")
            && stdout.contains("GOAT assumes 32768 tokens"),
        "{stdout}"
    );
}

/// The window as the engine says it, and as the person set it.
#[tokio::test(flavor = "multi_thread")]
async fn probe_shows_the_window_and_where_it_came_from() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        call_reply("c0", "read_file", r#"{"path": "README.md"}"#),
        call_reply("c1", "read_file", r#"{"path": "README.md"}"#),
    ])
    .await;
    server.route(
        "/props",
        goat_testkit::Reply::error(
            200,
            "application/json",
            r#"{"default_generation_settings": {"n_ctx": 16384}}"#,
        ),
    );
    let url = server.base_url();
    let probe = |extra: &'static [&'static str]| {
        let mut args = vec!["probe", "--engine", &url, "--model", "qwen", "--count", "1"];
        args.extend(extra);
        env.cmd().args(args).output().unwrap()
    };
    let said = tokio::task::block_in_place(|| probe(&[]));
    let stdout = text(&said.stdout);
    assert!(
        stdout.contains("context window: 16384 tokens (from llama.cpp /props)"),
        "{stdout}"
    );
    let set = tokio::task::block_in_place(|| {
        let mut cmd = env.cmd();
        cmd.args(["probe", "--engine", &url, "--model", "qwen", "--count", "1"])
            .env("GOAT_CONTEXT_TOKENS", "65536");
        cmd.output().unwrap()
    });
    let stdout = text(&set.stdout);
    assert!(
        stdout.contains("context window: 65536 tokens, as set (env GOAT_CONTEXT_TOKENS)"),
        "{stdout}"
    );
}

#[test]
fn probe_without_an_engine_says_how_to_name_one() {
    let env = Env::new();
    let out = env.run(&["probe", "--model", "qwen"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--engine") && err.contains("GOAT_ENGINE_URL"),
        "{err}"
    );
}

/// A call kept in the reasoning channel (vLLM's reasoning parser on
/// Qwen3.5), then a complete unwrapped Qwen3-Coder block as content.
fn reasoning_and_unwrapped() -> Vec<goat_testkit::Reply> {
    use goat_testkit::{Reply, qwen_unwrapped_markup};
    let call = qwen_unwrapped_markup("read_file", &[("path", "README.md")]);
    vec![
        Reply::builder()
            .reasoning(
                "reasoning_content",
                &format!("I'll read it.\n<tool_call>\n{call}\n</tool_call>"),
            )
            .build(),
        Reply::text(&format!("Reading it.\n{call}\n")),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn probe_names_the_reasoning_channel_and_always_reports_unwrapped_calls() {
    for on in [false, true] {
        let env = Env::new();
        let server = ScriptedServer::start(reasoning_and_unwrapped()).await;
        let url = server.base_url();
        let args = ["probe", "--engine", &url, "--model", "qwen", "--count", "2"];
        if on {
            env.write_config("[markup]\nunwrapped_calls = true\n");
        }
        let out = env.run_async(&args).await;
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{stdout}\n{}",
            text(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            lines[1].starts_with(
                "  1. UNEXECUTED MARKUP in the reasoning channel: read_file written as text \
                 (<tool_call> </tool_call>); the engine's reasoning parser kept the call in the \
                 reasoning channel;"
            ),
            "{stdout}"
        );
        let second = if on {
            "  2. UNEXECUTED MARKUP: read_file written as text (no <tool_call> envelope);"
        } else {
            "  2. UNWRAPPED CALL in the content: a complete <function=...> block with no \
             <tool_call>, left as text because markup.unwrapped_calls is off;"
        };
        assert!(lines[2].starts_with(second), "{stdout}");
        assert!(
            stdout.contains("the engine's reasoning parser kept the call in the reasoning channel (vLLM --reasoning-parser"),
            "{stdout}"
        );
        assert_eq!(
            stdout.contains("turn on markup.unwrapped_calls = true"),
            !on,
            "{stdout}"
        );
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_the_probe_prints_the_verdict_on_what_came_back() {
    let env = Env::new();
    let hold = goat_testkit::Hold::new();
    let server = ScriptedServer::start(vec![
        call_reply("c1", "read_file", r#"{"path": "README.md"}"#),
        content_reply("never sent").held(&hold),
    ])
    .await;
    let url = server.base_url();
    let child = env
        .cmd()
        .args(["probe", "--engine", &url, "--model", "qwen", "--count", "3"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The second request is held: the probe is waiting on it.
    let started = std::time::Instant::now();
    while server.requests().len() < 2 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no second request"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = child.id().to_string();
    let signalled = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(signalled.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    hold.release();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[1].starts_with("  1. structured call: read_file("),
        "{stdout}"
    );
    assert_eq!(lines[2], "  2. interrupted (Ctrl-C)", "{stdout}");
    assert_eq!(
        lines[3], "interrupted: the verdict covers the 1 of 3 requests that came back",
        "{stdout}"
    );
    assert!(
        lines[4].starts_with(
            "verdict: tool calling works: 1 of 1 requests came back as valid structured calls"
        ),
        "{stdout}"
    );
}
