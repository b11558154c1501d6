//! The person's hooks at a turn's events (issue 41): `user_prompt_submit`
//! before the model sees the prompt, `stop` as the model ends its turn.
//! Both can only hold back: a prompt hook withholds the prompt, a stop
//! hook sends the model back to work with its words (framed as the
//! hook's), at most [`MAX_STOP_CONTINUATIONS`] times a turn.

use goat_engine::CancellationToken;
use goat_router::{TurnHookEvent, turn_hooks_recorded};

use super::{Shepherd, TurnError, TurnEvent};

/// How many times a turn's stop hooks may send the model back to work;
/// after that their objection is the turn's last word, a denial.
pub const MAX_STOP_CONTINUATIONS: usize = 3;

impl Shepherd {
    /// Whether `user_prompt_submit` hooks screen each prompt before the
    /// model sees it.
    pub fn screens_prompts(&self) -> bool {
        self.has_turn_hooks(&TurnHookEvent::PromptSubmitted(String::new()))
    }

    /// Whether a hook runs at `event`.
    pub(super) fn has_turn_hooks(&self, event: &TurnHookEvent) -> bool {
        self.router
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .has_turn_hooks(event)
    }

    /// Runs the `user_prompt_submit` hooks on `prompt`, whose turn
    /// `turn_id` was started with no prompt kept. `Ok(true)`: the prompt
    /// is recorded and goes to the model; `Ok(false)`: a hook withheld it
    /// (it is never kept, and the history leaves the turn out).
    pub(super) async fn screen_prompt(
        &self,
        turn_id: i64,
        prompt: &str,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<bool, TurnError> {
        let event = TurnHookEvent::PromptSubmitted(prompt.to_owned());
        let said =
            turn_hooks_recorded(&self.store, &self.router, turn_id, event, Some(cancel)).await?;
        let withheld = said.objection.as_ref().map(|o| o.hook.clone());
        on_event(TurnEvent::TurnHooks {
            event: "user_prompt_submit",
            runs: said.runs,
            objection: said.objection,
            went_on: false,
        });
        if cancel.is_cancelled() {
            // Not screened whole: the prompt is not kept, and never sent.
            self.store(move |s| s.withhold_prompt(turn_id, "")).await?;
            return Err(TurnError::Cancelled);
        }
        match withheld {
            Some(hook) => {
                self.store(move |s| s.withhold_prompt(turn_id, &hook))
                    .await?;
                Ok(false)
            }
            None => {
                let text = prompt.to_owned();
                self.store(move |s| s.admit_prompt(turn_id, &text)).await?;
                Ok(true)
            }
        }
    }

    /// Runs the `stop` hooks as the model ends turn `turn_id` with
    /// `last_message`. `Some(next)`: a hook sent the model back to work;
    /// the turn is ended and `next` is the turn that goes on, whose prompt
    /// is the hook's framed words.
    pub(super) async fn stop_hooks(
        &self,
        turn_id: i64,
        last_message: &str,
        continuations: &mut usize,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Option<i64>, TurnError> {
        let event = TurnHookEvent::Stopping {
            last_message: last_message.to_owned(),
            active: *continuations > 0,
        };
        if !self.has_turn_hooks(&event) {
            return Ok(None);
        }
        let said =
            turn_hooks_recorded(&self.store, &self.router, turn_id, event, Some(cancel)).await?;
        if cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        // A hook that failed is not asked again: its failure is the
        // turn's last word.
        let go_on = said
            .objection
            .as_ref()
            .filter(|o| !o.failed && *continuations < MAX_STOP_CONTINUATIONS)
            .map(|o| (o.as_prompt(), o.hook.clone()));
        on_event(TurnEvent::TurnHooks {
            event: "stop",
            runs: said.runs,
            objection: said.objection,
            went_on: go_on.is_some(),
        });
        let Some((prompt, hook)) = go_on else {
            return Ok(None);
        };
        *continuations += 1;
        let session = self.session_id.clone();
        let next = self
            .store(move |s| {
                s.finish_turn(turn_id, goat_store::TurnStatus::Completed, None)?;
                s.start_turn_from_hook(&session, &prompt, &hook)
            })
            .await?;
        Ok(Some(next))
    }
}
