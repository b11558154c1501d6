//! The road itself, one for every kind of tool: parse, validate, mode,
//! gate, ask, remember, run. A kind of tool ([`Route`]) says only what it
//! must say differently: how its arguments are read and which schema they
//! meet, whether a call writes, what the gate is asked (and whether the
//! kind needs more than it: it can only narrow), what the person is asked
//! and for which paths a yes is remembered, and how the call runs. The
//! road checks the schema, refuses what the gate refused, and builds and
//! saves the rules itself. Every step that ends a
//! call ends it with the call's one outcome ([`Routed`]), naming what
//! refused it.

use goat_engine::ToolCall;
use goat_gate::{self as gate, Boundary, Decision, Evaluation};
use goat_sandbox::SandboxError;
use goat_store::{CallDecision, CallErrorKind, CallStatus, RefusedBy};
use serde_json::Value;

use super::{
    Allowed, AppToolRouter, ApprovalRequest, Routed, denied, denied_because, failed, unasked,
};
use crate::mode::{ApprovalMode, READ_ONLY_REASON};
use crate::schema;

/// A kind of tool's part of the road: where the kinds must differ.
/// Everything else is [`AppToolRouter::road`], the same for every kind.
pub(crate) trait Route {
    /// The call's arguments as this kind reads them.
    type Args<'c>;

    /// Checks, before anything relies on what the tool declares, that it
    /// is what it says (a plugin is compiled and its spec compared). `Err`
    /// is a host failure.
    fn prepare(&self, router: &AppToolRouter) -> Result<(), SandboxError> {
        let _ = router;
        Ok(())
    }

    /// The parsed arguments read as this kind needs them; or the call's
    /// end (arguments that do not fit, an unknown tool behind a call tool,
    /// an answer that needs no call).
    fn arguments<'c>(
        &self,
        router: &AppToolRouter,
        call: &ToolCall,
        args: &'c Value,
    ) -> Result<Self::Args<'c>, Routed>;

    /// What the road checks against which schema, under which name.
    fn checked<'a>(&'a self, call: &'a ToolCall, args: &'a Self::Args<'_>) -> Checked<'a>;

    /// Whether the call may write: read-only mode refuses it.
    fn writes(&self, args: &Self::Args<'_>) -> bool;

    /// The gate's evaluation of the call, from the kept-open database,
    /// and the boundary the call is held to if it runs.
    fn decide(
        &self,
        router: &AppToolRouter,
        args: &Self::Args<'_>,
    ) -> (Evaluation, Option<Boundary>);

    /// The gate's evaluation read for this kind, when the kind needs more
    /// than the gate (`None`: as the gate said). It can only narrow: the
    /// road never lets it lift a refusal or skip a question (a refusal may
    /// be reworded, a question refused or kept, an allow questioned).
    fn narrow(
        &self,
        router: &AppToolRouter,
        evaluation: &Evaluation,
        args: &Self::Args<'_>,
    ) -> Option<Verdict> {
        let _ = (router, evaluation, args);
        None
    }

    /// What the person is asked, and what a remembered yes would save.
    fn question(
        &self,
        router: &AppToolRouter,
        evaluation: &Evaluation,
        asked: &[String],
        args: &Self::Args<'_>,
    ) -> Question;

    /// Why nothing runs when the gate gave no boundary.
    fn unbounded(&self) -> &'static str {
        "denied: the permission rules could not be applied to the workspace"
    }

    /// Runs the call the road allowed (`granted`, for the record), held to
    /// `boundary`. `Err` is a host failure.
    fn run(
        &self,
        router: &mut AppToolRouter,
        call: &ToolCall,
        args: &Self::Args<'_>,
        granted: (CallDecision, String),
        boundary: Boundary,
    ) -> Result<Routed, SandboxError>;
}

/// Arguments and the schema they must meet, as the road checks them.
pub(crate) struct Checked<'a> {
    /// The tool, as a failure names it.
    pub(crate) name: &'a str,
    /// Its JSON Schema.
    pub(crate) parameters: &'a Value,
    /// The arguments the tool gets.
    pub(crate) value: &'a Value,
}

/// The gate's evaluation as a kind reads it.
pub(crate) enum Verdict {
    /// Runs.
    Allow,
    /// Ends here, with this outcome.
    Refuse(Routed),
    /// The person is asked about these paths (none: the whole call).
    Ask(Vec<String>),
}

/// A question for the person.
pub(crate) struct Question {
    /// The tool the person is asked about.
    pub(crate) tool: String,
    /// The question.
    pub(crate) prompt: String,
    /// The files the call changes, as they resolve on disk.
    pub(crate) paths: Vec<String>,
    /// The arguments shown.
    pub(crate) arguments: Value,
    /// The path patterns "session" and "always" save an allow rule for,
    /// for [`tool`](Self::tool) with [`access`](Self::access); `None`:
    /// nothing can be saved.
    pub(crate) remember: Option<Vec<String>>,
    /// The access the saved rules allow.
    pub(crate) access: gate::Access,
    /// The command line the saved rules are for (a command's).
    pub(crate) command: Option<String>,
    /// What "directory" saves instead (empty: not offered).
    pub(crate) directories: Vec<String>,
    /// Said after "no one is there to approve it": how to allow it.
    pub(crate) unasked_hint: String,
}

/// What the person's hooks said of a call, for its question.
struct HookWords<'a> {
    /// What a hook that asked said, shown with the question.
    asked: Option<&'a str>,
    /// What is said of a hook's allow when no one is there to approve.
    allowed: Option<&'a str>,
    /// Only a hook asked: the answer holds for this call alone.
    once_only: bool,
}

/// What the gate said, as a kind's [`Route::narrow`] may change it: a
/// kind never lifts a refusal (it may reword it), nor answers a question
/// itself (it may refuse it); an allow it may question or refuse.
fn narrowed(gate_said: Verdict, kind: Option<Verdict>) -> Verdict {
    match (gate_said, kind) {
        (said, None) => said,
        (Verdict::Refuse(_), Some(refused @ Verdict::Refuse(_))) => refused,
        (said @ Verdict::Refuse(_), Some(Verdict::Allow | Verdict::Ask(_))) => said,
        (said @ Verdict::Ask(_), Some(Verdict::Allow)) => said,
        (Verdict::Ask(_) | Verdict::Allow, Some(narrowed)) => narrowed,
    }
}

impl AppToolRouter {
    /// Takes a call down the road with `route`'s kind: each step either
    /// hands the next what it needs or ends the call with its outcome.
    pub(super) fn road<R: Route>(
        &mut self,
        route: &R,
        call: &ToolCall,
    ) -> Result<Routed, SandboxError> {
        route.prepare(self)?;
        let raw = match call.arguments.as_ref() {
            Ok(raw) => raw,
            Err(e) => {
                return Ok(failed(
                    CallErrorKind::InvalidArguments,
                    format!("invalid arguments for {}: {e}", call.name),
                ));
            }
        };
        let args = match route.arguments(self, call, raw) {
            Ok(args) => args,
            Err(routed) => return Ok(routed),
        };
        let checked = route.checked(call, &args);
        if let Err(why) = schema::validate(checked.parameters, checked.value) {
            return Ok(failed(
                CallErrorKind::InvalidArguments,
                format!("invalid arguments for {}: {why}", checked.name),
            ));
        }
        // The mode first: read-only refuses what would write whatever the
        // rules say.
        if self.mode() == ApprovalMode::ReadOnly && route.writes(&args) {
            return Ok(denied(
                RefusedBy::Mode,
                CallDecision::Deny,
                READ_ONLY_REASON.to_owned(),
            ));
        }
        let (evaluation, boundary) = route.decide(self, &args);
        let gate_said = match &evaluation.decision {
            Decision::Allow { .. } => Verdict::Allow,
            Decision::Deny(why) => Verdict::Refuse(denied_because(why, evaluation.reason())),
            Decision::Ask { asked } => Verdict::Ask(asked.clone()),
        };
        let verdict = narrowed(gate_said, route.narrow(self, &evaluation, &args));
        // The person's hooks, on what the rules let through, or refused
        // only for want of someone to ask (where a hook that answers allow
        // is told it is no approval): they narrow as a kind does, never
        // lifting a refusal or skipping a question.
        let unasked = |routed: &Routed| {
            routed
                .refusals
                .first()
                .is_some_and(|r| r.by == RefusedBy::NeedsApproval)
        };
        let verdict = match verdict {
            Verdict::Refuse(routed) if !unasked(&routed) => return Ok(routed),
            other => other,
        };
        let hooks =
            self.pre_tool_use_hooks((checked.name, checked.value, &call.id), boundary.as_ref());
        // A hook's ask keeps the gate's question as it was (its paths), so
        // what "session" or "always" saves is never widened by it.
        // A question only a hook raised is answered for this call alone: a
        // remembered yes would be a rule for the whole workspace, which the
        // rules never asked about.
        let only_the_hook_asks =
            matches!(verdict, Verdict::Allow) && matches!(hooks.verdict, Some(Verdict::Ask(_)));
        let hook_verdict = match (&verdict, hooks.verdict) {
            (Verdict::Ask(_), Some(Verdict::Ask(_))) => None,
            (_, said) => said,
        };
        let verdict = narrowed(verdict, hook_verdict);
        let granted = match verdict {
            Verdict::Allow => (CallDecision::Allow, evaluation.reason()),
            Verdict::Refuse(mut routed) => {
                if let Some(note) = hooks.allow_note.filter(|_| unasked(&routed)) {
                    routed.result.push_str(&note);
                    if let Some(reason) = routed.decision_reason.as_mut() {
                        reason.push_str(&note);
                    }
                }
                return Ok(routed);
            }
            Verdict::Ask(asked) => {
                let said = HookWords {
                    asked: hooks.asked.as_deref(),
                    allowed: hooks.allow_note.as_deref(),
                    once_only: only_the_hook_asks,
                };
                match self.ask(route, &evaluation, &asked, &args, &said) {
                    Ok(granted) => granted,
                    Err(routed) => return Ok(routed),
                }
            }
        };
        // The gate gives a boundary with every call it lets through;
        // without one, nothing runs.
        let Some(boundary) = boundary else {
            return Ok(denied(
                RefusedBy::Rule,
                CallDecision::Deny,
                route.unbounded().to_owned(),
            ));
        };
        let for_hooks = self.hooks.is_some().then(|| boundary.clone());
        let mut routed = route.run(self, call, &args, granted, boundary)?;
        if routed.status == CallStatus::Ok
            && let Some(boundary) = for_hooks
        {
            self.post_tool_use_hooks(
                (checked.name, checked.value, &call.id),
                &mut routed,
                boundary,
            );
        }
        Ok(routed)
    }

    /// Puts the route's question to the approver, and saves a "session"
    /// or "always" answer as the route's rules for exactly what was asked.
    /// `hooks`: what the person's hooks said of the call.
    fn ask<R: Route>(
        &mut self,
        route: &R,
        evaluation: &Evaluation,
        asked: &[String],
        args: &R::Args<'_>,
        hooks: &HookWords<'_>,
    ) -> Result<(CallDecision, String), Routed> {
        let mut question = route.question(self, evaluation, asked, args);
        if let Some(hook) = hooks.asked {
            question.prompt = format!("{} ({hook})", question.prompt);
        }
        if let Some(note) = hooks.allowed {
            question.unasked_hint.push_str(note);
        }
        if hooks.once_only {
            question.remember = None;
            question.directories.clear();
        }
        let can_remember = question.remember.is_some();
        let workspace = self.config().workspace.clone();
        let Some(answer) = self.approve_with(&ApprovalRequest {
            tool: &question.tool,
            prompt: &question.prompt,
            paths: &question.paths,
            arguments: &question.arguments,
            workspace: &workspace,
            can_remember,
            directories: &question.directories,
            details: &[],
        }) else {
            return Err(unasked(format!(
                "denied: {}; no one is there to approve it{}",
                question.prompt, question.unasked_hint
            )));
        };
        let allowed =
            Allowed::from_answer(answer, &self.approver_who(), &question.prompt, can_remember)?;
        let (Some(scope), Some(patterns)) =
            (allowed.scope(&self.config().session_id), question.remember)
        else {
            return Ok(allowed.granted(None));
        };
        let patterns = match allowed {
            Allowed::Session { directories: true } if !question.directories.is_empty() => {
                question.directories
            }
            Allowed::Once | Allowed::Session { .. } | Allowed::Always => patterns,
        };
        let rules = patterns
            .iter()
            .map(|pattern| {
                self.allow_rule(
                    &question.tool,
                    question.access,
                    scope.clone(),
                    pattern,
                    question.command.as_deref(),
                )
            })
            .collect();
        Ok(allowed.granted(Some(self.save_rules(rules))))
    }
}

#[cfg(test)]
mod tests {
    use goat_store::{CallDecision, RefusedBy};

    use super::{Verdict, narrowed};
    use crate::router::denied;

    fn refuse(why: &str) -> Verdict {
        Verdict::Refuse(denied(RefusedBy::Rule, CallDecision::Deny, why.to_owned()))
    }

    /// What a verdict is, as a row of the table reads it.
    fn said(v: &Verdict) -> String {
        match v {
            Verdict::Allow => "allow".to_owned(),
            Verdict::Ask(paths) => format!("ask {paths:?}"),
            Verdict::Refuse(routed) => format!("refuse {}", routed.result),
        }
    }

    #[test]
    fn a_kind_can_only_narrow_what_the_gate_said() {
        let ask = || Verdict::Ask(vec!["a.txt".to_owned()]);
        let rows: Vec<(Verdict, Option<Verdict>, &str)> = vec![
            (Verdict::Allow, None, "allow"),
            (ask(), None, "ask [\"a.txt\"]"),
            (refuse("gate"), None, "refuse gate"),
            // Never lifted: a refusal stays one, a question stays asked.
            (refuse("gate"), Some(Verdict::Allow), "refuse gate"),
            (refuse("gate"), Some(ask()), "refuse gate"),
            (ask(), Some(Verdict::Allow), "ask [\"a.txt\"]"),
            // Narrowed: reworded, refused, questioned.
            (refuse("gate"), Some(refuse("kind")), "refuse kind"),
            (ask(), Some(refuse("kind")), "refuse kind"),
            (ask(), Some(Verdict::Ask(Vec::new())), "ask []"),
            (Verdict::Allow, Some(Verdict::Ask(Vec::new())), "ask []"),
            (Verdict::Allow, Some(refuse("kind")), "refuse kind"),
        ];
        for (gate, kind, want) in rows {
            let row = format!("{} / {:?}", said(&gate), kind.as_ref().map(said));
            assert_eq!(said(&narrowed(gate, kind)), want, "{row}");
        }
    }
}
