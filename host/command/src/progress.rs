//! Where a view's set-up got to, so that a failure names the step.
//!
//! The view is made by forked children that may only make system calls,
//! and `std::process::Command` carries nothing back from them but an
//! `errno`: "Operation not permitted" with no word of which mount, map or
//! filter the kernel refused. Before the fork GOAT maps one shared
//! anonymous page; the children write the number of the stage they are
//! about to take into it (a plain store, no system call), and when the
//! spawn fails GOAT reads it and names the stage.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Stages before the view's own steps; a view step `i` is
/// [`STEP_BASE`]` + i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Stage {
    /// A new session, the pids cgroup, the resource limits.
    FirstSteps = 1,
    /// The new namespaces and the user namespace's id maps.
    Namespaces = 2,
    /// The fork of the namespace's first process.
    Fork = 3,
    /// Mounts made private, and the new root's `tmpfs`.
    Root = 4,
    /// `pivot_root` into the view and the working directory.
    PivotRoot = 5,
    /// The Landlock rules.
    Landlock = 6,
    /// Every capability dropped.
    Capabilities = 7,
    /// The seccomp filter.
    Seccomp = 8,
    /// The command's `exec`: the sandbox was complete.
    Exec = 9,
}

/// Where the view's own steps are numbered from.
pub(crate) const STEP_BASE: u32 = 100;

impl Stage {
    fn describe(n: u32) -> Option<&'static str> {
        Some(match n {
            0 => "before anything",
            1 => "a new session, the pids cgroup and the resource limits",
            2 => "the new namespaces and their id maps",
            3 => "the fork of the namespace's first process",
            4 => "the new root's tmpfs",
            5 => "pivot_root into the view",
            6 => "the Landlock rules",
            7 => "dropping every capability",
            8 => "the seccomp filter",
            9 => "exec of the command",
            _ => return None,
        })
    }
}

/// One `u32` in a page shared with the forked children.
pub(crate) struct Progress {
    at: NonNull<AtomicU32>,
}

// SAFETY: the page is only ever accessed through the atomic.
#[expect(unsafe_code, reason = "a shared mapping is accessed only atomically")]
unsafe impl Send for Progress {}
// SAFETY: as above.
#[expect(unsafe_code, reason = "a shared mapping is accessed only atomically")]
unsafe impl Sync for Progress {}

impl Progress {
    /// Maps the page, at [`Stage::Start`].
    pub(crate) fn new() -> io::Result<Self> {
        #[expect(unsafe_code, reason = "mmap of a fresh anonymous shared page")]
        // SAFETY: a new anonymous mapping aliases nothing; it is unmapped
        // only in `drop`.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<AtomicU32>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // A fresh anonymous page is zero: "before anything". Page-aligned, so
        // aligned for the atomic.
        let at = NonNull::new(page.cast::<AtomicU32>()).ok_or(io::ErrorKind::OutOfMemory)?;
        Ok(Self { at })
    }

    fn cell(&self) -> &AtomicU32 {
        #[expect(unsafe_code, reason = "the mapping lives as long as self")]
        // SAFETY: mapped in `new`, unmapped in `drop`, zero-initialised.
        unsafe {
            self.at.as_ref()
        }
    }

    /// In the child: about to take `stage`. A store, no system call.
    pub(crate) fn mark(&self, stage: Stage) {
        self.cell().store(stage as u32, Ordering::SeqCst);
    }

    /// In the child: about to take the view's step `index`.
    pub(crate) fn mark_step(&self, index: usize) {
        let n = u32::try_from(index).map_or(u32::MAX, |i| i.saturating_add(STEP_BASE));
        self.cell().store(n, Ordering::SeqCst);
    }

    /// Whether the children got as far as `exec`: a failure then is the
    /// command's own (no shell), not the sandbox's.
    pub(crate) fn reached_exec(&self) -> bool {
        self.cell().load(Ordering::SeqCst) == Stage::Exec as u32
    }

    /// The stage the children were at, in words; `steps` names the view's
    /// own steps.
    pub(crate) fn describe(&self, steps: &[String]) -> String {
        let n = self.cell().load(Ordering::SeqCst);
        if let Some(words) = Stage::describe(n) {
            return words.to_owned();
        }
        n.checked_sub(STEP_BASE)
            .and_then(|i| steps.get(usize::try_from(i).ok()?))
            .map_or_else(
                || format!("stage {n}"),
                |step| format!("the view's step: {step}"),
            )
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        #[expect(unsafe_code, reason = "unmapping the page mapped in new")]
        // SAFETY: mapped in `new` with this size; no reference outlives self.
        unsafe {
            libc::munmap(self.at.as_ptr().cast(), std::mem::size_of::<AtomicU32>());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_s_stage_is_read_by_the_parent() -> io::Result<()> {
        let progress = Progress::new()?;
        #[expect(
            unsafe_code,
            reason = "fork in a test; the child only stores and exits"
        )]
        // SAFETY: the child makes one store and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            progress.mark_step(2);
            // SAFETY: `_exit` runs nothing of the test harness.
            #[expect(unsafe_code, reason = "_exit in the forked child")]
            unsafe {
                libc::_exit(0)
            };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        #[expect(unsafe_code, reason = "waitpid of the forked child")]
        unsafe {
            libc::waitpid(pid, &raw mut status, 0);
        }
        let steps = [
            "mkdir /a".to_owned(),
            "tmpfs /b".to_owned(),
            "bind /c at /d".to_owned(),
        ];
        assert_eq!(progress.describe(&steps), "the view's step: bind /c at /d");
        progress.mark(Stage::Seccomp);
        assert_eq!(progress.describe(&steps), "the seccomp filter");
        assert!(!progress.reached_exec());
        Ok(())
    }
}
