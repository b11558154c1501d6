//! Hostile tests: escape attempts made with raw WASI calls that skip every
//! guest-side check, and runaway guests. Each must be refused or stopped
//! with its typed error, the outside left untouched, and the host healthy.

use std::time::{Duration, Instant};

use goat_sandbox::{Access, Limits, SandboxError, ToolError, ToolFailure};
use serde_json::json;

use crate::support::*;

/// The error a raw hostile action got, with the outside unchanged and the
/// secret never returned.
#[track_caller]
fn refused(ws: &Workspace, tool: &str, args: serde_json::Value, access: Access) -> String {
    let before = ws.outside_snapshot();
    let result = ws.call(tool, args.clone(), access);
    assert_eq!(
        ws.outside_snapshot(),
        before,
        "{args} changed the outside directory"
    );
    match result {
        Ok(text) => panic!("{args} succeeded: {text:?}"),
        Err(ToolFailure::Tool(ToolError::Io(msg))) => {
            assert!(!msg.contains(SECRET.trim()), "{msg}");
            msg
        }
        Err(other) => panic!("{args}: expected the sandbox's wasi error, got {other:?}"),
    }
}

/// A workspace with links pointing out of it, relative and absolute, to a
/// file and to directories.
fn workspace_with_escape_links() -> Workspace {
    let ws = Workspace::new();
    ws.write("inside.txt", "inside\n");
    let abs_secret = ws.outside.join("secret.txt");
    std::os::unix::fs::symlink("../outside/secret.txt", ws.root.join("rel_link")).unwrap();
    std::os::unix::fs::symlink(&abs_secret, ws.root.join("abs_link")).unwrap();
    std::os::unix::fs::symlink("/etc", ws.root.join("etc_link")).unwrap();
    std::os::unix::fs::symlink(&ws.outside, ws.root.join("outside_dir")).unwrap();
    std::os::unix::fs::symlink("inside.txt", ws.root.join("good_link")).unwrap();
    ws
}

const ESCAPE_PATHS: &[&str] = &[
    "../outside/secret.txt",
    "a/../../outside/secret.txt",
    "/etc/passwd",
    "rel_link",
    "abs_link",
    "etc_link/passwd",
    "outside_dir/secret.txt",
    "good_link/../../outside/secret.txt",
];

#[test]
fn raw_reads_cannot_leave_the_workspace() {
    let ws = workspace_with_escape_links();
    for path in ESCAPE_PATHS {
        let msg = refused(
            &ws,
            "hostile",
            json!({"action": "read", "path": path}),
            Access::Read,
        );
        assert!(msg.starts_with("wasi error: "), "{path}: {msg}");
    }
    // The same guest can read inside, through an inside link too.
    for path in ["inside.txt", "good_link", "./inside.txt"] {
        assert_eq!(
            ok(ws.call(
                "hostile",
                json!({"action": "read", "path": path}),
                Access::Read
            )),
            "inside\n"
        );
    }
}

#[test]
fn raw_writes_cannot_leave_the_workspace_even_read_write() {
    let ws = workspace_with_escape_links();
    for path in ESCAPE_PATHS
        .iter()
        .copied()
        .chain(["../outside/new.txt", "outside_dir/new.txt"])
    {
        refused(
            &ws,
            "hostile_rw",
            json!({"action": "write", "path": path}),
            Access::ReadWrite,
        );
    }
    for path in [
        "../outside/d",
        "a/../../outside/d",
        "/tmp/goat-escape-d",
        "outside_dir/d",
        "etc_link/goat-d",
    ] {
        refused(
            &ws,
            "hostile_rw",
            json!({"action": "mkdir", "path": path}),
            Access::ReadWrite,
        );
    }
    assert!(!std::path::Path::new("/tmp/goat-escape-d").exists());
    for path in [
        "../outside/secret.txt",
        "outside_dir/secret.txt",
        "abs_link/x",
    ] {
        refused(
            &ws,
            "hostile_rw",
            json!({"action": "unlink", "path": path}),
            Access::ReadWrite,
        );
    }
    // Control: the same guest writes inside.
    ok(ws.call(
        "hostile_rw",
        json!({"action": "write", "path": "made.txt"}),
        Access::ReadWrite,
    ));
    assert_eq!(ws.read("made.txt"), "pwned");
}

#[test]
fn path_with_nul_is_refused() {
    let ws = Workspace::new();
    ws.write("a", "a\n");
    refused(
        &ws,
        "hostile",
        json!({"action": "read", "path": "a\u{0}b"}),
        Access::Read,
    );
    refused(
        &ws,
        "hostile_rw",
        json!({"action": "write", "path": "x\u{0}y"}),
        Access::ReadWrite,
    );
    let names: Vec<_> = std::fs::read_dir(&ws.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("a")]);
}

#[test]
fn a_planted_symlink_cannot_be_followed_out() {
    let ws = Workspace::new();
    // Whether or not the host lets the link be created, following it from
    // inside the sandbox must not reach the outside.
    let _ = ws.call(
        "hostile_rw",
        json!({"action": "symlink", "path": "planted", "content": "../outside/secret.txt"}),
        Access::ReadWrite,
    );
    refused(
        &ws,
        "hostile",
        json!({"action": "read", "path": "planted"}),
        Access::Read,
    );
    refused(
        &ws,
        "hostile_rw",
        json!({"action": "write", "path": "planted"}),
        Access::ReadWrite,
    );
    let abs = ws.outside.join("secret.txt");
    let made = ws.call(
        "hostile_rw",
        json!({"action": "symlink", "path": "abs_planted", "content": abs.to_str().unwrap()}),
        Access::ReadWrite,
    );
    assert!(
        made.is_err(),
        "an absolute symlink target must be refused: {made:?}"
    );
}

#[test]
fn read_tool_cannot_write_even_when_caller_grants_write() {
    let ws = Workspace::new();
    ws.write("keep.txt", "original\n");
    // `hostile` declares read access; the caller grants read-write, and the
    // tool still gets only what it declared.
    for (action, path) in [
        ("write", "new.txt"),
        ("write", "keep.txt"),
        ("mkdir", "d"),
        ("unlink", "keep.txt"),
    ] {
        let msg = refused(
            &ws,
            "hostile",
            json!({"action": action, "path": path}),
            Access::ReadWrite,
        );
        assert!(
            msg.contains("read-only") || msg.contains("not-permitted") || msg.contains("access"),
            "{msg}"
        );
    }
    assert_eq!(ws.read("keep.txt"), "original\n");
    assert!(!ws.exists("new.txt") && !ws.exists("d"));
}

#[test]
fn write_tool_gets_read_only_when_caller_grants_read() {
    let ws = Workspace::new();
    ws.write("keep.txt", "original\n");
    refused(
        &ws,
        "hostile_rw",
        json!({"action": "write", "path": "keep.txt"}),
        Access::Read,
    );
    refused(
        &ws,
        "hostile_rw",
        json!({"action": "write", "path": "new.txt"}),
        Access::Read,
    );
    assert_eq!(ws.read("keep.txt"), "original\n");
    assert!(!ws.exists("new.txt"));
}

#[test]
fn no_access_means_no_filesystem() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let err = tool_err(ws.call(
        "hostile",
        json!({"action": "read", "path": "a.txt"}),
        Access::None,
    ));
    assert_eq!(err, ToolError::PermissionDenied("no preopen".to_owned()));
}

/// Limits low enough to reach quickly.
fn tight() -> Limits {
    Limits {
        timeout: Duration::from_millis(300),
        memory_bytes: 64 << 20,
        stdio_bytes: 16 << 10,
        result_bytes: 256 << 10,
        ..Limits::default()
    }
}

/// Runs a hostile action in a sandbox with `tight` limits, then proves the
/// same sandbox still runs a normal call.
#[track_caller]
fn stopped(args: serde_json::Value) -> (ToolFailure, Duration) {
    let (sandbox, hostile) = sandbox_with(tight(), HOSTILE_WASM);
    let ws = Workspace::new();
    ws.write("ok.txt", "still fine\n");
    let started = Instant::now();
    let result = sandbox
        .call(&hostile, &args.to_string(), &ws.pen(Access::Read))
        .unwrap();
    let took = started.elapsed();
    let failure = result.expect_err("the hostile action must not succeed");
    let after = sandbox
        .call(
            &hostile,
            &json!({"action": "read", "path": "ok.txt"}).to_string(),
            &ws.pen(Access::Read),
        )
        .unwrap();
    assert_eq!(
        after,
        Ok("still fine\n".to_owned()),
        "the sandbox is unhealthy after {failure:?}"
    );
    (failure, took)
}

#[test]
fn guest_that_loops_forever_times_out() {
    let (failure, took) = stopped(json!({"action": "loop"}));
    assert_eq!(
        failure,
        ToolFailure::Timeout {
            limit: Duration::from_millis(300)
        }
    );
    // Stopped by the epoch deadline, not by anything slower.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn guest_that_allocates_a_gibibyte_is_stopped() {
    let (failure, took) = stopped(json!({"action": "alloc", "bytes": 1u64 << 30}));
    assert_eq!(
        failure,
        ToolFailure::MemoryExceeded {
            limit_bytes: 64 << 20
        }
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn guest_that_prints_without_end_is_stopped() {
    let (failure, took) = stopped(json!({"action": "print"}));
    assert_eq!(
        failure,
        ToolFailure::OutputExceeded {
            stream: "stdout",
            limit_bytes: 16 << 10
        }
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn oversized_result_is_refused() {
    let (failure, _) = stopped(json!({"action": "big-result", "bytes": 1 << 20}));
    assert_eq!(
        failure,
        ToolFailure::OutputExceeded {
            stream: "result",
            limit_bytes: 256 << 10
        }
    );
}

#[test]
fn panicking_guest_is_reported_as_crashed() {
    let (failure, _) = stopped(json!({"action": "panic"}));
    assert!(
        matches!(&failure, ToolFailure::Crashed { message } if message.contains("unreachable")),
        "{failure:?}"
    );
}

#[test]
fn components_importing_forbidden_interfaces_are_refused_at_load() {
    let sandbox = sandbox();
    for (label, wasm, import) in [
        ("wants_env", WANTS_ENV_WASM, "wasi:cli/environment"),
        ("wants_socket", WANTS_SOCKET_WASM, "wasi:sockets/"),
    ] {
        match sandbox.load(label, wasm) {
            Err(SandboxError::ForbiddenImport { name, imports, .. }) => {
                assert_eq!(name, label);
                assert!(imports.iter().any(|i| i.starts_with(import)), "{imports:?}");
            }
            other => panic!("{label}: expected ForbiddenImport, got {other:?}"),
        }
    }
}

#[test]
fn pen_tools_import_only_what_they_use() {
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "list_directory",
        "find_files",
        "search_files",
    ] {
        for import in tool(name).imports() {
            let interface = import.split('@').next().unwrap();
            assert!(
                interface.starts_with("wasi:filesystem/")
                    || interface.starts_with("wasi:io/")
                    || interface == "wasi:clocks/wall-clock",
                "{name} imports {import}"
            );
        }
    }
}

#[test]
fn bytes_that_are_not_a_component_are_refused() {
    match sandbox().load("junk", b"\0asm\x01\0\0\0garbage") {
        Err(SandboxError::Compile { name, .. }) => assert_eq!(name, "junk"),
        other => panic!("expected Compile error, got {other:?}"),
    }
}

#[test]
fn missing_workspace_is_a_host_error() {
    let dir = tempfile::tempdir().unwrap();
    match goat_sandbox::Pen::new(dir.path().join("nope"), Access::Read) {
        Err(SandboxError::Workspace { path, .. }) => assert!(path.ends_with("nope")),
        other => panic!("expected a workspace error, got {other:?}"),
    }
}

#[test]
fn calls_run_concurrently_on_one_sandbox() {
    let ws = Workspace::new();
    for i in 0..8 {
        ws.write(&format!("f{i}.txt"), format!("file {i}\n"));
    }
    std::thread::scope(|s| {
        for i in 0..8 {
            let ws = &ws;
            s.spawn(move || {
                let text = ok(ws.read_call("read_file", json!({"path": format!("f{i}.txt")})));
                assert_eq!(text, format!("     1\tfile {i}\n"));
            });
        }
    });
}

#[test]
fn guest_that_leaks_descriptors_hits_the_resource_limit() {
    let limits = Limits {
        resources: 64,
        ..tight()
    };
    let (sandbox, hostile) = sandbox_with(limits, HOSTILE_WASM);
    let ws = Workspace::new();
    let result = sandbox
        .call(&hostile, r#"{"action": "leak"}"#, &ws.pen(Access::Read))
        .unwrap();
    assert_eq!(
        result,
        Err(ToolFailure::LimitExceeded {
            what: "more than 64 open WASI resources".to_owned()
        })
    );
}

#[test]
fn guest_passing_too_much_data_to_the_host_is_stopped() {
    let limits = Limits {
        hostcall_bytes: 64 << 10,
        ..tight()
    };
    let (sandbox, hostile) = sandbox_with(limits, HOSTILE_RW_WASM);
    let ws = Workspace::new();
    let args = json!({"action": "write", "path": "big.bin", "content": "z".repeat(128 << 10)});
    let result = sandbox
        .call(&hostile, &args.to_string(), &ws.pen(Access::ReadWrite))
        .unwrap();
    assert_eq!(
        result,
        Err(ToolFailure::LimitExceeded {
            what: "more than 65536 bytes passed to the host in one call".to_owned()
        })
    );
}

#[test]
fn stack_overflow_traps_instead_of_corrupting_memory() {
    let (failure, _) = stopped(json!({"action": "recurse"}));
    match &failure {
        ToolFailure::Crashed { message } => {
            assert!(
                message.contains("out of bounds") || message.contains("stack"),
                "{message}"
            )
        }
        other => panic!("expected a crash, got {other:?}"),
    }
}

/// The names in the workspace root, sorted.
fn names(ws: &Workspace) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(&ws.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_write_that_fails_midway_leaves_the_file_as_it_was() {
    let (sandbox, rw) = sandbox_with(tight(), HOSTILE_RW_WASM);
    for then in ["loop", "panic", "error"] {
        let ws = Workspace::new();
        ws.write("keep.txt", "original contents\n");
        let result = sandbox
            .call(
                &rw,
                &json!({"action": "write-then", "path": "keep.txt", "then": then}).to_string(),
                &ws.pen(Access::ReadWrite),
            )
            .unwrap();
        assert!(result.is_err(), "{then}: {result:?}");
        if then == "error" {
            // The model is told its write did not happen.
            let message = result.unwrap_err().to_string();
            assert!(
                message.contains("nothing was written: 'keep.txt' is as it was"),
                "{message}"
            );
        }
        assert_eq!(ws.read("keep.txt"), "original contents\n", "{then}");
        // Nor does a new file appear half-written.
        let result = sandbox
            .call(
                &rw,
                &json!({"action": "write-then", "path": "new.txt", "then": then}).to_string(),
                &ws.pen(Access::ReadWrite),
            )
            .unwrap();
        assert!(result.is_err(), "{then}: {result:?}");
        assert_eq!(
            names(&ws),
            ["keep.txt"],
            "{then}: no temporary file is left"
        );
    }
    // Control: the same write, completed, takes effect.
    let ws = Workspace::new();
    ws.write("keep.txt", "original contents\n");
    ok(sandbox
        .call(
            &rw,
            &json!({"action": "write", "path": "keep.txt", "content": "new"}).to_string(),
            &ws.pen(Access::ReadWrite),
        )
        .unwrap());
    assert_eq!(ws.read("keep.txt"), "new");
    assert_eq!(names(&ws), ["keep.txt"]);
}

#[test]
fn a_file_opened_for_reading_cannot_be_changed_through_its_descriptor() {
    let ws = Workspace::new();
    ws.write("keep.txt", "original\n");
    let before = std::fs::metadata(ws.root.join("keep.txt"))
        .unwrap()
        .modified()
        .unwrap();
    refused(
        &ws,
        "hostile_rw",
        json!({"action": "touch-through-read", "path": "keep.txt"}),
        Access::ReadWrite,
    );
    let after = std::fs::metadata(ws.root.join("keep.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after);
}
