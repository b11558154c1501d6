//! The Shepherd: one turn of rounds, with ADR-0065 bounded recovery.
//!
//! A round sends the history and the tool schemas, streams the answer,
//! runs its structured calls in order through the [`AppToolRouter`] and
//! stores every step. The turn ends when an answer has no calls, or at the
//! round cap, which is an explicit error. When an answer has no structured
//! calls but the detector finds unexecuted tool-call markup naming an
//! offered tool, and this turn has not used its one recovery, and the cap
//! leaves room: the response is stored as failed first (if that write
//! fails, the turn stops, no retry), it is kept out of every later prompt,
//! and the next round alone carries a host instruction saying no action
//! occurred and the model must use its structured tool-call format, with
//! earlier results kept and an instruction not to repeat them. A second
//! malformed answer ends the turn with an explicit error. Recovery changes
//! no engine setting and no permission.

use std::sync::{Arc, Mutex, PoisonError};

use goat_engine::{
    CancellationToken, ChatRequest, Delta, EngineClient, EngineError, Message, RequestToolCall,
    Response,
};
use goat_markup::Detector;
use goat_store::{
    CallOutcome, HistoryEntry, NewCall, Recovery, RoundOk, RoundStatus, Store, StoreError,
    TurnStatus,
};

use crate::router::{AppToolRouter, Routed};

/// Rounds one turn may take when the caller sets no cap: enough for a
/// real edit-test-fix sequence, few enough that a model stuck in a loop is
/// stopped within minutes.
pub const DEFAULT_MAX_ROUNDS: usize = 24;

/// The one-round host instruction after a malformed response (ADR-0065).
pub const RECOVERY_INSTRUCTION: &str = "[GOAT host] Your last response wrote a tool call as plain \
     text (tool-call markup in the message content), so no action occurred: nothing was run and \
     nothing changed. To use a tool you must use your complete structured tool-call format, not \
     text. The tool results above are real and complete; do not repeat actions that already \
     succeeded.";

/// What happens during a turn, for showing it live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnEvent {
    /// A round began.
    RoundStarted {
        /// 1-based.
        round: usize,
    },
    /// Answer text arrived.
    Content(String),
    /// Reasoning text arrived.
    Reasoning(String),
    /// A call is about to go through the router.
    CallStarted {
        /// The tool.
        tool: String,
        /// Its arguments, as sent.
        arguments: String,
    },
    /// A call finished.
    CallFinished {
        /// The tool.
        tool: String,
        /// How it went.
        routed: Routed,
    },
    /// The model wrote a tool call as text; it is asked once to use the
    /// structured format.
    Recovery {
        /// The offered tool the markup named.
        tool: String,
    },
}

/// Why a turn did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The engine failed.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// The store failed; the record cannot be trusted to go on.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A host failure running a tool (the workspace went away).
    #[error("{0}")]
    Sandbox(#[from] goat_sandbox::SandboxError),
    /// The model wrote tool-call markup as text again after the one
    /// recovery; nothing was executed.
    #[error(
        "the model wrote a tool call as text ({tool}) again after being asked to use the structured format; nothing was executed and the turn stopped. If this keeps happening, check the engine's tool-call template or parser (e.g. llama-server --jinja, vLLM --tool-call-parser)"
    )]
    MarkupAgain {
        /// The tool it named.
        tool: String,
    },
    /// Markup appeared when the round cap left no room for a recovery.
    #[error(
        "the model wrote a tool call as text ({tool}) in the last round the cap allows; nothing was executed"
    )]
    MarkupNoRoom {
        /// The tool it named.
        tool: String,
    },
    /// The round cap was reached.
    #[error("the turn reached its cap of {0} rounds without a final answer")]
    RoundCap(usize),
    /// The person cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
    /// A worker thread failed.
    #[error("internal error: {0}")]
    Internal(String),
}

/// How a turn went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnSummary {
    /// The turn's row id.
    pub turn_id: i64,
    /// Rounds taken, failed ones included.
    pub rounds: usize,
    /// Whether the one recovery was used.
    pub recovery_used: bool,
    /// The final answer.
    pub answer: String,
}

/// Drives turns for one session.
pub struct Shepherd {
    engine: Arc<EngineClient>,
    router: Arc<Mutex<AppToolRouter>>,
    store: Arc<Mutex<Store>>,
    session_id: String,
    system_prompt: String,
    max_rounds: usize,
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
        Self {
            engine: Arc::new(engine),
            router: Arc::new(Mutex::new(router)),
            store,
            session_id,
            system_prompt,
            max_rounds: max_rounds.max(1),
        }
    }

    /// Runs a blocking store step off the async threads.
    async fn store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, TurnError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            f(&mut store.lock().unwrap_or_else(PoisonError::into_inner))
        })
        .await
        .map_err(|e| TurnError::Internal(e.to_string()))?
        .map_err(TurnError::Store)
    }

    /// Runs one turn for `prompt`. The turn's status is stored whatever
    /// happens (completed, failed with its error, cancelled).
    pub async fn run_turn(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<TurnSummary, TurnError> {
        let (session, text) = (self.session_id.clone(), prompt.to_owned());
        let turn_id = self.store(move |s| s.start_turn(&session, &text)).await?;
        let result = self.rounds(turn_id, cancel, on_event).await;
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

    async fn rounds(
        &self,
        turn_id: i64,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<TurnSummary, TurnError> {
        let (offered_schemas, offered_names) = {
            let router = self.router.lock().unwrap_or_else(PoisonError::into_inner);
            (router.schemas(), router.names())
        };
        let mut recovery_used = false;
        let mut instruct = false;
        for round in 1..=self.max_rounds {
            if cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
            on_event(TurnEvent::RoundStarted { round });
            let session = self.session_id.clone();
            let history = self.store(move |s| s.history(&session)).await?;
            let mut messages = vec![Message::System {
                content: self.system_prompt.clone(),
            }];
            messages.extend(history.into_iter().map(to_message));
            if instruct {
                messages.push(Message::User {
                    content: RECOVERY_INSTRUCTION.to_owned(),
                });
            }
            instruct = false;
            let request = ChatRequest {
                messages,
                tools: offered_schemas.clone(),
            };

            let round_id = self.store(move |s| s.start_round(turn_id)).await?;
            let mut streamed = String::new();
            let response = self
                .engine
                .stream_chat(&request, cancel, &mut |d| match d {
                    Delta::Content(t) => {
                        streamed.push_str(t);
                        on_event(TurnEvent::Content(t.to_owned()));
                    }
                    Delta::Reasoning(t) => on_event(TurnEvent::Reasoning(t.to_owned())),
                    Delta::ToolCallStarted { .. } => {}
                })
                .await;
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    let status = if matches!(e, EngineError::Cancelled) {
                        RoundStatus::Cancelled
                    } else {
                        RoundStatus::Failed
                    };
                    let (failure, content) = (e.to_string(), streamed);
                    self.store(move |s| {
                        s.finish_round_failed(round_id, status, &content, &failure)
                    })
                    .await?;
                    return Err(if matches!(e, EngineError::Cancelled) {
                        TurnError::Cancelled
                    } else {
                        e.into()
                    });
                }
            };

            if response.tool_calls.is_empty() {
                let mut detector = Detector::new(&offered_names);
                detector.feed(response.content.as_bytes());
                let verdict = detector.finish();
                if verdict.unexecuted {
                    let tool = verdict.tool.clone().unwrap_or_default();
                    let recovery = Recovery {
                        tool: tool.clone(),
                        markers: verdict
                            .markers
                            .iter()
                            .map(|m| m.as_str().to_owned())
                            .collect(),
                        span: verdict.span,
                    };
                    let content = response.content.clone();
                    if recovery_used || round == self.max_rounds {
                        // Stored as failed too: it is not a usable answer.
                        let failure = format!(
                            "{} naming {} ({}); no recovery left, nothing was executed",
                            goat_store::MARKUP_FAILURE_PREFIX,
                            recovery.tool,
                            recovery.markers.join(" ")
                        );
                        self.store(move |s| {
                            s.finish_round_failed(round_id, RoundStatus::Failed, &content, &failure)
                        })
                        .await?;
                        return Err(if recovery_used {
                            TurnError::MarkupAgain { tool }
                        } else {
                            TurnError::MarkupNoRoom { tool }
                        });
                    }
                    // Persist first: if this fails, stop, no retry.
                    self.store(move |s| s.record_recovery(round_id, &content, &recovery))
                        .await?;
                    recovery_used = true;
                    instruct = true;
                    on_event(TurnEvent::Recovery { tool });
                    continue;
                }
                let ok = round_ok(&response);
                self.store(move |s| s.finish_round_ok(round_id, &ok).map(|_| ()))
                    .await?;
                return Ok(TurnSummary {
                    turn_id,
                    rounds: round,
                    recovery_used,
                    answer: response.content,
                });
            }

            let ok = round_ok(&response);
            let rows = self
                .store(move |s| s.finish_round_ok(round_id, &ok))
                .await?;
            for (call, row) in response.tool_calls.iter().zip(rows) {
                if cancel.is_cancelled() {
                    let outcome = CallOutcome {
                        status: goat_store::CallStatus::Error,
                        result: "cancelled by the user before this call ran; it did not run"
                            .to_owned(),
                        error_kind: Some("cancelled".to_owned()),
                        decision: None,
                        decision_reason: None,
                        duration: std::time::Duration::ZERO,
                    };
                    self.store(move |s| s.finish_call(row, &outcome)).await?;
                    continue;
                }
                on_event(TurnEvent::CallStarted {
                    tool: call.name.clone(),
                    arguments: call.raw_arguments.clone(),
                });
                self.store(move |s| s.start_call(row)).await?;
                let router = self.router.clone();
                let owned = call.clone();
                let routed = tokio::task::spawn_blocking(move || {
                    router
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .route(&owned)
                })
                .await
                .map_err(|e| TurnError::Internal(e.to_string()))??;
                let outcome = CallOutcome {
                    status: routed.status,
                    result: routed.result.clone(),
                    error_kind: routed.error_kind.clone(),
                    decision: routed.decision.clone(),
                    decision_reason: routed.decision_reason.clone(),
                    duration: routed.duration,
                };
                self.store(move |s| s.finish_call(row, &outcome)).await?;
                on_event(TurnEvent::CallFinished {
                    tool: call.name.clone(),
                    routed,
                });
            }
            if cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
        }
        Err(TurnError::RoundCap(self.max_rounds))
    }
}

fn round_ok(r: &Response) -> RoundOk {
    RoundOk {
        content: r.content.clone(),
        reasoning: r.reasoning.clone(),
        finish_reason: r.finish_reason.as_ref().map(|f| f.as_str().to_owned()),
        prompt_tokens: r.usage.map(|u| u.prompt_tokens),
        completion_tokens: r.usage.map(|u| u.completion_tokens),
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

fn to_message(entry: HistoryEntry) -> Message {
    match entry {
        HistoryEntry::User(content) => Message::User { content },
        HistoryEntry::Assistant { content, calls } => Message::Assistant {
            content: (!content.is_empty()).then_some(content),
            tool_calls: calls
                .into_iter()
                .map(|c| RequestToolCall {
                    id: c.call_id,
                    name: c.tool,
                    // Chat templates parse the arguments of earlier calls;
                    // one the model botched is sent back as `{}` (its result
                    // already says what was wrong).
                    arguments: goat_engine::parse_arguments(&c.arguments)
                        .unwrap_or_else(|_| serde_json::json!({})),
                })
                .collect(),
        },
        HistoryEntry::ToolResult { call_id, content } => Message::Tool {
            tool_call_id: call_id,
            content,
        },
    }
}
