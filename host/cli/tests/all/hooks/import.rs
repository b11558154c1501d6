//! A repository's Claude Code settings: shown, never run, taken only as picked.

use serde_json::json;

use super::{BLOCK_RM, script};
use crate::{GoatRun, call_reply, content_reply, text};

#[tokio::test(flavor = "multi_thread")]
async fn a_repositorys_claude_settings_are_shown_never_run_and_taken_only_as_picked() {
    if !super::contained() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "run_command",
                &json!({ "command": "rm -rf sub" }).to_string(),
            ),
            content_reply("Done."),
        ])
        .arg("--allow-commands");
    let env = builder.env();
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    let guard = script(env, "block-rm.sh", BLOCK_RM);
    let mark = env.root.join("imported-ran");
    let touch = format!("touch {}", mark.display());
    let settings = json!({"hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [
                {"type": "command", "command": ".claude/hooks/block-rm.sh"},
                {"type": "command", "command": guard.to_str().unwrap(), "timeout": 10},
                {"type": "prompt", "prompt": "Is this safe?"}
            ]},
            {"matcher": "^Bash$", "hooks": [{"type": "command", "command": touch}]}
        ],
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [
                {"type": "command", "command": "jq -r '.tool_input.file_path' | xargs npx prettier --write"}
            ]}
        ],
        "SessionStart": [{"hooks": [{"type": "command", "command": touch}]}]
    }});
    std::fs::create_dir_all(env.ws.join(".claude")).unwrap();
    let file = env.ws.join(".claude/settings.json");
    std::fs::write(&file, settings.to_string()).unwrap();
    let file = file.to_str().unwrap();

    let shown = env.run(&["hooks", "import", file]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let listed = text(&shown.stdout);
    for says in [
        "1. PreToolUse Bash: .claude/hooks/block-rm.sh",
        "not taken: it runs a file of the repository",
        "not taken: a 'prompt' hook",
        "'^Bash$' holds '^'",
        "not taken: it is shell syntax",
        "not taken: GOAT has no such event",
    ] {
        assert!(listed.contains(says), "{says}: {listed}");
    }
    assert!(!mark.exists(), "showing the file ran a hook");
    let listed = env.run(&["hooks", "list", "--json"]);
    assert_eq!(text(&listed.stdout).trim(), "[]", "showing added a hook");

    let refused = env.run(&["hooks", "import", file, "--take", "1"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("nothing was added"),
        "{}",
        text(&refused.stderr)
    );
    let taken = env.run(&["hooks", "import", file, "--take", "2"]);
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    assert!(
        text(&taken.stdout).contains("added hook imported-2"),
        "{}",
        text(&taken.stdout)
    );

    let run = builder.run("Clean up").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(run.exists("sub"));
    assert!(
        run.request_text(1)
            .contains("the hook 'imported-2' denied it"),
        "{}",
        run.request_text(1)
    );
    assert!(!mark.exists(), "a hook of the repository ran");
}
