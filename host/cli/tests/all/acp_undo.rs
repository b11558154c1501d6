//! Undo in the core reaches the editor (issue 36): `goat acp` advertises
//! `/undo` and puts a turn's files back when the editor sends it, and a
//! file changed since is refused, changing nothing.

use goat_testkit::Reply;
use serde_json::json;

use crate::Env;
use crate::acp::{
    agent_text, answers, client, edit_one_to_two, opening, prompt, sdk, steps, updates,
};

#[tokio::test(flavor = "multi_thread")]
async fn undo_is_an_editor_command_that_puts_the_turns_files_back() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let server =
        goat_testkit::ScriptedServer::start(vec![edit_one_to_two(), Reply::text("Done.")]).await;
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({
            "steps": steps(opening(), &[prompt("Make it two"), prompt("/undo"), prompt("/undo")]),
            "permissions": ["allow-once"],
        }),
    )
    .await;
    let commands = updates(&t, "available_commands_update");
    assert_eq!(commands.len(), 1, "{t:?}");
    assert_eq!(commands[0]["availableCommands"][0]["name"], "undo");
    let answers = answers(&t);
    for answer in &answers[2..5] {
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{t:?}");
    }
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "one\n",
        "{t:?}"
    );
    let said = agent_text(&t);
    assert!(said.contains("undid turn 1 of session"), "{said}");
    assert!(said.contains("restored a.txt"), "{said}");
    assert!(said.contains("nothing to undo"), "{said}");
    // `/undo` reached no model: the engine saw the one turn's two requests.
    assert_eq!(server.requests().len(), 2);
    let db = rusqlite::Connection::open(&env.db).unwrap();
    let undone: i64 = db
        .query_row(
            "SELECT count(*) FROM file_changes WHERE undone_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(undone, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_of_a_file_changed_since_is_refused_and_changes_nothing() {
    let Some(sdk) = sdk() else { return };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let server =
        goat_testkit::ScriptedServer::start(vec![edit_one_to_two(), Reply::text("Done.")]).await;
    let first = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": steps(opening(), &[prompt("Make it two")]), "permissions": ["allow-once"]}),
    )
    .await;
    assert_eq!(answers(&first)[2]["result"]["stopReason"], "end_turn");
    let session = answers(&first)[1]["result"]["sessionId"].clone();
    std::fs::write(env.ws.join("a.txt"), "mine\n").unwrap();
    let t = client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": [
            {"op": "initialize"},
            {"op": "load", "sessionId": session},
            prompt("/undo"),
            prompt("/undo x"),
        ]}),
    )
    .await;
    let said = agent_text(&t);
    assert!(said.contains("did not undo turn 1"), "{said}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "mine\n"
    );
    let answers = answers(&t);
    assert_eq!(answers[3]["error"]["code"], -32602, "{t:?}");
    assert!(
        answers[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a turn number"),
        "{t:?}"
    );
}
