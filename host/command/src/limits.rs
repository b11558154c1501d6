//! Every limit a command runs under, with why that value.

use std::time::Duration;

/// The wall-clock time a command gets when the call names none: long enough
/// for a test suite of a small or medium project, short enough that a hung
/// command does not hold the turn for long.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The most a call may ask for (`timeout_secs`): a full build of a large
/// project; beyond that the person should run it themselves.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// CPU seconds per process (`RLIMIT_CPU`), hard limit. A process can use at
/// most one CPU at a time, so the wall-clock cap already bounds this; the
/// limit only stops a process that escaped the group from spinning on.
pub const CPU_SECONDS: u64 = 600;

/// Writable data per process (`RLIMIT_DATA`): 4 GiB. `RLIMIT_DATA` counts
/// heap and private writable mappings, not address space merely reserved
/// (`PROT_NONE`), so runtimes that reserve large cages (V8, Go) still start
/// while one runaway allocation is stopped; rustc on a large crate stays
/// well under it.
pub const DATA_BYTES: u64 = 4 << 30;

/// Processes and threads for the user (`RLIMIT_NPROC`). The kernel counts
/// every process of the same user, GOAT's and the desktop's included, so
/// the value must leave room for those: it stops a fork bomb at thousands,
/// not at one. The kernel ignores it for root; there the pids cgroup
/// ([`MAX_PROCESSES`]) is the limit where it can be used.
pub const NPROC: u64 = 4096;

/// Processes in the command's own pids cgroup, where GOAT can make one
/// (cgroup v1 `pids` controller writable, as for root): a parallel build
/// runs tens of processes, a fork bomb stops here.
pub const MAX_PROCESSES: u64 = 512;

/// Largest file a command may write (`RLIMIT_FSIZE`): 4 GiB, above the
/// biggest debug artefacts of ordinary builds, below filling a disk by
/// mistake in one file.
pub const FILE_BYTES: u64 = 4 << 30;

/// Open files per process (`RLIMIT_NOFILE`), kept at the usual default so
/// a descriptor leak fails early.
pub const OPEN_FILES: u64 = 4096;

/// Output kept from the start of a command's output: the first error of a
/// build is usually near the top.
pub const OUTPUT_HEAD_BYTES: usize = 16 * 1024;

/// Output kept from the end: the test summary and the last error are at
/// the bottom. Head and tail together stay a small part of a model's
/// context.
pub const OUTPUT_TAIL_BYTES: usize = 16 * 1024;

/// Stdout kept apart ([`crate::CommandRequest::stdout_apart`]): a hook's
/// answer, a small JSON object. Past it the rest is counted, not kept.
pub const STDOUT_APART_BYTES: usize = 64 * 1024;

/// How long to wait for the output pipe to close after the whole group was
/// killed. Every writer is dead by then, so this is only a guard against a
/// descriptor passed outside the group (over a Unix socket to a process that
/// was already running), never a wait a command can stretch.
pub const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// Most workspace entries looked at to place the protected and denied paths
/// (a walk before each command). A workspace bigger than this is refused
/// rather than contained partly.
pub const MAX_WALK_ENTRIES: usize = 500_000;

/// Most paths one command's change set may hold (created, changed and
/// removed together, files inside new directories included). A 2 GiB
/// `target/` of a large Rust build is about 30,000 files; past this the
/// set is refused whole rather than landed unchecked.
pub const MAX_CHANGE_ENTRIES: usize = 500_000;

/// The largest existing file whose bytes GOAT keeps when a command changes
/// or removes it, so `goat undo` can bring it back: the checkpoint cap of
/// the file tools (ADR-0073). A larger one is recorded by its hash only,
/// and undo says it cannot bring it back.
pub const MAX_KEPT_BYTES_PER_FILE: u64 = 8 * 1024 * 1024;

/// The most bytes of existing files one command's checkpoint keeps: a
/// `git clean` of a tree of sources fits, a removed `node_modules` of
/// hundreds of MiB is recorded by hash past this point (and the guard asks
/// about such a removal first).
pub const MAX_KEPT_BYTES_TOTAL: u64 = 256 * 1024 * 1024;

/// In Landlock-only containment (no user namespace), the most bytes of the
/// workspace read before a command so its changes can be undone: files are
/// read smallest first up to this; a change to a file past it is recorded
/// by its hash only, and undo says so.
pub const SNAPSHOT_BYTES: u64 = 64 * 1024 * 1024;
