//! The AppToolRouter: the one road every tool call takes.
//!
//! Find the tool among those offered in this request, check the arguments
//! against its JSON Schema, ask the permission gate, run it in the sandbox
//! with the access the gate allowed. A call that fails any step gets a
//! result for the model saying which and why, and nothing runs. Calls the
//! ADR-0065 recovery brought about take this road too: there is no other.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use goat_engine::ToolCall;
use goat_sandbox::{Access, Pen, Sandbox, SandboxError, Tool};
use goat_store::{CallDecision, CallErrorKind, CallStatus, Refusal, RefusedBy};
use serde_json::Value;

use crate::checkpoint;
use crate::command::{CommandTool, RUN_COMMAND, command_schema};
use crate::external::ExternalTools;
use crate::mode::{ApprovalMode, ModeSwitch, READ_ONLY_REASON};
use crate::schema;
use goat_gate::{
    self as gate, Boundary, Decision, Effect, Evaluation, GateHandle, GateRequest, Interactive,
    NewRule, PermissionDb, Scope, WritePolicy,
};

mod approval;
mod outcome;

pub(crate) use approval::{Allowed, directory_pattern};
pub use approval::{Approval, ApprovalRequest, Approver, MAX_DENIAL_NOTE_CHARS, interrupt_fired};
pub use outcome::{OfferedTool, Routed, ToolKind, failure_kind};
pub(crate) use outcome::{denied, denied_because, failed, succeeded, unasked};

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
        }
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

    /// Takes one call down the road: [`find`](Self::find) the tool, check
    /// its [`arguments`](Self::arguments), ask the [`gate`](Self::gate)
    /// (and the person, when it asks), then [`run`](Self::run) it. Each step
    /// either hands the next what it needs or ends the call with what the
    /// model is told. `Err` is a host failure that ends the turn (the
    /// workspace cannot be opened).
    pub fn route(&mut self, call: &ToolCall) -> Result<Routed, SandboxError> {
        if call.name == RUN_COMMAND
            && let Some(tool) = self.commands.clone()
        {
            return Ok(self.route_command(&tool, call));
        }
        if self.is_external(&call.name) {
            return Ok(self.route_external(call));
        }
        let tool = match self.find(call) {
            Ok(tool) => tool.clone(),
            Err(routed) => return Ok(routed),
        };
        // Compiled and checked before its spec is relied on: a plugin's
        // spec recorded at add (or a built-in's) that is not what its
        // component declares ends here, before the schema check, the gate
        // and the person see it, and nothing is asked or remembered.
        self.sandbox.prepare(&tool)?;
        let args = match Self::arguments(&tool, call) {
            Ok(args) => args,
            Err(routed) => return Ok(routed),
        };
        let (granted, boundary) = match self.gate(&tool, call, args) {
            Ok(granted) => granted,
            Err(routed) => return Ok(routed),
        };
        self.run(&tool, call, args, granted, boundary)
    }

    /// The offered tool the call names.
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

    /// The call's arguments, parsed and valid against the tool's schema.
    fn arguments<'c>(tool: &Tool, call: &'c ToolCall) -> Result<&'c Value, Routed> {
        let args = call.arguments.as_ref().map_err(|e| {
            failed(
                CallErrorKind::InvalidArguments,
                format!("invalid arguments for {}: {e}", call.name),
            )
        })?;
        schema::validate(&tool.spec().parameters, args).map_err(|why| {
            failed(
                CallErrorKind::InvalidArguments,
                format!("invalid arguments for {}: {why}", call.name),
            )
        })?;
        Ok(args)
    }

    /// Asks the permission gate, and the person when the gate asks them.
    /// `Ok` carries the decision and reason for the record, and the
    /// boundary the sandbox holds the call to.
    fn gate(
        &mut self,
        tool: &Tool,
        call: &ToolCall,
        args: &Value,
    ) -> Result<((CallDecision, String), Boundary), Routed> {
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
        // The mode first: read-only refuses what would write whatever the
        // rules say; accept-edits answers "allow" where the gate would ask,
        // for the built-in file tools whose changes undo can put back (a
        // plugin that writes is still asked), and the gate's deny rules and
        // protected paths still win.
        let writes = match (self.mode(), access) {
            (ApprovalMode::ReadOnly, gate::Access::Write) => {
                return Err(denied(
                    RefusedBy::Mode,
                    CallDecision::Deny,
                    READ_ONLY_REASON.to_owned(),
                ));
            }
            (ApprovalMode::AcceptEdits, _) if checkpoint::checkpointed(&call.name) => {
                WritePolicy::AllowAll
            }
            (ApprovalMode::AcceptEdits | ApprovalMode::Ask | ApprovalMode::ReadOnly, _) => {
                self.config.writes
            }
        };
        let request = GateRequest {
            session_id: &self.config.session_id,
            workspace: self.config.workspace.to_str(),
            tool: &call.name,
            access,
            paths: &paths,
            interactive: self.config.interactive,
            writes,
            now: gate::now(),
        };
        let (evaluation, boundary) = self
            .gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .decide_with_boundary(&request);
        let granted = match &evaluation.decision {
            Decision::Allow { .. } => (CallDecision::Allow, evaluation.reason()),
            Decision::Deny(why) => return Err(denied_because(why, evaluation.reason())),
            Decision::Ask { asked } => self.ask(&evaluation, asked, call, &paths, args, access)?,
        };
        // The gate gives a boundary with every call it lets through; without
        // one, nothing runs.
        let Some(boundary) = boundary else {
            return Err(denied(
                RefusedBy::Rule,
                CallDecision::Deny,
                "denied: the permission rules could not be applied to the files this call \
                 reaches"
                    .to_owned(),
            ));
        };
        Ok((granted, boundary))
    }

    /// Puts the gate's question to the approver, and saves a "session" or
    /// "always" answer as rules for exactly the paths asked about.
    fn ask(
        &mut self,
        evaluation: &Evaluation,
        asked: &[String],
        call: &ToolCall,
        paths: &[&str],
        args: &Value,
        access: gate::Access,
    ) -> Result<(CallDecision, String), Routed> {
        let mut question = evaluation.question();
        // The gate has resolved these already, or it would not ask. The
        // person is shown the file that will change: where a name is a
        // link, the file it leads to.
        let lexical: Vec<String> = paths
            .iter()
            .filter_map(|raw| gate::canonical_path(raw).ok())
            .collect();
        let resolved: Vec<String> = lexical.iter().map(|p| self.on_disk(p)).collect();
        for (name, file) in lexical.iter().zip(&resolved) {
            if name != file {
                question.push_str(&format!(
                    " ('{name}' is a link: the file written is '{file}')"
                ));
            }
        }
        let Some(approver) = self.approver.as_mut() else {
            return Err(unasked(format!(
                "denied: {question}; no one is there to approve it"
            )));
        };
        // What "session" and "always" would save: exactly the paths the
        // person is asked about (others are allowed by rules of their own),
        // in this workspace. A call naming no path is about the whole
        // workspace, and the question says so.
        let patterns: Option<Vec<String>> = if asked.is_empty() {
            Some(vec![".".to_owned()])
        } else {
            asked.iter().map(|path| gate::exact_pattern(path)).collect()
        };
        let patterns = patterns.filter(|_| self.config.workspace.to_str().is_some());
        // What "directory" would save: each asked path's directory, offered
        // only when every one has a directory below the root.
        let directories: Vec<String> = match &patterns {
            Some(_) if !asked.is_empty() => asked
                .iter()
                .map(|path| directory_pattern(path))
                .collect::<Option<Vec<String>>>()
                .unwrap_or_default(),
            Some(_) | None => Vec::new(),
        };
        let answer = approver.approve(&ApprovalRequest {
            tool: &call.name,
            prompt: &question,
            paths: &resolved,
            arguments: args,
            workspace: &self.config.workspace,
            can_remember: patterns.is_some(),
            directories: &directories,
            details: &[],
        });
        let allowed = Allowed::from_answer(answer, approver.who(), &question, patterns.is_some())?;
        let (Some(scope), Some(patterns)) = (allowed.scope(&self.config.session_id), patterns)
        else {
            return Ok(allowed.granted(None));
        };
        let patterns = match allowed {
            Allowed::Session { directories: true } if !directories.is_empty() => directories,
            Allowed::Once | Allowed::Session { .. } | Allowed::Always => patterns,
        };
        let saved = self.remember(&call.name, access, scope, &patterns);
        Ok(allowed.granted(Some(saved)))
    }

    /// Runs a call the gate allowed, with exactly the access the tool
    /// declares (the sandbox never gives more), held to `boundary` on every
    /// file it reaches.
    fn run(
        &self,
        tool: &Tool,
        call: &ToolCall,
        args: &Value,
        (decision, reason): (CallDecision, String),
        boundary: Boundary,
    ) -> Result<Routed, SandboxError> {
        let policy = Arc::new(GatePolicy::new(boundary));
        let pen = Pen::new(&self.config.workspace, tool.spec().access)?.with_policy(policy.clone());
        // ADR-0073: what the files it will change hold now, taken after the
        // gate allowed the call and before it runs; a file GOAT could not
        // give back stops it here.
        let checkpoint = match checkpoint::capture(&self.config.workspace, &call.name, args) {
            Ok(checkpoint) => checkpoint,
            Err((kind, refusal)) => {
                return Ok(Routed {
                    decision: Some(decision),
                    decision_reason: Some(reason),
                    ..failed(kind, refusal)
                });
            }
        };
        let started = Instant::now();
        let outcome = self.sandbox.call(tool, &args.to_string(), &pen)?;
        let duration = started.elapsed();
        let (status, result, error_kind) = match outcome {
            Ok(text) => (CallStatus::Ok, text, None),
            Err(failure) => (
                CallStatus::Error,
                format!("{} failed: {failure}", call.name),
                Some(failure_kind(&failure)),
            ),
        };
        // Only a call that succeeded changed anything to undo.
        let changes = match (status, checkpoint) {
            (CallStatus::Ok, Some(checkpoint)) => checkpoint.finish(),
            _ => Vec::new(),
        };
        Ok(Routed {
            status,
            result,
            error_kind,
            decision: Some(decision),
            decision_reason: Some(reason),
            duration,
            exit_code: None,
            changes,
            changes_stored: goat_store::ChangesStored::WithOutcome,
            refusals: policy.refusals(),
        })
    }
}

impl AppToolRouter {
    /// The workspace path `path` (canonical, lexical) leads to on disk,
    /// following links as the tool will: the file itself when it exists,
    /// else its directory's target and its name. `path` itself when it
    /// cannot be resolved inside the workspace (the tool will then fail).
    fn on_disk(&self, path: &str) -> String {
        let Ok(root) = self.config.workspace.canonicalize() else {
            return path.to_owned();
        };
        let full = root.join(path);
        let real = full.canonicalize().or_else(|_| {
            let name = full.file_name().ok_or(std::io::ErrorKind::NotFound)?;
            let parent = full.parent().ok_or(std::io::ErrorKind::NotFound)?;
            parent.canonicalize().map(|dir| dir.join(name))
        });
        match real.as_deref().map(|r| r.strip_prefix(&root)) {
            Ok(Ok(rel)) if !rel.as_os_str().is_empty() => {
                rel.to_str().map_or_else(|| path.to_owned(), str::to_owned)
            }
            _ => path.to_owned(),
        }
    }

    /// Saves a person's "allow for this session" or "always allow" as allow
    /// rules for exactly this tool, access and these path patterns. Deny
    /// rules still win over them, as over any allow rule.
    pub(crate) fn remember(
        &self,
        tool: &str,
        access: gate::Access,
        scope: Scope,
        patterns: &[String],
    ) -> Result<Vec<String>, gate::GateError> {
        let mut db = PermissionDb::open(&self.config.permissions_db)?;
        let now = gate::now();
        patterns
            .iter()
            .map(|pattern| {
                db.add(NewRule {
                    tool: Some(tool.to_owned()),
                    pattern: pattern.clone(),
                    access,
                    effect: Effect::Allow,
                    scope: scope.clone(),
                    workspace: self.config.workspace.to_str().map(str::to_owned),
                    created_at: now,
                    expires_at: None,
                    command: None,
                })
                .map(|rule| format!("#{}", rule.id))
            })
            .collect()
    }
}

/// The gate's [`Boundary`] as the sandbox asks it, on resolved paths,
/// keeping every write it refused: the fence's refusals reach the call's
/// outcome, named by the file the call actually reached.
struct GatePolicy {
    boundary: Boundary,
    refused: Mutex<Vec<Refusal>>,
}

impl GatePolicy {
    fn new(boundary: Boundary) -> Self {
        Self {
            boundary,
            refused: Mutex::new(Vec::new()),
        }
    }

    /// What the fence refused during the call, each file once.
    fn refusals(&self) -> Vec<Refusal> {
        std::mem::take(
            &mut *self
                .refused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

impl goat_sandbox::PathPolicy for GatePolicy {
    fn visible(&self, path: &str) -> bool {
        self.boundary.visible(path)
    }

    fn writable(&self, path: &str) -> Result<(), String> {
        self.boundary.write_refusal(path).map_err(|refusal| {
            let by = match refusal.by {
                gate::WriteRefusedBy::Rule => RefusedBy::Fence,
                gate::WriteRefusedBy::Protected => RefusedBy::Protected,
            };
            let mut refused = self
                .refused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !refused.iter().any(|r| r.target.as_deref() == Some(path)) {
                refused.push(Refusal::new(
                    by,
                    Some(path.to_owned()),
                    refusal.reason.clone(),
                ));
            }
            refusal.reason
        })
    }

    fn governs_below(&self, dir: &str) -> bool {
        self.boundary.governs_below(dir)
    }

    fn hides_anything(&self) -> bool {
        self.boundary.hides_anything()
    }

    fn hidden_roots(&self) -> Vec<String> {
        self.boundary.hidden_roots()
    }
}
