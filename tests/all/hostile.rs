//! Hostile tests: escape attempts made with raw WASI calls that skip every
//! guest-side check, and runaway guests. Each must be refused or stopped
//! with its typed error, the outside left untouched, and the host healthy.

use std::time::{Duration, Instant};

use goat_sandbox::{Access, Limits, SandboxBuilder, SandboxError, ToolError, ToolFailure};
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
fn workspace_containing_the_compiled_cache_is_refused() {
    let ws = Workspace::new();
    let sandbox = SandboxBuilder::new()
        .cache_dir(ws.root.join(".cache/goat"))
        .build()
        .unwrap();
    let tools = sandbox.load_pen_tools().unwrap();
    match sandbox.call(&tools[0], r#"{"path": "x"}"#, &ws.pen(Access::Read)) {
        Err(SandboxError::Workspace { reason, .. }) => {
            assert!(reason.contains("compiled-code cache"), "{reason}")
        }
        other => panic!("expected the workspace to be refused, got {other:?}"),
    }
}

/// Sandboxes in one process filling one fresh cache at the same time (the
/// CI found this: each wrote the entry through the same temporary file and
/// one rename took the other's away) all load, and one entry remains.
#[test]
fn sandboxes_filling_one_cache_at_once_all_load() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let barrier = std::sync::Barrier::new(6);
    let loaded: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (cache, barrier) = (&cache, &barrier);
                scope.spawn(move || {
                    let sandbox = SandboxBuilder::new().cache_dir(cache).build().unwrap();
                    barrier.wait();
                    sandbox
                        .load("hostile", HOSTILE_WASM)
                        .map(|t| t.sha256().to_owned())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap_or_else(|e| panic!("{e:#}")))
            .collect()
    });
    assert_eq!(loaded.len(), 6);
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries.len(), 1, "one entry and no leftovers: {entries:?}");
}

#[test]
fn compiled_cache_is_reused_and_a_damaged_entry_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let tool = sandbox.load("hostile", HOSTILE_WASM).unwrap();
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let name = entry.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with(tool.sha256()) && name.ends_with(".cwasm"),
        "{name}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            std::fs::metadata(entry).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    // Damage the entry: the next load must notice, recompile and replace it.
    std::fs::write(entry, b"not compiled code").unwrap();
    let again = sandbox.load("hostile", HOSTILE_WASM).unwrap();
    assert_eq!(again.sha256(), tool.sha256());
    assert!(
        std::fs::read(entry).unwrap().len() > 1000,
        "the damaged entry was not replaced"
    );
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let read = sandbox
        .call(
            &again,
            r#"{"action": "read", "path": "a.txt"}"#,
            &ws.pen(Access::Read),
        )
        .unwrap();
    assert_eq!(read, Ok("a\n".to_owned()));
}

/// A read-only cache (`goat tools list`) is used when it is there and
/// never created or written: a missing entry is compiled in memory, a
/// damaged one stays as it is.
#[test]
fn a_read_only_cache_is_used_but_never_created_or_written() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let names = || -> Vec<_> {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    };

    let reader = SandboxBuilder::new()
        .read_only_cache_dir(&cache)
        .build()
        .unwrap();
    reader.load("hostile", HOSTILE_WASM).unwrap();
    assert!(!cache.exists(), "a read-only cache was created");
    assert!(reader.cache_dir().is_none());

    let writer = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let tool = writer.load("hostile", HOSTILE_WASM).unwrap();
    let entry = cache.join(&names()[0]);
    std::fs::write(&entry, b"not compiled code").unwrap();
    let reader = SandboxBuilder::new()
        .read_only_cache_dir(&cache)
        .build()
        .unwrap();
    assert_eq!(
        reader.cache_dir(),
        Some(cache.canonicalize().unwrap().as_path())
    );
    let again = reader.load("hostile", HOSTILE_WASM).unwrap();
    assert_eq!(again.sha256(), tool.sha256());
    assert_eq!(std::fs::read(&entry).unwrap(), b"not compiled code");
    let pen = &goat_sandbox::builtin::PEN_TOOLS[0];
    reader.load(pen.name, pen.wasm).unwrap();
    assert_eq!(names().len(), 1, "{:?}", names());
}

/// Replaces the cached compiled code of `hostile` with `read_file`'s (a
/// valid entry for this engine, so it would deserialize), leaves it as
/// `tamper` says, and returns what a fresh sandbox then loads as `hostile`.
#[cfg(unix)]
fn load_with_substituted_entry(tamper: impl Fn(&std::path::Path)) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // Compiled, not taken from the binary, so that read_file has an entry.
    let sandbox = SandboxBuilder::new()
        .cache_dir(&cache)
        .ignore_precompiled()
        .build()
        .unwrap();
    let hostile = sandbox.load("hostile", HOSTILE_WASM).unwrap();
    let pen = &goat_sandbox::builtin::PEN_TOOLS[0];
    let read_file = sandbox.load(pen.name, pen.wasm).unwrap();
    let entry_of = |sha: &str| {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(sha))
            .unwrap()
    };
    let hostile_entry = entry_of(hostile.sha256());
    let planted = std::fs::read(entry_of(read_file.sha256())).unwrap();
    std::fs::write(&hostile_entry, &planted).unwrap();
    tamper(&hostile_entry);
    let fresh = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let loaded = fresh.load("hostile", HOSTILE_WASM).unwrap();
    (
        loaded.spec().name.clone(),
        std::fs::read(&hostile_entry).unwrap(),
    )
}

#[cfg(unix)]
#[test]
fn a_cache_entry_others_may_write_is_never_deserialized() {
    use std::os::unix::fs::PermissionsExt;
    let expected = sandbox().load("hostile", HOSTILE_WASM).unwrap();
    // Control: a planted entry that passes the checks is what runs (the
    // cache cannot tell; that is why who may write it matters).
    let (name, _) = load_with_substituted_entry(|_| {});
    assert_eq!(name, "read_file", "the substitution itself works");
    let (name, now) = load_with_substituted_entry(|entry| {
        std::fs::set_permissions(entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    });
    assert_eq!(name, expected.spec().name, "a 0666 entry is not used");
    assert!(now.len() > 1000, "it was compiled again and replaced");
}

#[cfg(unix)]
#[test]
fn a_cache_entry_owned_by_another_user_is_never_deserialized() {
    if own_uid() != 0 {
        eprintln!("skipped: giving a file to another user needs root");
        return;
    }
    let expected = sandbox().load("hostile", HOSTILE_WASM).unwrap();
    let (name, _) = load_with_substituted_entry(|entry| {
        std::os::unix::fs::chown(entry, Some(4242), None).unwrap();
    });
    assert_eq!(
        name,
        expected.spec().name,
        "another user's entry is not used"
    );
}

/// The effective user id, from the owner of a file this process creates.
#[cfg(unix)]
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("me"), b"").unwrap();
    std::fs::metadata(dir.path().join("me")).unwrap().uid()
}

#[cfg(unix)]
#[test]
fn a_cache_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    match SandboxBuilder::new().cache_dir(&cache).build() {
        Err(e @ SandboxError::Cache { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("can be written by its group and everyone"),
                "{msg}"
            );
            assert!(msg.contains("chmod 700"), "{msg}");
        }
        Err(other) => panic!("expected a cache error, got {other:?}"),
        Ok(_) => panic!("a 0777 cache directory was used"),
    }
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "nothing cached"
    );
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
