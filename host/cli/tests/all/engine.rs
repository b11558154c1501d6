//! How `goat` talks to an engine that misbehaves or is not there: a
//! redirect is never followed, and every failure is printed once, on one
//! line, escaped, with its cause and what to do.

use goat_testkit::{Reply, ScriptedServer, ev, ev_content};
use serde_json::json;

use crate::{Env, GoatRun, text};

/// The session line `goat run` prints first, then `rest`.
fn after_session_line(stderr: &str) -> &str {
    let (first, rest) = stderr.split_once('\n').unwrap_or((stderr, ""));
    assert!(first.starts_with("goat: session "), "{stderr}");
    rest
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_is_refused_naming_the_location_and_its_target_gets_nothing() {
    let target = ScriptedServer::start(vec![Reply::text("I am not your engine.")]).await;
    let location = format!("{}/chat/completions", target.base_url());
    let run = GoatRun::builder()
        .replies([Reply::redirect(307, &location)])
        .run("hello")
        .await;
    let url = format!("{}/chat/completions", run.server.base_url());
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        format!(
            "goat: error: the turn failed: the engine at {url} answered HTTP 307, a redirect to \
             {location}; GOAT never follows redirects (the conversation would go to another \
             server): if that is the engine, point the engine URL at it\n"
        )
    );
    assert!(target.requests().is_empty(), "the redirect was followed");
    assert_eq!(run.stdout(), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_error_is_escaped_and_printed_once() {
    let hostile = "boom\u{1b}[2J\ngoat: all good";
    let run = GoatRun::builder()
        .replies([Reply::sse(
            [ev_content("Hi"), ev(json!({"error": {"message": hostile}}))].concat(),
        )])
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        "goat: error: the turn failed: the engine reported an error mid-stream: \
         boom\\u{1b}[2J\\ngoat: all good\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_refused_asks_whether_the_engine_runs() {
    let env = Env::new();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = env
        .run_async(&["run", "--engine", &base, "--model", "qwen", "hello"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        after_session_line(&text(&out.stderr)),
        format!(
            "goat: error: the turn failed: cannot connect to the engine at \
             {base}/chat/completions: Connection refused (os error 111); is the engine running, \
             and is the URL right?\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_404_without_v1_suggests_it() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![Reply::error(
        404,
        "text/html",
        "<title>Not Found</title>",
    )])
    .await;
    let base = format!("http://{}", server.addr);
    let out = env
        .run_async(&["run", "--engine", &base, "--model", "qwen", "hello"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        after_session_line(&text(&out.stderr)),
        format!(
            "goat: error: the turn failed: the engine answered HTTP 404 (not found) at \
             {base}/chat/completions: Not Found; OpenAI-compatible engines serve under /v1: try \
             the engine URL {base}/v1\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_404_for_the_model_lists_the_engines_models() {
    let run = GoatRun::builder()
        .model("qwn")
        .replies([
            Reply::error(
                404,
                "application/json",
                r#"{"object":"error","message":"The model `qwn` does not exist.","code":404}"#,
            ),
            Reply::error(
                200,
                "application/json",
                r#"{"object":"list","data":[{"id":"Qwen/Qwen3-Coder-30B"},{"id":"x\u001b[2Jy"}]}"#,
            ),
        ])
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        "goat: error: the turn failed: the engine has no model 'qwn' (HTTP 404: The model `qwn` \
         does not exist.); it serves Qwen/Qwen3-Coder-30B, x\\u{1b}[2Jy: use one of those as the \
         model\n"
    );
    assert_eq!(run.requests()[1].path, "/v1/models");
}
