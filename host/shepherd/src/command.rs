//! The `run_command` tool on the router's one road: arguments, the gate's
//! command decision (and the person, when it asks), then the contained run
//! (`goat-command`).
//!
//! The tool is native, not a component, so it is not a [`goat_sandbox::Tool`];
//! the router offers it beside the components when the host enabled it and
//! the kernel can contain it.

use std::path::Path;
use std::time::Duration;

use goat_command::{CommandRequest, Containment, Exit, Network, WorkspaceRules};
use goat_engine::{ToolCall, ToolSchema};
use goat_store::{CallDecision, CallErrorKind, CallOutcome, CallStatus};
use serde_json::{Value, json};

use crate::gate::{
    self, Boundary, CommandCall, CommandPolicy, Decision, Effect, NewRule, PermissionDb, Scope,
};
use crate::mode::{ApprovalMode, READ_ONLY_REASON};
use crate::router::{AppToolRouter, Approval, ApprovalRequest, denial_reason, denied, failed};
use crate::schema;

/// The tool's name.
pub const RUN_COMMAND: &str = gate::COMMAND_TOOL;

/// The command tool as the host configured it.
#[derive(Clone, Debug)]
pub struct CommandTool {
    /// The containment every command runs in.
    pub containment: Containment,
    /// `--allow-commands` or not.
    pub policy: CommandPolicy,
}

/// The tool's arguments, as the model sees them.
pub fn command_schema() -> ToolSchema {
    ToolSchema {
        name: RUN_COMMAND.to_owned(),
        description: format!(
            "Run a shell command line (sh -c) in the workspace, for builds and tests. It runs in \
             a sandbox: the workspace is writable except version-control metadata (.git) and \
             paths the rules protect, a private TMPDIR is writable, system and toolchain \
             directories are read-only, the rest of the machine is not readable, and the \
             network is closed unless the user opened it. stdin is empty; stdout and stderr are \
             returned together, the start and the end kept when long, with the exit code and \
             the duration. Nothing can be created or removed directly in a directory that holds \
             .git (the root of a repository); existing files there stay writable. The default \
             timeout is {} s, at most {} s; every process the command started is killed when \
             it ends.",
            goat_command::limits::DEFAULT_TIMEOUT.as_secs(),
            goat_command::limits::MAX_TIMEOUT.as_secs()
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": gate::command::MAX_COMMAND_BYTES,
                    "description": "The command line, e.g. \"cargo test\""
                },
                "timeout_secs": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": goat_command::limits::MAX_TIMEOUT.as_secs(),
                    "description": "Wall-clock limit in seconds"
                },
                "cwd": {
                    "type": "string",
                    "description": "Directory to run in, relative to the workspace root"
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

/// The gate's [`Boundary`] as the command's filesystem asks it.
struct BoundaryRules(Boundary);

impl WorkspaceRules for BoundaryRules {
    fn visible(&self, path: &str) -> bool {
        self.0.visible(path)
    }

    fn writable(&self, path: &str) -> bool {
        self.0.writable(path).is_ok()
    }

    fn governs_below(&self, dir: &str) -> bool {
        self.0.governs_below(dir)
    }

    fn is_protected_name(&self, name: &str) -> bool {
        gate::PROTECTED_NAMES.contains(&name)
    }
}

impl AppToolRouter {
    /// The command road: arguments, gate, person, contained run.
    pub(crate) fn route_command(&mut self, tool: &CommandTool, call: &ToolCall) -> CallOutcome {
        let args = match call.arguments.as_ref() {
            Ok(args) => args,
            Err(e) => {
                return failed(
                    CallErrorKind::InvalidArguments,
                    format!("invalid arguments for {RUN_COMMAND}: {e}"),
                );
            }
        };
        if let Err(why) = schema::validate(&command_schema().parameters, args) {
            return failed(
                CallErrorKind::InvalidArguments,
                format!("invalid arguments for {RUN_COMMAND}: {why}"),
            );
        }
        // Read-only mode: no command runs, whatever the rules say.
        if self.mode() == ApprovalMode::ReadOnly {
            return denied(CallDecision::Deny, READ_ONLY_REASON.to_owned());
        }
        let command = args.get("command").and_then(Value::as_str).unwrap_or("");
        let timeout = args
            .get("timeout_secs")
            .and_then(Value::as_u64)
            .map_or(goat_command::limits::DEFAULT_TIMEOUT, Duration::from_secs)
            .min(goat_command::limits::MAX_TIMEOUT);
        let cwd = match args.get("cwd").and_then(Value::as_str) {
            None => None,
            Some(raw) => match gate::canonical_path(raw) {
                Ok(path) => Some(path),
                Err(why) => {
                    return failed(
                        CallErrorKind::InvalidArguments,
                        format!("invalid arguments for {RUN_COMMAND}: cwd {why}"),
                    );
                }
            },
        };
        let workspace = self.config().workspace.clone();
        let request = CommandCall {
            session_id: &self.config().session_id.clone(),
            workspace: workspace.to_str(),
            command,
            interactive: self.config().interactive,
            policy: tool.policy,
            now: gate::now(),
        };
        let (evaluation, boundary) = gate::decide_command(&self.config().permissions_db, &request);
        let granted = match &evaluation.decision {
            Decision::Allow { .. } => (CallDecision::Allow, evaluation.reason()),
            Decision::Deny(_) => return denied(CallDecision::Deny, evaluation.reason()),
            Decision::Ask { .. } => {
                match self.ask_command(command, cwd.as_deref(), tool.containment.network, args) {
                    Ok(granted) => granted,
                    Err(outcome) => return outcome,
                }
            }
        };
        let Some(boundary) = boundary else {
            return denied(
                CallDecision::Deny,
                "denied: the permission rules could not be applied to the workspace".to_owned(),
            );
        };
        if let Some(dir) = &cwd
            && !boundary.visible(dir)
        {
            return denied(
                CallDecision::Deny,
                format!("denied: the directory '{dir}' is hidden by a permission rule"),
            );
        }
        let outcome = goat_command::run(
            &tool.containment,
            &BoundaryRules(boundary),
            &CommandRequest {
                command,
                cwd: cwd.as_deref().map(Path::new),
                timeout,
            },
        );
        let (decision, reason) = granted;
        match outcome {
            Ok(outcome) => {
                let (status, error_kind) = match outcome.exit {
                    Exit::TimedOut => (CallStatus::Error, Some(CallErrorKind::Timeout)),
                    _ => (CallStatus::Ok, None),
                };
                CallOutcome {
                    status,
                    result: outcome.render(),
                    error_kind,
                    decision: Some(decision),
                    decision_reason: Some(reason),
                    duration: outcome.duration,
                    exit_code: outcome.exit_code(),
                    changes: Vec::new(),
                }
            }
            Err(e) => CallOutcome {
                status: CallStatus::Error,
                result: format!("{RUN_COMMAND} failed: {e}"),
                error_kind: Some(if e.is_invalid_arguments() {
                    CallErrorKind::InvalidArguments
                } else {
                    CallErrorKind::Io
                }),
                decision: Some(decision),
                decision_reason: Some(reason),
                duration: Duration::ZERO,
                exit_code: None,
                changes: Vec::new(),
            },
        }
    }

    /// Puts a command to the person: the command, the directory, the
    /// network. "Session" and "always" save the exact command line as a
    /// command rule (never a bare `*`).
    fn ask_command(
        &mut self,
        command: &str,
        cwd: Option<&str>,
        network: Network,
        args: &Value,
    ) -> Result<(CallDecision, String), CallOutcome> {
        let network = match network {
            Network::Closed => "network closed",
            Network::Open => "NETWORK OPEN",
        };
        let question = format!(
            "{RUN_COMMAND} wants to run '{command}' in '{}' ({network}); allow it?",
            cwd.unwrap_or(".")
        );
        let can_remember = gate::command::check_prefix(command).is_ok()
            && self.config().workspace.to_str().is_some();
        let workspace = self.config().workspace.clone();
        let Some(answer) = self.approve_with(&ApprovalRequest {
            tool: RUN_COMMAND,
            prompt: &question,
            paths: &[],
            arguments: args,
            workspace: &workspace,
            can_remember,
            directories: &[],
        }) else {
            return Err(denied(
                CallDecision::Deny,
                format!("denied: {question}; no one is there to approve it"),
            ));
        };
        let scope = match answer {
            Approval::Deny => {
                return Err(denied(
                    CallDecision::AskDenied,
                    denial_reason(&question, None),
                ));
            }
            Approval::DenyWith(note) => {
                return Err(denied(
                    CallDecision::AskDenied,
                    denial_reason(&question, Some(&note)),
                ));
            }
            Approval::Once => None,
            _ if !can_remember => None,
            // No directory is offered for a command: it is the session.
            Approval::Session | Approval::Directory => {
                Some(Scope::Session(self.config().session_id.clone()))
            }
            Approval::Always => Some(Scope::Persistent),
        };
        let Some(scope) = scope else {
            return Ok((
                CallDecision::AskAllowedOnce,
                "the person at the terminal allowed it once".to_owned(),
            ));
        };
        let name = match scope {
            Scope::Persistent => CallDecision::AskAllowedAlways,
            Scope::Session(_) => CallDecision::AskAllowedSession,
        };
        let saved = PermissionDb::open(&self.config().permissions_db).and_then(|mut db| {
            db.add(NewRule {
                tool: Some(RUN_COMMAND.to_owned()),
                pattern: "**".to_owned(),
                access: gate::Access::Write,
                effect: Effect::Allow,
                scope,
                workspace: self.config().workspace.to_str().map(str::to_owned),
                created_at: gate::now(),
                expires_at: None,
                command: Some(command.to_owned()),
            })
        });
        let reason = match saved {
            Ok(rule) => format!(
                "the person at the terminal allowed it and saved rule #{}",
                rule.id
            ),
            Err(e) => format!(
                "the person at the terminal allowed it, but the rule could not be saved ({e}); \
                 it applies to this call only"
            ),
        };
        Ok((name, reason))
    }
}

/// Whether commands can run here, and if not why: the tool is then not
/// offered.
pub fn command_support() -> Result<(), String> {
    goat_command::support().map_err(|e| e.0)
}

/// [`Containment`] defaults a host starts from: the toolchain directories
/// under `home`, the network closed, no extra environment.
pub fn default_containment(workspace: &Path, home: Option<&Path>) -> Containment {
    Containment {
        workspace: workspace.to_path_buf(),
        read_paths: home
            .map(goat_command::default_read_paths)
            .unwrap_or_default(),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: goat_command::PidsCgroup::WhereAvailable,
    }
}
