//! The Shepherd: one turn of rounds, with ADR-0065 bounded recovery.
//!
//! A round sends the history and the tool schemas, streams the answer,
//! runs its structured calls in order through the [`AppToolRouter`] and
//! stores every step. The turn ends when an answer has no calls, or at the
//! round cap, which is an explicit error. An answer with no structured
//! calls that writes one as text is handled by [`recovery`]: stored as
//! failed, kept out of later prompts, and asked about once.
//!
//! The loop ([`Shepherd::rounds`]) is a short sequence of named steps;
//! each step's doc comment says what it guarantees.

mod caps;
mod events;
mod hooks;
mod recovery;
mod window;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use goat_engine::{
    CancellationToken, ChatRequest, Delta, EngineClient, EngineError, Message, Response,
    TemplateTools, ToolCall, ToolSchema,
};
use goat_store::{
    CallOutcome, CompactReason, NewCall, RoundFailure, RoundOk, Store, StoreError, TurnStatus,
};

pub use caps::{MAX_CALLS_PER_RESPONSE, MAX_REQUEST_BYTES, too_many_calls_result};
pub use events::{ToolsNotShown, TurnError, TurnEvent, TurnStats, TurnSummary};
pub use hooks::MAX_STOP_CONTINUATIONS;
pub use window::Compacted;

use crate::context::{Answered, ContextState, WindowChoice};
pub use recovery::RECOVERY_INSTRUCTION;
use recovery::{Markup, ParseFailure, RecoveryBudget};

use goat_router::{AppToolRouter, route_recorded, store_step};

/// Rounds one turn may take when the caller sets no cap: enough for a
/// real edit-test-fix sequence, few enough that a model stuck in a loop is
/// stopped within minutes.
pub const DEFAULT_MAX_ROUNDS: usize = 24;

/// More bytes of tool schema than any tokenizer puts in one token: JSON
/// and English prose run 2.5 to 4.5 bytes a token, so a prompt of fewer
/// tokens than the schemas' bytes over this cannot have held them. Wide,
/// so the warning is never said of an engine that did show them.
const SCHEMA_BYTES_PER_TOKEN_MAX: f64 = 8.0;

/// Drives turns for one session.
pub struct Shepherd {
    engine: Arc<EngineClient>,
    router: Arc<Mutex<AppToolRouter>>,
    store: Arc<Mutex<Store>>,
    session_id: String,
    system_prompt: String,
    /// The repository's part of the system prompt, sized to the window.
    project: Option<Arc<dyn crate::context::ProjectPrompt>>,
    /// Whether [`TurnEvent::ProjectInstructionsCut`] was sent.
    told_project_cut: std::sync::atomic::AtomicBool,
    max_rounds: usize,
    /// ADR-0067: complete unwrapped Qwen3-Coder blocks count as unexecuted
    /// markup.
    unwrapped_calls: bool,
    /// The window, the estimate's calibration, the session's tokens
    /// (ADR-0073). Never held across an await.
    context: Mutex<ContextState>,
    /// The latest turn's stats so far ([`Shepherd::last_turn_stats`]).
    last_stats: Mutex<TurnStats>,
    /// Whether the engine's template was asked about tools, and whether
    /// [`TurnEvent::ToolsNotShown`] was said: each once per session.
    tools_checked: AtomicBool,
    tools_warned: AtomicBool,
    /// Whether [`TurnEvent::WindowNotSaid`] was said.
    told_window_not_said: AtomicBool,
}

impl Shepherd {
    /// A Shepherd for `session_id`. The router's session must be the same.
    pub fn new(
        engine: EngineClient,
        router: AppToolRouter,
        store: Arc<Mutex<Store>>,
        session_id: String,
        system_prompt: String,
        max_rounds: usize,
    ) -> Self {
        let mut router = router;
        router.set_journal(store.clone());
        Self {
            engine: Arc::new(engine),
            router: Arc::new(Mutex::new(router)),
            store,
            session_id,
            system_prompt,
            project: None,
            told_project_cut: std::sync::atomic::AtomicBool::new(false),
            max_rounds: max_rounds.max(1),
            unwrapped_calls: false,
            context: Mutex::new(ContextState::new(WindowChoice::default())),
            last_stats: Mutex::new(TurnStats::default()),
            tools_checked: AtomicBool::new(false),
            tools_warned: AtomicBool::new(false),
            told_window_not_said: AtomicBool::new(false),
        }
    }

    /// Whether a complete unwrapped Qwen3-Coder block (`<function=NAME>`,
    /// a `<parameter=…>`, `</function>`, no `<tool_call>`) naming an
    /// offered tool counts as unexecuted markup (ADR-0067; setting
    /// `markup.unwrapped_calls`). Off by default, as ADR-0065 decided.
    #[must_use]
    pub fn with_unwrapped_calls(mut self, on: bool) -> Self {
        self.unwrapped_calls = on;
        self
    }

    /// The repository's part of the system prompt (its project
    /// instructions): after GOAT's own, in at most
    /// [`PROJECT_PROMPT_SHARE`](crate::context::PROJECT_PROMPT_SHARE) of
    /// the window's budget, asked again each round as the window is
    /// learned.
    #[must_use]
    pub fn with_project_prompt(mut self, project: Arc<dyn crate::context::ProjectPrompt>) -> Self {
        self.project = Some(project);
        self
    }

    /// The system prompt for a budget of `budget` tokens: GOAT's own, then
    /// the repository's part sized to its share. The same bytes for as
    /// long as the budget stays.
    pub(super) fn system_prompt(&self, budget: u64) -> String {
        format!(
            "{}{}",
            self.system_prompt,
            self.project_section(budget).text
        )
    }

    /// The repository's part for that budget; empty without one.
    fn project_section(&self, budget: u64) -> crate::context::ProjectSection {
        self.project
            .as_ref()
            .map(|p| p.within(crate::context::project_bytes(budget)))
            .unwrap_or_default()
    }

    /// Says, once, that the project instructions were cut to their share
    /// of the window.
    pub(super) fn tell_project_cut(
        &self,
        budget: u64,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) {
        use std::sync::atomic::Ordering;
        let section = self.project_section(budget);
        if section.kept < section.whole && !self.told_project_cut.swap(true, Ordering::Relaxed) {
            on_event(TurnEvent::ProjectInstructionsCut {
                kept: section.kept,
                whole: section.whole,
            });
        }
    }

    /// Runs a blocking store step off the async threads.
    async fn store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, TurnError> {
        Ok(store_step(&self.store, f).await?)
    }

    /// Runs one turn for `prompt`. The turn's status is stored whatever
    /// happens (completed, failed with its error, cancelled).
    pub async fn run_turn(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<TurnSummary, TurnError> {
        // A prompt its hooks have not let through is not kept: a hook
        // that withholds one may be keeping a secret out of the record.
        let screened = self.screens_prompts();
        let (session, text) = (self.session_id.clone(), prompt.to_owned());
        let mut turn_id = self
            .store(move |s| match screened {
                true => s.start_screened_turn(&session),
                false => s.start_turn(&session, &text),
            })
            .await?;
        let result = match screened {
            true => self.screen_prompt(turn_id, prompt, cancel, on_event).await,
            false => Ok(true),
        };
        let result = match result {
            Ok(true) => {
                self.discover_window().await;
                self.check_template_tools(on_event).await;
                self.rounds(&mut turn_id, cancel, on_event).await
            }
            // Withheld: the model never saw it, and no round was asked.
            Ok(false) => Ok(TurnSummary {
                turn_id,
                rounds: 0,
                recovery_used: false,
                answer: String::new(),
                stats: TurnStats::default(),
            }),
            Err(e) => Err(e),
        };
        // Said once the engine has answered a whole turn: an engine that
        // refuses every request (a wrong URL) has worse to say first.
        if result.is_ok() {
            self.tell_window_not_said(on_event);
        }
        let (status, error) = match &result {
            Ok(_) => (TurnStatus::Completed, None),
            Err(TurnError::Cancelled) => (
                TurnStatus::Cancelled,
                Some("cancelled by the user".to_owned()),
            ),
            Err(e) => (TurnStatus::Failed, Some(e.to_string())),
        };
        // Record how the turn ended even when it ended in a store failure;
        // if this write fails too, the first error is the one to report.
        let finished = self
            .store(move |s| s.finish_turn(turn_id, status, error.as_deref()))
            .await;
        let summary = result?;
        finished?;
        Ok(summary)
    }

    /// The turn loop: each round starts, streams, then either ends the
    /// turn, asks once for a structured call (ADR-0065) or runs the calls
    /// and goes on. Cancellation is checked before each round and after
    /// its calls; running out of rounds is [`TurnError::RoundCap`].
    async fn rounds(
        &self,
        turn_id: &mut i64,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<TurnSummary, TurnError> {
        let (schemas, names) = self.offered();
        let mut recovery = RecoveryBudget::default();
        let mut stats = TurnStats::default();
        self.publish_stats(stats);
        let compactions_before = self.state(|s| s.compactions);
        // The recovery instruction rides with the round it was taken for,
        // and with that round's one retry after a context overflow.
        let mut instruction = None;
        let mut overflow_retried = false;
        let mut round = 0;
        // How many times a stop hook sent the model back to work.
        let mut continuations = 0;
        while round < self.max_rounds {
            round += 1;
            if cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
            on_event(TurnEvent::RoundStarted { round });
            if instruction.is_none() {
                instruction = recovery.take_instruction();
            }
            let (round_id, sent, bytes) = self
                .start_round(*turn_id, &schemas, instruction.clone(), cancel, on_event)
                .await?;
            let response = match self
                .stream_response(round_id, &sent.request, cancel, on_event)
                .await
            {
                Ok(Streamed::Response(response)) => {
                    self.keep_answered(sent);
                    response
                }
                Ok(Streamed::ParseFailure {
                    error,
                    quoted,
                    content,
                }) => {
                    instruction = None;
                    let failed = ParseFailure {
                        round_id,
                        round,
                        error,
                        quoted,
                        content,
                    };
                    self.handle_parse_failure(failed, &names, &mut recovery, on_event)
                        .await?;
                    continue;
                }
                Err(TurnError::Engine(EngineError::Length { partial })) => {
                    self.check_prompt_size(&schemas, &partial, on_event);
                    self.note_usage(&partial, bytes, &mut stats);
                    self.publish_stats(stats);
                    return Err(TurnError::Engine(EngineError::Length { partial }));
                }
                Err(TurnError::Engine(EngineError::ContextOverflow {
                    message,
                    window,
                    prompt_tokens,
                })) => {
                    if overflow_retried {
                        return Err(TurnError::ContextOverflowAgain { message });
                    }
                    // Once per turn: believe what the engine said, compact
                    // every earlier turn, send the round again.
                    overflow_retried = true;
                    self.state(|s| s.learn_overflow(bytes, window, prompt_tokens));
                    let done = self
                        .compact_older(CompactReason::Overflow, Some(*turn_id), cancel)
                        .await?;
                    if done.summaries > 0 {
                        on_event(TurnEvent::Compacted {
                            turns: done.turns,
                            rounds: done.rounds,
                            reason: CompactReason::Overflow,
                        });
                    }
                    round -= 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            instruction = None;
            self.check_prompt_size(&schemas, &response, on_event);
            self.note_usage(&response, bytes, &mut stats);
            stats.compactions = self.state(|s| s.compactions) - compactions_before;
            self.publish_stats(stats);
            if response.tool_calls.is_empty() {
                let markup = self
                    .handle_markup(round_id, round, &response, &names, &mut recovery, on_event)
                    .await?;
                match markup {
                    Markup::Retry => continue,
                    Markup::Clean => {
                        let summary = self
                            .final_answer(
                                *turn_id,
                                round_id,
                                round,
                                recovery.used(),
                                response,
                                stats,
                            )
                            .await?;
                        let next = self
                            .stop_hooks(
                                (*turn_id, self.max_rounds - round),
                                &summary.answer,
                                &mut continuations,
                                cancel,
                                on_event,
                            )
                            .await?;
                        match next {
                            // A stop hook sent the model back to work: the
                            // turn goes on as a turn whose prompt is the
                            // hook's words, within the same round limit.
                            Some(next) => {
                                *turn_id = next;
                                continue;
                            }
                            None => return Ok(summary),
                        }
                    }
                }
            }
            self.run_calls(round_id, &response, cancel, on_event)
                .await?;
            if cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
        }
        Err(TurnError::RoundCap(self.max_rounds))
    }

    /// Asks the engine, once per session, whether its chat template shows
    /// the model the tools (llama-server `/props`), and says so when it
    /// does not. A failure to ask says nothing.
    async fn check_template_tools(&self, on_event: &mut (dyn FnMut(TurnEvent) + Send)) {
        if let Some(why) = self.check_tools_shown().await {
            on_event(TurnEvent::ToolsNotShown(why));
        }
    }

    /// Asks the engine now, once per session, whether its chat template
    /// shows the model the tools (with its window, in one `/props`
    /// request), for a front end to say so before the first turn (`goat
    /// chat` does, under its opening line). Returns the warning to show,
    /// at most once per session; a turn does not say it again.
    pub async fn check_tools_shown(&self) -> Option<ToolsNotShown> {
        if self.tools_checked.swap(true, Ordering::Relaxed) || self.offered().0.is_empty() {
            return None;
        }
        self.discover_window().await;
        let dropped = self.engine.template_tools().await == TemplateTools::Dropped;
        (dropped && !self.tools_warned.swap(true, Ordering::Relaxed))
            .then_some(ToolsNotShown::TemplateCaps)
    }

    /// The other sign: the engine counted fewer prompt tokens than the
    /// tool schemas alone can take (their bytes over the most bytes a
    /// token ever holds), so it cannot have shown them.
    fn check_prompt_size(
        &self,
        schemas: &[ToolSchema],
        response: &Response,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) {
        let Some(usage) = response.usage.filter(|u| u.prompt_tokens > 0) else {
            return;
        };
        if let Some(why) = prompt_without_tools(schemas, usage.prompt_tokens, usage.cached_tokens) {
            self.warn_tools_not_shown(why, on_event);
        }
    }

    fn warn_tools_not_shown(
        &self,
        why: ToolsNotShown,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) {
        if !self.tools_warned.swap(true, Ordering::Relaxed) {
            on_event(TurnEvent::ToolsNotShown(why));
        }
    }

    /// Counts a response's usage (a complete one, or what a `length`
    /// failure reported) in the session's counts, the calibration and the
    /// turn's stats.
    fn note_usage(&self, response: &Response, bytes: usize, stats: &mut TurnStats) {
        self.count_usage(response);
        if let Some(u) = response.usage.filter(|u| u.prompt_tokens > 0) {
            self.state(|s| s.calibrate(bytes, u.prompt_tokens));
            stats.prompt_tokens += u.prompt_tokens;
            stats.completion_tokens += u.completion_tokens;
            if let Some(cached) = u.cached_tokens {
                stats.cached_tokens = Some(stats.cached_tokens.unwrap_or(0) + cached);
            }
            stats.context_tokens = Some(u.prompt_tokens);
        }
        stats.first_token_after = response.first_token_after;
        stats.tokens_per_second = response.tokens_per_second();
        stats.window = self.state(|s| s.window().0);
    }

    /// Keeps the turn's stats so far where [`Shepherd::last_turn_stats`]
    /// reads them, for a turn that fails.
    fn publish_stats(&self, stats: TurnStats) {
        *self
            .last_stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = stats;
    }

    /// One line per MCP server (ADR-0086), for `/status`.
    pub fn mcp_status(&self) -> Vec<String> {
        self.router
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .external_status()
    }

    /// The tools on offer, as a front end describes them.
    pub fn offered_tools(&self) -> Vec<goat_router::OfferedTool> {
        self.router
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .offered()
    }

    /// Tokens and speed of the latest turn so far, whether it completed
    /// or not: a failed `goat run` prints them too (the rounds' tokens were
    /// spent either way).
    pub fn last_turn_stats(&self) -> TurnStats {
        *self
            .last_stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools offered for the whole turn: their schemas for the engine
    /// and their names for the markup detector, read once so every round
    /// offers the same set.
    fn offered(&self) -> (Vec<ToolSchema>, Vec<String>) {
        let window = self.state(|s| s.window().0);
        let router = self.router.lock().unwrap_or_else(PoisonError::into_inner);
        router.fit_external(window);
        (router.schemas(), router.names())
    }

    /// Builds the round's request and opens its row. The prompt is the
    /// system prompt (with the newest summary of older turns, if any),
    /// then the stored history after that summary (which leaves out
    /// failed responses), then `instruction` if the previous round was a
    /// recovery; fitted into the context window (ADR-0074, ADR-0083) and
    /// under the byte cap. Also returns the body's bytes, for calibration.
    async fn start_round(
        &self,
        turn_id: i64,
        schemas: &[ToolSchema],
        instruction: Option<Message>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<(i64, Answered, usize), TurnError> {
        let fitted = self
            .fitted_request(turn_id, schemas, instruction, cancel, on_event)
            .await?;
        let mut request = fitted.request;
        caps::fit_request(&mut request, &self.engine.config().model, MAX_REQUEST_BYTES)?;
        let round_id = self.store(move |s| s.start_round(turn_id)).await?;
        let sent = Answered {
            request,
            newest_round: fitted.newest_round,
            summary_id: fitted.summary_id,
        };
        Ok((round_id, sent, fitted.bytes))
    }

    /// Streams the answer, passing content and reasoning on as events.
    /// On an engine failure the round is stored as failed (cancelled, if
    /// the person cancelled) with the content streamed so far, and the
    /// turn stops: cancellation as [`TurnError::Cancelled`], anything else
    /// as [`TurnError::Engine`].
    async fn stream_response(
        &self,
        round_id: i64,
        request: &ChatRequest,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Streamed, TurnError> {
        let mut streamed = String::new();
        let response = self
            .engine
            .stream_chat(request, cancel, &mut |d| match d {
                Delta::Content(t) => {
                    streamed.push_str(t);
                    on_event(TurnEvent::Content(t.to_owned()));
                }
                Delta::Reasoning(t) => on_event(TurnEvent::Reasoning(t.to_owned())),
                Delta::EngineLoading { waited, .. } => {
                    on_event(TurnEvent::EngineLoading { waited });
                }
                Delta::ToolCallStarted { .. } => {}
            })
            .await;
        match response {
            Ok(r) => Ok(Streamed::Response(r)),
            // ADR-0079: the round is stored by the recovery rule.
            Err(EngineError::ToolCallParse { message, quoted }) => Ok(Streamed::ParseFailure {
                error: message,
                quoted,
                content: streamed,
            }),
            Err(e) => {
                let usage = match &e {
                    EngineError::Length { partial } => partial.usage,
                    _ => None,
                };
                let kind = if matches!(e, EngineError::Cancelled) {
                    RoundFailure::Cancelled
                } else {
                    RoundFailure::Engine
                };
                let (failure, content) = (e.to_string(), streamed);
                self.store(move |s| {
                    s.finish_round_failed(round_id, kind, &content, &failure)?;
                    match usage {
                        Some(u) => s.record_round_usage(
                            round_id,
                            u.prompt_tokens,
                            u.completion_tokens,
                            u.cached_tokens,
                        ),
                        None => Ok(()),
                    }
                })
                .await?;
                Err(if matches!(e, EngineError::Cancelled) {
                    TurnError::Cancelled
                } else {
                    e.into()
                })
            }
        }
    }

    /// Ends the turn with `response` as its answer: the round is stored as
    /// ok before the summary is returned.
    async fn final_answer(
        &self,
        turn_id: i64,
        round_id: i64,
        round: usize,
        recovery_used: bool,
        response: Response,
        stats: TurnStats,
    ) -> Result<TurnSummary, TurnError> {
        let ok = round_ok(&response);
        self.store(move |s| s.finish_round_ok(round_id, &ok).map(|_| ()))
            .await?;
        Ok(TurnSummary {
            turn_id,
            rounds: round,
            recovery_used,
            answer: response.content,
            stats,
        })
    }

    /// Stores the round as ok with its calls, then runs them one at a time,
    /// in order, through the router; calls past [`MAX_CALLS_PER_RESPONSE`]
    /// are answered "not run" and never reach it. Every call row gets an outcome: once
    /// the person cancels, the remaining calls are stored as not run and
    /// never reach the router. A store failure or a host failure running a
    /// tool stops the turn.
    async fn run_calls(
        &self,
        round_id: i64,
        response: &Response,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<(), TurnError> {
        let ok = round_ok(response);
        let rows = self
            .store(move |s| s.finish_round_ok(round_id, &ok))
            .await?;
        for (n, (call, row)) in response.tool_calls.iter().zip(rows).enumerate() {
            if n >= MAX_CALLS_PER_RESPONSE {
                // Said like any other call, so the limit's refusal reaches
                // the turn's outcome.
                on_event(TurnEvent::CallStarted {
                    tool: call.name.clone(),
                    arguments: call.raw_arguments.clone(),
                });
                let outcome = caps::too_many_calls_outcome();
                let routed = outcome.clone();
                self.store(move |s| s.finish_call(row, &outcome)).await?;
                on_event(TurnEvent::CallFinished {
                    tool: call.name.clone(),
                    routed,
                });
            } else if cancel.is_cancelled() {
                self.skip_call(row).await?;
            } else {
                self.run_call(row, call, cancel, on_event).await?;
            }
        }
        Ok(())
    }

    /// Stores a call reached after cancellation as an error that did not
    /// run; it is never started.
    async fn skip_call(&self, row: i64) -> Result<(), TurnError> {
        let outcome = CallOutcome {
            status: goat_store::CallStatus::Error,
            result: "cancelled by the user before this call ran; it did not run".to_owned(),
            error_kind: Some(goat_store::CallErrorKind::Cancelled),
            decision: None,
            decision_reason: None,
            duration: std::time::Duration::ZERO,
            exit_code: None,
            changes: Vec::new(),
            changes_stored: goat_store::ChangesStored::WithOutcome,
            refusals: Vec::new(),
            hooks: Vec::new(),
        };
        self.store(move |s| s.finish_call(row, &outcome)).await
    }

    /// Runs one structured call through [`AppToolRouter::route`], the one
    /// road every call takes (schema, gate, sandbox), marking it started
    /// before and storing its outcome after.
    async fn run_call(
        &self,
        row: i64,
        call: &ToolCall,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<(), TurnError> {
        on_event(TurnEvent::CallStarted {
            tool: call.name.clone(),
            arguments: call.raw_arguments.clone(),
        });
        let routed = route_recorded(&self.store, &self.router, row, call, Some(cancel)).await?;
        on_event(TurnEvent::CallFinished {
            tool: call.name.clone(),
            routed,
        });
        Ok(())
    }
}

/// [`ToolsNotShown::PromptSize`] when a prompt of `prompt_tokens` (as the
/// engine counted it), with the `cached_tokens` it says it served from its
/// cache, is too small to have held the tool `schemas`: fewer tokens than
/// their bytes over [`SCHEMA_BYTES_PER_TOKEN_MAX`].
///
/// The cached tokens are added: some engines and gateways leave them out
/// of the prompt count, and one that counts them twice only makes the
/// prompt look larger, so a warning is said only where no reading of the
/// counts could have held the tools (issue 38).
pub fn prompt_without_tools(
    schemas: &[ToolSchema],
    prompt_tokens: u64,
    cached_tokens: Option<u64>,
) -> Option<ToolsNotShown> {
    let bytes: usize = schemas
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    let tools_at_least = (bytes as f64 / SCHEMA_BYTES_PER_TOKEN_MAX) as u64;
    let at_most = prompt_tokens.saturating_add(cached_tokens.unwrap_or(0));
    (prompt_tokens > 0 && at_most < tools_at_least).then_some(ToolsNotShown::PromptSize {
        prompt_tokens,
        tools_at_least,
    })
}

/// What streaming a round gave.
enum Streamed {
    /// A complete response.
    Response(Response),
    /// The engine failed to parse the model's output as a call (ADR-0079),
    /// not yet stored: the recovery rule decides how.
    ParseFailure {
        /// The engine's message.
        error: String,
        /// The model's text it quoted.
        quoted: String,
        /// The content streamed before the failure.
        content: String,
    },
}

fn round_ok(r: &Response) -> RoundOk {
    RoundOk {
        content: r.content.clone(),
        reasoning: r.reasoning.clone(),
        finish_reason: r.finish_reason.as_ref().map(|f| f.as_str().to_owned()),
        prompt_tokens: r.usage.map(|u| u.prompt_tokens),
        completion_tokens: r.usage.map(|u| u.completion_tokens),
        cached_tokens: r.usage.and_then(|u| u.cached_tokens),
        calls: r
            .tool_calls
            .iter()
            .map(|c| NewCall {
                call_id: c.id.clone(),
                tool: c.name.clone(),
                arguments: c.raw_arguments.clone(),
            })
            .collect(),
    }
}
