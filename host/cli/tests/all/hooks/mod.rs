//! Issue 41: the person's hooks, through the real binary. A Claude
//! Code-style `PreToolUse` script stops `rm -rf`; a hook's allow never
//! approves; a hook that hangs, crashes, floods or answers garbage denies;
//! a script changed after it was trusted is suspended until trusted again;
//! a hook configuration planted in the workspace never runs. After a call
//! (`after`), component hooks (`component`), a repository's settings
//! (`import`).

mod after;
mod component;
mod import;
mod turn;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::jsonl::lines;
use crate::{Env, GoatRun, call_reply, content_reply, text};

/// Claude Code's documented example, in sh: deny a command line holding
/// `rm -rf`, with an escape sequence in the reason to check it is escaped.
pub(crate) const BLOCK_RM: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'rm -rf'*)
    printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Destructive command blocked by hook \u001b[31m"}}'
    ;;
esac
exit 0
"#;

/// Writes an executable script `name` outside the workspace, in the
/// test's host directory; its path.
pub(crate) fn script(env: &Env, name: &str, body: &str) -> PathBuf {
    let dir = env.root.join("hookbin");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `goat hooks add NAME --on pre_tool_use [FLAGS] -- PATH`, which must work.
pub(crate) fn add(env: &Env, name: &str, flags: &[&str], path: &Path) {
    let mut args = vec!["hooks", "add", name, "--on", "pre_tool_use"];
    args.extend_from_slice(flags);
    args.push("--");
    args.push(path.to_str().unwrap());
    let out = env.run(&args);
    assert!(out.status.success(), "hooks add: {}", text(&out.stderr));
}

/// The hook runs stored for `session`: (hook, verdict, reason).
pub(crate) fn stored_runs(env: &Env, session: &str) -> Vec<(String, String, String)> {
    let store = goat_store::Store::open(&env.db).unwrap();
    store
        .hook_runs(session)
        .unwrap()
        .into_iter()
        .map(|(_, h)| (h.hook, h.verdict, h.reason))
        .collect()
}

/// `a.txt`, which the rules let be read, and `secret/key` (TOPSECRET),
/// which a deny rule hides from every tool.
pub(crate) fn plant_hidden_secret(env: &Env) {
    std::fs::write(env.ws.join("a.txt"), "open\n").unwrap();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    std::fs::write(env.ws.join("secret/key"), "TOPSECRET\n").unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Whether hooks can be contained here; said when they cannot, and the
/// test then skips.
pub(crate) fn contained() -> bool {
    let can = goat_router::command_support().is_ok();
    if !can {
        eprintln!("note: skipped: hooks cannot be contained here");
    }
    can
}

fn session_of(lines: &[Value]) -> String {
    lines[0]["session_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claude_code_pre_tool_use_script_stops_rm_rf_and_the_model_hears_why_escaped() {
    if !contained() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "run_command",
                &json!({ "command": "rm -rf sub" }).to_string(),
            ),
            call_reply(
                "c2",
                "run_command",
                &json!({ "command": "ls sub" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .arg("--allow-commands")
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    std::fs::write(env.ws.join("sub/keep.txt"), "kept\n").unwrap();
    let guard = script(env, "block-rm.sh", BLOCK_RM);
    add(env, "block-rm", &["--match", "Bash"], &guard);
    let run = builder.run("Clean up").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.read("sub/keep.txt"), "kept\n");
    let lines = lines(&run.out.stdout);
    let end = lines.last().unwrap();
    assert_eq!(end["outcome"], "completed_with_denials", "{end}");
    let denial = &end["denials"][0];
    assert_eq!(denial["source"], "hook", "{end}");
    assert_eq!(denial["refused"][0]["target"], "block-rm", "{end}");
    // The next request carries the hook's reason, framed as the hook's and
    // escaped: the escape byte never reaches the model raw.
    let second = run.request_text(1);
    assert!(
        second.contains("the hook 'block-rm' denied it, saying")
            && second.contains("Destructive command blocked by hook"),
        "{second}"
    );
    assert!(
        !second.contains(r"\u001b") && second.contains(r"\\u{1b}"),
        "{second}"
    );
    // The second call was not stopped: the hook ran, and had no opinion.
    let calls: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_call.completed")
        .collect();
    assert_eq!(calls[1]["status"], "ok", "{}", calls[1]);
    assert_eq!(calls[1]["hooks"][0]["verdict"], "none", "{}", calls[1]);
    let session = session_of(&lines);
    let runs = stored_runs(&run.env, &session);
    assert_eq!(runs.len(), 2, "{runs:?}");
    // `goat sessions show` says which hook ran for which call and what it
    // answered, its words escaped.
    let shown = run.env.run(&["sessions", "show", &session]);
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("block-rm at pre_tool_use of run_command") && shown.contains("deny"),
        "{shown}"
    );
    assert!(!shown.contains('\u{1b}'), "{shown}");
    let json = crate::json_out(&run.env.run(&["sessions", "show", &session, "--json"]));
    let call = &json["turns"][0]["rounds"][0]["tool_calls"][0];
    assert_eq!(call["hooks"][0]["verdict"], "deny", "{call}");
    assert_eq!(
        (runs[0].0.as_str(), runs[0].1.as_str()),
        ("block-rm", "deny")
    );
    assert_eq!(runs[1].1, "none");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_allow_approves_nothing_the_rules_would_not() {
    let allow = r#"#!/bin/sh
cat > /dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"looks fine to me"}}'
"#;
    // No rule decides the write and no one is there: it needs approval,
    // and the hook's allow is not one.
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                &json!({ "path": "a.txt", "content": "x\n" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    let path = script(env, "allow.sh", allow);
    add(env, "yes-man", &[], &path);
    let run = builder.run("Write it").await;
    assert_eq!(run.code(), Some(4), "{}", run.stderr());
    assert!(!run.exists("a.txt"));
    let second = run.request_text(1);
    assert!(
        second.contains("the hook 'yes-man' answered allow; a hook's allow is never an approval"),
        "{second}"
    );
    let events = lines(&run.out.stdout);
    let runs = stored_runs(&run.env, &session_of(&events));
    assert_eq!(runs[0].1, "allow", "{runs:?}");

    // A deny rule: the write is refused by the rule, whatever the hook.
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                &json!({ "path": "secret/a.txt", "content": "x\n" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret", "--write"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = script(env, "allow.sh", allow);
    add(env, "yes-man", &[], &path);
    let run = builder.run("Write it").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("secret/a.txt"));
    let end = lines(&run.out.stdout).last().cloned().unwrap();
    assert_eq!(end["denials"][0]["source"], "rule", "{end}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_that_hangs_crashes_floods_or_answers_garbage_denies() {
    if !contained() {
        return;
    }
    for (name, body, says) in [
        (
            "hangs",
            "#!/bin/sh\nsleep 100\n",
            "it did not answer within 2 s",
        ),
        // In a view the hook is its namespace's first process, which a
        // signal from inside does not kill: its child crashes instead.
        (
            "crashes",
            "#!/bin/sh\nsh -c 'kill -SEGV $$'\nexit $?\n",
            "it exited 139",
        ),
        (
            "exits-1",
            "#!/bin/sh\necho 'bad input' >&2\nexit 1\n",
            "it exited 1 (bad input)",
        ),
        (
            "floods",
            "#!/bin/sh\nhead -c 100000000 /dev/zero\n",
            "printed more than",
        ),
        (
            "garbles",
            "#!/bin/sh\necho 'sure, go ahead'\n",
            "not a JSON object",
        ),
    ] {
        let builder = GoatRun::builder()
            .replies([
                call_reply(
                    "c1",
                    "write_file",
                    &json!({ "path": "a.txt", "content": "x\n" }).to_string(),
                ),
                content_reply("Done."),
            ])
            .allow_writes()
            .arg("--output")
            .arg("jsonl");
        let env = builder.env();
        let path = script(env, &format!("{name}.sh"), body);
        add(env, name, &["--timeout", "2"], &path);
        let run = builder.run("Write it").await;
        assert_eq!(run.code(), Some(3), "{name}: {}", run.stderr());
        assert!(!run.exists("a.txt"), "{name}");
        let end = lines(&run.out.stdout).last().cloned().unwrap();
        assert_eq!(end["denials"][0]["source"], "hook", "{name}: {end}");
        let second = run.request_text(1);
        assert!(
            second.contains("the hook failed, which denies") && second.contains(says),
            "{name}: {second}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_script_is_suspended_until_trusted_and_planted_hooks_never_run() {
    let quiet = "#!/bin/sh\ncat > /dev/null\nexit 0\n";
    let write = |path: &str| {
        vec![
            call_reply(
                "c1",
                "write_file",
                &json!({ "path": path, "content": "x\n" }).to_string(),
            ),
            content_reply("Done."),
        ]
    };
    let env = Env::new();
    let path = script(&env, "quiet.sh", quiet);
    add(&env, "quiet", &[], &path);
    // Planted in the workspace, in the forms other hosts read: a hook that
    // would leave a mark outside the workspace if it ever ran.
    let mark = env.root.join("planted-ran");
    let planted = format!("touch {}", mark.display());
    std::fs::create_dir_all(env.ws.join(".claude")).unwrap();
    std::fs::write(
        env.ws.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": planted}]}]}})
            .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(env.ws.join(".goat")).unwrap();
    std::fs::write(
        env.ws.join(".goat/hooks.json"),
        json!({"version": 1, "hooks": [{"name": "planted", "event": "pre_tool_use", "matcher": null,
            "argv": ["/bin/sh", "-c", planted], "timeout_secs": 5,
            "pins": {"definition": "x", "files": []}}]})
        .to_string(),
    )
    .unwrap();

    let run = GoatRun::builder_in(env)
        .replies(write("a.txt"))
        .allow_writes()
        .run("Write it")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.read("a.txt"), "x\n");
    assert!(!mark.exists(), "a hook planted in the workspace ran");

    // The script is changed after it was trusted: the hook is suspended,
    // and the call it matches is denied, not let through unguarded.
    std::fs::write(&path, "#!/bin/sh\ncat > /dev/null\ntouch /tmp/x\nexit 0\n").unwrap();
    let env = run.env;
    let shown = env.run(&["hooks", "list"]);
    assert!(
        text(&shown.stdout).contains("SUSPENDED")
            && text(&shown.stdout).contains("quiet.sh changed"),
        "{}",
        text(&shown.stdout)
    );
    let run = GoatRun::builder_in(env)
        .replies(write("b.txt"))
        .allow_writes()
        .run("Write it")
        .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("b.txt"));
    assert!(
        run.request_text(1).contains("the hook is suspended"),
        "{}",
        run.request_text(1)
    );

    // Trusted again, by the person, it runs.
    let env = run.env;
    let refused = env.run(&["hooks", "trust", "quiet"]);
    assert!(
        !refused.status.success(),
        "trust without a terminal or --yes"
    );
    let trusted = env.run(&["hooks", "trust", "quiet", "--yes"]);
    assert!(trusted.status.success(), "{}", text(&trusted.stderr));
    let run = GoatRun::builder_in(env)
        .replies(write("c.txt"))
        .allow_writes()
        .run("Write it")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.read("c.txt"), "x\n");

    // A hook that runs its program through a link in the workspace (a
    // virtual environment's `bin/python` is one) never runs either: the
    // link, not only what it resolves to, is where the agent writes.
    let env = run.env;
    std::fs::create_dir_all(env.ws.join(".venv/bin")).unwrap();
    std::os::unix::fs::symlink("/bin/sh", env.ws.join(".venv/bin/sh")).unwrap();
    let out = env.run(&[
        "hooks",
        "add",
        "venv",
        "--on",
        "pre_tool_use",
        "--",
        env.ws.join(".venv/bin/sh").to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = GoatRun::builder_in(env)
        .replies(write("e.txt"))
        .allow_writes()
        .run("Write it")
        .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("e.txt"));
    assert!(
        run.request_text(1)
            .contains(".venv/bin/sh, which is inside the workspace"),
        "{}",
        run.request_text(1)
    );
    let out = run.env.run(&["hooks", "remove", "venv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // Nor one whose script's `#!` line names the workspace's interpreter,
    // nor a shell line that reaches into the workspace.
    let env = run.env;
    let shebang = script(
        &env,
        "venv-python.sh",
        &format!("#!{}/.venv/bin/sh\ncat > /dev/null\n", env.ws.display()),
    );
    let ws = env.ws.display().to_string();
    for (name, argv) in [
        ("shebang", vec![shebang.to_str().unwrap().to_owned()]),
        (
            "line",
            vec![
                "/bin/sh".to_owned(),
                "-c".to_owned(),
                format!("cat > /dev/null; sh {ws}/check.sh"),
            ],
        ),
    ] {
        let mut args = vec!["hooks", "add", name, "--on", "pre_tool_use", "--"];
        args.extend(argv.iter().map(String::as_str));
        let out = env.run(&args);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    }
    let run = GoatRun::builder_in(env)
        .replies(write("f.txt"))
        .allow_writes()
        .run("Write it")
        .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("f.txt"));
    assert!(
        run.request_text(1)
            .contains("which is inside the workspace"),
        "{}",
        run.request_text(1)
    );
    for name in ["shebang", "line"] {
        let out = run.env.run(&["hooks", "remove", name]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }

    // A hook whose script lies in the workspace never runs from there.
    let env = run.env;
    let inside = env.ws.join("guard.sh");
    std::fs::write(&inside, quiet).unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o755)).unwrap();
    add(&env, "inside", &[], &inside);
    let run = GoatRun::builder_in(env)
        .replies(write("d.txt"))
        .allow_writes()
        .run("Write it")
        .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("d.txt"));
    assert!(
        run.request_text(1)
            .contains("inside the workspace, where the agent writes"),
        "{}",
        run.request_text(1)
    );
}

#[test]
fn adding_a_hook_refuses_what_it_could_not_run_as_asked() {
    let env = Env::new();
    let path = script(&env, "ok.sh", "#!/bin/sh\nexit 0\n");
    let p = path.to_str().unwrap();
    for (args, says) in [
        (
            vec![
                "hooks", "add", "x", "--on", "Stop", "--match", "Bash", "--", p,
            ],
            "nothing to --match",
        ),
        (
            vec!["hooks", "add", "x", "--on", "Sometimes", "--", p],
            "is not an event",
        ),
        (
            vec![
                "hooks",
                "add",
                "x",
                "--on",
                "pre_tool_use",
                "--match",
                "^Bash$",
                "--",
                p,
            ],
            "does not read in a matcher",
        ),
        (
            vec![
                "hooks",
                "add",
                "x",
                "--on",
                "pre_tool_use",
                "--",
                "sh",
                "missing.sh",
            ],
            "looks like a script",
        ),
        (
            vec!["hooks", "add", "x y", "--on", "pre_tool_use", "--", p],
            "is not a hook name",
        ),
        (
            vec![
                "hooks",
                "add",
                "x",
                "--on",
                "pre_tool_use",
                "--timeout",
                "601",
                "--",
                p,
            ],
            "outside 1 to 600",
        ),
    ] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let listed = env.run(&["hooks", "list", "--json"]);
    assert_eq!(text(&listed.stdout).trim(), "[]");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_runs_away_from_the_workspace_and_its_path() {
    if !contained() {
        return;
    }
    let builder = GoatRun::builder().replies([
        call_reply("c1", "read_file", &json!({ "path": "a.txt" }).to_string()),
        content_reply("Done."),
    ]);
    let env = builder.env();
    std::fs::write(env.ws.join("a.txt"), "text\n").unwrap();
    // A directory of the workspace first on GOAT's PATH.
    std::fs::create_dir(env.ws.join("bin")).unwrap();
    let path = format!(
        "{}:{}",
        env.ws.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let tell = script(
        env,
        "tell.sh",
        "#!/bin/sh\ncat > /dev/null\necho \"cwd=$(pwd) path=$PATH safe=$PYTHONSAFEPATH\" >&2\nexit 2\n",
    );
    add(env, "tell", &[], &tell);
    let ws = env.ws.display().to_string();
    let run = builder.var("PATH", &path).run("Read it").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    let said = run.request_text(1);
    assert!(said.contains("safe=1"), "{said}");
    assert!(!said.contains(&format!("cwd={ws}")), "{said}");
    assert!(!said.contains(&format!("{ws}/bin")), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_sees_nothing_the_rules_hide_from_the_call() {
    if !contained() {
        return;
    }
    let builder = GoatRun::builder().replies([
        call_reply("c1", "read_file", &json!({ "path": "a.txt" }).to_string()),
        content_reply("Done."),
    ]);
    let env = builder.env();
    plant_hidden_secret(env);
    // A hook that tells the model whatever it can read of the secret.
    let leak = script(
        env,
        "leak.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\ncat {}/secret/key {}/a.txt >&2\nexit 2\n",
            env.ws.display(),
            env.ws.display()
        ),
    );
    add(env, "leak", &[], &leak);
    let run = builder.run("Read it").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    let said = run.request_text(1);
    // It read what the call may read, and not the hidden file.
    assert!(said.contains("open"), "{said}");
    assert!(!said.contains("TOPSECRET"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_link_in_the_repository_cannot_empty_a_hooks_program() {
    if !contained() {
        return;
    }
    let builder = GoatRun::builder().replies([
        call_reply("c1", "read_file", &json!({ "path": "a.txt" }).to_string()),
        content_reply("Done."),
    ]);
    let env = builder.env();
    std::fs::write(env.ws.join("a.txt"), "text\n").unwrap();
    // A rule hides *.env; the repository ships a link of that name to the
    // shell every hook script runs with.
    let out = env.run(&["permissions", "deny", "*", "**/*.env"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Relative, so it climbs to the view's own root and names the view's
    // shell from there.
    let up = "../".repeat(env.ws.components().count() - 1);
    let shell = std::fs::canonicalize("/bin/sh").unwrap();
    let target = format!(
        "{up}{}",
        shell.display().to_string().trim_start_matches('/')
    );
    std::os::unix::fs::symlink(&target, env.ws.join("tool.env")).unwrap();
    let guard = script(
        env,
        "guard.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'the guard ran' >&2\nexit 2\n",
    );
    add(env, "guard", &[], &guard);
    let run = builder.run("Read it").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(
        run.request_text(1).contains("saying 'the guard ran'"),
        "{}",
        run.request_text(1)
    );
}
