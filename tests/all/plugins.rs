//! Plugins in the real sandbox: the WASI world each gets, virtualised,
//! what the person grants one (environment keys, a proxy for `wasi:http`,
//! limits), what no plugin is offered (interfaces outside WASI), the refusal of
//! anything that is not a component, the host's limits, the frozen clock,
//! and a read-only preopen that a plugin declaring `read` cannot get past.

use std::time::{Duration, Instant};

use goat_sandbox::{
    Access, Grants, Limits, PLUGIN_IMPORTS, SandboxBuilder, SandboxError, ToolFailure, ToolKind,
};
use serde_json::json;

use crate::support::*;

fn plugin_sandbox(limits: Limits) -> (goat_sandbox::Sandbox, goat_sandbox::Tool) {
    let sandbox = SandboxBuilder::new()
        .cache_dir(cache_dir())
        .limits(limits)
        .build()
        .unwrap();
    let tool = sandbox.load_plugin("evil", HOSTILE_PLUGIN_WASM).unwrap();
    (sandbox, tool)
}

#[test]
fn a_plugin_importing_what_no_plugin_is_offered_is_refused_naming_every_import() {
    let sandbox = sandbox();
    match sandbox.load_plugin("wants_more", WANTS_MORE_WASM) {
        Err(SandboxError::ForbiddenImport {
            name,
            imports,
            allowed,
        }) => {
            assert_eq!(name, "wants_more");
            assert_eq!(
                imports,
                ["evil:host/secrets@0.1.0", "evil:host/launch@0.1.0"]
            );
            assert_eq!(allowed, PLUGIN_IMPORTS.join(", "));
        }
        other => panic!("expected ForbiddenImport, got {other:?}"),
    }
}

/// The rest of WASI 0.2 is a plugin's, each interface giving it nothing
/// (ADR-0096): stdio captured, an empty environment, sockets refused, an
/// exit a tool failure.
#[test]
fn a_plugin_gets_the_wasi_world_and_nothing_from_it() {
    let sandbox = sandbox();
    let ws = Workspace::new();
    let none = ws.pen(Access::None);
    // The environment and the arguments are empty.
    let env = sandbox.load_plugin("env", WANTS_ENV_WASM).unwrap();
    assert_eq!(
        sandbox.call(&env, "{}", &none).unwrap(),
        Ok("env=[] args=[]".to_owned())
    );
    // An exit ends the call as a tool failure, and the host goes on.
    match sandbox.call(&env, r#"{"exit": 3}"#, &none).unwrap() {
        Err(ToolFailure::Crashed { message }) => {
            assert!(message.contains("exited (code 3)"), "{message}")
        }
        other => panic!("expected Crashed, got {other:?}"),
    }
    assert_eq!(
        sandbox.call(&env, "{}", &none).unwrap(),
        Ok("env=[] args=[]".to_owned())
    );
    // A socket cannot even be made.
    let socket = sandbox.load_plugin("socket", WANTS_SOCKET_WASM).unwrap();
    assert_eq!(
        sandbox.call(&socket, "{}", &none).unwrap(),
        Ok("false".to_owned())
    );
    // Printing is captured and capped: 100 MB stops at the host's limit.
    let hostile = sandbox.load_plugin("hostile", HOSTILE_WASM).unwrap();
    let started = Instant::now();
    match sandbox
        .call(
            &hostile,
            r#"{"action": "print", "bytes": 100000000}"#,
            &none,
        )
        .unwrap()
    {
        Err(ToolFailure::OutputExceeded { stream, .. }) => assert_eq!(stream, "stdout"),
        other => panic!("expected OutputExceeded, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Granted keys are the only environment a plugin sees, with GOAT's
/// values at the call; a key GOAT has no value for is absent; a built-in
/// cannot be granted anything, and a grant past its ceiling is refused.
#[test]
fn a_plugin_sees_only_the_environment_keys_it_was_granted() {
    // PATH is set in any test run; HOME and the rest are not granted.
    let path = std::env::var("PATH").unwrap();
    let sandbox = sandbox();
    let ws = Workspace::new();
    let env = sandbox
        .load_plugin("env", WANTS_ENV_WASM)
        .unwrap()
        .with_grants(Grants {
            env: vec!["PATH".into(), "GOAT_TEST_NEVER_SET_KEY".into()],
            ..Grants::default()
        })
        .unwrap();
    assert_eq!(
        sandbox.call(&env, "{}", &ws.pen(Access::None)).unwrap(),
        Ok(format!(r#"env=[("PATH", {path:?})] args=[]"#))
    );
    let too_much = Grants {
        memory_mib: Some(4096),
        ..Grants::default()
    };
    assert!(
        sandbox
            .load_plugin("env", WANTS_ENV_WASM)
            .unwrap()
            .with_grants(too_much)
            .is_err()
    );
}

/// A plugin's `wasi:http` request on a call given no egress proxy (a
/// plugin granted no host) is refused before any connection: a server
/// listening on this machine never sees it.
#[test]
fn a_plugin_granted_no_host_has_every_request_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/secret", listener.local_addr().unwrap());
    let sandbox = sandbox();
    let ws = Workspace::new();
    let http = sandbox.load_plugin("http", WANTS_HTTP_WASM).unwrap();
    let said = sandbox
        .call(
            &http,
            &json!({ "url": url }).to_string(),
            &ws.pen(Access::None),
        )
        .unwrap()
        .unwrap();
    assert!(said.contains("HttpRequestDenied"), "{said}");
    assert!(listener.accept().is_err(), "nothing connected");
}

/// A plugin waiting inside the host for what never comes (a clock
/// pollable never ready, a request body never sent) is not reached by
/// epoch interruption; the call's deadline ends the wait, and the call is
/// a timeout. (Without it the call, and the session, would wait forever:
/// the test says so after a minute instead of hanging.)
#[test]
fn a_plugin_waiting_inside_the_host_is_stopped_at_its_deadline() {
    for args in [r#"{"sleep": true}"#, r#"{"stall": true}"#] {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let sandbox = SandboxBuilder::new()
                .cache_dir(cache_dir())
                .limits(Limits {
                    timeout: Duration::from_secs(1),
                    ..Limits::default()
                })
                .build()
                .unwrap();
            let http = sandbox.load_plugin("http", WANTS_HTTP_WASM).unwrap();
            let ws = Workspace::new();
            let _ = tx.send(sandbox.call(&http, args, &ws.pen(Access::None)).unwrap());
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Err(ToolFailure::Timeout { limit })) => assert_eq!(limit, Duration::from_secs(1)),
            Ok(other) => panic!("{args}: expected a timeout, got {other:?}"),
            Err(_) => panic!("{args}: the call was still waiting after a minute"),
        }
    }
}

#[test]
fn a_refused_component_is_never_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    assert!(sandbox.load_plugin("more", WANTS_MORE_WASM).is_err());
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
    let wc = sandbox.load_plugin("wc", WC_WASM).unwrap();
    let cached: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(cached.len(), 1);
    assert!(cached[0].starts_with(wc.sha256()), "{cached:?}");
}

/// `wasm` with a custom section of `size` bytes appended: the same
/// component, as large as a toolchain's output (componentize-py's is
/// 18 MB).
fn padded(wasm: &[u8], size: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = u8::try_from(n & 0x7f).unwrap();
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"padding";
    let mut payload = Vec::with_capacity(size + 16);
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name);
    payload.resize(payload.len() + size, 0);
    let mut out = wasm.to_vec();
    out.push(0);
    leb(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}

#[test]
fn a_fifteen_megabyte_component_with_forbidden_imports_is_refused_uncompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let big = padded(WANTS_MORE_WASM, 15 * 1024 * 1024);
    match sandbox.load_plugin("big", &big) {
        Err(SandboxError::ForbiddenImport { imports, .. }) => assert_eq!(
            imports,
            ["evil:host/secrets@0.1.0", "evil:host/launch@0.1.0"]
        ),
        other => panic!("expected ForbiddenImport, got {other:?}"),
    }
    // Refused before compiling: nothing was compiled into the cache.
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
    // The padding itself is no reason: the same padding on an allowed
    // component loads.
    sandbox.load_plugin("wc", &padded(WC_WASM, 1024)).unwrap();
}

#[test]
fn precompiled_native_code_is_refused_even_goats_own() {
    // A real wasmtime artifact, compiled by this very engine configuration.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    sandbox.load_plugin("wc", WC_WASM).unwrap();
    let entry = std::fs::read_dir(&cache).unwrap().next().unwrap().unwrap();
    let cwasm = std::fs::read(entry.path()).unwrap();
    match sandbox.load_plugin("native", &cwasm) {
        Err(SandboxError::NotATool { reason, .. }) => {
            assert!(reason.contains("precompiled"), "{reason}")
        }
        other => panic!("expected NotATool, got {other:?}"),
    }
    match sandbox.load_plugin("core", b"\0asm\x01\0\0\0") {
        Err(SandboxError::NotATool { reason, .. }) => {
            assert!(reason.contains("core WebAssembly module"), "{reason}")
        }
        other => panic!("expected NotATool, got {other:?}"),
    }
}

#[test]
fn a_plugin_is_exposed_under_its_namespaced_name() {
    let wc = sandbox().load_plugin("wc", WC_WASM).unwrap();
    assert_eq!(wc.kind(), ToolKind::Plugin);
    assert_eq!(wc.spec().name, "count");
    let exposed = wc.clone().exposed_as("wc__count").unwrap();
    assert_eq!(exposed.spec().name, "wc__count");
    assert_eq!(exposed.declared_name(), "count");
    assert_eq!(exposed.sha256(), wc.sha256());
    for bad in ["wc.count", "Wc__count", &"x".repeat(65)] {
        assert!(wc.clone().exposed_as(bad).is_err(), "{bad}");
    }
    // It runs as itself under the new name.
    let ws = Workspace::new();
    ws.write("a.txt", "one two\nthree\n");
    let out = sandbox()
        .call(&exposed, r#"{"path": "a.txt"}"#, &ws.pen(Access::Read))
        .unwrap()
        .unwrap();
    assert_eq!(
        out,
        "       2        3       14 a.txt\n       2        3       14 total (1 file)\n"
    );
}

#[test]
fn a_read_plugin_cannot_write_even_when_the_caller_grants_write() {
    let ws = Workspace::new();
    ws.write("keep.txt", "original\n");
    let (sandbox, evil) = plugin_sandbox(Limits::default());
    let outside_before = ws.outside_snapshot();
    for args in [
        json!({"action": "write", "path": "keep.txt"}),
        json!({"action": "write", "path": "new.txt"}),
        json!({"action": "write-through-read", "path": "keep.txt"}),
        json!({"action": "mkdir", "path": "d"}),
        json!({"action": "unlink", "path": "keep.txt"}),
        json!({"action": "rename", "path": "keep.txt", "to": "moved.txt"}),
        json!({"action": "symlink", "path": "link", "to": "keep.txt"}),
        json!({"action": "write", "path": "../outside/secret.txt"}),
    ] {
        let result = sandbox
            .call(&evil, &args.to_string(), &ws.pen(Access::ReadWrite))
            .unwrap();
        match result {
            Err(ToolFailure::Tool(goat_sandbox::ToolError::Io(m))) => {
                assert!(m.starts_with("wasi error: "), "{args}: {m}")
            }
            other => panic!("{args}: expected a refused write, got {other:?}"),
        }
    }
    assert_eq!(
        std::fs::read(ws.root.join("keep.txt")).unwrap(),
        b"original\n"
    );
    for gone in ["new.txt", "d", "moved.txt", "link"] {
        assert!(!ws.exists(gone), "{gone}");
    }
    assert_eq!(ws.outside_snapshot(), outside_before);
}

#[test]
fn a_plugin_reads_a_frozen_clock() {
    let (sandbox, evil) = plugin_sandbox(Limits::default());
    let ws = Workspace::new();
    let out = sandbox
        .call(&evil, r#"{"action": "clock"}"#, &ws.pen(Access::Read))
        .unwrap();
    assert_eq!(out, Ok("0 0".to_owned()));
    // Granted the wall clock, it reads the time (past 2026-01-01).
    let granted = evil
        .clone()
        .with_grants(Grants {
            wall_clock: true,
            ..Grants::default()
        })
        .unwrap();
    let out = sandbox
        .call(&granted, r#"{"action": "clock"}"#, &ws.pen(Access::Read))
        .unwrap()
        .unwrap();
    let seconds: u64 = out.split(' ').next().unwrap().parse().unwrap();
    assert!(seconds > 1_767_225_600, "{out}");
}

fn tight() -> Limits {
    Limits {
        timeout: Duration::from_millis(300),
        memory_bytes: 64 << 20,
        ..Limits::default()
    }
}

#[test]
fn a_plugin_that_loops_forever_hits_the_hosts_timeout() {
    let (sandbox, evil) = plugin_sandbox(tight());
    let ws = Workspace::new();
    let started = Instant::now();
    let result = sandbox
        .call(&evil, r#"{"action": "loop"}"#, &ws.pen(Access::Read))
        .unwrap();
    assert_eq!(
        result,
        Err(ToolFailure::Timeout {
            limit: Duration::from_millis(300)
        })
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The sandbox is healthy afterwards.
    ws.write("a.txt", "a\n");
    let after = sandbox
        .call(
            &evil,
            r#"{"action": "read", "path": "a.txt"}"#,
            &ws.pen(Access::Read),
        )
        .unwrap();
    assert_eq!(after, Ok("a\n".to_owned()));
}

#[test]
fn a_plugin_cannot_allocate_past_the_hosts_memory_limit() {
    let (sandbox, evil) = plugin_sandbox(tight());
    let ws = Workspace::new();
    for bytes in [1u64 << 30, 80 << 20] {
        let result = sandbox
            .call(
                &evil,
                &json!({"action": "alloc", "bytes": bytes}).to_string(),
                &ws.pen(Access::Read),
            )
            .unwrap();
        assert_eq!(
            result,
            Err(ToolFailure::MemoryExceeded {
                limit_bytes: 64 << 20
            }),
            "{bytes}"
        );
    }
    let fine = sandbox
        .call(
            &evil,
            &json!({"action": "alloc", "bytes": 1 << 20}).to_string(),
            &ws.pen(Access::Read),
        )
        .unwrap();
    assert_eq!(fine, Ok(format!("allocated {}", 1 << 20)));
}

#[test]
fn wc_skips_an_undecodable_name_and_counts_its_siblings() {
    use std::os::unix::ffi::OsStrExt;
    let wc = sandbox().load_plugin("wc", WC_WASM).unwrap();
    let ws = Workspace::new();
    ws.write("a.txt", "needle\n").write("z.txt", "needle\n");
    std::fs::write(
        ws.root.join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")),
        "needle\n",
    )
    .unwrap();
    let out = sandbox()
        .call(&wc, "{}", &ws.pen(Access::Read))
        .unwrap()
        .unwrap();
    assert_eq!(
        out,
        "       1        1        7 a.txt\n       1        1        7 z.txt\n\
         \x20      2        2       14 total (2 files)\n\
         [1 entry skipped: its name is not valid UTF-8]\n"
    );
}

/// A plugin whose spec was recorded when it was added is offered without
/// compiling it: a fresh cache stays empty until its first call, which
/// compiles it, checks it and caches it.
#[test]
fn a_plugin_with_its_recorded_spec_is_compiled_on_its_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let spec = sandbox.load_plugin("wc", WC_WASM).unwrap().spec().clone();
    std::fs::remove_dir_all(&cache).unwrap();

    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let wc = sandbox
        .load_plugin_declared("wc", WC_WASM.to_vec(), spec.clone())
        .unwrap();
    assert_eq!(wc.spec(), &spec);
    assert_eq!(wc.kind(), ToolKind::Plugin);
    assert_eq!(wc.code_origin(), None);
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "not compiled"
    );
    let ws = Workspace::new();
    ws.write("a.txt", "one two\n");
    let out = sandbox.call(&wc, "{}", &ws.pen(Access::Read)).unwrap();
    assert!(out.unwrap().contains("a.txt"));
    assert_eq!(wc.code_origin(), Some(goat_sandbox::CodeOrigin::Compiled));
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
}

/// A recorded spec that is not what the component declares changes what is
/// offered, never what runs: the first call is refused. Its bytes are
/// checked as `load_plugin` checks them, before anything is offered.
#[test]
fn a_recorded_spec_a_plugin_does_not_declare_refuses_its_first_call() {
    let sandbox = sandbox();
    let mut spec = sandbox.load_plugin("wc", WC_WASM).unwrap().spec().clone();
    spec.access = Access::ReadWrite;
    let wc = sandbox
        .load_plugin_declared("wc", WC_WASM.to_vec(), spec.clone())
        .unwrap();
    let ws = Workspace::new();
    match sandbox.call(&wc, "{}", &ws.pen(Access::ReadWrite)) {
        Err(SandboxError::NotATool { reason, .. }) => {
            assert!(reason.contains("not the one recorded"), "{reason}")
        }
        other => panic!("expected NotATool, got {other:?}"),
    }
    match sandbox.load_plugin_declared("more", WANTS_MORE_WASM.to_vec(), spec.clone()) {
        Err(SandboxError::ForbiddenImport { .. }) => {}
        other => panic!("expected ForbiddenImport, got {other:?}"),
    }
    match sandbox.load_plugin_declared("native", b"\x7fELF\x02\x01\x01\0".to_vec(), spec) {
        Err(SandboxError::NotATool { reason, .. }) => {
            assert!(reason.contains("native code"), "{reason}")
        }
        other => panic!("expected NotATool, got {other:?}"),
    }
}
