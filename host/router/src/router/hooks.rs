//! The person's hooks on the road (issue 41, ADR-0098): `pre_tool_use`
//! hooks run after the rules and the mode let a call through, before the
//! person is asked, for every kind of tool. What they answer goes through
//! [`super::road`]'s narrowing like a kind's own reading of the gate: a
//! deny refuses, an ask asks, an allow changes nothing.

use goat_command::Changes;
use goat_gate::Boundary;
use goat_hooks::{Answer, HookRun, PostToolUse, PreToolUse, Verdict as HookVerdict};
use goat_store::{CallDecision, ChangesStored, HookRan, Refusal, RefusedBy};
use serde_json::{Value, json};

use super::{AppToolRouter, Routed, Verdict, denied};
use crate::command::{BoundaryRules, Journal, file_change};

/// The most of a call's result a `post_tool_use` hook is given.
const MAX_RESPONSE_CHARS: usize = 16 * 1024;

/// What the hooks made of one call, for the road.
pub(crate) struct HookSaid {
    /// Their verdict as the road narrows with it (`None`: no objection).
    pub(crate) verdict: Option<Verdict>,
    /// Said to the person with a question a hook asked.
    pub(crate) asked: Option<String>,
    /// Said after a refusal for want of an approval when a hook answered
    /// allow: a hook's allow is never one.
    pub(crate) allow_note: Option<String>,
}

impl AppToolRouter {
    /// Runs the `pre_tool_use` hooks that match `tool` (none: nothing to
    /// say) and keeps their runs for the call's record.
    pub(crate) fn pre_tool_use_hooks(
        &mut self,
        (tool, input, call_id): (&str, &Value, &str),
        boundary: Option<&Boundary>,
    ) -> HookSaid {
        let none = HookSaid {
            verdict: None,
            asked: None,
            allow_note: None,
        };
        let Some(hooks) = self.hooks.clone() else {
            return none;
        };
        let session_id = self.config().session_id.clone();
        let (alias, file_path) = self.hook_names(tool, input);
        // Without a boundary (a call refused for want of an approval), the
        // hook sees none of the workspace.
        let rules = boundary.cloned().map(BoundaryRules);
        let runs = hooks.pre_tool_use(
            &PreToolUse {
                session_id: &session_id,
                tool,
                tool_input: input,
                tool_use_id: call_id,
                mode: self.mode().name(),
                alias: alias.as_deref(),
                file_path: file_path.as_deref(),
                rules: rules
                    .as_ref()
                    .map(|r| r as &dyn goat_command::WorkspaceRules),
            },
            Some(self.interrupt()),
        );
        self.hook_runs.extend(runs.iter().map(ran));
        let allow_note = runs
            .iter()
            .find(|r| matches!(r.answer, Answer::Allow(_)))
            .map(|r| {
                format!(
                    " (the hook {} answered allow; a hook's allow is never an approval: hooks \
                     can only narrow what the rules allow)",
                    goat_gate::quoted(&r.name)
                )
            });
        match HookVerdict::of(&runs) {
            HookVerdict::Go => HookSaid { allow_note, ..none },
            // A hook's ask is for the person: an MCP client of `goat mcp
            // serve` answering it would let another agent approve what the
            // person's hook held back.
            HookVerdict::Ask { hook, reason } if self.approver_stands_in() => {
                let mut routed = denied(
                    RefusedBy::Hook,
                    CallDecision::Deny,
                    format!(
                        "denied: {}; the person is not here to be asked (an MCP client is not \
                         asked in their place)",
                        framed(&hook, &reason, "asks the person")
                    ),
                );
                if let Some(refusal) = routed.refusals.first_mut() {
                    refusal.target = Some(hook);
                }
                HookSaid {
                    verdict: Some(Verdict::Refuse(routed)),
                    asked: None,
                    allow_note,
                }
            }
            HookVerdict::Ask { hook, reason } => HookSaid {
                verdict: Some(Verdict::Ask(Vec::new())),
                asked: Some(framed(&hook, &reason, "asks")),
                allow_note,
            },
            HookVerdict::Deny { hook, reason } => {
                let mut routed = denied(
                    RefusedBy::Hook,
                    CallDecision::Deny,
                    format!(
                        "denied: {}. This is the person's hook speaking, not GOAT and not the \
                         rules; do not try to get around it.",
                        framed(&hook, &reason, "denied it")
                    ),
                );
                if let Some(refusal) = routed.refusals.first_mut() {
                    refusal.target = Some(hook);
                }
                HookSaid {
                    verdict: Some(Verdict::Refuse(routed)),
                    asked: None,
                    allow_note,
                }
            }
        }
    }

    /// Runs the `post_tool_use` hooks that match a call that ran and
    /// succeeded, each with the workspace writable as the call's
    /// `boundary` lets it be written. What a hook changes lands as a
    /// command's change set does (inspected, journaled, landed whole or
    /// not at all), recorded with the call, so `goat undo` takes it back
    /// with the call's own changes; what a hook that failed changed is
    /// dropped.
    pub(crate) fn post_tool_use_hooks(
        &mut self,
        (tool, input, call_id): (&str, &Value, &str),
        routed: &mut Routed,
        boundary: Boundary,
    ) {
        let Some(hooks) = self.hooks.clone() else {
            return;
        };
        let session_id = self.config().session_id.clone();
        let mode = self.mode().name();
        let (alias, file_path) = self.hook_names(tool, input);
        let response = json!({
            "status": routed.status.as_str(),
            "result": routed.result.chars().take(MAX_RESPONSE_CHARS).collect::<String>(),
            "files_changed": routed.changes.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
        });
        let rules = BoundaryRules(boundary);
        let interrupt = self.interrupt().clone();
        let mut after = |router: &mut Self, run: &HookRun, changes: Option<Changes>| {
            router.hook_runs.push(ran(run));
            let name = goat_gate::quoted(&run.name);
            if let Answer::Failed(why) = &run.answer {
                let kept = match changes {
                    // Landlock only: what it wrote is in the workspace
                    // already; recorded with the call, undone with it.
                    Some(Changes::Applied(set)) if !set.changes.is_empty() => {
                        routed
                            .changes
                            .extend(set.changes.iter().filter_map(file_change));
                        "what it changed is in the workspace (Landlock-only containment applies \
                         changes as they happen) and recorded with the call; goat undo takes it \
                         back"
                    }
                    other => {
                        goat_hooks::drop_changes(other);
                        "nothing it changed was kept"
                    }
                };
                let did = if run.ran {
                    "ran after the call and failed"
                } else {
                    "did not run"
                };
                routed.result.push_str(&format!(
                    "\n[goat: the hook {name} {did}; {kept}: {}]\n",
                    goat_gate::quoted(why)
                ));
                routed.refusals.push(Refusal::new(
                    RefusedBy::Hook,
                    Some(run.name.clone()),
                    format!("the hook failed after the call, and its changes were dropped: {why}"),
                ));
                return;
            }
            router.land_hook_changes(&run.name, input, changes, routed, &rules);
            if let Answer::Deny(reason) | Answer::Halt(reason) | Answer::Ask(reason) = &run.answer {
                routed.result.push_str(&format!(
                    "\n[goat: {}. This is the person's hook speaking, not GOAT.]\n",
                    framed(&run.name, reason, "objected after the call")
                ));
                routed.refusals.push(Refusal::new(
                    RefusedBy::Hook,
                    Some(run.name.clone()),
                    reason.clone(),
                ));
            }
        };
        let call = PreToolUse {
            session_id: &session_id,
            tool,
            tool_input: input,
            tool_use_id: call_id,
            mode,
            alias: alias.as_deref(),
            file_path: file_path.as_deref(),
            rules: None,
        };
        // The hooks run one after the other, each landing before the next
        // starts.
        hooks.post_tool_use(
            &PostToolUse {
                call,
                tool_response: &response,
            },
            &rules,
            Some(&interrupt),
            &mut |run, changes| after(self, run, changes),
        );
    }

    /// Lands what a `post_tool_use` hook changed, after the call's own
    /// changes are on record (so undo finds them oldest first).
    fn land_hook_changes(
        &mut self,
        hook: &str,
        input: &Value,
        changes: Option<Changes>,
        routed: &mut Routed,
        rules: &BoundaryRules,
    ) {
        match changes {
            None => {}
            Some(Changes::Pending(pending)) if pending.set.is_empty() => pending.discard(),
            Some(Changes::Pending(pending)) => {
                self.record_call_changes_first(routed);
                let settled = self.settle(pending, &format!("hook {hook}"), input, rules);
                routed.result.push_str(&format!(
                    "\n[goat: the hook {} ran after the call:]{}",
                    goat_gate::quoted(hook),
                    settled.note
                ));
                routed.changes.extend(settled.changes);
                if settled.stored == ChangesStored::BeforeLanding {
                    routed.changes_stored = ChangesStored::BeforeLanding;
                }
                routed.refusals.extend(settled.refusals);
            }
            Some(Changes::Applied(set)) => {
                // Landlock only: already in the workspace, after the
                // call's own changes, recorded with them.
                routed
                    .changes
                    .extend(set.changes.iter().filter_map(file_change));
                if set.unkept > 0 {
                    routed.result.push_str(&format!(
                        "\n[goat: the hook {} changed or removed {} files that were not in the \
                         snapshot taken before it (Landlock-only containment keeps at most 64 \
                         MiB); goat undo cannot bring them back]\n",
                        goat_gate::quoted(hook),
                        set.unkept
                    ));
                }
            }
            Some(Changes::Unreadable(why)) => routed.result.push_str(&format!(
                "\n[goat: the hook {} ran after the call: {why}]\n",
                goat_gate::quoted(hook)
            )),
        }
    }

    /// Writes the call's own changes to the store now, if they were to go
    /// with its outcome: a hook's change set is journaled as it lands, and
    /// must come after them.
    fn record_call_changes_first(&mut self, routed: &mut Routed) {
        if routed.changes_stored != ChangesStored::WithOutcome || routed.changes.is_empty() {
            return;
        }
        if let Journal::Written = self.journal(&routed.changes) {
            self.mark_landed();
            routed.changes_stored = ChangesStored::BeforeLanding;
        }
    }

    /// The other name `tool` matches by (an MCP tool's Claude Code name),
    /// and a Pen tool's `path` as GOAT resolves it, absolute.
    fn hook_names(&self, tool: &str, input: &Value) -> (Option<String>, Option<String>) {
        let alias = self.is_external(tool).then(|| format!("mcp__{tool}"));
        let builtin = self.is_builtin(tool);
        // The file it writes: `move_file`'s destination, else its `path`.
        let file_path = input
            .get(if tool == "move_file" { "to" } else { "path" })
            .and_then(Value::as_str)
            .filter(|_| builtin)
            .and_then(|p| goat_workpath::resolve(p).ok())
            .map(|p| {
                self.config()
                    .workspace
                    .join(p.as_str())
                    .display()
                    .to_string()
            });
        (alias, file_path)
    }

    /// The hook runs kept for the call being routed, taken.
    pub(crate) fn take_hook_runs(&mut self) -> Vec<HookRan> {
        std::mem::take(&mut self.hook_runs)
    }
}

/// A hook's words, escaped and framed as the hook's.
fn framed(hook: &str, reason: &str, did: &str) -> String {
    if reason.is_empty() {
        format!("the hook {} {did}", goat_gate::quoted(hook))
    } else {
        format!(
            "the hook {} {did}, saying {}",
            goat_gate::quoted(hook),
            goat_gate::quoted(reason)
        )
    }
}

/// A run as the store keeps it.
pub(crate) fn ran(run: &HookRun) -> HookRan {
    HookRan {
        hook: run.name.clone(),
        event: run.event.name().to_owned(),
        verdict: run.answer.verdict().to_owned(),
        reason: run.answer.reason().to_owned(),
        duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
    }
}
