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
    /// `turn_id` was started screened (no prompt kept, left out of the
    /// history until let through). `Ok(true)`: the prompt is recorded and
    /// goes to the model; `Ok(false)`: a hook withheld it (it is never
    /// kept, and the history leaves the turn out). An error or a crash
    /// leaves the turn screened: out of every later prompt.
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
        // Not screened whole: the turn stays as started, its prompt
        // neither kept nor sent (nor said).
        if cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        let let_through = match said.objection.as_ref().map(|o| o.hook.clone()) {
            Some(hook) => {
                self.store(move |s| s.withhold_prompt(turn_id, &hook))
                    .await?;
                false
            }
            None => {
                let text = prompt.to_owned();
                self.store(move |s| s.admit_prompt(turn_id, &text)).await?;
                true
            }
        };
        // Said once the record says the same.
        on_event(TurnEvent::TurnHooks {
            event: "user_prompt_submit",
            runs: said.runs,
            objection: said.objection,
            went_on: false,
        });
        Ok(let_through)
    }

    /// Runs the `stop` hooks as the model ends turn `turn_id` with
    /// `last_message`. `Some(next)`: a hook sent the model back to work;
    /// the turn is ended and `next` is the turn that goes on, whose prompt
    /// is the hook's framed words.
    pub(super) async fn stop_hooks(
        &self,
        (turn_id, rounds_left): (i64, usize),
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
        // A hook that failed is not asked again, one that said to stop
        // (`continue: false`) is obeyed, and with no round left there is
        // nothing to go on with: each time, its objection is the turn's
        // last word.
        let go_on = said
            .objection
            .as_ref()
            .filter(|o| {
                !o.failed && !o.halt && *continuations < MAX_STOP_CONTINUATIONS && rounds_left > 0
            })
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
