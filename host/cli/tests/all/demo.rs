//! `goat demo`: a replayed model, everything else real.

use crate::{Env, json_out, text};

#[test]
fn demo_exits_zero_and_leaves_a_session_showing_the_failed_round_and_the_recovery() {
    let env = Env::new();
    let out = env
        .cmd()
        .env("TMPDIR", &env.root)
        .arg("demo")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("REPLAY"),
        "the demo must say the model's side is a replay: {err}"
    );
    assert!(
        err.contains("the model wrote a tool call as text; asking it once"),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("Fixed:"),
        "{}",
        text(&out.stdout)
    );

    // The real edit happened in the demo's workspace.
    let ws = err
        .lines()
        .find_map(|l| l.strip_prefix("▌ goat: demo: workspace "))
        .unwrap_or_else(|| panic!("the demo names its workspace: {err}"));
    let fixed = std::fs::read_to_string(std::path::Path::new(ws).join("src/greet.py")).unwrap();
    assert!(fixed.contains("\"Hello, \" + name + \"!\""), "{fixed}");
    assert!(ws.starts_with(env.root.to_str().unwrap()), "{ws}");

    // And the store, reached through GOAT_DB, shows what happened.
    let sessions = json_out(&env.run(&["sessions", "list", "--json"]));
    let id = sessions[0]["id"].as_str().unwrap().to_owned();
    let detail = json_out(&env.run(&["sessions", "show", &id, "--json"]));
    let turn = &detail["turns"][0];
    assert_eq!(turn["status"], "completed");
    assert_eq!(turn["recovery_used"], true);
    let statuses: Vec<&str> = turn["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "failed", "ok", "ok"]);
    let failed = &turn["rounds"][1];
    assert!(
        failed["content"].as_str().unwrap().contains("</tool_call>"),
        "{failed}"
    );
}

#[test]
fn stats_count_the_demos_recovery() {
    let env = Env::new();
    let none = env.run(&["stats"]);
    assert_eq!(none.status.code(), Some(0));
    assert!(text(&none.stderr).contains("no sessions yet"));
    for _ in 0..2 {
        let out = env
            .cmd()
            .env("TMPDIR", &env.root)
            .arg("demo")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let stats = json_out(&env.run(&["stats", "--json"]));
    let row = &stats[0];
    assert_eq!(stats.as_array().unwrap().len(), 1, "{stats}");
    assert_eq!(
        (row["model"].as_str(), row["engine_url"].as_str()),
        (Some("qwen3-coder (replay)"), Some("replay://goat-demo"))
    );
    assert_eq!(
        (
            row["sessions"].as_i64(),
            row["turns"].as_i64(),
            row["rounds"].as_i64()
        ),
        (Some(2), Some(2), Some(8))
    );
    assert_eq!(
        (row["tool_calls"].as_i64(), row["markup_responses"].as_i64()),
        (Some(4), Some(2))
    );
    assert_eq!(
        (
            row["recoveries"].as_i64(),
            row["recovered"].as_i64(),
            row["failed_twice"].as_i64()
        ),
        (Some(2), Some(2), Some(0))
    );
    let human = text(&env.run(&["stats"]).stdout);
    assert!(
        human.contains("one recovery used in 2 turns, which then completed in 2"),
        "{human}"
    );
}
