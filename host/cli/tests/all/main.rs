//! End-to-end tests of the `goat` binary: exit codes, what it prints, what
//! it does (or refuses to do) to files on disk, what it records in the
//! store, and what a scripted engine received from it.
//!
//! Every test has its own directory under CARGO_TARGET_TMPDIR holding the
//! workspace and the host state (store, permission database); only the
//! compiled-code cache is shared, since compiling the tools is slow.

#![expect(clippy::unwrap_used, reason = "tests")]

mod acp;
mod acp_undo;
mod acp_wire;
mod atif;
mod attempts;
mod boundary;
mod caps;
mod chat_slash;
mod command;
mod composer;
mod config;
mod containers;
mod context;
mod demo;
mod detect;
mod docs;
mod engine;
mod harbor_docker;
mod hooks;
mod instructions;
mod jsonl;
mod listing;
mod lock;
mod logs;
mod mcp;
mod network;
mod patch;
mod permissions;
mod plugin_grants;
mod plugin_specs;
mod plugins;
mod probe;
pub(crate) mod pty;
mod refusals;
mod run;
mod sampling;
mod screen;
mod sessions;
mod snapshots;
mod toolchains;
mod tools;
mod undo;
mod view;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use goat_testkit::{Recorded, Reply, ScriptedServer, TestCa, qwen_markup};
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
        // The root is the repository the workspace is in, so the
        // `AGENTS.md` files GOAT reads end here, not in the checkout of
        // GOAT the tests run from.
        std::fs::create_dir(root.join(".git")).unwrap();
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
        // Session locks named by the store's identity live here.
        .env("XDG_RUNTIME_DIR", self.root.join("xdg-run"))
        .env("XDG_CONFIG_HOME", self.config_home())
        .env_remove("NO_COLOR")
        // The person's own trust settings stay out of the https tests.
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
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

    /// `goat run --engine URL --model qwen --session ID PROMPT`: a turn
    /// more in an existing session.
    pub(crate) async fn resume(&self, url: &str, session: &str, prompt: &str) -> Output {
        self.run_async(&[
            "run",
            "--engine",
            url,
            "--model",
            "qwen",
            "--session",
            session,
            prompt,
        ])
        .await
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

/// A loopback port that refuses connections for as long as the returned
/// socket lives: bound, never listening. A port merely closed again could
/// be handed to another test's server running at the same time.
pub(crate) fn refusing_port() -> (std::os::fd::OwnedFd, u16) {
    use rustix::net::{AddressFamily, SocketType, ipproto};
    let socket =
        rustix::net::socket(AddressFamily::INET, SocketType::STREAM, Some(ipproto::TCP)).unwrap();
    rustix::net::bind(&socket, &std::net::SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let port = match rustix::net::getsockname(&socket)
        .unwrap()
        .try_into()
        .unwrap()
    {
        std::net::SocketAddr::V4(a) => a.port(),
        std::net::SocketAddr::V6(a) => a.port(),
    };
    (socket, port)
}

/// How many `sleep MARKER` processes run.
pub(crate) fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.starts_with("sleep\0") && cmdline.contains(marker)
        })
        .count()
}

/// A command's stdout and stderr together, for assertion messages.
pub(crate) fn shown(out: &std::process::Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// Whether `tool` is on this machine; says so when a test part is
/// skipped for want of it.
pub(crate) fn have(tool: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped part: {tool} is not installed");
    }
    found
}

/// The unprivileged user the `as_an_unprivileged_user` tests switch to.
const NOBODY: u32 = 65534;

/// A directory owned by nobody (made by the test; CI runs as root) with a
/// workspace, a state directory and a copy of the `goat` binary nobody can
/// reach, for running `goat` as an unprivileged user through `setpriv`.
pub(crate) struct Nobody {
    /// The directory holding it all, under the system's temporary
    /// directory; the test removes it.
    pub(crate) base: PathBuf,
    /// The workspace, also the current directory.
    pub(crate) ws: PathBuf,
    /// The host state: store, caches.
    pub(crate) state: PathBuf,
    bin: PathBuf,
}

impl Nobody {
    /// Makes `$TMPDIR/NAME-PID`; `None` (said) when this does not run as
    /// root with `setpriv` to switch users.
    pub(crate) fn new(name: &str) -> Option<Self> {
        use std::os::unix::fs::PermissionsExt;
        if !rustix::process::geteuid().is_root() || !have("setpriv") {
            eprintln!("skipped: needs root to switch to an unprivileged user");
            return None;
        }
        let base = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let ws = base.join("ws");
        let state = base.join("state");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        let nobody = Self {
            bin: base.join("goat"),
            base,
            ws,
            state,
        };
        for path in [&nobody.base, &nobody.ws, &nobody.state] {
            nobody.chown(path);
        }
        std::fs::set_permissions(&nobody.base, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The binary must be reachable by nobody: copy it.
        std::fs::copy(env!("CARGO_BIN_EXE_goat"), &nobody.bin).unwrap();
        std::fs::set_permissions(&nobody.bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Some(nobody)
    }

    /// Gives `path` to nobody.
    pub(crate) fn chown(&self, path: &Path) {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }

    /// `goat ARGS` as nobody, in the workspace, with a clean environment
    /// and the store in its state directory.
    pub(crate) fn goat(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args(["--clear-groups", "--"])
            .arg(&self.bin);
        // The store's flag before a `--`, after which words are another
        // program's.
        let end = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        cmd.args(&args[..end])
            .arg("--db")
            .arg(self.state.join("goat.db"))
            .args(&args[end..])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.base)
            .env("XDG_DATA_HOME", &self.state)
            .env("GOAT_CACHE_DIR", self.state.join("cache"))
            .current_dir(&self.ws);
        cmd
    }

    /// `goat tools call run_command COMMAND --allow-commands` as nobody,
    /// in the workspace, with a clean environment and `vars` added.
    pub(crate) fn run_command(&self, command: &Value, vars: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args(["--clear-groups", "--"])
            .arg(&self.bin)
            .args(["tools", "call", "run_command"])
            .arg(command.to_string())
            .arg("--workspace")
            .arg(&self.ws)
            .args(["--allow-commands", "--db"])
            .arg(self.state.join("goat.db"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.base)
            .env("XDG_DATA_HOME", &self.state)
            .env("GOAT_CACHE_DIR", self.state.join("cache"));
        for (name, value) in vars {
            cmd.env(name, value);
        }
        cmd.current_dir(&self.ws).output().unwrap()
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
    Reply::text(content)
}

/// The engine makes one structured call; `args` is the JSON text as the
/// model writes it (key order kept).
pub(crate) fn call_reply(id: &str, name: &str, args: &str) -> Reply {
    Reply::builder().tool_call_with_id(id, name, args).build()
}

/// ADR-0065's case: Qwen3-Coder markup as plain text, with a closing
/// envelope and no opening one, naming an offered tool.
pub(crate) fn malformed_write() -> Reply {
    Reply::text(&format!(
        "I'll create the file.\n{}",
        qwen_markup("write_file", &[("path", "hello.txt"), ("content", "hello")])
    ))
}

/// One `goat run` against a scripted engine, set up in one expression: a
/// fresh [`Env`] (so the same isolation as every other test), the engine's
/// answers, and the flags between the engine settings and the prompt.
///
/// ```ignore
/// let run = GoatRun::builder()
///     .replies([Reply::tool_call("read_file", json!({"path": "a.txt"})), Reply::text("Done.")])
///     .json()
///     .run("Read a.txt")
///     .await;
/// assert_eq!(run.summary()["rounds"], 2);
/// ```
pub(crate) struct GoatRunBuilder {
    env: Env,
    replies: Vec<Reply>,
    model: String,
    args: Vec<String>,
    vars: Vec<(String, String)>,
    tls: Option<TestCa>,
    routes: Vec<(String, Reply)>,
}

impl GoatRunBuilder {
    /// The engine's answer to `GET path` (`/props`, `/v1/models`), every
    /// time; unrouted, those are 404.
    pub(crate) fn route(mut self, path: &str, reply: Reply) -> Self {
        self.routes.push((path.to_owned(), reply));
        self
    }

    /// The engine's answers, one per request, in order.
    pub(crate) fn replies(mut self, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.replies.extend(replies);
        self
    }

    /// The model named with `--model` (`qwen` unless changed).
    pub(crate) fn model(mut self, model: &str) -> Self {
        model.clone_into(&mut self.model);
        self
    }

    /// A flag after `--engine URL --model M`, before the prompt.
    pub(crate) fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// `--allow-writes`.
    pub(crate) fn allow_writes(self) -> Self {
        self.arg("--allow-writes")
    }

    /// `--json`: a summary on stdout, read with [`GoatRun::summary`].
    pub(crate) fn json(self) -> Self {
        self.arg("--json")
    }

    /// This run's config file.
    pub(crate) fn config(self, text: &str) -> Self {
        self.env.write_config(text);
        self
    }

    /// An environment variable for this run only, on top of the isolation.
    pub(crate) fn var(mut self, name: &str, value: &str) -> Self {
        self.vars.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The world the run will happen in, for files a flag names.
    pub(crate) fn env(&self) -> &Env {
        &self.env
    }

    /// Serve the engine over https with a certificate `ca` signed; the
    /// run is told nothing of `ca` unless the test says so.
    pub(crate) fn tls(mut self, ca: TestCa) -> Self {
        self.tls = Some(ca);
        self
    }

    /// Starts the scripted engine and runs `goat run ... prompt` to the
    /// end, off the async threads so the engine can answer it.
    pub(crate) async fn run(self, prompt: &str) -> GoatRun {
        let server = match &self.tls {
            Some(ca) => ScriptedServer::start_tls(self.replies, ca).await,
            None => ScriptedServer::start(self.replies).await,
        };
        for (path, reply) in self.routes {
            server.route(&path, reply);
        }
        let mut cmd = self.env.cmd();
        cmd.envs(self.vars)
            .args([
                "run",
                "--engine",
                &server.base_url(),
                "--model",
                &self.model,
            ])
            .args(self.args)
            .arg(prompt);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        GoatRun {
            env: self.env,
            server,
            out,
        }
    }
}

/// A finished `goat run`: what it printed, what the engine received, and
/// the world it ran in (for later commands on the same store).
pub(crate) struct GoatRun {
    pub(crate) env: Env,
    pub(crate) server: ScriptedServer,
    pub(crate) out: Output,
}

impl GoatRun {
    /// A run in a fresh [`Env`], model `qwen`, no flags, no answers yet.
    pub(crate) fn builder() -> GoatRunBuilder {
        Self::builder_in(Env::new())
    }

    /// [`builder`](Self::builder) in an existing `env` (a later run on the
    /// same store and workspace).
    pub(crate) fn builder_in(env: Env) -> GoatRunBuilder {
        GoatRunBuilder {
            env,
            replies: Vec::new(),
            model: "qwen".to_owned(),
            args: Vec::new(),
            vars: Vec::new(),
            tls: None,
            routes: Vec::new(),
        }
    }

    /// The exit code.
    pub(crate) fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    pub(crate) fn stdout(&self) -> String {
        text(&self.out.stdout)
    }

    pub(crate) fn stderr(&self) -> String {
        text(&self.out.stderr)
    }

    /// The `--json` summary.
    pub(crate) fn summary(&self) -> Value {
        json_out(&self.out)
    }

    /// Every request the engine received.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }

    /// The messages of request `i` as JSON text, for `contains` checks.
    pub(crate) fn request_text(&self, i: usize) -> String {
        self.requests()[i].body["messages"].to_string()
    }

    /// A file in the workspace.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.env.ws.join(rel)).unwrap()
    }

    /// Whether `rel` exists in the workspace.
    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.env.ws.join(rel).exists()
    }

    /// The store's sessions, as `goat sessions list --json` shows them.
    pub(crate) fn sessions(&self) -> Value {
        json_out(&self.env.run(&["sessions", "list", "--json"]))
    }
}

/// A component from plugins/dist.
pub(crate) fn dist(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/dist")
        .join(rel)
}
