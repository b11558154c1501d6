//! Errors, in two kinds kept apart by type.
//!
//! [`ToolFailure`] is what the model should see as the result of its call:
//! the tool said the arguments were wrong, a path did not exist, the
//! sandbox stopped a runaway guest. The turn goes on. [`SandboxError`] is
//! what the host must handle: a component that cannot be loaded, a
//! workspace that cannot be opened, a cache that cannot be written.

use std::path::PathBuf;
use std::time::Duration;

/// A failure the tool itself reported, as the `goat:tool` WIT `tool-error`
/// variant types it. Each message is written for the model. Exhaustive on
/// purpose: the host gives every variant a stored kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's schema or make no sense.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A path named in the arguments does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The request conflicts with what is on disk.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The sandbox refused the operation.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// Input or output over one of the tool's caps.
    #[error("too large: {0}")]
    TooLarge(String),
    /// Any other filesystem failure.
    #[error("io error: {0}")]
    Io(String),
}

impl ToolError {
    /// A stable, machine-readable name of the variant.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments(_) => "invalid-arguments",
            Self::NotFound(_) => "not-found",
            Self::Conflict(_) => "conflict",
            Self::PermissionDenied(_) => "permission-denied",
            Self::TooLarge(_) => "too-large",
            Self::Io(_) => "io",
        }
    }

    /// The message without the kind prefix.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidArguments(m)
            | Self::NotFound(m)
            | Self::Conflict(m)
            | Self::PermissionDenied(m)
            | Self::TooLarge(m)
            | Self::Io(m) => m,
        }
    }
}

/// Why a call produced no result. Reported to the model as the call's
/// result; the host stays healthy after every one of these.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolFailure {
    /// The tool reported an error.
    #[error("{0}")]
    Tool(ToolError),
    /// The guest ran past its wall-time limit and was interrupted.
    #[error("the tool ran longer than {limit:?} and was stopped")]
    Timeout {
        /// The limit it ran into.
        limit: Duration,
    },
    /// The guest tried to use more linear memory than allowed.
    #[error("the tool tried to use more than {limit_bytes} bytes of memory and was stopped")]
    MemoryExceeded {
        /// The limit it ran into.
        limit_bytes: usize,
    },
    /// The guest wrote more to stdout/stderr, or returned a larger result,
    /// than allowed.
    #[error("the tool produced more than {limit_bytes} bytes of {stream} and was stopped")]
    OutputExceeded {
        /// `stdout`, `stderr` or `result`.
        stream: &'static str,
        /// The limit it ran into.
        limit_bytes: usize,
    },
    /// The guest hit another resource limit (instances, tables, resources).
    #[error("the tool exceeded a sandbox limit: {what}")]
    LimitExceeded {
        /// Which limit, in words.
        what: String,
    },
    /// The guest trapped: a panic, an unreachable instruction, a bad access.
    #[error("the tool crashed: {message}")]
    Crashed {
        /// The trap, and the tail of what the guest wrote to stderr.
        message: String,
    },
}

impl ToolFailure {
    /// A stable, machine-readable name of the failure.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tool(e) => e.kind(),
            Self::Timeout { .. } => "timeout",
            Self::MemoryExceeded { .. } => "memory-exceeded",
            Self::OutputExceeded { .. } => "output-exceeded",
            Self::LimitExceeded { .. } => "limit-exceeded",
            Self::Crashed { .. } => "crashed",
        }
    }

    /// Whether the sandbox, not the tool, stopped the call.
    pub fn is_sandbox_stop(&self) -> bool {
        match self {
            Self::Tool(_) => false,
            Self::Timeout { .. }
            | Self::MemoryExceeded { .. }
            | Self::OutputExceeded { .. }
            | Self::LimitExceeded { .. }
            | Self::Crashed { .. } => true,
        }
    }
}

/// A problem the host must handle; never a tool call's result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The wasmtime engine could not be configured.
    #[error("cannot set up the wasm engine: {0:#}")]
    Engine(wasmtime::Error),
    /// The bytes are not a valid component, or compiling it failed.
    #[error("cannot compile component {name}: {source:#}{}", what_to_do(source))]
    Compile {
        /// Which component.
        name: String,
        /// Why.
        source: wasmtime::Error,
    },
    /// The component imports an interface the sandbox never offers.
    #[error(
        "component {name} imports {}, which GOAT does not offer to tools (tools may import \
         only: {allowed}); it was not compiled, and it was not run",
        quoted(imports)
    )]
    ForbiddenImport {
        /// Which component.
        name: String,
        /// Every import outside what it may import, as the component names
        /// them, in its order.
        imports: Vec<String>,
        /// What may be imported.
        allowed: String,
    },
    /// The component does not export the `goat:tool/tool` interface, or its
    /// spec is unusable.
    #[error("component {name} is not a usable GOAT tool: {reason}")]
    NotATool {
        /// Which component.
        name: String,
        /// Why.
        reason: String,
    },
    /// The workspace directory cannot be used.
    #[error("cannot use workspace {path}: {reason}")]
    Workspace {
        /// The directory given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The compiled-code cache cannot be used.
    #[error("cannot use the compiled-code cache at {path}: {source}")]
    Cache {
        /// The cache file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Setting up or running the call failed in the host, not the guest.
    #[error("sandbox failure: {0:#}")]
    Host(wasmtime::Error),
}

/// `'a', 'b'`: names quoted and joined, for a message.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the person can do about a component wasmtime would not compile,
/// where GOAT knows: a component using the component model's async ABI
/// (jco's QuickJS backend by default) is built again without it, since
/// GOAT runs every call synchronously.
fn what_to_do(source: &wasmtime::Error) -> &'static str {
    if format!("{source:#}").contains("requires the component model async feature") {
        "; GOAT runs tools synchronously and does not run the component model's async ABI: \
         build it without async (jco componentize with the QuickJS backend: \
         --backend-qjs-disable-async)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::SandboxError;

    #[test]
    fn a_component_using_the_async_abi_is_told_how_to_build_without_it() {
        // wasmtime 48's words for jco's QuickJS default build.
        let source = wasmtime::Error::msg(
            "failed to parse WebAssembly module: `task.cancel` requires the component model \
             async feature (at offset 0x19c198)",
        );
        let said = SandboxError::Compile {
            name: "qj".to_owned(),
            source,
        }
        .to_string();
        assert!(said.contains("--backend-qjs-disable-async"), "{said}");
        let other = SandboxError::Compile {
            name: "x".to_owned(),
            source: wasmtime::Error::msg("invalid magic"),
        }
        .to_string();
        assert!(!other.contains("async"), "{other}");
    }
}
