//! The exact request the engine receives.

use goat_engine::{
    CancellationToken, ChatRequest, EngineClient, EngineConfig, Message, RequestToolCall,
    ToolSchema,
};
use serde_json::json;

use goat_testkit::*;

fn conversation() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::System {
                content: "You are GOAT.".into(),
            },
            Message::User {
                content: "Fix main.rs".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![RequestToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "src/main.rs"}),
                }],
            },
            Message::Tool {
                tool_call_id: "call_1".into(),
                content: "     1\tfn main() {}".into(),
            },
        ],
        tools: vec![ToolSchema {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
    }
}

#[tokio::test]
async fn the_engine_receives_the_openai_shaped_body() {
    let ok = [ev_content("ok"), ev_done()].concat();
    let server = ScriptedServer::start(vec![Reply::sse(ok)]).await;
    let mut config = EngineConfig::new(format!("{}/", server.base_url()), "qwen3-coder");
    config.api_key = Some("sk-local".into());
    let client = EngineClient::new(config).unwrap();
    client
        .stream_chat(&conversation(), &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap();

    let [req] = server.requests().try_into().unwrap();
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(req.header("authorization"), Some("Bearer sk-local"));
    assert_eq!(req.header("accept"), Some("text/event-stream"));
    assert_eq!(
        req.body,
        json!({
            "model": "qwen3-coder",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are GOAT."},
                {"role": "user", "content": "Fix main.rs"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/main.rs\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "     1\tfn main() {}"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
            }}],
            "tool_choice": "auto"
        })
    );
}

#[tokio::test]
async fn no_tools_means_no_tools_field_and_no_key_means_no_header() {
    let server =
        ScriptedServer::start(vec![Reply::sse([ev_content("ok"), ev_done()].concat())]).await;
    let client = EngineClient::new(EngineConfig::new(server.base_url(), "m")).unwrap();
    let request = ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    };
    client
        .stream_chat(&request, &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap();
    let req = &server.requests()[0];
    assert!(req.body.get("tools").is_none() && req.body.get("tool_choice").is_none());
    assert_eq!(req.header("authorization"), None);
}

#[tokio::test]
async fn an_engine_rejecting_stream_options_still_works() {
    let rejection =
        r#"{"error": {"message": "Unrecognized request argument supplied: stream_options"}}"#;
    let ok = || Reply::sse([ev_content("ok"), ev_done()].concat());
    let server = ScriptedServer::start(vec![
        Reply::error(400, "application/json", rejection),
        ok(),
        ok(),
    ])
    .await;
    let mut config = EngineConfig::new(server.base_url(), "m");
    config.retries = 0;
    let client = EngineClient::new(config).unwrap();
    let request = ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    };
    assert_eq!(
        client
            .stream_chat(&request, &CancellationToken::new(), &mut |_| {})
            .await
            .unwrap()
            .content,
        "ok"
    );
    // And it is remembered for the next request.
    client
        .stream_chat(&request, &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap();
    let options: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.body.get("stream_options").is_some())
        .collect();
    assert_eq!(options, [true, false, false]);
}
