//! How a call went, as the store keeps it: the constructors for calls
//! that fail or are denied before anything runs.

use std::time::Duration;

use goat_sandbox::{ToolError, ToolFailure};
use goat_store::{CallDecision, CallErrorKind, CallOutcome, CallStatus, Refusal, RefusedBy};

use goat_gate as gate;

/// How one call went, ready for the store and the model: the store's own
/// record of a call's outcome, so nothing is copied field by field.
pub type Routed = CallOutcome;

/// A call that failed before the gate was asked.
pub(crate) fn failed(kind: CallErrorKind, result: String) -> Routed {
    CallOutcome {
        status: CallStatus::Error,
        result,
        error_kind: Some(kind),
        decision: None,
        decision_reason: None,
        duration: Duration::ZERO,
        exit_code: None,
        changes: Vec::new(),
        changes_stored: goat_store::ChangesStored::WithOutcome,
        refusals: Vec::new(),
        hooks: Vec::new(),
    }
}

/// The store's kind for each failure the sandbox or a tool reports. The
/// match is exhaustive, so a new failure cannot be stored without a kind.
pub fn failure_kind(failure: &ToolFailure) -> CallErrorKind {
    match failure {
        ToolFailure::Tool(error) => match error {
            ToolError::InvalidArguments(_) => CallErrorKind::InvalidArguments,
            ToolError::NotFound(_) => CallErrorKind::NotFound,
            ToolError::Conflict(_) => CallErrorKind::Conflict,
            ToolError::PermissionDenied(_) => CallErrorKind::PermissionDenied,
            ToolError::TooLarge(_) => CallErrorKind::TooLarge,
            ToolError::Io(_) => CallErrorKind::Io,
        },
        ToolFailure::Timeout { .. } => CallErrorKind::Timeout,
        ToolFailure::MemoryExceeded { .. } => CallErrorKind::MemoryExceeded,
        ToolFailure::OutputExceeded { .. } => CallErrorKind::OutputExceeded,
        ToolFailure::LimitExceeded { .. } => CallErrorKind::LimitExceeded,
        ToolFailure::Crashed { .. } => CallErrorKind::Crashed,
    }
}

/// A call the gate denied, counted as [`CallErrorKind::NeedsApproval`]
/// when the only reason was that no one could be asked.
pub(crate) fn denied_because(why: &gate::Denial, reason: String) -> Routed {
    let (by, target) = match why {
        gate::Denial::NeedsApproval { path } => (RefusedBy::NeedsApproval, path.clone()),
        gate::Denial::CommandNeedsApproval { command } => {
            (RefusedBy::NeedsApproval, Some(command.clone()))
        }
        gate::Denial::Path { raw, .. } => (RefusedBy::Path, Some(raw.clone())),
        gate::Denial::Rule { path, .. } => (RefusedBy::Rule, path.clone()),
        gate::Denial::Protected { path } => (RefusedBy::Protected, Some(path.clone())),
        // The rules unreadable or unusable, or a denial added later: the
        // gate failed closed.
        _ => (RefusedBy::Rule, None),
    };
    let mut routed = match by {
        RefusedBy::NeedsApproval => unasked(reason),
        _ => denied(by, CallDecision::Deny, reason),
    };
    if let Some(refusal) = routed.refusals.first_mut() {
        refusal.target = target;
    }
    routed
}

/// A call that ran and succeeded with `result`, before any decision was
/// needed (the caller fills in why none was).
pub(crate) fn succeeded(result: String) -> Routed {
    CallOutcome {
        status: CallStatus::Ok,
        result,
        error_kind: None,
        decision: None,
        decision_reason: None,
        duration: Duration::ZERO,
        exit_code: None,
        changes: Vec::new(),
        changes_stored: goat_store::ChangesStored::WithOutcome,
        refusals: Vec::new(),
        hooks: Vec::new(),
    }
}

/// A call that needed a person's approval when there was no one to ask.
pub(crate) fn unasked(reason: String) -> Routed {
    Routed {
        error_kind: Some(CallErrorKind::NeedsApproval),
        ..denied(RefusedBy::NeedsApproval, CallDecision::Deny, reason)
    }
}

/// A call `by` refused, that does not run. Every denial's reason is
/// written for the model and begins `denied:`, so it is the result as it
/// stands.
pub(crate) fn denied(by: RefusedBy, decision: CallDecision, reason: String) -> Routed {
    CallOutcome {
        refusals: vec![Refusal::new(by, None, reason.clone())],
        status: CallStatus::Denied,
        result: reason.clone(),
        error_kind: Some(CallErrorKind::Denied),
        decision: Some(decision),
        decision_reason: Some(reason),
        duration: Duration::ZERO,
        exit_code: None,
        changes: Vec::new(),
        changes_stored: goat_store::ChangesStored::WithOutcome,
        hooks: Vec::new(),
    }
}

/// What kind of tool a call reaches: the one place a tool's kind is
/// decided, read by every event, the store and `goat tools list`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// One of GOAT's own Pen file tools (a component GOAT ships).
    Builtin,
    /// An approved plugin component (`PLUGIN__TOOL`).
    Plugin,
    /// GOAT's contained, native `run_command`.
    Command,
    /// A trusted MCP server's tool (`SERVER__TOOL`, ADR-0086), or the
    /// on-demand search and call tools that stand for them.
    Mcp {
        /// The server it belongs to; `None` for the on-demand pair.
        server: Option<String>,
    },
}

/// One tool on offer ([`AppToolRouter::offered`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferedTool {
    /// Its name, as the model calls it.
    pub name: String,
    /// What kind of tool it is.
    pub kind: ToolKind,
    /// It may change workspace files.
    pub writes: bool,
    /// Its top-level arguments that hold workspace paths.
    pub path_fields: Vec<String>,
    /// It may reach beyond the workspace: a command whose network is not
    /// closed, or an MCP server with the network. A component never can
    /// (no socket is linked).
    pub network: bool,
}

impl OfferedTool {
    /// Whether it is GOAT's `run_command`.
    pub fn is_command(&self) -> bool {
        self.kind == ToolKind::Command
    }

    /// The MCP server it belongs to, for a server's own tool.
    pub fn mcp_server(&self) -> Option<&str> {
        match &self.kind {
            ToolKind::Mcp { server } => server.as_deref(),
            ToolKind::Builtin | ToolKind::Plugin | ToolKind::Command => None,
        }
    }
}
