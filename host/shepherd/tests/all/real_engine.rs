//! Against a real llama-server with a registry-shipped model (issue 23),
//! started by [`RealEngine`]; skipped with a note when the build and the
//! models are not there (`shared/real-engine/setup.sh`; `.ci/run` runs
//! it and makes them required).
//!
//! The models are tiny and never trained on GOAT's tools, so these tests
//! rely only on what the engine does: which tools it shows the model, the
//! output cap, the usage it reports. Every request is at temperature 0
//! with a fixed seed.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use goat_engine::{
    CancellationToken, ChatRequest, EngineClient, EngineConfig, EngineError, Message, Sampling,
};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_shepherd::{Shepherd, ToolsNotShown, TurnError, TurnEvent, prompt_without_tools};
use goat_store::{RoundFailure, RoundStatus, Store};
use goat_testkit::{RealEngine, RealModel, RealTemplate};

use crate::shepherd::shared_sandbox;

/// Repeatable: no sampling randomness.
fn greedy(max_output_tokens: u64) -> Sampling {
    Sampling {
        max_output_tokens: Some(max_output_tokens),
        temperature: Some(0.0),
        seed: Some(42),
        ..Sampling::default()
    }
}

struct Real {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    store: Arc<Mutex<Store>>,
    session: String,
    shepherd: Shepherd,
}

fn shepherd_for(engine: &RealEngine, sampling: Sampling, max_rounds: usize) -> Real {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello from the workspace\n").unwrap();
    let mut store = Store::open(&dir.path().join("state/goat.db")).unwrap();
    let session = store
        .create_session(&ws, &engine.base_url(), engine.model)
        .unwrap();
    let store = Arc::new(Mutex::new(store));
    let (sandbox, tools) = shared_sandbox();
    let router = AppToolRouter::new(
        sandbox,
        tools,
        RouterConfig {
            workspace: ws.clone(),
            permissions_db: dir.path().join("state/permissions.db"),
            session_id: session.clone(),
            interactive: Interactive::No,
            writes: WritePolicy::Default,
        },
    );
    let mut config = EngineConfig::new(engine.base_url(), engine.model);
    config.sampling = sampling;
    let shepherd = Shepherd::new(
        EngineClient::new(config).unwrap(),
        router,
        store.clone(),
        session.clone(),
        "You are a coding agent. Use the tools to act; paths are relative to the workspace root."
            .to_owned(),
        max_rounds,
    );
    Real {
        _dir: dir,
        ws,
        store,
        session,
        shepherd,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_engine_dropping_the_tools_is_said_at_the_first_turn() {
    // SmolLM2's own template is plain ChatML: llama-server reports
    // supports_tools false and drops the tools of every request.
    let Some(engine) = RealEngine::start(
        "the_engine_dropping_the_tools_is_said_at_the_first_turn",
        RealModel::SmolLm2,
        RealTemplate::Embedded,
        4096,
    ) else {
        return;
    };
    let real = shepherd_for(&engine, greedy(32), 2);
    let mut events = Vec::new();
    let result = real
        .shepherd
        .run_turn(
            "Read hello.txt and tell me its first line.",
            &CancellationToken::new(),
            &mut |e| events.push(e),
        )
        .await;
    let warnings: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolsNotShown(why) => Some(*why),
            _ => None,
        })
        .collect();
    assert_eq!(warnings, [ToolsNotShown::TemplateCaps], "{result:?}");
    // The other sign agrees: the engine counted fewer prompt tokens than
    // the tool schemas alone take.
    let prompt_tokens = real.shepherd.last_turn_stats().context_tokens.unwrap();
    let schemas = {
        let (_, tools) = shared_sandbox();
        tools
            .iter()
            .map(|t| goat_engine::ToolSchema {
                name: t.spec().name.clone(),
                description: t.spec().description.clone(),
                parameters: t.spec().parameters.clone(),
            })
            .collect::<Vec<_>>()
    };
    assert!(
        matches!(
            prompt_without_tools(&schemas, prompt_tokens, None),
            Some(ToolsNotShown::PromptSize { .. })
        ),
        "prompt_tokens {prompt_tokens}"
    );
    let _ = real.ws;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_cap_ends_a_runaway_answer_within_the_cap() {
    let Some(engine) = RealEngine::start(
        "the_output_cap_ends_a_runaway_answer_within_the_cap",
        RealModel::SmolLm2,
        RealTemplate::Embedded,
        4096,
    ) else {
        return;
    };
    let request = ChatRequest {
        messages: vec![Message::User {
            content: "Write a very long story about a cat, at least 2000 words.".to_owned(),
        }],
        tools: vec![],
    };
    let run = async |cap: u64| {
        let mut config = EngineConfig::new(engine.base_url(), engine.model);
        config.sampling = greedy(cap);
        let client = EngineClient::new(config).unwrap();
        let started = Instant::now();
        let result = client
            .stream_chat(&request, &CancellationToken::new(), &mut |_| {})
            .await;
        (result, started.elapsed())
    };
    for cap in [16, 128] {
        let (result, took) = run(cap).await;
        let Err(EngineError::Length { partial }) = result else {
            panic!("cap {cap}: {result:?}");
        };
        let usage = partial
            .usage
            .unwrap_or_else(|| panic!("llama-server reports usage after length"));
        assert_eq!(usage.completion_tokens, cap, "cap {cap}");
        assert!(!partial.content.is_empty());
        eprintln!("cap {cap}: {} tokens in {took:?}", usage.completion_tokens);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_usage_of_a_round_cut_by_length_is_kept() {
    let Some(engine) = RealEngine::start(
        "the_usage_of_a_round_cut_by_length_is_kept",
        RealModel::SmolLm2,
        RealTemplate::Embedded,
        4096,
    ) else {
        return;
    };
    let real = shepherd_for(&engine, greedy(24), 2);
    let result = real
        .shepherd
        .run_turn(
            "List the numbers from 1 to 1000, one per line.",
            &CancellationToken::new(),
            &mut |_| {},
        )
        .await;
    assert!(
        matches!(result, Err(TurnError::Engine(EngineError::Length { .. }))),
        "{result:?}"
    );
    let store = real.store.lock().unwrap();
    let turns = store.turns(&real.session).unwrap();
    assert_eq!(turns[0].rounds[0].status, RoundStatus::Failed);
    assert_eq!(turns[0].rounds[0].failure_kind, Some(RoundFailure::Engine));
    let tokens = store.session_tokens(&real.session).unwrap();
    assert_eq!(tokens.unreported_rounds, 0, "{tokens:?}");
    assert_eq!(tokens.completion, 24);
    assert!(tokens.prompt > 0);
    let stats = real.shepherd.last_turn_stats();
    assert_eq!(
        (stats.prompt_tokens, stats.completion_tokens),
        (tokens.prompt, 24)
    );
}

/// Issue 25, from the server's own counts: each round's request extends
/// the last one, so llama-server serves all of the last request from its
/// prompt cache and prefills only what is new. SmolLM2's template shows no
/// tools, so every turn is one round and the test does not depend on the
/// model's choices.
#[tokio::test(flavor = "multi_thread")]
async fn consecutive_rounds_reuse_the_engines_prompt_cache() {
    let Some(engine) = RealEngine::start(
        "consecutive_rounds_reuse_the_engines_prompt_cache",
        RealModel::SmolLm2,
        RealTemplate::Embedded,
        4096,
    ) else {
        return;
    };
    let real = shepherd_for(&engine, greedy(24), 2);
    for prompt in [
        "Say hello in one word.",
        "Name a colour in one word.",
        "Name a fruit in one word.",
        "Name a number in one word.",
    ] {
        let result = real
            .shepherd
            .run_turn(prompt, &CancellationToken::new(), &mut |_| {})
            .await;
        // An answer cut at the output cap is a failed round, and its
        // tokens were still prefilled: the cache holds the request either
        // way.
        assert!(
            matches!(
                result,
                Ok(_) | Err(TurnError::Engine(EngineError::Length { .. }))
            ),
            "{result:?}"
        );
    }
    let rounds: Vec<_> = real
        .store
        .lock()
        .unwrap()
        .turns(&real.session)
        .unwrap()
        .into_iter()
        .flat_map(|t| t.rounds)
        .collect();
    assert_eq!(rounds.len(), 4);
    for pair in rounds.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let (Some(prompt_before), Some(prompt), Some(cached)) = (
            before.prompt_tokens,
            after.prompt_tokens,
            after.cached_tokens,
        ) else {
            panic!("llama-server reports prompt and cached tokens: {pair:?}");
        };
        eprintln!(
            "{cached} of {prompt} prompt tokens from the cache (the request before: {prompt_before})"
        );
        // All of the last request but the few tokens of its generation
        // prompt (where the answer or the next request begins).
        assert!(
            cached + 8 >= prompt_before,
            "round {}: {cached} of {prompt} tokens from the cache, the request before had \
             {prompt_before}",
            after.id
        );
        assert!(prompt - cached < prompt - prompt_before + 64, "{pair:?}");
    }

    // The server's timings say the same of a request that extends the one
    // before, and the client sends llama-server `cache_prompt`.
    let mut config = EngineConfig::new(engine.base_url(), engine.model);
    config.sampling = greedy(4);
    let client = EngineClient::new(config).unwrap();
    client.discover_window().await;
    assert!(client.sends_cache_prompt());
    let mut messages = vec![
        Message::System {
            content: "You are terse. ".repeat(40),
        },
        Message::User {
            content: "Say yes.".to_owned(),
        },
    ];
    let ask = async |messages: &[Message]| {
        let request = ChatRequest {
            messages: messages.to_vec(),
            tools: vec![],
        };
        match client
            .stream_chat(&request, &CancellationToken::new(), &mut |_| {})
            .await
        {
            Ok(r) => r,
            Err(EngineError::Length { partial }) => *partial,
            Err(e) => panic!("{e}"),
        }
    };
    let first = ask(&messages).await.timings.unwrap();
    messages.push(Message::Assistant {
        content: Some("Yes.".to_owned()),
        tool_calls: vec![],
    });
    messages.push(Message::User {
        content: "Say no.".to_owned(),
    });
    let second = ask(&messages).await.timings.unwrap();
    let cached = second.cache_n.unwrap();
    assert!(
        cached + 8 >= first.cache_n.unwrap_or(0) + first.prompt_n,
        "{first:?} then {second:?}"
    );
    assert!(
        second.prompt_n < 32,
        "only the new turn was prefilled: {second:?}"
    );
    eprintln!("first {first:?}\nsecond {second:?}");
}
