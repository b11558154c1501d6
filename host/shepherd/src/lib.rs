//! GOAT's turn loop (the Shepherd), the `AppToolRouter` and the permission
//! gate: the policy between the model and the host.
//!
//! The key decision: one road. Every structured tool call, including one a
//! model makes after ADR-0065's recovery asked it to, goes through
//! [`AppToolRouter::route`]: find the tool among those offered, check the
//! arguments against its schema, ask the [`gate`], run it in the sandbox
//! with the access the tool declares. Text that only looks like a call is
//! never parsed into one; the [`Shepherd`] recognises it with
//! `goat-markup`, stores the response as failed, and asks the model once
//! for a structured call.
//!
//! [`gate`] decides whether a call may touch the workspace paths it names.
//! Its decision logic is a pure function tested as a table; reading the
//! rules is the only I/O, and any failure there denies (fails closed). The
//! gate keeps its own small database of rules, apart from the store.

// A call's road returns its outcome as the `Err` of each step that ends
// it (unknown tool, bad arguments, a refusal): once per call, never in a
// loop, so the outcome's size (its refusals and changes beside the
// result) costs nothing worth a box at every step.
#![expect(
    clippy::result_large_err,
    reason = "a step that ends a call returns its CallOutcome, once per call"
)]

/// The permission gate, re-exported: the router asks it about every call.
pub use goat_gate as gate;

pub mod checkpoint;
mod command;
pub mod context;
mod direct;
pub mod egress;
mod external;
mod mode;
mod router;
pub mod schema;
mod turn;

pub use command::{
    BoundaryRules, CommandTool, RUN_COMMAND, command_containment, command_schema, command_support,
    default_containment, view_unavailable,
};
pub use context::{
    ContextStatus, DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_OUTPUT_TOKENS, PROJECT_PROMPT_SHARE,
    ProjectPrompt, ProjectSection, WindowChoice,
};
pub use direct::DirectCalls;
pub use external::{ExternalOutcome, ExternalTool, ExternalTools};
pub use goat_command::{
    Containment, ContainmentMode, Interrupt, Network, Used as ContainmentUsed, server_support,
};
/// The egress proxy, re-exported: a session makes one from `commands.network`.
pub use goat_egress as network;
pub use mode::{ApprovalMode, ModeSwitch, READ_ONLY_REASON};
pub use router::{
    AppToolRouter, Approval, ApprovalRequest, Approver, MAX_DENIAL_NOTE_CHARS, OfferedTool, Routed,
    RouterConfig, ToolKind, interrupt_fired,
};
pub use turn::{
    Compacted, DEFAULT_MAX_ROUNDS, MAX_CALLS_PER_RESPONSE, MAX_REQUEST_BYTES, RECOVERY_INSTRUCTION,
    Shepherd, ToolsNotShown, TurnError, TurnEvent, TurnStats, TurnSummary, prompt_without_tools,
    too_many_calls_result,
};
