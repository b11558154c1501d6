//! A component's kind of road: GOAT's built-in Pen tools and the person's
//! plugins. The gate is asked about the paths the tool's declared path
//! fields name, with the access the tool declares; a remembered yes saves
//! a rule for exactly those paths (or their directories); the call runs in
//! the sandbox, fenced on every file it reaches, and what it changed is
//! checkpointed for undo.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use goat_engine::ToolCall;
use goat_gate::{self as gate, Boundary, Evaluation, GateRequest, WritePolicy};
use goat_sandbox::{Access, Pen, SandboxError, Tool, ToolKind};
use goat_store::{CallDecision, CallStatus, Refusal, RefusedBy};
use serde_json::Value;

use super::road::{Checked, Question, Route};
use super::{AppToolRouter, Routed, directory_pattern, failed, failure_kind};
use crate::mode::ApprovalMode;
use crate::{checkpoint, egress};

/// The road's part for a component (built-in or plugin).
pub(crate) struct PenRoute<'t>(pub(crate) &'t Tool);

/// A component call's arguments, with the paths its declared path fields
/// name: only those reach the gate, nothing else in the arguments can
/// sway it.
pub(crate) struct PenArgs<'c> {
    raw: &'c Value,
    paths: Vec<&'c str>,
}

impl PenRoute<'_> {
    /// The gate's access for what the tool declares.
    fn access(&self) -> gate::Access {
        match self.0.spec().access {
            Access::ReadWrite => gate::Access::Write,
            Access::Read | Access::None => gate::Access::Read,
        }
    }
}

impl Route for PenRoute<'_> {
    type Args<'c> = PenArgs<'c>;

    /// Compiled and checked before its spec is relied on: a plugin's spec
    /// recorded at add (or a built-in's) that is not what its component
    /// declares ends here, before the schema check, the gate and the
    /// person see it, and nothing is asked or remembered.
    fn prepare(&self, router: &AppToolRouter) -> Result<(), SandboxError> {
        router.sandbox().prepare(self.0)
    }

    fn arguments<'c>(
        &self,
        _: &AppToolRouter,
        _: &ToolCall,
        raw: &'c Value,
    ) -> Result<PenArgs<'c>, Routed> {
        let paths = self
            .0
            .spec()
            .path_fields
            .iter()
            .filter_map(|f| raw.get(f).and_then(Value::as_str))
            .collect();
        Ok(PenArgs { raw, paths })
    }

    fn checked<'a>(&'a self, call: &'a ToolCall, args: &'a PenArgs<'_>) -> Checked<'a> {
        Checked {
            name: &call.name,
            parameters: &self.0.spec().parameters,
            value: args.raw,
        }
    }

    fn writes(&self, _: &PenArgs<'_>) -> bool {
        self.access() == gate::Access::Write
    }

    fn decide(&self, router: &AppToolRouter, args: &PenArgs<'_>) -> (Evaluation, Option<Boundary>) {
        let config = router.config();
        let name = &self.0.spec().name;
        // Accept-edits answers "allow" where the gate would ask, for the
        // built-in file tools whose changes undo can put back (a plugin
        // that writes is still asked), and the gate's deny rules and
        // protected paths still win.
        let writes = match router.mode() {
            ApprovalMode::AcceptEdits if checkpoint::checkpointed(name) => WritePolicy::AllowAll,
            ApprovalMode::AcceptEdits | ApprovalMode::Ask | ApprovalMode::ReadOnly => config.writes,
        };
        router.decide(&GateRequest {
            session_id: &config.session_id,
            workspace: config.workspace.to_str(),
            tool: name,
            access: self.access(),
            paths: &args.paths,
            interactive: config.interactive,
            writes,
            now: gate::now(),
        })
    }

    fn question(
        &self,
        router: &AppToolRouter,
        evaluation: &Evaluation,
        asked: &[String],
        args: &PenArgs<'_>,
    ) -> Question {
        let mut prompt = evaluation.question();
        // The gate has resolved these already, or it would not ask. The
        // person is shown the file that will change: where a name is a
        // link, the file it leads to.
        let lexical: Vec<String> = args
            .paths
            .iter()
            .filter_map(|raw| gate::canonical_path(raw).ok())
            .collect();
        let resolved: Vec<String> = lexical.iter().map(|p| on_disk(router, p)).collect();
        for (name, file) in lexical.iter().zip(&resolved) {
            if name != file {
                prompt.push_str(&format!(
                    " ('{name}' is a link: the file written is '{file}')"
                ));
            }
        }
        // What "session" and "always" would save: exactly the paths the
        // person is asked about (others are allowed by rules of their own),
        // in this workspace. A call naming no path is about the whole
        // workspace, and the question says so.
        let remember: Option<Vec<String>> = if asked.is_empty() {
            Some(vec![".".to_owned()])
        } else {
            asked.iter().map(|path| gate::exact_pattern(path)).collect()
        };
        let remember = remember.filter(|_| router.config().workspace.to_str().is_some());
        // What "directory" would save: each asked path's directory, offered
        // only when every one has a directory below the root.
        let directories = match &remember {
            Some(_) if !asked.is_empty() => asked
                .iter()
                .map(|path| directory_pattern(path))
                .collect::<Option<Vec<String>>>()
                .unwrap_or_default(),
            Some(_) | None => Vec::new(),
        };
        Question {
            tool: self.0.spec().name.clone(),
            prompt,
            paths: resolved,
            arguments: args.raw.clone(),
            remember,
            access: self.access(),
            command: None,
            directories,
            unasked_hint: String::new(),
        }
    }

    fn unbounded(&self) -> &'static str {
        "denied: the permission rules could not be applied to the files this call reaches"
    }

    /// Runs a call the gate allowed, with exactly the access the tool
    /// declares (the sandbox never gives more), held to `boundary` on
    /// every file it reaches.
    fn run(
        &self,
        router: &mut AppToolRouter,
        call: &ToolCall,
        args: &PenArgs<'_>,
        (decision, reason): (CallDecision, String),
        boundary: Boundary,
    ) -> Result<Routed, SandboxError> {
        let tool = self.0;
        let workspace = &router.config().workspace;
        // A plugin that writes: what it changes is kept as it writes it,
        // since GOAT cannot know its files before it runs.
        let keeper = (tool.spec().access == Access::ReadWrite
            && !checkpoint::checkpointed(&call.name))
        .then(|| checkpoint::Keeper::new(workspace))
        .flatten();
        let policy = Arc::new(GatePolicy::new(boundary, keeper));
        let mut pen = Pen::new(workspace, tool.spec().access)?.with_policy(policy.clone());
        // A plugin that can send `wasi:http` requests sends them through a
        // proxy allowing only the hosts the person granted it (none: every
        // request refused, and recorded).
        let egress = match plugin_egress(tool) {
            Ok(egress) => egress,
            Err(why) => {
                return Ok(Routed {
                    decision: Some(decision),
                    decision_reason: Some(reason),
                    ..failed(
                        goat_store::CallErrorKind::Denied,
                        format!(
                            "{} was not run: its granted hosts are not usable: {why}",
                            call.name
                        ),
                    )
                });
            }
        };
        if let Some(egress) = &egress {
            pen = pen.with_http_egress(egress.clone());
        }
        // ADR-0073: what the files it will change hold now, taken after the
        // gate allowed the call and before it runs; a file GOAT could not
        // give back stops it here.
        let checkpoint = match checkpoint::capture(workspace, &call.name, args.raw) {
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
        let outcome = router.sandbox().call(tool, &args.raw.to_string(), &pen);
        let duration = started.elapsed();
        // What the proxy decided, recorded against the call whatever it
        // returned: a refused request is a refusal in its outcome.
        let mut refusals = Vec::new();
        let egress_note = egress.and_then(|egress| {
            let over = egress.over_limit();
            let note = egress.finish().map(|served| {
                let records = egress::records(&served);
                router.record_egress(&records);
                refusals.extend(egress::refusals(&records));
                egress::refusals_note(&served, egress::PLUGIN_HOSTS, "this plugin")
            });
            match over {
                Some(over) => {
                    let said = format!("{}\n[goat: {}]\n", note.unwrap_or_default(), over.reason);
                    refusals.push(over);
                    Some(said)
                }
                None => note,
            }
        });
        let (status, mut result, error_kind) = match outcome? {
            Ok(text) => (CallStatus::Ok, text, None),
            Err(failure) => (
                CallStatus::Error,
                format!("{} failed: {failure}", call.name),
                Some(failure_kind(&failure)),
            ),
        };
        if let Some(note) = egress_note {
            result.push_str(&note);
        }
        refusals.extend(policy.refusals());
        // A built-in changes nothing unless it succeeded; a plugin that
        // failed half-way may have, and what it changed is kept too.
        let changes = match (status, checkpoint, policy.kept()) {
            (_, _, Some(kept)) => kept,
            (CallStatus::Ok, Some(checkpoint), None) => checkpoint.finish(),
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
            refusals,
            hooks: Vec::new(),
        })
    }
}

/// The way out for a plugin that imports `wasi:http`'s outgoing handler:
/// a proxy for the hosts granted to it. `None` for every other tool (its
/// requests, if it could make any, would be refused in the sandbox).
fn plugin_egress(tool: &Tool) -> Result<Option<Arc<egress::PluginEgress>>, String> {
    if tool.kind() != ToolKind::Plugin || !tool.imports_interface("wasi:http/outgoing-handler") {
        return Ok(None);
    }
    egress::PluginEgress::new(&tool.grants().hosts).map(|e| Some(Arc::new(e)))
}

/// The workspace path `path` (canonical, lexical) leads to on disk,
/// following links as the tool will: the file itself when it exists, else
/// its directory's target and its name. `path` itself when it cannot be
/// resolved inside the workspace (the tool will then fail).
fn on_disk(router: &AppToolRouter, path: &str) -> String {
    let Ok(root) = router.config().workspace.canonicalize() else {
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

/// The gate's [`Boundary`] as the sandbox asks it, on resolved paths,
/// keeping every write it refused: the fence's refusals reach the call's
/// outcome, named by the file the call actually reached.
struct GatePolicy {
    boundary: Boundary,
    refused: Mutex<Vec<Refusal>>,
    /// A plugin's checkpoint, kept as it writes.
    keeper: Mutex<Option<checkpoint::Keeper>>,
}

impl GatePolicy {
    fn new(boundary: Boundary, keeper: Option<checkpoint::Keeper>) -> Self {
        Self {
            boundary,
            refused: Mutex::new(Vec::new()),
            keeper: Mutex::new(keeper),
        }
    }

    /// What a plugin changed, once the call has ended; `None` for a tool
    /// checkpointed before it runs.
    fn kept(&self) -> Option<Vec<goat_store::FileChange>> {
        self.keeper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .map(checkpoint::Keeper::finish)
    }

    /// Records a refusal of `path`, once per file.
    fn refuse(&self, by: RefusedBy, path: &str, reason: &str) {
        let mut refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !refused.iter().any(|r| r.target.as_deref() == Some(path)) {
            refused.push(Refusal::new(by, Some(path.to_owned()), reason.to_owned()));
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
            self.refuse(by, path, &refusal.reason);
            refusal.reason
        })?;
        // Allowed: kept before the change, or refused if it cannot be.
        let mut keeper = self
            .keeper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match keeper.as_mut().map(|k| k.keep(path)) {
            Some(Err(why)) => {
                self.refuse(RefusedBy::Limit, path, &why);
                Err(why)
            }
            Some(Ok(())) | None => Ok(()),
        }
    }

    fn governs_below(&self, dir: &str) -> bool {
        // While a plugin's writes are kept, no directory is renamed: the
        // tree would move what was kept under names it does not cover.
        self.boundary.governs_below(dir)
            || self
                .keeper
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_some()
    }

    fn hides_anything(&self) -> bool {
        self.boundary.hides_anything()
    }

    fn hidden_roots(&self) -> Vec<String> {
        self.boundary.hidden_roots()
    }
}
