//! End-to-end tests of the `goat` binary: exit codes, what it prints, what
//! it does (or refuses to do) to files on disk, what it records in the
//! store, and what a scripted engine received from it.
//!
//! Every test has its own directory under CARGO_TARGET_TMPDIR holding the
//! workspace and the host state (store, permission database); only the
//! compiled-code cache is shared, since compiling the tools is slow.

#![expect(clippy::unwrap_used, reason = "tests")]

mod config;
mod demo;
mod detect;
mod permissions;
mod plugins;
mod probe;
mod pty;
mod run;
mod sessions;
mod snapshots;
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use goat_testkit::{Reply, ev_content, ev_done, ev_finish, ev_tool_call};
use serde_json::Value;

/// One test's world: a workspace, and host state beside it.
pub(crate) struct Env {
    _dir: tempfile::TempDir,
    /// The canonical root of it all.
    pub(crate) root: PathBuf,
    /// The workspace, also the current directory of every command.
    pub(crate) ws: PathBuf,
    /// The store, through GOAT_DB.
    pub(crate) db: PathBuf,
}

impl Env {
    /// A fresh workspace and an empty place for host state.
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        Self {
            _dir: dir,
            db: root.join("state").join("goat.db"),
            ws,
            root,
        }
    }

    /// `goat`, isolated from the person running the tests: their store,
    /// engine settings and data directory are never used.
    pub(crate) fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_goat"));
        self.isolate(&mut cmd);
        cmd
    }

    /// Points `cmd` at this test's state and nothing of the person's.
    pub(crate) fn isolate(&self, cmd: &mut Command) {
        // Every setting's variable starts with GOAT_ (the settings table's
        // tests check), so clearing them all keeps a new setting out too.
        for (name, _) in
            std::env::vars_os().filter(|(n, _)| n.to_string_lossy().starts_with("GOAT_"))
        {
            cmd.env_remove(name);
        }
        cmd.env(
            "GOAT_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cli-cache"),
        )
        .env("GOAT_DB", &self.db)
        .env("XDG_DATA_HOME", self.root.join("xdg-data"))
        .env("XDG_CONFIG_HOME", self.config_home())
        .env_remove("NO_COLOR")
        .current_dir(&self.ws)
        .stdin(Stdio::null());
    }

    /// This test's config directory (XDG_CONFIG_HOME); empty unless a test
    /// writes `goat/config.toml` in it.
    pub(crate) fn config_home(&self) -> PathBuf {
        self.root.join("xdg-config")
    }

    /// Writes this test's config file.
    pub(crate) fn write_config(&self, text: &str) -> PathBuf {
        let path = self.config_home().join("goat").join("config.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs `goat args` to the end.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// Runs `goat` off the async threads, so a scripted engine on this
    /// test's runtime can answer it.
    pub(crate) async fn run_async(&self, args: &[&str]) -> Output {
        let mut cmd = self.cmd();
        cmd.args(args);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap()
    }

    /// The default permission database, beside the store.
    pub(crate) fn permissions_db(&self) -> PathBuf {
        self.db.with_file_name("permissions.db")
    }

    /// The workspace as a command-line argument.
    pub(crate) fn ws_str(&self) -> &str {
        self.ws.to_str().unwrap()
    }
}

/// Output bytes as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Stdout as JSON, with both streams shown if it is not.
pub(crate) fn json_out(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

/// The engine answers with text and stops.
pub(crate) fn content_reply(content: &str) -> Reply {
    Reply::sse([ev_content(content), ev_finish("stop"), ev_done()].concat())
}

/// The engine makes one structured call; `args` is the JSON text as the
/// model writes it (key order kept).
pub(crate) fn call_reply(id: &str, name: &str, args: &str) -> Reply {
    Reply::sse(
        [
            ev_tool_call(0, Some(id), Some(name), Some(args)),
            ev_finish("tool_calls"),
            ev_done(),
        ]
        .concat(),
    )
}

/// ADR-0065's case: Qwen3-Coder markup as plain text, with a closing
/// envelope and no opening one, naming an offered tool.
pub(crate) fn malformed_write() -> Reply {
    content_reply(
        "I'll create the file.\n<function=write_file>\n<parameter=path>\nhello.txt\n</parameter>\n\
         <parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>",
    )
}
