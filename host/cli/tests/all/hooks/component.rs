//! Component hooks: pure wasm, asked in a fresh store.

use std::path::Path;

use serde_json::{Value, json};

use crate::jsonl::lines;
use crate::{Env, GoatRun, call_reply, content_reply, text};

/// `goat hooks add NAME --on pre_tool_use --component FILE`.
fn add_component(env: &Env, name: &str, file: &Path) -> std::process::Output {
    env.run(&[
        "hooks",
        "add",
        name,
        "--on",
        "pre_tool_use",
        "--timeout",
        "2",
        "--component",
        file.to_str().unwrap(),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_hook_stops_rm_rf_without_a_process_and_imports_nothing() {
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "run_command",
                &json!({ "command": "rm -rf sub" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .arg("--allow-commands")
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    let out = add_component(env, "guard", &crate::dist("examples/hook_guard.wasm"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A tool component, or one that imports anything, is no hook.
    for (file, says) in [
        ("testing/wants_more.wasm", "a hook component is pure"),
        ("examples/wc.wasm", "a hook component is pure"),
    ] {
        let out = add_component(env, "other", &crate::dist(file));
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(
            text(&out.stderr).contains(says),
            "{file}: {}",
            text(&out.stderr)
        );
    }
    let run = builder.run("Clean up").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(run.exists("sub"));
    let second = run.request_text(1);
    assert!(
        second.contains(
            "the hook 'guard' denied it, saying 'Destructive command blocked by a component hook'"
        ),
        "{second}"
    );
    let end = lines(&run.out.stdout).last().cloned().unwrap();
    assert_eq!(end["denials"][0]["source"], "hook", "{end}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_hook_that_loops_traps_or_eats_memory_denies_and_its_allow_is_nothing() {
    let read = |path: &str| call_reply(path, "read_file", &json!({ "path": path }).to_string());
    let builder = GoatRun::builder()
        .replies([
            read("loop"),
            read("trap"),
            read("grow"),
            read("allow"),
            content_reply("Done."),
        ])
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    for name in ["loop", "trap", "grow", "allow"] {
        std::fs::write(env.ws.join(name), "text\n").unwrap();
    }
    let out = add_component(env, "hostile", &crate::dist("testing/hook_hostile.wasm"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = builder.run("Read them").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    let events = lines(&run.out.stdout);
    let calls: Vec<&Value> = events
        .iter()
        .filter(|l| l["type"] == "tool_call.completed")
        .collect();
    for (call, says) in calls.iter().zip([
        "did not answer within 2s",
        "it crashed",
        "it used more than",
    ]) {
        assert_eq!(call["status"], "denied", "{call}");
        assert_eq!(call["hooks"][0]["verdict"], "failed", "{call}");
        let reason = call["hooks"][0]["reason"].as_str().unwrap();
        assert!(reason.contains(says), "{says}: {call}");
    }
    // A read the rules allow, which the hook allows too: it runs, and the
    // allow is only recorded.
    assert_eq!(calls[3]["status"], "ok", "{}", calls[3]);
    assert_eq!(calls[3]["hooks"][0]["verdict"], "allow", "{}", calls[3]);
}
