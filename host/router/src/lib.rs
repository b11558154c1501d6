//! The one road every tool call takes, whoever made it (a model through
//! the Shepherd, or a client through [`DirectCalls`]) and whatever the
//! tool (a Pen built-in, a plugin, `run_command`, an MCP server's).
//!
//! The key decision: one road. Every structured tool call goes through
//! [`AppToolRouter::route`]: find the tool among those offered, check the
//! arguments against its schema, the approval mode, ask the permission
//! gate (`goat-gate`) and the person when it asks, then run it (in the
//! sandbox, contained, or at its server) held to the gate's boundary, and
//! record it ([`route_recorded`]). Every refusal, from any of those steps
//! or from what runs the call (the fence, a refused change set, the egress
//! proxy, a suspended MCP tool), is written into the call's one typed
//! outcome at its source ([`Routed`]); the turn's outcome is derived from
//! those.
//!
//! Checkpoints ([`checkpoint`]) are what a call changed, kept so that
//! `goat undo` can put it back; undo itself is planned here too, so every
//! front end can offer it.

// A call's road returns its outcome as the `Err` of each step that ends
// it (unknown tool, bad arguments, a refusal): once per call, never in a
// loop, so the outcome's size (its refusals and changes beside the
// result) costs nothing worth a box at every step.
#![expect(
    clippy::result_large_err,
    reason = "a step that ends a call returns its CallOutcome, once per call"
)]

pub mod checkpoint;
mod command;
mod direct;
pub mod egress;
mod external;
mod mode;
mod random;
mod record;
mod router;
pub mod schema;
mod turn_hooks;

pub use command::{
    BoundaryRules, CommandTool, LAND_ATTEMPT, RUN_COMMAND, command_containment, command_schema,
    command_support, default_containment, view_unavailable,
};
pub use direct::DirectCalls;
pub use external::{ExternalOutcome, ExternalTool, ExternalTools};
pub use mode::{ApprovalMode, ModeSwitch, READ_ONLY_REASON};
pub use record::{RecordError, route_recorded, store_step};
pub use router::{
    AppToolRouter, Approval, ApprovalRequest, Approver, MAX_DENIAL_NOTE_CHARS, OfferedTool, Routed,
    RouterConfig, ToolKind, interrupt_fired,
};
pub use turn_hooks::{Objection, TurnHookEvent, TurnHooksSaid, turn_hooks_recorded};
