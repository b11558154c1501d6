//! The gate's questions as `session/request_permission`.
//!
//! A write or command that no rule decides reaches the router's
//! [`Approver`]; here that is the editor. The options are the ones GOAT
//! offers at a terminal: allow once, allow for this session, always allow
//! (a persisted rule), reject. Session and always are offered only when the
//! router can save them as rules for exactly these paths
//! ([`ApprovalRequest::can_remember`]). A deny rule never reaches this
//! point: the gate denies before asking.
//!
//! # Security
//!
//! Only an option GOAT offered allows anything. A cancelled request, an
//! error, a closed connection, an unknown `optionId`, or the turn being
//! cancelled while the question waits: each is [`Approval::Deny`].

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use goat_engine::CancellationToken;
use goat_router::{Approval, ApprovalRequest, Approver};

use crate::updates::Calls;

/// The `optionId`s GOAT offers. Stable: a client may remember them.
pub const ALLOW_ONCE: &str = "allow-once";
/// Allow, and the same for the rest of the session (a session rule).
pub const ALLOW_SESSION: &str = "allow-session";
/// Allow, and always in this workspace (a persisted rule).
pub const ALLOW_ALWAYS: &str = "allow-always";
/// Do not run it.
pub const REJECT: &str = "reject";

/// The options for a question; session and always only when they can be
/// saved as rules.
pub fn options(can_remember: bool) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if can_remember {
        options.push(PermissionOption::new(
            ALLOW_SESSION,
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ));
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            "Always allow (saved as a rule for this workspace)",
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The approval a client's answer gives. `None` (no answer: an error, the
/// connection closed, the turn cancelled) and anything not offered deny.
pub fn approval_of(response: Option<&RequestPermissionResponse>, can_remember: bool) -> Approval {
    let Some(response) = response else {
        return Approval::Deny;
    };
    let chosen = match &response.outcome {
        RequestPermissionOutcome::Selected(selected) => &*selected.option_id.0,
        // A cancelled question, and any outcome a later protocol adds.
        _ => return Approval::Deny,
    };
    match chosen {
        ALLOW_ONCE => Approval::Once,
        ALLOW_SESSION if can_remember => Approval::Session,
        ALLOW_ALWAYS if can_remember => Approval::Always,
        _ => Approval::Deny,
    }
}

/// The running turn's cancellation, shared by the session and its
/// approver: a question waiting when the turn is cancelled is a denial.
pub type TurnCancel = Arc<Mutex<Option<CancellationToken>>>;

/// The router's approver for one ACP session.
pub struct EditorApprover {
    /// To the client.
    pub cx: ConnectionTo<Client>,
    /// The session, as the client knows it (set once it is open).
    pub session_id: Arc<OnceLock<String>>,
    /// The call being asked about (its `toolCallId`).
    pub calls: Arc<Mutex<Calls>>,
    /// The running turn's token.
    pub cancel: TurnCancel,
    /// The runtime the connection runs on; the router asks from a blocking
    /// worker, which waits here for the answer.
    pub runtime: tokio::runtime::Handle,
}

impl Approver for EditorApprover {
    fn who(&self) -> &str {
        "the person in the editor"
    }

    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval {
        let call_id = self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .current_id();
        let fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::Pending)
            .title(request.prompt.to_owned());
        let question = RequestPermissionRequest::new(
            self.session_id.get().cloned().unwrap_or_default(),
            ToolCallUpdate::new(call_id, fields),
            options(request.can_remember),
        );
        let token = self
            .cancel
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_default();
        let cx = self.cx.clone();
        let response = self.runtime.block_on(async move {
            tokio::select! {
                answer = cx.send_request(question).block_task() => answer.ok(),
                () = token.cancelled() => None,
            }
        });
        approval_of(response.as_ref(), request.can_remember)
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    use super::*;

    fn selected(id: &str) -> RequestPermissionResponse {
        RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new(id.to_owned()),
        ))
    }

    #[test]
    fn only_an_offered_option_allows() {
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        let table: [(Option<RequestPermissionResponse>, bool, Approval); 11] = [
            (Some(selected(ALLOW_ONCE)), true, Approval::Once),
            (Some(selected(ALLOW_SESSION)), true, Approval::Session),
            (Some(selected(ALLOW_ALWAYS)), true, Approval::Always),
            (Some(selected(REJECT)), true, Approval::Deny),
            (Some(selected("allow")), true, Approval::Deny),
            (Some(selected("")), true, Approval::Deny),
            (Some(cancelled), true, Approval::Deny),
            (None, true, Approval::Deny),
            // Not offered when nothing can be remembered.
            (Some(selected(ALLOW_SESSION)), false, Approval::Deny),
            (Some(selected(ALLOW_ALWAYS)), false, Approval::Deny),
            (Some(selected(ALLOW_ONCE)), false, Approval::Once),
        ];
        for (response, remember, expected) in table {
            assert_eq!(
                approval_of(response.as_ref(), remember),
                expected,
                "{response:?} remember={remember}"
            );
        }
    }

    #[test]
    fn the_options_are_the_terminals() {
        let ids = |o: Vec<PermissionOption>| -> Vec<String> {
            o.into_iter().map(|o| o.option_id.0.to_string()).collect()
        };
        assert_eq!(
            ids(options(true)),
            [ALLOW_ONCE, ALLOW_SESSION, ALLOW_ALWAYS, REJECT]
        );
        assert_eq!(ids(options(false)), [ALLOW_ONCE, REJECT]);
    }
}
