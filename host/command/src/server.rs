//! A long-lived contained process: an MCP server GOAT talks to over its
//! stdin and stdout for a whole session (ADR-0086).
//!
//! It gets the command's containment, built the same way ([`crate::run`]):
//! a view with namespaces of its own (mount, PID, user, network), a scratch
//! home and `/tmp`, the system and toolchain directories read-only, what a
//! permission rule hides covered, Landlock and seccomp on top, every
//! capability dropped, a pids cgroup where one can be made. Two things
//! differ, because it lives across calls:
//!
//! - **The workspace is bound, not overlaid**: read-only, or read-write for
//!   a server added with `--writes`. An overlay's changes land at the end
//!   of one command; a server has no end per call, so what it writes is
//!   found by a [`WorkspaceWatch`] taken around each call, recorded and
//!   undoable like a Landlock-only command's.
//! - **A view or nothing**: where no view can be made, no server starts
//!   (Landlock alone cannot hide the home directory's files from a process
//!   that lives this long, nor keep its `/tmp` apart).

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};

use rustix::process::{Pid, Signal};

use crate::child::{kill_group, wait_group_gone};
use crate::fs::WorkspaceRules;
use crate::launch::{Launched, ViewLaunch};
use crate::layer::{ChangeSet, Layer};
use crate::net;
use crate::pids::PidsGroup;
use crate::run::{CommandError, Containment, Unsupported};
use crate::special::special_paths;
use crate::view::WorkspaceMount;

/// What to start, as the person added it.
#[derive(Clone, Debug)]
pub struct ServerSpec<'a> {
    /// The program: a path, or a name looked up in `PATH`.
    pub program: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// The variables it gets besides `PATH`, `HOME`, `TMPDIR` and `LANG`,
    /// with their values (the person's, read when it starts).
    pub env: &'a [(String, OsString)],
    /// Whether it may write the workspace.
    pub writable: bool,
    /// The proxy serving it, for [`Network::Proxied`] (required then);
    /// it serves for as long as the server lives.
    pub proxy: Option<&'a dyn crate::ProxyLink>,
}

/// A running server. Dropping it kills it and everything it started, and
/// removes its scratch directories.
pub struct Server {
    child: Child,
    group: Pid,
    pids: Option<(PidsGroup, OwnedFd)>,
    /// Its root, `/tmp` and caches; removed once every process is gone.
    _layer: Layer,
    /// Its pipes, until taken.
    pub stdin: Option<ChildStdin>,
    /// Its stdout, until taken.
    pub stdout: Option<ChildStdout>,
    /// Its stderr, until taken.
    pub stderr: Option<ChildStderr>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The process id GOAT started (the view's first process).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (and how), without waiting.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Stops it and every process it started (`SIGSTOP` to its group,
    /// which none can leave): between calls a server does nothing, so
    /// nothing it does goes unrecorded.
    pub fn pause(&self) {
        let _ = rustix::process::kill_process_group(self.group, Signal::STOP);
    }

    /// Lets it run again, for a call.
    pub fn resume(&self) {
        let _ = rustix::process::kill_process_group(self.group, Signal::CONT);
    }

    /// Kills it and every process it started, and waits for them.
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        kill_group(self.group, self.pids.as_ref().map(|p| &p.0));
        let _ = self.child.wait();
        wait_group_gone(self.group);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether a server can be contained here: it needs a view, whatever
/// mode commands are held in (a server is always started in one). Its
/// workspace is bound, not overlaid, so the view needs no change layer on
/// the workspace's mount: inside an attempt (whose workspace is itself an
/// overlay, where commands are held by Landlock) a server still starts.
pub fn server_support(_containment: &Containment) -> Result<(), Unsupported> {
    match crate::support::resolve_mode(crate::ContainmentMode::Namespace) {
        Ok(_) => Ok(()),
        Err(Unsupported(why)) => Err(Unsupported(format!(
            "an MCP server runs only in a view (a user namespace or root), and none can be made \
             here: {why}"
        ))),
    }
}

/// Starts `spec` contained as `containment` says, with the permission
/// `rules` applied to the workspace.
///
/// # Security
///
/// Fails closed as [`crate::run`] does: where any part of the containment
/// cannot be prepared or applied, nothing starts. `containment.network`
/// may be closed or open; a proxied network is refused here (the caller
/// says so before).
pub fn start_server(
    containment: &Containment,
    rules: &dyn WorkspaceRules,
    spec: &ServerSpec<'_>,
) -> Result<Server, CommandError> {
    server_support(containment)?;
    let mut launch = ViewLaunch::prepare(
        containment,
        rules,
        &Launched {
            what: "server",
            cwd: &containment.workspace,
            mount: WorkspaceMount::Bind {
                writable: spec.writable,
            },
            proxy: spec.proxy,
        },
    )?;
    // The program as added (absolute); a bare name is looked up in the
    // absolute directories of PATH only (see `environment`).
    let mut command = Command::new(spec.program);
    command
        .args(spec.args)
        .current_dir(&containment.workspace)
        .env_clear()
        .envs(environment(containment, spec))
        .envs(if launch.proxied() {
            net::proxy_env(net::VIEW_PROXY_PORT)
        } else {
            Vec::new()
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    launch.install(&mut command)?;
    let mut child = command
        .spawn()
        .map_err(|e| launch.refused(CommandError::Spawn(e)))?;
    let group = Pid::from_raw(child.id().cast_signed())
        .ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::InvalidData)))?;
    // Once spawned (the listener is sent before the server can start),
    // the proxy serves it; if it cannot, the server is killed unserved.
    if let Err(e) = launch.take_proxy().serve() {
        kill_group(group, launch.pids.as_ref().map(|p| &p.0));
        let _ = child.wait();
        return Err(CommandError::Containment(format!(
            "the server was stopped as it started: its proxy: {e}"
        )));
    }
    Ok(Server {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        group,
        pids: launch.pids,
        _layer: launch.layer,
    })
}

/// The server's environment: `PATH` (to find its interpreter), `LANG`,
/// `HOME` (the view's empty scratch home), `TMPDIR` (its private `/tmp`),
/// and the variables it was added with; nothing else of GOAT's.
fn environment(containment: &Containment, spec: &ServerSpec<'_>) -> Vec<(OsString, OsString)> {
    // Only absolute directories: a relative one would be looked up in the
    // workspace, where the repository could put a program of its own.
    let path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|dir| dir.is_absolute())
                .collect::<Vec<_>>()
        })
        .and_then(|dirs| std::env::join_paths(dirs).ok())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let mut env: Vec<(OsString, OsString)> =
        vec![("PATH".into(), path), ("TMPDIR".into(), "/tmp".into())];
    if let Some(lang) = std::env::var_os("LANG") {
        env.push(("LANG".into(), lang));
    }
    if let Some(home) = &containment.home {
        env.push(("HOME".into(), home.as_os_str().to_owned()));
    }
    for (name, value) in spec.env {
        if !matches!(name.as_str(), "PATH" | "HOME" | "TMPDIR") {
            env.push((name.into(), value.clone()));
        }
    }
    env
}

/// What a writable server changed in the workspace during one call: a
/// snapshot before it, compared after (ADR-0073's limits: at most
/// [`crate::limits::SNAPSHOT_BYTES`] of file contents kept).
pub struct WorkspaceWatch {
    before: crate::snapshot::Snapshot,
    workspace: PathBuf,
    /// The version-control directories there were before (relative).
    repositories: Vec<String>,
}

impl WorkspaceWatch {
    /// Takes the snapshot.
    pub fn take(workspace: &Path, rules: &dyn WorkspaceRules) -> io::Result<Self> {
        let repositories = special_paths(workspace, rules)
            .map(|(read_only, _)| read_only)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Self {
            before: crate::snapshot::Snapshot::take(workspace, rules)?,
            workspace: workspace.to_path_buf(),
            repositories,
        })
    }

    /// Removes every version-control directory (`.git`, or one git would
    /// take for a repository) that was not there before, and names each
    /// with what became of it. A view keeps a command from making one; a
    /// server writing the workspace directly could, and git would run its
    /// hooks and `core.fsmonitor` on the person's next `git status`.
    pub fn remove_planted(&self, rules: &dyn WorkspaceRules) -> Vec<(String, io::Result<()>)> {
        let Ok((now, _)) = special_paths(&self.workspace, rules) else {
            return Vec::new();
        };
        now.into_iter()
            .filter(|dir| !self.repositories.contains(dir))
            .map(|dir| {
                let removed = crate::layer::remove_tree(&self.workspace.join(&dir));
                (dir, removed)
            })
            .collect()
    }

    /// What changed since.
    pub fn changes(&self, rules: &dyn WorkspaceRules) -> io::Result<ChangeSet> {
        self.before.changes(&self.workspace, rules)
    }
}
