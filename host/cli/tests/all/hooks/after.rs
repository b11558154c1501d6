//! Hooks after a call (`post_tool_use`), and the same hook through `goat acp`.

use serde_json::json;

use super::{add, script, stored_runs};
use crate::jsonl::lines;
use crate::{Env, GoatRun, call_reply, content_reply, text};

/// A Claude Code-style formatter: it reads the edited file's absolute
/// `file_path` from stdin and rewrites the file in upper case.
const UPPERCASE: &str = r#"#!/bin/sh
path=$(sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p')
tr a-z A-Z < "$path" > "$path.tmp" && mv "$path.tmp" "$path"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_use_formatter_lands_as_a_change_set_and_undo_takes_it_back_with_the_edit() {
    if !super::contained() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                &json!({ "path": "notes.txt", "content": "new words\n" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    std::fs::write(env.ws.join("notes.txt"), "old words\n").unwrap();
    let fmt = script(env, "upper.sh", UPPERCASE);
    let out = env.run(&[
        "hooks",
        "add",
        "upper",
        "--on",
        "post_tool_use",
        "--match",
        "Edit|Write",
        "--",
        fmt.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = builder.run("Rewrite the notes").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    // The edit, then the formatter's rewrite, both landed.
    assert_eq!(run.read("notes.txt"), "NEW WORDS\n");
    assert!(!run.exists("notes.txt.tmp"));
    let events = lines(&run.out.stdout);
    let call = events
        .iter()
        .find(|l| l["type"] == "tool_call.completed")
        .unwrap();
    assert_eq!(call["hooks"][0]["hook"], "upper", "{call}");
    assert_eq!(call["hooks"][0]["event"], "post_tool_use", "{call}");
    assert!(
        run.request_text(1)
            .contains("the hook 'upper' ran after the call"),
        "{}",
        run.request_text(1)
    );
    // Undone with the edit, byte for byte, to what was there before both.
    let undone = run.env.run(&["undo"]);
    assert!(undone.status.success(), "{}", text(&undone.stderr));
    assert_eq!(run.read("notes.txt"), "old words\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_failing_post_tool_use_hook_changed_is_dropped_and_said() {
    if !super::contained() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                &json!({ "path": "a.txt", "content": "mine\n" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let bad = script(
        env,
        "bad.sh",
        "#!/bin/sh\ncat > /dev/null\necho clobbered > a.txt\necho 'half way' >&2\nexit 1\n",
    );
    let out = env.run(&[
        "hooks",
        "add",
        "bad",
        "--on",
        "PostToolUse",
        "--",
        bad.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = builder.run("Write it").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.read("a.txt"), "mine\n");
    let end = lines(&run.out.stdout).last().cloned().unwrap();
    assert_eq!(end["denials"][0]["source"], "hook", "{end}");
    assert!(
        run.request_text(1)
            .contains("ran after the call and failed; nothing it changed was kept"),
        "{}",
        run.request_text(1)
    );
}

/// Exits 2 with its reason on stderr, Claude Code's other way to block.
const NO_EDITS: &str = "#!/bin/sh\ncat > /dev/null\necho 'no edits on Fridays' >&2\nexit 2\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_same_hook_stops_an_editors_call_through_goat_acp() {
    let Some(sdk) = crate::acp::sdk() else { return };
    if !super::contained() {
        return;
    }
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "one\n").unwrap();
    let path = script(&env, "no-edits.sh", NO_EDITS);
    add(&env, "no-edits", &["--match", "Edit|Write"], &path);
    let server = goat_testkit::ScriptedServer::start(vec![
        crate::acp::edit_one_to_two(),
        goat_testkit::Reply::text("I could not."),
    ])
    .await;
    let t = crate::acp::client(
        &env,
        &sdk,
        &server.base_url(),
        json!({"steps": crate::acp::steps(crate::acp::opening(), &[crate::acp::prompt("Edit it")]),
               "permissions": []}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    // No one was asked: the hook denied it first.
    assert!(!t.iter().any(|m| m["type"] == "permission"), "{t:?}");
    // The editor's update says which hook ran and what it answered.
    let finished = crate::acp::updates(&t, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "failed")
        .cloned()
        .unwrap_or_else(|| panic!("no failed call update: {t:?}"));
    assert_eq!(
        finished["rawOutput"]["hooks"][0]["hook"], "no-edits",
        "{finished}"
    );
    assert_eq!(
        finished["rawOutput"]["hooks"][0]["verdict"], "deny",
        "{finished}"
    );
    let second = server.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("the hook 'no-edits' denied it, saying 'no edits on Fridays'"),
        "{second}"
    );
    let store = goat_store::Store::open(&env.db).unwrap();
    let session = store.list_sessions().unwrap()[0].id.clone();
    let runs = stored_runs(&env, &session);
    assert_eq!(runs[0].1, "deny", "{runs:?}");
}
