//! The command's child processes: spawning `sh -c` with the sandbox
//! applied in a `pre_exec` hook (system calls only), the second fork of a
//! view, watching the command to its end through a pidfd, killing its whole
//! group, and the private temporary directory. What the sandbox is made of
//! is prepared in [`crate::run`] and its modules; this is how it is run.

use std::ffi::OsString;
use std::io::{self, PipeReader, Read};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags, RawDir};
use rustix::io::FdFlags;
use rustix::process::{Pid, PidfdFlags, Resource, Rlimit, Signal};

use crate::interrupt::Interrupt;
use crate::limits::{
    CPU_SECONDS, DATA_BYTES, DRAIN_AFTER_KILL, FILE_BYTES, NPROC, OPEN_FILES, OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES, STDOUT_APART_BYTES,
};
use crate::output::{Capture, Captured};
use crate::pids::PidsGroup;
use crate::run::{CommandError, CommandRequest, Containment, Exit, PidsCgroup};

/// Whether this process may make a user namespace (root may do without).
pub(crate) fn user_namespaces_work() -> bool {
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
pub(crate) fn wait_and_exit(second: libc::pid_t) -> ! {
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
pub(crate) fn pids_group(
    containment: &Containment,
) -> Result<Option<(PidsGroup, OwnedFd)>, CommandError> {
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

/// `sh -c`, with the environment, stdin empty (or the request's, from an
/// memory file of GOAT's) and the output in one pipe (its write end held
/// by the command only).
pub(crate) fn shell(
    request: &CommandRequest<'_>,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
) -> Result<Command, CommandError> {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(request.command)
        .current_dir(cwd)
        .env_clear()
        .envs(env);
    match request.stdin {
        None => {
            command.stdin(Stdio::null());
        }
        Some(bytes) => {
            command.stdin(stdin_file(bytes).map_err(CommandError::Spawn)?);
        }
    }
    Ok(command)
}

/// `bytes` in a memory file, read from its start: the command's stdin,
/// written whole before it starts (no file on any disk).
fn stdin_file(bytes: &[u8]) -> io::Result<std::fs::File> {
    use rustix::fs::{MemfdFlags, SealFlags};
    use std::io::{Seek, Write};
    let fd = rustix::fs::memfd_create(
        "goat-stdin",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    file.rewind()?;
    // Sealed: the command can read it, never write it or make it grow in
    // GOAT's memory.
    rustix::fs::fcntl_add_seals(
        &file,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )?;
    Ok(file)
}

/// In the child, first: its own session, death with GOAT, the cgroup, the
/// resource limits.
pub(crate) fn first_steps(join_fd: Option<RawFd>) -> io::Result<()> {
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
/// Marks every descriptor above stdio close-on-exec again, in the view's
/// second child: a fork handler GOAT's own libraries registered (wasmtime
/// reopens `/proc/PID/pagemap` at each fork) runs after the first sweep
/// of [`install_pre_exec`], and its descriptor would reach the program.
pub(crate) fn cloexec_above_stdio() -> io::Result<()> {
    #[expect(unsafe_code, reason = "close_range in the forked child")]
    // SAFETY: a system call on plain integers; it marks descriptors
    // close-on-exec and closes none.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(crate) fn install_pre_exec(
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
pub(crate) fn wait_group_gone(pgid: Pid) {
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

/// [`spawn_and_watch`], also giving the group the command ran in, with
/// `spawned` called once the command is spawned and before it is watched
/// (its failure kills the command: what it sets up is needed).
pub(crate) fn spawn_and_watch_group(
    command: Command,
    request: &CommandRequest<'_>,
    pids: Option<&PidsGroup>,
    spawned: &mut dyn FnMut() -> io::Result<()>,
) -> Result<(Watched, Pid), CommandError> {
    let mut pgid = None;
    let watched = spawn_and_watch_inner(command, request, pids, &mut pgid, spawned)?;
    let pgid = pgid.ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::NotFound)))?;
    Ok((watched, pgid))
}

/// How a watched command ended, and what it wrote.
pub(crate) struct Watched {
    pub(crate) exit: Exit,
    pub(crate) duration: Duration,
    /// stdout and stderr, or stderr alone when stdout was kept apart.
    pub(crate) output: Captured,
    /// stdout, when kept apart.
    pub(crate) stdout: Option<Captured>,
}

/// Spawns `command` with its output in a pipe, watches it to its end (or
/// the timeout), and reaps it.
pub(crate) fn spawn_and_watch(
    command: Command,
    request: &CommandRequest<'_>,
    pids: Option<&PidsGroup>,
) -> Result<Watched, CommandError> {
    spawn_and_watch_inner(command, request, pids, &mut None, &mut || Ok(()))
}

fn spawn_and_watch_inner(
    mut command: Command,
    request: &CommandRequest<'_>,
    pids: Option<&PidsGroup>,
    pgid: &mut Option<Pid>,
    spawned: &mut dyn FnMut() -> io::Result<()>,
) -> Result<Watched, CommandError> {
    // The view or the snapshot took a while: a turn cancelled meanwhile
    // starts nothing (the watcher stops what starts after this look).
    if request.interrupt.is_some_and(Interrupt::is_fired) {
        return Err(CommandError::Interrupted);
    }
    let (reader, writer) = io::pipe().map_err(CommandError::Spawn)?;
    let stdout_reader = if request.stdout_apart {
        let (out_reader, out_writer) = io::pipe().map_err(CommandError::Spawn)?;
        command.stdout(out_writer);
        Some(out_reader)
    } else {
        command.stdout(writer.try_clone().map_err(CommandError::Spawn)?);
        None
    };
    command.stderr(writer);
    let started = Instant::now();
    let mut child = command.spawn().map_err(CommandError::Spawn)?;
    // The parent's copies of the pipe's write end go with the Command, so
    // the pipe ends when the last process of the command closes it.
    drop(command);
    let pid = Pid::from_raw(child.id().cast_signed())
        .ok_or_else(|| CommandError::Watch(io::Error::from(io::ErrorKind::InvalidData)))?;
    *pgid = Some(pid);
    if let Err(e) = spawned() {
        kill_group(pid, pids);
        let _ = child.wait();
        return Err(CommandError::Containment(format!(
            "the command was stopped as it started: {e}"
        )));
    }
    let watched = watch(
        pid,
        (reader, stdout_reader),
        request.timeout,
        request.interrupt,
        pids,
    );
    // Reap the shell whatever happened above: it was killed with its group.
    if watched.is_err() {
        kill_group(pid, pids);
    }
    let status = child.wait().map_err(CommandError::Watch)?;
    let (output, stdout, stopped) = watched?;
    let duration = started.elapsed();
    let exit = if let Some(stopped) = stopped {
        stopped
    } else if let Some(code) = status.code() {
        Exit::Code(code)
    } else {
        Exit::Signal(status.signal().unwrap_or(0))
    };
    Ok(Watched {
        exit,
        duration,
        output,
        stdout,
    })
}

/// The directory to run in: inside the workspace, by its real path.
pub(crate) fn working_dir(workspace: &Path, cwd: Option<&Path>) -> Result<PathBuf, CommandError> {
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
pub(crate) fn environment(containment: &Containment, tmpdir: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    env.push(("PATH".into(), path));
    for name in ["HOME", "LANG", "TERM"]
        .into_iter()
        .chain(containment.env.iter().map(String::as_str))
    {
        // The proxy's variables are GOAT's to set, never the person's
        // environment's: a NO_PROXY passed on would only send a client at
        // a wall, and an old HTTPS_PROXY at the wrong port.
        if matches!(name, "PATH" | "TMPDIR") || crate::net::is_proxy_variable(name) {
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
pub(crate) fn kill_group(pid: Pid, pids: Option<&PidsGroup>) {
    // ESRCH (nothing left) is the usual answer and needs nothing done.
    let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    if let Some(group) = pids {
        group.kill_all(KILL_ROUNDS_AT_END);
    }
}

/// Reads the output and waits for the shell to exit, the timeout to pass
/// or the `interrupt` to fire, then kills the group and drains what is
/// left. Returns the output and, when GOAT stopped it, how
/// ([`Exit::TimedOut`] or [`Exit::Interrupted`]).
fn watch(
    pid: Pid,
    (mut reader, mut stdout_reader): (PipeReader, Option<PipeReader>),
    timeout: Duration,
    interrupt: Option<&Interrupt>,
    pids: Option<&PidsGroup>,
) -> Result<(Captured, Option<Captured>, Option<Exit>), CommandError> {
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty())
        .map_err(|e| CommandError::Watch(e.into()))?;
    let started = Instant::now();
    let mut capture = Capture::new(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
    let mut stdout_capture = stdout_reader
        .as_ref()
        .map(|_| Capture::new(STDOUT_APART_BYTES, 0));
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut pipe_open = true;
    let mut exited = false;
    let mut stopped = None;
    let mut drain_until: Option<Instant> = None;
    let wake = interrupt.and_then(Interrupt::wake_fd);
    loop {
        if exited && !pipe_open && stdout_reader.is_none() {
            break;
        }
        // Fired: the group is killed at once, as at the timeout (unless it
        // already ended on its own).
        if stopped.is_none() && !exited && interrupt.is_some_and(Interrupt::is_fired) {
            stopped = Some(Exit::Interrupted);
            kill_group(pid, pids);
            drain_until = Some(Instant::now() + DRAIN_AFTER_KILL);
            continue;
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
            stopped = Some(Exit::TimedOut);
            kill_group(pid, pids);
            drain_until = Some(Instant::now() + DRAIN_AFTER_KILL);
            continue;
        }
        let mut wait = deadline - now;
        if interrupt.is_some() && wake.is_none() {
            wait = wait.min(crate::interrupt::POLL_WITHOUT_FD);
        }
        let wait = Timespec {
            tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let mut fds = Vec::with_capacity(3);
        fds.push(PollFd::new(&pidfd, PollFlags::IN));
        let reader_at = pipe_open.then(|| {
            fds.push(PollFd::new(&reader, PollFlags::IN));
            fds.len() - 1
        });
        let stdout_at = stdout_reader.as_ref().map(|out| {
            fds.push(PollFd::new(out, PollFlags::IN));
            fds.len() - 1
        });
        // Once fired, the descriptor stays readable: it is not watched
        // again, or the drain would spin.
        if let Some(fd) = &wake
            && stopped.is_none()
            && !exited
        {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&wait)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(CommandError::Watch(e.into())),
        }
        let shell_done = !fds[0].revents().is_empty();
        let readable = reader_at.is_some_and(|at| !fds[at].revents().is_empty());
        let stdout_readable = stdout_at.is_some_and(|at| !fds[at].revents().is_empty());
        drop(fds);
        if stdout_readable && let Some(out) = stdout_reader.as_mut() {
            match out.read(&mut buf) {
                Ok(0) => stdout_reader = None,
                Ok(n) => {
                    if let Some(c) = stdout_capture.as_mut() {
                        c.feed(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CommandError::Watch(e)),
            }
        }
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
    Ok((
        capture.finish(),
        stdout_capture.map(Capture::finish),
        stopped,
    ))
}

/// The command's own temporary directory, removed with everything in it
/// when dropped.
pub(crate) struct PrivateTmp(pub(crate) PathBuf);

impl PrivateTmp {
    pub(crate) fn create() -> Result<Self, CommandError> {
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
