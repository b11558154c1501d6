//! The Shepherd's side of the context (ADR-0074, ADR-0083): learning the
//! window, fitting each round's request into it, compacting older turns
//! and the running turn's older rounds into a summary the model writes,
//! and what `/status` and `/compact` call.

use std::sync::PoisonError;

use goat_engine::{CancellationToken, EngineError, Message, ToolSchema, WindowProbe};
use goat_store::{CompactReason, HistoryEntry, HistoryTurn, NewSummary, Summary};

use super::{Shepherd, TurnError, TurnEvent};
use crate::context::compact::{
    COMPACT_INSTRUCTION, cut, render_turn, summary_cap, summary_request, system_with_summary,
};
use crate::context::fit::{Fitted, cut_newest, fit, to_message};
use crate::context::{
    Answered, COMPACT_SHARE, ContextState, ContextStatus, WindowChoice, estimate,
};

/// What [`Shepherd::compact`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// Turns the new summary covers that the last one did not.
    pub turns: usize,
    /// Rounds of a turn it covers only in part (the running one, whose
    /// request and newest rounds stay): 0 when it covers whole turns.
    pub rounds: usize,
    /// Summaries written (more than one when the turns did not fit one
    /// request to the model).
    pub summaries: usize,
    /// The newest summary's text.
    pub summary: Option<String>,
}

/// What one summary is asked to cover, rendered for the summariser.
struct Part {
    text: String,
    /// The turn it ends in, and the round when it ends inside that turn.
    through: (i64, Option<i64>),
    /// Rounds of that turn it covers, when it ends inside it.
    rounds: usize,
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

    /// Says, once per session, that the engine answered without saying
    /// its window and GOAT assumes the default; nothing while the engine
    /// could not be asked (it may say next turn) or the person set one.
    pub(super) fn tell_window_not_said(&self, on_event: &mut (dyn FnMut(TurnEvent) + Send)) {
        use std::sync::atomic::Ordering;
        let assumed = self.state(|s| {
            let (tokens, source) = s.window();
            (s.settled && source == goat_engine::WindowSource::Default).then_some(tokens)
        });
        if let Some(assumed) = assumed
            && !self.told_window_not_said.swap(true, Ordering::Relaxed)
        {
            on_event(TurnEvent::WindowNotSaid { assumed });
        }
    }

    /// The newest summary and the history after it. The stubs' watermark
    /// a process before this one left is taken up, so a resumed session's
    /// first request is laid out as its last one was.
    async fn context_history(&self) -> Result<(Option<Summary>, Vec<HistoryTurn>), TurnError> {
        let session = self.session_id.clone();
        let (summary, turns, elided) = self
            .store(move |s| {
                let summary = s.latest_summary(&session)?;
                let turns = s.history_since(&session, summary.as_ref())?;
                Ok((summary, turns, s.elided_through(&session)?))
            })
            .await?;
        self.state(|s| s.elided_through = s.elided_through.max(elided));
        Ok((summary, turns))
    }

    /// Keeps the stubs' watermark in the store when a cut moved it.
    async fn keep_elided(&self, before: Option<i64>) -> Result<(), TurnError> {
        let now = self.state(|s| s.elided_through);
        if let Some(round) = now.filter(|_| now > before) {
            let session = self.session_id.clone();
            self.store(move |s| s.set_elided_through(&session, round))
                .await?;
        }
        Ok(())
    }

    /// The request from the history, laid out as the last one was (the
    /// results elided so far as stubs), cut if it is over the budget.
    fn fit_now(
        &self,
        summary: Option<&Summary>,
        turns: &[HistoryTurn],
        schemas: &[ToolSchema],
        instruction: Option<Message>,
    ) -> Fitted {
        let (bpt, budget, mut elided) =
            self.state(|s| (s.bytes_per_token, s.budget(), s.elided_through));
        let mut fitted = fit(
            system_with_summary(
                &self.system_prompt(budget),
                summary.map(|s| s.content.as_str()),
            ),
            turns,
            instruction,
            schemas,
            &self.engine.config().model,
            bpt,
            budget,
            &mut elided,
        );
        fitted.summary_id = summary.map(|s| s.id);
        self.state(|s| s.elided_through = elided);
        fitted
    }

    /// The round's request, fitted into the window (ADR-0083). Within the
    /// budget it extends the last one. Over it, it is cut once: results
    /// elided down to the low-water mark, and when that is not enough,
    /// older turns and the running turn's older rounds (never its request
    /// or newest round) summarised. As a last resort the newest result is
    /// cut. What cannot be fitted even so is
    /// [`TurnError::ContextTooSmall`]; nothing is sent.
    pub(super) async fn fitted_request(
        &self,
        turn_id: i64,
        schemas: &[ToolSchema],
        instruction: Option<Message>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Fitted, TurnError> {
        let (summary, turns) = self.context_history().await?;
        let before = self.state(|s| s.elided_through);
        let mut fitted = self.fit_now(summary.as_ref(), &turns, schemas, instruction.clone());
        self.state(|s| s.cuts += u64::from(fitted.cut));
        self.keep_elided(before).await?;
        if fitted.compact {
            let done = self
                .compact_for_window(turn_id, summary.as_ref(), &turns, cancel)
                .await?;
            if done.summaries > 0 {
                on_event(TurnEvent::Compacted {
                    turns: done.turns,
                    rounds: done.rounds,
                    reason: CompactReason::Window,
                });
                let (summary, turns) = self.context_history().await?;
                let before = self.state(|s| s.elided_through);
                fitted = self.fit_now(summary.as_ref(), &turns, schemas, instruction);
                self.keep_elided(before).await?;
            }
        }
        let (bpt, budget) = self.state(|s| (s.bytes_per_token, s.budget()));
        if !fitted.fits && !cut_newest(&mut fitted, &self.engine.config().model, bpt, budget) {
            return Err(TurnError::ContextTooSmall {
                system_tokens: estimate(self.system_prompt(budget).len(), bpt),
                tokens: fitted.tokens,
                budget,
            });
        }
        self.state(|s| s.last_estimate = fitted.tokens);
        self.tell_project_cut(budget, on_event);
        Ok(fitted)
    }

    /// Keeps the request the engine just answered, for a summary asked as
    /// its continuation.
    pub(super) fn keep_answered(&self, answered: Answered) {
        self.state(|s| s.answered = Some(answered));
    }

    /// Summarises for the window: as the continuation of the last request
    /// the engine answered when it still holds (its prompt cache then
    /// serves all but the instruction), covering everything in it; else
    /// by rendering older turns, and the running turn's older rounds when
    /// those are not enough.
    async fn compact_for_window(
        &self,
        turn_id: i64,
        summary: Option<&Summary>,
        turns: &[HistoryTurn],
        cancel: &CancellationToken,
    ) -> Result<Compacted, TurnError> {
        let answered = self
            .state(|s| s.answered.clone())
            .filter(|a| a.summary_id == summary.map(|s| s.id) && a.newest_round.is_some());
        if let Some(answered) = answered
            && let Some((through_turn, through_round)) = answered.newest_round
            && let Some((text, prompt_tokens, completion_tokens)) =
                self.ask_continuation(&answered, cancel).await?
        {
            let whole = turns.iter().filter(|t| t.turn_id < through_turn).count();
            let rounds = turns
                .iter()
                .find(|t| t.turn_id == through_turn)
                .map_or(0, |t| {
                    t.rounds.iter().filter(|(r, _)| *r <= through_round).count()
                });
            let new = NewSummary {
                through_turn_id: through_turn,
                through_round_id: Some(through_round),
                content: text.clone(),
                reason: CompactReason::Window,
                prompt_tokens,
                completion_tokens,
            };
            let session = self.session_id.clone();
            self.store(move |s| s.add_summary(&session, &new)).await?;
            self.state(|s| s.compactions += 1);
            let (turns, rounds) = if through_turn == turn_id {
                (whole, rounds)
            } else {
                (whole + 1, 0)
            };
            return Ok(Compacted {
                turns,
                rounds,
                summaries: 1,
                summary: Some(text),
            });
        }
        self.compact_older(CompactReason::Window, Some(turn_id), cancel)
            .await
    }

    /// The summary asked as the continuation of `answered`: the same
    /// messages and tools, then [`COMPACT_INSTRUCTION`]. `None` when it
    /// would not leave the answer room, or the engine or the model did not
    /// give a summary (a call instead, no text, a failure): the caller
    /// then renders the turns instead.
    async fn ask_continuation(
        &self,
        answered: &Answered,
        cancel: &CancellationToken,
    ) -> Result<Option<(String, Option<u64>, Option<u64>)>, TurnError> {
        let mut request = answered.request.clone();
        request.messages.push(Message::User {
            content: COMPACT_INSTRUCTION.to_owned(),
        });
        let (bpt, budget, window) = self.state(|s| (s.bytes_per_token, s.budget(), s.window().0));
        let bytes = request.body_bytes(&self.engine.config().model, true);
        // At least half the answer's reserve stays for the summary.
        if estimate(bytes, bpt) > budget + (window - budget) / 2 {
            return Ok(None);
        }
        let response = match self.engine.stream_chat(&request, cancel, &mut |_| {}).await {
            Ok(r) => r,
            // A summary cut at the output limit is still a summary.
            Err(EngineError::Length { partial }) => *partial,
            Err(EngineError::Cancelled) => return Err(TurnError::Cancelled),
            Err(_) => return Ok(None),
        };
        self.count_usage(&response);
        let text = response.content.trim();
        if text.is_empty() || !response.tool_calls.is_empty() {
            return Ok(None);
        }
        let cap = summary_cap((budget as f64 * bpt) as usize);
        Ok(Some((
            cut(text, cap).to_owned(),
            response.usage.map(|u| u.prompt_tokens),
            response.usage.map(|u| u.completion_tokens),
        )))
    }

    /// Compacts on demand (`/compact`): every turn so far goes into the
    /// summary. Nothing to compact is not an error.
    pub async fn compact(&self, cancel: &CancellationToken) -> Result<Compacted, TurnError> {
        self.discover_window().await;
        self.compact_older(CompactReason::Asked, None, cancel).await
    }

    /// Summarises turns before `keep` (all of them when `None`) by
    /// rendering them for a request of their own: for
    /// [`CompactReason::Window`] only as many of the oldest as leave the
    /// rest within the compaction mark, and when even all of them are not
    /// enough, also the running turn's (`keep`'s) rounds but the newest;
    /// otherwise all older turns. What does not fit one summarising
    /// request is summarised in order, each summary carrying the one
    /// before.
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
        let (count, enough) = match reason {
            CompactReason::Window => self.turns_to_compact(&turns, older.len(), cap, bpt, budget),
            CompactReason::Overflow | CompactReason::Asked => (older.len(), true),
        };
        let mut parts: Vec<Part> = older[..count]
            .iter()
            .map(|t| Part {
                text: render_turn(&t.entries),
                through: (t.turn_id, None),
                rounds: 0,
            })
            .collect();
        if !enough
            && let Some(running) = turns.iter().find(|t| Some(t.turn_id) == keep)
            && let [.., (through, _), (_, newest_start)] = running.rounds.as_slice()
        {
            parts.push(Part {
                text: render_turn(&running.entries[..*newest_start]),
                through: (running.turn_id, Some(*through)),
                rounds: running.rounds.len() - 1,
            });
        }
        let mut previous = summary.map(|s| s.content);
        let mut written = 0;
        let mut start = 0;
        while start < parts.len() {
            let mut rendered = Vec::new();
            let mut end = start;
            while end < parts.len() {
                rendered.push(parts[end].text.clone());
                let bytes = summary_request(previous.as_deref(), &rendered)
                    .body_bytes(&self.engine.config().model, true);
                if estimate(bytes, bpt) > budget {
                    let last = rendered.pop().unwrap_or_default();
                    if rendered.is_empty() {
                        // One part alone is too long to show whole.
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
            let (through_turn_id, through_round_id) = parts[end - 1].through;
            let new = NewSummary {
                through_turn_id,
                through_round_id,
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
            rounds: parts.iter().map(|p| p.rounds).sum(),
            summaries: written,
            summary: (written > 0).then_some(previous).flatten(),
        })
    }

    /// How many of the oldest `older` turns to compact so that what is
    /// left (with results elided, and a summary of at most `cap` bytes)
    /// takes at most [`COMPACT_SHARE`] of the budget, and whether that is
    /// enough: with all of them compacted, the running turn may still be
    /// too large.
    fn turns_to_compact(
        &self,
        turns: &[HistoryTurn],
        older: usize,
        cap: usize,
        bpt: f64,
        budget: u64,
    ) -> (usize, bool) {
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
        let fixed = self.system_prompt(budget).len() + cap + 4096;
        let target = (budget as f64 * COMPACT_SHARE) as u64;
        let mut rest: usize = sizes.iter().sum::<usize>() + fixed;
        for (k, size) in sizes.iter().take(older).enumerate() {
            if estimate(rest, bpt) <= target {
                return (k.max(1).min(older), true);
            }
            rest -= size;
        }
        (older, estimate(rest, bpt) <= target)
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
