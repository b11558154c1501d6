//! Adding and trusting a server: the list is host state that bad input
//! never reaches, a server is the program added (never one a repository
//! puts in its place), `--read` never reaches GOAT's own files, and trust
//! never shows the server the person's files (issue 39: `goat mcp trust`
//! run from the home directory starts it in an empty directory of its
//! own; a `--workspace` a session would refuse is refused). Two tools with
//! one name are neither pinned nor offered, and a server's questions to
//! GOAT are answered as unsupported.

use goat_testkit::Reply;
use serde_json::{Value, json};

use super::client::{hostile, servers_dir, system_python};
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
    // The hostile server's dup mode, added and trusted.
    let said = hostile(env, "nm", &["dup"], &[]);
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
    hostile(env, "asker", &["asks"], &[]);
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

/// `--read` on the directory holding the store, or a parent of it, is
/// refused by the rule `commands.read_paths` meets (issue 39): the server
/// would read `goat.db`.
#[test]
fn read_on_the_stores_directory_or_a_parent_is_refused() {
    let env = Env::new();
    let state = env.db.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&state).unwrap();
    for dir in [&state, &env.root] {
        let out = env.run(&[
            "mcp",
            "add",
            "nosy",
            "--read",
            dir.to_str().unwrap(),
            "--",
            "python3",
            "-c",
            "pass",
        ]);
        assert!(!out.status.success(), "{dir:?}: {}", shown(&out));
        assert!(
            shown(&out).contains("would be able to read") && shown(&out).contains("goat.db"),
            "{dir:?}: {}",
            shown(&out)
        );
    }
    let list: Value = serde_json::from_slice(&env.run(&["mcp", "list", "--json"]).stdout).unwrap();
    assert_eq!(list["servers"].as_array().map(Vec::len), Some(0), "{list}");
    // A directory beside the store's is fine.
    let beside = env.root.join("tools");
    std::fs::create_dir_all(&beside).unwrap();
    let out = env.run(&[
        "mcp",
        "add",
        "fine",
        "--read",
        beside.to_str().unwrap(),
        "--",
        "python3",
        "-c",
        "pass",
    ]);
    assert!(out.status.success(), "{}", shown(&out));
}

#[test]
fn managing_servers_refuses_bad_input_and_keeps_the_list_outside_the_workspace() {
    let env = Env::new();
    for (args, says) in [
        (
            vec!["mcp", "add", "Bad-Name", "--", "python3"],
            "cannot name an MCP server",
        ),
        (
            vec!["mcp", "add", "x", "--", "/no/such/program"],
            "no program",
        ),
        (
            vec!["mcp", "add", "x", "--env", "A=B", "--", "python3"],
            "not the name of a variable",
        ),
        (
            vec!["mcp", "add", "x", "--read", "/no/such/dir", "--", "python3"],
            "no such directory",
        ),
        (
            vec!["mcp", "show", "nothing"],
            "no MCP server is called 'nothing'",
        ),
        (
            vec!["mcp", "trust", "nothing"],
            "no MCP server is called 'nothing'",
        ),
        (
            vec!["mcp", "remove", "nothing"],
            "no MCP server is called 'nothing'",
        ),
    ] {
        let out = env.run(&args);
        assert!(!out.status.success(), "{args:?}");
        assert!(shown(&out).contains(says), "{args:?}: {}", shown(&out));
    }
    let out = env.run(&["mcp", "add", "ok", "--", "python3", "-c", "pass"]);
    assert!(out.status.success(), "{}", shown(&out));
    let out = env.run(&["mcp", "add", "ok", "--", "python3"]);
    assert!(
        shown(&out).contains("already called 'ok'"),
        "{}",
        shown(&out)
    );
    let list: Value = serde_json::from_slice(&env.run(&["mcp", "list", "--json"]).stdout).unwrap();
    assert_eq!(list["servers"][0]["trusted"], false);
    // A server that does not answer in time (as npx -y does without the
    // network) fails to trust, saying it has none.
    let slow = servers_dir().join("hostile.py");
    let out = env.run(&[
        "mcp",
        "add",
        "slow",
        "--timeout",
        "1",
        "--read",
        servers_dir().to_str().unwrap(),
        "--",
        system_python(),
        slow.to_str().unwrap(),
        "slow_start",
        "30",
    ]);
    assert!(out.status.success(), "{}", shown(&out));
    let out = env.run(&["mcp", "trust", "slow", "--yes"]);
    assert!(!out.status.success());
    assert!(shown(&out).contains("within 1 s"), "{}", shown(&out));
    assert!(shown(&out).contains("it has no network"), "{}", shown(&out));
    let out = env.run(&["mcp", "remove", "slow"]);
    assert!(out.status.success(), "{}", shown(&out));
    // Not trusted: not offered, and trusting a server that is no MCP server fails clearly.
    let out = env.run(&["mcp", "trust", "ok", "--yes"]);
    assert!(!out.status.success());
    assert!(
        shown(&out).contains("could not be started"),
        "{}",
        shown(&out)
    );
    let file = env.db.parent().unwrap().join("mcp.json");
    assert!(file.exists());
    assert!(!env.ws.join("mcp.json").exists());
    let out = env.run(&["mcp", "remove", "ok"]);
    assert!(out.status.success(), "{}", shown(&out));
    // A store in a directory others may write: it works without servers,
    // and no server list is written there.
    let shared = env.root.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let db = shared.join("goat.db");
    let out = env.run(&[
        "mcp",
        "add",
        "x",
        "--db",
        db.to_str().unwrap(),
        "--",
        "python3",
    ]);
    assert!(!out.status.success());
    assert!(shown(&out).contains("was not written"), "{}", shown(&out));
    assert!(!shared.join("mcp.json").exists());
    let out = env.run(&["mcp", "list", "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", shown(&out));
    let list: Value = serde_json::from_slice(&env.run(&["mcp", "list", "--json"]).stdout).unwrap();
    assert_eq!(list["servers"].as_array().map(Vec::len), Some(0));
}

#[test]
fn a_server_is_the_program_added_not_one_the_repository_puts_in_its_place() {
    let env = Env::new();
    // Added from the servers' directory with a relative script: stored
    // absolute.
    let out = env
        .cmd()
        .current_dir(servers_dir())
        .args([
            "mcp",
            "add",
            "rel",
            "--",
            "python3",
            "./hostile.py",
            "probe",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    let list: Value = serde_json::from_slice(&env.run(&["mcp", "list", "--json"]).stdout).unwrap();
    let command = &list["servers"][0]["command"];
    assert!(command[0].as_str().unwrap().starts_with('/'), "{command}");
    assert_eq!(
        command[1],
        servers_dir().join("hostile.py").to_str().unwrap(),
        "{command}"
    );
    // A program found only through a relative PATH entry is refused.
    std::fs::create_dir_all(env.ws.join("node_modules/.bin")).unwrap();
    let fake = env.ws.join("node_modules/.bin/docs-mcp");
    std::fs::write(&fake, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = env
        .cmd()
        .env(
            "PATH",
            format!("node_modules/.bin:{}", std::env::var("PATH").unwrap()),
        )
        .args(["mcp", "add", "docs", "--", "docs-mcp"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        shown(&out).contains("no program 'docs-mcp'"),
        "{}",
        shown(&out)
    );
    // A linked list file is refused, not followed.
    let file = env.db.parent().unwrap().join("mcp.json");
    let elsewhere = env.root.join("planted.json");
    std::fs::rename(&file, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
    let out = env.run(&["mcp", "list"]);
    assert!(!out.status.success());
    assert!(shown(&out).contains("symbolic link"), "{}", shown(&out));
}
