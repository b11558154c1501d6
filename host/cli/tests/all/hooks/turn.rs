//! Hooks once a turn (issue 41): `user_prompt_submit` withholds a prompt
//! from the model, `stop` sends the model back to work a bounded number
//! of times, and each run and objection is recorded.

use serde_json::Value;

use super::script;
use crate::jsonl::lines;
use crate::{Env, GoatRun, call_reply, content_reply, text};

/// `goat hooks add NAME --on EVENT -- PATH`, which must work.
fn add_on(env: &Env, name: &str, event: &str, path: &std::path::Path) {
    let out = env.run(&[
        "hooks",
        "add",
        name,
        "--on",
        event,
        "--",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "hooks add: {}", text(&out.stderr));
}

fn session_of(lines: &[Value]) -> String {
    lines[0]["session_id"].as_str().unwrap().to_owned()
}

/// Blocks a prompt holding a secret, Claude Code's way (exit 2, the
/// reason on stderr, an escape byte in it).
const NO_SECRETS: &str = r#"#!/bin/sh
case "$(cat)" in
  *'"hook_event_name":"UserPromptSubmit"'*SECRET-*)
    printf 'the prompt holds a secret \033[31m\n' >&2; exit 2 ;;
esac
exit 0
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_hook_withholds_a_prompt_that_is_neither_sent_nor_kept() {
    if !super::contained() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([content_reply("Hello.")])
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    // Claude Code adds a prompt hook's plain stdout to the prompt; GOAT
    // adds nothing, and reads it as no objection.
    let context = script(env, "context.sh", "#!/bin/sh\necho 'today is Friday'\n");
    add_on(env, "context", "user_prompt_submit", &context);
    let guard = script(env, "no-secrets.sh", NO_SECRETS);
    add_on(env, "no-secrets", "user_prompt_submit", &guard);
    let run = builder.run("deploy with SECRET-1234").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    // The engine never heard of it: nothing was asked at all.
    assert!(run.server.requests().is_empty());
    // Nor does the output: `turn.started` waits for the hooks, and says
    // no prompt when they withheld it.
    assert!(!text(&run.out.stdout).contains("SECRET-1234"));
    let lines = lines(&run.out.stdout);
    crate::jsonl::validate(&lines);
    let started = lines.iter().position(|l| l["type"] == "turn.started");
    let hooked = lines.iter().position(|l| l["type"] == "hooks.ran");
    assert!(started.is_some() && started < hooked, "{lines:?}");
    assert_eq!(lines[started.unwrap()]["prompt"], "");
    let end = lines.last().unwrap();
    assert_eq!(end["outcome"], "completed_with_denials", "{end}");
    let denial = &end["denials"][0];
    assert_eq!(
        (&denial["event"], &denial["source"], &denial["call"]),
        (
            &Value::from("user_prompt_submit"),
            &Value::from("hook"),
            &Value::from(0)
        ),
        "{end}"
    );
    assert_eq!(denial["refused"][0]["target"], "no-secrets", "{end}");
    let ran = lines
        .iter()
        .find(|l| l["type"] == "hooks.ran")
        .unwrap_or_else(|| panic!("no hooks.ran event: {lines:?}"));
    assert_eq!(ran["went_on"], false, "{ran}");
    assert_eq!(ran["hooks"][0]["verdict"], "none", "{ran}");
    assert_eq!(ran["hooks"][1]["verdict"], "deny", "{ran}");
    let said = ran["objection"].as_str().unwrap();
    assert!(
        said.contains("withheld the prompt") && !said.contains('\u{1b}'),
        "{said}"
    );
    // Not kept: the turn's prompt is blank, the hook named, and the
    // history the next prompt is built from leaves the turn out.
    let session = session_of(&lines);
    let store = goat_store::Store::open(&run.env.db).unwrap();
    let turns = store.turns(&session).unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].prompt, "");
    let hooked = store.turn_hooks(&session).unwrap();
    assert_eq!(hooked[0].withheld_by.as_deref(), Some("no-secrets"));
    assert_eq!(hooked[0].runs[1].event, "user_prompt_submit");
    assert!(store.history(&session).unwrap().is_empty());
    let db = std::fs::read(&run.env.db).unwrap();
    assert!(!db.windows(11).any(|w| w == b"SECRET-1234"));
    drop(store);
    // A prompt without one goes through, and is kept.
    let builder = GoatRun::builder_in(run.env)
        .replies([content_reply("Hello.")])
        .arg("--output")
        .arg("jsonl")
        .arg("--session")
        .arg(&session);
    let again = builder.run("say hello").await;
    assert_eq!(again.code(), Some(0), "{}", again.stderr());
    let said = crate::jsonl::lines(&again.out.stdout);
    let started = said.iter().find(|l| l["type"] == "turn.started").unwrap();
    assert_eq!(started["prompt"], "say hello");
    let sent = again.request_text(0);
    assert!(
        sent.contains("say hello") && !sent.contains("SECRET"),
        "{sent}"
    );
}

/// A check before the turn ends: `done.txt` must be in the workspace
/// (seen read-only, as the rules let `run_command` see it).
const DONE_CHECK: &str = r#"#!/bin/sh
cwd=$(sed -n 's/.*"cwd":"\([^"]*\)".*/\1/p')
[ -f "$cwd/done.txt" ] && exit 0
echo "done.txt is missing; write it" >&2
exit 2
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_sends_the_model_back_until_its_check_passes() {
    if !super::contained() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            content_reply("Finished."),
            call_reply(
                "c1",
                "write_file",
                &serde_json::json!({ "path": "done.txt", "content": "yes\n" }).to_string(),
            ),
            content_reply("Finished now."),
        ])
        .allow_writes()
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let check = script(env, "done-check.sh", DONE_CHECK);
    add_on(env, "done-check", "stop", &check);
    let run = builder.run("Do the task").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.read("done.txt"), "yes\n");
    assert_eq!(run.server.requests().len(), 3);
    // The model was sent back with the hook's words, framed as the hook's.
    let second = run.request_text(1);
    assert!(
        second.contains("the person's stop hook 'done-check' did not let the turn end yet")
            && second.contains("done.txt is missing; write it"),
        "{second}"
    );
    let lines = lines(&run.out.stdout);
    crate::jsonl::validate(&lines);
    let end = lines.last().unwrap();
    assert_eq!(end["outcome"], "completed", "{end}");
    assert_eq!(end["answer"], "Finished now.", "{end}");
    let ran: Vec<&Value> = lines.iter().filter(|l| l["type"] == "hooks.ran").collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!(ran[0]["went_on"], true);
    assert_eq!(ran[1]["hooks"][0]["verdict"], "none");
    // The store: the turn the hook sent on has the hook's words as its
    // prompt, and each run is recorded against its turn.
    let session = session_of(&lines);
    let store = goat_store::Store::open(&run.env.db).unwrap();
    let hooked = store.turn_hooks(&session).unwrap();
    assert_eq!(hooked.len(), 2, "{hooked:?}");
    assert_eq!(hooked[0].runs[0].verdict, "deny");
    assert_eq!(hooked[1].prompt_from_hook.as_deref(), Some("done-check"));
    assert_eq!(hooked[1].runs[0].verdict, "none");
    let shown = text(&run.env.run(&["sessions", "show", &session]).stdout);
    assert!(
        shown.contains("done-check at stop") && shown.contains("sent back by the stop hook"),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_that_never_lets_go_or_fails_ends_the_turn_with_a_denial() {
    if !super::contained() {
        return;
    }
    let never = "#!/bin/sh\necho 'never done' >&2\nexit 2\n";
    let replies: Vec<_> = (0..=goat_shepherd::MAX_STOP_CONTINUATIONS)
        .map(|i| content_reply(&format!("Finished {i}.")))
        .collect();
    let builder = GoatRun::builder()
        .replies(replies)
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let hook = script(env, "never.sh", never);
    add_on(env, "never", "stop", &hook);
    let run = builder.run("Do the task").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    // Sent back at most MAX_STOP_CONTINUATIONS times, then its objection
    // is the turn's last word.
    assert_eq!(
        run.server.requests().len(),
        goat_shepherd::MAX_STOP_CONTINUATIONS + 1
    );
    let out = lines(&run.out.stdout);
    let end = out.last().unwrap();
    assert_eq!(end["outcome"], "completed_with_denials", "{end}");
    assert_eq!(end["denials"][0]["event"], "stop", "{end}");
    assert!(
        end["denials"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("never done"),
        "{end}"
    );

    // A stop hook that fails is not obeyed and not retried: the turn ends,
    // and the failure is a denial.
    let builder = GoatRun::builder()
        .replies([content_reply("Finished.")])
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let hook = script(env, "broken.sh", "#!/bin/sh\nexit 1\n");
    add_on(env, "broken", "stop", &hook);
    let run = builder.run("Do the task").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.server.requests().len(), 1);
    let out = lines(&run.out.stdout);
    let end = out.last().unwrap();
    let reason = end["denials"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("'broken' failed"), "{end}");
}

#[test]
fn a_turn_hook_takes_no_matcher() {
    let env = Env::new();
    let hook = script(&env, "x.sh", "#!/bin/sh\nexit 0\n");
    let out = env.run(&[
        "hooks",
        "add",
        "x",
        "--on",
        "stop",
        "--match",
        "Bash",
        "--",
        hook.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nothing to --match"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_sends_an_editors_model_back_through_goat_acp() {
    let Some(sdk) = crate::acp::sdk() else { return };
    if !super::contained() {
        return;
    }
    let env = Env::new();
    let check = script(&env, "done-check.sh", DONE_CHECK);
    add_on(&env, "done-check", "stop", &check);
    let server = goat_testkit::ScriptedServer::start(vec![
        goat_testkit::Reply::text("Finished."),
        goat_testkit::Reply::tool_call(
            "write_file",
            serde_json::json!({ "path": "done.txt", "content": "yes\n" }).to_string(),
        ),
        goat_testkit::Reply::text("Finished now."),
    ])
    .await;
    let t = crate::acp::client(
        &env,
        &sdk,
        &server.base_url(),
        serde_json::json!({
            "steps": crate::acp::steps(crate::acp::opening(), &[crate::acp::prompt("Do it")]),
            "permissions": ["allow-once"]}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(env.ws.join("done.txt")).unwrap(),
        "yes\n"
    );
    // The editor is told, in the conversation, that the hook sent the
    // model back.
    let said = crate::acp::agent_text(&t);
    assert!(
        said.contains("the stop hook 'done-check' objected to the turn ending")
            && said.contains("the model goes on"),
        "{said}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_cannot_go_on_past_the_round_limit_or_a_stop_or_see_a_hidden_file() {
    if !super::contained() {
        return;
    }
    // With no round left, the objection is the turn's last word: the
    // model's answer stands, and nothing says it goes on.
    let builder = GoatRun::builder()
        .replies([content_reply("Finished.")])
        .arg("--max-rounds")
        .arg("1")
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let check = script(env, "done-check.sh", DONE_CHECK);
    add_on(env, "done-check", "stop", &check);
    let run = builder.run("Do the task").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.server.requests().len(), 1);
    let out = lines(&run.out.stdout);
    let ran = out.iter().find(|l| l["type"] == "hooks.ran").unwrap();
    assert_eq!(ran["went_on"], false, "{ran}");
    let end = out.last().unwrap();
    assert_eq!(end["answer"], "Finished.", "{end}");
    assert_eq!(end["outcome"], "completed_with_denials", "{end}");

    // Claude Code's `continue: false` stops; it never sends the model on.
    let builder = GoatRun::builder()
        .replies([content_reply("Finished."), content_reply("More.")])
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let halt = script(
        env,
        "halt.sh",
        "#!/bin/sh\ncat > /dev/null\nprintf '%s' '{\"continue\":false,\"stopReason\":\"halt now\"}'\n",
    );
    add_on(env, "halt", "stop", &halt);
    let run = builder.run("Do the task").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.server.requests().len(), 1);

    // A stop hook reads the workspace as the rules let a command: what
    // they hide it cannot pass on to the model.
    let builder =
        GoatRun::builder().replies([content_reply("Finished."), content_reply("Finished again.")]);
    let env = builder.env();
    super::plant_hidden_secret(env);
    let leak = script(
        env,
        "leak.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\n[ -f {ws}/done ] && exit 0\ncat {ws}/secret/key {ws}/a.txt >&2\nexit 2\n",
            ws = env.ws.display()
        ),
    );
    add_on(env, "leak", "stop", &leak);
    let run = builder.run("Do the task").await;
    let said = run.request_text(1);
    assert!(said.contains("open"), "{said}");
    assert!(!said.contains("TOPSECRET"), "{said}");
}
