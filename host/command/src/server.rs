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
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};

use rustix::process::{Pid, Signal};

use crate::child::{
    cloexec_above_stdio, first_steps, install_pre_exec, kill_group, pids_group,
    user_namespaces_work, wait_and_exit, wait_group_gone,
};
use crate::fs::{self, WorkspaceRules};
use crate::layer::{ChangeSet, Layer};
use crate::net::{self, NetRules};
use crate::pids::PidsGroup;
use crate::progress::{Progress, Stage};
use crate::run::{
    CommandError, Containment, Network, Unsupported, Used, layer_base, lock_down, refused_at,
};
use crate::seccomp;
use crate::special::special_paths;
use crate::support::resolve;
use crate::view::{self, UserNs, ViewInput, ViewNet, ViewPlan, WorkspaceMount};

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

/// Whether a server can be contained here: it needs a view.
pub fn server_support(containment: &Containment) -> Result<(), Unsupported> {
    match resolve(containment)? {
        Used::Namespace => Ok(()),
        Used::Landlock => Err(Unsupported(
            "an MCP server runs only in a view (a user namespace or root, and overlayfs), and \
             none can be made here"
                .to_owned(),
        )),
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
    let failed = |what: &str, e: io::Error| CommandError::Containment(format!("{what}: {e}"));
    let base = layer_base(containment)?;
    let layer = Layer::create(&base).map_err(|e| failed("cannot make the server's layer", e))?;
    let (read_only, hidden) = special_paths(&containment.workspace, rules)?;
    let user_ns = if rustix::process::geteuid().is_root() && !user_namespaces_work() {
        UserNs::None
    } else {
        UserNs::New
    };
    // Proxied: the view's first child makes the proxy's listener in the
    // view's own network namespace and sends it back over this pair.
    let (view_net, net_rules, link) = match containment.network {
        Network::Closed => (ViewNet::Empty, NetRules::Closed, None),
        Network::Open => (ViewNet::Host, NetRules::Open, None),
        Network::Proxied => {
            let link = spec.proxy.ok_or_else(|| {
                CommandError::Containment(
                    "the network is to go through GOAT's proxy, and there is none for this \
                     server"
                        .to_owned(),
                )
            })?;
            let pair = net::channel().map_err(|e| failed("the proxy's channel", e))?;
            let view_net = ViewNet::Proxy {
                port: net::VIEW_PROXY_PORT,
                channel: pair.1.as_raw_fd(),
            };
            (
                view_net,
                NetRules::ConnectPort(net::VIEW_PROXY_PORT),
                Some((link, pair)),
            )
        }
    };
    let plan = ViewPlan::prepare(&ViewInput {
        workspace: &containment.workspace,
        cwd: &containment.workspace,
        upper: &layer.upper(),
        work: &layer.dir.join("work"),
        root: &layer.dir.join("root"),
        tmpdir: &layer.dir.join("tmp"),
        home: containment.home.as_deref(),
        read_paths: &containment.read_paths,
        read_only: &read_only,
        hidden: &hidden,
        empty_file: &layer.dir.join("empty"),
        empty_dir: &layer.dir.join("emptydir"),
        caches: &layer.dir.join("caches"),
        user_ns,
        net: view_net,
        workspace_mount: WorkspaceMount::Bind {
            writable: spec.writable,
        },
    })
    .map_err(|e| failed("cannot plan the server's view", e))?;
    let ruleset = fs::view_ruleset(&containment.read_paths, &layer.dir.join("tmp"), net_rules)?;
    let program = seccomp::program(net_rules, seccomp::Inbound::OwnNamespace)
        .map_err(CommandError::Containment)?;
    let pids = pids_group(containment)?;
    let join_fd = pids.as_ref().map(|(_, fd)| fd.as_raw_fd());
    // The program as added (absolute); a bare name is looked up in the
    // absolute directories of PATH only (see `environment`).
    let mut command = Command::new(spec.program);
    command
        .args(spec.args)
        .current_dir(&containment.workspace)
        .env_clear()
        .envs(environment(containment, spec))
        .envs(if link.is_some() {
            net::proxy_env(net::VIEW_PROXY_PORT)
        } else {
            Vec::new()
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut ruleset = Some(ruleset);
    let progress = std::sync::Arc::new(
        Progress::new().map_err(|e| failed("cannot map the view's progress page", e))?,
    );
    let step_names = plan.step_names();
    let in_child = std::sync::Arc::clone(&progress);
    let workspace_access = if spec.writable {
        fs::Inside::Workspace
    } else {
        fs::Inside::Read
    };
    let child_setup = move || -> io::Result<()> {
        let progress = &in_child;
        progress.mark(Stage::FirstSteps);
        first_steps(join_fd)?;
        progress.mark(Stage::Namespaces);
        view::unshare(&plan)?;
        progress.mark(Stage::Fork);
        #[expect(unsafe_code, reason = "the second fork, in the forked child")]
        // SAFETY: the first child has one thread; the second child makes
        // system calls only until it execs, as the first would have.
        let second = unsafe { libc::fork() };
        if second < 0 {
            return Err(io::Error::last_os_error());
        }
        if second > 0 {
            wait_and_exit(second);
        }
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        cloexec_above_stdio()?;
        view::build(&plan, progress)?;
        progress.mark(Stage::Landlock);
        let mut ruleset = ruleset
            .take()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        ruleset = fs::add_inside(ruleset, plan.workspace(), workspace_access)?;
        for path in plan.rw_after() {
            ruleset = fs::add_inside(ruleset, path, fs::Inside::ReadWrite)?;
        }
        ruleset = fs::add_inside(ruleset, plan.proc_dir(), fs::Inside::Read)?;
        lock_down(ruleset, &program, progress)
    };
    install_pre_exec(&mut command, child_setup);
    let mut child = command
        .spawn()
        .map_err(|e| refused_at(CommandError::Spawn(e), &progress, &step_names))?;
    let group = Pid::from_raw(child.id().cast_signed())
        .ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::InvalidData)))?;
    // Once spawned (the listener is sent before the server can start),
    // the proxy serves it; if it cannot, the server is killed unserved.
    if let Some((link, (ours, theirs))) = link {
        drop(theirs);
        if let Err(e) = net::receive_listener(&ours).and_then(|l| link.serve(l)) {
            kill_group(group, pids.as_ref().map(|p| &p.0));
            let _ = child.wait();
            return Err(CommandError::Containment(format!(
                "the server was stopped as it started: its proxy: {e}"
            )));
        }
    }
    Ok(Server {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        group,
        pids,
        _layer: layer,
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
