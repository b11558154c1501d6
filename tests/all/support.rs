//! Test support: a shared sandbox with the Pen tools loaded, and a
//! disposable workspace with a sibling "outside" directory that escape
//! attempts aim at.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use goat_sandbox::{
    Access, CallResult, Limits, Pen, Sandbox, SandboxBuilder, Tool, ToolError, ToolFailure,
};
use serde_json::Value;

/// The hostile test guest (declares read access), built by plugins/build.sh
/// like the Pen tools.
pub const HOSTILE_WASM: &[u8] = include_bytes!("../../plugins/dist/testing/hostile.wasm");

/// The same guest declaring read-write access.
pub const HOSTILE_RW_WASM: &[u8] = include_bytes!("../../plugins/dist/testing/hostile_rw.wasm");

/// A guest importing `wasi:cli/environment`.
pub const WANTS_ENV_WASM: &[u8] = include_bytes!("../../plugins/dist/testing/wants_env.wasm");

/// A guest importing `wasi:sockets`.
pub const WANTS_SOCKET_WASM: &[u8] = include_bytes!("../../plugins/dist/testing/wants_socket.wasm");
/// Sends a `wasi:http` GET to the URL it is given.
pub const WANTS_HTTP_WASM: &[u8] = include_bytes!("../../plugins/dist/testing/wants_http.wasm");
/// Imports two interfaces outside WASI, which no plugin is offered.
pub const WANTS_MORE_WASM: &[u8] = include_bytes!("../../plugins/dist/testing/wants_more.wasm");

/// A compiled-code cache shared by every test run, outside any workspace.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cache")
}

struct Shared {
    sandbox: Sandbox,
    tools: HashMap<String, Tool>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let sandbox = SandboxBuilder::new()
            .cache_dir(cache_dir())
            .build()
            .unwrap();
        let mut tools: HashMap<String, Tool> = sandbox
            .load_pen_tools()
            .unwrap()
            .into_iter()
            .map(|t| (t.spec().name.clone(), t))
            .collect();
        for (name, wasm) in [("hostile", HOSTILE_WASM), ("hostile_rw", HOSTILE_RW_WASM)] {
            tools.insert(name.to_owned(), sandbox.load(name, wasm).unwrap());
        }
        Shared { sandbox, tools }
    })
}

/// The process-wide sandbox with default limits.
pub fn sandbox() -> &'static Sandbox {
    &shared().sandbox
}

/// A loaded tool by name (the eight Pen tools, `hostile` and `hostile_rw`).
pub fn tool(name: &str) -> &'static Tool {
    shared()
        .tools
        .get(name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// A sandbox with `limits`, and `wasm` loaded in it.
pub fn sandbox_with(limits: Limits, wasm: &[u8]) -> (Sandbox, Tool) {
    let sandbox = SandboxBuilder::new()
        .cache_dir(cache_dir())
        .limits(limits)
        .build()
        .unwrap();
    let tool = sandbox.load("test guest", wasm).unwrap();
    (sandbox, tool)
}

/// A temporary directory holding `ws/` (the workspace) and `outside/`
/// (a sibling the tools must never reach), with `outside/secret.txt`.
pub struct Workspace {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
}

pub const SECRET: &str = "outside secret\n";

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        Self {
            _dir: dir,
            root,
            outside,
        }
    }

    /// Writes `rel` inside the workspace, creating parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self
    }

    /// Reads `rel` inside the workspace.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    /// Whether `rel` exists inside the workspace (without following a final symlink).
    pub fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.root.join(rel)).is_ok()
    }

    /// The outside directory's entries and their contents, to compare
    /// before and after an escape attempt.
    pub fn outside_snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut entries: Vec<(String, Vec<u8>)> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let data = std::fs::read(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), data)
            })
            .collect();
        entries.sort();
        entries
    }

    pub fn pen(&self, access: Access) -> Pen {
        Pen::new(&self.root, access).unwrap()
    }

    /// Calls `name` with `args` through the shared sandbox.
    pub fn call(&self, name: &str, args: Value, access: Access) -> CallResult {
        sandbox()
            .call(tool(name), &args.to_string(), &self.pen(access))
            .unwrap()
    }

    /// Calls a tool with read access.
    pub fn read_call(&self, name: &str, args: Value) -> CallResult {
        self.call(name, args, Access::Read)
    }

    /// Calls a tool with read-write access.
    pub fn write_call(&self, name: &str, args: Value) -> CallResult {
        self.call(name, args, Access::ReadWrite)
    }
}

/// The text of a successful call, or a panic naming the failure.
#[track_caller]
pub fn ok(result: CallResult) -> String {
    match result {
        Ok(text) => text,
        Err(e) => panic!("expected success, got {e:?}"),
    }
}

/// The tool error of a failed call, or a panic naming what happened.
#[track_caller]
pub fn tool_err(result: CallResult) -> ToolError {
    match result {
        Err(ToolFailure::Tool(e)) => e,
        other => panic!("expected a tool error, got {other:?}"),
    }
}

/// The hostile guest shaped as a plugin: declares read access, imports only
/// what plugins may.
pub const HOSTILE_PLUGIN_WASM: &[u8] =
    include_bytes!("../../plugins/dist/testing/hostile_plugin.wasm");

/// The example plugin, `wc` (tool `count`).
pub const WC_WASM: &[u8] = include_bytes!("../../plugins/dist/examples/wc.wasm");
