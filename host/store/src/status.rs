//! Where a turn, a round and a tool call stand, as stored.

use crate::egress::{EgressRequest, EgressVerdict};

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    /// Still going (or GOAT stopped mid-turn).
    Running,
    /// The model answered.
    Completed,
    /// An error ended it.
    Failed,
    /// The person cancelled it.
    Cancelled,
}

/// How a round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundStatus {
    /// The response is still streaming (or GOAT stopped meanwhile).
    Streaming,
    /// A usable response; it is part of later prompts.
    Ok,
    /// Unusable (an engine error, or a malformed response ADR-0065 recovers
    /// from); kept for the record, left out of later prompts.
    Failed,
    /// Cancelled while streaming; left out of later prompts.
    Cancelled,
}

/// Where a tool call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallStatus {
    /// Recorded, not finished.
    Pending,
    /// It ran and returned a result.
    Ok,
    /// It failed (invalid arguments, unknown tool, tool error, sandbox stop).
    Error,
    /// The permission gate denied it.
    Denied,
    /// GOAT stopped while it was pending.
    Interrupted,
}

/// What the permission gate, or the person it asked, decided about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallDecision {
    /// A rule, the read default or `--allow-writes` allowed it.
    Allow,
    /// A rule or the fail-closed default denied it, or no one could be asked.
    Deny,
    /// The person allowed this one call.
    AskAllowedOnce,
    /// The person allowed it for the session (a session rule was saved).
    AskAllowedSession,
    /// The person allowed it always (a persistent rule was saved).
    AskAllowedAlways,
    /// The person said no.
    AskDenied,
}

/// Why a call produced no result, as a kind a program can count. Each
/// failure the sandbox or a tool can report has one, so a new failure
/// cannot reach the store without a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallErrorKind {
    /// The call names a tool that was not offered.
    UnknownTool,
    /// The arguments are not JSON or do not fit the tool's schema.
    InvalidArguments,
    /// The gate or the person denied it.
    Denied,
    /// Denied only because no rule decided it and no one was there to ask
    /// (no terminal): a run without a person needs an allow rule or a flag.
    NeedsApproval,
    /// A path named in the arguments does not exist.
    NotFound,
    /// The request conflicts with what is on disk.
    Conflict,
    /// The sandbox refused a filesystem operation.
    PermissionDenied,
    /// Input or output over one of the tool's caps.
    TooLarge,
    /// Any other filesystem failure.
    Io,
    /// The tool ran past its wall-time limit.
    Timeout,
    /// The tool tried to use more memory than allowed.
    MemoryExceeded,
    /// The tool wrote more output than allowed.
    OutputExceeded,
    /// The tool hit another sandbox limit.
    LimitExceeded,
    /// The tool trapped.
    Crashed,
    /// The person cancelled the turn before the call ran.
    Cancelled,
    /// The response made more calls than the host runs from one response;
    /// this one was not run.
    TooManyCalls,
    /// GOAT stopped while the call was pending.
    Interrupted,
    /// An outside (MCP) tool ran and reported failure (`isError`).
    ToolError,
    /// An outside (MCP) server could not be started, ended during the
    /// call, or answered with something that is not a result.
    ServerFailed,
}

/// Who or what refused part or all of a call: every refusal is named at
/// its source, so a turn's outcome is derived from its calls' refusals
/// and never read back out of a result's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusedBy {
    /// A deny rule (or the fail-closed gate) refused the names the call
    /// declared.
    Rule,
    /// A path the call names is not a workspace path (absolute, escaping,
    /// NUL); no rule was consulted.
    Path,
    /// No rule decided it and no one was there to ask.
    NeedsApproval,
    /// The person was asked and said no.
    Person,
    /// The approval mode (read-only) refused it.
    Mode,
    /// The fence refused a file the call reached (by the name it resolved
    /// to), under a permission rule.
    Fence,
    /// The fence, the gate or a change set's inspection refused a write
    /// into version-control metadata (`.git`, ...).
    Protected,
    /// A command's change set was refused whole, and nothing landed.
    ChangeSet,
    /// GOAT's egress proxy refused a destination.
    Egress,
    /// The MCP tool is suspended: its live definition no longer matches
    /// the one the person trusted.
    Suspended,
    /// A host limit kept it from running (calls per response).
    Limit,
    /// A hook the person added denied it, failed (which denies), or is
    /// suspended (issue 41).
    Hook,
}

/// One refusal, where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Who or what refused.
    pub by: RefusedBy,
    /// What was refused: a workspace path (as resolved, where the refusal
    /// came from the fence), a host, a tool; `None` for the whole call.
    pub target: Option<String>,
    /// Why, in words for the model and the person.
    pub reason: String,
}

impl Refusal {
    /// A refusal by `by` of `target`, because `reason`.
    pub fn new(by: RefusedBy, target: Option<String>, reason: impl Into<String>) -> Self {
        Self {
            by,
            target,
            reason: reason.into(),
        }
    }
}

/// Where a call's [`FileChange`](crate::FileChange)s were written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChangesStored {
    /// With the call's outcome (Pen tools, MCP servers, Landlock-only
    /// commands).
    #[default]
    WithOutcome,
    /// Before they landed (a view's change set, ADR-0077): the outcome
    /// still lists them, for the turn's `files_changed`, but they are not
    /// written twice.
    BeforeLanding,
}

/// Why a round was stored as failed or cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundFailure {
    /// The engine failed: a connection, an HTTP error, a broken stream.
    Engine,
    /// The model wrote a tool call as text (ADR-0065), recovered or not.
    Markup,
    /// The person cancelled it while it streamed.
    Cancelled,
    /// GOAT stopped while it was streaming.
    Interrupted,
}

impl RoundFailure {
    /// The status a round that failed so is stored with.
    pub fn status(self) -> RoundStatus {
        match self {
            Self::Cancelled => RoundStatus::Cancelled,
            Self::Engine | Self::Markup | Self::Interrupted => RoundStatus::Failed,
        }
    }
}

/// Which channel of a response held the tool-call markup of a round that
/// failed with [`RoundFailure::Markup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkupChannel {
    /// The answer's content (ADR-0065).
    Content,
    /// The reasoning channel, the content empty: the engine's reasoning
    /// parser kept the call there.
    Reasoning,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            /// The name stored in the database and shown to people.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),* }
            }

            /// The value named `s` as stored, or an error naming what was found.
            pub fn parse(s: &str) -> Result<Self, rusqlite::Error> {
                match s {
                    $($text => Ok(Self::$variant),)*
                    other => Err(rusqlite::Error::InvalidColumnType(
                        0,
                        format!("unknown {} '{other}'", stringify!($ty)),
                        rusqlite::types::Type::Text,
                    )),
                }
            }
        }
    };
}

text_enum!(TurnStatus { Running => "running", Completed => "completed", Failed => "failed", Cancelled => "cancelled" });
text_enum!(RoundStatus { Streaming => "streaming", Ok => "ok", Failed => "failed", Cancelled => "cancelled" });
text_enum!(CallStatus { Pending => "pending", Ok => "ok", Error => "error", Denied => "denied", Interrupted => "interrupted" });
text_enum!(CallDecision {
    Allow => "allow",
    Deny => "deny",
    AskAllowedOnce => "ask-allowed",
    AskAllowedSession => "ask-allowed-session",
    AskAllowedAlways => "ask-allowed-always",
    AskDenied => "ask-denied",
});
text_enum!(CallErrorKind {
    UnknownTool => "unknown-tool",
    InvalidArguments => "invalid-arguments",
    Denied => "denied",
    NeedsApproval => "needs-approval",
    NotFound => "not-found",
    Conflict => "conflict",
    PermissionDenied => "permission-denied",
    TooLarge => "too-large",
    Io => "io",
    Timeout => "timeout",
    MemoryExceeded => "memory-exceeded",
    OutputExceeded => "output-exceeded",
    LimitExceeded => "limit-exceeded",
    Crashed => "crashed",
    Cancelled => "cancelled",
    TooManyCalls => "too-many-calls",
    Interrupted => "interrupted",
    ToolError => "tool-error",
    ServerFailed => "server-failed",
});
text_enum!(RefusedBy {
    Rule => "rule",
    Path => "path",
    NeedsApproval => "needs-approval",
    Person => "person",
    Mode => "mode",
    Fence => "fence",
    Protected => "protected",
    ChangeSet => "change-set",
    Egress => "egress",
    Suspended => "suspended",
    Limit => "limit",
    Hook => "hook",
});
text_enum!(MarkupChannel { Content => "content", Reasoning => "reasoning" });
text_enum!(RoundFailure {
    Engine => "engine",
    Markup => "markup",
    Cancelled => "cancelled",
    Interrupted => "interrupted",
});

macro_rules! sql_text {
    ($($ty:ident),*) => {$(
        impl rusqlite::ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $ty {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                Self::parse(text).map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

text_enum!(EgressRequest { Connect => "connect", Http => "http" });
text_enum!(EgressVerdict {
    Allowed => "allowed",
    Unreachable => "unreachable",
    NotListed => "not-listed",
    IpLiteral => "ip-literal",
    NonPublic => "non-public",
    BadName => "bad-name",
    Unresolved => "unresolved",
    SniMismatch => "sni-mismatch",
    NotTls => "not-tls",
    BadRequest => "bad-request",
});

sql_text!(
    EgressRequest,
    EgressVerdict,
    TurnStatus,
    RoundStatus,
    CallStatus,
    CallDecision,
    CallErrorKind,
    RoundFailure,
    MarkupChannel,
    RefusedBy
);
