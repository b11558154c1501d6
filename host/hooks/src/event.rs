//! The events a hook runs at.

use serde::{Deserialize, Serialize};

/// When a hook runs.
///
/// `pre_tool_use` and `post_tool_use` are fired from the road for every
/// call; `user_prompt_submit` and `stop` from the Shepherd, once a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// Before a call runs, after the rules and mode let it through and
    /// before the person is asked: a policy event (deny, ask, or nothing).
    PreToolUse,
    /// After a call ran and succeeded: an action event, whose changes to
    /// the workspace land as a change set, undone with the call.
    PostToolUse,
    /// When the person submits a prompt, before the model sees it: a
    /// policy event (a deny withholds the prompt).
    UserPromptSubmit,
    /// When the model ends its turn: a policy event (a deny sends the
    /// hook's reason to the model, which goes on, a bounded number of
    /// times).
    Stop,
}

impl Event {
    /// Every event, as listed to people.
    pub const ALL: [Self; 4] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::Stop,
    ];

    /// GOAT's name, as `--on` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolUse => "pre_tool_use",
            Self::PostToolUse => "post_tool_use",
            Self::UserPromptSubmit => "user_prompt_submit",
            Self::Stop => "stop",
        }
    }

    /// Claude Code's name, as a hook reads it in `hook_event_name` and a
    /// settings file names it.
    pub fn claude_name(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
        }
    }

    /// The event named `name`, by GOAT's name or Claude Code's.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|e| e.name() == name || e.claude_name() == name)
    }

    /// Whether the hook is matched against a tool's name.
    pub fn has_tool(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PostToolUse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_both_ways() {
        for e in Event::ALL {
            assert_eq!(Event::from_name(e.name()), Some(e));
            assert_eq!(Event::from_name(e.claude_name()), Some(e));
        }
        assert_eq!(Event::from_name("SessionStart"), None);
    }
}
