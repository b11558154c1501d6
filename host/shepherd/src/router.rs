//! The AppToolRouter: the one road every tool call takes.
//!
//! Find the tool among those offered in this request, check the arguments
//! against its JSON Schema, ask the permission gate, run it in the sandbox
//! with the access the gate allowed. A call that fails any step gets a
//! result for the model saying which and why, and nothing runs. Calls the
//! ADR-0065 recovery brought about take this road too: there is no other.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goat_engine::ToolCall;
use goat_sandbox::{Access, Pen, Sandbox, SandboxError, Tool};
use serde_json::Value;

use crate::gate::{self, Decision, GateRequest, Interactive, WritePolicy};
use crate::schema;

/// What the host decided about one person-facing approval.
pub trait Approver: Send {
    /// Shown `prompt` (the tool, the resolved paths, what would change),
    /// returns whether the person allowed this one call.
    fn approve(&mut self, prompt: &str) -> bool;
}

/// How one call went, ready for the store and the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routed {
    /// Ok, Error or Denied.
    pub status: goat_store::CallStatus,
    /// The text the model is shown.
    pub result: String,
    /// Machine-readable failure kind.
    pub error_kind: Option<String>,
    /// The gate's decision, when it was asked.
    pub decision: Option<String>,
    /// Why it decided so.
    pub decision_reason: Option<String>,
    /// Time spent in the sandbox.
    pub duration: Duration,
}

impl Routed {
    fn error(kind: &str, result: String) -> Self {
        Self {
            status: goat_store::CallStatus::Error,
            result,
            error_kind: Some(kind.to_owned()),
            decision: None,
            decision_reason: None,
            duration: Duration::ZERO,
        }
    }
}

/// Where and how calls run.
#[derive(Clone, Debug)]
pub struct RouterConfig {
    /// The workspace (the Pen).
    pub workspace: PathBuf,
    /// The permission database.
    pub permissions_db: PathBuf,
    /// The session, for session-scoped rules.
    pub session_id: String,
    /// Whether a person is at a terminal to approve.
    pub interactive: Interactive,
    /// `--allow-writes` or not.
    pub writes: WritePolicy,
}

/// The router for one session.
pub struct AppToolRouter {
    sandbox: Arc<Sandbox>,
    tools: Vec<Tool>,
    config: RouterConfig,
    approver: Option<Box<dyn Approver>>,
}

impl AppToolRouter {
    /// A router offering `tools`, run in `sandbox`.
    pub fn new(sandbox: Arc<Sandbox>, tools: Vec<Tool>, config: RouterConfig) -> Self {
        Self {
            sandbox,
            tools,
            config,
            approver: None,
        }
    }

    /// Sets who answers the gate's questions.
    pub fn with_approver(mut self, approver: Box<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The tools offered, as the engine takes them.
    pub fn schemas(&self) -> Vec<goat_engine::ToolSchema> {
        self.tools
            .iter()
            .map(|t| goat_engine::ToolSchema {
                name: t.spec().name.clone(),
                description: t.spec().description.clone(),
                parameters: t.spec().parameters.clone(),
            })
            .collect()
    }

    /// The offered tool names.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// Takes one call down the road. `Err` is a host failure that ends the
    /// turn (the workspace cannot be opened); everything the model should
    /// hear about is an `Ok(Routed)`.
    pub fn route(&mut self, call: &ToolCall) -> Result<Routed, SandboxError> {
        let Some(tool) = self.tools.iter().find(|t| t.spec().name == call.name) else {
            return Ok(Routed::error(
                "unknown-tool",
                format!(
                    "unknown tool '{}'; the tools available are: {}",
                    call.name,
                    self.names().join(", ")
                ),
            ));
        };
        let args = match &call.arguments {
            Ok(v) => v,
            Err(e) => {
                return Ok(Routed::error(
                    "invalid-arguments",
                    format!("invalid arguments for {}: {e}", call.name),
                ));
            }
        };
        if let Err(why) = schema::validate(&tool.spec().parameters, args) {
            return Ok(Routed::error(
                "invalid-arguments",
                format!("invalid arguments for {}: {why}", call.name),
            ));
        }

        // Only the declared path fields reach the gate; nothing else in the
        // arguments can sway it.
        let paths: Vec<&str> = tool
            .spec()
            .path_fields
            .iter()
            .filter_map(|f| args.get(f).and_then(Value::as_str))
            .collect();
        let access = match tool.spec().access {
            Access::ReadWrite => gate::Access::Write,
            Access::Read | Access::None => gate::Access::Read,
        };
        let request = GateRequest {
            session_id: &self.config.session_id,
            tool: &call.name,
            access,
            paths: &paths,
            interactive: self.config.interactive,
            writes: self.config.writes,
            now: gate::now(),
        };
        let decision = gate::decide(&self.config.permissions_db, &request);
        let (decision_name, reason) = match decision {
            Decision::Allow { reason } => ("allow", reason),
            Decision::Deny { reason } => return Ok(denied("deny", reason)),
            Decision::Ask { prompt } => match self.approver.as_mut().map(|a| a.approve(&prompt)) {
                Some(true) => (
                    "ask-allowed",
                    "the person at the terminal allowed it".to_owned(),
                ),
                Some(false) => {
                    return Ok(denied(
                        "ask-denied",
                        format!("denied: the person at the terminal did not allow it ({prompt})"),
                    ));
                }
                None => {
                    return Ok(denied(
                        "deny",
                        format!("denied: {prompt}; no one is there to approve it"),
                    ));
                }
            },
        };

        // The gate allowed this call: the tool gets the access it declares,
        // and the sandbox never gives more.
        let pen = Pen::new(&self.config.workspace, tool.spec().access)?;
        let started = Instant::now();
        let outcome = self.sandbox.call(tool, &args.to_string(), &pen)?;
        let duration = started.elapsed();
        let (status, result, error_kind) = match outcome {
            Ok(text) => (goat_store::CallStatus::Ok, text, None),
            Err(failure) => (
                goat_store::CallStatus::Error,
                format!("{} failed: {failure}", call.name),
                Some(failure.kind().to_owned()),
            ),
        };
        Ok(Routed {
            status,
            result,
            error_kind,
            decision: Some(decision_name.to_owned()),
            decision_reason: Some(reason),
            duration,
        })
    }
}

fn denied(decision: &str, reason: String) -> Routed {
    let result = if reason.starts_with("denied") {
        reason.clone()
    } else {
        format!("denied: {reason}")
    };
    Routed {
        status: goat_store::CallStatus::Denied,
        result,
        error_kind: Some("denied".to_owned()),
        decision: Some(decision.to_owned()),
        decision_reason: Some(reason),
        duration: Duration::ZERO,
    }
}
