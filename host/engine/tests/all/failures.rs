//! Every failure surfaces as its typed error; time is bounded per phase;
//! cancellation closes the connection; only pre-response failures retry.

use std::time::{Duration, Instant};

use goat_engine::{
    CancellationToken, ChatRequest, EngineClient, EngineConfig, EngineError, Message, Response,
};
use serde_json::json;

use goat_testkit::*;

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    }
}

fn config(server: &ScriptedServer) -> EngineConfig {
    let mut c = EngineConfig::new(server.base_url(), "qwen");
    c.retries = 0;
    c
}

async fn run(config: EngineConfig) -> Result<Response, EngineError> {
    let client = EngineClient::new(config).unwrap();
    client
        .stream_chat(&request(), &CancellationToken::new(), &mut |_| {})
        .await
}

async fn one(reply: Reply) -> Result<Response, EngineError> {
    let server = ScriptedServer::start(vec![reply]).await;
    run(config(&server)).await
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut c = EngineConfig::new(format!("http://127.0.0.1:{port}/v1"), "qwen");
    c.retries = 0;
    match run(c).await {
        Err(EngineError::Connect { url, .. }) => {
            assert_eq!(url, format!("http://127.0.0.1:{port}/v1/chat/completions"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn http_errors_carry_the_bodys_message() {
    let cases = [
        (
            Reply::error(
                400,
                "application/json",
                r#"{"error": {"message": "invalid tool schema", "type": "invalid_request_error"}}"#,
            ),
            400,
            "invalid tool schema",
        ),
        (
            Reply::error(
                404,
                "application/json",
                r#"{"object": "error", "message": "model 'qwen' not found"}"#,
            ),
            404,
            "model 'qwen' not found",
        ),
        (
            Reply::error(422, "application/json", r#"{"detail": "field required"}"#),
            422,
            "field required",
        ),
        (
            Reply::error(500, "application/json", r#"{"error": "out of memory"}"#),
            500,
            "out of memory",
        ),
        (
            Reply::error(
                503,
                "text/html",
                "<html><head><title>503 Service Unavailable</title></head><body>busy</body></html>",
            ),
            503,
            "503 Service Unavailable",
        ),
        (
            Reply::error(
                502,
                "text/html",
                "<html><body><h1>Bad Gateway</h1> upstream down</body></html>",
            ),
            502,
            "Bad Gateway upstream down",
        ),
        (Reply::error(500, "text/plain", ""), 500, "(empty body)"),
    ];
    for (reply, want_status, want_message) in cases {
        match one(reply).await {
            Err(EngineError::Http { status, message }) => {
                assert_eq!(status, want_status);
                assert_eq!(message, want_message);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn error_events_inside_a_200_stream_are_errors() {
    let llama = [
        ev_content("partial"),
        "error: {\"code\": 500, \"message\": \"failed to decode\", \"type\": \"server_error\"}\n\n"
            .to_owned(),
    ]
    .concat();
    let openai = [
        ev_content("partial"),
        ev(json!({"error": {"message": "KV cache full", "code": 500}})),
    ]
    .concat();
    let named = "event: error\ndata: {\"message\": \"worker died\"}\n\n".to_owned();
    for (body, want) in [
        (llama, "failed to decode"),
        (openai, "KV cache full"),
        (named, "worker died"),
    ] {
        match one(Reply::sse(body)).await {
            Err(EngineError::StreamError { message }) => assert_eq!(message, want),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_stream_that_just_stops_is_truncated_never_a_success() {
    let cases = [
        ev_content("Hello"),
        [
            ev_content("Hello"),
            "data: {\"choices\": [{\"delta\": {\"con".to_owned(),
        ]
        .concat(),
        String::new(),
        [ev_tool_call(
            0,
            Some("a"),
            Some("read_file"),
            Some("{\"path\": \"x\"}"),
        )]
        .concat(),
    ];
    for body in cases {
        match one(Reply::sse(body.clone())).await {
            Err(EngineError::Truncated { received_bytes }) => {
                assert_eq!(received_bytes, body.len())
            }
            other => panic!("{body:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn finish_without_done_is_complete_but_done_without_finish_is_too() {
    let finished = [ev_content("a"), ev_finish("stop")].concat();
    assert_eq!(one(Reply::sse(finished)).await.unwrap().content, "a");
    let done = [ev_content("b"), ev_done()].concat();
    assert_eq!(one(Reply::sse(done)).await.unwrap().content, "b");
}

#[tokio::test]
async fn length_finish_is_an_error_with_the_partial_response() {
    let body = [ev_content("The answer is"), ev_finish("length"), ev_done()].concat();
    match one(Reply::sse(body)).await {
        Err(EngineError::Length { partial }) => assert_eq!(partial.content, "The answer is"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn invalid_chunk_json_is_typed() {
    match one(Reply::sse("data: {not json}\n\n")).await {
        Err(EngineError::InvalidChunk { snippet, .. }) => assert_eq!(snippet, "{not json}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn first_byte_deadline_covers_model_load() {
    let server = ScriptedServer::start(vec![Reply {
        delay_headers: Duration::from_secs(5),
        ..Reply::sse([ev_content("late"), ev_done()].concat())
    }])
    .await;
    let mut c = config(&server);
    c.first_byte_timeout = Duration::from_millis(200);
    match run(c).await {
        Err(EngineError::FirstByteTimeout { after }) => {
            assert_eq!(after, Duration::from_millis(200))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_slow_first_byte_within_its_deadline_is_fine() {
    // A long prefill is not an idle stream: only the first-byte deadline applies.
    let server = ScriptedServer::start(vec![Reply {
        delay_headers: Duration::from_millis(400),
        ..Reply::sse([ev_content("ok"), ev_done()].concat())
    }])
    .await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_millis(100);
    c.first_byte_timeout = Duration::from_secs(5);
    assert_eq!(run(c).await.unwrap().content, "ok");
}

#[tokio::test]
async fn silence_mid_stream_hits_the_idle_timeout() {
    let server = ScriptedServer::start(vec![Reply::sse_steps(vec![
        Step::Bytes(ev_content("thinking").into_bytes()),
        Step::Sleep(Duration::from_secs(5)),
        Step::Bytes([ev_done()].concat().into_bytes()),
    ])])
    .await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_millis(200);
    match run(c).await {
        Err(EngineError::IdleTimeout { after }) => assert_eq!(after, Duration::from_millis(200)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn keep_alive_comments_reset_the_idle_timeout() {
    let mut steps = vec![Step::Bytes(ev_content("a").into_bytes())];
    for _ in 0..6 {
        steps.push(Step::Sleep(Duration::from_millis(100)));
        steps.push(Step::Bytes(b": ping\n\n".to_vec()));
    }
    steps.push(Step::Bytes(
        [ev_content("b"), ev_done()].concat().into_bytes(),
    ));
    let server = ScriptedServer::start(vec![Reply::sse_steps(steps)]).await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_millis(300);
    assert_eq!(run(c).await.unwrap().content, "ab");
}

#[tokio::test]
async fn a_stream_that_trickles_forever_hits_the_total_budget() {
    let mut steps = Vec::new();
    for _ in 0..100 {
        steps.push(Step::Bytes(ev_content("x").into_bytes()));
        steps.push(Step::Sleep(Duration::from_millis(50)));
    }
    let server = ScriptedServer::start(vec![Reply::sse_steps(steps)]).await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_secs(1);
    c.total_timeout = Duration::from_millis(400);
    match run(c).await {
        Err(EngineError::TotalTimeout { after }) => assert_eq!(after, Duration::from_millis(400)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cancelling_closes_the_connection_promptly() {
    let mut steps = Vec::new();
    for _ in 0..200 {
        steps.push(Step::Bytes(ev_content("x").into_bytes()));
        steps.push(Step::Sleep(Duration::from_millis(20)));
    }
    let server = ScriptedServer::start(vec![Reply::sse_steps(steps)]).await;
    let client = EngineClient::new(config(&server)).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = client.stream_chat(&request(), &cancel, &mut |_| {}).await;
    assert!(matches!(result, Err(EngineError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // The server notices: its writes start failing once the client is gone.
    let gone = Instant::now();
    while server.closed_early() == 0 {
        assert!(
            gone.elapsed() < Duration::from_secs(3),
            "the connection was not closed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn failures_before_any_response_byte_are_retried_with_a_bound() {
    let ok = [ev_content("third time"), ev_done()].concat();
    let server =
        ScriptedServer::start(vec![Reply::hang_up(), Reply::hang_up(), Reply::sse(ok)]).await;
    let mut c = config(&server);
    c.retries = 2;
    assert_eq!(run(c).await.unwrap().content, "third time");
    assert_eq!(server.requests().len(), 3);

    let server =
        ScriptedServer::start(vec![Reply::hang_up(), Reply::hang_up(), Reply::hang_up()]).await;
    let mut c = config(&server);
    c.retries = 2;
    let result = run(c).await;
    assert!(
        matches!(
            result,
            Err(EngineError::Transport {
                before_response: true,
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn nothing_is_retried_once_the_response_started() {
    let partial = ev_content("half");
    let ok = [ev_content("whole"), ev_done()].concat();
    let server = ScriptedServer::start(vec![Reply::sse(partial), Reply::sse(ok)]).await;
    let mut c = config(&server);
    c.retries = 2;
    assert!(matches!(run(c).await, Err(EngineError::Truncated { .. })));
    assert_eq!(server.requests().len(), 1);

    let server = ScriptedServer::start(vec![
        Reply::error(500, "application/json", r#"{"error": "boom"}"#),
        Reply::sse([ev_content("x"), ev_done()].concat()),
    ])
    .await;
    let mut c = config(&server);
    c.retries = 2;
    assert!(matches!(
        run(c).await,
        Err(EngineError::Http { status: 500, .. })
    ));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn garbage_urls_and_other_schemes_are_refused_up_front() {
    for url in [
        "not a url",
        "ftp://x/v1",
        "file:///v1",
        "ws://127.0.0.1:1/v1",
    ] {
        let result = EngineClient::new(EngineConfig::new(url, "m"));
        assert!(
            matches!(result, Err(EngineError::InvalidUrl { .. })),
            "{url}: {result:?}"
        );
    }
}

#[tokio::test]
async fn redirects_are_never_followed_and_name_the_location() {
    for status in [301, 302, 303, 307, 308] {
        let target = ScriptedServer::start(vec![Reply::text("from elsewhere")]).await;
        let location = format!("{}/chat/completions", target.base_url());
        let server = ScriptedServer::start(vec![Reply::redirect(status, &location)]).await;
        match run(config(&server)).await {
            Err(EngineError::Redirect {
                status: s,
                location: Some(l),
                ..
            }) => {
                assert_eq!((s, l.as_str()), (status, location.as_str()));
            }
            other => panic!("{status}: {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "{status}");
        assert!(
            target.requests().is_empty(),
            "{status}: the conversation went to the redirect target"
        );
    }
}

#[tokio::test]
async fn a_404_at_a_url_without_v1_suggests_v1() {
    let server =
        ScriptedServer::start(vec![Reply::error(404, "text/plain", "File Not Found")]).await;
    let base = format!("http://{}", server.addr);
    let mut c = EngineConfig::new(&base, "qwen");
    c.retries = 0;
    let e = run(c).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the engine answered HTTP 404 (not found) at {base}/chat/completions: File Not Found; \
             OpenAI-compatible engines serve under /v1: try the engine URL {base}/v1"
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_404_for_the_model_lists_the_engines_models() {
    let server = ScriptedServer::start(vec![Reply::error(
        404,
        "application/json",
        r#"{"error":{"message":"model 'qwn' not found"}}"#,
    )])
    .await;
    server.route(
        "/v1/models",
        Reply::error(
            200,
            "application/json",
            r#"{"object":"list","data":[{"id":"qwen3-coder"},{"id":"llama3"}]}"#,
        ),
    );
    let mut c = EngineConfig::new(server.base_url(), "qwn");
    c.retries = 0;
    let e = run(c).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the engine has no model 'qwn' (HTTP 404: model 'qwn' not found); it serves qwen3-coder, \
         llama3: use one of those as the model"
    );
    let probes = server.probes();
    assert_eq!(
        (probes[0].method.as_str(), probes[0].path.as_str()),
        ("GET", "/v1/models")
    );
}
