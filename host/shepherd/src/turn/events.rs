//! What a turn reports: live events while it runs, a summary when it
//! completes, an error when it does not.

use std::time::Duration;

use goat_engine::EngineError;
use goat_store::{CompactReason, StoreError};

use goat_router::{Objection, RecordError, Routed};
use goat_store::HookRan;

/// What happens during a turn, for showing it live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnEvent {
    /// A round began.
    RoundStarted {
        /// 1-based.
        round: usize,
    },
    /// The engine answered that it is loading the model; GOAT is waiting
    /// to ask again (within the first-byte timeout).
    EngineLoading {
        /// How long GOAT has waited so far.
        waited: std::time::Duration,
    },
    /// Answer text arrived.
    Content(String),
    /// Reasoning text arrived.
    Reasoning(String),
    /// The person's hooks ran at a turn's event (not a call's):
    /// `user_prompt_submit` before the model saw the prompt, `stop` as it
    /// ended its turn.
    TurnHooks {
        /// `user_prompt_submit` or `stop`.
        event: &'static str,
        /// Each run, in order.
        runs: Vec<HookRan>,
        /// The hook that objected, if one did.
        objection: Option<Objection>,
        /// Whether the turn went on because of it (a stop hook sent the
        /// model back to work); otherwise an objection withheld the prompt
        /// or was the turn's last word, and counts as a denial.
        went_on: bool,
    },
    /// A call is about to go through the router.
    CallStarted {
        /// The tool.
        tool: String,
        /// Its arguments, as sent.
        arguments: String,
    },
    /// A call finished.
    CallFinished {
        /// The tool.
        tool: String,
        /// How it went.
        routed: Routed,
    },
    /// Older turns, or the running turn's older rounds, were summarised to
    /// keep the conversation within the engine's context window (ADR-0074,
    /// ADR-0083).
    Compacted {
        /// Turns newly covered by the summary.
        turns: usize,
        /// Rounds of the running turn newly covered (its request and newest
        /// round stay); 0 when only older turns were.
        rounds: usize,
        /// Why.
        reason: CompactReason,
    },
    /// The repository's project instructions were cut to their share of
    /// the window (said once per Shepherd, the first time it happens).
    ProjectInstructionsCut {
        /// Bytes of them sent.
        kept: usize,
        /// Bytes of them read.
        whole: usize,
    },
    /// The engine did not say its context window where GOAT asks, and the
    /// person set none: GOAT assumes `assumed` tokens
    /// ([`DEFAULT_CONTEXT_TOKENS`](crate::DEFAULT_CONTEXT_TOKENS)). Said at
    /// most once per session.
    WindowNotSaid {
        /// The window assumed, in tokens.
        assumed: u64,
    },
    /// The engine is not showing the offered tools to the model: its chat
    /// template has no place for them, and llama-server drops them from
    /// the request without a word. Said at most once per session.
    ToolsNotShown(ToolsNotShown),
    /// The model wrote a tool call as text; it is asked once to use the
    /// structured format.
    Recovery {
        /// The offered tool the markup named.
        tool: String,
        /// The call was in the reasoning channel, the content empty: the
        /// engine's reasoning parser kept it there.
        in_reasoning: bool,
    },
}

/// How GOAT knows the engine is not showing the model the tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolsNotShown {
    /// llama-server's `/props` says its template does not support tools
    /// (`chat_template_caps.supports_tools: false`).
    TemplateCaps,
    /// The engine counted fewer prompt tokens than the tool schemas alone
    /// take.
    PromptSize {
        /// The prompt tokens the engine reported.
        prompt_tokens: u64,
        /// The fewest tokens the tool schemas take.
        tools_at_least: u64,
    },
}

/// What a markup error adds when the call was in the reasoning channel.
fn channel_words(in_reasoning: &bool) -> &'static str {
    if *in_reasoning {
        " in the reasoning channel (the engine's reasoning parser kept the call in the reasoning channel)"
    } else {
        ""
    }
}

/// Why a turn did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The engine failed.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// The store failed; the record cannot be trusted to go on.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A host failure running a tool (the workspace went away).
    #[error("{0}")]
    Sandbox(#[from] goat_sandbox::SandboxError),
    /// The model wrote tool-call markup as text again after the one
    /// recovery; nothing was executed.
    #[error(
        "the model wrote a tool call as text ({tool}){} again after being asked to use the structured format; nothing was executed and the turn stopped. If this keeps happening, check the engine's tool-call template or parser (e.g. llama-server --jinja, vLLM --tool-call-parser, and --reasoning-parser for a call kept as reasoning)",
        channel_words(.in_reasoning)
    )]
    MarkupAgain {
        /// The tool it named.
        tool: String,
        /// The call was in the reasoning channel.
        in_reasoning: bool,
    },
    /// Markup appeared when the round cap left no room for a recovery.
    #[error(
        "the model wrote a tool call as text ({tool}){} in the last round the cap allows; nothing was executed",
        channel_words(.in_reasoning)
    )]
    MarkupNoRoom {
        /// The tool it named.
        tool: String,
        /// The call was in the reasoning channel.
        in_reasoning: bool,
    },
    /// The request would exceed the byte bound even with every old tool
    /// result and call argument elided; nothing was sent.
    #[error(
        "the conversation is too large to send: {bytes} bytes with every tool result and call argument elided, over the limit of {limit} bytes; nothing was sent. Start a new session, or send a shorter request"
    )]
    RequestTooLarge {
        /// The body's size with everything elidable elided.
        bytes: usize,
        /// The bound.
        limit: usize,
    },
    /// Even with every older turn summarised, every old result elided
    /// and the newest cut, the request does not fit; nothing was sent.
    #[error(
        "the conversation does not fit the engine's context window: the request would take about {tokens} tokens of the {budget} available, {system_tokens} of them the system prompt (with the project's AGENTS.md, if any); nothing was sent. Send a shorter request, start a new session, shorten AGENTS.md, or raise context_tokens if the engine's window is larger"
    )]
    ContextTooSmall {
        /// About how many of them the system prompt takes, which no
        /// fitting can shorten.
        system_tokens: u64,
        /// The estimate of the smallest request.
        tokens: u64,
        /// Tokens a request may take.
        budget: u64,
    },
    /// The engine refused a request as too long again after the history
    /// was compacted and the request sent once more.
    #[error(
        "the engine refused the request as too long for its context window again after GOAT compacted the history and retried once ({message}); lower context_tokens to the engine's real window, run /compact, or start a new session"
    )]
    ContextOverflowAgain {
        /// The engine's message.
        message: String,
    },
    /// Asking the model for a summary of older turns failed.
    #[error(
        "compacting the conversation failed: {0}; try again, run /compact, or start a new session"
    )]
    Compaction(String),
    /// The round cap was reached.
    #[error("the turn reached its cap of {0} rounds without a final answer")]
    RoundCap(usize),
    /// The person cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
    /// A worker thread failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<RecordError> for TurnError {
    fn from(e: RecordError) -> Self {
        match e {
            RecordError::Store(e) => Self::Store(e),
            RecordError::Sandbox(e) => Self::Sandbox(e),
            RecordError::Internal(why) => Self::Internal(why),
        }
    }
}

/// Tokens and speed of one turn, from the engine's usage and timings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TurnStats {
    /// Prompt tokens over the turn's rounds, as the engine reported them.
    pub prompt_tokens: u64,
    /// Completion tokens over the turn's rounds.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the engine served from its prompt
    /// cache, where it said (`None` when no round's response did).
    pub cached_tokens: Option<u64>,
    /// The last request's prompt tokens: the context the answer used.
    pub context_tokens: Option<u64>,
    /// The context window in force, in tokens.
    pub window: u64,
    /// Time to the first token of the answer (the last round).
    pub first_token_after: Option<Duration>,
    /// Generation speed of the answer (the last round), tokens per second.
    pub tokens_per_second: Option<f64>,
    /// Summaries written during the turn.
    pub compactions: u64,
}

/// How a turn went.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnSummary {
    /// The turn's row id.
    pub turn_id: i64,
    /// Rounds taken, failed ones included.
    pub rounds: usize,
    /// Whether the one recovery was used.
    pub recovery_used: bool,
    /// The final answer.
    pub answer: String,
    /// Tokens and speed.
    pub stats: TurnStats,
}
