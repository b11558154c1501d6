//! ADR-0074 through the real binary: the window asked of the engine (or
//! set), and the tokens and speed of a turn shown after it.

use goat_testkit::*;
use serde_json::json;

use crate::GoatRun;

/// An answer with usage and llama-server's timings.
fn timed_answer() -> Reply {
    let body = [
        ev_content("Hi"),
        ev_finish("stop"),
        ev(json!({"choices": [], "usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}, "timings": {"prompt_n": 1234, "prompt_ms": 80.0, "predicted_n": 56, "predicted_ms": 1000.0, "predicted_per_second": 56.0}})),
        ev_done(),
    ]
    .concat();
    Reply::sse(body)
}

/// llama-server gets `cache_prompt: true`, unless `no_cache_prompt` keeps
/// the server's own setting (a server started with `--no-cache-prompt`).
#[tokio::test(flavor = "multi_thread")]
async fn cache_prompt_goes_to_llama_server_unless_turned_off() {
    for (off, sent) in [(None, Some(true)), (Some("1"), None)] {
        let mut builder = GoatRun::builder().replies([timed_answer()]).route(
            "/props",
            Reply::error(
                200,
                "application/json",
                r#"{"default_generation_settings": {"n_ctx": 32768}}"#,
            ),
        );
        if let Some(value) = off {
            builder = builder.var("GOAT_NO_CACHE_PROMPT", value);
        }
        let run = builder.json().run("hello").await;
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        let body = &run.requests()[0].body;
        assert_eq!(
            body.get("cache_prompt")
                .and_then(serde_json::Value::as_bool),
            sent,
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_window_is_asked_of_the_engine_and_the_turns_figures_are_shown() {
    let run = GoatRun::builder()
        .replies([timed_answer()])
        .route(
            "/props",
            Reply::error(
                200,
                "application/json",
                r#"{"default_generation_settings": {"n_ctx": 32768}}"#,
            ),
        )
        .json()
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let probes: Vec<String> = run.server.probes().into_iter().map(|p| p.path).collect();
    assert_eq!(probes, ["/props"]);
    let stats = &run.summary()["stats"];
    assert_eq!(stats["prompt_tokens"], 1234);
    assert_eq!(stats["completion_tokens"], 56);
    assert_eq!(stats["window_tokens"], 32768);
    assert_eq!(stats["tokens_per_second"], 56.0);
    assert!(stats["first_token_ms"].is_u64());
    let line = run
        .stderr()
        .lines()
        .find(|l| l.contains("prompt + "))
        .unwrap_or_default()
        .to_owned();
    assert!(
        line.starts_with(
            "▌ goat: 1.2k prompt + 56 completion tokens · context 1234 of 32768 · first token "
        ) && line.ends_with(" s · 56.0 tokens/s"),
        "{}",
        run.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_tokens_setting_is_used_without_asking() {
    let run = GoatRun::builder()
        .replies([timed_answer()])
        .arg("--context-tokens")
        .arg("16384")
        .json()
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    // Only whether its template shows the tools (issue 23), never its
    // window: the answer would not be used.
    let probes: Vec<String> = run.server.probes().into_iter().map(|p| p.path).collect();
    assert_eq!(probes, ["/props"], "the engine was asked its window anyway");
    assert_eq!(run.summary()["stats"]["window_tokens"], 16384);
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_show_says_where_a_summary_begins_and_keeps_the_turns() {
    let run = GoatRun::builder()
        .replies([Reply::text("Hi")])
        .run("first request")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = run.sessions()[0]["id"].as_str().unwrap().to_owned();
    {
        let mut store = goat_store::Store::open(&run.env.db).unwrap();
        let turn = &store.turns(&id).unwrap()[0];
        let (turn, round) = (turn.id, turn.rounds[0].id);
        // ADR-0083: one ending inside the turn, then one covering it.
        for (through_round_id, content) in [
            (Some(round), "The person asked; nothing was done yet."),
            (None, "The person said hello."),
        ] {
            store
                .add_summary(
                    &id,
                    &goat_store::NewSummary {
                        through_turn_id: turn,
                        through_round_id,
                        content: content.into(),
                        reason: goat_store::CompactReason::Window,
                        prompt_tokens: None,
                        completion_tokens: None,
                    },
                )
                .unwrap();
        }
    }
    let shown = crate::text(&run.env.run(&["sessions", "show", &id]).stdout);
    let at = shown.find("first request").unwrap();
    let inside = shown
        .find(
            "-- summary #1 (window): the turns up to here were compacted, this one through its \
             round 1 (its request and later rounds kept); later prompts",
        )
        .unwrap_or_else(|| panic!("{shown}"));
    let summary = shown
        .find("-- summary #2 (window): the turns up to here were compacted; later prompts")
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(at < inside && inside < summary, "{shown}");
    assert!(shown.ends_with("  The person said hello.\n"), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_error_compacts_once_and_the_turn_is_sent_again() {
    let first = GoatRun::builder()
        .replies([Reply::text("Hi")])
        .run("first request")
        .await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    let id = first.sessions()[0]["id"].as_str().unwrap().to_owned();
    let refusal = Reply::error(
        400,
        "application/json",
        // An older llama-server's words, with no numbers.
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"invalid_request_error"}}"#,
    );
    let server = ScriptedServer::start(vec![
        refusal,
        Reply::text("The person said hello and was greeted."),
        Reply::text("Again, hi."),
    ])
    .await;
    let out = first
        .env
        .resume(&server.base_url(), &id, "second request")
        .await;
    let err = crate::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(crate::text(&out.stdout), "Again, hi.\n");
    assert!(
        err.contains("▌ goat: 1 older turn summarised because the engine refused the request as too long; the store keeps them whole"),
        "{err}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].body.get("tools").is_none(),
        "the summary is asked without tools"
    );
    assert_eq!(
        requests[1].body["messages"][0]["content"],
        goat_shepherd::context::SUMMARY_INSTRUCTION
    );
    let retry = requests[2].body["messages"].as_array().unwrap();
    assert!(
        retry[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("The person said hello and was greeted.")
    );
    assert_eq!(retry[1]["content"], "second request");
    let shown = crate::text(&first.env.run(&["sessions", "show", &id]).stdout);
    assert!(
        shown.contains("first request") && shown.contains("-- summary #1 (overflow)"),
        "{shown}"
    );
}

/// Issue 25: what the engine's prompt cache served is kept per round and
/// shown after the turn, in the run summary, and in `goat stats`.
#[tokio::test(flavor = "multi_thread")]
async fn the_prompt_tokens_the_engine_cache_served_are_shown_and_kept() {
    let body = [
        ev_content("Hi"),
        ev_finish("stop"),
        ev(json!({"choices": [], "usage": {"prompt_tokens": 12100, "completion_tokens": 56, "total_tokens": 12156, "prompt_tokens_details": {"cached_tokens": 11600}}})),
        ev_done(),
    ]
    .concat();
    let run = GoatRun::builder()
        .replies([Reply::sse(body)])
        .json()
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.summary()["stats"]["cached_tokens"], 11600);
    assert!(
        run.stderr()
            .contains("▌ goat: 12.1k prompt tokens, 11.6k from cache · 56 completion tokens"),
        "{}",
        run.stderr()
    );
    let id = run.sessions()[0]["id"].as_str().unwrap().to_owned();
    let store = goat_store::Store::open(&run.env.db).unwrap();
    assert_eq!(
        store.turns(&id).unwrap()[0].rounds[0].cached_tokens,
        Some(11600)
    );
    let stats = crate::json_out(&run.env.run(&["stats", "--json"]));
    assert_eq!(
        (
            stats[0]["prompt_tokens"].as_i64(),
            stats[0]["cached_tokens"].as_i64()
        ),
        (Some(12100), Some(11600))
    );
    let human = crate::text(&run.env.run(&["stats"]).stdout);
    assert!(
        human.contains(
            "prompt tokens: 12100; of the 12100 whose engine said, 11600 served from its prompt \
             cache (96%)"
        ),
        "{human}"
    );
}
