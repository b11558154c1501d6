//! The limits every tool call runs under.
//!
//! Each is a named constant saying why it has that value. They belong to
//! the host: a tool's spec cannot raise them, and neither can a plugin.

use std::time::Duration;

/// Wall time one call may take, instantiation included. Pen tools finish in
/// milliseconds; a search over a large tree takes seconds. Past this the
/// guest is interrupted (epoch interruption), never left spinning.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the epoch ticker advances. Sets the resolution of the timeout
/// and how soon a runaway guest notices it: a few milliseconds is prompt
/// without waking a core often.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Linear memory one call may use, all memories together. The Pen tools cap
/// files at 4 MiB and need a few copies of that; 128 MiB leaves room for
/// plugins while a guest asking for 1 GiB is stopped at once.
pub const DEFAULT_MEMORY_BYTES: usize = 128 * 1024 * 1024;

/// Table elements per table. Rust guests use a few hundred for indirect
/// calls; a guest growing tables without bound is stopped long before the
/// host feels it.
pub const DEFAULT_TABLE_ELEMENTS: usize = 20_000;

/// Core instances per call. A component built by wasm-component-ld
/// instantiates a handful of core modules (the tool, its adapters, shims);
/// 32 is ample and keeps instantiation from being a resource sink.
pub const DEFAULT_INSTANCES: usize = 32;

/// Tables per call, for the same reason as [`DEFAULT_INSTANCES`].
pub const DEFAULT_TABLES: usize = 32;

/// Linear memories per call: a component has one or two.
pub const DEFAULT_MEMORIES: usize = 8;

/// Live WASI resources (descriptors, streams, directory iterators) per
/// call. A directory walk holds a few per level; 4096 allows deep trees
/// while bounding host-side allocation.
pub const DEFAULT_RESOURCES: usize = 4096;

/// Bytes a guest may hand the host in one hostcall (a write buffer, a
/// path). The Pen tools write in 64 KiB chunks; 1 MiB bounds what a hostile
/// guest can make the host allocate per call.
pub const DEFAULT_HOSTCALL_BYTES: usize = 1024 * 1024;

/// Bytes a tool may print to stdout and to stderr each. Output is captured
/// for diagnostics, never shown to the model or inherited; a guest that
/// writes past this is stopped with a typed error.
pub const DEFAULT_STDIO_BYTES: usize = 64 * 1024;

/// Bytes of result one call may return. The Pen tools stop themselves at
/// 128 KiB; this is the host's backstop against any tool.
pub const DEFAULT_RESULT_BYTES: usize = 1024 * 1024;

/// Tool calls that can run at once in one sandbox. The Shepherd runs a
/// round's calls one after another, so a handful is plenty; each slot
/// reserves address space (not memory) for its instances.
pub const MAX_CONCURRENT_CALLS: u32 = 16;

/// The limits one call runs under. [`Limits::default`] is what GOAT uses;
/// tests lower them to reach them quickly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// See [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// See [`DEFAULT_MEMORY_BYTES`].
    pub memory_bytes: usize,
    /// See [`DEFAULT_TABLE_ELEMENTS`].
    pub table_elements: usize,
    /// See [`DEFAULT_INSTANCES`].
    pub instances: usize,
    /// See [`DEFAULT_TABLES`].
    pub tables: usize,
    /// See [`DEFAULT_MEMORIES`].
    pub memories: usize,
    /// See [`DEFAULT_RESOURCES`].
    pub resources: usize,
    /// See [`DEFAULT_HOSTCALL_BYTES`].
    pub hostcall_bytes: usize,
    /// See [`DEFAULT_STDIO_BYTES`].
    pub stdio_bytes: usize,
    /// See [`DEFAULT_RESULT_BYTES`].
    pub result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            table_elements: DEFAULT_TABLE_ELEMENTS,
            instances: DEFAULT_INSTANCES,
            tables: DEFAULT_TABLES,
            memories: DEFAULT_MEMORIES,
            resources: DEFAULT_RESOURCES,
            hostcall_bytes: DEFAULT_HOSTCALL_BYTES,
            stdio_bytes: DEFAULT_STDIO_BYTES,
            result_bytes: DEFAULT_RESULT_BYTES,
        }
    }
}

impl Limits {
    /// Epoch ticks the timeout spans, rounded up, at least one.
    pub(crate) fn timeout_ticks(&self) -> u64 {
        let tick = EPOCH_TICK.as_nanos().max(1);
        u64::try_from(self.timeout.as_nanos().div_ceil(tick))
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_rounds_up_to_whole_ticks() {
        let limits = Limits {
            timeout: EPOCH_TICK * 3 + std::time::Duration::from_nanos(1),
            ..Limits::default()
        };
        assert_eq!(limits.timeout_ticks(), 4);
        let zero = Limits {
            timeout: std::time::Duration::ZERO,
            ..Limits::default()
        };
        assert_eq!(zero.timeout_ticks(), 1);
    }
}
