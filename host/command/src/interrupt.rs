//! The person's Ctrl-C, reaching a call that is running (ADR-0087).
//!
//! A turn is cancelled on the async side (a `CancellationToken`), but a
//! command is watched by a blocking `poll` and an MCP call waits in
//! another runtime. An [`Interrupt`] is the one thing both can wait on: a
//! flag, and an `eventfd` that becomes readable when it is fired, so the
//! command's watcher wakes at once instead of at its timeout.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A one-way "stop now" for one call: fired once, seen by every clone.
#[derive(Clone, Debug)]
pub struct Interrupt(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    fired: AtomicBool,
    /// Readable once fired; `None` where the kernel would not make one
    /// (the watcher then looks at the flag at least every
    /// [`POLL_WITHOUT_FD`]).
    wake: Option<OwnedFd>,
}

/// How often a watcher without the `eventfd` looks at the flag.
pub(crate) const POLL_WITHOUT_FD: std::time::Duration = std::time::Duration::from_millis(100);

impl Interrupt {
    /// A new interrupt, not fired.
    pub fn new() -> Self {
        let wake = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )
        .ok();
        Self(Arc::new(Inner {
            fired: AtomicBool::new(false),
            wake,
        }))
    }

    /// Fires it: every call watching it stops. Firing twice is once.
    pub fn fire(&self) {
        if !self.0.fired.swap(true, Ordering::SeqCst)
            && let Some(fd) = &self.0.wake
        {
            // The counter only grows; a full counter is readable anyway.
            let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
        }
    }

    /// Whether it was fired.
    pub fn is_fired(&self) -> bool {
        self.0.fired.load(Ordering::SeqCst)
    }

    /// The descriptor that becomes readable when it is fired.
    pub(crate) fn wake_fd(&self) -> Option<BorrowedFd<'_>> {
        self.0.wake.as_ref().map(AsFd::as_fd)
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn firing_makes_the_descriptor_readable_and_is_seen_by_clones() {
        let interrupt = Interrupt::new();
        let seen = interrupt.clone();
        let fd = interrupt.wake_fd().unwrap();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        assert_eq!(rustix::event::poll(&mut fds, Some(&zero)).unwrap(), 0);
        assert!(!seen.is_fired());
        interrupt.fire();
        interrupt.fire();
        assert!(seen.is_fired());
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        assert_eq!(rustix::event::poll(&mut fds, Some(&zero)).unwrap(), 1);
    }
}
