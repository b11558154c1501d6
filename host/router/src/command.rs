//! The `run_command` tool on the router's one road: arguments, the gate's
//! command decision (and the person, when it asks), then the contained run
//! (`goat-command`).
//!
//! The tool is native, not a component, so it is not a [`goat_sandbox::Tool`];
//! the router offers it beside the components when the host enabled it and
//! the kernel can contain it.

use std::path::Path;
use std::time::Duration;

use goat_command::{
    Changes, CommandRequest, Containment, Exit, Guard, Network, Node, PathChange, Pending, Used,
    WorkspaceRules,
};
use goat_engine::{ToolCall, ToolSchema};
use goat_store::{
    CallDecision, CallErrorKind, CallOutcome, CallStatus, ChangesStored, EntryKind, FileChange,
    Refusal, RefusedBy,
};
use serde_json::{Value, json};

use goat_gate::{self as gate, Boundary, CommandCall, CommandPolicy, Evaluation};
use goat_sandbox::SandboxError;

use crate::egress::{self, CallProxy};
use crate::router::{
    AppToolRouter, Approval, ApprovalRequest, Checked, Question, Route, denied, failed,
};

mod attempt;
mod landing;

pub use attempt::LAND_ATTEMPT;

/// The tool's name.
pub const RUN_COMMAND: &str = gate::COMMAND_TOOL;

/// The command tool as the host configured it.
#[derive(Clone, Debug)]
pub struct CommandTool {
    /// The containment every command runs in.
    pub containment: Containment,
    /// `--allow-commands` or not.
    pub policy: CommandPolicy,
    /// The session's egress proxy, which a [`Network::Proxied`] command
    /// reaches the network through (`commands.network = [...]`); such a
    /// command does not run without one.
    pub egress: Option<goat_egress::Proxy>,
}

/// The tool as the model sees it, for the containment its workspace gets.
pub fn command_schema(containment: &Containment) -> ToolSchema {
    ToolSchema {
        name: RUN_COMMAND.to_owned(),
        description: command_description(containment),
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

/// What the model is told the command tool does, for the containment
/// its workspace gets.
fn command_description(containment: &Containment) -> String {
    let common = format!(
        "Run a shell command line (sh -c) in the workspace, for builds and tests. stdin is \
         empty; stdout and stderr are returned together, the start and the end kept when long, \
         with the exit code and the duration. The default timeout is {} s, at most {} s; every \
         process the command started is killed when it ends.",
        goat_command::limits::DEFAULT_TIMEOUT.as_secs(),
        goat_command::limits::MAX_TIMEOUT.as_secs()
    );
    match goat_command::resolve(containment) {
        Ok(Used::Namespace) | Err(_) => format!(
            "{common} It runs in a sandbox: it may create, change and remove anything in the \
             workspace, but its changes reach the workspace only when it has ended and GOAT \
             has checked them: a change to version-control metadata (.git) or to a path the \
             rules protect, a device node or a setuid bit refuses all of them (the result says \
             which); a private /tmp and an empty scratch home are writable and discarded; \
             system and toolchain directories are read-only; the rest of the machine is not \
             there; the network is closed unless the user opened it, or lets it reach listed \
             hosts only through GOAT's proxy (HTTPS_PROXY and HTTP_PROXY are then set; a \
             refused host is named in the result)."
        ),
        Ok(Used::Landlock) => format!(
            "{common} It runs in a sandbox: the workspace is writable except version-control \
             metadata (.git) and paths the rules protect, a private TMPDIR is writable, system \
             and toolchain directories are read-only, the rest of the machine is not readable, \
             and the network is closed unless the user opened it, or lets it reach listed hosts \
             only through GOAT's proxy (HTTPS_PROXY and HTTP_PROXY are then set; a refused host \
             is named in the result). Nothing can be created or \
             removed directly in a directory that holds .git (the root of a repository); \
             existing files there stay writable."
        ),
    }
}

/// The gate's [`Boundary`] as the command's filesystem asks it.
pub struct BoundaryRules(pub Boundary);

impl WorkspaceRules for BoundaryRules {
    fn visible(&self, path: &str) -> bool {
        self.0.visible(path)
    }

    fn writable_why(&self, path: &str) -> Result<(), String> {
        self.0.writable(path).map_err(|refusal| refusal.0)
    }

    fn hides_anything(&self) -> bool {
        self.0.hides_anything()
    }

    fn governs_below(&self, dir: &str) -> bool {
        self.0.governs_below(dir)
    }

    fn is_protected_name(&self, name: &str) -> bool {
        gate::PROTECTED_NAMES.contains(&name)
    }
}

/// The road's part for `run_command`: the gate is asked about the command
/// line (its prefix rules, `--allow-commands`), a remembered yes saves
/// that exact command line, and the command runs contained, its change set
/// inspected before it lands.
pub(crate) struct CommandRoute<'t> {
    tool: &'t CommandTool,
    /// The schema offered for the tool's containment.
    schema: ToolSchema,
}

impl<'t> CommandRoute<'t> {
    pub(crate) fn new(tool: &'t CommandTool) -> Self {
        Self {
            tool,
            schema: command_schema(&tool.containment),
        }
    }
}

/// A command call's arguments as the road reads them.
pub(crate) struct CommandArgs<'c> {
    raw: &'c Value,
    command: &'c str,
    timeout: Duration,
    /// The directory it runs in, canonical, relative to the workspace.
    cwd: Option<String>,
}

impl Route for CommandRoute<'_> {
    type Args<'c> = CommandArgs<'c>;

    fn arguments<'c>(
        &self,
        _: &AppToolRouter,
        _: &ToolCall,
        raw: &'c Value,
    ) -> Result<CommandArgs<'c>, CallOutcome> {
        let invalid = |why: String| {
            failed(
                CallErrorKind::InvalidArguments,
                format!("invalid arguments for {RUN_COMMAND}: {why}"),
            )
        };
        let cwd = match raw.get("cwd").and_then(Value::as_str) {
            None => None,
            Some(dir) => {
                Some(gate::canonical_path(dir).map_err(|why| invalid(format!("cwd {why}")))?)
            }
        };
        Ok(CommandArgs {
            raw,
            command: raw.get("command").and_then(Value::as_str).unwrap_or(""),
            timeout: raw
                .get("timeout_secs")
                .and_then(Value::as_u64)
                .map_or(goat_command::limits::DEFAULT_TIMEOUT, Duration::from_secs)
                .min(goat_command::limits::MAX_TIMEOUT),
            cwd,
        })
    }

    fn checked<'a>(&'a self, _: &'a ToolCall, args: &'a CommandArgs<'_>) -> Checked<'a> {
        Checked {
            name: RUN_COMMAND,
            parameters: &self.schema.parameters,
            value: args.raw,
        }
    }

    /// Read-only mode: no command runs, whatever the rules say.
    fn writes(&self, _: &CommandArgs<'_>) -> bool {
        true
    }

    fn decide(
        &self,
        router: &AppToolRouter,
        args: &CommandArgs<'_>,
    ) -> (Evaluation, Option<Boundary>) {
        let config = router.config();
        router.decide_command(&CommandCall {
            session_id: &config.session_id,
            workspace: config.workspace.to_str(),
            command: args.command,
            interactive: config.interactive,
            policy: self.tool.policy,
            now: gate::now(),
        })
    }

    /// The command, the directory, the network (where a proxied one may
    /// go). "Session" and "always" save the exact command line as a
    /// command rule (never a bare `*`); no directory is offered.
    fn question(
        &self,
        router: &AppToolRouter,
        _: &Evaluation,
        _: &[String],
        args: &CommandArgs<'_>,
    ) -> Question {
        let tool = self.tool;
        let used = goat_command::resolve(&tool.containment).ok();
        let network = egress::describe(tool.containment.network, tool.egress.as_ref(), used);
        let limits = match used {
            Some(used @ Used::Landlock) => format!("; {}", used.limits()),
            Some(Used::Namespace) | None => String::new(),
        };
        let can_remember = gate::command::check_prefix(args.command).is_ok()
            && router.config().workspace.to_str().is_some();
        Question {
            tool: RUN_COMMAND.to_owned(),
            prompt: format!(
                "{RUN_COMMAND} wants to run '{}' in '{}' ({network}{limits}); allow it?",
                args.command,
                args.cwd.as_deref().unwrap_or(".")
            ),
            paths: Vec::new(),
            arguments: args.raw.clone(),
            remember: can_remember.then(|| vec!["**".to_owned()]),
            access: gate::Access::Write,
            command: Some(args.command.to_owned()),
            directories: Vec::new(),
            unasked_hint: String::new(),
        }
    }

    fn run(
        &self,
        router: &mut AppToolRouter,
        _: &ToolCall,
        args: &CommandArgs<'_>,
        (decision, reason): (CallDecision, String),
        boundary: Boundary,
    ) -> Result<CallOutcome, SandboxError> {
        let tool = self.tool;
        let command = args.command;
        let cwd = &args.cwd;
        let timeout = args.timeout;
        if let Some(dir) = cwd
            && !boundary.visible(dir)
        {
            return Ok(denied(
                RefusedBy::Rule,
                CallDecision::Deny,
                format!("denied: the directory '{dir}' is hidden by a permission rule"),
            ));
        }
        let rules = BoundaryRules(boundary);
        // The proxy serves this call only, and stops when it ends.
        let proxy = match tool.containment.network {
            Network::Proxied => tool.egress.as_ref().map(CallProxy::new),
            Network::Closed | Network::Open => None,
        };
        let outcome = goat_command::run(
            &tool.containment,
            &rules,
            &CommandRequest {
                command,
                cwd: cwd.as_deref().map(Path::new),
                timeout,
                proxy: proxy.as_ref().map(|p| p as &dyn goat_command::ProxyLink),
                interrupt: Some(router.interrupt()),
                stdin: None,
                stdout_apart: false,
            },
        );
        let mut refusals = Vec::new();
        let egress_note = proxy.map(|proxy| {
            let served = proxy.finish();
            let records = egress::records(&served);
            router.record_egress(&records);
            refusals.extend(egress::refusals(&records));
            egress::refusals_note(&served, egress::COMMANDS_NETWORK, "this command")
        });
        Ok(match outcome {
            Ok(mut outcome) => {
                let interrupted = outcome.exit == Exit::Interrupted;
                let (mut status, mut error_kind) = match outcome.exit {
                    Exit::TimedOut => (CallStatus::Error, Some(CallErrorKind::Timeout)),
                    Exit::Interrupted => (CallStatus::Error, Some(CallErrorKind::Cancelled)),
                    _ => (CallStatus::Ok, None),
                };
                let mut result = outcome.render();
                let mut changes = Vec::new();
                let mut changes_stored = ChangesStored::WithOutcome;
                let taken =
                    std::mem::replace(&mut outcome.changes, Changes::Unreadable(String::new()));
                match taken {
                    // Stopped half-way: a view's changes are dropped whole,
                    // as the person asked for it to stop.
                    Changes::Pending(pending) if interrupted => {
                        if !pending.set.is_empty() {
                            result.push_str(
                                "\n[goat: none of this command's changes to the workspace were \
                                 kept: it was stopped before it finished. The workspace is as it \
                                 was before the command.]\n",
                            );
                        }
                        pending.discard();
                    }
                    Changes::Pending(pending) => {
                        let landed = router.settle(pending, command, args.raw, &rules);
                        result.push_str(&landed.note);
                        changes = landed.changes;
                        changes_stored = landed.stored;
                        if landed.refused {
                            status = CallStatus::Error;
                            // Failed part-way: not a refusal, a failure.
                            error_kind = Some(if landed.half_landed {
                                CallErrorKind::Io
                            } else {
                                CallErrorKind::PermissionDenied
                            });
                        }
                        refusals.extend(landed.refusals);
                    }
                    Changes::Applied(set) => {
                        // Landlock only: already in the workspace; what a
                        // view would have refused is said loudly.
                        let against: Vec<String> = set
                            .changes
                            .iter()
                            .filter(|c| c.after.exists())
                            .filter_map(|c| {
                                rules
                                    .writable_why(&c.path)
                                    .err()
                                    .map(|why| format!("{}: {why}", goat_gate::quoted(&c.path)))
                            })
                            .take(MAX_LISTED)
                            .collect();
                        if !against.is_empty() {
                            result.push_str(&format!(
                                "\n[goat: WARNING: Landlock-only containment could not stop \
                                 this command from making these, which a rule or protection \
                                 forbids; look at them before running git there:\n  {}]\n",
                                against.join("\n  ")
                            ));
                        }
                        changes = set.changes.iter().filter_map(file_change).collect();
                        if interrupted && !changes.is_empty() {
                            result.push_str(
                                "\n[goat: what this command changed before it was stopped is in \
                                 the workspace (Landlock-only containment applies changes as they \
                                 happen) and recorded: goat undo takes back what the snapshot \
                                 kept]\n",
                            );
                        }
                        if set.unkept > 0 {
                            result.push_str(&format!(
                                "\n[goat: {} changed or removed files were not in the snapshot \
                                 taken before the command (Landlock-only containment keeps at \
                                 most 64 MiB); goat undo cannot bring them back]\n",
                                set.unkept
                            ));
                        }
                    }
                    Changes::Unreadable(why) => {
                        result.push_str(&format!("\n[goat: {why}]\n"));
                    }
                }
                if outcome.exit_code() != Some(0)
                    && let Some(hint) = read_path_hint(&outcome.output.text, &tool.containment)
                {
                    result.push_str(&hint);
                }
                result.push_str(egress_note.as_deref().unwrap_or_default());
                CallOutcome {
                    status,
                    result,
                    error_kind,
                    decision: Some(decision),
                    decision_reason: Some(reason),
                    duration: outcome.duration,
                    exit_code: outcome.exit_code(),
                    changes,
                    changes_stored,
                    refusals,
                    hooks: Vec::new(),
                }
            }
            Err(e) => CallOutcome {
                status: CallStatus::Error,
                result: match e {
                    goat_command::CommandError::Interrupted => {
                        format!("cancelled with the turn: {e}")
                    }
                    _ => format!("{RUN_COMMAND} failed: {e}"),
                },
                error_kind: Some(match e {
                    goat_command::CommandError::Interrupted => CallErrorKind::Cancelled,
                    _ if e.is_invalid_arguments() => CallErrorKind::InvalidArguments,
                    _ => CallErrorKind::Io,
                }),
                decision: Some(decision),
                decision_reason: Some(reason),
                duration: Duration::ZERO,
                exit_code: None,
                changes: Vec::new(),
                changes_stored: goat_store::ChangesStored::WithOutcome,
                refusals: Vec::new(),
                hooks: Vec::new(),
            },
        })
    }
}

/// Whether commands can run here, and if not why: the tool is then not
/// offered.
pub fn command_support() -> Result<(), String> {
    goat_command::support().map_err(|e| e.0)
}

/// The containment commands get here under `mode`, and if none, why: the
/// tool is then not offered (a forced `namespace` that cannot work is
/// never run weaker).
pub fn command_containment(containment: &Containment) -> Result<Used, String> {
    goat_command::resolve(containment).map_err(|e| e.0)
}

/// Why no namespace view can be made for `containment`'s workspace, if
/// it cannot.
pub fn view_unavailable(containment: &Containment) -> Option<String> {
    goat_command::workspace_support(containment)
        .err()
        .map(|e| e.0)
}

/// [`Containment`] defaults a host starts from: the toolchain directories
/// under `home`, the network closed, no extra environment, the strongest
/// containment that works here.
pub fn default_containment(workspace: &Path, home: Option<&Path>) -> Containment {
    Containment {
        workspace: workspace.to_path_buf(),
        read_paths: home
            .map(goat_command::default_read_paths)
            .unwrap_or_default(),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: goat_command::PidsCgroup::WhereAvailable,
        mode: goat_command::ContainmentMode::Auto,
        home: home.map(Path::to_path_buf),
        layers_dir: None,
    }
}

/// Places under the home directory that hold keys and credentials: a
/// command that fails to read them gets no hint to grant them.
const SECRET_PLACES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".cargo",
    ".password-store",
    ".local/share/goat",
    ".config/goat",
];

/// Whether a change set was written to the store before landing.
#[derive(Debug)]
pub(crate) enum Journal {
    /// Written.
    Written,
    /// No store to write to (a router used alone): the changes go with the
    /// call's outcome.
    None,
    /// Writing failed: the set must not land.
    Failed(String),
}

/// Most refused or left-out paths a result lists; the rest are counted.
const MAX_LISTED: usize = 20;

/// A change as the store keeps it; `None` for what is never landed.
pub(crate) fn file_change(change: &PathChange) -> Option<FileChange> {
    let mut f = FileChange {
        path: change.path.clone(),
        ..FileChange::default()
    };
    match &change.before {
        Node::Absent => {}
        Node::File {
            mode,
            sha256,
            bytes,
            ..
        } => {
            f.before.clone_from(bytes);
            f.before_mode = Some(*mode);
            if bytes.is_none() {
                f.before_sha256 = Some(if sha256.is_empty() {
                    "unknown".to_owned()
                } else {
                    sha256.clone()
                });
            }
        }
        Node::Symlink(target) => {
            f.before_kind = EntryKind::Link;
            f.before = Some(target.clone());
        }
        Node::Dir(mode) => {
            f.before_kind = EntryKind::Dir;
            f.before_mode = Some(*mode);
        }
        Node::Special(_) => return None,
    }
    match &change.after {
        Node::Absent => {}
        Node::File {
            mode,
            sha256,
            bytes,
            ..
        } => {
            f.after_sha256 = Some(sha256.clone());
            f.after.clone_from(bytes);
            f.after_mode = Some(*mode);
        }
        Node::Symlink(target) => {
            f.after_kind = EntryKind::Link;
            f.after_sha256 = Some(crate::checkpoint::sha256_hex(target));
            f.after = Some(target.clone());
        }
        Node::Dir(mode) => {
            f.after_kind = EntryKind::Dir;
            f.after_mode = Some(*mode);
        }
        Node::Special(_) => return None,
    }
    Some(f)
}

/// When a failed command's output names a path under the home directory
/// that is not granted, one line naming the setting that grants it.
fn read_path_hint(output: &str, containment: &Containment) -> Option<String> {
    let home = containment.home.as_ref()?.to_str()?;
    let prefix = format!("{home}/");
    let start = output.find(&prefix)?;
    let rest = output.get(start..)?;
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ':' | ')' | ','))
        .unwrap_or(rest.len());
    let path = Path::new(rest.get(..end)?);
    if containment.read_paths.iter().any(|p| path.starts_with(p)) {
        return None;
    }
    // Never suggested for where keys and credentials are kept.
    let rel = path.strip_prefix(home).ok()?.to_str()?;
    if SECRET_PLACES.iter().any(|s| rel.starts_with(s)) || rel.contains("credential") {
        return None;
    }
    // The top directory under the home, which is what a toolchain keeps.
    let top = path
        .strip_prefix(home)
        .ok()?
        .components()
        .next()?
        .as_os_str()
        .to_str()?
        .to_owned();
    Some(format!(
        "\n[goat: the output names {} under the home directory, which commands cannot read; \
         if the command needs it, add \"~/{}\" to commands.read_paths]\n",
        goat_gate::quoted(&path.display().to_string()),
        top
    ))
}
