//! What a resumed chat shows before its prompt: the last few exchanges
//! (the request, the tool calls, the answer shortened), so the person
//! sees where the conversation stands.
//!
//! Everything in it comes from the store, which holds what the model and
//! the tools said: all of it is escaped on its way to the terminal.

use goat_store::{RoundStatus, TurnRecord, TurnStatus};

use crate::text::{self, GOAT_LINE};

/// Turns shown when a chat resumes: enough to pick up the thread, short
/// of scrolling the prompt off the screen.
pub const RECAP_TURNS: usize = 3;

/// Longest request shown, in characters.
const RECAP_PROMPT_CHARS: usize = 200;

/// Longest answer shown, in characters: the gist, not the answer again.
const RECAP_ANSWER_CHARS: usize = 300;

/// Tool-call lines shown per turn; more are counted.
const RECAP_CALLS: usize = 5;

/// The recap of `turns` (the session's turns, oldest first), one line per
/// item, each ending in a newline; empty for a session with no turns.
pub fn recap(turns: &[TurnRecord]) -> String {
    if turns.is_empty() {
        return String::new();
    }
    let shown = &turns[turns.len().saturating_sub(RECAP_TURNS)..];
    let mut out = if shown.len() == turns.len() {
        format!(
            "{GOAT_LINE}this session so far ({}):\n",
            text::count(turns.len(), "turn")
        )
    } else {
        format!(
            "{GOAT_LINE}the last {} of this session's {} turns:\n",
            shown.len(),
            turns.len()
        )
    };
    for turn in shown {
        out.push_str(&format!(
            "  > {}\n",
            text::snippet(&turn.prompt, RECAP_PROMPT_CHARS)
        ));
        let calls: Vec<_> = turn.rounds.iter().flat_map(|r| &r.calls).collect();
        for call in calls.iter().take(RECAP_CALLS) {
            out.push_str(&format!(
                "    {} -> {}\n",
                text::call_summary(&call.call.tool, &call.call.arguments),
                call.status.as_str()
            ));
        }
        if calls.len() > RECAP_CALLS {
            out.push_str(&format!(
                "    … {} more\n",
                text::count(calls.len() - RECAP_CALLS, "tool call")
            ));
        }
        let answer = turn
            .rounds
            .iter()
            .rev()
            .find(|r| r.status == RoundStatus::Ok && !r.content.trim().is_empty())
            .map(|r| text::snippet(&r.content, RECAP_ANSWER_CHARS));
        match (turn.status, answer) {
            (TurnStatus::Completed, Some(answer)) => out.push_str(&format!("    {answer}\n")),
            (TurnStatus::Completed, None) => {}
            (TurnStatus::Cancelled, _) => out.push_str("    (cancelled)\n"),
            (TurnStatus::Failed, _) => out.push_str(&format!(
                "    (failed: {})\n",
                text::snippet(turn.error.as_deref().unwrap_or("no reason recorded"), 200)
            )),
            (TurnStatus::Running, _) => out.push_str("    (interrupted)\n"),
        }
    }
    out
}
