//! `goat mcp serve` driven by MCP clients no one here wrote: the Python
//! SDK's client (PyPI `mcp`, in the venv `.ci/run` builds; GOAT_MCP_PYTHON)
//! and `@modelcontextprotocol/inspector` in its CLI mode (npm, cached by
//! `.ci/run`; GOAT_MCP_INSPECTOR). Each skips with a note when its client
//! is absent, unless its `_REQUIRED` variable is set. What they check is
//! checked where it lands: files on disk, rows in the store, `goat undo`.
//! The hostile client (`hostile`, and one that goes away: `gone`) needs no
//! client but raw pipes; `trust` checks where a server is looked at.

pub(crate) mod client;
mod gone;
mod hostile;
mod inspector;
mod reach;
mod trust;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::{Env, text};

/// The Python with the `mcp` package, or `None` (said) when there is none.
fn sdk_python() -> Option<PathBuf> {
    match std::env::var_os("GOAT_MCP_PYTHON").map(PathBuf::from) {
        Some(p) if p.exists() => Some(p),
        _ => {
            assert!(
                std::env::var_os("GOAT_MCP_REQUIRED").is_none(),
                "GOAT_MCP_REQUIRED is set but GOAT_MCP_PYTHON names no Python"
            );
            eprintln!(
                "note: skipped: no MCP Python SDK (set GOAT_MCP_PYTHON to a Python with the mcp \
                 package; .ci/run does)"
            );
            None
        }
    }
}

/// The environment `goat mcp serve` gets from a client: this test's
/// isolation (its store, cache, config), as [`Env::isolate`] sets it.
fn served_env(env: &Env) -> Value {
    let mut cmd = env.cmd();
    env.isolate(&mut cmd);
    let mut vars = serde_json::Map::new();
    vars.insert(
        "PATH".to_owned(),
        json!(std::env::var("PATH").unwrap_or_default()),
    );
    for (name, value) in cmd.get_envs() {
        if let Some(value) = value {
            vars.insert(
                name.to_string_lossy().into_owned(),
                json!(value.to_string_lossy()),
            );
        }
    }
    Value::Object(vars)
}

/// How the SDK client answers elicitation.
#[derive(Clone, Copy)]
enum Elicit {
    /// It does not declare the capability.
    Unable,
    Accept,
    Decline,
    /// It declares the capability, then answers with an error.
    Lies,
}

/// Runs the SDK client against `goat mcp serve FLAGS` in `env`, making
/// `calls` (name, arguments); its report, or `None` when skipped.
fn sdk(env: &Env, flags: &[&str], elicit: Elicit, calls: &[(&str, Value)]) -> Option<Value> {
    let python = sdk_python()?;
    let mut args = vec!["mcp", "serve", "--workspace", env.ws_str()];
    args.extend_from_slice(flags);
    let spec = json!({
        "command": env!("CARGO_BIN_EXE_goat"),
        "args": args,
        "env": served_env(env),
        "cwd": env.ws_str(),
        "client": "sdk-client",
        "elicit": match elicit {
            Elicit::Unable => Value::Null,
            Elicit::Accept => json!("accept"),
            Elicit::Decline => json!("decline"),
            Elicit::Lies => json!("error"),
        },
        "calls": calls.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/mcp/sdk_client.py");
    let out = Command::new(python)
        .arg(script)
        .arg(spec.to_string())
        .current_dir(&env.ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK client failed: {}",
        text(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The `n`th call's result text, asserting whether it was an error.
fn result(report: &Value, n: usize, is_error: bool) -> String {
    let r = &report["results"][n];
    assert_eq!(r["is_error"], json!(is_error), "call {n}: {r}");
    r["text"].as_str().unwrap().to_owned()
}

/// One recorded call: its tool, status and decision.
type CallRow = (String, String, Option<String>);

/// The store's rows for the served session: (model, engine), and each
/// call's (tool, status, decision).
fn recorded(env: &Env) -> ((String, String), Vec<CallRow>) {
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    let session = conn
        .query_row("SELECT model, engine_url FROM sessions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let mut stmt = conn
        .prepare("SELECT tool, status, decision FROM tool_calls ORDER BY id")
        .unwrap();
    let calls = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (session, calls)
}

#[test]
fn the_sdk_client_reads_writes_by_flag_and_undo_puts_it_back() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "hello\n").unwrap();
    let Some(report) = sdk(
        &env,
        &["--allow-writes"],
        Elicit::Unable,
        &[
            ("read_file", json!({"path": "a.txt"})),
            (
                "write_file",
                json!({"path": "a.txt", "content": "changed\n"}),
            ),
        ],
    ) else {
        return;
    };
    assert_eq!(report["server"], "goat");
    assert_eq!(report["protocol"], "2025-11-25");
    let tools = report["tools"].as_array().unwrap();
    let hints = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {tools:?}"))["annotations"]
            .clone()
    };
    assert_eq!(hints("read_file")["readOnlyHint"], true);
    assert_eq!(hints("write_file")["readOnlyHint"], false);
    assert_eq!(hints("write_file")["destructiveHint"], true);
    assert_eq!(hints("write_file")["openWorldHint"], false);
    // Neither the flag for commands nor a client that can ask: not offered.
    assert!(
        tools.iter().all(|t| t["name"] != "run_command"),
        "{tools:?}"
    );
    // Nor undo, without --offer-undo.
    assert!(tools.iter().all(|t| t["name"] != "goat_undo"), "{tools:?}");

    assert!(result(&report, 0, false).contains("hello"));
    result(&report, 1, false);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "changed\n"
    );

    let ((model, engine), calls) = recorded(&env);
    assert_eq!(
        (model.as_str(), engine.as_str()),
        ("sdk-client", "mcp:stdio")
    );
    assert_eq!(
        calls,
        vec![
            ("read_file".into(), "ok".into(), Some("allow".into())),
            ("write_file".into(), "ok".into(), Some("allow".into())),
        ]
    );
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    let id: String = conn
        .query_row("SELECT id FROM sessions", [], |r| r.get(0))
        .unwrap();
    let diff = env.run(&["sessions", "diff", &id]);
    assert!(diff.status.success(), "{}", text(&diff.stderr));
    assert!(
        text(&diff.stdout).contains("+changed"),
        "{}",
        text(&diff.stdout)
    );

    let undo = env.run(&["undo", "--workspace", env.ws_str()]);
    assert!(undo.status.success(), "{}", text(&undo.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "hello\n"
    );
}

/// Undo in the core (issue 36): with `--offer-undo` the client may put
/// back what a call of the session changed, as `goat undo` would; a file
/// changed since is refused and left as it is.
#[test]
fn with_offer_undo_the_client_puts_a_calls_files_back() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "hello\n").unwrap();
    std::fs::write(env.ws.join("b.txt"), "bee\n").unwrap();
    let write = |path: &str| ("write_file", json!({"path": path, "content": "changed\n"}));
    let Some(report) = sdk(
        &env,
        &["--allow-writes", "--offer-undo"],
        Elicit::Unable,
        &[
            write("a.txt"),
            ("goat_undo", json!({})),
            ("goat_undo", json!({})),
            ("goat_undo", json!({"turn": 0})),
            write("b.txt"),
            (
                "edit_file",
                json!({"path": "b.txt", "old_string": "changed", "new_string": "mine"}),
            ),
            ("goat_undo", json!({"turn": 2})),
        ],
    ) else {
        return;
    };
    let tools = report["tools"].as_array().unwrap();
    let undo = tools
        .iter()
        .find(|t| t["name"] == "goat_undo")
        .unwrap_or_else(|| panic!("goat_undo not listed: {tools:?}"));
    assert_eq!(undo["annotations"]["destructiveHint"], true);
    result(&report, 0, false);
    let undid = result(&report, 1, false);
    assert!(undid.contains("undid turn 1 of session"), "{undid}");
    assert!(undid.contains("restored a.txt"), "{undid}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "hello\n"
    );
    assert!(result(&report, 2, false).contains("nothing to undo"));
    assert!(result(&report, 3, true).contains("positive whole number"));
    // Each call is a turn of its own and undo is none: b.txt written in turn
    // 2 and edited since in turn 3, so undoing turn 2 is refused, b.txt kept.
    let refused = result(&report, 6, true);
    assert!(refused.contains("did not undo turn 2"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("b.txt")).unwrap(),
        "mine\n"
    );
}

#[test]
fn the_sdk_client_is_held_to_the_gate_the_fence_and_the_workspace() {
    let env = Env::new();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    std::fs::write(env.ws.join("secret/key.txt"), "PLANTED-SECRET\n").unwrap();
    std::os::unix::fs::symlink("secret", env.ws.join("alias")).unwrap();
    std::fs::write(env.root.join("outside.txt"), "OUTSIDE\n").unwrap();
    // Without wildcards: it covers what is below it, whatever name reaches it.
    let out = env.run(&["permissions", "deny", "*", "secret"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let Some(report) = sdk(
        &env,
        &[],
        Elicit::Unable,
        &[
            ("write_file", json!({"path": "new.txt", "content": "x"})),
            ("read_file", json!({"path": "alias/key.txt"})),
            ("read_file", json!({"path": "../outside.txt"})),
            (
                "write_file",
                json!({"path": "alias/key.txt", "content": "x"}),
            ),
        ],
    ) else {
        return;
    };
    // No flag, no rule, no one to ask: denied, saying what would allow it.
    let denied = result(&report, 0, true);
    assert!(denied.contains("--allow-writes"), "{denied}");
    assert!(!env.ws.join("new.txt").exists());
    // The deny rule holds under the link's other name, and outside the
    // workspace is out of reach; neither content comes back.
    for n in 1..=3 {
        let r = result(&report, n, true);
        assert!(
            !r.contains("PLANTED-SECRET") && !r.contains("OUTSIDE"),
            "{r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.ws.join("secret/key.txt")).unwrap(),
        "PLANTED-SECRET\n"
    );
    let (_, calls) = recorded(&env);
    let statuses: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(statuses[0], "denied");
    assert_eq!(calls.len(), 4, "{calls:?}");
}

/// Issue 36: what the fence refuses (through a link to a denied
/// directory, or to `.git`), a command's refused change set and a host
/// GOAT's egress proxy refused are errors for the client, each refusal
/// named first, and rows in the store, as they are for `goat run`.
#[test]
fn refusals_of_the_fence_a_protected_path_a_change_set_and_the_proxy_are_errors_and_rows() {
    let env = Env::new();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    std::fs::create_dir_all(env.ws.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink("secret", env.ws.join("door")).unwrap();
    std::os::unix::fs::symlink(".git", env.ws.join("meta")).unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret", "--write"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A command's change set that makes a repository, where a view can
    // inspect it (not under Landlock alone).
    let view = crate::view::view_available(&env);
    let mut calls = vec![
        ("write_file", json!({"path": "door/a.txt", "content": "x"})),
        (
            "write_file",
            json!({"path": "meta/hooks/pre-commit", "content": "x"}),
        ),
    ];
    if view {
        calls.push((
            "run_command",
            json!({"command": "mkdir -p sub/.git && echo x > sub/.git/config && echo y > kept.txt"}),
        ));
    }
    // A host GOAT's egress proxy refuses (the list names another).
    let curl = crate::have("curl");
    if curl {
        env.write_config("[commands]\nnetwork = [\"localhost:1\"]\n");
        calls.push((
            "run_command",
            json!({"command": "curl -sS --max-time 5 http://localhost:9/ || true"}),
        ));
    }
    let Some(report) = sdk(
        &env,
        &["--allow-writes", "--allow-commands"],
        Elicit::Unable,
        &calls,
    ) else {
        return;
    };
    let fence = result(&report, 0, true);
    assert!(fence.starts_with("refused (fence): "), "{fence}");
    let protected = result(&report, 1, true);
    assert!(
        protected.starts_with("refused (protected): "),
        "{protected}"
    );
    assert!(!env.ws.join("secret/a.txt").exists());
    assert!(!env.ws.join(".git/hooks/pre-commit").exists());
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    let rows: Vec<(String, Option<String>)> = conn
        .prepare("SELECT refused_by, target FROM call_refusals ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut expected = vec![
        ("fence".to_owned(), Some("secret/a.txt".to_owned())),
        (
            "protected".to_owned(),
            Some(".git/hooks/pre-commit".to_owned()),
        ),
    ];
    if view {
        // The whole change set was refused: nothing of it landed.
        let change_set = result(&report, 2, true);
        assert!(
            change_set.starts_with("refused (change-set): writing 'sub/.git' is refused"),
            "{change_set}"
        );
        assert!(!env.ws.join("sub").exists() && !env.ws.join("kept.txt").exists());
        for path in ["sub/.git", "sub/.git/config"] {
            expected.push(("change-set".to_owned(), Some(path.to_owned())));
        }
    }
    if curl {
        let egress = result(&report, calls.len() - 1, true);
        assert!(egress.starts_with("refused (egress): "), "{egress}");
        expected.push(("egress".to_owned(), Some("localhost:9".to_owned())));
    }
    assert_eq!(rows, expected);
}

#[test]
fn the_sdk_client_runs_a_command_only_as_allowed() {
    let env = Env::new();
    let Some(report) = sdk(
        &env,
        &["--allow-commands"],
        Elicit::Unable,
        &[(
            "run_command",
            json!({"command": "echo made > made.txt && cat made.txt"}),
        )],
    ) else {
        return;
    };
    let r = result(&report, 0, false);
    assert!(r.contains("made"), "{r}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("made.txt")).unwrap(),
        "made\n"
    );
    let (_, calls) = recorded(&env);
    assert_eq!(
        calls,
        vec![("run_command".into(), "ok".into(), Some("allow".into()))]
    );
}

#[test]
fn an_elicited_approval_writes_and_a_declined_one_does_not() {
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "before\n").unwrap();
    let write = [("write_file", json!({"path": "a.txt", "content": "after\n"}))];

    let Some(declined) = sdk(&env, &[], Elicit::Decline, &write) else {
        return;
    };
    let r = result(&declined, 0, true);
    assert!(r.starts_with("denied:"), "{r}");
    // Its person said no, through the client: not one at GOAT's terminal.
    assert!(
        r.contains("the MCP client's person, asked through elicitation, did not allow it"),
        "{r}"
    );
    // The person saw the same preview a chat shows: the diff.
    let shown = declined["elicited"][0].as_str().unwrap();
    assert!(
        shown.contains("+ after") && shown.contains("- before"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "before\n"
    );

    let lied = sdk(&env, &[], Elicit::Lies, &write).unwrap();
    result(&lied, 0, true);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "before\n"
    );

    let accepted = sdk(&env, &[], Elicit::Accept, &write).unwrap();
    result(&accepted, 0, false);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "after\n"
    );

    let conn = rusqlite::Connection::open(&env.db).unwrap();
    let decisions: Vec<String> = conn
        .prepare("SELECT decision FROM tool_calls ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(decisions, ["ask-denied", "ask-denied", "ask-allowed"]);
}

#[test]
fn the_persons_hook_stops_a_clients_call_through_goat_mcp_serve() {
    if !crate::hooks::contained() {
        return;
    }
    let env = Env::new();
    let guard = crate::hooks::script(
        &env,
        "no-secrets.sh",
        "#!/bin/sh\ncase \"$(cat)\" in *secret*) echo 'not the secrets file' >&2; exit 2;; esac\n",
    );
    crate::hooks::add(&env, "no-secrets", &["--match", "Write"], &guard);
    let calls = [
        (
            "write_file",
            json!({"path": "secret.txt", "content": "x\n"}),
        ),
        ("write_file", json!({"path": "open.txt", "content": "y\n"})),
    ];
    let Some(report) = sdk(&env, &["--allow-writes"], Elicit::Unable, &calls) else {
        return;
    };
    let refused = result(&report, 0, true);
    assert!(
        refused.contains("the hook 'no-secrets' denied it, saying 'not the secrets file'"),
        "{refused}"
    );
    assert!(!env.ws.join("secret.txt").exists());
    result(&report, 1, false);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("open.txt")).unwrap(),
        "y\n"
    );
}

#[test]
fn a_hooks_ask_is_never_put_to_an_mcp_client_in_the_persons_place() {
    if !crate::hooks::contained() {
        return;
    }
    let env = Env::new();
    let asks = crate::hooks::script(
        &env,
        "asks.sh",
        "#!/bin/sh\ncat > /dev/null\nprintf '%s' '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"check with me\"}}'\n",
    );
    crate::hooks::add(&env, "asks", &["--match", "Write"], &asks);
    // The client would accept anything it is asked.
    let calls = [("write_file", json!({"path": "a.txt", "content": "x\n"}))];
    let Some(report) = sdk(&env, &[], Elicit::Accept, &calls) else {
        return;
    };
    let refused = result(&report, 0, true);
    assert!(
        refused.contains("an MCP client is not asked in their place"),
        "{refused}"
    );
    assert!(!env.ws.join("a.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_matching_claude_codes_mcp_names_guards_an_mcp_servers_tool() {
    let builder = crate::GoatRun::builder().arg("--output").arg("jsonl");
    let env = builder.env();
    client::hostile(env, "scribe", &["probe"], &["--writes"]);
    client::allow(env, "scribe__write_file");
    let guard = crate::hooks::script(
        env,
        "no-mcp-writes.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'no MCP writes' >&2\nexit 2\n",
    );
    // Claude Code names this tool mcp__scribe__write_file.
    crate::hooks::add(env, "no-mcp-writes", &["--match", "mcp__scribe__*"], &guard);
    let run = client::calling(
        builder,
        &[(
            "scribe__write_file",
            json!({"path": "made.txt", "text": "by the server"}),
        )],
    )
    .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(!run.exists("made.txt"));
    assert!(
        client::tool_result(&run, 1)
            .contains("the hook 'no-mcp-writes' denied it, saying 'no MCP writes'"),
        "{}",
        client::tool_result(&run, 1)
    );
}
