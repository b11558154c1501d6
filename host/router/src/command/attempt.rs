//! Landing an attempt's layer (issue 42, ADR-0099): the layer's change set
//! settled as a command's is (inspected against the rules a command's
//! writes are held to, journaled, landed whole or not at all), recorded as
//! a call no model made, so `goat undo` takes it back.

use std::time::Instant;

use goat_command::Pending;
use goat_gate::{Access, GateRequest, WritePolicy};
use goat_store::{CallDecision, CallOutcome, CallStatus, Refusal, RefusedBy};
use serde_json::Value;

use super::BoundaryRules;
use crate::router::{AppToolRouter, Routed};

/// The tool name an attempt's landing is recorded under.
pub const LAND_ATTEMPT: &str = "land_attempt";

impl AppToolRouter {
    /// Lands `pending` (an attempt's layer) in the workspace, held to the
    /// rules in force for a command's writes: a path they keep from being
    /// written refuses the whole set, and nothing lands.
    pub fn land_attempt(&mut self, pending: Pending, label: &str, args: &Value) -> Routed {
        let started = Instant::now();
        let config = self.config().clone();
        let boundary = match self.gate_boundary(&GateRequest {
            session_id: &config.session_id,
            workspace: config.workspace.to_str(),
            tool: "run_command",
            access: Access::Write,
            paths: &["."],
            interactive: config.interactive,
            writes: WritePolicy::Default,
            now: goat_gate::now(),
        }) {
            Ok(boundary) => boundary,
            Err(why) => {
                pending.discard();
                let reason = format!(
                    "{label} did not land: the permission rules could not be read ({why}); the \
                     workspace is as it was"
                );
                return crate::router::denied(RefusedBy::Rule, CallDecision::Deny, reason);
            }
        };
        let settled = self.settle(pending, label, args, &BoundaryRules(boundary));
        let landed = !settled.refused;
        let mut result = if landed {
            format!("{label} landed in the workspace.")
        } else if settled.half_landed {
            format!(
                "{label} failed part-way, and its steps could not all be taken back: some \
                 paths hold what it left (goat sessions show {} lists which).",
                config.session_id
            )
        } else {
            format!("{label} did not land; the workspace is as it was.")
        };
        result.push_str(&settled.note);
        CallOutcome {
            status: if landed {
                CallStatus::Ok
            } else if settled.half_landed {
                CallStatus::Error
            } else {
                CallStatus::Denied
            },
            result,
            error_kind: if landed {
                None
            } else if settled.half_landed {
                Some(goat_store::CallErrorKind::Io)
            } else {
                Some(goat_store::CallErrorKind::Denied)
            },
            decision: Some(CallDecision::Allow),
            decision_reason: None,
            duration: started.elapsed(),
            exit_code: None,
            changes: settled.changes,
            changes_stored: settled.stored,
            refusals: if landed {
                Vec::new()
            } else if settled.refusals.is_empty() {
                vec![Refusal::new(
                    RefusedBy::ChangeSet,
                    None,
                    format!("{label} did not land"),
                )]
            } else {
                settled.refusals
            },
            hooks: Vec::new(),
        }
    }
}
