//! The chat's `/diff`, `/undo` and `/compact`, and the compaction an
//! engine's context error triggers, at a pseudo-terminal: what the person
//! sees, and what changed on disk, in the store and in the requests the
//! engine received.

use goat_testkit::{Reply, ScriptedServer};

use crate::Env;
use crate::composer::{leave, settle};
use crate::pty::{Pty, write_call};

/// A chat without colour, at its first prompt, ready for keys.
fn chat(env: &Env, url: &str, extra: &[&str]) -> Pty {
    let mut pty = crate::composer::chat(env, url, extra, &[("NO_COLOR", "1")]);
    pty.expect("> ");
    settle();
    pty
}

#[tokio::test(flavor = "multi_thread")]
async fn diff_shows_the_sessions_change_and_undo_puts_it_back_once() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        write_call(),
        Reply::builder().text("Written.").build(),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), &["--mode", "accept-edits"]);
    pty.type_keys("make notes/a.txt\r");
    pty.expect("Written.");
    pty.expect("> ");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/a.txt")).unwrap(),
        "hello\n"
    );
    settle();
    pty.type_keys("/diff\r");
    pty.expect("+hello");
    pty.expect("> ");
    settle();
    pty.type_keys("/undo\r");
    pty.expect("undid turn 1 of session");
    pty.expect("removed (it did not exist before) notes/a.txt");
    pty.expect("> ");
    assert!(
        !env.ws.join("notes/a.txt").exists(),
        "the file is still there"
    );
    settle();
    pty.type_keys("/undo\r");
    pty.expect("nothing to undo");
    pty.expect("> ");
    settle();
    pty.type_keys("/undo x\r");
    pty.expect("'x' is not a turn number");
    pty.expect("> ");
    leave(&mut pty);
    // Only the turn's two requests reached the engine: the commands none.
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_summarises_the_turns_and_the_next_request_carries_the_summary() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        Reply::builder().text("Hi there.").build(),
        Reply::builder()
            .text("SUMMARY: the person said hello and was greeted.")
            .build(),
        Reply::builder().text("Still here.").build(),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), &["--context-tokens", "32768"]);
    pty.type_keys("hello\r");
    pty.expect("Hi there.");
    pty.expect("> ");
    settle();
    pty.type_keys("/compact\r");
    pty.expect("compacted 1 turn into a summary");
    pty.expect("> ");
    settle();
    pty.type_keys("/status\r");
    pty.expect("1 summary written");
    pty.expect("> ");
    settle();
    pty.type_keys("again\r");
    pty.expect("Still here.");
    pty.expect("> ");
    leave(&mut pty);

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    // The summary request offers no tools; the next turn's request carries
    // the summary in place of the turn it covers.
    assert!(requests[1].body.get("tools").is_none_or(|t| t.is_null()));
    let last = requests[2].body.to_string();
    assert!(
        last.contains("the person said hello and was greeted"),
        "{last}"
    );
    assert!(!last.contains("Hi there."), "{last}");
    // The store keeps the turn itself.
    let list = crate::json_out(&env.run(&["sessions", "list", "--json"]));
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let shown = crate::json_out(&env.run(&["sessions", "show", &id, "--json"]));
    assert!(shown.to_string().contains("Hi there."), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_error_in_the_chat_compacts_once_and_the_turn_goes_on() {
    let env = Env::new();
    let refusal = Reply::error(
        400,
        "application/json",
        // llama-server's type, without the counts older versions leave out.
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
    );
    let server = ScriptedServer::start(vec![
        Reply::builder().text("Hi there.").build(),
        refusal,
        Reply::builder()
            .text("SUMMARY: the person said hello and was greeted.")
            .build(),
        Reply::builder().text("Again, hi.").build(),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), &[]);
    pty.type_keys("hello\r");
    pty.expect("Hi there.");
    pty.expect("> ");
    settle();
    pty.type_keys("second request\r");
    pty.expect("1 older turn summarised because the engine refused the request as too long");
    pty.expect("Again, hi.");
    pty.expect("> ");
    leave(&mut pty);

    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let retry = requests[3].body["messages"].as_array().unwrap();
    assert!(
        retry[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("SUMMARY: the person said hello and was greeted."),
        "{retry:#?}"
    );
    assert_eq!(retry[1]["content"], "second request");
    assert!(!requests[3].body.to_string().contains("Hi there."));
    let transcript = pty.transcript();
    assert!(!transcript.contains("the turn failed"), "{transcript}");
}

/// Issue 25: `/status` sums what the engine's prompt cache served, and the
/// line after the turn says it.
#[tokio::test(flavor = "multi_thread")]
async fn status_says_how_much_of_the_prompts_the_engine_cache_served() {
    let env = Env::new();
    let cached = |text: &str| {
        Reply::sse(
            [
                goat_testkit::ev_content(text),
                goat_testkit::ev_finish("stop"),
                goat_testkit::ev(serde_json::json!({"choices": [], "usage": {"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005, "prompt_tokens_details": {"cached_tokens": 1500}}})),
                goat_testkit::ev_done(),
            ]
            .concat(),
        )
    };
    let server = ScriptedServer::start(vec![cached("One."), cached("Two.")]).await;
    let mut pty = chat(&env, &server.base_url(), &["--context-tokens", "32768"]);
    pty.type_keys("first\r");
    pty.expect("2.0k prompt tokens, 1.5k from cache · 5 completion tokens");
    pty.expect("> ");
    settle();
    pty.type_keys("second\r");
    pty.expect("Two.");
    pty.expect("> ");
    settle();
    pty.type_keys("/status\r");
    pty.expect("3000 of 4000 prompt tokens served from the engine's prompt cache (75%)");
    pty.expect("> ");
    leave(&mut pty);
}
