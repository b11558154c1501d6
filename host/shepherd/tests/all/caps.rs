//! The Shepherd's caps and the engine's unusable finishes, through the
//! real router, sandbox and store: what ran, what was stored, and what the
//! engine was sent back.

use goat_engine::EngineError;
use goat_gate::WritePolicy;
use goat_shepherd::{MAX_CALLS_PER_RESPONSE, MAX_REQUEST_BYTES, TurnError, too_many_calls_result};
use goat_store::{CallErrorKind, CallStatus, RoundFailure, RoundStatus, TurnStatus};
use goat_testkit::*;
use serde_json::{Value, json};

use crate::shepherd::fixture;

fn messages(f: &crate::shepherd::Fixture, i: usize) -> Vec<Value> {
    f.server.requests()[i].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_thousand_calls_in_one_response_run_at_most_the_cap() {
    let mut many = Reply::builder();
    for _ in 0..1000 {
        many = many.tool_call("read_file", json!({"path": "a.txt"}));
    }
    let f = fixture(
        vec![many.build(), Reply::text("Done.")],
        WritePolicy::Default,
        4,
    )
    .await
    .huge_window();
    std::fs::write(f.ws.join("a.txt"), "alpha").unwrap();
    let summary = f.run("read a.txt a lot").await.0.unwrap();
    assert_eq!(summary.answer, "Done.");
    let calls = &f.turns()[0].rounds[0].calls;
    assert_eq!(calls.len(), 1000, "every call is stored");
    let ok = calls.iter().filter(|c| c.status == CallStatus::Ok).count();
    assert_eq!(ok, MAX_CALLS_PER_RESPONSE);
    for c in &calls[MAX_CALLS_PER_RESPONSE..] {
        assert_eq!(c.status, CallStatus::Error);
        assert_eq!(c.error_kind, Some(CallErrorKind::TooManyCalls));
        assert_eq!(c.decision, None, "never reached the router or the gate");
        assert_eq!(c.result.as_deref(), Some(too_many_calls_result().as_str()));
    }
    // The next request carries the calls that ran, each with its result,
    // and one line for the rest (issue 22): the record keeps them all.
    let results: Vec<Value> = messages(&f, 1)
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(results.len(), MAX_CALLS_PER_RESPONSE);
    let last = results[MAX_CALLS_PER_RESPONSE - 1].as_str().unwrap();
    assert!(last.contains("alpha"), "{last}");
    assert!(
        last.ends_with(&goat_store::dropped_unrun_note(
            1000 - MAX_CALLS_PER_RESPONSE
        )),
        "{last}"
    );
}

#[tokio::test]
async fn two_calls_with_one_id_go_back_with_two_ids_each_with_its_result() {
    let twins = Reply::builder()
        .tool_call_with_id("dup", "read_file", json!({"path": "a.txt"}))
        .tool_call_with_id("dup", "read_file", json!({"path": "b.txt"}))
        .build();
    let f = fixture(vec![twins, Reply::text("Done.")], WritePolicy::Default, 4).await;
    std::fs::write(f.ws.join("a.txt"), "alpha").unwrap();
    std::fs::write(f.ws.join("b.txt"), "bravo").unwrap();
    f.run("read both").await.0.unwrap();
    let ids: Vec<_> = f.turns()[0].rounds[0]
        .calls
        .iter()
        .map(|c| c.call.call_id.clone())
        .collect();
    assert_eq!(ids, ["dup", "dup-2"], "stored unique");
    let sent = messages(&f, 1);
    let assistant = sent.iter().find(|m| m["role"] == "assistant").unwrap();
    let call_ids: Vec<_> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(call_ids, ["dup", "dup-2"]);
    let results: Vec<_> = sent
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "dup");
    assert!(results[0].1.contains("alpha"), "{results:?}");
    assert_eq!(results[1].0, "dup-2");
    assert!(results[1].1.contains("bravo"), "{results:?}");
}

#[tokio::test]
async fn five_forty_megabyte_arguments_never_make_a_request_over_the_bound() {
    // Streamed as engines stream long arguments: in fragments (an SSE line
    // is at most 1 MiB).
    let big = "x".repeat(40 * 1024 * 1024);
    let mut replies: Vec<Reply> = (0..5)
        .map(|i| {
            let args = json!({"path": format!("big{i}.txt"), "content": big}).to_string();
            let id = format!("call_{i}");
            let mut reply =
                Reply::builder().event(ev_tool_call(0, Some(&id), Some("write_file"), Some("")));
            for piece in args.as_bytes().chunks(512 * 1024) {
                let piece = std::str::from_utf8(piece).unwrap();
                reply = reply.event(ev_tool_call(0, None, None, Some(piece)));
            }
            reply.finish("tool_calls").build()
        })
        .collect();
    replies.push(Reply::text("Done."));
    let f = fixture(replies, WritePolicy::Default, 8)
        .await
        .huge_window();
    let summary = f.run("write five big files").await.0.unwrap();
    assert_eq!(summary.answer, "Done.");
    let requests = f.server.requests();
    assert_eq!(requests.len(), 6);
    for (i, r) in requests.iter().enumerate() {
        let bytes: usize = r.header("content-length").unwrap().parse().unwrap();
        assert!(bytes <= MAX_REQUEST_BYTES, "request {i}: {bytes} bytes");
    }
    // The calls still happened, in the request and whole in the store; the
    // system prompt and the person's request are never elided.
    let last = messages(&f, 5);
    assert_eq!(last[0]["content"], "You are a coding agent.");
    assert_eq!(last[1]["content"], "write five big files");
    let elided = last
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().unwrap().clone())
        .filter(|c| {
            c["function"]["arguments"]
                .as_str()
                .unwrap()
                .contains("[arguments elided: ")
        })
        .count();
    assert!(elided >= 4, "{elided}");
    let calls: Vec<_> = f.turns()[0]
        .rounds
        .iter()
        .flat_map(|r| r.calls.clone())
        .collect();
    assert_eq!(calls.len(), 5);
    assert!(
        calls
            .iter()
            .all(|c| c.call.arguments.len() > 40 * 1024 * 1024)
    );
}

#[tokio::test]
async fn a_request_that_cannot_fit_fails_the_turn_before_sending() {
    let f = fixture(vec![Reply::text("never")], WritePolicy::Default, 4)
        .await
        .huge_window();
    let prompt = "y".repeat(MAX_REQUEST_BYTES + 1);
    let err = f.run(&prompt).await.0.unwrap_err();
    assert!(matches!(err, TurnError::RequestTooLarge { .. }), "{err}");
    assert!(f.server.requests().is_empty(), "nothing was sent");
    let turn = &f.turns()[0];
    assert_eq!(turn.status, TurnStatus::Failed);
    assert!(
        turn.error.as_deref().unwrap().contains("too large to send"),
        "{:?}",
        turn.error
    );
}

#[tokio::test]
async fn an_aborted_response_fails_the_turn_and_is_never_the_answer() {
    for reason in ["abort", "error", "content_filter", "whatever"] {
        let cut = Reply::builder()
            .text("The answer is")
            .tool_call("read_file", json!({"path": "a.txt"}))
            .finish(reason)
            .build();
        let f = fixture(vec![cut, Reply::text("unused")], WritePolicy::Default, 4).await;
        std::fs::write(f.ws.join("a.txt"), "alpha").unwrap();
        let err = f.run("answer").await.0.unwrap_err();
        match &err {
            TurnError::Engine(EngineError::Unfinished { reason: r }) => assert_eq!(r, reason),
            other => panic!("{reason}: {other:?}"),
        }
        assert_eq!(f.server.requests().len(), 1, "{reason}: no further round");
        let turn = &f.turns()[0];
        assert_eq!(turn.status, TurnStatus::Failed);
        let round = &turn.rounds[0];
        assert_eq!(round.status, RoundStatus::Failed);
        assert_eq!(round.failure_kind, Some(RoundFailure::Engine));
        let failure = round.failure.as_deref().unwrap();
        assert!(
            failure.contains(&format!("finish_reason \"{reason}\"")),
            "{failure}"
        );
        assert!(
            round.calls.is_empty(),
            "{reason}: no call was stored or run"
        );
    }
}
