//! The config file, the environment and flags, each overriding the one
//! before: what `goat config show` reports, what the engine actually
//! receives, which limits the sandbox applies, and errors that name the
//! file, the line and the key.

use goat_testkit::ScriptedServer;
use serde_json::Value;

use crate::{Env, content_reply, json_out, text};

fn setting<'a>(shown: &'a Value, key: &str) -> &'a Value {
    shown["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {shown}"))
}

#[test]
fn show_reports_each_value_and_where_it_came_from() {
    let env = Env::new();
    let file = env.write_config(
        "# my engine\nengine = \"http://127.0.0.1:9/v1\"\nmodel = \"from-file\"\n\n[limits]\n\
         tool_timeout_secs = 7\n",
    );
    let out = env
        .cmd()
        .args(["config", "show", "--json"])
        .env("GOAT_MODEL", "from-env")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = json_out(&out);
    let file_str = file.to_str().unwrap();
    assert_eq!(shown["file"], file_str);
    assert_eq!(shown["file_found"], true);
    assert_eq!(setting(&shown, "engine")["value"], "http://127.0.0.1:9/v1");
    assert_eq!(setting(&shown, "engine")["source"], format!("{file_str}:2"));
    assert_eq!(setting(&shown, "model")["value"], "from-env");
    assert_eq!(setting(&shown, "model")["source"], "env GOAT_MODEL");
    assert_eq!(setting(&shown, "limits.tool_timeout_secs")["value"], "7");
    assert_eq!(
        setting(&shown, "limits.tool_timeout_secs")["source"],
        format!("{file_str}:6")
    );
    assert_eq!(setting(&shown, "max_rounds")["value"], "24");
    assert_eq!(setting(&shown, "max_rounds")["source"], "default");
    assert_eq!(setting(&shown, "api_key_env")["value"], Value::Null);

    let plain = text(&env.run(&["config", "show"]).stdout);
    assert!(
        plain.starts_with(&format!("config file: {file_str}\n")),
        "{plain}"
    );
    assert!(
        plain.contains(&format!(
            "model                      from-file  ({file_str}:3)"
        )),
        "{plain}"
    );
}

#[test]
fn a_missing_default_file_is_fine_and_a_named_one_is_an_error() {
    let env = Env::new();
    let out = env.run(&["config", "show"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(not present)"));

    let missing = env.root.join("nowhere.toml");
    let out = env
        .cmd()
        .args(["config", "show"])
        .env("GOAT_CONFIG", &missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot read the config file {}",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn errors_in_the_file_name_the_line_and_the_key_and_stop_every_command() {
    let env = Env::new();
    let file = env.write_config("model = \"q\"\n[limits]\ntool_memory_mib = \"lots\"\n");
    for args in [
        &["config", "show"][..],
        &["run", "--engine", "http://127.0.0.1:9/v1", "hello"],
        &["tools", "list"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(
                "config file {}, line 3, key `limits.tool_memory_mib`: invalid type: string \
                 \"lots\", expected u64",
                file.display()
            )),
            "{args:?}: {err}"
        );
    }
    // The store was never created: nothing ran.
    assert!(!env.db.exists());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "model = \"q\"\n[limits]\ntool_memory_mib = \"lots\"\n",
        "the file is never rewritten"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn flags_override_the_environment_which_overrides_the_file() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        content_reply("one"),
        content_reply("two"),
        content_reply("three"),
    ])
    .await;
    let url = server.base_url();
    env.write_config(&format!(
        "engine = \"{url}\"\nmodel = \"file-model\"\nmax_rounds = 3\n"
    ));

    let out = env.run_async(&["run", "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut cmd = env.cmd();
    cmd.args(["run", "hi"]).env("GOAT_MODEL", "env-model");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut cmd = env.cmd();
    cmd.args(["run", "--model", "flag-model", "hi"])
        .env("GOAT_MODEL", "env-model");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models, ["file-model", "env-model", "flag-model"]);
}

#[test]
fn writes_allow_in_the_file_lets_a_write_through_and_limits_apply_to_tools() {
    let env = Env::new();
    let args = r#"{"path": "a.txt", "content": "hello\n"}"#;
    let denied = env.run(&["tools", "call", "write_file", args]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(!env.ws.join("a.txt").exists());

    env.write_config("writes = \"allow\"\n");
    let allowed = env.run(&["tools", "call", "write_file", args]);
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "hello\n"
    );

    // A 4 KiB file reads fine under the default limits and not under a
    // 1 KiB result limit from the config file.
    std::fs::write(env.ws.join("big.txt"), "x".repeat(4096)).unwrap();
    let read = r#"{"path": "big.txt"}"#;
    let out = env.run(&["tools", "call", "read_file", read]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    env.write_config("[limits]\ntool_output_kib = 1\n");
    let out = env.run(&["tools", "call", "read_file", read]);
    assert_eq!(out.status.code(), Some(1));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(said.contains("1024"), "the limit is named: {said}");
}

#[test]
fn a_config_file_inside_the_workspace_is_refused() {
    let env = Env::new();
    let inside = env.ws.join("goat.toml");
    std::fs::write(&inside, "writes = \"allow\"\n").unwrap();
    for args in [
        &[
            "run",
            "--engine",
            "http://127.0.0.1:9/v1",
            "--model",
            "q",
            "hi",
        ][..],
        &[
            "tools",
            "call",
            "write_file",
            r#"{"path": "a.txt", "content": "x"}"#,
        ],
    ] {
        let out = env
            .cmd()
            .args(args)
            .env("GOAT_CONFIG", &inside)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("is inside the workspace") && err.contains("GOAT_CONFIG"),
            "{args:?}: {err}"
        );
    }
    assert!(!env.ws.join("a.txt").exists());
    assert!(!env.db.exists());
}

/// `commands.network` takes false, true or a list of destinations; a list
/// is checked entry by entry as the file is read, and the environment
/// gives one separated by commas (a destination holds a colon).
#[test]
fn commands_network_takes_a_list_of_destinations_checked_as_it_is_read() {
    let env = Env::new();
    let file = env.write_config(
        "[commands]\nnetwork = [\"registries.rust\", \"localhost:8080\", \"*.example.com\"]\n",
    );
    let shown = json_out(&env.run(&["config", "show", "--json"]));
    assert_eq!(
        setting(&shown, "commands.network")["value"],
        "[\"registries.rust\", \"localhost:8080\", \"*.example.com\"]"
    );
    assert_eq!(
        setting(&shown, "commands.network")["source"],
        format!("{}:2", file.display())
    );
    let out = env
        .cmd()
        .args(["config", "show", "--json"])
        .env("GOAT_COMMANDS_NETWORK", "registries.python, [::1]:3000")
        .output()
        .unwrap();
    let shown = json_out(&out);
    assert_eq!(
        setting(&shown, "commands.network")["value"],
        "[\"registries.python\", \"[::1]:3000\"]"
    );
    let on = env
        .cmd()
        .args(["config", "show", "--json"])
        .env("GOAT_COMMANDS_NETWORK", "1")
        .output()
        .unwrap();
    assert_eq!(setting(&json_out(&on), "commands.network")["value"], "true");
    // The hostile review of ADR-0082: "FALSE" was read as the host
    // `false`, giving a proxied network where none was meant.
    for (word, value) in [
        ("FALSE", Some("false")),
        ("True", Some("true")),
        ("off", None),
    ] {
        let out = env
            .cmd()
            .args(["config", "show", "--json"])
            .env("GOAT_COMMANDS_NETWORK", word)
            .output()
            .unwrap();
        match value {
            Some(value) => {
                assert_eq!(setting(&json_out(&out), "commands.network")["value"], value);
            }
            None => {
                assert_eq!(out.status.code(), Some(2), "{word}");
                assert!(
                    text(&out.stderr).contains("\"off\" is not a host; use false (or 0)"),
                    "{}",
                    text(&out.stderr)
                );
            }
        }
    }

    for (bad, says) in [
        ("[\"https://crates.io\"]", "is a URL; write the host alone"),
        (
            "[\"registries.ruby\"]",
            "not a named set; the sets are registries.rust",
        ),
        (
            "[\"127.1\"]",
            "an IPv4 address written in a form other than a.b.c.d",
        ),
        ("[\"*\"]", "set commands.network = true"),
        ("[\"no\", \"crates.io\"]", "\"no\" is not a host"),
        (
            "\"crates.io\"",
            "invalid type: string \"crates.io\", expected a sequence",
        ),
    ] {
        let file = env.write_config(&format!("[commands]\nnetwork = {bad}\n"));
        let out = env.run(&["config", "show"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(
                "config file {}, line 2, key `commands.network`",
                file.display()
            )) && err.contains(says),
            "{bad}: {err}"
        );
    }
}
