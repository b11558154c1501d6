//! What the person sees when an engine ends a response it did not finish,
//! and when a response makes more calls than run: through the real `goat`.

use goat_testkit::Reply;
use serde_json::json;

use crate::GoatRun;

#[tokio::test]
async fn an_aborted_response_fails_the_run_and_is_never_the_answer() {
    let aborted = Reply::builder()
        .text("The answer is")
        .finish("abort")
        .build();
    let run = GoatRun::builder()
        .replies([aborted])
        .json()
        .run("What is the answer?")
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let summary = run.summary();
    assert_eq!(summary["status"], "failed");
    assert_eq!(summary["answer"], serde_json::Value::Null);
    let error = summary["error"].as_str().unwrap();
    assert!(error.contains("finish_reason \"abort\""), "{error}");
    assert!(
        run.stderr().contains("finish_reason \"abort\""),
        "{}",
        run.stderr()
    );
    assert_eq!(run.requests().len(), 1);
}

#[tokio::test]
async fn calls_past_the_cap_are_stored_as_not_run() {
    let mut many = Reply::builder();
    for i in 0..40 {
        many = many.tool_call("read_file", json!({"path": format!("f{i}.txt")}));
    }
    let run = GoatRun::builder()
        .replies([many.build(), Reply::text("Done.")])
        // Forty results and the tool schemas need more than the default
        // window assumed when the engine does not say (ADR-0074).
        .arg("--context-tokens")
        .arg("65536")
        .json()
        .run("Read them all")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let calls = run.summary()["tool_calls"].as_array().unwrap().clone();
    assert_eq!(calls.len(), 40);
    // f*.txt do not exist: the 32 that ran reached the tool and failed
    // there; the rest never reached the gate.
    let decided = calls.iter().filter(|c| !c["decision"].is_null()).count();
    assert_eq!(decided, 32);
    let sent = run.request_text(1);
    assert_eq!(
        sent.matches("not run: too many calls in one response (limit 32)")
            .count(),
        8
    );
}
