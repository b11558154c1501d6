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
use std::os::fd::BorrowedFd;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags, RawDir};
use rustix::io::FdFlags;
use rustix::process::{Pid, PidfdFlags, Resource, Rlimit, Signal};

use crate::fs::{self, FsPlan, WorkspaceRules};
use crate::limits::{
    CPU_SECONDS, DATA_BYTES, DRAIN_AFTER_KILL, FILE_BYTES, NPROC, OPEN_FILES, OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
};
use crate::output::{Capture, Captured};
use crate::pids::PidsGroup;
use crate::seccomp;

/// Whether the command may use the network. Exhaustive: whoever shows a
/// command to a person must say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// No TCP bind or connect, no socket family but Unix (the default).
    Closed,
    /// Sockets as for any process (`commands.network = true`).
    Open,
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

/// What running a command came to.
#[derive(Clone, Debug)]
pub struct CommandOutcome {
    /// How it ended.
    pub exit: Exit,
    /// From spawn to the last process gone.
    pub duration: Duration,
    /// Its output, capped.
    pub output: Captured,
    /// The timeout it ran under.
    pub timeout: Duration,
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

/// Whether commands can be contained here; checked once per process.
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
    support()?;
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
    let pids = match containment.pids_cgroup {
        PidsCgroup::WhereAvailable => PidsGroup::create(),
        PidsCgroup::Never => None,
    };
    let join_fd = match &pids {
        Some(group) => Some(
            group
                .join
                .try_clone()
                .map_err(|e| CommandError::Containment(e.to_string()))?,
        ),
        None => None,
    };

    let (reader, writer) = io::pipe().map_err(CommandError::Spawn)?;
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(request.command)
        .current_dir(&cwd)
        .env_clear()
        .envs(environment(containment, &tmpdir.0))
        .stdin(Stdio::null())
        .stdout(writer.try_clone().map_err(CommandError::Spawn)?)
        .stderr(writer);
    let mut ruleset = Some(ruleset);
    let mut child_setup = move || -> io::Result<()> {
        // In the child, between fork and exec: system calls only.
        rustix::process::setsid()?;
        // If GOAT dies outright, the shell goes with it (what it started
        // is then left: see docs/security.md).
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        if let Some(fd) = &join_fd {
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
        let ruleset = ruleset
            .take()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        ruleset
            .restrict_self()
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
        seccomp::install(&program)
    };
    #[expect(
        unsafe_code,
        reason = "pre_exec is how the sandbox is applied between fork and exec"
    )]
    // SAFETY: the hook runs in the forked child before exec and makes only
    // system calls on values prepared before the fork (the ruleset's
    // descriptor, the compiled filter, the cgroup descriptor) and on a
    // stack buffer; the error path builds an io::Error, which std's own
    // pre_exec handling does too. `borrow_raw` is given only numbers the
    // kernel just listed as this process's open descriptors, used at once,
    // before anything could close them (the child has one thread).
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
            child_setup()
        });
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(CommandError::Spawn)?;
    // The parent's copies of the pipe's write end go with the Command, so
    // the pipe ends when the last process of the command closes it.
    drop(command);
    let pid = Pid::from_raw(child.id().cast_signed())
        .ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::InvalidData)))?;
    let watched = watch(pid, reader, request.timeout, pids.as_ref());
    // Reap the shell whatever happened above: it was killed with its group.
    if watched.is_err() {
        kill_group(pid, pids.as_ref());
    }
    let status = child.wait().map_err(CommandError::Watch)?;
    let (output, timed_out) = watched?;
    let duration = started.elapsed();
    drop(pids);
    drop(tmpdir);
    let exit = if timed_out {
        Exit::TimedOut
    } else if let Some(code) = status.code() {
        Exit::Code(code)
    } else {
        Exit::Signal(status.signal().unwrap_or(0))
    };
    Ok(CommandOutcome {
        exit,
        duration,
        output,
        timeout: request.timeout,
    })
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
