//! `@modelcontextprotocol/inspector --cli` against `goat mcp serve`: the
//! inspector's own client lists the tools and makes calls, and what they
//! did is checked on disk.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::{Env, text};

/// The inspector's `mcp-inspector` executable, or `None` (said).
fn inspector() -> Option<PathBuf> {
    match std::env::var_os("GOAT_MCP_INSPECTOR").map(PathBuf::from) {
        Some(p) if p.exists() => Some(p),
        _ => {
            assert!(
                std::env::var_os("GOAT_MCP_INSPECTOR_REQUIRED").is_none(),
                "GOAT_MCP_INSPECTOR_REQUIRED is set but GOAT_MCP_INSPECTOR names no inspector"
            );
            eprintln!(
                "note: skipped: no MCP inspector (set GOAT_MCP_INSPECTOR to its mcp-inspector; \
                 .ci/run installs it)"
            );
            None
        }
    }
}

/// `mcp-inspector --cli goat mcp serve FLAGS -- INSPECTOR_ARGS`, with
/// goat isolated to `env`.
fn inspect(bin: &PathBuf, env: &Env, flags: &[&str], args: &[&str]) -> Output {
    let mut cmd = Command::new(bin);
    env.isolate(&mut cmd);
    // The inspector runs under node, which wants a home of its own.
    cmd.env("HOME", env.root.join("home"));
    // The first start may compile the tool components (cached after):
    // longer than the inspector's 15 s default on a loaded machine.
    cmd.args(["--cli", "--connect-timeout", "120000"])
        .arg(env!("CARGO_BIN_EXE_goat"))
        .args(["mcp", "serve", "--workspace", env.ws_str()])
        .args(flags)
        .args(args);
    cmd.output().unwrap()
}

#[test]
fn the_inspector_lists_reads_and_writes_only_as_allowed() {
    let Some(bin) = inspector() else {
        return;
    };
    let env = Env::new();
    std::fs::write(env.ws.join("a.txt"), "hello\n").unwrap();

    let listed = inspect(&bin, &env, &[], &["--method", "tools/list"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read_file") && names.contains(&"write_file"),
        "{names:?}"
    );

    let read = inspect(
        &bin,
        &env,
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=a.txt",
        ],
    );
    let read: Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(read["isError"], false);
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello")
    );

    let write = [
        "--method",
        "tools/call",
        "--tool-name",
        "write_file",
        "--tool-arg",
        "path=b.txt",
        "--tool-arg",
        "content=inspected",
    ];
    let denied: Value = serde_json::from_slice(&inspect(&bin, &env, &[], &write).stdout).unwrap();
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(!env.ws.join("b.txt").exists());

    let allowed: Value =
        serde_json::from_slice(&inspect(&bin, &env, &["--allow-writes"], &write).stdout).unwrap();
    assert_eq!(allowed["isError"], false, "{allowed}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("b.txt")).unwrap(),
        "inspected"
    );
}
