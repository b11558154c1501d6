//! How a call went, as the store keeps it: the constructors for calls
//! that fail or are denied before anything runs.

use std::time::Duration;

use goat_sandbox::{ToolError, ToolFailure};
use goat_store::{CallDecision, CallErrorKind, CallOutcome, CallStatus};

use crate::gate;

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
    match why {
        gate::Denial::NeedsApproval { .. } | gate::Denial::CommandNeedsApproval { .. } => {
            unasked(reason)
        }
        _ => denied(CallDecision::Deny, reason),
    }
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
    }
}

/// A call that needed a person's approval when there was no one to ask.
pub(crate) fn unasked(reason: String) -> Routed {
    Routed {
        error_kind: Some(CallErrorKind::NeedsApproval),
        ..denied(CallDecision::Deny, reason)
    }
}

/// A call that does not run. Every denial's reason is written for the
/// model and begins `denied:`, so it is the result as it stands.
pub(crate) fn denied(decision: CallDecision, reason: String) -> Routed {
    CallOutcome {
        status: CallStatus::Denied,
        result: reason.clone(),
        error_kind: Some(CallErrorKind::Denied),
        decision: Some(decision),
        decision_reason: Some(reason),
        duration: Duration::ZERO,
        exit_code: None,
        changes: Vec::new(),
    }
}

/// One tool on offer ([`AppToolRouter::offered`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferedTool {
    /// Its name, as the model calls it.
    pub name: String,
    /// It may change workspace files.
    pub writes: bool,
    /// It is GOAT's contained `run_command`.
    pub command: bool,
    /// It is an approved plugin rather than a built-in Pen tool.
    pub plugin: bool,
    /// Its top-level arguments that hold workspace paths.
    pub path_fields: Vec<String>,
    /// It may reach beyond the workspace: a command whose network is not
    /// closed. A component never can (no socket is linked).
    pub network: bool,
    /// The MCP server it belongs to (ADR-0086), for an outside tool.
    pub mcp_server: Option<String>,
}
