//! llama-server answers 503 "Loading model" until its weights are in
//! memory: GOAT waits and asks again within the first-byte timeout, says
//! so as it waits, and gives up with a message naming the setting.

use std::time::Duration;

use goat_engine::{
    CancellationToken, ChatRequest, Delta, EngineClient, EngineConfig, EngineError, Message,
};
use goat_testkit::*;

const LOADING_BODY: &str =
    r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#;

fn loading() -> Reply {
    Reply::error(503, "application/json", LOADING_BODY)
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    }
}

#[tokio::test]
async fn a_loading_engine_is_asked_again_until_it_answers() {
    let server = ScriptedServer::start(vec![loading(), loading(), Reply::text("loaded")]).await;
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    let client = EngineClient::new(config).unwrap();
    let mut told = Vec::new();
    let response = client
        .stream_chat(&request(), &CancellationToken::new(), &mut |d| {
            if let Delta::EngineLoading { message, .. } = d {
                told.push(message.to_owned());
            }
        })
        .await
        .unwrap();
    assert_eq!(response.content, "loaded");
    assert_eq!(told, ["Loading model", "Loading model"]);
    // Three identical requests: the same conversation, asked again.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body, requests[2].body);
}

#[tokio::test]
async fn a_model_that_never_loads_fails_within_the_first_byte_timeout_naming_it() {
    let server = ScriptedServer::start((0..20).map(|_| loading()).collect()).await;
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    config.first_byte_timeout = Duration::from_secs(1);
    let client = EngineClient::new(config).unwrap();
    let err = client
        .stream_chat(&request(), &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::StillLoading { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("Loading model"), "{message}");
    assert!(message.contains("timeouts.first_byte_secs"), "{message}");
    // Asked more than once, and far fewer times than the script allows:
    // the backoff spaced the requests.
    let asked = server.requests().len();
    assert!((2..=6).contains(&asked), "{asked} requests");
}

#[tokio::test]
async fn any_other_503_is_not_waited_on() {
    let server = ScriptedServer::start(vec![
        Reply::error(
            503,
            "application/json",
            r#"{"error":{"message":"server overloaded"}}"#,
        ),
        Reply::text("must not be asked"),
    ])
    .await;
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    let err = EngineClient::new(config)
        .unwrap()
        .stream_chat(&request(), &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Http { status: 503, .. }),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// The wait for a loading engine and the requests after it share one
/// first-byte deadline: an engine that says "Loading" and then accepts the
/// next request without answering does not get a second full timeout.
#[tokio::test]
async fn loading_then_silence_stays_within_the_first_byte_timeout() {
    let mut silent = Reply::text("late");
    silent.delay_headers = Duration::from_secs(10);
    let server = ScriptedServer::start(vec![loading(), silent]).await;
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    config.first_byte_timeout = Duration::from_secs(1);
    let client = EngineClient::new(config).unwrap();
    let started = std::time::Instant::now();
    let err = client
        .stream_chat(&request(), &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(1300),
        "{err:?} after {took:?}, first-byte timeout 1 s"
    );
}
