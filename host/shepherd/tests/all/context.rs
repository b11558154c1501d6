//! ADR-0073 through the real Shepherd, router, sandbox and store, against
//! a scripted engine that counts every request's tokens (bytes / 3) and
//! refuses, as llama-server does, any request over its window.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use goat_engine::{CancellationToken, EngineClient, EngineConfig};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_shepherd::context::{COMPACT_INSTRUCTION, SUMMARY_HEADING, SUMMARY_INSTRUCTION};
use goat_shepherd::{Shepherd, TurnError, TurnEvent};
use goat_store::{CompactReason, RoundStatus, Store, TurnStatus};
use goat_testkit::*;
use serde_json::{Value, json};

use crate::shepherd::shared_sandbox;

/// The engine's own count of a request: a byte in three is a token,
/// coarser than any real tokenizer on code and English.
fn engine_tokens(r: &Recorded) -> u64 {
    (r.body.to_string().len() / 3) as u64
}

/// A request for a summary: the turns rendered for a request of its own,
/// or (ADR-0083) the conversation last sent with the instruction after it.
fn is_summary_request(r: &Recorded) -> bool {
    is_rendered_summary_request(r)
        || r.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["content"].as_str() == Some(COMPACT_INSTRUCTION))
}

fn is_rendered_summary_request(r: &Recorded) -> bool {
    r.body.get("tools").is_none()
        && r.body["messages"][0]["content"].as_str() == Some(SUMMARY_INSTRUCTION)
}

fn overflow(tokens: u64, window: u64) -> Reply {
    Reply::error(
        400,
        "application/json",
        &json!({"error": {"code": 400, "message": format!("request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"), "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}}).to_string(),
    )
}

/// An agent's engine: a request ending in the person's words reads
/// `big.txt`; one ending in a tool result answers; a summary request gets
/// a summary. Over `window`, the llama.cpp refusal.
fn agent(window: u64) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    move |r: &Recorded| {
        let tokens = engine_tokens(r);
        if tokens > window {
            return overflow(tokens, window);
        }
        if is_summary_request(r) {
            return Reply::builder()
                .text("The person asked for big.txt many times; it was read each time.")
                .usage(tokens, 20)
                .build();
        }
        let last = r.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or(Value::Null);
        if last["role"] == "tool" {
            Reply::builder().text("done").usage(tokens, 2).build()
        } else {
            Reply::builder()
                .tool_call("read_file", json!({"path": "big.txt"}))
                .usage(tokens, 10)
                .build()
        }
    }
}

struct Session {
    dir: tempfile::TempDir,
    server: ScriptedServer,
    store: Arc<Mutex<Store>>,
    session: String,
    shepherd: Shepherd,
}

async fn session(
    respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    n_ctx: u64,
) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // 20 KB of text lines, as a source file reads.
    let line = "let value = compute(input, 42); // a line of code to read\n";
    std::fs::write(ws.join("big.txt"), line.repeat(20_000 / line.len() + 1)).unwrap();
    let server = ScriptedServer::start_with(respond).await;
    server.route(
        "/props",
        Reply::error(
            200,
            "application/json",
            &json!({"default_generation_settings": {"n_ctx": n_ctx}}).to_string(),
        ),
    );
    let mut store = Store::open(&dir.path().join("state/goat.db")).unwrap();
    let session = store
        .create_session(&ws, &server.base_url(), "qwen")
        .unwrap();
    let store = Arc::new(Mutex::new(store));
    let shepherd = shepherd(&server, &store, &session, dir.path());
    Session {
        dir,
        server,
        store,
        session,
        shepherd,
    }
}

/// A Shepherd for `session`, as a new process makes one.
fn shepherd(
    server: &ScriptedServer,
    store: &Arc<Mutex<Store>>,
    session: &str,
    dir: &std::path::Path,
) -> Shepherd {
    let (sandbox, tools) = shared_sandbox();
    let router = AppToolRouter::new(
        sandbox,
        tools,
        RouterConfig {
            workspace: dir.join("ws"),
            permissions_db: dir.join("state/permissions.db"),
            session_id: session.to_owned(),
            interactive: Interactive::No,
            writes: WritePolicy::Default,
        },
    );
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    Shepherd::new(
        EngineClient::new(config).unwrap(),
        router,
        store.clone(),
        session.to_owned(),
        "You are a coding agent.".to_owned(),
        8,
    )
}

impl Session {
    async fn turn(
        &self,
        prompt: &str,
    ) -> (
        Result<goat_shepherd::TurnSummary, TurnError>,
        Vec<TurnEvent>,
    ) {
        let mut events = Vec::new();
        let r = self
            .shepherd
            .run_turn(prompt, &CancellationToken::new(), &mut |e| events.push(e))
            .await;
        (r, events)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_session_never_sends_a_request_over_the_window_and_never_fails_for_context() {
    const WINDOW: u64 = 32_768;
    let s = session(agent(WINDOW), WINDOW).await;
    for n in 0..200 {
        let (result, _) = s.turn(&format!("read big.txt again ({n})")).await;
        let summary = result.unwrap_or_else(|e| panic!("turn {n}: {e}"));
        assert_eq!(summary.answer, "done");
        assert_eq!(summary.stats.window, WINDOW);
    }
    let requests = s.server.requests();
    let largest = requests.iter().map(engine_tokens).max().unwrap();
    assert!(largest <= WINDOW, "a request of {largest} tokens was sent");
    let summaries = requests.iter().filter(|r| is_summary_request(r)).count();
    assert!(
        summaries >= 1,
        "the session outgrew the window without compacting"
    );
    assert_eq!(
        requests.len(),
        400 + summaries,
        "no request was refused and retried"
    );
    let store = s.store.lock().unwrap();
    let turns = store.turns(&s.session).unwrap();
    assert_eq!(turns.len(), 200);
    assert!(turns.iter().all(|t| t.status == TurnStatus::Completed));
    assert!(
        turns
            .iter()
            .flat_map(|t| &t.rounds)
            .all(|r| r.status == RoundStatus::Ok),
        "a round failed"
    );
    let result = turns[0].rounds[0].calls[0].result.as_deref().unwrap();
    assert!(
        result.len() >= 20_000,
        "the tool results are 20 KB ({})",
        result.len()
    );
    assert_eq!(store.summaries(&s.session).unwrap().len(), summaries);
    // Old results went as stubs; the record kept them whole.
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("[result elided to keep the conversation within the context window: this read_file call succeeded"), "{}", &last[..2000.min(last.len())]);
    assert!(last.contains(SUMMARY_HEADING));
    assert_eq!(s.server.probes().len(), 1, "the window was asked once");
    let status = s.shepherd.context_status();
    assert_eq!(status.window, Some(WINDOW));
    assert_eq!(
        status.source,
        Some(goat_engine::WindowSource::LlamaCppProps)
    );
    assert!(status.next_request_tokens <= status.budget_tokens.unwrap());
    assert!(status.session_prompt_tokens > 0 && status.compactions == summaries as u64);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_context_error_triggers_one_compaction_and_one_retry() {
    // The engine says 1M tokens but refuses the third turn's first
    // request as if its window were smaller.
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let inner = agent(1_000_000);
    let s = session(
        move |r: &Recorded| {
            let chat = !is_summary_request(r);
            let n = if chat {
                counter.fetch_add(1, Ordering::SeqCst)
            } else {
                usize::MAX
            };
            if n == 4 {
                return overflow(engine_tokens(r), 60_000);
            }
            inner(r)
        },
        1_000_000,
    )
    .await;
    for prompt in ["first", "second"] {
        s.turn(prompt).await.0.unwrap();
    }
    let (result, events) = s.turn("third").await;
    let summary = result.unwrap();
    assert_eq!(summary.answer, "done");
    assert!(events.contains(&TurnEvent::Compacted {
        turns: 2,
        rounds: 0,
        reason: CompactReason::Overflow
    }));
    let requests = s.server.requests();
    // 4 chat requests for two turns, the refused one, the summary, the retry, the answer.
    assert_eq!(requests.len(), 8);
    assert!(!is_summary_request(&requests[4]));
    assert!(is_summary_request(&requests[5]));
    let summarised = requests[5].body["messages"][1]["content"].as_str().unwrap();
    assert!(summarised.contains("User: first") && summarised.contains("User: second"));
    let retry = requests[6].body["messages"].as_array().unwrap().clone();
    let system = retry[0]["content"].as_str().unwrap();
    assert!(
        system.contains(SUMMARY_HEADING) && system.contains("read each time"),
        "{system}"
    );
    assert_eq!(
        retry[1]["content"], "third",
        "the older turns went into the summary"
    );
    let store = s.store.lock().unwrap();
    let rows = store.summaries(&s.session).unwrap();
    assert_eq!(rows.len(), 1);
    let turns = store.turns(&s.session).unwrap();
    assert_eq!(rows[0].through_turn_id, turns[1].id);
    assert_eq!(rows[0].reason, CompactReason::Overflow);
    assert_eq!(turns[2].status, TurnStatus::Completed);
    assert_eq!(
        turns[2].rounds[0].status,
        RoundStatus::Failed,
        "the refused round is kept"
    );
    // The whole record is still there.
    assert_eq!(turns.len(), 3);
    assert_eq!(store.history(&s.session).unwrap().len(), 12);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_context_error_fails_the_turn_saying_what_to_do() {
    let inner = agent(1_000_000);
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let s = session(
        move |r: &Recorded| {
            if !is_summary_request(r) && counter.fetch_add(1, Ordering::SeqCst) >= 2 {
                return overflow(engine_tokens(r), 60_000);
            }
            inner(r)
        },
        1_000_000,
    )
    .await;
    s.turn("first").await.0.unwrap();
    let (result, _) = s.turn("second").await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, TurnError::ContextOverflowAgain { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().ends_with(
            "lower context_tokens to the engine's real window, run /compact, or start a new session"
        ),
        "{err}"
    );
    let requests = s.server.requests();
    assert_eq!(
        requests.len(),
        5,
        "chat, chat, refused, summary, refused again"
    );
    assert!(is_summary_request(&requests[3]));
    let store = s.store.lock().unwrap();
    let turns = store.turns(&s.session).unwrap();
    assert_eq!(turns[1].status, TurnStatus::Failed);
    assert!(!turns[1].error.as_deref().unwrap().contains("recovered"));
}

/// ADR-0083: which results go as stubs is kept with the session, so a
/// resumed session (a new process) lays its first request out as the last
/// one was, and the engine's prompt cache still serves it.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_extends_the_last_request_of_the_process_before() {
    const WINDOW: u64 = 32_768;
    let s = session(agent(WINDOW), WINDOW).await;
    for n in 0..5 {
        s.turn(&format!("read big.txt ({n})")).await.0.unwrap();
    }
    let before = s.server.requests();
    let last = before.last().unwrap().body["messages"].clone();
    assert!(
        last.to_string().contains("[result elided"),
        "the session was cut before it stopped"
    );
    let again = shepherd(&s.server, &s.store, &s.session, s.dir.path());
    again
        .run_turn("and once more", &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap();
    let first = &s.server.requests()[before.len()].body["messages"];
    let (last, first) = (last.as_array().unwrap(), first.as_array().unwrap());
    assert_eq!(&first[..last.len()], last.as_slice());
    assert_eq!(first[last.len() + 1]["content"], "and once more");
}

/// Issue 38: an engine that says its window nowhere GOAT asks gets the
/// default, said once in the session; one that says it, no word.
#[tokio::test(flavor = "multi_thread")]
async fn an_engine_that_does_not_say_its_window_is_told_the_default_once() {
    let said = |events: &[TurnEvent]| -> Vec<u64> {
        events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::WindowNotSaid { assumed } => Some(*assumed),
                _ => None,
            })
            .collect()
    };
    let s = session(agent(1_000_000), 16384).await;
    s.server.route(
        "/props",
        Reply::error(404, "application/json", r#"{"error":"not found"}"#),
    );
    let (first, events) = s.turn("read big.txt").await;
    first.unwrap();
    assert_eq!(said(&events), [goat_shepherd::DEFAULT_CONTEXT_TOKENS]);
    assert_eq!(goat_shepherd::DEFAULT_CONTEXT_TOKENS, 32768);
    let (second, events) = s.turn("read big.txt again").await;
    second.unwrap();
    assert_eq!(said(&events), Vec::<u64>::new(), "said once per session");
    let asked: Vec<String> = s.server.probes().into_iter().map(|p| p.path).collect();
    assert_eq!(
        asked[..4],
        ["/props", "/v1/models", "/api/v0/models", "/api/show"],
        "every engine's place asked: {asked:?}"
    );
    assert_eq!(
        s.shepherd.context_status().source,
        Some(goat_engine::WindowSource::Default)
    );

    let s = session(agent(1_000_000), 16384).await;
    let (r, events) = s.turn("read big.txt").await;
    r.unwrap();
    assert_eq!(said(&events), Vec::<u64>::new(), "the engine said 16384");
}
