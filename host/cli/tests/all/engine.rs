//! How `goat` talks to an engine that misbehaves or is not there: a
//! redirect is never followed, and every failure is printed once, on one
//! line, escaped, with its cause and what to do.

use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer, Step, TestCa, ev, ev_content};
use serde_json::json;

use crate::{Env, GoatRun, text};

/// The session line `goat run` prints first, then `rest`.
fn after_session_line(stderr: &str) -> &str {
    let (first, rest) = stderr.split_once('\n').unwrap_or((stderr, ""));
    assert!(first.starts_with("▌ goat: session "), "{stderr}");
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
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        format!(
            "▌ goat: error: the turn failed: the engine at {url} answered HTTP 307, a redirect to \
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
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        "▌ goat: error: the turn failed: the engine reported an error mid-stream: \
         boom\\u{1b}[2J\\ngoat: all good\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_refused_asks_whether_the_engine_runs() {
    let env = Env::new();
    let (_held, port) = crate::refusing_port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = env
        .run_async(&["run", "--engine", &base, "--model", "qwen", "hello"])
        .await;
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(
        after_session_line(&text(&out.stderr)),
        format!(
            "▌ goat: error: the turn failed: cannot connect to the engine at \
             {base}/chat/completions: Connection refused (os error 111); is the engine running, \
             and is the URL right?\n▌ goat: the engine was never reached, so session {id} was not \
             kept\n",
            id = session_id(&text(&out.stderr))
        )
    );
    // Nothing is left behind: no session to list, none to continue.
    let listed = env.run(&["sessions", "list", "--json"]);
    assert_eq!(crate::json_out(&listed), serde_json::json!([]));
}

/// The id in `goat: session ID (...)`.
fn session_id(stderr: &str) -> String {
    stderr
        .strip_prefix("▌ goat: session ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session line: {stderr}"))
        .to_owned()
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
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(
        after_session_line(&text(&out.stderr)),
        format!(
            "▌ goat: error: the turn failed: the engine answered HTTP 404 (not found) at \
             {base}/chat/completions: Not Found; OpenAI-compatible engines serve under /v1: try \
             the engine URL {base}/v1\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_404_for_the_model_lists_the_engines_models() {
    let run = GoatRun::builder()
        .model("qwn")
        .replies([Reply::error(
            404,
            "application/json",
            r#"{"object":"error","message":"The model `qwn` does not exist.","code":404}"#,
        )])
        .route(
            "/v1/models",
            Reply::error(
                200,
                "application/json",
                r#"{"object":"list","data":[{"id":"Qwen/Qwen3-Coder-30B"},{"id":"x\u001b[2Jy"}]}"#,
            ),
        )
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        "▌ goat: error: the turn failed: the engine has no model 'qwn' (HTTP 404: The model `qwn` \
         does not exist.); it serves Qwen/Qwen3-Coder-30B, x\\u{1b}[2Jy: use one of those as the \
         model\n"
    );
    assert_eq!(run.server.probes().last().unwrap().path, "/v1/models");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_stream_names_the_idle_timeout_setting() {
    let run = GoatRun::builder()
        .replies([Reply::sse_steps(vec![
            Step::Bytes(ev_content("Hi").into_bytes()),
            Step::Sleep(Duration::from_secs(5)),
        ])])
        .var("GOAT_IDLE_TIMEOUT_SECS", "1")
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        "▌ goat: error: the turn failed: the engine's stream went silent for 1s; that limit is \
         timeouts.idle_secs in the config file or GOAT_IDLE_TIMEOUT_SECS (seconds): raise it if \
         the engine is only slow\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_byte_timeout_comes_from_the_config_file() {
    let run = GoatRun::builder()
        .replies([Reply {
            delay_headers: Duration::from_secs(5),
            ..Reply::text("late")
        }])
        .config("[timeouts]\nfirst_byte_secs = 1\n")
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        "▌ goat: error: the turn failed: the engine sent nothing for 1s after the request (model \
         load and prompt processing count; the first-byte timeout allows for them); that limit \
         is timeouts.first_byte_secs in the config file or GOAT_FIRST_BYTE_TIMEOUT_SECS \
         (seconds): raise it if the engine is only slow\n"
    );
}

/// A `/models` listing of `ids`.
fn models(ids: &[&str]) -> Reply {
    let data: Vec<_> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model"}))
        .collect();
    Reply::error(
        200,
        "application/json",
        &json!({"object": "list", "data": data}).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn without_model_the_engines_only_model_is_used_and_named() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![Reply::text("Hi")]).await;
    server.route("/v1/models", models(&["qwen3-coder-30b"]));
    let out = env
        .run_async(&["run", "--engine", &server.base_url(), "hello"])
        .await;
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "Hi\n");
    assert!(
        err.starts_with(
            "▌ goat: no model named; the engine serves one, qwen3-coder-30b, so using it\n"
        ),
        "{err}"
    );
    assert_eq!(server.probes()[0].path, "/v1/models");
    assert_eq!(server.requests()[0].body["model"], "qwen3-coder-30b");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_model_and_several_served_the_choice_is_asked_for() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![]).await;
    server.route("/v1/models", models(&["a", "b"]));
    let out = env
        .run_async(&["run", "--engine", &server.base_url(), "hello"])
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "▌ goat: error: no model name: pass --model NAME, set GOAT_MODEL, or put model = \"...\" \
         in the config file; the engine serves a, b\n"
    );
    assert_eq!(server.probes().len(), 1);
    assert!(server.requests().is_empty());
    assert!(!env.db.exists(), "a store was created before the refusal");
}

/// Writes `ca`'s certificate where the run can be told of it.
fn ca_file(env: &Env, ca: &TestCa) -> String {
    let path = env.root.join("engine-ca.pem");
    std::fs::write(&path, ca.ca_pem()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_https_engine_with_a_private_ca_is_trusted_by_flag_setting_or_ssl_cert_file() {
    for how in ["--ca-cert", "GOAT_CA_CERT", "ca_cert", "SSL_CERT_FILE"] {
        let ca = TestCa::new();
        let builder = GoatRun::builder()
            .replies([Reply::text("Hello over TLS.")])
            .tls(ca.clone());
        let file = ca_file(builder.env(), &ca);
        let builder = match how {
            "--ca-cert" => builder.arg("--ca-cert").arg(file),
            "ca_cert" => builder.config(&format!("ca_cert = \"{file}\"\n")),
            var => builder.var(var, &file),
        };
        let run = builder.run("hello").await;
        assert_eq!(run.code(), Some(0), "{how}: {}", run.stderr());
        assert_eq!(run.stdout(), "Hello over TLS.\n", "{how}");
        let requests = run.requests();
        assert_eq!(requests.len(), 1, "{how}");
        assert!(run.request_text(0).contains("hello"), "{how}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_https_engine_fails_once_saying_how_to_trust_it() {
    let run = GoatRun::builder()
        .replies([Reply::text("must not be read")])
        .tls(TestCa::new())
        .run("hello")
        .await;
    let url = format!("{}/chat/completions", run.server.base_url());
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    assert_eq!(
        after_session_line(&run.stderr()),
        format!(
            "▌ goat: error: the turn failed: the engine's TLS certificate at {url} was not \
             accepted: invalid peer certificate: UnknownIssuer; if the engine uses a private or \
             self-signed CA, trust it with --ca-cert FILE, the ca_cert setting or GOAT_CA_CERT \
             (a PEM file), or SSL_CERT_FILE\n▌ goat: the engine was never reached, so session \
             {id} was not kept\n",
            id = session_id(&run.stderr())
        )
    );
    assert!(run.requests().is_empty(), "nothing reached the engine");
    assert_eq!(run.stdout(), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loading_engine_is_waited_for_and_the_wait_is_said_once() {
    let loading = || {
        Reply::error(
            503,
            "application/json",
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
        )
    };
    let run = GoatRun::builder()
        .replies([loading(), loading(), Reply::text("Loaded.")])
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.stdout(), "Loaded.\n");
    assert_eq!(
        after_session_line(&run.stderr()),
        "▌ goat: the engine is loading the model; waiting for it (timeouts.first_byte_secs \
         bounds the wait)\n▌ goat: the engine did not say its context window (asked: \
         llama-server /props, /v1/models, LM Studio /api/v0/models, Ollama /api/show); GOAT \
         assumes 32768 tokens. Set context_tokens (or --context-tokens) to the window the \
         engine serves\n"
    );
    assert_eq!(run.requests().len(), 3);
}
