//! The `run_command` tool's runner and its containment (`goat-command`).
//!
//! A model that can edit code must be able to build and test it, and a
//! build runs native programs: there is no WASI component to hold them in.
//! So a command gets an operating-system sandbox of its own, applied in the
//! child between `fork` and `exec` (ADR-0070), on every call, with no
//! argument the model could use to turn any of it off:
//!
//! - **Filesystem** ([`fs`], Landlock): the workspace readable and
//!   writable except the paths the permission gate keeps from it (hidden or
//!   read-only) and the version-control directories (read-only); a private
//!   `TMPDIR`; system locations and toolchain directories read-only;
//!   nothing else, the rest of the home directory included, even readable.
//! - **Network** ([`seccomp`] and Landlock): no TCP bind or connect, no
//!   socket family but Unix; no io_uring (it would bypass both). Opened
//!   only by the host's [`Network::Open`]; [`Network::Proxied`] allows one
//!   TCP port, where the host's egress proxy listens ([`net`]).
//! - **Process** ([`run`]): no new privileges, its own session and process
//!   group which it cannot leave (`setsid`/`setpgid` refused), no signals
//!   to processes outside its Landlock domain, stdin from `/dev/null`, a
//!   scrubbed environment, resource limits ([`limits`]), a wall-clock
//!   timeout that kills the whole group, the person's [`Interrupt`]
//!   (Ctrl-C) that does the same at once, and output captured with a cap
//!   ([`output`]).
//!
//! Where the kernel lacks what is needed, [`support`] says why and the tool
//! is not offered: it fails closed, never runs a command uncontained.

pub mod attempt;
mod caps;
mod child;
pub mod fs;
pub mod gitindex;
pub mod inspect;
mod interrupt;
mod land;
mod launch;
pub mod layer;
pub mod limits;
pub mod net;
pub mod output;
mod pids;
mod progress;
pub mod run;
pub mod seccomp;
mod server;
mod snapshot;
mod special;
mod support;
mod view;

pub use fs::{WorkspaceRules, default_read_paths};
pub use inspect::{Guard, Inspection};
pub use interrupt::Interrupt;
pub use land::LandError;
pub use layer::{ChangeSet, Node, PathChange};
pub use net::{ProxyLink, VIEW_PROXY_PORT};
pub use output::Captured;
pub use run::{
    Changes, CommandError, CommandOutcome, CommandRequest, Containment, ContainmentMode, Exit,
    Network, Pending, PidsCgroup, Unsupported, Used, reads_host_file, run,
};
pub use server::{Server, ServerSpec, WorkspaceWatch, server_support, start_server};
pub use support::{namespace_support, resolve, resolve_mode, support, workspace_support};
