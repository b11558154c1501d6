//! Turning a failed call into the [`ToolFailure`] the model is told: which
//! limit it ran into, or what crashed.
//!
//! Limits are named before crashes because hitting one usually also traps;
//! the trap alone would tell the model less.

use wasmtime::{Store, Trap};

use crate::call::Host;
use crate::limiter::MemoryLimitExceeded;
use crate::output::{CappedOutput, StdioLimitExceeded};
use crate::{MAX_CONCURRENT_CALLS, Sandbox, ToolFailure};

/// Bytes of a crashed guest's stderr kept in its crash report.
const CRASH_STDERR_TAIL_BYTES: usize = 2048;

impl Sandbox {
    /// Names the limit a failed call ran into, or reports the crash.
    pub(crate) fn classify(
        &self,
        e: &wasmtime::Error,
        store: &Store<Host>,
        stdout: &CappedOutput,
        stderr: &CappedOutput,
    ) -> ToolFailure {
        // The call's own limits: a plugin's may be granted.
        let limits = store.data().limiter.limits();
        if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return ToolFailure::Timeout {
                limit: limits.timeout,
            };
        }
        if store.data().limiter.memory_exceeded()
            || e.downcast_ref::<MemoryLimitExceeded>().is_some()
        {
            return ToolFailure::MemoryExceeded {
                limit_bytes: limits.memory_bytes,
            };
        }
        if let Some(over) = e.downcast_ref::<StdioLimitExceeded>() {
            return ToolFailure::OutputExceeded {
                stream: over.stream,
                limit_bytes: over.limit_bytes,
            };
        }
        if let Some(out) = [stdout, stderr].into_iter().find(|o| o.exceeded()) {
            return ToolFailure::OutputExceeded {
                stream: out.name(),
                limit_bytes: limits.stdio_bytes,
            };
        }
        if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
            return ToolFailure::LimitExceeded {
                what: format!("more than {MAX_CONCURRENT_CALLS} tool calls at once"),
            };
        }
        // The WASI table and the store's component handles share one
        // budget; either may run out first.
        let text = format!("{e:#}");
        let table = e.downcast_ref::<wasmtime::component::ResourceTableError>();
        if matches!(table, Some(wasmtime::component::ResourceTableError::Full))
            || text.contains("handle limit exceeded")
        {
            return ToolFailure::LimitExceeded {
                what: format!("more than {} open WASI resources", limits.resources),
            };
        }
        // Any other misuse of a resource (one dropped before its children,
        // one that is not there) is the tool's own bug, not a limit.
        if let Some(misuse) = table {
            return crashed(
                format!("the tool misused a WASI resource ({misuse})"),
                stderr,
            );
        }
        // wasmtime reports these with private error types.
        if text.contains("fuel allocated for hostcalls has been exhausted") {
            return ToolFailure::LimitExceeded {
                what: format!(
                    "more than {} bytes passed to the host in one call",
                    limits.hostcall_bytes
                ),
            };
        }
        if text.contains("resource limit exceeded") {
            return ToolFailure::LimitExceeded {
                what: first_line(&text),
            };
        }
        // `wasi:cli/exit` ends a call without a result: a tool failure
        // that says so, never the host's exit.
        if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
            return crashed(
                format!(
                    "the tool exited (code {}) instead of returning a result",
                    exit.0
                ),
                stderr,
            );
        }
        // The top-level message is wasmtime's "error while executing at
        // wasm backtrace: ..."; the trap itself says what happened.
        let message = match e.downcast_ref::<Trap>() {
            Some(trap) => trap.to_string(),
            None => first_line(&format!("{}", e.root_cause())),
        };
        crashed(message, stderr)
    }
}

/// A crash saying `message`, with the tail of what the guest wrote to
/// stderr (a Python traceback, a panic message).
fn crashed(mut message: String, stderr: &CappedOutput) -> ToolFailure {
    let tail = stderr.tail(CRASH_STDERR_TAIL_BYTES);
    if !tail.trim().is_empty() {
        message.push_str("; stderr: ");
        message.push_str(tail.trim());
    }
    ToolFailure::Crashed { message }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}
