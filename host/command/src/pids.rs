//! A pids cgroup for one command, where GOAT may make one.
//!
//! `RLIMIT_NPROC` counts a user's processes and the kernel ignores it for
//! root, so it cannot hold a fork bomb on its own. Where the cgroup v1
//! `pids` hierarchy is writable (GOAT run as root, as in a container or
//! CI), each command gets a cgroup of its own with [`MAX_PROCESSES`]: the
//! child joins it before `exec`, and when the command ends every process
//! still in it is killed, whatever group or session it put itself in.
//! Elsewhere (cgroup v2 without a delegated subtree) this is skipped and
//! said in `docs/security.md`.
//!
//! # Key decision: the child joins through `tasks`, not `cgroup.procs`
//!
//! Writing a process to `cgroup.procs` takes the kernel's global
//! threadgroup lock for writing, and taking it waits for an RCU grace
//! period: 5 to 30 ms on the machine GOAT was measured on, paid on every
//! command by its start-up (ADR-0070). A thread that moves only itself
//! (`0` written to `tasks`) skips that lock, since it cannot exit or exec
//! while it writes. Between `fork` and `exec` the child has exactly one
//! thread, so moving that thread moves the whole process: what it then
//! forks or execs is born inside the cgroup, as with `cgroup.procs`.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, Signal};

use crate::limits::MAX_PROCESSES;

/// The cgroup v1 `pids` hierarchy.
const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";

/// Pause between passes over `cgroup.procs`: killed processes leave the
/// list within a few milliseconds.
const KILL_PASS_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// Passes before the cgroup is removed (at most a second of pauses): the
/// cgroup can only be removed once it is empty.
const KILL_ROUNDS_ON_DROP: usize = 200;

/// A fresh name for each command in this process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One command's pids cgroup, removed when dropped.
pub(crate) struct PidsGroup {
    dir: PathBuf,
    /// `tasks`, opened for writing: the child, still single-threaded,
    /// writes `0` to move itself in (see the module's key decision).
    pub join: OwnedFd,
}

impl PidsGroup {
    /// A new cgroup limited to [`MAX_PROCESSES`], or `None` where none can
    /// be made.
    pub(crate) fn create() -> Option<Self> {
        let root = PathBuf::from(PIDS_ROOT);
        if !root.join("cgroup.procs").exists() {
            return None;
        }
        let dir = root.join(format!(
            "goat-command-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&dir).ok()?;
        let group = Self {
            join: match rustix::fs::open(
                dir.join("tasks"),
                OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(_) => {
                    let _ = fs::remove_dir(&dir);
                    return None;
                }
            },
            dir,
        };
        fs::write(group.dir.join("pids.max"), MAX_PROCESSES.to_string()).ok()?;
        Some(group)
    }

    /// Kills every process in the cgroup, until it is empty or `rounds`
    /// passes have been made (a process forking as it is killed).
    pub(crate) fn kill_all(&self, rounds: usize) {
        for _ in 0..rounds {
            let Ok(text) = fs::read_to_string(self.dir.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids.into_iter().filter_map(Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
            std::thread::sleep(KILL_PASS_PAUSE);
        }
    }
}

impl Drop for PidsGroup {
    fn drop(&mut self) {
        self.kill_all(KILL_ROUNDS_ON_DROP);
        let _ = fs::remove_dir(&self.dir);
    }
}
