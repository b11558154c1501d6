//! GOAT's turn loop (the Shepherd) and the context it keeps: the policy
//! between the model and the road its calls take.
//!
//! The key decision: the Shepherd asks the engine and hands every
//! structured tool call, including one a model makes after ADR-0065's
//! recovery asked it to, to `goat-router`'s one road
//! (`AppToolRouter::route`, recorded by `route_recorded`); it never runs
//! a tool itself. Text that only looks like a call is never parsed into
//! one; the [`Shepherd`] recognises it with `goat-markup`, stores the
//! response as failed, and asks the model once for a structured call.
//!
//! [`context`] keeps a conversation inside the engine's window: what is
//! sent, what is elided, when older turns are summarised.

pub mod context;
mod turn;

pub use context::{
    ContextStatus, DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_OUTPUT_TOKENS, PROJECT_PROMPT_SHARE,
    ProjectPrompt, ProjectSection, WindowChoice,
};
pub use turn::{
    Compacted, DEFAULT_MAX_ROUNDS, MAX_CALLS_PER_RESPONSE, MAX_REQUEST_BYTES,
    MAX_STOP_CONTINUATIONS, RECOVERY_INSTRUCTION, Shepherd, ToolsNotShown, TurnError, TurnEvent,
    TurnStats, TurnSummary, prompt_without_tools, too_many_calls_result,
};
