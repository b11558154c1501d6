//! The session protocol: what a session says to its front end, one
//! [`Event`] at a time, and how a run ends, one [`Outcome`] with one exit
//! code (ADR-0080).
//!
//! The types are the schema. `goat run --output jsonl` writes each event
//! as one line of JSON; `docs/schema/events.schema.json` is generated from
//! these types ([`schema`]) and a test fails when the committed file and
//! the types disagree. Within a major [`SCHEMA_VERSION`], changes only add:
//! a new event type, a new optional field, a new enum value. A reader
//! should ignore what it does not know.
//!
//! Everything here is data for a program. Text in it (the model's answer,
//! a tool's result, a path) is as it came, not escaped for a terminal: a
//! front end that shows it at a terminal escapes it first
//! ([`crate::text`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod attempts;
mod nullable;

pub use attempts::{AttemptEnded, AttemptsEnded};
use nullable::require_nullable;

/// The protocol's version, `MAJOR.MINOR`: in `session.started`. A new
/// minor version only adds; a new major one may change or remove.
pub const SCHEMA_VERSION: &str = "1.4";

/// Most characters of a tool's result in `tool_call.completed`; the store
/// keeps it whole (`goat sessions show`).
pub const RESULT_EXCERPT_CHARS: usize = 2000;

/// One thing that happened, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// 0 for the first event a run writes, then one more for each.
    pub seq: u64,
    /// The session; `null` only for an `error` before any session existed.
    pub session_id: Option<String>,
    /// The turn, 1 for a session's first; on the events of a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// Under `goat run --attempts`: the attempt (1-based) whose session
    /// said it; absent on the run's own lines. Schema 1.4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened, by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum EventKind {
    /// The session is open: what it runs with.
    #[serde(rename = "session.started")]
    SessionStarted(SessionStarted),
    /// A turn began with the person's request.
    #[serde(rename = "turn.started")]
    TurnStarted {
        /// The request, as sent; empty when a `user_prompt_submit` hook
        /// withheld it (said only once the hooks answered).
        prompt: String,
    },
    /// A round (one request to the engine) began.
    #[serde(rename = "round.started")]
    RoundStarted {
        /// 1-based within the turn.
        round: u32,
    },
    /// The engine said it is still loading the model; GOAT waits (within
    /// the first-byte timeout) and asks again.
    #[serde(rename = "engine.loading")]
    EngineLoading {
        /// The round.
        round: u32,
        /// How long GOAT has waited so far.
        waited_ms: u64,
    },
    /// Answer text as it streams (only with `--stream-deltas`).
    #[serde(rename = "message.delta")]
    MessageDelta {
        /// The round.
        round: u32,
        /// The new text.
        text: String,
    },
    /// Reasoning text as it streams (only with `--stream-deltas`).
    #[serde(rename = "reasoning.delta")]
    ReasoningDelta {
        /// The round.
        round: u32,
        /// The new text.
        text: String,
    },
    /// A round's answer text, whole; not sent for a round with none.
    #[serde(rename = "message.completed")]
    MessageCompleted {
        /// The round.
        round: u32,
        /// The text.
        text: String,
    },
    /// A round's reasoning, whole; not sent for a round with none.
    #[serde(rename = "reasoning.completed")]
    ReasoningCompleted {
        /// The round.
        round: u32,
        /// The text.
        text: String,
    },
    /// A call is about to go through the router (find, validate, gate,
    /// sandbox).
    #[serde(rename = "tool_call.started")]
    ToolCallStarted {
        /// The round.
        round: u32,
        /// 1-based within the turn; the same in `tool_call.completed`.
        call: u32,
        /// The tool named.
        tool: String,
        /// The arguments as the model sent them (a JSON text, possibly
        /// malformed).
        arguments: String,
    },
    /// A call finished: ran, failed or was denied.
    #[serde(rename = "tool_call.completed")]
    ToolCallCompleted(ToolCallCompleted),
    /// The gate asked the person (a write or command no rule decides).
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequested),
    /// The person answered.
    #[serde(rename = "approval.resolved")]
    ApprovalResolved {
        /// The request's `approval`.
        approval: u32,
        /// The answer.
        answer: ApprovalAnswer,
        /// For `deny_with`: what the person told the model instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The model wrote a tool call as text; ADR-0065's one recovery asks
    /// it to use the structured format. Nothing was run.
    #[serde(rename = "recovery")]
    Recovery {
        /// The round whose answer held the markup.
        round: u32,
        /// The offered tool the markup named.
        tool: String,
        /// The markup was in the reasoning channel.
        in_reasoning: bool,
    },
    /// Older turns, or the running turn's older rounds, were summarised to
    /// keep the conversation within the context window (ADR-0074,
    /// ADR-0083); the store keeps them whole.
    #[serde(rename = "compaction")]
    Compaction {
        /// Turns newly covered by the summary.
        turns: u64,
        /// Rounds of the running turn newly covered (its request and newest
        /// round stay in the prompt); 0 when only older turns were.
        #[serde(default)]
        rounds: u64,
        /// Why.
        reason: CompactionReason,
    },
    /// Something the person should know that changes nothing by itself.
    #[serde(rename = "warning")]
    Warning {
        /// What kind.
        code: WarningCode,
        /// In words.
        message: String,
    },
    /// The person's hooks ran at a turn's event, not a call's
    /// (`user_prompt_submit` before the model saw the prompt, `stop` as it
    /// ended its turn); schema 1.3.
    #[serde(rename = "hooks.ran")]
    HooksRan {
        /// `user_prompt_submit` or `stop`.
        event: String,
        /// Each run, in order.
        hooks: Vec<HookRun>,
        /// What the hook that objected did, in words (its own escaped and
        /// framed as its); absent when none objected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        objection: Option<String>,
        /// A stop hook sent the model back to work: the turn goes on.
        /// Otherwise an objection withheld the prompt or was the turn's
        /// last word, and is among the turn's denials.
        went_on: bool,
    },
    /// The turn ended with a final answer.
    #[serde(rename = "turn.completed")]
    TurnCompleted(TurnEnded),
    /// The turn ended without one.
    #[serde(rename = "turn.failed")]
    TurnFailed(TurnEnded),
    /// `goat run --attempts`: an attempt's check ran in its layer (schema
    /// 1.4).
    #[serde(rename = "attempt.checked")]
    AttemptChecked {
        /// The attempt (1-based).
        attempt: u32,
        /// Whether the check passed (exited 0).
        passed: bool,
        /// Its exit code; `null` when it did not exit on its own.
        exit_code: Option<i32>,
        /// The end of its output.
        output: String,
    },
    /// `goat run --attempts`: every attempt ended, and what landed (schema
    /// 1.4). The run's last line.
    #[serde(rename = "attempts.completed")]
    AttemptsCompleted(AttemptsEnded),
    /// A failure outside a turn: before the session could open, or
    /// reading the record back. The run's outcome is `host_error`.
    #[serde(rename = "error")]
    Error {
        /// What went wrong and what to do.
        message: String,
        /// Always `host_error`.
        outcome: Outcome,
        /// The process's exit code.
        exit_code: u8,
    },
}

/// `session.started`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionStarted {
    /// [`SCHEMA_VERSION`].
    pub schema_version: String,
    /// GOAT's version.
    pub goat_version: String,
    /// A session carried on (`--session`) rather than a new one.
    pub resumed: bool,
    /// The workspace the tools see.
    pub workspace: String,
    /// The engine's base URL.
    pub engine: String,
    /// The model name sent to it.
    pub model: String,
    /// The context window in tokens, where configured; `null` while GOAT
    /// is to learn it from the engine at the first turn.
    pub window: Option<u64>,
    /// The approval mode.
    pub mode: Mode,
    /// The tools offered to the model.
    pub tools: Vec<ToolOffered>,
    /// The `AGENTS.md` files in the system prompt, outermost first.
    pub agents_md: Vec<AgentsFile>,
    /// Limits on the whole run, where set.
    pub budget: BudgetInfo,
}

/// The approval mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Writes and commands no rule decides are asked about.
    Ask,
    /// Writes in the workspace allowed without asking; commands asked.
    AcceptEdits,
    /// No writes, no commands.
    ReadOnly,
}

/// One tool on offer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolOffered {
    /// Its name, as the model calls it.
    pub name: String,
    /// What it may do.
    pub access: Access,
    /// Where it comes from.
    pub source: ToolSource,
}

/// What a tool may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read workspace files.
    Read,
    /// Change workspace files.
    Write,
    /// Run a command (contained; its changes land whole or not at all).
    Command,
}

/// Where a tool comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolSource {
    /// GOAT's built-in file tools (the Pen).
    Builtin,
    /// An approved plugin.
    Plugin,
    /// GOAT's contained `run_command`.
    Command,
    /// A trusted MCP server's tool, or the on-demand search and call
    /// tools that stand for them.
    Mcp,
}

/// One `AGENTS.md` in the system prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentsFile {
    /// Where it is.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// How many of its bytes were read (at most a cap).
    pub used: u64,
}

/// Limits on a whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetInfo {
    /// Most rounds a turn may take.
    pub max_rounds: u64,
    /// `--max-wall-secs`.
    pub max_wall_secs: Option<u64>,
    /// `--max-total-tokens`: prompt and completion tokens over the run.
    pub max_total_tokens: Option<u64>,
}

/// `tool_call.completed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallCompleted {
    /// The round.
    pub round: u32,
    /// As in `tool_call.started`.
    pub call: u32,
    /// The tool named.
    pub tool: String,
    /// How it went.
    pub status: CallStatus,
    /// The gate's decision; `null` when it failed before the gate (an
    /// unknown tool, arguments that do not fit its schema).
    pub decision: Option<Decision>,
    /// Why the gate decided so: the rule, the default, the person.
    pub rule: Option<String>,
    /// Why it produced no result, for a program to count.
    pub error_kind: Option<String>,
    /// The start of what the model was shown (at most
    /// [`RESULT_EXCERPT_CHARS`] characters).
    pub result_excerpt: String,
    /// The whole result's length in bytes.
    pub result_bytes: u64,
    /// A command's exit code; `null` for other tools and a command that
    /// did not exit on its own.
    pub exit_code: Option<i32>,
    /// Workspace paths the call changed (created, changed, removed,
    /// permissions changed), from every kind of tool, commands included.
    pub files_changed: Vec<String>,
    /// Everything that refused the call or part of it, each named at its
    /// source; left out when nothing did. A call can run and still have
    /// refusals (a command whose change set was refused, or whose proxy
    /// refused a host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refused>,
    /// The person's hooks run for the call (issue 41), in order, whatever
    /// each answered; left out when none ran. A hook's denial is also in
    /// `refused`; an `allow` never allowed anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun>,
    /// How long it ran.
    pub duration_ms: u64,
}

/// One hook run for a call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRun {
    /// The hook's name.
    pub hook: String,
    /// The event: `pre_tool_use`, `post_tool_use`, `user_prompt_submit`
    /// or `stop`.
    pub event: String,
    /// What it answered: `none`, `allow` (which changes nothing), `ask`,
    /// `deny`, or `failed` (which denies).
    pub verdict: String,
    /// Its reason, or why it failed, as it said it.
    pub reason: String,
    /// How long it ran (0: it did not run, being suspended).
    pub duration_ms: u64,
}

/// One refusal of a call, or of part of it, where it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Refused {
    /// Who or what refused.
    pub source: RefusalSource,
    /// What was refused: a workspace path (as the fence resolved it, for
    /// the fence), a host and port (the proxy), a tool; `null` for the
    /// whole call.
    pub target: Option<String>,
    /// Why, in words.
    pub reason: String,
}

/// Who or what refused a call, or part of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalSource {
    /// A deny rule, or the gate failing closed (its rules unreadable).
    Rule,
    /// A path named is not a workspace path (absolute, escaping, NUL).
    Path,
    /// No rule decided it, and no one was there to ask.
    NeedsApproval,
    /// The person was asked and said no.
    Person,
    /// The approval mode (read-only).
    Mode,
    /// The fence, on the file the call actually reached (through a link,
    /// a walk, a name the call never declared), under a rule.
    Fence,
    /// A write into version-control metadata (`.git`, ...), by any name.
    Protected,
    /// A command's change set, refused whole: nothing landed.
    ChangeSet,
    /// GOAT's egress proxy refused a destination.
    Egress,
    /// An MCP tool suspended because its definition changed.
    Suspended,
    /// A host limit (calls per response).
    Limit,
    /// A hook the person added: it denied, failed, or is suspended.
    Hook,
}

/// How a call went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It ran and succeeded.
    Ok,
    /// It ran, or tried to, and failed.
    Error,
    /// The gate or the person refused it; it did not run.
    Denied,
    /// GOAT stopped while it was pending.
    Interrupted,
}

/// The gate's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// A rule, a default or a flag allowed it.
    Allow,
    /// A rule or the fail-closed default denied it, or no one could be
    /// asked.
    Deny,
    /// The person allowed this one call.
    AskAllowedOnce,
    /// The person allowed it for the session.
    AskAllowedSession,
    /// The person allowed it always (a saved rule).
    AskAllowedAlways,
    /// The person said no.
    AskDenied,
}

impl From<goat_store::CallStatus> for CallStatus {
    /// The store's status as the protocol says it: a call still pending
    /// when its event is made is reported as an error, never as done.
    fn from(status: goat_store::CallStatus) -> Self {
        use goat_store::CallStatus as Stored;
        match status {
            Stored::Ok => Self::Ok,
            Stored::Error | Stored::Pending => Self::Error,
            Stored::Denied => Self::Denied,
            Stored::Interrupted => Self::Interrupted,
        }
    }
}

impl From<goat_store::CallDecision> for Decision {
    fn from(decision: goat_store::CallDecision) -> Self {
        use goat_store::CallDecision as Stored;
        match decision {
            Stored::Allow => Self::Allow,
            Stored::Deny => Self::Deny,
            Stored::AskAllowedOnce => Self::AskAllowedOnce,
            Stored::AskAllowedSession => Self::AskAllowedSession,
            Stored::AskAllowedAlways => Self::AskAllowedAlways,
            Stored::AskDenied => Self::AskDenied,
        }
    }
}

/// `approval.requested`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequested {
    /// 1-based within the run; `approval.resolved` names it.
    pub approval: u32,
    /// The tool.
    pub tool: String,
    /// The gate's question, one line.
    pub question: String,
    /// The resolved paths it asks about; empty for a command.
    pub paths: Vec<String>,
    /// The validated arguments, to show what would change.
    pub arguments: serde_json::Value,
    /// For a command's change set: one line per path it changes.
    pub details: Vec<String>,
    /// What the call would change, as the chat shows it: a diff against
    /// the file as it is now for `write_file` and `edit_file`, what is lost
    /// for `delete_file` and a `move_file` that replaces a file, the
    /// command or change set for `run_command`, the arguments otherwise.
    /// Lines for display, their control characters already escaped, each
    /// side of a change cut to a few lines.
    pub preview: Vec<String>,
    /// The answers that may be given.
    pub answers: Vec<ApprovalAnswer>,
}

/// An answer to an approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call.
    Once,
    /// Run it; allow the same for the session.
    Session,
    /// Run it; always allow the same in this workspace.
    Always,
    /// Run it; allow the same tool in these directories for the session.
    Directory,
    /// Do not run it.
    Deny,
    /// Do not run it, and tell the model why.
    DenyWith,
}

/// Why older turns were summarised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The next request would not have fit the window.
    Window,
    /// The engine refused a request as too long.
    Overflow,
    /// The person asked.
    Asked,
}

/// What a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// The repository's `AGENTS.md` was cut to its share of the window.
    ProjectInstructionsCut,
    /// The engine is not showing the offered tools to the model.
    ToolsNotShown,
    /// The engine did not say its context window; GOAT assumes its default.
    WindowNotSaid,
}

/// `turn.completed` and `turn.failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnEnded {
    /// How the turn (and so the run) ended.
    pub outcome: Outcome,
    /// The exit code `goat run` ends with for it.
    pub exit_code: u8,
    /// The final answer; `null` unless the turn completed.
    pub answer: Option<String>,
    /// Why it failed, in words; `null` when it completed.
    pub error: Option<String>,
    /// Tokens the turn's rounds took, as the engine reported them.
    pub usage: Usage,
    /// Every call that was refused, in order.
    pub denials: Vec<Denial>,
    /// Workspace paths the turn changed, each once, in order.
    pub files_changed: Vec<String>,
    /// Rounds taken, failed ones included.
    pub rounds: u64,
    /// From `turn.started` to now.
    pub duration_ms: u64,
}

/// Tokens, as the engine reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Prompt tokens over the rounds.
    pub prompt_tokens: u64,
    /// Of those, served from the engine's prompt cache, where the engine
    /// says; `null` where it does not.
    pub cached_tokens: Option<u64>,
    /// Generated tokens over the rounds.
    pub completion_tokens: u64,
}

/// One refused call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Denial {
    /// The call, as in `tool_call.completed`.
    pub call: u32,
    /// The tool.
    pub tool: String,
    /// The paths it names, or the command line; empty when it names
    /// neither.
    pub targets: Vec<String>,
    /// Why, as the model was told.
    pub reason: String,
    /// It was refused only because no one was there to ask (no rule
    /// decided it, and the run has no terminal).
    pub needs_approval: bool,
    /// What refused it (the first of [`refused`](Self::refused)).
    pub source: RefusalSource,
    /// Every refusal of the call, each named at its source.
    pub refused: Vec<Refused>,
    /// Not a call's: the turn event whose hook refused (`user_prompt_submit`
    /// or `stop`); then `call` is 0 and `tool` empty. Schema 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
}

/// How a run ended: one each, with one exit code each, the same in every
/// output mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The turn completed and nothing was denied. Exit 0.
    Completed,
    /// The turn completed, and at least one call was denied (by a rule or
    /// the person). Exit 3, or 0 with `--allow-denials`.
    CompletedWithDenials,
    /// A write or command no rule decided was refused because no one was
    /// there to ask. Exit 4.
    NeedsApproval,
    /// The turn reached its round cap without a final answer. Exit 5.
    RoundCap,
    /// The conversation does not fit the engine's context window, even
    /// compacted. Exit 6.
    ContextExhausted,
    /// The engine failed (unreachable, an HTTP error, a broken stream, a
    /// timeout). Exit 7.
    EngineFailed,
    /// The model wrote a tool call as text again after the one recovery
    /// (ADR-0065); nothing was run. Exit 8.
    MarkupNotRecovered,
    /// `--max-wall-secs` or `--max-total-tokens` was reached. Exit 9.
    BudgetExhausted,
    /// `goat run --attempts`: no attempt passed its check (or, without
    /// one, completed); nothing landed. Exit 10.
    NoAttemptPassed,
    /// The person cancelled (Ctrl-C). Exit 130.
    Cancelled,
    /// GOAT itself failed: bad usage, the store, the workspace. Exit 2.
    HostError,
}

impl Outcome {
    /// Every outcome, in the order of the documented table.
    pub const ALL: [Outcome; 11] = [
        Outcome::Completed,
        Outcome::CompletedWithDenials,
        Outcome::NeedsApproval,
        Outcome::RoundCap,
        Outcome::ContextExhausted,
        Outcome::EngineFailed,
        Outcome::MarkupNotRecovered,
        Outcome::BudgetExhausted,
        Outcome::NoAttemptPassed,
        Outcome::Cancelled,
        Outcome::HostError,
    ];

    /// The process's exit code. `allow_denials` makes a completion with
    /// denials a success.
    pub fn exit_code(self, allow_denials: bool) -> u8 {
        match self {
            Outcome::Completed => 0,
            Outcome::CompletedWithDenials if allow_denials => 0,
            Outcome::HostError => 2,
            Outcome::CompletedWithDenials => 3,
            Outcome::NeedsApproval => 4,
            Outcome::RoundCap => 5,
            Outcome::ContextExhausted => 6,
            Outcome::EngineFailed => 7,
            Outcome::MarkupNotRecovered => 8,
            Outcome::BudgetExhausted => 9,
            Outcome::NoAttemptPassed => 10,
            Outcome::Cancelled => 130,
        }
    }

    /// Its name, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::CompletedWithDenials => "completed_with_denials",
            Outcome::NeedsApproval => "needs_approval",
            Outcome::RoundCap => "round_cap",
            Outcome::ContextExhausted => "context_exhausted",
            Outcome::EngineFailed => "engine_failed",
            Outcome::MarkupNotRecovered => "markup_not_recovered",
            Outcome::BudgetExhausted => "budget_exhausted",
            Outcome::NoAttemptPassed => "no_attempt_passed",
            Outcome::Cancelled => "cancelled",
            Outcome::HostError => "host_error",
        }
    }

    /// Whether the turn ended with a final answer.
    pub fn completed(self) -> bool {
        matches!(
            self,
            Outcome::Completed | Outcome::CompletedWithDenials | Outcome::NeedsApproval
        )
    }
}

/// Fields that are left out when they have no value (`turn` outside a
/// turn, `note` on an answer without one, `attempt` outside `goat run
/// --attempts`, `objection` when no hook objected, `event` on a call's
/// denial). Every other field is always
/// there, `null` when it has no value, and the schema says so.
const OMITTED_WHEN_EMPTY: [&str; 5] = ["turn", "note", "attempt", "objection", "event"];

/// The JSON Schema of one line of `--output jsonl`, as committed in
/// `docs/schema/events.schema.json`.
pub fn schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Event))
        .unwrap_or_else(|e| unreachable!("a schema is JSON: {e}"));
    require_nullable(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "$id".to_owned(),
            serde_json::Value::String(format!(
                "https://goat.invalid/schema/events-{SCHEMA_VERSION}.json"
            )),
        );
        object.insert(
            "description".to_owned(),
            serde_json::Value::String(format!(
                "One line of `goat run --output jsonl` (schema version {SCHEMA_VERSION})."
            )),
        );
    }
    // Keys in one order however serde_json keeps maps (the ACP SDK turns on
    // its `preserve_order` feature for the whole build): the committed file
    // is the same from every build.
    schema.sort_all_objects();
    schema
}

#[cfg(test)]
mod tests;
