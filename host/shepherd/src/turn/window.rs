//! The Shepherd's side of the context (ADR-0073): learning the window,
//! fitting each round's request into it, compacting older turns into a
//! summary the model writes, and what `/status` and `/compact` call.

use std::sync::PoisonError;

use goat_engine::{CancellationToken, EngineError, Message, ToolSchema, WindowProbe};
use goat_store::{CompactReason, HistoryEntry, HistoryTurn, NewSummary, Summary};

use super::{Shepherd, TurnError, TurnEvent};
use crate::context::compact::{
    cut, render_turn, summary_cap, summary_request, system_with_summary,
};
use crate::context::fit::{Fitted, cut_newest, fit, to_message};
use crate::context::{ContextState, ContextStatus, WindowChoice, estimate};

/// After compacting for the window, the request should take at most this
/// share of the budget, so the next turns have room before compacting
/// again (rather than compacting a little every round).
const COMPACT_TARGET_SHARE: f64 = 0.5;

/// What [`Shepherd::compact`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// Turns the new summary covers that the last one did not.
    pub turns: usize,
    /// Summaries written (more than one when the turns did not fit one
    /// request to the model).
    pub summaries: usize,
    /// The newest summary's text.
    pub summary: Option<String>,
}

impl Shepherd {
    /// How the context window is chosen: the person's `context_tokens`
    /// ([`WindowChoice::Setting`]), or asked of the engine with a
    /// fallback (the default).
    #[must_use]
    pub fn with_context_window(self, choice: WindowChoice) -> Self {
        *self.context.lock().unwrap_or_else(PoisonError::into_inner) = ContextState::new(choice);
        self
    }

    /// The context as `/status` shows it: the window and where it came
    /// from, the estimated size of the last request, the tokens the
    /// engine reported for this process's requests.
    pub fn context_status(&self) -> ContextStatus {
        self.state(|s| s.status())
    }

    pub(super) fn state<T>(&self, f: impl FnOnce(&mut ContextState) -> T) -> T {
        f(&mut self.context.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Asks the engine its window, once it answers (a failure to ask is
    /// tried again next turn; it never fails a turn). Nothing is asked
    /// when the person set `context_tokens`.
    pub async fn discover_window(&self) {
        if self.state(|s| s.settled) {
            return;
        }
        let probe = self.engine.discover_window().await;
        self.state(|s| match probe {
            WindowProbe::Found { tokens, source } => {
                s.window = Some((tokens, source));
                s.settled = true;
            }
            WindowProbe::NotSaid => s.settled = true,
            WindowProbe::Unreachable => {}
        });
    }

    /// The newest summary and the turns after it.
    async fn context_history(&self) -> Result<(Option<Summary>, Vec<HistoryTurn>), TurnError> {
        let session = self.session_id.clone();
        self.store(move |s| {
            let summary = s.latest_summary(&session)?;
            let turns = s.history_turns(&session, summary.as_ref().map(|x| x.through_turn_id))?;
            Ok((summary, turns))
        })
        .await
    }

    fn fit_now(
        &self,
        summary: Option<&Summary>,
        turns: Vec<HistoryTurn>,
        schemas: &[ToolSchema],
        instruction: Option<Message>,
    ) -> Fitted {
        let (bpt, budget) = self.state(|s| (s.bytes_per_token, s.budget()));
        fit(
            system_with_summary(
                &self.system_prompt(budget, bpt),
                summary.map(|s| s.content.as_str()),
            ),
            turns.into_iter().flat_map(|t| t.entries).collect(),
            instruction,
            schemas,
            &self.engine.config().model,
            bpt,
            budget,
        )
    }

    /// The round's request, fitted into the window: results elided to
    /// stubs, then older turns compacted (never `turn_id`, the turn being
    /// run), then, as a last resort, the newest result cut. What cannot be
    /// fitted even so is [`TurnError::ContextTooSmall`]; nothing is sent.
    pub(super) async fn fitted_request(
        &self,
        turn_id: i64,
        schemas: &[ToolSchema],
        instruction: Option<Message>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Fitted, TurnError> {
        let (summary, turns) = self.context_history().await?;
        let has_older = turns.iter().any(|t| t.turn_id < turn_id);
        let mut fitted = self.fit_now(summary.as_ref(), turns, schemas, instruction.clone());
        if !fitted.fits && has_older {
            let done = self
                .compact_older(CompactReason::Window, Some(turn_id), cancel)
                .await?;
            if done.summaries > 0 {
                on_event(TurnEvent::Compacted {
                    turns: done.turns,
                    reason: CompactReason::Window,
                });
            }
            let (summary, turns) = self.context_history().await?;
            fitted = self.fit_now(summary.as_ref(), turns, schemas, instruction);
        }
        let (bpt, budget) = self.state(|s| (s.bytes_per_token, s.budget()));
        if !fitted.fits && !cut_newest(&mut fitted, &self.engine.config().model, bpt, budget) {
            return Err(TurnError::ContextTooSmall {
                system_tokens: crate::context::estimate(self.system_prompt(budget, bpt).len(), bpt),
                tokens: fitted.tokens,
                budget,
            });
        }
        self.state(|s| s.last_estimate = fitted.tokens);
        self.tell_project_cut(budget, bpt, on_event);
        Ok(fitted)
    }

    /// Compacts on demand (`/compact`): every turn so far goes into the
    /// summary. Nothing to compact is not an error.
    pub async fn compact(&self, cancel: &CancellationToken) -> Result<Compacted, TurnError> {
        self.discover_window().await;
        self.compact_older(CompactReason::Asked, None, cancel).await
    }

    /// Summarises turns before `keep` (all of them when `None`): for
    /// [`CompactReason::Window`] only as many of the oldest as leave the
    /// rest within half the budget; otherwise all. Turns that do not fit
    /// one summarising request are summarised in order, each summary
    /// carrying the one before.
    pub(super) async fn compact_older(
        &self,
        reason: CompactReason,
        keep: Option<i64>,
        cancel: &CancellationToken,
    ) -> Result<Compacted, TurnError> {
        let (summary, turns) = self.context_history().await?;
        let older: Vec<&HistoryTurn> = turns
            .iter()
            .filter(|t| keep.is_none_or(|k| t.turn_id < k))
            .collect();
        let (bpt, budget) = self.state(|s| (s.bytes_per_token, s.budget()));
        let cap = summary_cap((budget as f64 * bpt) as usize);
        let count = match reason {
            CompactReason::Window => self.turns_to_compact(&turns, older.len(), cap, bpt, budget),
            CompactReason::Overflow | CompactReason::Asked => older.len(),
        };
        let chosen = &older[..count];
        let mut previous = summary.map(|s| s.content);
        let mut written = 0;
        let mut start = 0;
        while start < chosen.len() {
            let mut rendered = Vec::new();
            let mut end = start;
            while end < chosen.len() {
                let text = render_turn(&chosen[end].entries);
                rendered.push(text);
                let bytes = summary_request(previous.as_deref(), &rendered)
                    .body_bytes(&self.engine.config().model, true);
                if estimate(bytes, bpt) > budget {
                    let last = rendered.pop().unwrap_or_default();
                    if rendered.is_empty() {
                        // One turn alone is too long to show whole.
                        let room = (budget as f64 * bpt / 2.0) as usize;
                        rendered.push(cut(&last, room).to_owned());
                        end += 1;
                    }
                    break;
                }
                end += 1;
            }
            let content = self
                .ask_summary(previous.as_deref(), &rendered, cap, cancel)
                .await?;
            let new = NewSummary {
                through_turn_id: chosen[end - 1].turn_id,
                through_round_id: None,
                content: content.0.clone(),
                reason,
                prompt_tokens: content.1,
                completion_tokens: content.2,
            };
            let session = self.session_id.clone();
            self.store(move |s| s.add_summary(&session, &new)).await?;
            self.state(|s| s.compactions += 1);
            previous = Some(content.0);
            written += 1;
            start = end;
        }
        Ok(Compacted {
            turns: count,
            summaries: written,
            summary: (written > 0).then_some(previous).flatten(),
        })
    }

    /// How many of the oldest `older` turns to compact so that what is
    /// left (with results elided, and a summary of at most `cap` bytes)
    /// takes at most [`COMPACT_TARGET_SHARE`] of the budget; all of them
    /// if even that is not enough.
    fn turns_to_compact(
        &self,
        turns: &[HistoryTurn],
        older: usize,
        cap: usize,
        bpt: f64,
        budget: u64,
    ) -> usize {
        let sizes: Vec<usize> = turns
            .iter()
            .map(|t| {
                t.entries
                    .iter()
                    .map(|e| match e {
                        HistoryEntry::ToolResult { .. } => 400,
                        other => to_message(other.clone()).wire_bytes(),
                    })
                    .sum()
            })
            .collect();
        let fixed = self.system_prompt(budget, bpt).len() + cap + 4096;
        let target = (budget as f64 * COMPACT_TARGET_SHARE) as u64;
        let mut rest: usize = sizes.iter().sum::<usize>() + fixed;
        for (k, size) in sizes.iter().take(older).enumerate() {
            if estimate(rest, bpt) <= target {
                return k.max(1).min(older);
            }
            rest -= size;
        }
        older
    }

    /// One summarising request: no tools, the fixed instruction, the
    /// turns. The text, cut to `cap`, and the engine's token counts.
    async fn ask_summary(
        &self,
        previous: Option<&str>,
        rendered: &[String],
        cap: usize,
        cancel: &CancellationToken,
    ) -> Result<(String, Option<u64>, Option<u64>), TurnError> {
        let request = summary_request(previous, rendered);
        let response = match self.engine.stream_chat(&request, cancel, &mut |_| {}).await {
            Ok(r) => r,
            // A summary cut at the output limit is still a summary.
            Err(EngineError::Length { partial }) => *partial,
            Err(EngineError::Cancelled) => return Err(TurnError::Cancelled),
            Err(e) => return Err(TurnError::Compaction(e.to_string())),
        };
        self.count_usage(&response);
        let text = response.content.trim();
        if text.is_empty() {
            return Err(TurnError::Compaction(
                "the model answered the request for a summary with no text".to_owned(),
            ));
        }
        Ok((
            cut(text, cap).to_owned(),
            response.usage.map(|u| u.prompt_tokens),
            response.usage.map(|u| u.completion_tokens),
        ))
    }

    /// Adds a response's usage to the session's counts.
    pub(super) fn count_usage(&self, response: &goat_engine::Response) {
        if let Some(u) = response.usage {
            self.state(|s| {
                s.prompt_tokens += u.prompt_tokens;
                s.completion_tokens += u.completion_tokens;
            });
        }
    }
}

impl WindowChoice {
    /// The window in tokens this choice names, if it names one.
    pub fn setting(self) -> Option<u64> {
        match self {
            Self::Setting(n) => Some(n),
            Self::Ask { .. } => None,
        }
    }
}
