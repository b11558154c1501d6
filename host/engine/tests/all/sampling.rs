//! The output cap and the sampling settings on the wire (issue 23): sent
//! only when set, under each engine's name; and llama.cpp's failure to
//! parse the model's call text typed, in each shape it arrives.

use goat_engine::{
    CancellationToken, ChatRequest, EngineClient, EngineConfig, EngineError, Message, Sampling,
};
use goat_testkit::*;
use serde_json::json;

fn hi() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    }
}

async fn send(
    server: &ScriptedServer,
    sampling: Sampling,
) -> Result<goat_engine::Response, EngineError> {
    let mut config = EngineConfig::new(server.base_url(), "m");
    config.retries = 0;
    config.sampling = sampling;
    let client = EngineClient::new(config).unwrap();
    client
        .stream_chat(&hi(), &CancellationToken::new(), &mut |_| {})
        .await
}

fn ok() -> Reply {
    Reply::sse([ev_content("ok"), ev_done()].concat())
}

#[tokio::test]
async fn only_the_settings_that_are_set_are_sent() {
    let server = ScriptedServer::start(vec![ok(), ok()]).await;
    send(&server, Sampling::default()).await.unwrap();
    send(
        &server,
        Sampling {
            max_output_tokens: Some(4096),
            temperature: Some(0.7),
            top_p: Some(0.8),
            top_k: Some(20),
            min_p: Some(0.0),
            repeat_penalty: Some(1.05),
            presence_penalty: Some(-0.5),
            seed: Some(42),
        },
    )
    .await
    .unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].body,
        json!({
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}],
        })
    );
    assert_eq!(
        requests[1].body,
        json!({
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 4096,
            "temperature": 0.7,
            "top_p": 0.8,
            "top_k": 20,
            "min_p": 0.0,
            "repeat_penalty": 1.05,
            "repetition_penalty": 1.05,
            "presence_penalty": -0.5,
            "seed": 42,
        })
    );
}

#[tokio::test]
async fn an_engine_that_names_max_completion_tokens_gets_it() {
    let rejection = r#"{"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error"}}"#;
    let server =
        ScriptedServer::start(vec![Reply::error(400, "application/json", rejection), ok()]).await;
    let cap = Sampling {
        max_output_tokens: Some(512),
        ..Sampling::default()
    };
    send(&server, cap).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["max_tokens"], 512);
    assert_eq!(requests[1].body["max_completion_tokens"], 512);
    assert!(requests[1].body.get("max_tokens").is_none());
}

#[tokio::test]
async fn a_length_finish_keeps_what_arrived_and_its_usage() {
    let server = ScriptedServer::start(vec![Reply::sse(
        [
            ev_content("1\n2\n3\n"),
            ev_finish("length"),
            ev_usage(40, 16),
            ev_done(),
        ]
        .concat(),
    )])
    .await;
    let result = send(&server, Sampling::default()).await;
    let Err(EngineError::Length { partial }) = result else {
        panic!("{result:?}");
    };
    assert_eq!(partial.content, "1\n2\n3\n");
    assert_eq!(
        partial
            .usage
            .map(|u| (u.prompt_tokens, u.completion_tokens)),
        Some((40, 16))
    );
}

const PARSE: &str = "Failed to parse input at pos 12: <tool_call>\n<function=read_file>";

fn parse_error_json() -> serde_json::Value {
    json!({"code": 500, "message": PARSE, "type": "server_error"})
}

#[tokio::test]
async fn a_parse_failure_is_typed_in_each_shape_with_its_quote() {
    let shapes = [
        Reply::sse(format!(
            "{}data: {}\n\n",
            ev_content("x"),
            json!({"error": parse_error_json()})
        )),
        Reply::sse(format!(
            "{}error: {}\n\n",
            ev_content("x"),
            parse_error_json()
        )),
        Reply::error(
            500,
            "application/json",
            &json!({"error": parse_error_json()}).to_string(),
        ),
    ];
    for shape in shapes {
        let server = ScriptedServer::start(vec![shape]).await;
        let result = send(&server, Sampling::default()).await;
        match result {
            Err(EngineError::ToolCallParse { message, quoted }) => {
                assert_eq!(message, PARSE);
                assert_eq!(quoted, "<tool_call>\n<function=read_file>");
            }
            other => panic!("{other:?}"),
        }
    }
    // Any other 500 stays what it was.
    let server = ScriptedServer::start(vec![Reply::error(
        500,
        "application/json",
        r#"{"error": {"code": 500, "message": "out of memory"}}"#,
    )])
    .await;
    let result = send(&server, Sampling::default()).await;
    assert!(
        matches!(result, Err(EngineError::Http { status: 500, ref message }) if message == "out of memory"),
        "{result:?}"
    );
}
