//! The context window, as each engine says it (or does not), and the
//! engines' refusals of a request too long for it.

use goat_engine::{
    CancellationToken, ChatRequest, EngineClient, EngineConfig, EngineError, Message, WindowProbe,
    WindowSource,
};

use goat_testkit::*;

fn json(body: &str) -> Reply {
    Reply::error(200, "application/json", body)
}

async fn probe(routes: &[(&str, Reply)]) -> (WindowProbe, Vec<String>) {
    let server = ScriptedServer::start(vec![]).await;
    for (path, reply) in routes {
        server.route(path, reply.clone());
    }
    let client = EngineClient::new(EngineConfig::new(server.base_url(), "qwen")).unwrap();
    let found = client.discover_window().await;
    let paths = server.probes().into_iter().map(|r| r.path).collect();
    (found, paths)
}

#[tokio::test]
async fn llama_cpp_props_in_the_old_and_the_new_shape() {
    for body in [
        r#"{"n_ctx": 4096, "total_slots": 1}"#,
        r#"{"default_generation_settings": {"n_ctx": 4096, "params": {}}, "total_slots": 1}"#,
    ] {
        let (found, paths) = probe(&[("/props", json(body))]).await;
        assert_eq!(
            found,
            WindowProbe::Found {
                tokens: 4096,
                source: WindowSource::LlamaCppProps
            },
            "{body}"
        );
        assert_eq!(
            paths,
            ["/props"],
            "asked at the root, beside /v1, and only there"
        );
    }
}

#[tokio::test]
async fn vllm_models_max_model_len() {
    let (found, paths) = probe(&[(
        "/v1/models",
        json(r#"{"object":"list","data":[{"id":"qwen","object":"model","max_model_len":32768}]}"#),
    )])
    .await;
    assert_eq!(
        found,
        WindowProbe::Found {
            tokens: 32768,
            source: WindowSource::ModelsListing
        }
    );
    assert_eq!(paths, ["/props", "/v1/models"]);
}

/// LM Studio 0.3.x's `/api/v0/models`, as recorded: the loaded model's
/// `loaded_context_length` first.
#[tokio::test]
async fn lm_studio_api_v0_models() {
    let listing = r#"{"data":[{"id":"qwen","object":"model","type":"llm","publisher":"lmstudio-community","arch":"qwen2","compatibility_type":"gguf","quantization":"Q4_K_M","state":"loaded","max_context_length":131072,"loaded_context_length":32768},{"id":"text-embedding-nomic-embed-text-v1.5","object":"model","type":"embeddings","state":"not-loaded","max_context_length":2048}],"object":"list"}"#;
    let (found, paths) = probe(&[
        // LM Studio's OpenAI listing says no window.
        (
            "/v1/models",
            json(r#"{"data":[{"id":"qwen","object":"model","owned_by":"organization_owner"}],"object":"list"}"#),
        ),
        ("/api/v0/models", json(listing)),
    ])
    .await;
    assert_eq!(
        found,
        WindowProbe::Found {
            tokens: 32768,
            source: WindowSource::LmStudioModels
        }
    );
    assert_eq!(paths, ["/props", "/v1/models", "/api/v0/models"]);
}

/// Ollama's `POST /api/show`, as recorded: `num_ctx` from the Modelfile's
/// parameters first, else the model's `context_length`; asked for the
/// session's model.
#[tokio::test]
async fn ollama_api_show() {
    let with_num_ctx = r#"{"license":"Apache License","modelfile":"FROM qwen2.5-coder:7b\nPARAMETER num_ctx 65536","parameters":"num_ctx                        65536\nstop                           \"<|im_end|>\"","template":"{{- if .Messages }}","details":{"parent_model":"","format":"gguf","family":"qwen2","families":["qwen2"],"parameter_size":"7.6B","quantization_level":"Q4_K_M"},"model_info":{"general.architecture":"qwen2","general.parameter_count":7615616512,"qwen2.attention.head_count":28,"qwen2.block_count":28,"qwen2.context_length":32768,"qwen2.embedding_length":3584},"capabilities":["completion","tools","insert"],"modified_at":"2026-11-30T10:00:00Z"}"#;
    let (found, paths) = probe(&[("/api/show", json(with_num_ctx))]).await;
    assert_eq!(
        found,
        WindowProbe::Found {
            tokens: 65536,
            source: WindowSource::OllamaShow
        }
    );
    assert_eq!(
        paths,
        ["/props", "/v1/models", "/api/v0/models", "/api/show"]
    );
    let bare = r#"{"parameters":"stop \"<|im_end|>\"","details":{"family":"qwen2"},"model_info":{"general.architecture":"qwen2","qwen2.context_length":32768},"capabilities":["completion","tools"]}"#;
    let server = ScriptedServer::start(vec![]).await;
    server.route("/api/show", json(bare));
    let client = EngineClient::new(EngineConfig::new(server.base_url(), "qwen")).unwrap();
    assert_eq!(
        client.discover_window().await,
        WindowProbe::Found {
            tokens: 32768,
            source: WindowSource::OllamaShow
        }
    );
    let show = server.probes().pop().unwrap();
    assert_eq!(
        (show.method.as_str(), show.path.as_str()),
        ("POST", "/api/show")
    );
    assert_eq!(show.body, serde_json::json!({"model": "qwen"}));
}

#[tokio::test]
async fn an_engine_that_says_nothing_or_garbage_is_not_said() {
    let (found, _) = probe(&[]).await;
    assert_eq!(found, WindowProbe::NotSaid, "both 404");
    let (found, _) = probe(&[
        ("/props", json("<html>not json")),
        (
            "/v1/models",
            json(r#"{"data":[{"id":"qwen","max_model_len":"big"}]}"#),
        ),
    ])
    .await;
    assert_eq!(found, WindowProbe::NotSaid);
}

#[tokio::test]
async fn an_engine_that_cannot_be_asked_is_unreachable_not_a_failure() {
    let (found, _) = probe(&[
        (
            "/props",
            Reply::error(
                503,
                "application/json",
                r#"{"error":{"message":"Loading model"}}"#,
            ),
        ),
        ("/v1/models", Reply::hang_up()),
    ])
    .await;
    assert_eq!(found, WindowProbe::Unreachable);
    // Nothing listening at all.
    let client = EngineClient::new(EngineConfig::new("http://127.0.0.1:9/v1", "q")).unwrap();
    assert_eq!(client.discover_window().await, WindowProbe::Unreachable);
}

async fn chat(reply: Reply) -> Result<goat_engine::Response, EngineError> {
    let server = ScriptedServer::start(vec![reply]).await;
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    let request = ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    };
    EngineClient::new(config)
        .unwrap()
        .stream_chat(&request, &CancellationToken::new(), &mut |_| {})
        .await
}

#[tokio::test]
async fn context_errors_are_their_own_kind_with_what_the_engine_said() {
    let llama = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
    match chat(Reply::error(400, "application/json", llama)).await {
        Err(EngineError::ContextOverflow {
            window,
            prompt_tokens,
            message,
        }) => {
            assert_eq!((window, prompt_tokens), (Some(4096), Some(4476)));
            assert!(
                message.starts_with("request (4476 tokens) exceeds"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let vllm = r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens. Please reduce the length of the messages or completion.","type":"BadRequestError","code":400}"#;
    assert!(matches!(
        chat(Reply::error(400, "application/json", vllm)).await,
        Err(EngineError::ContextOverflow {
            window: Some(32768),
            ..
        })
    ));
    let mid_stream = ev(
        serde_json::json!({"error": {"message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}),
    );
    assert!(matches!(
        chat(Reply::sse(mid_stream)).await,
        Err(EngineError::ContextOverflow { window: None, .. })
    ));
    // Any other 400 stays what it was.
    assert!(matches!(
        chat(Reply::error(
            400,
            "application/json",
            r#"{"error":{"message":"bad schema"}}"#
        ))
        .await,
        Err(EngineError::Http { status: 400, .. })
    ));
}

#[tokio::test]
async fn timings_and_time_to_first_token_come_with_the_response() {
    let body = [
        ev_content("Hi"),
        ev_finish("stop"),
        ev(serde_json::json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, "timings": {"prompt_n": 10, "prompt_ms": 12.5, "predicted_n": 5, "predicted_ms": 100.0, "predicted_per_second": 50.0}})),
        ev_done(),
    ]
    .concat();
    let r = chat(Reply::sse(body)).await.unwrap();
    assert_eq!(r.tokens_per_second(), Some(50.0));
    assert!(r.first_token_after.is_some());
    assert!(r.elapsed >= r.first_token_after.unwrap());
    let plain = chat(Reply::builder().text("Hi").usage(10, 5).build())
        .await
        .unwrap();
    assert!(plain.timings.is_none());
}

/// Issue 25: `cache_prompt: true` goes to an engine whose `/props` says it
/// is llama-server, never to one that does not, and never again once the
/// engine refused it; llama-server's `timings.cache_n` is read.
#[tokio::test]
async fn cache_prompt_is_sent_to_llama_server_only() {
    let hi = ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    };
    let answer = || {
        Reply::sse(
            [
                ev_content("ok"),
                ev_finish("stop"),
                ev(serde_json::json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}, "timings": {"cache_n": 8, "prompt_n": 2, "prompt_ms": 1.0, "predicted_n": 1, "predicted_ms": 1.0, "predicted_per_second": 1.0}})),
                ev_done(),
            ]
            .concat(),
        )
    };
    let refusal = Reply::error(
        400,
        "application/json",
        r#"{"error":{"code":400,"message":"unknown field cache_prompt"}}"#,
    );
    for (props, expect) in [
        (
            Some(r#"{"default_generation_settings": {"n_ctx": 4096}}"#),
            true,
        ),
        (None, false),
    ] {
        let server =
            ScriptedServer::start(vec![answer(), refusal.clone(), answer(), answer()]).await;
        if let Some(body) = props {
            server.route("/props", json(body));
        }
        let mut config = EngineConfig::new(server.base_url(), "qwen");
        config.retries = 0;
        let client = EngineClient::new(config).unwrap();
        client.discover_window().await;
        assert_eq!(client.sends_cache_prompt(), expect);
        let cancel = CancellationToken::new();
        let response = client.stream_chat(&hi, &cancel, &mut |_| {}).await.unwrap();
        assert_eq!(response.timings.unwrap().cache_n, Some(8));
        assert_eq!(response.usage.unwrap().cached_tokens, Some(8));
        let sent = server.requests();
        assert_eq!(
            sent[0].body.get("cache_prompt"),
            expect.then_some(&serde_json::Value::Bool(true))
        );
        if expect {
            // Refused once: sent again without it, and never again.
            client.stream_chat(&hi, &cancel, &mut |_| {}).await.unwrap();
            client.stream_chat(&hi, &cancel, &mut |_| {}).await.unwrap();
            let sent = server.requests();
            assert_eq!(sent.len(), 4);
            assert!(sent[1].body.get("cache_prompt").is_some());
            assert!(sent[2].body.get("cache_prompt").is_none());
            assert!(sent[3].body.get("cache_prompt").is_none());
            assert!(!client.sends_cache_prompt());
        }
    }
}
