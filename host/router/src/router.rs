//! The AppToolRouter: the one road every tool call takes.
//!
//! Find the tool among those offered in this request, check the arguments
//! against its JSON Schema, ask the permission gate, run it in the sandbox
//! with the access the gate allowed. A call that fails any step gets a
//! result for the model saying which and why, and nothing runs. Calls the
//! ADR-0065 recovery brought about take this road too: there is no other.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use goat_engine::ToolCall;
use goat_sandbox::{Access, Sandbox, SandboxError, Tool};
use goat_store::CallErrorKind;

use crate::command::{CommandTool, RUN_COMMAND, command_schema};
use crate::external::ExternalTools;
use crate::mode::{ApprovalMode, ModeSwitch};
use goat_gate::{
    self as gate, Boundary, Effect, Evaluation, GateHandle, GateRequest, Interactive, NewRule,
    Scope, WritePolicy,
};

mod approval;
mod hooks;
pub(crate) use hooks::ran;
mod outcome;
mod pen;
mod road;

pub(crate) use approval::{Allowed, directory_pattern};
pub use approval::{Approval, ApprovalRequest, Approver, MAX_DENIAL_NOTE_CHARS, interrupt_fired};
pub use outcome::{OfferedTool, Routed, ToolKind, failure_kind};
pub(crate) use outcome::{denied, denied_because, failed, succeeded, unasked};
pub(crate) use road::{Checked, Question, Route, Verdict};

use crate::command::CommandRoute;
use crate::external::ExternalRoute;
use pen::PenRoute;

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
    /// The permission database, kept open between calls; it checks before
    /// each decision that the file and its rules are as it read them.
    gate: Mutex<GateHandle>,
    commands: Option<CommandTool>,
    /// The approval mode, which the person may switch between calls.
    mode: ModeSwitch,
    /// Where a command's change set is written before it lands, and the
    /// row of the call being routed (set by the Shepherd).
    journal: Option<(Arc<Mutex<goat_store::Store>>, Option<i64>)>,
    /// MCP servers' tools (ADR-0086).
    external: Option<Arc<dyn ExternalTools>>,
    /// The person's Ctrl-C for the call being routed (ADR-0087): a
    /// command or an MCP call stops when it fires.
    interrupt: goat_command::Interrupt,
    /// The person's hooks (issue 41), fired on every call.
    pub(crate) hooks: Option<Arc<goat_hooks::Hooks>>,
    /// The hooks run for the call being routed, for its record.
    hook_runs: Vec<goat_store::HookRan>,
}

impl AppToolRouter {
    /// A router offering `tools`, run in `sandbox`.
    pub fn new(sandbox: Arc<Sandbox>, tools: Vec<Tool>, config: RouterConfig) -> Self {
        let gate = Mutex::new(GateHandle::new(&config.permissions_db));
        Self {
            sandbox,
            tools,
            config,
            approver: None,
            gate,
            commands: None,
            mode: ModeSwitch::default(),
            journal: None,
            external: None,
            interrupt: goat_command::Interrupt::new(),
            hooks: None,
            hook_runs: Vec::new(),
        }
    }

    /// Runs the person's `hooks` on every call routed (none when empty).
    pub fn with_hooks(mut self, hooks: goat_hooks::Hooks) -> Self {
        self.hooks =
            (!hooks.is_empty()).then(|| Arc::new(hooks.with_sandbox(self.sandbox.clone())));
        self
    }

    /// Writes command change sets to `store` before they land, against the
    /// call row [`begin_call`](Self::begin_call) names.
    pub fn set_journal(&mut self, store: Arc<Mutex<goat_store::Store>>) {
        self.journal = Some((store, None));
    }

    /// The store row of the call about to be routed, and the interrupt
    /// that stops it.
    pub fn begin_call(&mut self, row: i64, interrupt: goat_command::Interrupt) {
        if let Some((_, current)) = self.journal.as_mut() {
            *current = Some(row);
        }
        if let Some(approver) = self.approver.as_mut() {
            approver.interrupted_by(&interrupt);
        }
        self.interrupt = interrupt;
    }

    /// What stops the hooks run once a turn (a turn's, not a call's).
    pub(crate) fn set_interrupt(&mut self, interrupt: goat_command::Interrupt) {
        self.interrupt = interrupt;
    }

    /// What stops the call being routed.
    pub(crate) fn interrupt(&self) -> &goat_command::Interrupt {
        &self.interrupt
    }

    /// Writes `changes` for the current call before they land.
    pub(crate) fn journal(&self, changes: &[goat_store::FileChange]) -> crate::command::Journal {
        let Some((store, Some(row))) = &self.journal else {
            return crate::command::Journal::None;
        };
        match store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .journal_changes(*row, changes)
        {
            Ok(()) => crate::command::Journal::Written,
            Err(e) => crate::command::Journal::Failed(e.to_string()),
        }
    }

    /// Marks what [`journal`](Self::journal) wrote as landed.
    pub(crate) fn mark_landed(&self) {
        if let Some((store, Some(row))) = &self.journal {
            // Not marked (the store failing now): `sessions show` finds the
            // paths in their new state and says so.
            let _ = store
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .mark_landed(*row);
        }
    }

    /// Records the current call's egress proxy decisions. A failure to
    /// write them is not the call's: the result already says what was
    /// refused.
    pub(crate) fn record_egress(&self, records: &[goat_store::EgressRecord]) {
        if records.is_empty() {
            return;
        }
        if let Some((store, Some(row))) = &self.journal {
            let _ = store
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .record_egress(*row, records);
        }
    }

    /// Removes what [`journal`](Self::journal) wrote for the current call.
    pub(crate) fn unjournal(&self) {
        if let Some((store, Some(row))) = &self.journal {
            let _ = store
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .drop_journal(*row);
        }
    }

    /// Reads the approval mode from `mode` at every call (ask, without).
    pub fn with_mode(mut self, mode: ModeSwitch) -> Self {
        self.mode = mode;
        self
    }

    /// The approval mode now.
    pub(crate) fn mode(&self) -> ApprovalMode {
        self.mode.get()
    }

    /// Offers `run_command`, contained as `tool` says. The caller checks
    /// [`crate::command_support`] first: where the kernel cannot contain a
    /// command, the tool must not be offered.
    pub fn with_commands(mut self, tool: CommandTool) -> Self {
        self.commands = Some(tool);
        self
    }

    /// Offers the tools of outside (MCP) servers too.
    pub fn with_external(mut self, tools: Arc<dyn ExternalTools>) -> Self {
        self.external = Some(tools);
        self
    }

    /// Tells the outside tools the context window (ADR-0086: over a share
    /// of it, they are offered on demand).
    pub fn fit_external(&self, tokens: u64) {
        if let Some(ext) = &self.external {
            ext.fit_window(tokens);
        }
    }

    /// One line per outside server, for a person.
    pub fn external_status(&self) -> Vec<String> {
        self.external
            .as_ref()
            .map(|e| e.status())
            .unwrap_or_default()
    }

    /// The outside tools, if any.
    pub(crate) fn external(&self) -> Option<Arc<dyn ExternalTools>> {
        self.external.clone()
    }

    /// The gate's decision on `request`, and the boundary it holds a call to.
    pub(crate) fn decide(&self, request: &GateRequest<'_>) -> (Evaluation, Option<Boundary>) {
        self.gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .decide_with_boundary(request)
    }

    /// The boundary the rules in force hold `request` to, with no
    /// decision on it.
    pub(crate) fn gate_boundary(&self, request: &GateRequest<'_>) -> Result<Boundary, String> {
        self.gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .boundary(request)
    }

    /// The gate's decision on a command line, from the same kept-open
    /// database as every other call, and the boundary its filesystem is
    /// held to.
    pub(crate) fn decide_command(
        &self,
        request: &gate::CommandCall<'_>,
    ) -> (Evaluation, Option<Boundary>) {
        self.gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .decide_command(request)
    }

    /// Asks the approver, if there is one.
    pub(crate) fn approve_with(&mut self, request: &ApprovalRequest<'_>) -> Option<Approval> {
        self.approver.as_mut().map(|a| a.approve(request))
    }

    /// Who the approver is, as a denial names them.
    pub(crate) fn approver_who(&self) -> String {
        self.approver
            .as_ref()
            .map_or(approval::AT_THE_TERMINAL, |a| a.who())
            .to_owned()
    }

    /// Whether the approver is a program answering in the person's place
    /// (see [`Approver::is_the_person`]).
    pub(crate) fn approver_stands_in(&self) -> bool {
        self.approver.as_ref().is_some_and(|a| !a.is_the_person())
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
            .chain(
                self.commands
                    .as_ref()
                    .map(|c| command_schema(&c.containment)),
            )
            .chain(self.external.iter().flat_map(|e| e.schemas()))
            .collect()
    }

    /// The tools offered, as a front end describes them, each with its
    /// [`ToolKind`].
    pub fn offered(&self) -> Vec<OfferedTool> {
        let components = self.tools.iter().map(|t| OfferedTool {
            name: t.spec().name.clone(),
            kind: match t.kind() {
                goat_sandbox::ToolKind::Builtin => ToolKind::Builtin,
                // Anything the sandbox loaded that GOAT did not ship is
                // the person's, never taken for a built-in.
                _ => ToolKind::Plugin,
            },
            writes: t.spec().access == Access::ReadWrite,
            path_fields: t.spec().path_fields.clone(),
            network: false,
        });
        let command = self.commands.as_ref().map(|c| OfferedTool {
            name: RUN_COMMAND.to_owned(),
            kind: ToolKind::Command,
            writes: true,
            path_fields: Vec::new(),
            network: c.containment.network != goat_command::Network::Closed,
        });
        let external = self.external.iter().flat_map(|e| {
            let tools = e.tools();
            e.offered_names().into_iter().map(move |name| {
                match tools.iter().find(|t| t.name == name) {
                    Some(t) => OfferedTool {
                        name,
                        kind: ToolKind::Mcp {
                            server: Some(t.server.clone()),
                        },
                        writes: t.writes,
                        path_fields: Vec::new(),
                        network: t.network,
                    },
                    // The on-demand search and call tools stand for every
                    // server's: what they reach is decided per call.
                    None => OfferedTool {
                        name,
                        kind: ToolKind::Mcp { server: None },
                        writes: tools.iter().any(|t| t.writes),
                        path_fields: Vec::new(),
                        network: tools.iter().any(|t| t.network),
                    },
                }
            })
        });
        components.chain(command).chain(external).collect()
    }

    /// The offered tool names.
    pub fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.spec().name.clone())
            .chain(self.commands.is_some().then(|| RUN_COMMAND.to_owned()))
            .chain(self.external.iter().flat_map(|e| e.offered_names()))
            .collect()
    }

    /// The configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// Takes one call down the road ([`road`](Self::road)): find the
    /// tool, and with its kind's [`Route`] check the arguments, the mode,
    /// ask the gate (and the person, when it asks), remember a yes, run
    /// it. Each step either hands the next what it needs or ends the call
    /// with what the model is told. `Err` is a host failure that ends the
    /// turn (the workspace cannot be opened).
    pub fn route(&mut self, call: &ToolCall) -> Result<Routed, SandboxError> {
        self.hook_runs.clear();
        let mut routed = self.route_kind(call)?;
        routed.hooks = self.take_hook_runs();
        Ok(routed)
    }

    /// [`route`](Self::route) with the call's kind found.
    fn route_kind(&mut self, call: &ToolCall) -> Result<Routed, SandboxError> {
        if call.name == RUN_COMMAND
            && let Some(tool) = self.commands.clone()
        {
            return self.road(&CommandRoute::new(&tool), call);
        }
        if let Some(ext) = self.external().filter(|_| self.is_external(&call.name)) {
            return self.road(&ExternalRoute(ext), call);
        }
        let tool = match self.find(call) {
            Ok(tool) => tool.clone(),
            Err(routed) => return Ok(routed),
        };
        self.road(&PenRoute(&tool), call)
    }

    /// Whether `name` is one of GOAT's own Pen tools on offer.
    pub(crate) fn is_builtin(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.spec().name == name && matches!(t.kind(), goat_sandbox::ToolKind::Builtin))
    }

    /// The offered component (built-in or plugin) the call names.
    fn find(&self, call: &ToolCall) -> Result<&Tool, Routed> {
        self.tools
            .iter()
            .find(|t| t.spec().name == call.name)
            .ok_or_else(|| {
                failed(
                    CallErrorKind::UnknownTool,
                    format!(
                        "unknown tool '{}'; the tools available are: {}",
                        call.name,
                        self.names().join(", ")
                    ),
                )
            })
    }

    /// The sandbox components run in.
    pub(crate) fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Saves `rules` through the kept-open gate (a person's remembered
    /// yes); the saved rules' ids.
    pub(crate) fn save_rules(&self, rules: Vec<NewRule>) -> Result<Vec<String>, gate::GateError> {
        let saved = self
            .gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .add(rules)?;
        Ok(saved.iter().map(|rule| format!("#{}", rule.id)).collect())
    }

    /// An allow rule for `tool` and `access` on `pattern`, in `scope`, in
    /// this workspace: what a person's remembered yes saves. Deny rules
    /// still win over it, as over any allow rule.
    pub(crate) fn allow_rule(
        &self,
        tool: &str,
        access: gate::Access,
        scope: Scope,
        pattern: &str,
        command: Option<&str>,
    ) -> NewRule {
        NewRule {
            tool: Some(tool.to_owned()),
            pattern: pattern.to_owned(),
            access,
            effect: Effect::Allow,
            scope,
            workspace: self.config.workspace.to_str().map(str::to_owned),
            created_at: gate::now(),
            expires_at: None,
            command: command.map(str::to_owned),
        }
    }
}
