//! `goat detect`: the unexecuted-markup detector on a saved message.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::{Env, text};

/// The ADR-0065 failure: function markup with a closing envelope only.
const UNEXECUTED: &str = "I'll read it.\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";

fn detect_stdin(args: &[&str], input: &str) -> Output {
    let env = Env::new();
    let mut child = env
        .cmd()
        .arg("detect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn detect_reports_missing_opening_envelope_from_a_file() {
    let env = Env::new();
    std::fs::write(env.ws.join("reply.txt"), UNEXECUTED).unwrap();
    let out = env.run(&["detect", "--tools", "read_file,write_file", "reply.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"unexecuted\": true, \"tool\": \"read_file\", \"form\": \"qwen-xml\", \
         \"markers\": [\"</tool_call>\"], \"span\": [14, 101], \"unwrapped\": false}\n"
    );
}

#[test]
fn detect_reads_stdin_and_exits_zero_either_way() {
    let cases = [
        (
            "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {}}\n</tool_call>",
            r#"{"unexecuted": true, "tool": "write_file", "form": "hermes-json", "markers": ["<tool_call>", "</tool_call>"], "span": [0, 64], "unwrapped": false}"#,
        ),
        (
            "Example:\n```\n<function=read_file>\n</function>\n</tool_call>\n```\n",
            r#"{"unexecuted": false, "tool": null, "form": null, "markers": [], "span": null, "unwrapped": false}"#,
        ),
        (
            "<function=delete_all>\n</function>\n</tool_call>",
            r#"{"unexecuted": false, "tool": null, "form": null, "markers": ["</tool_call>"], "span": null, "unwrapped": false}"#,
        ),
    ];
    for (input, want) in cases {
        let out = detect_stdin(&["--tools", "read_file, write_file"], input);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), format!("{want}\n"), "{input:?}");
        let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(parsed["unexecuted"].is_boolean());
    }
}

#[test]
fn detect_bad_input_is_exit_two_with_a_message() {
    let env = Env::new();
    let cases: [(&[&str], &str); 4] = [
        (
            &["detect", "--tools", "read_file", "no-such-file.txt"],
            "reading no-such-file.txt",
        ),
        (&["detect", "--tools", "", "x"], "none empty"),
        (
            &["detect", "--tools", "read_file,,write_file"],
            "none empty",
        ),
        (&["detect", "x"], "--tools"),
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
}

#[test]
fn an_error_quoting_a_hostile_name_cannot_drive_the_terminal() {
    let env = crate::Env::new();
    let name = env.ws.join("a\u{1b}[2Jb\u{7}.txt");
    let out = env.run(&["detect", "--tools", "read_file", name.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = crate::text(&out.stderr);
    assert!(err.starts_with("▌ goat: error: "), "{err:?}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("a\\u{1b}[2Jb\\u{7}.txt"), "{err:?}");
}

#[test]
fn detect_counts_an_unwrapped_call_only_with_the_setting_and_always_reports_it() {
    let input = "Reading.\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n";
    let run = |setting: Option<&str>, config: Option<&str>| {
        let env = Env::new();
        let mut cmd = env.cmd();
        if let Some(value) = setting {
            cmd.env("GOAT_MARKUP_UNWRAPPED_CALLS", value);
        }
        if let Some(toml) = config {
            env.write_config(toml);
        }
        std::fs::write(env.ws.join("reply.txt"), input).unwrap();
        let out = cmd
            .args(["detect", "--tools", "read_file", "reply.txt"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let off = r#"{"unexecuted": false, "tool": null, "form": null, "markers": [], "span": null, "unwrapped": true}"#;
    let on = r#"{"unexecuted": true, "tool": "read_file", "form": "qwen-xml", "markers": [], "span": [9, 73], "unwrapped": true}"#;
    assert_eq!(run(None, None), format!("{off}\n"));
    assert_eq!(run(Some("0"), None), format!("{off}\n"));
    assert_eq!(run(Some("1"), None), format!("{on}\n"));
    assert_eq!(
        run(None, Some("[markup]\nunwrapped_calls = true\n")),
        format!("{on}\n")
    );
    // The environment overrides the file.
    assert_eq!(
        run(Some("false"), Some("[markup]\nunwrapped_calls = true\n")),
        format!("{off}\n")
    );
}
