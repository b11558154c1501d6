//! `goat run --attempts N` (issue 42): each attempt a session of its own in
//! its own layer of the workspace, checked by `--verify`, the first that
//! passed landed and undone with `goat undo`, the others kept until
//! discarded.

use serde_json::{Value, json};

use crate::jsonl::lines;
use crate::{GoatRun, call_reply, content_reply, json_out, text};

mod chat;
mod logs;
mod mcp;
mod no_view;
mod plugin;
mod swap;

pub(super) fn write(id: &str, path: &str, content: &str) -> goat_testkit::Reply {
    call_reply(
        id,
        "write_file",
        &json!({ "path": path, "content": content }).to_string(),
    )
}

/// Attempts run one at a time, in order: what the tests rely on.
pub(super) trait InOrder {
    /// `--attempts N --attempts-parallel 1`.
    fn attempts_in_order(self, n: u32) -> Self;
}

impl InOrder for crate::GoatRunBuilder {
    fn attempts_in_order(self, n: u32) -> Self {
        self.arg("--attempts")
            .arg(n.to_string())
            .arg("--attempts-parallel")
            .arg("1")
    }
}

/// Whether an attempt's layer can be entered here (a mount namespace
/// with an overlay); said when not.
pub(super) fn can_attempt() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let layer = goat_command::attempt::AttemptLayer::create(&dir.path().join("probe")).unwrap();
    let can = layer
        .command(&ws, "/bin/true")
        .and_then(|mut c| c.status())
        .is_ok_and(|s| s.success());
    if !can {
        eprintln!("note: skipped: no mount namespace with an overlay can be made here");
    }
    can
}

fn in_layer_at(root: &std::path::Path, n: u32, rel: &str) -> bool {
    in_layer(root, n, rel).is_some_and(|p| p.exists())
}

/// Attempt `n`'s layer path `rel` of the first run under `root` (the
/// run's directory is named by its session too), once it exists.
pub(super) fn in_layer(root: &std::path::Path, n: u32, rel: &str) -> Option<std::path::PathBuf> {
    let base = root.join("state/layers/attempts");
    let run = std::fs::read_dir(&base)
        .ok()?
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("run-1-"))?;
    Some(run.path().join(n.to_string()).join("upper").join(rel))
}

#[tokio::test(flavor = "multi_thread")]
async fn three_attempts_the_check_picks_the_second_it_lands_land_swaps_in_the_third_and_undo_swaps_back()
 {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            // Attempt 1 breaks the check.
            write("a1", "value.txt", "fail\n"),
            content_reply("Done."),
            // Attempt 2 passes, and leaves a second file.
            write("b1", "value.txt", "pass two\n"),
            write("b2", "two.txt", "two\n"),
            content_reply("Done."),
            // Attempt 3 cannot read what attempt 2 wrote, and passes.
            call_reply("c1", "read_file", &json!({ "path": "two.txt" }).to_string()),
            write("c2", "value.txt", "pass three\n"),
            content_reply("Done."),
        ])
        .allow_writes()
        .attempts_in_order(3)
        .arg("--verify")
        .arg("grep -q pass value.txt")
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    std::fs::write(env.ws.join("keep.txt"), "kept\n").unwrap();
    let run = builder.run("Make the check pass").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let out = lines(&run.out.stdout);
    // Every line, the attempts' own and the run's, as the schema says.
    crate::jsonl::validate(&out);
    let end = out.last().unwrap();
    assert_eq!(end["type"], "attempts.completed", "{end}");
    assert_eq!(end["landed"], 2, "{end}");
    assert_eq!(end["passed"], 2, "{end}");
    assert_eq!(end["outcome"], "completed", "{end}");
    let passed: Vec<&Value> = end["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["passed"])
        .collect();
    assert_eq!(passed, [&json!(false), &json!(true), &json!(true)]);
    // Every attempt's lines say which attempt they are of.
    for n in 1..=3 {
        assert!(
            out.iter()
                .any(|l| l["attempt"] == n && l["type"] == "turn.completed"),
            "attempt {n}: {out:?}"
        );
    }
    // The workspace holds attempt 2's changes, and what was there.
    assert_eq!(run.read("value.txt"), "pass two\n");
    assert_eq!(run.read("two.txt"), "two\n");
    assert_eq!(run.read("keep.txt"), "kept\n");
    // Attempt 3 did not see attempt 2's file.
    let requests = run.server.requests();
    let third_read = requests
        .iter()
        .map(|r| r.body["messages"].to_string())
        .find(|m| m.contains("c1") && m.contains("two.txt"))
        .unwrap();
    assert!(third_read.contains("does not exist"), "{third_read}");
    let env = run.env;
    let listed = json_out(&env.run(&["attempts", "list", "--json"]));
    assert_eq!(listed[0]["landed"], 2);
    let attempts = listed[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    assert!(attempts.iter().all(|a| a["status"] == "ended"), "{listed}");
    // Attempt 3 lands in place of attempt 2, in one step: attempt 2's
    // second file goes, what was there before stays.
    let landed = env.run(&["attempts", "land", "3"]);
    assert!(
        landed.status.success(),
        "{}{}",
        text(&landed.stdout),
        text(&landed.stderr)
    );
    assert!(
        text(&landed.stdout).contains("in place of attempt 2"),
        "{}",
        text(&landed.stdout)
    );
    let read = |rel: &str| std::fs::read_to_string(env.ws.join(rel)).ok();
    assert_eq!(read("value.txt").as_deref(), Some("pass three\n"));
    assert_eq!(read("two.txt"), None);
    assert_eq!(read("keep.txt").as_deref(), Some("kept\n"));
    let listed = json_out(&env.run(&["attempts", "list", "--json"]));
    assert_eq!(listed[0]["landed"], 3);
    // The same attempt twice is refused, saying so.
    let twice = env.run(&["attempts", "land", "3"]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        text(&twice.stderr).contains("already in the workspace"),
        "{}",
        text(&twice.stderr)
    );
    // One goat undo swaps back: attempt 2, whole.
    let undone = env.run(&["undo"]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert_eq!(read("value.txt").as_deref(), Some("pass two\n"));
    assert_eq!(read("two.txt").as_deref(), Some("two\n"));
    assert_eq!(
        json_out(&env.run(&["attempts", "list", "--json"]))[0]["landed"],
        2
    );
    let landed = env.run(&["attempts", "land", "3"]);
    assert!(landed.status.success(), "{}", text(&landed.stderr));
    assert_eq!(read("value.txt").as_deref(), Some("pass three\n"));
    // (The swap's own session, the newest.)
    let swap_to_three = json_out(&env.run(&["sessions", "list", "--json"]))[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A swap of a swap: attempt 1 in place of attempt 3 leaves nothing of
    // attempt 2 (what was there before is read from the first landing).
    let landed = env.run(&["attempts", "land", "1"]);
    assert!(landed.status.success(), "{}", text(&landed.stderr));
    assert_eq!(read("value.txt").as_deref(), Some("fail\n"));
    assert_eq!(read("two.txt"), None);
    assert_eq!(read("keep.txt").as_deref(), Some("kept\n"));
    let undone = env.run(&["undo"]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert_eq!(read("value.txt").as_deref(), Some("pass three\n"));
    assert_eq!(read("two.txt"), None);
    // Undoing that swap's session swaps back again: attempt 2, whole.
    let undone = env.run(&["undo", "--session", &swap_to_three]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert_eq!(read("value.txt").as_deref(), Some("pass two\n"));
    assert_eq!(read("two.txt").as_deref(), Some("two\n"));
    assert_eq!(read("keep.txt").as_deref(), Some("kept\n"));
    let listed = json_out(&env.run(&["attempts", "list", "--json"]));
    assert_eq!(listed[0]["landed"], 2);
    // A change the person made since attempt 2 landed is never swapped
    // away: the swap is refused, naming the file, and nothing moves.
    std::fs::write(env.ws.join("two.txt"), "mine now\n").unwrap();
    let refused = env.run(&["attempts", "land", "3"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("two.txt")
            && text(&refused.stderr).contains("nothing landed"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(read("two.txt").as_deref(), Some("mine now\n"));
    assert_eq!(read("value.txt").as_deref(), Some("pass two\n"));
    std::fs::write(env.ws.join("two.txt"), "two\n").unwrap();
    // The landing of attempt 2 is undone as any other: then attempt 3
    // lands on the workspace as it was, and attempt 2 after it again.
    // (The run landed it in its own session.)
    let landing_of_two = listed[0]["session_id"].as_str().unwrap().to_owned();
    let undone = env.run(&["undo", "--session", &landing_of_two]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert_eq!(read("value.txt"), None);
    assert_eq!(read("two.txt"), None);
    let landed = env.run(&["attempts", "land", "3"]);
    assert!(landed.status.success(), "{}", text(&landed.stderr));
    assert_eq!(read("value.txt").as_deref(), Some("pass three\n"));
    // Each landing went from a copy: attempt 2 lands again, as it was.
    let again = env.run(&["attempts", "land", "2"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(read("value.txt").as_deref(), Some("pass two\n"));
    assert_eq!(read("two.txt").as_deref(), Some("two\n"));
    let listed = json_out(&env.run(&["attempts", "list", "--json"]));
    assert_eq!(listed[0]["landed"], 2);
    // An attempt's own session is never the one goat undo picks, nor undone.
    let session = attempts[0]["session_id"].as_str().unwrap();
    let direct = env.run(&["undo", "--session", session]);
    assert!(
        text(&direct.stderr).contains("is an attempt of run"),
        "{}",
        text(&direct.stderr)
    );
    // Discarded: the layers go, the record stays.
    let discarded = env.run(&["attempts", "discard"]);
    assert!(discarded.status.success());
    let listed = json_out(&env.run(&["attempts", "list", "--json"]));
    assert_eq!(listed[0]["attempts"][2]["status"], "discarded");
}

#[tokio::test(flavor = "multi_thread")]
async fn when_no_attempt_passes_nothing_lands_and_every_attempt_is_kept() {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            write("a1", "value.txt", "one\n"),
            content_reply("Done."),
            write("b1", "value.txt", "two\n"),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--attempts")
        .arg("2")
        .arg("--verify")
        .arg("false")
        .arg("--output")
        .arg("jsonl");
    let run = builder.run("Try").await;
    assert_eq!(run.code(), Some(10), "{}", run.stderr());
    let out = lines(&run.out.stdout);
    let end = out.last().unwrap();
    assert_eq!(end["outcome"], "no_attempt_passed", "{end}");
    assert_eq!(end["exit_code"], 10, "{end}");
    assert!(end["landed"].is_null(), "{end}");
    assert!(!run.env.ws.join("value.txt").exists());
    // Each attempt's changes are still there to see.
    for n in ["1", "2"] {
        let shown = run.env.run(&["attempts", "show", n]);
        assert!(
            text(&shown.stdout).contains("created value.txt"),
            "{}",
            text(&shown.stdout)
        );
    }
    // The run's own session stays with the run; an attempt's may go, and
    // the attempt stays, without it.
    let listed = json_out(&run.env.run(&["attempts", "list", "--json"]));
    let own = listed[0]["session_id"].as_str().unwrap();
    let refused = run.env.run(&["sessions", "rm", own]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        text(&refused.stderr).contains("stays with the run"),
        "{}",
        text(&refused.stderr)
    );
    let first = listed[0]["attempts"][0]["session_id"].as_str().unwrap();
    let removed = run.env.run(&["sessions", "rm", first]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    let listed = json_out(&run.env.run(&["attempts", "list", "--json"]));
    assert_eq!(listed[0]["attempts"][0]["session_id"], Value::Null);
    assert_eq!(listed[0]["attempts"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_real_workspace_is_untouched_while_an_attempts_command_runs() {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "a1",
                "run_command",
                &json!({ "command": "echo inside > inside.txt && sleep 3" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .arg("--allow-commands")
        .arg("--attempts")
        .arg("1")
        .arg("--output")
        .arg("jsonl");
    let ws = builder.env().ws.clone();
    let root = builder.env().root.clone();
    // From the moment the command's write is in the attempt's layer, and
    // for as long as the command then sleeps, the real workspace is
    // looked at: the file is never there.
    let watch = tokio::spawn(async move {
        let mut in_layer = false;
        for _ in 0..400 {
            if in_layer_at(&root, 1, "inside.txt") {
                in_layer = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let mut leaked = false;
        for _ in 0..20 {
            leaked |= ws.join("inside.txt").exists();
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        (in_layer, leaked)
    });
    let run = builder.run("Work").await;
    let (in_layer, leaked) = watch.await.unwrap();
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(
        in_layer,
        "the command's write never showed in the attempt's layer"
    );
    assert!(
        !leaked,
        "the command's write reached the real workspace while it ran"
    );
    let out = lines(&run.out.stdout);
    let end = out.last().unwrap();
    assert_eq!(end["landed"], 1, "{end}");
    // The landing put it there once the attempt had ended.
    assert_eq!(run.read("inside.txt"), "inside\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn as_an_unprivileged_user_attempts_run_in_their_layers_and_one_lands_as_the_users_own() {
    use std::os::unix::fs::MetadataExt;
    if !can_attempt() {
        return;
    }
    let Some(nobody) = crate::Nobody::new("goat-nobody-attempts") else {
        return;
    };
    let server = goat_testkit::ScriptedServer::start(vec![
        write("a1", "value.txt", "fail\n"),
        content_reply("Done."),
        write("b1", "value.txt", "pass\n"),
        content_reply("Done."),
    ])
    .await;
    let url = server.base_url();
    let mut cmd = nobody.goat(&[
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "--allow-writes",
        "--attempts",
        "2",
        "--verify",
        "grep -q pass value.txt",
        "--output",
        "jsonl",
        "Try",
    ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let end = lines(&out.stdout).last().cloned().unwrap();
    assert_eq!(end["landed"], 2, "{end}");
    let landed = nobody.ws.join("value.txt");
    assert_eq!(std::fs::read_to_string(&landed).unwrap(), "pass\n");
    // The user's own file, with the user's own mode.
    let meta = std::fs::metadata(&landed).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    assert_eq!(meta.mode() & 0o777, 0o644, "{:o}", meta.mode());
    std::fs::remove_dir_all(&nobody.base).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_mid_run_every_attempt_is_kept_as_it_was_and_can_still_land() {
    if !can_attempt() {
        return;
    }
    let env = crate::Env::new();
    let slow = |id: &str| {
        call_reply(
            id,
            "run_command",
            &json!({ "command": "echo mine > mark.txt && sleep 3" }).to_string(),
        )
    };
    let server = goat_testkit::ScriptedServer::start(vec![
        slow("a1"),
        slow("b1"),
        content_reply("Done."),
        content_reply("Done."),
    ])
    .await;
    let mut cmd = env.cmd();
    cmd.args(["run", "--engine", &server.base_url(), "--model", "qwen"])
        .args([
            "--allow-commands",
            "--attempts",
            "2",
            "--attempts-parallel",
            "2",
        ])
        .args(["--output", "jsonl", "Work"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut parent = cmd.spawn().unwrap();
    let written = |n: u32| in_layer_at(&env.root, n, "mark.txt");
    for _ in 0..200 {
        if written(1) && written(2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(written(1) && written(2), "the attempts never wrote");
    // kill -9, mid-run.
    parent.kill().unwrap();
    parent.wait().unwrap();
    // The attempts' own runs end on their own; wait for them.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(!env.ws.join("mark.txt").exists());
    let listed = json_out(&env.run(&["attempts", "list", "--json"]));
    let attempts = listed[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{listed}");
    assert!(listed[0]["landed"].is_null(), "{listed}");
    for n in 1..=2 {
        assert_eq!(
            std::fs::read_to_string(in_layer(&env.root, n, "mark.txt").unwrap()).unwrap(),
            "mine\n"
        );
    }
    // Nothing was lost: either attempt can still land.
    let landed = env.run(&["attempts", "land", "1"]);
    assert!(landed.status.success(), "{}", text(&landed.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("mark.txt")).unwrap(),
        "mine\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_after_double_dash_reaches_every_attempt_whole() {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([write("a1", "value.txt", "done\n"), content_reply("Done.")])
        .allow_writes()
        .arg("--attempts")
        .arg("1")
        .arg("--output")
        .arg("jsonl")
        .arg("--");
    let run = builder.run("-write it, starting with a dash").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sent = run.request_text(0);
    assert!(sent.contains("-write it, starting with a dash"), "{sent}");
    assert_eq!(run.read("value.txt"), "done\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn by_default_as_many_attempts_run_at_once_as_the_engine_has_slots() {
    if !can_attempt() {
        return;
    }
    let slow = |id: &str| {
        call_reply(
            id,
            "run_command",
            &json!({ "command": "sleep 1" }).to_string(),
        )
    };
    let builder = GoatRun::builder()
        .replies([
            slow("a1"),
            slow("b1"),
            content_reply("Done."),
            content_reply("Done."),
        ])
        .route(
            "/props",
            goat_testkit::Reply::error(
                200,
                "application/json",
                r#"{"default_generation_settings": {"n_ctx": 32768}, "total_slots": 2}"#,
            ),
        )
        .arg("--allow-commands")
        .arg("--attempts")
        .arg("2")
        .arg("--output")
        .arg("jsonl");
    let run = builder.run("Work").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    // Both attempts asked their first round before either its second: the
    // engine's second request carries no tool result.
    let chats: Vec<Value> = run
        .server
        .requests()
        .into_iter()
        .filter(|r| r.body.get("messages").is_some())
        .map(|r| r.body)
        .collect();
    assert_eq!(chats.len(), 4);
    assert!(
        !chats[1]["messages"]
            .to_string()
            .contains("\"role\":\"tool\""),
        "{}",
        chats[1]["messages"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn at_a_terminal_the_person_sees_each_attempts_diff_and_picks_one() {
    if !can_attempt() {
        return;
    }
    let env = crate::Env::new();
    let server = goat_testkit::ScriptedServer::start(vec![
        write("a1", "value.txt", "pass one\n"),
        content_reply("Done."),
        write("b1", "value.txt", "pass two\n"),
        content_reply("Done."),
    ])
    .await;
    let url = server.base_url();
    let args = [
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "--allow-writes",
        "--attempts",
        "2",
        "--attempts-parallel",
        "1",
        "--verify",
        "grep -q pass value.txt",
        "Try",
    ];
    let mut pty = crate::pty::Pty::spawn(&env, &args, &[("NO_COLOR", "1")]);
    // Each attempt, its check and its diff; the first that passed is the
    // default, and the person picks the second.
    pty.expect("== attempt 1: completed; check passed");
    pty.expect("+pass one");
    pty.expect("== attempt 2: completed; check passed");
    pty.expect("+pass two");
    pty.expect("(default 1): ");
    pty.type_keys("2\r");
    pty.expect("attempt 2 of 2 landed");
    assert_eq!(pty.exit_code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("value.txt")).unwrap(),
        "pass two\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_the_chat_attempts_run_in_the_chats_mode_and_the_person_picks_the_one_that_lands() {
    if !can_attempt() {
        return;
    }
    let env = crate::Env::new();
    let server = goat_testkit::ScriptedServer::start(vec![
        write("a1", "value.txt", "fail\n"),
        content_reply("Done."),
        write("b1", "value.txt", "pass two\n"),
        content_reply("Done."),
    ])
    .await;
    let url = server.base_url();
    // In ask mode, no rule allowing writes: the chat's mode, switched to
    // accept-edits, is what lets the attempts write.
    let mut pty = crate::composer::chat(&env, &url, &[], &[("NO_COLOR", "1")]);
    pty.expect("> ");
    crate::composer::settle();
    pty.type_keys("/attempts two Try\r");
    pty.expect("is not a number of attempts and a prompt");
    pty.expect("> ");
    crate::composer::settle();
    pty.type_keys("/mode accept-edits\r");
    pty.expect("accept-edits> ");
    crate::composer::settle();
    pty.type_keys("/verify grep -q pass value.txt\r");
    pty.expect("each attempt is checked with: grep -q pass value.txt");
    pty.expect("accept-edits> ");
    crate::composer::settle();
    pty.type_keys("/attempts 2 Make the check pass\r");
    pty.expect("== attempt 1: completed; check failed");
    pty.expect("+fail");
    pty.expect("== attempt 2: completed; check passed");
    pty.expect("+pass two");
    // The first that passed is the default.
    pty.expect("(default 2): ");
    assert!(!env.ws.join("value.txt").exists());
    pty.type_keys("\r");
    pty.expect("attempt 2 of 2 landed");
    pty.expect("goat undo (in a shell) takes it back");
    pty.expect("accept-edits> ");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("value.txt")).unwrap(),
        "pass two\n"
    );
    crate::composer::leave(&mut pty);
    // Each attempt was its own session, given the prompt as typed; the
    // chat sent nothing of its own.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let first = requests[0].body["messages"].to_string();
    assert!(first.contains("Make the check pass"), "{first}");
    // The landing is what goat undo takes back.
    let undone = env.run(&["undo"]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert!(!env.ws.join("value.txt").exists());
}
