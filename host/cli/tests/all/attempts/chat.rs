//! The chat's `/attempts` (issue 42): Ctrl-C while they run cancels them,
//! not the chat.

use std::time::Duration;

use goat_testkit::{Reply, ScriptedServer, Step};

use super::can_attempt;

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_while_the_chats_attempts_run_cancels_them_and_the_chat_goes_on() {
    if !can_attempt() {
        return;
    }
    let env = crate::Env::new();
    // Attempt 1's engine goes quiet for longer than any test waits.
    let stalled = Reply::sse_steps(vec![Step::Sleep(Duration::from_secs(600))]);
    let server =
        ScriptedServer::start(vec![stalled, crate::content_reply("The chat goes on.")]).await;
    let url = server.base_url();
    let mut pty = crate::composer::chat(
        &env,
        &url,
        &["--mode", "accept-edits", "--max-rounds", "2"],
        &[("NO_COLOR", "1")],
    );
    pty.expect("> ");
    crate::composer::settle();
    pty.type_keys("/attempts 3 Try\r");
    pty.expect("3 attempts, with no check");
    // Attempt 1 has asked the engine.
    let asked = std::time::Instant::now();
    while server.requests().is_empty() {
        assert!(asked.elapsed() < Duration::from_secs(60), "no request came");
        std::thread::sleep(Duration::from_millis(50));
    }
    pty.type_keys("\x03");
    pty.expect("cancelling");
    pty.expect("the attempts were cancelled, so none lands");
    pty.expect("accept-edits> ");
    // Attempts 2 and 3 never started; the chat's next turn runs.
    assert_eq!(server.requests().len(), 1);
    crate::composer::settle();
    pty.type_keys("hello\r");
    pty.expect("The chat goes on.");
    pty.expect("accept-edits> ");
    crate::composer::leave(&mut pty);
    assert_eq!(pty.exit_code(), Some(0));
    let listed = crate::json_out(&env.run(&["attempts", "list", "--json"]));
    let attempts = listed[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{listed}");
    assert_eq!(listed[0]["landed"], serde_json::Value::Null);
}
