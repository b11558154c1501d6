//! Calls with no engine: a program outside GOAT (an MCP client) names the
//! tool and its arguments itself, and GOAT runs them down the same road
//! as a model's calls.
//!
//! The key decision: a direct call is recorded as the Shepherd records a
//! model's, so nothing downstream learns a second shape. Each call is one
//! turn (its prompt says who called what), holding one round, holding the
//! one call; the call is routed and stored by the step the Shepherd's own
//! calls take ([`route_recorded`]): its decision and reason, its result,
//! its checkpoint. `goat sessions show`, `goat sessions diff` and `goat
//! undo` (which puts back the last turn with changes, here the last call)
//! read it as they read a chat.

use std::sync::{Arc, Mutex, PoisonError};

use goat_engine::{CancellationToken, ToolCall, ToolSchema};
use goat_store::{CallOutcome, NewCall, RoundOk, Store, TurnStatus};

use crate::record::{RecordError, route_recorded, store_step};
use crate::router::{AppToolRouter, OfferedTool};

/// Runs and records calls for one session with no engine in it.
pub struct DirectCalls {
    router: Arc<Mutex<AppToolRouter>>,
    store: Arc<Mutex<Store>>,
    session_id: String,
}

/// The `finish_reason` a direct call's round is stored with: what a model's
/// round that made calls says, so readers of the record need no new case.
const DIRECT_FINISH_REASON: &str = "tool_calls";

impl DirectCalls {
    /// Direct calls for `session_id`, routed by `router` (whose session
    /// must be the same) and recorded in `store`.
    pub fn new(router: AppToolRouter, store: Arc<Mutex<Store>>, session_id: String) -> Self {
        let mut router = router;
        router.set_journal(store.clone());
        Self {
            router: Arc::new(Mutex::new(router)),
            store,
            session_id,
        }
    }

    /// The tools on offer, as a front end describes them.
    pub fn offered(&self) -> Vec<OfferedTool> {
        self.router
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .offered()
    }

    /// The tools on offer with their argument schemas.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.router
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .schemas()
    }

    /// Runs `f` while no call is being routed: the router is held for all
    /// of it, as a call holds it from its arguments to its landing. For an
    /// undo, which must not interleave with a call's writes (a write
    /// landing between its checks and its own writes would be overwritten).
    pub fn while_no_call<R>(&self, f: impl FnOnce() -> R) -> R {
        let _router = self.router.lock().unwrap_or_else(PoisonError::into_inner);
        f()
    }

    /// The session the calls are recorded in.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Records `call` as a turn whose prompt is `said` (who asked for it),
    /// routes it (arguments, gate, sandbox or command containment) and
    /// stores its outcome. `Err` is a host failure (the store, the
    /// workspace): the turn is stored as failed with it, and the call row
    /// is left pending, as a model's would be, for the next open of the
    /// session to mark interrupted.
    pub async fn call(&self, said: &str, call: &ToolCall) -> Result<CallOutcome, RecordError> {
        self.call_until(said, call, None).await
    }

    /// [`call`](Self::call), stopped when `cancel` is cancelled (the
    /// client cancelled its request, or went away): a command or MCP call
    /// that is running is interrupted as a turn's is (ADR-0087) and the
    /// call is recorded as cancelled.
    pub async fn call_until(
        &self,
        said: &str,
        call: &ToolCall,
        cancel: Option<&CancellationToken>,
    ) -> Result<CallOutcome, RecordError> {
        let (session, prompt) = (self.session_id.clone(), said.to_owned());
        let turn_id = store_step(&self.store, move |s| s.start_turn(&session, &prompt)).await?;
        let routed = match self.round(turn_id, call).await {
            Ok(row) => route_recorded(&self.store, &self.router, row, call, cancel).await,
            Err(e) => Err(e),
        };
        self.end_turn(turn_id, routed).await
    }

    /// Lands an attempt's layer (`pending`, described by `args`) as a call
    /// no model made, recorded as [`call`](Self::call) records one: a turn
    /// whose prompt is `said`, one round, the one call, its changes
    /// journaled so `goat undo` takes them back.
    pub async fn land_attempt(
        &self,
        said: &str,
        args: &serde_json::Value,
        pending: goat_command::Pending,
    ) -> Result<CallOutcome, RecordError> {
        let (session, prompt) = (self.session_id.clone(), said.to_owned());
        let turn_id = store_step(&self.store, move |s| s.start_turn(&session, &prompt)).await?;
        let call = ToolCall {
            index: 0,
            id: "land-attempt".to_owned(),
            id_generated: true,
            name: crate::LAND_ATTEMPT.to_owned(),
            raw_arguments: args.to_string(),
            arguments: Ok(args.clone()),
        };
        let routed = match self.round(turn_id, &call).await {
            Ok(row) => {
                let router = self.router.clone();
                let (label, args) = (said.to_owned(), args.clone());
                let landing = async {
                    store_step(&self.store, move |s| s.start_call(row)).await?;
                    let outcome = tokio::task::spawn_blocking(move || {
                        let mut router = router.lock().unwrap_or_else(PoisonError::into_inner);
                        router.begin_call(row, goat_command::Interrupt::new());
                        router.land_attempt(pending, &label, &args)
                    })
                    .await
                    .map_err(|e| RecordError::Internal(e.to_string()))?;
                    let stored = outcome.clone();
                    store_step(&self.store, move |s| s.finish_call(row, &stored)).await?;
                    Ok(outcome)
                };
                landing.await
            }
            Err(e) => Err(e),
        };
        self.end_turn(turn_id, routed).await
    }

    /// Ends a direct call's turn as its call ended.
    async fn end_turn(
        &self,
        turn_id: i64,
        routed: Result<CallOutcome, RecordError>,
    ) -> Result<CallOutcome, RecordError> {
        let (status, error) = match &routed {
            Ok(outcome) if outcome.error_kind == Some(goat_store::CallErrorKind::Cancelled) => {
                (TurnStatus::Cancelled, None)
            }
            Ok(_) => (TurnStatus::Completed, None),
            Err(e) => (TurnStatus::Failed, Some(e.to_string())),
        };
        let finished = store_step(&self.store, move |s| {
            s.finish_turn(turn_id, status, error.as_deref())
        })
        .await;
        let routed = routed?;
        finished?;
        Ok(routed)
    }

    /// The turn's one round, stored with the call as a model's round with
    /// calls is; the call's row.
    async fn round(&self, turn_id: i64, call: &ToolCall) -> Result<i64, RecordError> {
        let round_id = store_step(&self.store, move |s| s.start_round(turn_id)).await?;
        let ok = RoundOk {
            content: String::new(),
            reasoning: String::new(),
            finish_reason: Some(DIRECT_FINISH_REASON.to_owned()),
            prompt_tokens: None,
            completion_tokens: None,
            cached_tokens: None,
            calls: vec![NewCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.raw_arguments.clone(),
            }],
        };
        let rows = store_step(&self.store, move |s| s.finish_round_ok(round_id, &ok)).await?;
        rows.first()
            .copied()
            .ok_or_else(|| RecordError::Internal("the round stored no call row".to_owned()))
    }
}
