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
    assert_eq!(run.code(), Some(7), "{}", run.stderr());
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
    // The eight past the cap were refused by a limit (issue 36): exit 3.
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.summary()["outcome"], "completed_with_denials");
    let calls = run.summary()["tool_calls"].as_array().unwrap().clone();
    assert_eq!(calls.len(), 40);
    // f*.txt do not exist: the 32 that ran reached the tool and failed
    // there; the rest never reached the gate.
    let decided = calls.iter().filter(|c| !c["decision"].is_null()).count();
    assert_eq!(decided, 32);
    // The eight that did not run are one line in the next request.
    let sent = run.request_text(1);
    assert_eq!(sent.matches("\"role\":\"tool\"").count(), 32, "{sent}");
    assert!(
        sent.contains("this response made 8 further tool calls that did not run"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_flood_of_calls_leaves_the_next_request_valid_and_within_the_default_window() {
    // Issue 22: 1,000 calls in one response, at the default window
    // (32768 tokens since issue 38). The next request carries the 32 that ran, each with its
    // result, and one line for the rest; the store keeps all 1,000.
    let mut many = Reply::builder();
    for _ in 0..1000 {
        many = many.tool_call("read_file", json!({"path": "a.txt"}));
    }
    let builder = GoatRun::builder()
        .replies([many.build(), Reply::text("Done.")])
        .json();
    std::fs::write(builder.env().ws.join("a.txt"), "alpha\n").unwrap();
    let run = builder.run("Read it a lot").await;
    // The calls past the cap were refused by a limit (issue 36): exit 3.
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.summary()["answer"], "Done.");
    assert_eq!(run.summary()["tool_calls"].as_array().unwrap().len(), 1000);

    let requests = run.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let assistant: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 1);
    let ids: Vec<String> = assistant[0]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 32, "only the calls that ran are carried");
    let results: Vec<&serde_json::Value> =
        messages.iter().filter(|m| m["role"] == "tool").collect();
    let answered: Vec<String> = results
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(answered, ids, "every call carried has its result, in order");
    let last = results[31]["content"].as_str().unwrap();
    assert!(
        last.ends_with(
            "[GOAT: this response made 968 further tool calls that did not run (too many calls \
             in one response); they are left out here. Make fewer calls at a time.]"
        ),
        "{last}"
    );
    assert_eq!(
        run.request_text(1).matches("did not run").count(),
        1,
        "one line for them all"
    );
}
