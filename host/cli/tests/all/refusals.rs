//! Issue 36: every refusal, from every source, reaches the outcome. A
//! headless run that had anything refused (by a rule, the fence through a
//! link, a protected path through a link, the mode, no one to ask, a
//! command's change set, GOAT's egress proxy, a limit) ends
//! `completed_with_denials` (exit 3) or `needs_approval` (exit 4), with
//! one `denials` entry naming the source, and the same refusal is a row in
//! the store. And every change a call landed, a command's included, is in
//! `files_changed`, the store and `changes.patch`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use goat_testkit::Reply;
use serde_json::{Value, json};

use crate::view::view_available;
use crate::{Env, GoatRun, call_reply, content_reply, have, text};

/// One row of the table: how the workspace is set up, what the model
/// calls, and what must refuse it.
struct Row {
    name: &'static str,
    setup: fn(&Env),
    replies: fn() -> Vec<Reply>,
    flags: &'static [&'static str],
    vars: &'static [(&'static str, &'static str)],
    source: &'static str,
    /// The refused target, where there is one.
    target: Option<&'static str>,
    outcome: &'static str,
    exit: i32,
    needs_view: bool,
}

fn write(path: &str) -> Vec<Reply> {
    vec![
        call_reply(
            "c1",
            "write_file",
            &json!({ "path": path, "content": "x\n" }).to_string(),
        ),
        content_reply("Done."),
    ]
}

fn command(line: &str) -> Vec<Reply> {
    vec![
        call_reply("c1", "run_command", &json!({ "command": line }).to_string()),
        content_reply("Done."),
    ]
}

fn no_setup(_: &Env) {}

fn deny_secret(env: &Env) {
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret", "--write"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn link_to_secret(env: &Env) {
    deny_secret(env);
    std::os::unix::fs::symlink("secret", env.ws.join("door")).unwrap();
}

fn link_to_git(env: &Env) {
    std::fs::create_dir_all(env.ws.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(".git", env.ws.join("meta")).unwrap();
}

fn table() -> Vec<Row> {
    vec![
        Row {
            name: "a deny rule",
            setup: deny_secret,
            replies: || write("secret/a.txt"),
            flags: &["--allow-writes"],
            vars: &[],
            source: "rule",
            target: Some("secret/a.txt"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
        Row {
            name: "the fence, through a link to a denied directory",
            setup: link_to_secret,
            replies: || write("door/a.txt"),
            flags: &["--allow-writes"],
            vars: &[],
            source: "fence",
            target: Some("secret/a.txt"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
        Row {
            name: "a protected path, through a link to .git",
            setup: link_to_git,
            replies: || write("meta/hooks/pre-commit"),
            flags: &["--allow-writes"],
            vars: &[],
            source: "protected",
            target: Some(".git/hooks/pre-commit"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
        Row {
            name: "the mode",
            setup: no_setup,
            replies: || write("a.txt"),
            flags: &["--mode", "read-only"],
            vars: &[],
            source: "mode",
            target: None,
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
        Row {
            name: "no one to ask",
            setup: no_setup,
            replies: || write("a.txt"),
            flags: &[],
            vars: &[],
            source: "needs_approval",
            target: None,
            outcome: "needs_approval",
            exit: 4,
            needs_view: false,
        },
        Row {
            name: "a change set that makes a .git",
            setup: no_setup,
            replies: || {
                command("mkdir -p sub/.git && echo x > sub/.git/config && echo y > kept.txt")
            },
            flags: &["--allow-commands"],
            vars: &[],
            source: "change_set",
            target: Some("sub/.git"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: true,
        },
        Row {
            name: "a change set that writes under a deny rule",
            setup: deny_secret,
            replies: || command("echo x > secret/a.txt && echo y > kept.txt"),
            flags: &["--allow-commands"],
            vars: &[],
            source: "change_set",
            target: Some("secret/a.txt"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: true,
        },
        Row {
            name: "a change set that plants a bare repository under another name",
            setup: no_setup,
            replies: || {
                command(
                    "mkdir -p cache/objects cache/refs && echo 'ref: refs/heads/main' > \
                     cache/HEAD && echo y > kept.txt",
                )
            },
            flags: &["--allow-commands"],
            vars: &[],
            source: "change_set",
            target: Some("cache"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: true,
        },
        Row {
            name: "a change set that sets a setuid bit",
            setup: no_setup,
            replies: || command("echo y > kept.txt && echo x > s.sh && chmod 4755 s.sh"),
            flags: &["--allow-commands"],
            vars: &[],
            source: "change_set",
            target: Some("s.sh"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: true,
        },
        Row {
            name: "the egress proxy",
            setup: no_setup,
            replies: || command("curl -sS --max-time 5 http://localhost:9/ || true"),
            flags: &["--allow-commands"],
            vars: &[("GOAT_COMMANDS_NETWORK", "localhost:1")],
            source: "egress",
            target: Some("localhost:9"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
        Row {
            name: "the egress proxy, for a plugin's wasi:http request",
            setup: |env| {
                env.add_plugin(
                    &crate::dist("testing/wants_http.wasm"),
                    &["--name", "web", "--allow-host", "localhost:1"],
                )
            },
            replies: || {
                vec![
                    call_reply("c1", "web__wants_http", r#"{"url": "http://localhost:9/"}"#),
                    content_reply("Done."),
                ]
            },
            flags: &[],
            vars: &[],
            source: "egress",
            target: Some("localhost:9"),
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
        Row {
            name: "a limit (calls per response)",
            setup: no_setup,
            replies: || {
                let mut many = Reply::builder();
                for _ in 0..33 {
                    many = many.tool_call("list_directory", r#"{"path": "."}"#);
                }
                vec![many.build(), content_reply("Done.")]
            },
            flags: &[],
            vars: &[],
            source: "limit",
            target: None,
            outcome: "completed_with_denials",
            exit: 3,
            needs_view: false,
        },
    ]
}

fn lines(out: &[u8]) -> Vec<Value> {
    text(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The refusals stored against the session's calls: (source, target).
fn stored_refusals(env: &Env, session: &str) -> Vec<(String, Option<String>)> {
    let store = goat_store::Store::open(&env.db).unwrap();
    store
        .refusals(session)
        .unwrap()
        .into_iter()
        .map(|(_, r)| (r.by.as_str().replace('-', "_"), r.target))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_source_reaches_the_outcome_the_exit_code_and_the_store() {
    let probe = Env::new();
    let view = view_available(&probe);
    let curl = have("curl");
    for row in table() {
        if row.needs_view && !view {
            eprintln!("skipped row '{}': no namespace view here", row.name);
            continue;
        }
        if row.source == "egress" && !curl {
            eprintln!("skipped row '{}': no curl here", row.name);
            continue;
        }
        let mut builder = GoatRun::builder()
            .replies((row.replies)())
            .arg("--output")
            .arg("jsonl");
        (row.setup)(builder.env());
        for flag in row.flags {
            builder = builder.arg(*flag);
        }
        for (name, value) in row.vars {
            builder = builder.var(name, value);
        }
        let run = builder.run("Do it").await;
        let name = row.name;
        assert_eq!(run.code(), Some(row.exit), "{name}: {}", run.stderr());
        let lines = lines(&run.out.stdout);
        let end = lines.last().unwrap();
        assert_eq!(end["type"], "turn.completed", "{name}: {end}");
        assert_eq!(end["outcome"], row.outcome, "{name}: {end}");
        assert_eq!(end["exit_code"], row.exit, "{name}: {end}");
        let denials = end["denials"].as_array().unwrap();
        let denial = denials
            .iter()
            .find(|d| d["source"] == row.source)
            .unwrap_or_else(|| panic!("{name}: no denial from {}: {denials:?}", row.source));
        if let Some(target) = row.target {
            assert!(
                denial["refused"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["source"] == row.source && r["target"] == target),
                "{name}: {denial}"
            );
        }
        // The call's own event carries the same refusal.
        let call = lines
            .iter()
            .find(|l| l["type"] == "tool_call.completed" && l["refused"].is_array())
            .unwrap_or_else(|| panic!("{name}: no call with refusals: {lines:?}"));
        assert_eq!(call["refused"][0]["source"], row.source, "{name}: {call}");
        // And the store has it, as a row.
        let session = lines[0]["session_id"].as_str().unwrap();
        let stored = stored_refusals(&run.env, session);
        assert!(
            stored.iter().any(|(source, target)| source == row.source
                && row.target.is_none_or(|t| target.as_deref() == Some(t))),
            "{name}: {stored:?}"
        );
        // A refused change set landed nothing, not even its harmless part.
        if row.source == "change_set" {
            assert!(!run.exists("kept.txt"), "{name}");
        }
    }
}

/// Each path's (kind, mode) as a command might change it.
fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commands_changes_are_files_changed_in_both_events_the_store_and_the_patch() {
    let builder = GoatRun::builder();
    let logs = {
        let env = builder.env();
        std::fs::write(env.ws.join("changed.txt"), "old\n").unwrap();
        std::fs::write(env.ws.join("removed.txt"), "gone\n").unwrap();
        std::fs::write(env.ws.join("run.sh"), "echo hi\n").unwrap();
        std::fs::set_permissions(
            env.ws.join("run.sh"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        env.root.join("logs")
    };
    let run = builder
        .replies(command(
            "echo new > created.txt && echo more >> changed.txt && rm removed.txt && chmod 755 \
             run.sh",
        ))
        .arg("--output")
        .arg("jsonl")
        .arg("--allow-commands")
        .arg("--logs-dir")
        .arg(logs.to_str().unwrap())
        .run("Change them")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.read("created.txt"), "new\n");
    assert_eq!(run.read("changed.txt"), "old\nmore\n");
    assert!(!run.exists("removed.txt"));
    assert_eq!(mode_of(&run.env.ws.join("run.sh")), 0o755);
    let mut expected = vec!["changed.txt", "created.txt", "removed.txt", "run.sh"];
    expected.sort_unstable();
    let sorted = |v: &Value| {
        let mut paths: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_owned())
            .collect();
        paths.sort();
        paths
    };
    let lines = lines(&run.out.stdout);
    let call = lines
        .iter()
        .find(|l| l["type"] == "tool_call.completed")
        .unwrap();
    assert_eq!(sorted(&call["files_changed"]), expected, "{call}");
    let end = lines.last().unwrap();
    assert_eq!(end["outcome"], "completed", "{end}");
    assert_eq!(sorted(&end["files_changed"]), expected, "{end}");
    // The store lists each once, and the patch names each.
    let store = goat_store::Store::open(&run.env.db).unwrap();
    let session = lines[0]["session_id"].as_str().unwrap();
    let mut stored: Vec<String> = store
        .file_changes(session)
        .unwrap()
        .into_iter()
        .map(|c| c.change.path)
        .collect();
    stored.sort();
    assert_eq!(stored, expected);
    let patch = std::fs::read_to_string(logs.join("changes.patch")).unwrap();
    for path in expected {
        assert!(
            patch.contains(&format!("b/{path}")) || patch.contains(&format!("a/{path}")),
            "{path}: {patch}"
        );
    }
}
