//! Driving a session's turns, and saying what happens in the protocol.
//!
//! [`Events`] numbers every event and hands it to the front end's sink, in
//! order, from whichever thread it comes (the turn's, or the router's
//! while it asks a person). [`Driver`] runs a turn through the Shepherd,
//! turns the Shepherd's [`TurnEvent`]s into protocol events, keeps what the
//! turn's end reports (denials, files changed, usage), and decides the
//! one [`Outcome`]. It also holds the run's [`Budget`]: past the wall time
//! or the tokens, the turn is cancelled and the outcome says why.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use goat_engine::CancellationToken;
use goat_router::{Approval, ApprovalMode, ApprovalRequest, Approver, Routed, ToolKind};
use goat_shepherd::{TurnError, TurnEvent, TurnSummary};
use goat_store::{CompactReason, RefusedBy};
use serde_json::Value;

use crate::assemble::Opened;
use crate::protocol::{
    self, Access, AgentsFile, ApprovalAnswer, ApprovalRequested, BudgetInfo, CallStatus,
    CompactionReason, Decision, Denial, Event, EventKind, Mode, Outcome, RefusalSource, Refused,
    SessionStarted, ToolCallCompleted, ToolOffered, ToolSource, TurnEnded, Usage, WarningCode,
};
use crate::text;

/// Where the events go, numbered. Shared by the driver and the approver
/// it wraps.
pub struct Events {
    inner: Mutex<Inner>,
}

struct Inner {
    seq: u64,
    /// Whether deltas are numbered (written by the front end) or only
    /// rendered.
    number_deltas: bool,
    session_id: Option<String>,
    turn: Option<u64>,
    approvals: u32,
    sink: Box<dyn FnMut(&Event) + Send>,
}

impl Events {
    /// Events to `sink`, numbered from 0 without gaps.
    ///
    /// `message.delta` and `reasoning.delta` reach the sink either way (a
    /// terminal renders the answer from them); with `number_deltas` false
    /// they take no number of their own (they carry the next event's), so
    /// a writer that leaves them out still writes numbers without gaps.
    pub fn new(sink: impl FnMut(&Event) + Send + 'static, number_deltas: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                seq: 0,
                number_deltas,
                session_id: None,
                turn: None,
                approvals: 0,
                sink: Box::new(sink),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends one event, with the next number, the session and the turn.
    pub fn emit(&self, kind: EventKind) {
        let mut inner = self.lock();
        let numbered = inner.number_deltas
            || !matches!(
                kind,
                EventKind::MessageDelta { .. } | EventKind::ReasoningDelta { .. }
            );
        let event = Event {
            seq: inner.seq,
            session_id: inner.session_id.clone(),
            turn: inner.turn,
            attempt: None,
            kind,
        };
        if numbered {
            inner.seq += 1;
        }
        (inner.sink)(&event);
    }

    /// An `error` event: a host failure outside a turn.
    pub fn error(&self, message: String) {
        self.ended(message, Outcome::HostError);
    }

    /// An `error` event ending the run outside a turn with `outcome` (a
    /// host failure, or a signal before the turn began: `cancelled`).
    pub fn ended(&self, message: String, outcome: Outcome) {
        self.emit(EventKind::Error {
            message,
            outcome,
            exit_code: outcome.exit_code(false),
        });
    }

    /// Events from now on are about this session.
    pub fn set_session(&self, id: &str) {
        self.lock().session_id = Some(id.to_owned());
    }

    fn set_turn(&self, turn: Option<u64>) {
        self.lock().turn = turn;
    }

    /// `approver`, saying each question (`approval.requested`) and its
    /// answer (`approval.resolved`) as events.
    pub fn approver(self: &Arc<Self>, approver: Box<dyn Approver>) -> Box<dyn Approver> {
        Box::new(Said {
            events: self.clone(),
            inner: approver,
        })
    }
}

/// An approver whose questions and answers are events.
struct Said {
    events: Arc<Events>,
    inner: Box<dyn Approver>,
}

impl Approver for Said {
    fn who(&self) -> &str {
        self.inner.who()
    }

    fn is_the_person(&self) -> bool {
        self.inner.is_the_person()
    }

    fn interrupted_by(&mut self, interrupt: &goat_command::Interrupt) {
        self.inner.interrupted_by(interrupt);
    }

    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval {
        let approval = {
            let mut inner = self.events.lock();
            inner.approvals += 1;
            inner.approvals
        };
        let mut answers = vec![
            ApprovalAnswer::Once,
            ApprovalAnswer::Session,
            ApprovalAnswer::Always,
        ];
        if !request.directories.is_empty() {
            answers.push(ApprovalAnswer::Directory);
        }
        answers.extend([ApprovalAnswer::Deny, ApprovalAnswer::DenyWith]);
        self.events
            .emit(EventKind::ApprovalRequested(ApprovalRequested {
                approval,
                tool: request.tool.to_owned(),
                question: request.prompt.to_owned(),
                paths: request.paths.to_vec(),
                arguments: request.arguments.clone(),
                details: request.details.to_vec(),
                preview: crate::preview::preview(request, crate::preview::Extent::Short),
                answers,
            }));
        let answer = self.inner.approve(request);
        let (said, note) = match &answer {
            Approval::Once => (ApprovalAnswer::Once, None),
            Approval::Session => (ApprovalAnswer::Session, None),
            Approval::Always => (ApprovalAnswer::Always, None),
            Approval::Directory => (ApprovalAnswer::Directory, None),
            Approval::Deny => (ApprovalAnswer::Deny, None),
            Approval::DenyWith(note) => (ApprovalAnswer::DenyWith, Some(note.clone())),
        };
        self.events.emit(EventKind::ApprovalResolved {
            approval,
            answer: said,
            note,
        });
        answer
    }
}

/// Limits on a whole run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Budget {
    /// From the driver's start.
    pub max_wall: Option<Duration>,
    /// Prompt and completion tokens over every turn the driver runs.
    pub max_total_tokens: Option<u64>,
}

/// How a turn ended.
pub struct TurnReport {
    /// The one outcome.
    pub outcome: Outcome,
    /// What `turn.completed` or `turn.failed` said.
    pub ended: TurnEnded,
    /// The Shepherd's own result.
    pub result: Result<TurnSummary, TurnError>,
}

/// Runs a session's turns and says what happens.
pub struct Driver {
    /// The session.
    pub opened: Opened,
    events: Arc<Events>,
    budget: Budget,
    started: Instant,
    /// Tokens spent by earlier turns of this driver.
    spent: AtomicU64,
}

impl Driver {
    /// A driver for `opened`, saying what happens to `events`.
    pub fn new(opened: Opened, events: Arc<Events>, budget: Budget) -> Self {
        events.set_session(&opened.session_id);
        Self {
            opened,
            events,
            budget,
            started: Instant::now(),
            spent: AtomicU64::new(0),
        }
    }

    /// The events.
    pub fn events(&self) -> &Arc<Events> {
        &self.events
    }

    /// Says `session.started`: what the session runs with. Asks the engine
    /// its context window first, unless it is configured (a failure to ask
    /// leaves it `null`; the turn asks again).
    pub async fn start(&self) {
        let shepherd = &self.opened.shepherd;
        shepherd.discover_window().await;
        let tools = shepherd
            .offered_tools()
            .into_iter()
            .map(|t| ToolOffered {
                access: match (&t.kind, t.writes) {
                    (ToolKind::Command, _) => Access::Command,
                    (_, true) => Access::Write,
                    (_, false) => Access::Read,
                },
                source: tool_source(&t.kind),
                name: t.name,
            })
            .collect();
        let agents_md = self
            .opened
            .instruction_files()
            .iter()
            .map(|f| AgentsFile {
                path: f.path.display().to_string(),
                bytes: f.bytes,
                used: u64::try_from(f.used).unwrap_or(u64::MAX),
            })
            .collect();
        self.events.emit(EventKind::SessionStarted(SessionStarted {
            schema_version: protocol::SCHEMA_VERSION.to_owned(),
            goat_version: env!("CARGO_PKG_VERSION").to_owned(),
            resumed: self.opened.resumed,
            workspace: self.opened.workspace.display().to_string(),
            engine: self.opened.engine_url.clone(),
            model: self.opened.model.clone(),
            window: shepherd.context_status().window,
            mode: match self.opened.mode.get() {
                ApprovalMode::Ask => Mode::Ask,
                ApprovalMode::AcceptEdits => Mode::AcceptEdits,
                ApprovalMode::ReadOnly => Mode::ReadOnly,
            },
            tools,
            agents_md,
            budget: BudgetInfo {
                max_rounds: u64::try_from(self.opened.max_rounds).unwrap_or(u64::MAX),
                max_wall_secs: self.budget.max_wall.map(|d| d.as_secs()),
                max_total_tokens: self.budget.max_total_tokens,
            },
        }));
    }

    /// Runs one turn for `prompt`; `cancel` is the person's Ctrl-C. Says
    /// every event of it, ending with `turn.completed` or `turn.failed`.
    pub async fn turn(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
        allow_denials: bool,
    ) -> TurnReport {
        let shepherd = &self.opened.shepherd;
        let number = self
            .opened
            .turn_count()
            .ok()
            .and_then(|n| u64::try_from(n).ok())
            .map_or(1, |n| n + 1);
        self.events.set_turn(Some(number));
        let started = Instant::now();
        let inner = cancel.child_token();
        let over_budget = AtomicBool::new(false);
        let spent_before = self.spent.load(Ordering::Relaxed);
        let mut track = Track::new(&self.events, shepherd.offered_tools());
        // A prompt its `user_prompt_submit` hooks have not let through is
        // not said yet: a hook that withholds it may be keeping a secret
        // out of the output and the logs too.
        if shepherd.screens_prompts() {
            track.unsaid_prompt = Some(prompt.to_owned());
        } else {
            self.events.emit(EventKind::TurnStarted {
                prompt: prompt.to_owned(),
            });
        }
        let result = {
            let mut on_event = |event: TurnEvent| {
                if let (TurnEvent::RoundStarted { round }, Some(max)) =
                    (&event, self.budget.max_total_tokens)
                {
                    let stats = shepherd.last_turn_stats();
                    let spent = spent_before + stats.prompt_tokens + stats.completion_tokens;
                    if *round > 1 && spent >= max {
                        over_budget.store(true, Ordering::Relaxed);
                        inner.cancel();
                    }
                }
                track.event(event);
            };
            let turn = shepherd.run_turn(prompt, &inner, &mut on_event);
            match self.budget.max_wall {
                None => turn.await,
                Some(wall) => {
                    let deadline = self.started + wall;
                    let mut turn = std::pin::pin!(turn);
                    tokio::select! {
                        result = &mut turn => result,
                        () = tokio::time::sleep_until(deadline.into()) => {
                            over_budget.store(true, Ordering::Relaxed);
                            inner.cancel();
                            turn.await
                        }
                    }
                }
            }
        };
        // Ended before its hooks answered: the prompt was never let through.
        track.say_prompt(false);
        track.flush_text();
        let stats = match &result {
            Ok(summary) => summary.stats,
            Err(_) => shepherd.last_turn_stats(),
        };
        self.spent.fetch_add(
            stats.prompt_tokens + stats.completion_tokens,
            Ordering::Relaxed,
        );
        let over_budget = over_budget.load(Ordering::Relaxed) && !cancel.is_cancelled();
        let outcome = outcome_of(&result, &track.denials, over_budget);
        let ended = TurnEnded {
            outcome,
            exit_code: outcome.exit_code(allow_denials),
            answer: result.as_ref().ok().map(|s| s.answer.clone()),
            error: match &result {
                Ok(_) => None,
                Err(TurnError::Cancelled) if over_budget => Some(self.budget_words()),
                Err(e) => Some(e.to_string()),
            },
            usage: Usage {
                prompt_tokens: stats.prompt_tokens,
                cached_tokens: stats.cached_tokens,
                completion_tokens: stats.completion_tokens,
            },
            denials: std::mem::take(&mut track.denials),
            files_changed: std::mem::take(&mut track.files_changed),
            rounds: match &result {
                Ok(summary) => u64::try_from(summary.rounds).unwrap_or(u64::MAX),
                Err(_) => u64::from(track.round),
            },
            duration_ms: millis(started.elapsed()),
        };
        self.events.emit(if outcome.completed() {
            EventKind::TurnCompleted(ended.clone())
        } else {
            EventKind::TurnFailed(ended.clone())
        });
        self.events.set_turn(None);
        TurnReport {
            outcome,
            ended,
            result,
        }
    }

    /// What a budget cancellation says.
    fn budget_words(&self) -> String {
        let mut limits = Vec::new();
        if let Some(wall) = self.budget.max_wall {
            limits.push(format!("--max-wall-secs {}", wall.as_secs()));
        }
        if let Some(tokens) = self.budget.max_total_tokens {
            limits.push(format!("--max-total-tokens {tokens}"));
        }
        format!(
            "the run reached its budget ({}) and the turn was stopped; what was done so far \
             is recorded",
            limits.join(", ")
        )
    }
}

/// Where a tool of `kind` comes from, as the protocol says it.
pub fn tool_source(kind: &ToolKind) -> ToolSource {
    match kind {
        ToolKind::Builtin => ToolSource::Builtin,
        ToolKind::Plugin => ToolSource::Plugin,
        ToolKind::Command => ToolSource::Command,
        ToolKind::Mcp { .. } => ToolSource::Mcp,
    }
}

/// A refusal's source as the protocol says it (an exhaustive match: a new
/// source cannot reach a front end unnamed).
pub fn refusal_source(by: RefusedBy) -> RefusalSource {
    match by {
        RefusedBy::Rule => RefusalSource::Rule,
        RefusedBy::Path => RefusalSource::Path,
        RefusedBy::NeedsApproval => RefusalSource::NeedsApproval,
        RefusedBy::Person => RefusalSource::Person,
        RefusedBy::Mode => RefusalSource::Mode,
        RefusedBy::Fence => RefusalSource::Fence,
        RefusedBy::Protected => RefusalSource::Protected,
        RefusedBy::ChangeSet => RefusalSource::ChangeSet,
        RefusedBy::Egress => RefusalSource::Egress,
        RefusedBy::Suspended => RefusalSource::Suspended,
        RefusedBy::Limit => RefusalSource::Limit,
        RefusedBy::Hook => RefusalSource::Hook,
    }
}

/// A call's refusals as the protocol says them.
pub fn refused(routed: &Routed) -> Vec<Refused> {
    routed
        .refusals
        .iter()
        .map(|r| Refused {
            source: refusal_source(r.by),
            target: r.target.clone(),
            reason: r.reason.clone(),
        })
        .collect()
}

/// The outcome of a turn's result.
pub fn outcome_of(
    result: &Result<TurnSummary, TurnError>,
    denials: &[Denial],
    over_budget: bool,
) -> Outcome {
    match result {
        Ok(_) if denials.iter().any(|d| d.needs_approval) => Outcome::NeedsApproval,
        Ok(_) if !denials.is_empty() => Outcome::CompletedWithDenials,
        Ok(_) => Outcome::Completed,
        Err(TurnError::Cancelled) if over_budget => Outcome::BudgetExhausted,
        Err(TurnError::Cancelled) => Outcome::Cancelled,
        Err(TurnError::Engine(_) | TurnError::Compaction(_)) => Outcome::EngineFailed,
        Err(TurnError::MarkupAgain { .. } | TurnError::MarkupNoRoom { .. }) => {
            Outcome::MarkupNotRecovered
        }
        Err(
            TurnError::RequestTooLarge { .. }
            | TurnError::ContextTooSmall { .. }
            | TurnError::ContextOverflowAgain { .. },
        ) => Outcome::ContextExhausted,
        Err(TurnError::RoundCap(_)) => Outcome::RoundCap,
        Err(_) => Outcome::HostError,
    }
}

/// A hook's run as the protocol says it.
fn hook_run(h: &goat_store::HookRan) -> protocol::HookRun {
    protocol::HookRun {
        hook: h.hook.clone(),
        event: h.event.clone(),
        verdict: h.verdict.clone(),
        reason: h.reason.clone(),
        duration_ms: h.duration_ms,
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One turn's events as the protocol says them, and what its end reports.
struct Track<'a> {
    events: &'a Events,
    tools: Vec<goat_router::OfferedTool>,
    round: u32,
    call: u32,
    content: String,
    reasoning: String,
    /// The call in progress: its arguments (calls run one at a time).
    arguments: Option<String>,
    denials: Vec<Denial>,
    files_changed: Vec<String>,
    /// The prompt, until its `user_prompt_submit` hooks answer.
    unsaid_prompt: Option<String>,
}

impl<'a> Track<'a> {
    /// `turn.started` for a prompt held until its hooks answered: with the
    /// prompt if they let it through, else with none.
    fn say_prompt(&mut self, let_through: bool) {
        if let Some(prompt) = self.unsaid_prompt.take() {
            self.emit(EventKind::TurnStarted {
                prompt: if let_through { prompt } else { String::new() },
            });
        }
    }

    fn new(events: &'a Events, tools: Vec<goat_router::OfferedTool>) -> Self {
        Self {
            events,
            tools,
            round: 0,
            call: 0,
            content: String::new(),
            reasoning: String::new(),
            arguments: None,
            denials: Vec::new(),
            files_changed: Vec::new(),
            unsaid_prompt: None,
        }
    }

    fn emit(&self, kind: EventKind) {
        self.events.emit(kind);
    }

    /// The round's text so far, whole: said once, when the round's text
    /// is over (a call, a recovery, the next round, the turn's end).
    fn flush_text(&mut self) {
        let round = self.round;
        let reasoning = std::mem::take(&mut self.reasoning);
        if !reasoning.is_empty() {
            self.emit(EventKind::ReasoningCompleted {
                round,
                text: reasoning,
            });
        }
        let content = std::mem::take(&mut self.content);
        if !content.is_empty() {
            self.emit(EventKind::MessageCompleted {
                round,
                text: content,
            });
        }
    }

    fn event(&mut self, event: TurnEvent) {
        let round = self.round;
        match event {
            TurnEvent::RoundStarted { round } => {
                self.flush_text();
                self.round = u32::try_from(round).unwrap_or(u32::MAX);
                self.emit(EventKind::RoundStarted { round: self.round });
            }
            TurnEvent::EngineLoading { waited } => self.emit(EventKind::EngineLoading {
                round,
                waited_ms: millis(waited),
            }),
            TurnEvent::Content(text) => {
                self.content.push_str(&text);
                self.emit(EventKind::MessageDelta { round, text });
            }
            TurnEvent::Reasoning(text) => {
                self.reasoning.push_str(&text);
                self.emit(EventKind::ReasoningDelta { round, text });
            }
            TurnEvent::CallStarted { tool, arguments } => {
                self.flush_text();
                self.call += 1;
                self.arguments = Some(arguments.clone());
                self.emit(EventKind::ToolCallStarted {
                    round,
                    call: self.call,
                    tool,
                    arguments,
                });
            }
            TurnEvent::TurnHooks {
                event,
                runs,
                objection,
                went_on,
            } => {
                if event == "user_prompt_submit" {
                    self.say_prompt(objection.is_none());
                }
                self.flush_text();
                let said = objection.as_ref().map(|o| o.said(event));
                if let (Some(o), Some(said), false) = (&objection, &said, went_on) {
                    self.denials.push(Denial {
                        call: 0,
                        tool: String::new(),
                        targets: Vec::new(),
                        reason: said.clone(),
                        needs_approval: false,
                        source: RefusalSource::Hook,
                        refused: vec![Refused {
                            source: RefusalSource::Hook,
                            target: Some(o.hook.clone()),
                            reason: o.reason.clone(),
                        }],
                        event: Some(event.to_owned()),
                    });
                }
                self.emit(EventKind::HooksRan {
                    event: event.to_owned(),
                    hooks: runs.iter().map(hook_run).collect(),
                    objection: said,
                    went_on,
                });
            }
            TurnEvent::CallFinished { tool, routed } => {
                let arguments = self.arguments.take().unwrap_or_default();
                let completed = self.completed(tool, &arguments, &routed);
                self.emit(EventKind::ToolCallCompleted(completed));
            }
            TurnEvent::Compacted {
                turns,
                rounds,
                reason,
            } => self.emit(EventKind::Compaction {
                turns: u64::try_from(turns).unwrap_or(u64::MAX),
                rounds: u64::try_from(rounds).unwrap_or(u64::MAX),
                reason: match reason {
                    CompactReason::Window => CompactionReason::Window,
                    CompactReason::Overflow => CompactionReason::Overflow,
                    CompactReason::Asked => CompactionReason::Asked,
                },
            }),
            TurnEvent::ProjectInstructionsCut { kept, whole } => self.emit(EventKind::Warning {
                code: WarningCode::ProjectInstructionsCut,
                message: format!(
                    "project instructions cut to {kept} of {whole} bytes to fit the context \
                     window (they take at most a quarter of it); the rest is not sent"
                ),
            }),
            TurnEvent::WindowNotSaid { assumed } => self.emit(EventKind::Warning {
                code: WarningCode::WindowNotSaid,
                message: text::window_not_said(assumed),
            }),
            TurnEvent::ToolsNotShown(why) => self.emit(EventKind::Warning {
                code: WarningCode::ToolsNotShown,
                message: text::tools_not_shown(why),
            }),
            TurnEvent::Recovery { tool, in_reasoning } => {
                self.flush_text();
                self.emit(EventKind::Recovery {
                    round,
                    tool,
                    in_reasoning,
                });
            }
        }
    }

    /// `tool_call.completed` for a finished call; a denial and the files
    /// changed are kept for the turn's end.
    fn completed(&mut self, tool: String, arguments: &str, routed: &Routed) -> ToolCallCompleted {
        let status = CallStatus::from(routed.status);
        let mut files: Vec<String> = Vec::new();
        for change in &routed.changes {
            if !files.contains(&change.path) {
                files.push(change.path.clone());
            }
            if !self.files_changed.contains(&change.path) {
                self.files_changed.push(change.path.clone());
            }
        }
        // The turn's denials are its calls' refusals, from every source:
        // the gate, the fence, the mode, the person, a change set, the
        // proxy, a suspended tool, a limit. Never read out of the text.
        let refused = refused(routed);
        if let Some(first) = refused.first() {
            self.denials.push(Denial {
                call: self.call,
                tool: tool.clone(),
                targets: self.targets(&tool, arguments),
                reason: if status == CallStatus::Denied {
                    routed.result.clone()
                } else {
                    first.reason.clone()
                },
                needs_approval: routed
                    .refusals
                    .iter()
                    .any(|r| r.by == RefusedBy::NeedsApproval),
                source: first.source,
                refused: refused.clone(),
                event: None,
            });
        }
        ToolCallCompleted {
            round: self.round,
            call: self.call,
            tool,
            status,
            decision: routed.decision.map(Decision::from),
            rule: routed.decision_reason.clone(),
            error_kind: routed.error_kind.map(|k| k.as_str().to_owned()),
            result_excerpt: routed
                .result
                .chars()
                .take(protocol::RESULT_EXCERPT_CHARS)
                .collect(),
            result_bytes: u64::try_from(routed.result.len()).unwrap_or(u64::MAX),
            exit_code: routed.exit_code,
            files_changed: files,
            refused,
            hooks: routed.hooks.iter().map(hook_run).collect(),
            duration_ms: millis(routed.duration),
        }
    }

    /// The paths a call names (its tool's path fields), or its command
    /// line.
    fn targets(&self, tool: &str, arguments: &str) -> Vec<String> {
        let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
            return Vec::new();
        };
        let Some(offered) = self.tools.iter().find(|t| t.name == tool) else {
            return Vec::new();
        };
        let fields: Vec<&str> = if offered.is_command() {
            vec!["command"]
        } else {
            offered.path_fields.iter().map(String::as_str).collect()
        };
        fields
            .into_iter()
            .filter_map(|f| args.get(f).and_then(Value::as_str).map(str::to_owned))
            .collect()
    }
}
