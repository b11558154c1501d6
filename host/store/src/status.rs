//! Where a turn, a round and a tool call stand, as stored.

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

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            /// The name stored in the database and shown to people.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),* }
            }

            pub(crate) fn parse(s: &str) -> Result<Self, rusqlite::Error> {
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
