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

use std::ffi::OsString;
use std::io::{self, PipeReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags, RawDir};
use rustix::io::FdFlags;
use rustix::process::{Pid, PidfdFlags, Resource, Rlimit, Signal};

use crate::fs::{self, FsPlan, WorkspaceRules};
use crate::inspect::Inspection;
use crate::land::LandError;
use crate::layer::{ChangeSet, Layer};
use crate::limits::MAX_WALK_ENTRIES;
use crate::limits::{
    CPU_SECONDS, DATA_BYTES, DRAIN_AFTER_KILL, FILE_BYTES, NPROC, OPEN_FILES, OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
};
use crate::output::{Capture, Captured};
use crate::pids::PidsGroup;
use crate::seccomp;
use crate::view::{self, UserNs, ViewInput, ViewPlan};

/// Whether the command may use the network. Exhaustive: whoever shows a
/// command to a person must say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// No TCP bind or connect, no socket family but Unix (the default); in
    /// a view, a network namespace of its own with nothing in it.
    Closed,
    /// Sockets as for any process (`commands.network = true`).
    Open,
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
    /// Its output, capped.
    pub output: Captured,
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
            Exit::Signal(_) | Exit::TimedOut => None,
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
}

impl CommandError {
    /// Whether the model caused it (a bad `cwd`), as opposed to the host.
    pub fn is_invalid_arguments(&self) -> bool {
        match self {
            Self::Cwd(_) => true,
            Self::Unsupported(_) | Self::Containment(_) | Self::Spawn(_) | Self::Watch(_) => false,
        }
    }
}

/// Whether commands can be contained here at all (Landlock, seccomp,
/// pidfd); checked once per process.
pub fn support() -> Result<(), Unsupported> {
    static SUPPORT: OnceLock<Result<(), Unsupported>> = OnceLock::new();
    SUPPORT
        .get_or_init(|| {
            fs::probe().map_err(Unsupported)?;
            seccomp::program(Network::Closed)
                .map_err(|why| Unsupported(format!("the seccomp filter cannot be built: {why}")))?;
            let me = Pid::from_raw(std::process::id().cast_signed())
                .ok_or_else(|| Unsupported("no process id".to_owned()))?;
            rustix::process::pidfd_open(me, PidfdFlags::empty()).map_err(|e| {
                Unsupported(format!("pidfd_open (Linux 5.3) is not available: {e}"))
            })?;
            Ok(())
        })
        .clone()
}

/// Whether a view can be made here: a trial command in one, run once per
/// process (a user namespace, the mounts, overlayfs and the fresh `/proc`
/// all have to work).
pub fn namespace_support() -> Result<(), Unsupported> {
    static SUPPORT: OnceLock<Result<(), Unsupported>> = OnceLock::new();
    SUPPORT
        .get_or_init(|| {
            support()?;
            let trial = || -> Result<(), String> {
                let base = std::env::temp_dir();
                let ws = Layer::create(&base).map_err(|e| e.to_string())?;
                let workspace = ws.dir.join("tmp");
                let containment = Containment {
                    workspace: workspace.clone(),
                    read_paths: Vec::new(),
                    network: Network::Closed,
                    env: Vec::new(),
                    pids_cgroup: PidsCgroup::Never,
                    mode: ContainmentMode::Namespace,
                    home: None,
                    layers_dir: Some(base),
                };
                let out = run_namespace(
                    &containment,
                    &NoRules,
                    &CommandRequest {
                        command: "echo ok > probe",
                        cwd: None,
                        timeout: Duration::from_secs(10),
                    },
                )
                .map_err(|e| e.to_string())?;
                match (&out.exit, &out.changes) {
                    (Exit::Code(0), Changes::Pending(p))
                        if p.set.changes.iter().any(|c| c.path == "probe") =>
                    {
                        Ok(())
                    }
                    _ => Err(format!("a trial command failed: {}", out.render().trim())),
                }
            };
            trial().map_err(|why| {
                Unsupported(format!(
                    "a namespace view cannot be made here (a user namespace, overlayfs in it \
                     and a fresh /proc are needed; Docker's default seccomp profile refuses \
                     user namespaces): {why}"
                ))
            })
        })
        .clone()
}

/// The rules of the support trial: nothing hidden or protected.
struct NoRules;

impl WorkspaceRules for NoRules {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, _: &str) -> bool {
        false
    }
}

/// The mechanism `mode` comes to here: `Auto` takes the view where it
/// works; a forced mode that cannot work is an error, never a weaker run.
pub fn resolve_mode(mode: ContainmentMode) -> Result<Used, Unsupported> {
    support()?;
    match mode {
        ContainmentMode::Landlock => Ok(Used::Landlock),
        ContainmentMode::Namespace => namespace_support().map(|()| Used::Namespace),
        ContainmentMode::Auto => Ok(if namespace_support().is_ok() {
            Used::Namespace
        } else {
            Used::Landlock
        }),
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
    match resolve_mode(containment.mode)? {
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
    let ruleset = fs::ruleset(&FsPlan {
        workspace: &containment.workspace,
        tmpdir: &tmpdir.0,
        read_paths: &containment.read_paths,
        rules,
        network: containment.network,
    })?;
    let program = seccomp::program(containment.network).map_err(CommandError::Containment)?;
    let pids = pids_group(containment)?;
    let join_fd = pids.as_ref().map(|(_, fd)| fd.as_raw_fd());
    let before = crate::snapshot::Snapshot::take(&containment.workspace, rules);
    let mut command = shell(request, &cwd, environment(containment, &tmpdir.0));
    let mut ruleset = Some(ruleset);
    let child_setup = move || -> io::Result<()> {
        first_steps(join_fd)?;
        let ruleset = ruleset
            .take()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        ruleset
            .restrict_self()
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
        // Root too: no device nodes, no setuid files, no chown.
        view::drop_capabilities()?;
        seccomp::install(&program)
    };
    install_pre_exec(&mut command, child_setup);
    let (exit, duration, output) = spawn_and_watch(command, request, pids.as_ref().map(|p| &p.0))?;
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
        timeout: request.timeout,
        used: Used::Landlock,
        changes,
    })
}

/// Where the command's layer goes: the first of the configured layers
/// directory and the system's temporary directory that is on the
/// workspace's filesystem.
fn layer_base(containment: &Containment) -> Result<PathBuf, CommandError> {
    let dev = |p: &Path| rustix::fs::stat(p).ok().map(|s| s.st_dev);
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
        "no place for the command's change layer on the workspace's filesystem ({} is on \
         another one than {}); set commands.layers_dir to a directory on the workspace's \
         filesystem, or commands.containment = \"landlock\"",
        containment.workspace.display(),
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    )))
}

/// Directories inside the workspace a view treats apart: existing
/// version-control metadata, and any directory git would take for a
/// repository (`HEAD`, `objects`, `refs`), bound read-only; what a rule
/// hides, and (when a rule could hide anything) every name no rule can be
/// asked about, covered by an empty one.
fn special_paths(
    workspace: &Path,
    rules: &dyn WorkspaceRules,
) -> Result<SpecialPaths, CommandError> {
    let mut read_only = Vec::new();
    let mut hidden = Vec::new();
    let mut budget = MAX_WALK_ENTRIES;
    let mut stack = vec![(workspace.to_path_buf(), String::new())];
    let mut complete = true;
    let hides = rules.hides_anything();
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
        if !rel.is_empty()
            && crate::inspect::looks_like_git_dir(entries.iter().map(|e| e.file_name()))
        {
            read_only.push(rel.clone());
            continue;
        }
        for entry in entries {
            if budget == 0 {
                complete = false;
                break;
            }
            budget -= 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                if hides {
                    let rel_path = Path::new(&rel).join(entry.file_name());
                    hidden.push((rel_path, kind.is_dir()));
                }
                continue;
            };
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if !rules.visible(&path) {
                hidden.push((PathBuf::from(&path), kind.is_dir()));
                continue;
            }
            if kind.is_dir() {
                if rules.is_protected_name(&name) {
                    read_only.push(path);
                } else {
                    stack.push((entry.path(), path));
                }
            }
        }
    }
    if !complete && hides {
        return Err(CommandError::Containment(format!(
            "the workspace has more than {MAX_WALK_ENTRIES} entries; the paths a rule hides \
             cannot all be found, so the command does not run"
        )));
    }
    Ok((read_only, hidden))
}

/// What [`special_paths`] finds: directories to bind read-only (relative)
/// and paths to cover, with whether each is a directory.
type SpecialPaths = (Vec<String>, Vec<(PathBuf, bool)>);

/// In a view (ADR-0077): the namespaces, the overlay, Landlock and seccomp
/// on top, every capability dropped; the changes left pending.
fn run_namespace(
    containment: &Containment,
    rules: &dyn WorkspaceRules,
    request: &CommandRequest<'_>,
) -> Result<CommandOutcome, CommandError> {
    let failed = |what: &str, e: io::Error| CommandError::Containment(format!("{what}: {e}"));
    let cwd = working_dir(&containment.workspace, request.cwd)?;
    let base = layer_base(containment)?;
    let layer = Layer::create(&base).map_err(|e| failed("cannot make the command's layer", e))?;
    let (read_only, hidden) = special_paths(&containment.workspace, rules)?;
    let user_ns = if rustix::process::geteuid().is_root() && !user_namespaces_work() {
        UserNs::None
    } else {
        UserNs::New
    };
    let plan = ViewPlan::prepare(&ViewInput {
        workspace: &containment.workspace,
        cwd: &cwd,
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
        user_ns,
        network_closed: containment.network == Network::Closed,
    })
    .map_err(|e| failed("cannot plan the command's view", e))?;
    // The rules made before the fork hold for bound paths (a bind mount
    // keeps its inodes); the overlay, the scratch home and /proc are new
    // and get theirs inside.
    let ruleset = fs::view_ruleset(
        &containment.read_paths,
        &layer.dir.join("tmp"),
        containment.network,
    )?;
    let program = seccomp::program(containment.network).map_err(CommandError::Containment)?;
    let pids = pids_group(containment)?;
    let join_fd = pids.as_ref().map(|(_, fd)| fd.as_raw_fd());
    let mut env = environment(containment, Path::new("/tmp"));
    if let Some(home) = &containment.home {
        env.retain(|(k, _)| k != "HOME");
        env.push(("HOME".into(), home.as_os_str().to_owned()));
    }
    let mut command = shell(request, &cwd, env);
    let mut ruleset = Some(ruleset);
    let child_setup = move || -> io::Result<()> {
        first_steps(join_fd)?;
        view::unshare(&plan)?;
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
        // PID 1 of the new namespace.
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        view::build(&plan)?;
        let mut ruleset = ruleset
            .take()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        ruleset = fs::add_inside(ruleset, plan.workspace(), fs::Inside::Workspace)?;
        for path in plan.rw_after() {
            ruleset = fs::add_inside(ruleset, path, fs::Inside::ReadWrite)?;
        }
        ruleset = fs::add_inside(ruleset, plan.proc_dir(), fs::Inside::Read)?;
        ruleset
            .restrict_self()
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
        view::drop_capabilities()?;
        seccomp::install(&program)
    };
    install_pre_exec(&mut command, child_setup);
    let (exit, duration, output, group) =
        spawn_and_watch_group(command, request, pids.as_ref().map(|p| &p.0))?;
    // The first child is reaped; every process of the view must be gone too
    // (one in uninterruptible sleep dies late) before its upper layer is read.
    wait_group_gone(group);
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
        timeout: request.timeout,
        used: Used::Namespace,
        changes,
    })
}

/// Whether this process may make a user namespace (root may do without).
fn user_namespaces_work() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        std::process::Command::new("/bin/true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .pre_exec_unshare_user()
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// `pre_exec` of an `unshare(CLONE_NEWUSER)`, for the support check.
trait PreExecUnshare {
    fn pre_exec_unshare_user(&mut self) -> &mut Self;
}

impl PreExecUnshare for Command {
    fn pre_exec_unshare_user(&mut self) -> &mut Self {
        #[expect(unsafe_code, reason = "a pre_exec hook of one system call")]
        // SAFETY: the hook makes one system call and allocates nothing.
        unsafe {
            self.pre_exec(|| {
                rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWUSER)?;
                Ok(())
            })
        }
    }
}

/// In the first child of a view: waits for the second and exits as it
/// did; never returns. Everything it had open is closed first, so the
/// spawn's error pipe and the output pipe end with the second child.
fn wait_and_exit(second: libc::pid_t) -> ! {
    #[expect(unsafe_code, reason = "close_range and _exit in the forked child")]
    // SAFETY: system calls only; `_exit` runs no destructor or handler.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        let mut status: libc::c_int = 0;
        loop {
            let r = libc::waitpid(second, &raw mut status, 0);
            if r == second {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(127)
    }
}

/// The pids cgroup, and the descriptor the child joins it by.
fn pids_group(containment: &Containment) -> Result<Option<(PidsGroup, OwnedFd)>, CommandError> {
    let group = match containment.pids_cgroup {
        PidsCgroup::WhereAvailable => PidsGroup::create(),
        PidsCgroup::Never => None,
    };
    group
        .map(|g| {
            let fd = g
                .join
                .try_clone()
                .map_err(|e| CommandError::Containment(e.to_string()))?;
            Ok((g, fd))
        })
        .transpose()
}

/// `sh -c`, with the environment, stdin empty and the output in one pipe
/// (its write end held by the command only).
fn shell(request: &CommandRequest<'_>, cwd: &Path, env: Vec<(OsString, OsString)>) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(request.command)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null());
    command
}

/// In the child, first: its own session, death with GOAT, the cgroup, the
/// resource limits.
fn first_steps(join_fd: Option<RawFd>) -> io::Result<()> {
    rustix::process::setsid()?;
    // If GOAT dies outright, the shell goes with it (what it started
    // is then left: see docs/security.md).
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    if let Some(fd) = join_fd {
        #[expect(unsafe_code, reason = "a descriptor number kept open by the parent")]
        // SAFETY: the descriptor is the cgroup's `tasks` file, held open
        // by the `PidsGroup` the parent keeps until the command ends.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        // `0` to `tasks`: this thread, the child's only one, so the
        // whole process, before anything is forked or executed.
        rustix::io::write(fd, b"0")?;
    }
    for (resource, value) in [
        (Resource::Cpu, CPU_SECONDS),
        (Resource::Data, DATA_BYTES),
        (Resource::Nproc, NPROC),
        (Resource::Fsize, FILE_BYTES),
        (Resource::Nofile, OPEN_FILES),
        (Resource::Core, 0),
    ] {
        rustix::process::setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        )?;
    }
    Ok(())
}

/// Installs `setup` to run in the child before `exec`, after every
/// inherited descriptor above stdio was marked close-on-exec.
fn install_pre_exec(
    command: &mut Command,
    mut setup: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
) {
    #[expect(
        unsafe_code,
        reason = "pre_exec is how the sandbox is applied between fork and exec"
    )]
    // SAFETY: the hook runs in the forked child before exec and makes only
    // system calls on values prepared before the fork (the ruleset's
    // descriptor, the compiled filter, the cgroup descriptor, the view's
    // paths) and on a stack buffer; the error path builds an io::Error,
    // which std's own pre_exec handling does too. `borrow_raw` is given
    // only numbers the kernel just listed as this process's open
    // descriptors, used at once, before anything could close them (the
    // child has one thread).
    unsafe {
        command.pre_exec(move || {
            // Descriptors GOAT itself inherited without close-on-exec (from
            // whoever started it) would reach the command already open,
            // past Landlock: mark every one above stdio close-on-exec.
            let listing = rustix::fs::open(
                c"/proc/self/fd",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let mut buf = [MaybeUninit::<u8>::uninit(); DIR_BUFFER_BYTES];
            let mut entries = RawDir::new(&listing, &mut buf);
            while let Some(entry) = entries.next() {
                let entry = entry?;
                let Some(fd) = descriptor_number(entry.file_name().to_bytes()) else {
                    continue;
                };
                if fd > 2 {
                    let fd = BorrowedFd::borrow_raw(fd);
                    rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC)?;
                }
            }
            drop(listing);
            setup()
        });
    }
}

/// Waits (at most [`GROUP_GONE_WAIT`]) until no process of the group
/// `pgid` is left.
fn wait_group_gone(pgid: Pid) {
    let until = Instant::now() + GROUP_GONE_WAIT;
    while Instant::now() < until {
        match rustix::process::test_kill_process_group(pgid) {
            Err(rustix::io::Errno::SRCH) => return,
            _ => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// How long GOAT waits for the last process of a view to be gone after
/// its first one was reaped (they were all killed already).
const GROUP_GONE_WAIT: Duration = Duration::from_secs(10);

/// [`spawn_and_watch`], also giving the group the command ran in.
fn spawn_and_watch_group(
    command: Command,
    request: &CommandRequest<'_>,
    pids: Option<&PidsGroup>,
) -> Result<(Exit, Duration, Captured, Pid), CommandError> {
    let mut pgid = None;
    let (exit, duration, output) = spawn_and_watch_inner(command, request, pids, &mut pgid)?;
    let pgid = pgid.ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::NotFound)))?;
    Ok((exit, duration, output, pgid))
}

/// Spawns `command` with its output in a pipe, watches it to its end (or
/// the timeout), and reaps it.
fn spawn_and_watch(
    command: Command,
    request: &CommandRequest<'_>,
    pids: Option<&PidsGroup>,
) -> Result<(Exit, Duration, Captured), CommandError> {
    spawn_and_watch_inner(command, request, pids, &mut None)
}

fn spawn_and_watch_inner(
    mut command: Command,
    request: &CommandRequest<'_>,
    pids: Option<&PidsGroup>,
    pgid: &mut Option<Pid>,
) -> Result<(Exit, Duration, Captured), CommandError> {
    let (reader, writer) = io::pipe().map_err(CommandError::Spawn)?;
    command
        .stdout(writer.try_clone().map_err(CommandError::Spawn)?)
        .stderr(writer);
    let started = Instant::now();
    let mut child = command.spawn().map_err(CommandError::Spawn)?;
    // The parent's copies of the pipe's write end go with the Command, so
    // the pipe ends when the last process of the command closes it.
    drop(command);
    let pid = Pid::from_raw(child.id().cast_signed())
        .ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::InvalidData)))?;
    *pgid = Some(pid);
    let watched = watch(pid, reader, request.timeout, pids);
    // Reap the shell whatever happened above: it was killed with its group.
    if watched.is_err() {
        kill_group(pid, pids);
    }
    let status = child.wait().map_err(CommandError::Watch)?;
    let (output, timed_out) = watched?;
    let duration = started.elapsed();
    let exit = if timed_out {
        Exit::TimedOut
    } else if let Some(code) = status.code() {
        Exit::Code(code)
    } else {
        Exit::Signal(status.signal().unwrap_or(0))
    };
    Ok((exit, duration, output))
}

/// The directory to run in: inside the workspace, by its real path.
fn working_dir(workspace: &Path, cwd: Option<&Path>) -> Result<PathBuf, CommandError> {
    let Some(cwd) = cwd else {
        return Ok(workspace.to_path_buf());
    };
    let real = workspace
        .join(cwd)
        .canonicalize()
        .map_err(|e| CommandError::Cwd(format!("{}: {e}", cwd.display())))?;
    if !real.starts_with(workspace) || !real.is_dir() {
        return Err(CommandError::Cwd(format!(
            "{} is not a directory inside the workspace",
            cwd.display()
        )));
    }
    Ok(real)
}

/// The command's whole environment: a short allowlist, never GOAT's own.
fn environment(containment: &Containment, tmpdir: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    env.push(("PATH".into(), path));
    for name in ["HOME", "LANG", "TERM"]
        .into_iter()
        .chain(containment.env.iter().map(String::as_str))
    {
        if matches!(name, "PATH" | "TMPDIR") {
            continue;
        }
        if let Some(value) = std::env::var_os(name) {
            env.push((name.into(), value));
        }
    }
    env.push(("TMPDIR".into(), tmpdir.as_os_str().to_owned()));
    env
}

/// Bytes read from the output pipe at a time: a pipe's default capacity,
/// so one read usually empties it.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Passes over the pids cgroup when the command ends: each pass kills what
/// is listed; a process forking as it is killed needs another pass.
const KILL_ROUNDS_AT_END: usize = 50;

/// The stack buffer for listing `/proc/self/fd` in the child: room for a
/// hundred entries a read, and no allocation after the fork.
const DIR_BUFFER_BYTES: usize = 4096;

/// A `/proc/self/fd` entry's name as a descriptor number; `None` for `.`,
/// `..` or anything else. Written out so the child allocates nothing.
fn descriptor_number(name: &[u8]) -> Option<i32> {
    if name.is_empty() || name.len() > 9 {
        return None;
    }
    name.iter().try_fold(0i32, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + i32::from(b - b'0'))
    })
}

/// Kills the command's process group and, when there is one, its cgroup.
fn kill_group(pid: Pid, pids: Option<&PidsGroup>) {
    // ESRCH (nothing left) is the usual answer and needs nothing done.
    let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    if let Some(group) = pids {
        group.kill_all(KILL_ROUNDS_AT_END);
    }
}

/// Reads the output and waits for the shell to exit or the timeout to
/// pass, then kills the group and drains what is left. Returns the output
/// and whether the timeout passed.
fn watch(
    pid: Pid,
    mut reader: PipeReader,
    timeout: Duration,
    pids: Option<&PidsGroup>,
) -> Result<(Captured, bool), CommandError> {
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty())
        .map_err(|e| CommandError::Watch(e.into()))?;
    let started = Instant::now();
    let mut capture = Capture::new(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut pipe_open = true;
    let mut exited = false;
    let mut timed_out = false;
    let mut drain_until: Option<Instant> = None;
    loop {
        if exited && !pipe_open {
            break;
        }
        let deadline = match drain_until {
            Some(until) => until,
            None => started + timeout,
        };
        let now = Instant::now();
        if now >= deadline {
            if drain_until.is_some() {
                // Every process of the group is dead; a descriptor smuggled
                // out keeps the pipe open. Stop reading.
                break;
            }
            timed_out = true;
            kill_group(pid, pids);
            drain_until = Some(Instant::now() + DRAIN_AFTER_KILL);
            continue;
        }
        let wait = deadline - now;
        let wait = Timespec {
            tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let mut fds = Vec::with_capacity(2);
        fds.push(PollFd::new(&pidfd, PollFlags::IN));
        if pipe_open {
            fds.push(PollFd::new(&reader, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&wait)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(CommandError::Watch(e.into())),
        }
        let shell_done = !fds[0].revents().is_empty();
        let readable = fds.get(1).is_some_and(|fd| !fd.revents().is_empty());
        if readable {
            match reader.read(&mut buf) {
                Ok(0) => pipe_open = false,
                Ok(n) => capture.feed(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CommandError::Watch(e)),
            }
        }
        if shell_done && !exited {
            exited = true;
            // The shell is a zombie until reaped, so its group id is still
            // ours: nothing it started outlives it.
            kill_group(pid, pids);
            if drain_until.is_none() {
                drain_until = Some(Instant::now() + DRAIN_AFTER_KILL);
            }
        }
    }
    Ok((capture.finish(), timed_out))
}

/// The command's own temporary directory, removed with everything in it
/// when dropped.
struct PrivateTmp(PathBuf);

impl PrivateTmp {
    fn create() -> Result<Self, CommandError> {
        let base = std::env::temp_dir();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for attempt in 0..16u32 {
            let dir = base.join(format!(
                "goat-command-{}-{stamp:08x}-{attempt}",
                std::process::id()
            ));
            match rustix::fs::mkdir(&dir, rustix::fs::Mode::from_raw_mode(0o700)) {
                Ok(()) => return Ok(Self(dir)),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => {
                    return Err(CommandError::Containment(format!(
                        "cannot make a private temporary directory in {}: {e}",
                        base.display()
                    )));
                }
            }
        }
        Err(CommandError::Containment(format!(
            "cannot make a private temporary directory in {}",
            base.display()
        )))
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
