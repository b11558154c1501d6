//! ADR-0065 bounded recovery: what a turn does when an answer has no
//! structured calls but writes one as text.
//!
//! The text is never parsed into a call. When the detector finds
//! unexecuted tool-call markup naming an offered tool, and this turn has
//! not used its one recovery, and the cap leaves room: the response is
//! stored as failed first (if that write fails, the turn stops, no retry),
//! it is kept out of every later prompt, and the next round alone carries
//! a host instruction saying no action occurred and the model must use its
//! structured tool-call format, with earlier results kept and an
//! instruction not to repeat them. A second malformed answer ends the turn
//! with an explicit error. Recovery changes no engine setting and no
//! permission.
//!
//! The same rule reads the reasoning channel when the content is empty (a
//! reasoning parser that kept the call there), and, when the person turned
//! it on, counts complete unwrapped Qwen3-Coder blocks (ADR-0067).
//!
//! ADR-0079 adds the engine's own failure to parse a call: llama.cpp ends
//! the response with "Failed to parse input at pos N: TEXT" when the
//! model's call text is malformed. When TEXT is markup naming an offered
//! tool by the same rule, it is the same situation and gets the same one
//! corrected request; any other parse failure stays an engine failure.

use goat_engine::{EngineError, Message, Response};
use goat_markup::Detector;
use goat_store::{MarkupChannel, Recovery, RoundFailure};

use super::{Shepherd, TurnError, TurnEvent};

/// The one-round host instruction after a malformed response (ADR-0065).
pub const RECOVERY_INSTRUCTION: &str = "[GOAT host] Your last response wrote a tool call as plain \
     text (tool-call markup in the message content), so no action occurred: nothing was run and \
     nothing changed. To use a tool you must use your complete structured tool-call format, not \
     text. The tool results above are real and complete; do not repeat actions that already \
     succeeded.";

/// A turn's one recovery: whether it is spent, and whether the next round
/// must carry [`RECOVERY_INSTRUCTION`].
#[derive(Debug, Default)]
pub(super) struct RecoveryBudget {
    used: bool,
    instruct_next: bool,
}

impl RecoveryBudget {
    /// Whether this turn has spent its one recovery.
    pub(super) fn used(&self) -> bool {
        self.used
    }

    /// The host instruction for the round being built, if the round before
    /// was a recovery. Taking it clears it, so it rides along for exactly
    /// one round.
    pub(super) fn take_instruction(&mut self) -> Option<Message> {
        std::mem::take(&mut self.instruct_next).then(|| Message::User {
            content: RECOVERY_INSTRUCTION.to_owned(),
        })
    }
}

/// What [`Shepherd::handle_markup`] made of an answer without structured
/// calls.
pub(super) enum Markup {
    /// No unexecuted call text: the answer is the turn's final answer.
    Clean,
    /// The response is stored as failed; the next round asks again.
    Retry,
}

impl Shepherd {
    /// Checks an answer that has no structured calls for tool-call text
    /// naming an offered tool, and applies ADR-0065.
    ///
    /// The content is read first. When it is empty (whitespace only), the
    /// reasoning channel is read by the same rule: vLLM's reasoning parser
    /// on Qwen3.5 can keep a whole call there, and the turn would otherwise
    /// end with an empty answer. Complete unwrapped Qwen3-Coder blocks count
    /// only when [`Shepherd::with_unwrapped_calls`] turned them on
    /// (ADR-0067).
    ///
    /// Guarantees: the text is never turned into a call. [`Markup::Clean`]
    /// writes nothing; the caller finishes the round. [`Markup::Retry`] is
    /// returned at most once per turn, only when another round fits under
    /// the cap, and only after the response is stored as failed (so it
    /// stays out of later prompts); if that write fails the error stops the
    /// turn. Otherwise the round is stored as failed and the turn ends with
    /// [`TurnError::MarkupAgain`] or [`TurnError::MarkupNoRoom`].
    pub(super) async fn handle_markup(
        &self,
        round_id: i64,
        round: usize,
        response: &Response,
        offered_names: &[String],
        budget: &mut RecoveryBudget,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Markup, TurnError> {
        let Some(recovery) = find_markup(response, offered_names, self.unwrapped_calls) else {
            return Ok(Markup::Clean);
        };
        let tool = recovery.tool.clone();
        let in_reasoning = recovery.channel == MarkupChannel::Reasoning;
        let (content, reasoning) = (response.content.clone(), response.reasoning.clone());
        let usage = response.usage;
        if budget.used || round == self.max_rounds {
            // Stored as failed too: it is not a usable answer.
            let failure = format!(
                "{}{} naming {} ({}); no recovery left, nothing was executed",
                goat_store::MARKUP_FAILURE_PREFIX,
                if in_reasoning {
                    " in the reasoning channel"
                } else {
                    ""
                },
                recovery.tool,
                recovery.markers.join(" ")
            );
            let channel = recovery.channel;
            self.store(move |s| {
                s.finish_round_markup(round_id, &content, &reasoning, channel, &failure)?;
                keep_usage(s, round_id, usage)
            })
            .await?;
            return Err(if budget.used {
                TurnError::MarkupAgain { tool, in_reasoning }
            } else {
                TurnError::MarkupNoRoom { tool, in_reasoning }
            });
        }
        // Persist first: if this fails, stop, no retry.
        self.store(move |s| {
            s.record_recovery(round_id, &content, &reasoning, &recovery)?;
            keep_usage(s, round_id, usage)
        })
        .await?;
        budget.used = true;
        budget.instruct_next = true;
        on_event(TurnEvent::Recovery { tool, in_reasoning });
        Ok(Markup::Retry)
    }
}

/// A round the engine ended because it could not parse the model's call
/// text (ADR-0079), not yet stored.
pub(super) struct ParseFailure {
    /// The round's row.
    pub(super) round_id: i64,
    /// 1-based.
    pub(super) round: usize,
    /// The engine's message.
    pub(super) error: String,
    /// The model's text the engine quoted.
    pub(super) quoted: String,
    /// The content streamed before the failure.
    pub(super) content: String,
}

impl Shepherd {
    /// ADR-0079: the engine could not parse the model's call text. When
    /// the text it quoted is unexecuted markup naming an offered tool (the
    /// rule of ADR-0065, on the quote), the round is stored as failed
    /// markup and the next round asks once for a structured call, as
    /// [`Shepherd::handle_markup`] does; `Ok(())` means that retry. Any
    /// other parse failure is stored as an engine failure and ends the
    /// turn with it; a second one, or one in the last round, ends it with
    /// [`TurnError::MarkupAgain`] or [`TurnError::MarkupNoRoom`].
    pub(super) async fn handle_parse_failure(
        &self,
        failed: ParseFailure,
        offered_names: &[String],
        budget: &mut RecoveryBudget,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<(), TurnError> {
        let ParseFailure {
            round_id,
            round,
            error,
            quoted,
            content,
        } = failed;
        // The quote first; an engine that quoted nothing leaves the
        // content streamed before it failed.
        let found = |text: &str| {
            detect(
                text,
                offered_names,
                self.unwrapped_calls,
                MarkupChannel::Content,
            )
        };
        let Some(recovery) = found(&quoted).or_else(|| found(&content)) else {
            let engine = EngineError::ToolCallParse {
                message: error,
                quoted,
            };
            let failure = engine.to_string();
            self.store(move |s| {
                s.finish_round_failed(round_id, RoundFailure::Engine, &content, &failure)
            })
            .await?;
            return Err(engine.into());
        };
        let tool = recovery.tool.clone();
        if budget.used || round == self.max_rounds {
            let failure = format!(
                "{}: the engine could not parse the model's tool call naming {} ({error}); \
                 no recovery left, nothing was executed",
                goat_store::MARKUP_FAILURE_PREFIX,
                recovery.tool,
            );
            self.store(move |s| {
                s.finish_round_markup(round_id, &content, "", MarkupChannel::Content, &failure)
            })
            .await?;
            return Err(if budget.used {
                TurnError::MarkupAgain {
                    tool,
                    in_reasoning: false,
                }
            } else {
                TurnError::MarkupNoRoom {
                    tool,
                    in_reasoning: false,
                }
            });
        }
        // Persist first: if this fails, stop, no retry.
        self.store(move |s| s.record_parse_recovery(round_id, &content, &recovery, &error))
            .await?;
        budget.used = true;
        budget.instruct_next = true;
        on_event(TurnEvent::Recovery {
            tool,
            in_reasoning: false,
        });
        Ok(())
    }
}

/// Keeps the usage a failed round reported (issue 23: its tokens were
/// spent, and `/status` counts them).
fn keep_usage(
    store: &mut goat_store::Store,
    round_id: i64,
    usage: Option<goat_engine::Usage>,
) -> Result<(), goat_store::StoreError> {
    match usage {
        Some(u) => store.record_round_usage(
            round_id,
            u.prompt_tokens,
            u.completion_tokens,
            u.cached_tokens,
        ),
        None => Ok(()),
    }
}

/// Unexecuted tool-call markup naming one of `offered_names` in `text`,
/// by ADR-0065's rule (and ADR-0067's when `unwrapped_calls`).
fn detect(
    text: &str,
    offered_names: &[String],
    unwrapped_calls: bool,
    channel: MarkupChannel,
) -> Option<Recovery> {
    let mut detector = Detector::new(offered_names).unwrapped_calls(unwrapped_calls);
    detector.feed(text.as_bytes());
    let verdict = detector.finish();
    verdict.unexecuted.then(|| Recovery {
        tool: verdict.tool.clone().unwrap_or_default(),
        markers: verdict
            .markers
            .iter()
            .map(|m| m.as_str().to_owned())
            .collect(),
        span: verdict.span,
        channel,
    })
}

/// Where an answer without structured calls holds unexecuted tool-call
/// markup naming one of `offered_names`, with what to store: its content,
/// or, when the content is empty, its reasoning channel.
fn find_markup(
    response: &Response,
    offered_names: &[String],
    unwrapped_calls: bool,
) -> Option<Recovery> {
    let detect = |text: &str, channel| detect(text, offered_names, unwrapped_calls, channel);
    detect(&response.content, MarkupChannel::Content).or_else(|| {
        response
            .content
            .trim()
            .is_empty()
            .then(|| detect(&response.reasoning, MarkupChannel::Reasoning))
            .flatten()
    })
}
