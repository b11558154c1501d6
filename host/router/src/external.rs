//! Tools GOAT does not run itself: an MCP server's (ADR-0086).
//!
//! The router knows them only through [`ExternalTools`]: which exist, what
//! is offered in a request, and one call. Everything else takes the same
//! road as GOAT's own tools: the arguments checked against the tool's
//! schema, the mode, the permission gate (a rule names the tool; with no
//! rule the person is asked, or, with no one to ask, the call is denied),
//! then the call, held to the gate's boundary. Nothing a server says
//! about its tools (read-only hints, descriptions) sways a decision.

use std::time::Instant;

use goat_command::{ChangeSet, WorkspaceRules};
use goat_engine::{ToolCall, ToolSchema};
use goat_store::{CallDecision, CallErrorKind, CallStatus, RefusedBy};
use serde_json::Value;

use crate::command::{BoundaryRules, file_change};
use crate::mode::{ApprovalMode, READ_ONLY_REASON};
use crate::router::{
    Allowed, AppToolRouter, ApprovalRequest, Routed, denied, denied_because, failed, unasked,
};
use crate::schema;
use goat_gate::{self as gate, Decision, GateRequest, WritePolicy};

/// One tool an outside server offers, under the name the model calls.
#[derive(Clone, Debug)]
pub struct ExternalTool {
    /// `SERVER__TOOL`.
    pub name: String,
    /// The server's name.
    pub server: String,
    /// What the model reads (as pinned, escaped).
    pub description: String,
    /// The JSON Schema of its arguments (as pinned).
    pub parameters: Value,
    /// Whether its server may write the workspace (`--writes`).
    pub writes: bool,
    /// Whether its server has the network.
    pub network: bool,
}

/// How an outside call went.
#[derive(Debug)]
pub struct ExternalOutcome {
    /// Whether it succeeded.
    pub status: CallStatus,
    /// Why not.
    pub error_kind: Option<CallErrorKind>,
    /// What the model reads: escaped and capped by the implementation.
    pub text: String,
    /// What a writable server changed in the workspace during the call.
    pub changes: Option<ChangeSet>,
    /// What GOAT's proxy decided for the server during the call.
    pub egress: Vec<goat_store::EgressRecord>,
    /// What refused the call at the server's end (a suspended tool); the
    /// proxy's refusals are read from [`egress`](Self::egress).
    pub refusals: Vec<goat_store::Refusal>,
}

/// What the router needs from a set of outside servers.
pub trait ExternalTools: Send + Sync {
    /// Every tool that may be called (pinned and not suspended).
    fn tools(&self) -> Vec<ExternalTool>;
    /// What a request offers: each tool, or (over the context share) the
    /// search and call tools that stand for them.
    fn schemas(&self) -> Vec<ToolSchema>;
    /// The session's context window is `tokens`: decides, once, whether
    /// the tools are offered one by one or on demand.
    fn fit_window(&self, tokens: u64) {
        let _ = tokens;
    }
    /// One line per server for a person (`/status`): its tools, what their
    /// definitions cost, and how they are offered.
    fn status(&self) -> Vec<String> {
        Vec::new()
    }
    /// The names [`schemas`](Self::schemas) offers.
    fn offered_names(&self) -> Vec<String> {
        self.schemas().into_iter().map(|s| s.name).collect()
    }
    /// A call to a tool that stands for others: the search tool's answer
    /// (`Ok`, nothing is called), or the tool and arguments a call tool
    /// names (`Err`); `None` for any other name.
    fn indirect(&self, name: &str, args: &Value) -> Option<Result<String, (String, Value)>>;
    /// Calls `tool` (a name from [`tools`](Self::tools)) with `args`
    /// (valid against its schema), with the permission `rules` applied to
    /// the workspace where its server starts. When `interrupt` fires (the
    /// person's Ctrl-C) the call stops waiting and says so
    /// ([`CallErrorKind::Cancelled`]).
    fn call(
        &self,
        tool: &str,
        args: &Value,
        rules: &dyn WorkspaceRules,
        interrupt: &goat_command::Interrupt,
    ) -> ExternalOutcome;
}

impl AppToolRouter {
    /// Whether `name` is for the outside tools.
    pub(crate) fn is_external(&self, name: &str) -> bool {
        self.external().is_some_and(|ext| {
            ext.offered_names().iter().any(|n| n == name)
                || ext.tools().iter().any(|t| t.name == name)
        })
    }

    /// The outside road: search, or arguments, mode, gate, person, call.
    pub(crate) fn route_external(&mut self, call: &ToolCall) -> Routed {
        let Some(ext) = self.external() else {
            return failed(
                CallErrorKind::UnknownTool,
                format!("unknown tool '{}'", call.name),
            );
        };
        let args = match call.arguments.as_ref() {
            Ok(args) => args.clone(),
            Err(e) => {
                return failed(
                    CallErrorKind::InvalidArguments,
                    format!("invalid arguments for {}: {e}", call.name),
                );
            }
        };
        let (name, args) = match ext.indirect(&call.name, &args) {
            Some(Ok(found)) => {
                return Routed {
                    decision: Some(CallDecision::Allow),
                    decision_reason: Some(
                        "searching the pinned tool definitions reaches no server".to_owned(),
                    ),
                    ..crate::router::succeeded(found)
                };
            }
            Some(Err(named)) => named,
            None => (call.name.clone(), args),
        };
        let tools = ext.tools();
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            return failed(
                CallErrorKind::UnknownTool,
                format!(
                    "unknown tool '{}'; the MCP tools available are: {}",
                    goat_gate::quoted(&name),
                    tools
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        };
        if let Err(why) = schema::validate(&tool.parameters, &args) {
            return failed(
                CallErrorKind::InvalidArguments,
                format!("invalid arguments for {name}: {why}"),
            );
        }
        if self.mode() == ApprovalMode::ReadOnly && tool.writes {
            return denied(
                RefusedBy::Mode,
                CallDecision::Deny,
                READ_ONLY_REASON.to_owned(),
            );
        }
        let request = GateRequest {
            session_id: &self.config().session_id,
            workspace: self.config().workspace.to_str(),
            tool: &tool.name,
            // A tool-level decision: no path of the call is the gate's to
            // judge, and `--allow-writes` is not an answer for a server.
            access: gate::Access::Write,
            paths: &[],
            interactive: self.config().interactive,
            writes: WritePolicy::Default,
            now: gate::now(),
        };
        let (evaluation, boundary) = self.decide(&request);
        // Only a rule that names the tool allows it: a rule for every tool
        // was written for GOAT's own, whose reach GOAT knows.
        let named = |grants: &[gate::Grant]| {
            grants.iter().any(|g| {
                matches!(&g.by, gate::GrantedBy::Rule(rule) if rule.tool.as_deref() == Some(tool.name.as_str()))
            })
        };
        let granted = match &evaluation.decision {
            Decision::Allow { grants } if named(grants) => {
                (CallDecision::Allow, evaluation.reason())
            }
            Decision::Allow { .. } if self.config().interactive == gate::Interactive::No => {
                return unasked(format!(
                    "denied: calling {} needs approval and no one is at a terminal to give it; \
                     a rule for all tools does not cover an MCP server's; the user can allow it \
                     with `goat permissions allow {} . --write`",
                    tool.name, tool.name
                ));
            }
            Decision::Allow { .. } => match self.ask_external(tool, &args) {
                Ok(granted) => granted,
                Err(routed) => return routed,
            },
            // No rule, and no one to ask: the way to allow it is a rule
            // naming the tool (`--allow-writes` is not one for a server).
            Decision::Deny(gate::Denial::NeedsApproval { .. }) => {
                return unasked(format!(
                    "denied: calling {} needs approval and no one is at a terminal to give it; \
                     the user can allow it with `goat permissions allow {} . --write`",
                    tool.name, tool.name
                ));
            }
            Decision::Deny(why) => return denied_because(why, evaluation.reason()),
            Decision::Ask { .. } => match self.ask_external(tool, &args) {
                Ok(granted) => granted,
                Err(routed) => return routed,
            },
        };
        let Some(boundary) = boundary else {
            return denied(
                RefusedBy::Rule,
                CallDecision::Deny,
                "denied: the permission rules could not be applied to the workspace".to_owned(),
            );
        };
        let rules = BoundaryRules(boundary);
        let started = Instant::now();
        let outcome = ext.call(&tool.name, &args, &rules, self.interrupt());
        let (decision, reason) = granted;
        self.record_egress(&outcome.egress);
        let mut refusals = outcome.refusals;
        refusals.extend(crate::egress::refusals(&outcome.egress));
        let mut text = outcome.text;
        let changes = match outcome.changes {
            Some(set) => {
                if set.unkept > 0 {
                    text.push_str(&format!(
                        "\n[goat: {} changed or removed files were not in the snapshot taken \
                         before the call (at most 64 MiB is kept); goat undo cannot bring them \
                         back]\n",
                        set.unkept
                    ));
                }
                set.changes.iter().filter_map(file_change).collect()
            }
            None => Vec::new(),
        };
        Routed {
            status: outcome.status,
            result: text,
            error_kind: outcome.error_kind,
            decision: Some(decision),
            decision_reason: Some(reason),
            duration: started.elapsed(),
            exit_code: None,
            changes,
            changes_stored: goat_store::ChangesStored::WithOutcome,
            refusals,
        }
    }

    /// Puts an outside call to the person; "session" and "always" are
    /// saved as allow rules for exactly this tool.
    fn ask_external(
        &mut self,
        tool: &ExternalTool,
        args: &Value,
    ) -> Result<(CallDecision, String), Routed> {
        let reach = match (tool.writes, tool.network) {
            (false, false) => "it reads the workspace, with no network",
            (true, false) => "it may write the workspace, with no network",
            (false, true) => "it reads the workspace and has the network",
            (true, true) => "it may write the workspace and has the network",
        };
        let question = format!(
            "{} (MCP server '{}') wants to run; {reach}; allow it?",
            tool.name, tool.server
        );
        let can_remember = self.config().workspace.to_str().is_some();
        let workspace = self.config().workspace.clone();
        let Some(answer) = self.approve_with(&ApprovalRequest {
            tool: &tool.name,
            prompt: &question,
            paths: &[],
            arguments: args,
            workspace: &workspace,
            can_remember,
            directories: &[],
            details: &[],
        }) else {
            return Err(unasked(format!(
                "denied: {question}; no one is there to approve it (allow it with \
                 `goat permissions allow {} . --write`)",
                tool.name
            )));
        };
        let allowed = Allowed::from_answer(answer, &self.approver_who(), &question, can_remember)?;
        let Some(scope) = allowed.scope(&self.config().session_id) else {
            return Ok(allowed.granted(None));
        };
        let saved = self.remember(&tool.name, gate::Access::Write, scope, &[".".to_owned()]);
        Ok(allowed.granted(Some(saved)))
    }
}
