//! Running one command: the sandbox prepared in GOAT, applied in the child
//! between `fork` and `exec`, and the command watched until it and every
//! process it started are gone.
//!
//! # Key decision: a `pre_exec` hook, not a helper process
//!
//! Everything that allocates or can fail in interesting ways (walking the
//! workspace, building the Landlock ruleset, compiling the seccomp program,
//! making the private `TMPDIR` and the pids cgroup) happens in GOAT before
//! the fork. The child then makes only system calls: `setsid`, joining the
//! cgroup, `setrlimit`, `landlock_restrict_self` (which sets
//! `no_new_privs`), `seccomp`, and `exec` of `/bin/sh -c`. Re-executing the
//! `goat` binary as a helper would cost an extra `exec` of a large binary on
//! every command for no gain in what is enforced.
//!
//! # Key decision: the process group, kept whole
//!
//! The command leads a new session and process group and cannot leave it
//! (`setsid`/`setpgid` are refused by seccomp), so a `kill(-pgid, SIGKILL)`
//! reaches every process it started, detached or not. GOAT watches the
//! shell through a pidfd and kills the group when the shell exits (so
//! nothing is left behind) or the timeout passes, before the shell is
//! reaped, so the group id cannot have been reused. Where a pids cgroup can
//! be made, everything in it is killed too.

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child::{
    PrivateTmp, Watched, environment, first_steps, install_pre_exec, pids_group, shell,
    spawn_and_watch, spawn_and_watch_group, wait_group_gone, working_dir,
};
use crate::fs::{self, FsPlan, WorkspaceRules};
use crate::inspect::Inspection;
use crate::interrupt::Interrupt;
use crate::land::LandError;
use crate::launch::{Launched, ViewLaunch};
use crate::layer::{ChangeSet, Layer};
use crate::net::{self, NetRules, ProxyLink};
use crate::output::Captured;
use crate::progress::{Progress, Stage};
use crate::seccomp;
use crate::support::{mount_id, resolve};
use crate::view::WorkspaceMount;

/// Whether the command may use the network. Exhaustive: whoever shows a
/// command to a person must say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// No TCP bind or connect, no socket family but Unix (the default); in
    /// a view, a network namespace of its own with nothing in it.
    Closed,
    /// Sockets as for any process (`commands.network = true`).
    Open,
    /// A TCP connection to GOAT's egress proxy and nothing else
    /// (`commands.network = [...]`, ADR-0082): the request's
    /// [`ProxyLink`] serves it, and the proxy variables point at it. In a
    /// view, a network namespace of its own where only the proxy's
    /// listener is; with Landlock only, TCP connect to the proxy's port
    /// alone ([`crate::net`]).
    Proxied,
}

/// Which mechanism contains a command (`commands.containment`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContainmentMode {
    /// The strongest that works here: a view where a user namespace (or
    /// root) and overlayfs allow one, else Landlock only.
    #[default]
    Auto,
    /// A view, or no command at all.
    Namespace,
    /// Landlock and seccomp only, with a before/after snapshot for undo.
    Landlock,
}

/// The mechanism a command actually ran under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Used {
    /// A mount namespace view with the workspace as an overlay: nothing
    /// lands before GOAT has inspected it.
    Namespace,
    /// Landlock and seccomp only: the command wrote the workspace itself.
    Landlock,
}

impl Used {
    /// What this mechanism cannot enforce, for the tool's description, the
    /// approval question and `goat tools list`; empty for the view.
    pub fn limits(self) -> &'static str {
        match self {
            Self::Namespace => "",
            Self::Landlock => {
                "Landlock-only containment (no user namespace here): the command writes the \
                 workspace directly, so nothing is inspected before it lands (a new .git in a \
                 subdirectory is only reported after); it can change permission bits, times \
                 and extended attributes of files outside the workspace that it cannot read or \
                 write; nothing can be created or removed directly in a directory that holds \
                 .git; undo covers what a snapshot of at most 64 MiB of the workspace kept"
            }
        }
    }
}

/// The first of `host_files` (GOAT's own: the store, the rules, the
/// config) that a contained process granted reading `read_paths` could
/// read, with the directory that grants it.
///
/// # Security
///
/// The one rule for every directory a contained process is granted to
/// read beyond the system's (`commands.read_paths` for commands, `--read`
/// for an MCP server): none may hold GOAT's files, compared on canonical
/// paths so a symbolic link or `..` does not get around it.
pub fn reads_host_file<'a>(
    read_paths: &'a [PathBuf],
    host_files: &[&'a Path],
) -> Option<(&'a Path, &'a Path)> {
    read_paths.iter().find_map(|dir| {
        let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        host_files
            .iter()
            .find(|f| {
                f.canonicalize()
                    .unwrap_or_else(|_| f.to_path_buf())
                    .starts_with(&real)
            })
            .map(|file| (*file, dir.as_path()))
    })
}

/// What the host decides about every command: none of it comes from the
/// model.
#[derive(Clone, Debug)]
pub struct Containment {
    /// The workspace (canonical): readable and writable but for the rules.
    pub workspace: PathBuf,
    /// Host directories readable (toolchains), beyond the system ones.
    pub read_paths: Vec<PathBuf>,
    /// Whether the network is open.
    pub network: Network,
    /// Names of environment variables passed through besides `PATH`,
    /// `HOME`, `LANG` and `TERM` (`commands.env`).
    pub env: Vec<String>,
    /// Whether each command gets a pids cgroup where one can be made.
    pub pids_cgroup: PidsCgroup,
    /// Which mechanism to use.
    pub mode: ContainmentMode,
    /// The home directory: in a view, an empty scratch directory with the
    /// granted toolchains bound in read-only.
    pub home: Option<PathBuf>,
    /// Where a view's scratch layers go (GOAT's state directory), tried
    /// before the system's temporary directory; a layer must be on the
    /// workspace's filesystem, so its changes land by rename.
    pub layers_dir: Option<PathBuf>,
}

/// Whether a command gets a pids cgroup of its own ([`crate::limits::MAX_PROCESSES`]).
///
/// It is what stops a fork bomb where `RLIMIT_NPROC` does not apply
/// (root). It costs a command's start-up well under a millisecond: the
/// child moves its one thread in, which spares it the kernel's global
/// cgroup lock and its RCU wait (`pids.rs`, ADR-0070).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PidsCgroup {
    /// Where the cgroup v1 `pids` hierarchy is writable (GOAT as root).
    WhereAvailable,
    /// Never: the host limits processes itself (a container's pids limit).
    Never,
}

/// One command, as the tool call asks for it.
#[derive(Clone, Copy, Debug)]
pub struct CommandRequest<'a> {
    /// The shell command line, run with `/bin/sh -c`.
    pub command: &'a str,
    /// The directory to run in, inside the workspace (`None`: its root).
    pub cwd: Option<&'a Path>,
    /// The wall-clock limit.
    pub timeout: Duration,
    /// The proxy serving this command, for [`Network::Proxied`] (required
    /// then: without one the command does not run); ignored otherwise.
    pub proxy: Option<&'a dyn ProxyLink>,
    /// The person's Ctrl-C: fired, it kills the whole group at once, as
    /// the timeout would ([`Exit::Interrupted`]).
    pub interrupt: Option<&'a Interrupt>,
    /// What the command reads on stdin (`None`: nothing, `/dev/null`).
    /// Given whole from a file GOAT writes before the command starts, so
    /// a command that never reads it blocks nothing.
    pub stdin: Option<&'a [u8]>,
    /// Keep stdout apart from stderr ([`CommandOutcome::stdout`], at most
    /// [`crate::limits::STDOUT_APART_BYTES`] kept): for a hook, whose
    /// answer is its stdout and whose reason is its stderr.
    pub stdout_apart: bool,
}

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal (not by GOAT's timeout).
    Signal(i32),
    /// The timeout passed; the whole group was killed.
    TimedOut,
    /// Its turn was cancelled (Ctrl-C, an editor's stop, a signal to
    /// `goat run`) and the [`Interrupt`] fired; the whole group was killed.
    Interrupted,
}

/// What a command changed, as its containment saw it.
#[derive(Debug)]
pub enum Changes {
    /// In a view: the change set waits in the command's layer until GOAT
    /// lands or discards it.
    Pending(Pending),
    /// Landlock only: already in the workspace; what the snapshot saw.
    Applied(ChangeSet),
    /// The changes could not be read (the result says why); in a view,
    /// nothing landed.
    Unreadable(String),
}

/// A view's change set, not landed yet.
#[derive(Debug)]
pub struct Pending {
    layer: Layer,
    workspace: PathBuf,
    /// What the command changed.
    pub set: ChangeSet,
}

impl Pending {
    /// The set read from `layer` (over `workspace`).
    pub(crate) fn new(layer: Layer, workspace: PathBuf, set: ChangeSet) -> Self {
        Self {
            layer,
            workspace,
            set,
        }
    }

    /// Checks the set against `rules`: what refuses it, and what is left
    /// out of it (and so from the landing).
    pub fn inspect(&mut self, rules: &dyn WorkspaceRules) -> Inspection {
        crate::inspect::inspect(&mut self.set, rules, &self.layer.upper(), &self.workspace)
    }

    /// Lands the set in the workspace, all of it or none. Returns how many
    /// steps it took.
    pub fn land(mut self) -> Result<usize, LandError> {
        let landed = crate::land::land(
            &self.workspace,
            &self.layer.upper(),
            &self.layer.dir.join("backup"),
            &self.set.ops,
        );
        if let Err(e) = &landed
            && !e.taken_back
        {
            self.layer.keep = true;
        }
        landed
    }

    /// Drops the set: nothing lands.
    pub fn discard(self) {
        drop(self);
    }
}

/// What running a command came to.
#[derive(Debug)]
pub struct CommandOutcome {
    /// How it ended.
    pub exit: Exit,
    /// From spawn to the last process gone.
    pub duration: Duration,
    /// Its output, capped: stdout and stderr interleaved, or stderr alone
    /// when [`CommandRequest::stdout_apart`] asked for stdout apart.
    pub output: Captured,
    /// Its stdout, capped, when [`CommandRequest::stdout_apart`] asked.
    pub stdout: Option<Captured>,
    /// The timeout it ran under.
    pub timeout: Duration,
    /// The mechanism it ran under.
    pub used: Used,
    /// What it changed.
    pub changes: Changes,
}

impl CommandOutcome {
    /// The exit code, when it exited on its own.
    pub fn exit_code(&self) -> Option<i32> {
        match self.exit {
            Exit::Code(code) => Some(code),
            Exit::Signal(_) | Exit::TimedOut | Exit::Interrupted => None,
        }
    }

    /// The result the model reads: how it ended, how long it took, the
    /// output.
    pub fn render(&self) -> String {
        let ended = match self.exit {
            Exit::Code(code) => format!("exit code {code}"),
            Exit::Signal(signal) => format!("killed by signal {signal}"),
            Exit::TimedOut => format!(
                "timed out after {} s: the command and every process it started were killed",
                self.timeout.as_secs()
            ),
            Exit::Interrupted => "cancelled with the turn: the command and every process \
                                  it started were killed"
                .to_owned(),
        };
        let mut text = format!("{ended}; {:.2} s\n", self.duration.as_secs_f64());
        if self.output.total_bytes == 0 {
            text.push_str("(no output)\n");
        } else {
            text.push_str(&self.output.text);
        }
        text
    }
}

/// Why the kernel cannot contain a command; the tool is then not offered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

/// A command that could not be run, or not watched to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The kernel lacks what the sandbox needs.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// The directory asked for is not a directory inside the workspace.
    #[error("cwd {0}")]
    Cwd(String),
    /// The sandbox could not be prepared (walking the workspace, the
    /// ruleset, the private temporary directory).
    #[error("the command sandbox could not be prepared: {0}")]
    Containment(String),
    /// The shell could not be started.
    #[error("the command could not be started: {0}")]
    Spawn(io::Error),
    /// The command could not be watched (poll, wait).
    #[error("the command could not be watched: {0}")]
    Watch(io::Error),
    /// The [`Interrupt`] fired before the command started: it did not run.
    #[error("the turn was cancelled before the command started; it did not run")]
    Interrupted,
}

impl CommandError {
    /// Whether the model caused it (a bad `cwd`), as opposed to the host.
    pub fn is_invalid_arguments(&self) -> bool {
        match self {
            Self::Cwd(_) => true,
            Self::Unsupported(_)
            | Self::Containment(_)
            | Self::Spawn(_)
            | Self::Watch(_)
            | Self::Interrupted => false,
        }
    }
}

/// The last steps in the child, in both containments: the Landlock
/// rules applied, every capability dropped, seccomp installed, each
/// stage marked in `progress`. System calls only.
pub(crate) fn lock_down(
    ruleset: landlock::RulesetCreated,
    program: &seccompiler::BpfProgram,
    progress: &Progress,
) -> io::Result<()> {
    ruleset
        .restrict_self()
        .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    progress.mark(Stage::Capabilities);
    crate::caps::drop_capabilities()?;
    progress.mark(Stage::Seccomp);
    seccomp::install(program)?;
    progress.mark(Stage::Exec);
    Ok(())
}

/// A spawn that failed before the command's `exec`: the kernel refused a
/// step of the sandbox, named from `progress` (`steps`: the view's own).
/// A failure at `exec` itself stays the spawn error it is.
pub(crate) fn refused_at(
    error: CommandError,
    progress: &Progress,
    steps: &[String],
) -> CommandError {
    match error {
        CommandError::Spawn(why) if !progress.reached_exec() => CommandError::Containment(format!(
            "the kernel refused {}: {why}",
            progress.describe(steps)
        )),
        other => other,
    }
}

/// Runs `request` inside `containment`, with the permission `rules`
/// applied to the workspace.
///
/// # Security
///
/// Fails closed: if any part of the sandbox cannot be prepared or applied
/// the command does not run (a failed `pre_exec` step fails the spawn).
pub fn run(
    containment: &Containment,
    rules: &dyn WorkspaceRules,
    request: &CommandRequest<'_>,
) -> Result<CommandOutcome, CommandError> {
    if request.interrupt.is_some_and(Interrupt::is_fired) {
        return Err(CommandError::Interrupted);
    }
    match resolve(containment)? {
        Used::Namespace => run_namespace(containment, rules, request),
        Used::Landlock => run_landlock(containment, rules, request),
    }
}

/// Landlock and seccomp only (ADR-0070), with a snapshot for undo.
fn run_landlock(
    containment: &Containment,
    rules: &dyn WorkspaceRules,
    request: &CommandRequest<'_>,
) -> Result<CommandOutcome, CommandError> {
    let cwd = working_dir(&containment.workspace, request.cwd)?;
    let tmpdir = PrivateTmp::create()?;
    // Proxied: GOAT's proxy on a loopback port the kernel picks, served
    // before the command starts; Landlock lets it connect there alone.
    let (net_rules, proxy_port) = match containment.network {
        Network::Closed => (NetRules::Closed, None),
        Network::Open => (NetRules::Open, None),
        Network::Proxied => {
            let link = proxy_link(request)?;
            let listener = net::host_listener()
                .map_err(|e| CommandError::Containment(format!("the proxy's port: {e}")))?;
            let port = listener
                .local_addr()
                .map_err(|e| CommandError::Containment(format!("the proxy's port: {e}")))?
                .port();
            link.serve(listener)
                .map_err(|e| CommandError::Containment(format!("the proxy: {e}")))?;
            (NetRules::ConnectPort(port), Some(port))
        }
    };
    let ruleset = fs::ruleset(&FsPlan {
        workspace: &containment.workspace,
        tmpdir: &tmpdir.0,
        read_paths: &containment.read_paths,
        rules,
        network: net_rules,
    })?;
    let program = seccomp::program(net_rules, seccomp::Inbound::HostNetwork)
        .map_err(CommandError::Containment)?;
    let pids = pids_group(containment)?;
    let join_fd = pids.as_ref().map(|(_, fd)| fd.as_raw_fd());
    let before = crate::snapshot::Snapshot::take(&containment.workspace, rules);
    let mut env = environment(containment, &tmpdir.0);
    env.extend(proxy_port.map(net::proxy_env).unwrap_or_default());
    let mut command = shell(request, &cwd, env)?;
    let mut ruleset = Some(ruleset);
    let progress =
        std::sync::Arc::new(Progress::new().map_err(|e| CommandError::Containment(e.to_string()))?);
    let in_child = std::sync::Arc::clone(&progress);
    let child_setup = move || -> io::Result<()> {
        let progress = &in_child;
        progress.mark(Stage::FirstSteps);
        first_steps(join_fd)?;
        progress.mark(Stage::Landlock);
        let ruleset = ruleset
            .take()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        // Root too: no device nodes, no setuid files, no chown.
        lock_down(ruleset, &program, progress)
    };
    install_pre_exec(&mut command, child_setup);
    let Watched {
        exit,
        duration,
        output,
        stdout,
    } = spawn_and_watch(command, request, pids.as_ref().map(|p| &p.0))
        .map_err(|e| refused_at(e, &progress, &[]))?;
    drop(tmpdir);
    let changes = match before {
        Ok(before) => match before.changes(&containment.workspace, rules) {
            Ok(set) => Changes::Applied(set),
            Err(e) => Changes::Unreadable(format!("the snapshot after the command failed: {e}")),
        },
        Err(e) => Changes::Unreadable(format!("the snapshot before the command failed: {e}")),
    };
    Ok(CommandOutcome {
        exit,
        duration,
        output,
        stdout,
        timeout: request.timeout,
        used: Used::Landlock,
        changes,
    })
}

/// The proxy a [`Network::Proxied`] command must have.
fn proxy_link<'a>(request: &CommandRequest<'a>) -> Result<&'a dyn ProxyLink, CommandError> {
    request.proxy.ok_or_else(|| {
        CommandError::Containment(
            "the network is to go through GOAT's proxy, and there is none for this command"
                .to_owned(),
        )
    })
}

/// Where a view whose workspace is bound (a server's) keeps its scratch
/// parts: the layers directory, or else the temporary directory.
pub(crate) fn scratch_base(containment: &Containment) -> Result<PathBuf, CommandError> {
    let candidates = containment
        .layers_dir
        .iter()
        .cloned()
        .chain(std::iter::once(std::env::temp_dir()));
    for base in candidates {
        if std::fs::create_dir_all(&base).is_ok() && base.is_dir() {
            return Ok(base);
        }
    }
    Err(CommandError::Containment(
        "no directory to keep the view's scratch parts in: set commands.layers_dir to one GOAT \
         may write"
            .to_owned(),
    ))
}

/// Where the command's layer goes: the first of the configured layers
/// directory and the system's temporary directory that is on the
/// workspace's own mount. The same filesystem is not enough: a rename
/// between two mounts of one filesystem fails (`EXDEV`), so the mount is
/// compared (or, where the kernel does not say, the device).
pub(crate) fn layer_base(containment: &Containment) -> Result<PathBuf, CommandError> {
    let dev = |p: &Path| match mount_id(p) {
        Some(id) => Some((0, id)),
        None => rustix::fs::stat(p).ok().map(|s| (1, s.st_dev)),
    };
    let want = dev(&containment.workspace);
    let candidates: Vec<PathBuf> = containment
        .layers_dir
        .iter()
        .cloned()
        .chain(std::iter::once(std::env::temp_dir()))
        .collect();
    for base in &candidates {
        let _ = std::fs::create_dir_all(base);
        if want.is_some() && dev(base) == want {
            return Ok(base.clone());
        }
    }
    Err(CommandError::Containment(format!(
        "no place for the command's change layer on the workspace's mount ({} is on another \
         mount than {}); set commands.layers_dir to a directory on the workspace's mount, or \
         commands.containment = \"landlock\"",
        containment.workspace.display(),
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    )))
}

/// In a view (ADR-0077): the namespaces, the overlay, Landlock and seccomp
/// on top, every capability dropped; the changes left pending.
pub(crate) fn run_namespace(
    containment: &Containment,
    rules: &dyn WorkspaceRules,
    request: &CommandRequest<'_>,
) -> Result<CommandOutcome, CommandError> {
    let cwd = working_dir(&containment.workspace, request.cwd)?;
    let mut launch = ViewLaunch::prepare(
        containment,
        rules,
        &Launched {
            what: "command",
            cwd: &cwd,
            mount: WorkspaceMount::Overlay,
            proxy: request.proxy,
        },
    )?;
    let mut env = environment(containment, Path::new("/tmp"));
    if let Some(home) = &containment.home {
        env.retain(|(k, _)| k != "HOME");
        env.push(("HOME".into(), home.as_os_str().to_owned()));
    }
    if launch.proxied() {
        env.extend(net::proxy_env(net::VIEW_PROXY_PORT));
    }
    let mut command = shell(request, &cwd, env)?;
    launch.install(&mut command)?;
    // Once spawned (the listener is sent before the command can start),
    // the proxy serves it; if it cannot, the command is killed unserved.
    let mut proxy = launch.take_proxy();
    let (
        Watched {
            exit,
            duration,
            output,
            stdout,
        },
        group,
    ) = spawn_and_watch_group(
        command,
        request,
        launch.pids.as_ref().map(|p| &p.0),
        &mut || proxy.serve(),
    )
    .map_err(|e| launch.refused(e))?;
    // The first child is reaped; every process of the view must be gone too
    // (one in uninterruptible sleep dies late) before its upper layer is read.
    wait_group_gone(group);
    let layer = launch.layer;
    let changes = match layer.changes(&containment.workspace) {
        Ok(set) => Changes::Pending(Pending {
            layer,
            workspace: containment.workspace.clone(),
            set,
        }),
        Err(e) => Changes::Unreadable(format!(
            "GOAT could not read what the command changed ({e}); nothing of it landed"
        )),
    };
    Ok(CommandOutcome {
        exit,
        duration,
        output,
        stdout,
        timeout: request.timeout,
        used: Used::Namespace,
        changes,
    })
}
