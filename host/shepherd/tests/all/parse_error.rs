//! ADR-0079: llama.cpp's own failure to parse the model's call text, in
//! each shape it reaches GOAT, is ADR-0065's situation when the text it
//! quotes is markup naming an offered tool: one corrected request, the
//! failed round stored as such and kept out of the next prompt. Each test
//! asserts on the exact request the engine received next and the rows in
//! the store.

use goat_gate::WritePolicy;
use goat_shepherd::{RECOVERY_INSTRUCTION, TurnError, TurnEvent};
use goat_store::{CallStatus, RoundFailure, RoundStatus, TurnStatus};
use goat_testkit::*;
use serde_json::json;

use crate::shepherd::{Fixture, fixture, statuses};

const PROMPT: &str = "Read hello.txt";

/// The model's malformed call, as llama.cpp quotes it: Qwen3-Coder markup
/// naming the offered `read_file`, its arguments cut off.
const QUOTED: &str =
    "<tool_call>\n<function=read_file>\n<parameter=path>\nhello.txt\n</parameter>\n";

fn message(quoted: &str) -> String {
    format!("Failed to parse input at pos 15: {quoted}")
}

/// llama.cpp's error body: `{"code": 500, "message": ..., "type": "server_error"}`.
fn error_json(message: &str) -> serde_json::Value {
    json!({"code": 500, "message": message, "type": "server_error"})
}

/// Current llama.cpp: a `data:` event holding `{"error": {...}}`.
fn data_event_error(content: &str, message: &str) -> Reply {
    Reply::sse(format!(
        "{}data: {}\n\n",
        ev_content(content),
        json!({"error": error_json(message)})
    ))
}

/// Older llama.cpp: an `error:` field instead of `data:`.
fn error_field(content: &str, message: &str) -> Reply {
    Reply::sse(format!(
        "{}error: {}\n\n",
        ev_content(content),
        error_json(message)
    ))
}

/// The parse failing on the first piece of output: HTTP 500, before any
/// content (llama-server waits for the first result to send its headers).
fn before_any_content(message: &str) -> Reply {
    Reply::error(
        500,
        "application/json",
        &json!({"error": error_json(message)}).to_string(),
    )
}

async fn read_fixture(first: Reply) -> Fixture {
    let f = fixture(
        vec![
            first,
            Reply::tool_call("read_file", json!({"path": "hello.txt"})),
            Reply::text("It says hello."),
        ],
        WritePolicy::Default,
        8,
    )
    .await;
    std::fs::write(f.ws.join("hello.txt"), "hello\n").unwrap();
    f
}

/// The one recovery: the retry's request is exactly the conversation
/// without the failed round, plus the host instruction; the corrected
/// call ran once; the failed round is stored with the engine's message.
async fn recovers_once(first: Reply, streamed: &str, said: &str) {
    let f = read_fixture(first).await;
    let (result, events) = f.run(PROMPT).await;
    let summary = result.unwrap();
    assert_eq!((summary.rounds, summary.recovery_used), (3, true));
    assert_eq!(summary.answer, "It says hello.");
    assert!(events.contains(&TurnEvent::Recovery {
        tool: "read_file".into(),
        in_reasoning: false,
    }));

    let requests = f.server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "system", "content": requests[0].body["messages"][0]["content"]},
            {"role": "user", "content": PROMPT},
            {"role": "user", "content": RECOVERY_INSTRUCTION},
        ]),
        "the retry carries the failed round"
    );
    assert_eq!(
        requests[0].body["messages"].as_array().unwrap().len(),
        2,
        "{:?}",
        requests[0].body["messages"]
    );
    let third = f.request_text(2);
    assert!(!third.contains("<function=read_file>"), "{third}");
    assert!(!third.contains("[GOAT host]"), "{third}");

    let turns = f.turns();
    assert_eq!(turns[0].status, TurnStatus::Completed);
    assert!(turns[0].recovery_used);
    assert_eq!(
        statuses(&turns[0]),
        [RoundStatus::Failed, RoundStatus::Ok, RoundStatus::Ok]
    );
    let failed = &turns[0].rounds[0];
    assert_eq!(failed.failure_kind, Some(RoundFailure::Markup));
    assert_eq!(failed.content, streamed);
    let failure = failed.failure.as_deref().unwrap();
    assert!(
        failure.contains("could not parse") && failure.contains(said),
        "{failure}"
    );
    let calls: Vec<_> = turns[0].rounds.iter().flat_map(|r| &r.calls).collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].status, CallStatus::Ok);
    assert_eq!(f.recovery_rows(), 1);
}

#[tokio::test]
async fn a_parse_error_event_quoting_markup_gets_the_one_recovery() {
    let said = message(QUOTED);
    recovers_once(
        data_event_error("I'll read it.\n", &said),
        "I'll read it.\n",
        &said,
    )
    .await;
}

#[tokio::test]
async fn a_parse_error_in_the_older_error_field_gets_the_one_recovery() {
    let said = message(QUOTED);
    recovers_once(
        error_field("I'll read it.\n", &said),
        "I'll read it.\n",
        &said,
    )
    .await;
}

#[tokio::test]
async fn a_parse_error_before_any_content_gets_the_one_recovery() {
    let said = message(QUOTED);
    recovers_once(before_any_content(&said), "", &said).await;
}

#[tokio::test]
async fn a_parse_error_quoting_nothing_is_read_against_the_streamed_content() {
    // The wording of the llama.cpp in llama-cpp-python 0.3.36 quotes
    // nothing; the markup it choked on had streamed as content.
    let said = "The model produced output that does not match the expected Hermes 2 Pro format";
    recovers_once(data_event_error(QUOTED, said), QUOTED, said).await;
}

#[tokio::test]
async fn a_parse_error_naming_no_offered_tool_is_an_engine_failure() {
    let quoted = "<tool_call>\n<function=launch_rockets>\n<parameter=n>\n3\n";
    let f = read_fixture(data_event_error("", &message(quoted))).await;
    let result = f.run(PROMPT).await.0;
    assert!(
        matches!(&result, Err(TurnError::Engine(goat_engine::EngineError::ToolCallParse { quoted: q, .. })) if q == quoted),
        "{result:?}"
    );
    assert_eq!(f.server.requests().len(), 1, "no retry");
    let turns = f.turns();
    assert_eq!(turns[0].status, TurnStatus::Failed);
    assert!(!turns[0].recovery_used);
    assert_eq!(turns[0].rounds[0].failure_kind, Some(RoundFailure::Engine));
    assert_eq!(f.recovery_rows(), 0);
}

#[tokio::test]
async fn a_second_parse_error_in_the_turn_stops_it() {
    let f = fixture(
        vec![
            before_any_content(&message(QUOTED)),
            data_event_error("", &message(QUOTED)),
            Reply::text("unused"),
        ],
        WritePolicy::Default,
        8,
    )
    .await;
    let result = f.run(PROMPT).await.0;
    assert!(
        matches!(&result, Err(TurnError::MarkupAgain { tool, .. }) if tool == "read_file"),
        "{result:?}"
    );
    assert_eq!(f.server.requests().len(), 2);
    let turns = f.turns();
    assert_eq!(
        statuses(&turns[0]),
        [RoundStatus::Failed, RoundStatus::Failed]
    );
    assert_eq!(turns[0].rounds[1].failure_kind, Some(RoundFailure::Markup));
    assert_eq!(f.recovery_rows(), 1);
}
