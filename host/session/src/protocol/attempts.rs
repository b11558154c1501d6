//! `goat run --attempts`'s own lines (issue 42, schema 1.4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Outcome;

/// `attempts.completed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptsEnded {
    /// The run of attempts (`goat attempts show --run ID`).
    pub run: i64,
    /// How the run ended: the landed attempt's outcome, or
    /// `no_attempt_passed`.
    pub outcome: Outcome,
    /// The exit code `goat run` ends with.
    pub exit_code: u8,
    /// Each attempt, in order.
    pub attempts: Vec<AttemptEnded>,
    /// How many passed the check (or, without one, completed).
    pub passed: u32,
    /// The attempt whose changes landed; `null` when none did.
    pub landed: Option<u32>,
    /// Workspace paths the landing changed.
    pub files_changed: Vec<String>,
}

/// One attempt, in `attempts.completed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptEnded {
    /// 1-based.
    pub attempt: u32,
    /// Its own session.
    pub session_id: Option<String>,
    /// How its turn ended.
    pub outcome: Option<Outcome>,
    /// Whether its check passed; `null` without `--verify`.
    pub passed: Option<bool>,
    /// The paths its layer changed.
    pub files_changed: Vec<String>,
}
