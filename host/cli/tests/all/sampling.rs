//! Issue 23 through the `goat` binary: the output cap and the sampling
//! settings as the engine receives them, a turn cut at the cap (what it
//! says and the tokens it spent), and the engine's word that its template
//! drops the tools.

use goat_testkit::*;
use serde_json::json;

use crate::{GoatRun, content_reply};

#[tokio::test(flavor = "multi_thread")]
async fn the_cap_is_sent_by_default_and_sampling_only_when_set() {
    let run = GoatRun::builder()
        .replies([content_reply("ok")])
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let body = &run.requests()[0].body;
    assert_eq!(body["max_tokens"], 4096);
    for absent in [
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "repeat_penalty",
        "seed",
    ] {
        assert!(body.get(absent).is_none(), "{absent} sent unset: {body}");
    }

    let run = GoatRun::builder()
        .replies([content_reply("ok")])
        .config("max_output_tokens = 64\n[sampling]\ntemperature = 0.7\ntop_k = 20\n")
        .var("GOAT_TOP_P", "0.8")
        .arg("--temperature")
        .arg("0")
        .arg("--seed")
        .arg("7")
        .run("hello")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let body = &run.requests()[0].body;
    assert_eq!(
        (
            &body["max_tokens"],
            &body["temperature"],
            &body["top_p"],
            &body["top_k"],
            &body["seed"]
        ),
        (&json!(64), &json!(0.0), &json!(0.8), &json!(20), &json!(7)),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_cut_at_the_cap_says_what_to_change_and_keeps_its_tokens() {
    let cut = Reply::sse(
        [
            ev_content("1, 2, 3, 4, 5, 6, 7, 8, 9,"),
            ev_finish("length"),
            ev_usage(1200, 64),
            ev_done(),
        ]
        .concat(),
    );
    let run = GoatRun::builder().replies([cut]).run("count").await;
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
    let err = run.stderr();
    assert!(
        err.contains("output length limit")
            && err.contains("after 64 tokens")
            && err.contains("raise max_output_tokens"),
        "{err}"
    );
    assert!(
        err.contains("goat: 1.2k prompt + 64 completion tokens"),
        "the failed turn's tokens are shown: {err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_that_drops_the_tools_is_said_at_the_first_turn() {
    let run = GoatRun::builder()
        .replies([content_reply("I read it: it says hello.")])
        .route(
            "/props",
            Reply::error(
                200,
                "application/json",
                r#"{"chat_template_caps": {"supports_tools": false}, "default_generation_settings": {"n_ctx": 8192}}"#,
            ),
        )
        .run("read hello.txt")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let err = run.stderr();
    assert_eq!(
        err.matches("the engine is not showing the tools to the model")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("supports_tools is false") && err.contains("--chat-template-file"),
        "{err}"
    );
    let probes: Vec<String> = run.server.probes().into_iter().map(|p| p.path).collect();
    assert_eq!(
        probes,
        ["/props"],
        "one /props for the window and the template"
    );

    // A template that shows them: not a word.
    let run = GoatRun::builder()
        .replies([content_reply("ok")])
        .route(
            "/props",
            Reply::error(
                200,
                "application/json",
                r#"{"chat_template_caps": {"supports_tools": true}}"#,
            ),
        )
        .run("hi")
        .await;
    assert!(
        !run.stderr().contains("not showing the tools"),
        "{}",
        run.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_smaller_than_the_tools_is_the_other_sign() {
    let small = Reply::sse(
        [
            ev_content("It says hello."),
            ev_finish("stop"),
            ev_usage(53, 6),
            ev_done(),
        ]
        .concat(),
    );
    let run = GoatRun::builder()
        .replies([small])
        .run("read hello.txt")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let err = run.stderr();
    assert!(
        err.contains("the engine counted 53 prompt tokens, fewer than the tool descriptions alone"),
        "{err}"
    );
    // Indirect evidence: a possibility, with how to check, never a fact.
    assert!(
        err.contains("the engine may not be showing the tools") && err.contains("goat probe"),
        "{err}"
    );
    assert!(
        !err.contains("the engine is not showing the tools"),
        "{err}"
    );
}

/// A gateway that leaves the tokens it served from its cache out of its
/// prompt count (and says how many it served) showed the tools: no
/// warning (issue 38: a warning that cries wolf is ignored when it
/// matters).
#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_count_without_its_cached_tokens_is_no_sign() {
    let cached = Reply::sse(
        [
            ev_content("It says hello."),
            ev_finish("stop"),
            ev(json!({"id": "c1", "choices": [], "usage": {
                "prompt_tokens": 53, "completion_tokens": 6, "total_tokens": 59,
                "prompt_tokens_details": {"cached_tokens": 4000}}})),
            ev_done(),
        ]
        .concat(),
    );
    let run = GoatRun::builder()
        .replies([cached])
        .run("read hello.txt")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let err = run.stderr();
    assert!(!err.contains("tool descriptions"), "{err}");
    assert!(!err.contains("showing the tools"), "{err}");
}
