//! `goat permissions`: rules added, listed, revoked, and obeyed by the gate
//! on the next call.

use serde_json::json;

use crate::{Env, GoatRun, call_reply, json_out, text};

fn write_call(env: &Env, path: &str) -> std::process::Output {
    let args = json!({"path": path, "content": "x"}).to_string();
    env.run(&["tools", "call", "write_file", &args])
}

#[test]
fn allow_list_revoke_round_trip_and_an_allow_rule_lets_a_write_through() {
    let env = Env::new();
    let out = write_call(&env, "notes/a.txt");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!env.ws.join("notes").exists());

    let out = env.run(&["permissions", "allow", "write_file", "notes/**", "--write"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rule = "#1: allow write 'notes/**' for write_file, persistent";
    assert_eq!(text(&out.stdout), format!("{rule}\n"));
    assert!(env.permissions_db().exists());

    let out = env.run(&["permissions", "list"]);
    assert_eq!(text(&out.stdout), format!("{rule}\n"));
    let listed = json_out(&env.run(&["permissions", "list", "--json"]));
    assert_eq!(listed[0]["id"], 1);
    assert_eq!(listed[0]["tool"], "write_file");
    assert_eq!(listed[0]["pattern"], "notes/**");
    assert_eq!(listed[0]["access"], "write");
    assert_eq!(listed[0]["effect"], "allow");
    assert_eq!(listed[0]["scope"], "persistent");
    assert_eq!(listed[0]["expires_at"], json!(null));

    // The rule lets this write through without --allow-writes...
    let out = write_call(&env, "notes/a.txt");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/a.txt")).unwrap(),
        "x"
    );
    // ...and only where it says.
    let out = write_call(&env, "other.txt");
    assert_eq!(out.status.code(), Some(1));
    assert!(!env.ws.join("other.txt").exists());

    let out = env.run(&["permissions", "revoke", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("revoked {rule}\n"));
    assert_eq!(text(&env.run(&["permissions", "list"]).stdout), "");
    let out = write_call(&env, "notes/b.txt");
    assert_eq!(out.status.code(), Some(1));
    assert!(!env.ws.join("notes/b.txt").exists());

    let out = env.run(&["permissions", "revoke", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no rule #1"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_deny_rule_for_all_tools_wins_over_allow_writes() {
    let env = Env::new();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    std::fs::write(env.ws.join("secret/key"), "k").unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret/**"]);
    assert_eq!(
        text(&out.stdout),
        "#1: deny read 'secret/**' for all tools, persistent\n"
    );

    let out = env.run(&["tools", "call", "read_file", r#"{"path":"secret/key"}"#]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("forbidden by permission rule #1: deny read 'secret/**'"),
        "{err}"
    );
    let out = env.run(&[
        "tools",
        "call",
        "write_file",
        r#"{"path":"secret/key","content":"pwned"}"#,
        "--allow-writes",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("secret/key")).unwrap(),
        "k"
    );
}

#[test]
fn rules_can_expire_and_live_in_another_file() {
    let env = Env::new();
    let file = env.root.join("elsewhere").join("rules.db");
    let file = file.to_str().unwrap();
    let out = env.run(&[
        "permissions",
        "allow",
        "read_file",
        "./src/../docs/*.md",
        "--expires-in",
        "2h",
        "--permissions",
        file,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.starts_with("#1: allow read 'docs/*.md' for read_file, persistent, expires at "),
        "{shown}"
    );
    assert!(!env.permissions_db().exists());
    let listed = json_out(&env.run(&["permissions", "list", "--json", "--permissions", file]));
    let rule = &listed[0];
    let lifetime = rule["expires_at"].as_i64().unwrap() - rule["created_at"].as_i64().unwrap();
    assert_eq!(lifetime, 7200);
    assert_eq!(rule["expired"], false);
}

#[test]
fn bad_rules_are_exit_two_with_the_reason() {
    let env = Env::new();
    let cases: [(&[&str], &str); 7] = [
        (
            &["permissions", "allow", "read_file", "/etc/**"],
            "invalid path pattern \"/etc/**\"",
        ),
        (
            &["permissions", "deny", "read_file", "../up"],
            "invalid path pattern",
        ),
        (
            &["permissions", "allow", "read_file", "src/"],
            "invalid path pattern",
        ),
        (
            &["permissions", "deny", "write_flie", "**"],
            "no tool named 'write_flie'; available: read_file",
        ),
        (
            &["permissions", "allow", "*", "**", "--expires-in", "2x"],
            "unknown unit 'x'",
        ),
        (
            &["permissions", "allow", "*", "**", "--session", "nope"],
            "no session 'nope'",
        ),
        (&["permissions", "revoke", "7"], "no rule #7"),
    ];
    for (args, want) in cases {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(text(&env.run(&["permissions", "list"]).stdout), "");
}

/// `goat permissions deny '*' secrets` (a directory named without `/**`)
/// used to be accepted and protect nothing inside it (issue 11).
#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_naming_a_directory_keeps_its_files_from_the_model() {
    let builder = GoatRun::builder();
    let env = &builder.env;
    std::fs::create_dir(env.ws.join("secrets")).unwrap();
    std::fs::write(
        env.ws.join("secrets/prod.env"),
        "API_KEY=sk-live-0123456789\n",
    )
    .unwrap();
    let out = env.run(&["permissions", "deny", "*", "secrets"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rule = "#1: deny read 'secrets' and everything under it for all tools, persistent";
    assert_eq!(text(&out.stdout), format!("{rule}\n"));
    assert_eq!(
        text(&env.run(&["permissions", "list"]).stdout),
        format!("{rule}\n")
    );
    let listed = json_out(&env.run(&["permissions", "list", "--json"]));
    assert_eq!(listed[0]["pattern"], "secrets");
    assert_eq!(listed[0]["covers_below"], true);

    let run = builder
        .replies([
            call_reply("call_1", "read_file", r#"{"path": "secrets/prod.env"}"#),
            crate::content_reply("I could not read it."),
        ])
        .json()
        .run("Show me secrets/prod.env")
        .await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(
        run.summary()["tool_calls"],
        json!([{"tool": "read_file", "status": "denied", "decision": "deny"}])
    );
    let requests = run.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body.to_string();
    assert!(
        sent.contains(&format!(
            "denied: reading 'secrets/prod.env' with read_file is forbidden by permission rule {rule}"
        )),
        "{sent}"
    );
    for request in &requests {
        assert!(
            !request.body.to_string().contains("sk-live"),
            "the secret reached the engine"
        );
    }
}
