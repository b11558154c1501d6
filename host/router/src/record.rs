//! A call routed and recorded: the one step the Shepherd's calls and
//! [`DirectCalls`](crate::DirectCalls) both take, so a call is stored the
//! same way whoever made it.

use std::sync::{Arc, Mutex, PoisonError};

use goat_engine::{CancellationToken, ToolCall};
use goat_sandbox::SandboxError;
use goat_store::{CallOutcome, Store, StoreError};

use crate::router::AppToolRouter;

/// Why a call could not be routed and recorded: a host failure that ends
/// the turn (a refusal or a tool's failure is the call's outcome, not this).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The store failed; the record cannot be trusted to go on.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A host failure running a tool (the workspace went away).
    #[error("{0}")]
    Sandbox(#[from] SandboxError),
    /// A blocking step panicked or was cancelled.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Runs a blocking store step off the async threads: the Shepherd's and
/// [`DirectCalls`](crate::DirectCalls)' one way to write the record.
pub async fn store_step<T: Send + 'static>(
    store: &Arc<Mutex<Store>>,
    f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, RecordError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || {
        f(&mut store.lock().unwrap_or_else(PoisonError::into_inner))
    })
    .await
    .map_err(|e| RecordError::Internal(e.to_string()))?
    .map_err(RecordError::Store)
}

/// Takes the call stored as `row` down [`AppToolRouter::route`], the one
/// road (schema, gate, sandbox): marks it started before, points the
/// router's journal at it (a command's change set is written against it
/// before it lands) and stores its outcome, checkpoint included, after.
/// The Shepherd's calls and [`DirectCalls`](crate::DirectCalls) both come
/// through here, so a call is recorded the same way whoever made it.
pub async fn route_recorded(
    store: &Arc<Mutex<Store>>,
    router: &Arc<Mutex<AppToolRouter>>,
    row: i64,
    call: &ToolCall,
    cancel: Option<&CancellationToken>,
) -> Result<CallOutcome, RecordError> {
    store_step(store, move |s| s.start_call(row)).await?;
    let router = router.clone();
    let owned = call.clone();
    // The person's Ctrl-C reaches a running command or MCP call through
    // this (ADR-0087); the call then ends, recorded as cancelled.
    let interrupt = goat_command::Interrupt::new();
    let for_call = interrupt.clone();
    let routing = tokio::task::spawn_blocking(move || {
        let mut router = router.lock().unwrap_or_else(PoisonError::into_inner);
        router.begin_call(row, for_call);
        router.route(&owned)
    });
    let mut routing = std::pin::pin!(routing);
    let joined = match cancel {
        None => routing.await,
        Some(cancel) => tokio::select! {
            joined = &mut routing => joined,
            () = cancel.cancelled() => {
                interrupt.fire();
                routing.await
            }
        },
    };
    let routed = joined.map_err(|e| RecordError::Internal(e.to_string()))??;
    let outcome = routed.clone();
    store_step(store, move |s| s.finish_call(row, &outcome)).await?;
    Ok(routed)
}
