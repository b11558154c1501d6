//! The hooks that run once a turn, not for a call: `user_prompt_submit`
//! when the person submits a prompt, before the model sees it, and `stop`
//! when the model ends its turn. Both are policy events, run as a
//! `pre_tool_use` hook is: the workspace read-only through the rules the
//! caller gives (what they hide stays hidden), the first deny (or
//! failure) ending the event's run.

use goat_command::{Interrupt, WorkspaceRules};
use serde_json::{Value, json};

use crate::answer::Answer;
use crate::event::Event;
use crate::run::{HookRun, Hooks, ReadOnly, drop_changes, permission_mode};

/// The most of the model's last answer a `stop` hook is given.
const MAX_LAST_MESSAGE_CHARS: usize = 16 * 1024;

/// A turn as its hooks are told of it.
#[derive(Clone, Copy)]
pub struct TurnHook<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The approval mode, by GOAT's name.
    pub mode: &'a str,
    /// What the workspace looks like to the hook (read-only); `None`: none
    /// of it is visible.
    pub rules: Option<&'a dyn WorkspaceRules>,
}

impl Hooks {
    /// Whether any hook runs at `event`.
    pub fn has(&self, event: Event) -> bool {
        self.entries.iter().any(|h| h.event == event)
    }

    /// Runs every `user_prompt_submit` hook on `prompt`, in order; the
    /// first that denies (or fails) ends the run. A deny withholds the
    /// prompt from the model.
    pub fn user_prompt_submit(
        &self,
        turn: &TurnHook<'_>,
        prompt: &str,
        interrupt: Option<&Interrupt>,
    ) -> Vec<HookRun> {
        self.turn_event(
            Event::UserPromptSubmit,
            turn,
            [("prompt", Value::String(prompt.to_owned()))],
            interrupt,
        )
    }

    /// Runs every `stop` hook as the model ends its turn with
    /// `last_message`; `active` says a stop hook already sent the model
    /// back this turn (Claude Code's `stop_hook_active`). The first that
    /// denies (or fails) ends the run.
    pub fn stop(
        &self,
        turn: &TurnHook<'_>,
        last_message: &str,
        active: bool,
        interrupt: Option<&Interrupt>,
    ) -> Vec<HookRun> {
        let last: String = last_message.chars().take(MAX_LAST_MESSAGE_CHARS).collect();
        self.turn_event(
            Event::Stop,
            turn,
            [
                ("stop_hook_active", Value::Bool(active)),
                ("last_assistant_message", Value::String(last)),
            ],
            interrupt,
        )
    }

    fn turn_event<const N: usize>(
        &self,
        event: Event,
        turn: &TurnHook<'_>,
        extra: [(&str, Value); N],
        interrupt: Option<&Interrupt>,
    ) -> Vec<HookRun> {
        let mut stdin = json!({
            "session_id": turn.session_id,
            "transcript_path": "",
            "cwd": self.containment.workspace.display().to_string(),
            "permission_mode": permission_mode(turn.mode),
            "hook_event_name": event.claude_name(),
        });
        if let Some(map) = stdin.as_object_mut() {
            for (key, value) in extra {
                map.insert(key.to_owned(), value);
            }
        }
        let stdin = stdin.to_string();
        let mut runs = Vec::new();
        for hook in self.entries.iter().filter(|h| h.event == event) {
            let rules = ReadOnly(turn.rules);
            let (run, changes) = self.run_one(hook, stdin.as_bytes(), &rules, interrupt);
            drop_changes(changes);
            let denies = matches!(
                run.answer,
                Answer::Deny(_) | Answer::Halt(_) | Answer::Failed(_)
            );
            runs.push(run);
            if denies {
                break;
            }
        }
        runs
    }
}
