//! The gate's questions, put to the client's person through MCP
//! elicitation.
//!
//! The router asks an [`Approver`] on a blocking worker, holding the call;
//! the elicitation is a request to the client, answered asynchronously.
//! [`ElicitApprover`] bridges the two by blocking that worker on the
//! runtime it was made on. The question carries the same preview a chat
//! shows (`goat_session::preview`): a diff against the file as it is, or
//! the command. Only an explicit accept allows the call, once; a decline,
//! a cancel, an error, a malformed answer, silence past [`APPROVAL_WAIT`]
//! or the client cancelling the call it asked for is a denial. Nothing is remembered as a rule: a
//! remembered approval is the person's to make, with `goat permissions`.

use std::collections::BTreeMap;
use std::time::Duration;

use goat_router::{Approval, ApprovalRequest, Approver};
use goat_session::preview::{Extent, preview};
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::{Peer, RoleServer};
use tokio::runtime::Handle;

/// How long a question waits for the client's person before it counts as
/// a denial: long enough to read a diff and decide, short enough that a
/// client that never answers does not hold the call (and every call
/// behind it) for good.
pub const APPROVAL_WAIT: Duration = Duration::from_secs(10 * 60);

/// Asks the client's person, through elicitation.
pub(crate) struct ElicitApprover {
    peer: Peer<RoleServer>,
    runtime: Handle,
    /// The call's interrupt: the client cancelled the call (or went away),
    /// so its question is not waited for (ADR-0087).
    interrupt: Option<goat_command::Interrupt>,
}

impl ElicitApprover {
    /// Asks through `peer`, waiting on `runtime` (the server's).
    pub(crate) fn new(peer: Peer<RoleServer>, runtime: Handle) -> Self {
        Self {
            peer,
            runtime,
            interrupt: None,
        }
    }
}

/// The question as the client shows it: the gate's one line, then what
/// would change (lines already escaped by the preview).
pub(crate) fn question(request: &ApprovalRequest<'_>) -> String {
    let mut message = format!("GOAT: {}", request.prompt);
    for line in preview(request, Extent::Short) {
        message.push('\n');
        message.push_str(&line);
    }
    message.push_str("\nAccept runs this call once; decline refuses it.");
    message
}

impl Approver for ElicitApprover {
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(request),
            // Nothing to fill in: the answer is the action itself.
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        let interrupt = self.interrupt.clone().unwrap_or_default();
        let peer = &self.peer;
        let asked = self.runtime.block_on(async {
            tokio::select! {
                asked = peer.create_elicitation_with_timeout(params, Some(APPROVAL_WAIT)) => {
                    Some(asked)
                }
                () = goat_router::interrupt_fired(&interrupt) => None,
            }
        });
        match asked {
            Some(Ok(answer)) if answer.action == ElicitationAction::Accept => Approval::Once,
            Some(Ok(_) | Err(_)) | None => Approval::Deny,
        }
    }

    fn who(&self) -> &str {
        "the MCP client's person, asked through elicitation,"
    }

    /// Another program answers: a hook's ask is not put to it.
    fn is_the_person(&self) -> bool {
        false
    }

    fn interrupted_by(&mut self, interrupt: &goat_command::Interrupt) {
        self.interrupt = Some(interrupt.clone());
    }
}
