//! Trusting a server never shows it the person's files (issue 39): `goat
//! mcp trust` run from the home directory starts the server in an empty
//! directory of its own, so a server that reads `~/.ssh` into a tool's
//! description pins nothing of it; a `--workspace` a session would refuse
//! is refused. Two tools with one name are neither pinned nor offered,
//! and a server's questions to GOAT are answered as unsupported.

use goat_testkit::Reply;
use serde_json::{Value, json};

use super::client::{servers_dir, system_python};
use crate::{Env, GoatRun, shown, text};

#[test]
fn trust_run_from_the_home_directory_shows_the_server_none_of_it() {
    let env = Env::new();
    let home = env.root.join("home");
    let key = "-----BEGIN OPENSSH PRIVATE KEY----- secret-key-material";
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), key).unwrap();
    let script = servers_dir().join("hostile.py");
    let dir = servers_dir();
    // Its tool's description is the file at this path, relative to where
    // it is started: its workspace.
    let out = env
        .cmd()
        .env("HOME", &home)
        .current_dir(&home)
        .args(["mcp", "add", "thief", "--read", dir.to_str().unwrap(), "--"])
        .args([
            system_python(),
            script.to_str().unwrap(),
            "rugpull",
            ".ssh/id_ed25519",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    let trust = |args: &[&str]| {
        env.cmd()
            .env("HOME", &home)
            .current_dir(&home)
            .args(["mcp", "trust", "thief", "--yes"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = trust(&[]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        !shown(&out).contains("secret-key-material"),
        "{}",
        shown(&out)
    );
    let pinned = std::fs::read_to_string(env.db.with_file_name("mcp.json")).unwrap();
    assert!(!pinned.contains("secret-key-material"), "{pinned}");
    assert!(pinned.contains("ERROR reading description"), "{pinned}");

    // Named, the home directory (or a directory holding it) is refused,
    // and nothing is pinned anew.
    for workspace in [home.to_str().unwrap(), env.root.to_str().unwrap()] {
        let out = trust(&["--workspace", workspace]);
        assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
        let said = text(&out.stderr);
        assert!(
            said.contains("home directory") || said.contains("inside the workspace"),
            "{said}"
        );
        assert!(
            !shown(&out).contains("secret-key-material"),
            "{}",
            shown(&out)
        );
        let again = std::fs::read_to_string(env.db.with_file_name("mcp.json")).unwrap();
        assert_eq!(again, pinned);
    }
}

/// The tool names the engine was offered in its first request.
fn offered(run: &GoatRun) -> Vec<String> {
    run.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tools_with_one_name_are_neither_pinned_nor_offered() {
    let builder = GoatRun::builder();
    let env = builder.env();
    let script = servers_dir().join("hostile.py");
    let dir = servers_dir();
    let out = env.run(&[
        "mcp",
        "add",
        "nm",
        "--read",
        dir.to_str().unwrap(),
        "--",
        system_python(),
        script.to_str().unwrap(),
        "dup",
    ]);
    assert!(out.status.success(), "{}", shown(&out));
    let out = env.run(&["mcp", "trust", "nm", "--yes"]);
    assert!(out.status.success(), "{}", shown(&out));
    let said = text(&out.stdout);
    assert_eq!(
        said.matches("not offered: dup: the server offers 2 tools with this name")
            .count(),
        1,
        "{said}"
    );
    let file = env.db.with_file_name("mcp.json");
    let registry: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let pinned: Vec<&str> = registry["servers"][0]["trusted"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(pinned, ["solo"]);

    // A list an older GOAT pinned both into: neither is offered.
    let mut older = registry.clone();
    let solo = older["servers"][0]["trusted"]["tools"][0].clone();
    let mut dup = solo.clone();
    dup["name"] = json!("dup");
    let tools = older["servers"][0]["trusted"]["tools"]
        .as_array_mut()
        .unwrap();
    tools.push(dup.clone());
    tools.push(dup);
    std::fs::write(&file, serde_json::to_string_pretty(&older).unwrap()).unwrap();
    let run = builder.replies(vec![Reply::text("done")]).run("look").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let names = offered(&run);
    assert!(names.contains(&"nm__solo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n == "nm__dup"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_elicitation_and_roots_requests_are_answered_unsupported() {
    let builder = GoatRun::builder();
    let env = builder.env();
    let script = servers_dir().join("hostile.py");
    let dir = servers_dir();
    let out = env.run(&[
        "mcp",
        "add",
        "asker",
        "--read",
        dir.to_str().unwrap(),
        "--",
        system_python(),
        script.to_str().unwrap(),
        "asks",
    ]);
    assert!(out.status.success(), "{}", shown(&out));
    let out = env.run(&["mcp", "trust", "asker", "--yes"]);
    assert!(out.status.success(), "{}", shown(&out));
    let out = env.run(&["permissions", "allow", "asker__ask", ".", "--write"]);
    assert!(out.status.success(), "{}", shown(&out));
    let run = builder
        .replies(vec![
            Reply::tool_call("asker__ask", json!({})),
            Reply::text("done"),
        ])
        .run("ask")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let messages = run.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let result = messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let answers: Value = serde_json::from_str(&result).unwrap_or_else(|e| panic!("{e}: {result}"));
    for method in ["elicitation/create", "roots/list"] {
        assert_eq!(
            answers[method]["error"]["code"], -32601,
            "{method}: {answers}"
        );
        assert!(
            answers[method].get("result").is_none(),
            "{method}: {answers}"
        );
    }
}
