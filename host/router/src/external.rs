//! Tools GOAT does not run itself: an MCP server's (ADR-0086).
//!
//! The router knows them only through [`ExternalTools`]: which exist, what
//! is offered in a request, and one call. Everything else takes the same
//! road as GOAT's own tools: the arguments checked against the tool's
//! schema, the mode, the permission gate (a rule names the tool; with no
//! rule the person is asked, or, with no one to ask, the call is denied),
//! then the call, held to the gate's boundary. Nothing a server says
//! about its tools (read-only hints, descriptions) sways a decision.

use std::sync::Arc;
use std::time::Instant;

use goat_command::{ChangeSet, WorkspaceRules};
use goat_engine::{ToolCall, ToolSchema};
use goat_store::{CallDecision, CallErrorKind, CallStatus};
use serde_json::Value;

use goat_gate::{self as gate, Boundary, Decision, Evaluation, GateRequest, WritePolicy};
use goat_sandbox::SandboxError;

use crate::command::{BoundaryRules, file_change};
use crate::router::{AppToolRouter, Checked, Question, Route, Routed, Verdict, failed, unasked};

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
}

/// The road's part for an outside (MCP) tool: a call tool standing for
/// others is resolved to the tool it names, only a rule naming the tool
/// allows it, a remembered yes saves such a rule, and the call goes to
/// its server held to the gate's boundary.
pub(crate) struct ExternalRoute(pub(crate) Arc<dyn ExternalTools>);

/// An outside call's tool (resolved behind a call tool) and arguments.
pub(crate) struct ExternalArgs {
    tool: ExternalTool,
    args: Value,
}

/// What a call needs when no one can give it and no rule names the tool.
fn needs_rule(tool: &ExternalTool, extra: &str) -> Routed {
    unasked(format!(
        "denied: calling {} needs approval and no one is at a terminal to give it;{extra} \
         the user can allow it with `goat permissions allow {} . --write`",
        tool.name, tool.name
    ))
}

impl Route for ExternalRoute {
    type Args<'c> = ExternalArgs;

    /// The search tool's answer ends the call here (nothing is called);
    /// a call tool's named tool and arguments are what the road checks.
    fn arguments(
        &self,
        _: &AppToolRouter,
        call: &ToolCall,
        raw: &Value,
    ) -> Result<ExternalArgs, Routed> {
        let (name, args) = match self.0.indirect(&call.name, raw) {
            Some(Ok(found)) => {
                return Err(Routed {
                    decision: Some(CallDecision::Allow),
                    decision_reason: Some(
                        "searching the pinned tool definitions reaches no server".to_owned(),
                    ),
                    ..crate::router::succeeded(found)
                });
            }
            Some(Err(named)) => named,
            None => (call.name.clone(), raw.clone()),
        };
        let tools = self.0.tools();
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            return Err(failed(
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
            ));
        };
        Ok(ExternalArgs {
            tool: tool.clone(),
            args,
        })
    }

    fn checked<'a>(&'a self, _: &'a ToolCall, args: &'a ExternalArgs) -> Checked<'a> {
        Checked {
            name: &args.tool.name,
            parameters: &args.tool.parameters,
            value: &args.args,
        }
    }

    fn writes(&self, args: &ExternalArgs) -> bool {
        args.tool.writes
    }

    fn decide(
        &self,
        router: &AppToolRouter,
        args: &ExternalArgs,
    ) -> (Evaluation, Option<Boundary>) {
        let config = router.config();
        router.decide(&GateRequest {
            session_id: &config.session_id,
            workspace: config.workspace.to_str(),
            tool: &args.tool.name,
            // A tool-level decision: no path of the call is the gate's to
            // judge, and `--allow-writes` is not an answer for a server.
            access: gate::Access::Write,
            paths: &[],
            interactive: config.interactive,
            writes: WritePolicy::Default,
            now: gate::now(),
        })
    }

    /// Only a rule that names the tool allows it: a rule for every tool
    /// was written for GOAT's own, whose reach GOAT knows. With no such
    /// rule the person is asked; with no one to ask, the way to allow it
    /// is a rule naming the tool (`--allow-writes` is not one for a
    /// server).
    fn narrow(
        &self,
        router: &AppToolRouter,
        evaluation: &Evaluation,
        args: &ExternalArgs,
    ) -> Option<Verdict> {
        let tool = &args.tool;
        let named = |grants: &[gate::Grant]| {
            grants.iter().any(|g| {
                matches!(&g.by, gate::GrantedBy::Rule(rule) if rule.tool.as_deref() == Some(tool.name.as_str()))
            })
        };
        match &evaluation.decision {
            Decision::Allow { grants } if named(grants) => None,
            Decision::Allow { .. } if router.config().interactive == gate::Interactive::No => {
                Some(Verdict::Refuse(needs_rule(
                    tool,
                    " a rule for all tools does not cover an MCP server's;",
                )))
            }
            Decision::Allow { .. } => Some(Verdict::Ask(Vec::new())),
            Decision::Deny(gate::Denial::NeedsApproval { .. }) => {
                Some(Verdict::Refuse(needs_rule(tool, "")))
            }
            Decision::Deny(_) => None,
            Decision::Ask { .. } => Some(Verdict::Ask(Vec::new())),
        }
    }

    /// "Session" and "always" are saved as allow rules for exactly this
    /// tool.
    fn question(
        &self,
        router: &AppToolRouter,
        _: &Evaluation,
        _: &[String],
        args: &ExternalArgs,
    ) -> Question {
        let tool = &args.tool;
        let reach = match (tool.writes, tool.network) {
            (false, false) => "it reads the workspace, with no network",
            (true, false) => "it may write the workspace, with no network",
            (false, true) => "it reads the workspace and has the network",
            (true, true) => "it may write the workspace and has the network",
        };
        Question {
            tool: tool.name.clone(),
            prompt: format!(
                "{} (MCP server '{}') wants to run; {reach}; allow it?",
                tool.name, tool.server
            ),
            paths: Vec::new(),
            arguments: args.args.clone(),
            remember: router
                .config()
                .workspace
                .to_str()
                .map(|_| vec![".".to_owned()]),
            access: gate::Access::Write,
            command: None,
            directories: Vec::new(),
            unasked_hint: format!(
                " (allow it with `goat permissions allow {} . --write`)",
                tool.name
            ),
        }
    }

    fn run(
        &self,
        router: &mut AppToolRouter,
        _: &ToolCall,
        args: &ExternalArgs,
        (decision, reason): (CallDecision, String),
        boundary: Boundary,
    ) -> Result<Routed, SandboxError> {
        let rules = BoundaryRules(boundary);
        let started = Instant::now();
        let outcome = self
            .0
            .call(&args.tool.name, &args.args, &rules, router.interrupt());
        router.record_egress(&outcome.egress);
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
        Ok(Routed {
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
            hooks: Vec::new(),
        })
    }
}
