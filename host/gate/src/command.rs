//! Command rules: whether the `run_command` tool may run one shell command
//! line, decided like a write (deny wins, asked at a terminal, denied
//! without one unless `--allow-commands` or a rule allows it).
//!
//! A command rule names a command or a prefix of commands (`cargo test`)
//! in [`Rule::command`]. It matches a command that is the prefix, or that
//! continues it after a space (`cargo test --release`), never one that
//! merely starts with the same letters (`cargo testx`).
//!
//! - A **deny** prefix is looked for at the start of every simple command
//!   in the line (split at `;`, `&`, `|`, newlines, `(`, `)`, backquotes and
//!   `$(`), so `make && git push` meets a deny on `git push`.
//! - An **allow** prefix only matches a line with none of those characters
//!   nor redirections: allowing `cargo test` must not allow
//!   `cargo test; curl ... | sh`. A line exactly equal to an allow rule is
//!   allowed whatever it holds (a person's "always" saves the exact line).
//!
//! # Security
//!
//! Prefixes are a guard against the model running what the person did not
//! mean to allow, not a boundary: `sh -c 'git push'`, `eval`, a script in
//! the workspace or an alias can run anything the sandbox lets a command
//! do. The boundary is the sandbox (`goat-command`).

use std::path::Path;

use crate::Boundary;
use crate::db::{DEFAULT_BUSY_TIMEOUT, PermissionDb};
use crate::decide::{
    Decision, Denial, Evaluation, GateRequest, Grant, GrantedBy, Interactive, WritePolicy,
};
use crate::path::quoted;
use crate::rule::{Access, Effect, Rule};

/// The tool's name, which command rules are about.
pub const COMMAND_TOOL: &str = "run_command";

/// Longest command or prefix a rule may hold.
pub const MAX_COMMAND_BYTES: usize = 4096;

/// Characters that join or redirect commands: an allow rule never matches
/// a line holding one.
const CONTROL: &[char] = &[';', '&', '|', '\n', '\r', '(', ')', '`', '<', '>', '$'];

/// Whether the person allowed commands no rule decides (`--allow-commands`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandPolicy {
    /// Ask when interactive, deny otherwise.
    Default,
    /// Allow them. Deny rules still win.
    AllowAll,
}

/// One command to decide.
#[derive(Clone, Copy, Debug)]
pub struct CommandCall<'a> {
    /// The session making the call.
    pub session_id: &'a str,
    /// The workspace's canonical path (`None` when not UTF-8).
    pub workspace: Option<&'a str>,
    /// The command line as the model wrote it.
    pub command: &'a str,
    /// Whether someone can answer an approval question.
    pub interactive: Interactive,
    /// What to do with commands no rule decides.
    pub policy: CommandPolicy,
    /// Now, in unix seconds.
    pub now: i64,
}

impl CommandCall<'_> {
    /// The same call as a path request, for the workspace's [`Boundary`].
    fn as_request(&self) -> GateRequest<'_> {
        GateRequest {
            session_id: self.session_id,
            workspace: self.workspace,
            tool: COMMAND_TOOL,
            access: Access::Write,
            paths: &[],
            interactive: self.interactive,
            writes: WritePolicy::Default,
            now: self.now,
        }
    }
}

/// Refuses a command or prefix no rule should hold: empty, too long, only
/// spaces, or the bare `*` (which would mean everything).
pub fn check_prefix(command: &str) -> Result<(), String> {
    let trimmed = command.trim();
    if trimmed.is_empty() {
        return Err("the command is empty".to_owned());
    }
    if trimmed == "*" || trimmed.chars().all(|c| c == '*' || c.is_whitespace()) {
        return Err(
            "'*' is not a command; name the command or its prefix (for example 'cargo test')"
                .to_owned(),
        );
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(format!(
            "the command is longer than {MAX_COMMAND_BYTES} bytes"
        ));
    }
    if command.contains('\0') {
        return Err("the command contains a NUL byte".to_owned());
    }
    Ok(())
}

/// Whether `command` is `prefix` or continues it after whitespace.
fn starts_with_words(command: &str, prefix: &str) -> bool {
    let prefix = prefix.trim();
    command
        .trim_start()
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// The simple commands of a line, split at every control character.
fn segments(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(CONTROL)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn rule_in_force(rule: &Rule, call: &CommandCall<'_>) -> bool {
    rule.command.is_some()
        && rule.tool.as_deref().is_none_or(|tool| tool == COMMAND_TOOL)
        && rule.is_in_force(call.session_id, call.workspace, call.now)
}

/// Decides `call` against `rules`: the whole command policy, with no I/O.
pub fn decide_command_with_rules(rules: &[Rule], call: &CommandCall<'_>) -> Evaluation {
    let evaluation = |decision| Evaluation {
        tool: COMMAND_TOOL.to_owned(),
        access: Access::Write,
        decision,
    };
    let active: Vec<&Rule> = rules.iter().filter(|r| rule_in_force(r, call)).collect();
    let prefix = |rule: &Rule| rule.command.clone().unwrap_or_default();
    if let Some(rule) = active
        .iter()
        .filter(|r| r.effect == Effect::Deny)
        .filter(|r| segments(call.command).any(|s| starts_with_words(s, &prefix(r))))
        .min_by_key(|r| r.id)
    {
        return evaluation(Decision::Deny(Denial::Rule {
            path: None,
            rule: (*rule).clone(),
        }));
    }
    let simple = !call.command.contains(CONTROL);
    if let Some(rule) = active
        .iter()
        .filter(|r| r.effect == Effect::Allow)
        .filter(|r| {
            // A line equal to the rule is allowed whatever it holds: that is
            // how a person's "always" is saved. Only a prefix needs a
            // simple line, so that it cannot carry a second command along.
            call.command.trim() == prefix(r).trim()
                || (simple && starts_with_words(call.command, &prefix(r)))
        })
        .min_by_key(|r| r.id)
    {
        return evaluation(Decision::Allow {
            grants: vec![Grant {
                path: None,
                by: GrantedBy::Rule((*rule).clone()),
            }],
        });
    }
    evaluation(match (call.policy, call.interactive) {
        (CommandPolicy::AllowAll, _) => Decision::Allow {
            grants: vec![Grant {
                path: None,
                by: GrantedBy::AllowCommands,
            }],
        },
        (CommandPolicy::Default, Interactive::Yes) => Decision::Ask { asked: Vec::new() },
        (CommandPolicy::Default, Interactive::No) => Decision::Deny(Denial::CommandNeedsApproval {
            command: call.command.to_owned(),
        }),
    })
}

/// Decides `call` against the rules in the database at `db_path`, and
/// compiles the workspace [`Boundary`] the command is held to, from one
/// reading of the rules. Fails closed, as [`crate::decide`] does.
pub fn decide_command(db_path: &Path, call: &CommandCall<'_>) -> (Evaluation, Option<Boundary>) {
    match PermissionDb::open_with_timeout(db_path, DEFAULT_BUSY_TIMEOUT).and_then(|db| db.list()) {
        Ok(rules) => decide_command_with_boundary(&rules, call),
        Err(err) => (
            command_unavailable(err.to_string(), err.is_retryable()),
            None,
        ),
    }
}

/// A command decision from `rules`, with the boundary its filesystem is
/// held to when it may run: [`decide_command`]'s and the kept-open
/// [`GateHandle`](crate::GateHandle)'s one step.
pub(crate) fn decide_command_with_boundary(
    rules: &[Rule],
    call: &CommandCall<'_>,
) -> (Evaluation, Option<Boundary>) {
    let evaluation = decide_command_with_rules(rules, call);
    if evaluation.is_deny() {
        return (evaluation, None);
    }
    match Boundary::compile(rules, &call.as_request()) {
        Ok(boundary) => (evaluation, Some(boundary)),
        Err(refusal) => (command_unavailable(refusal.0, false), None),
    }
}

/// A command decision when the rules cannot be read: denied, saying why.
pub(crate) fn command_unavailable(error: String, retryable: bool) -> Evaluation {
    Evaluation {
        tool: COMMAND_TOOL.to_owned(),
        access: Access::Write,
        decision: Decision::Deny(Denial::Unavailable { error, retryable }),
    }
}

/// How a command-needs-approval denial reads.
pub(crate) fn needs_approval_reason(command: &str) -> String {
    let suggested = command
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "denied: running {} needs approval and no one is at a terminal to give it; the user can \
         allow it with `goat permissions allow {COMMAND_TOOL} --command {}` or run with \
         --allow-commands",
        quoted(command),
        quoted(&suggested)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::Scope;

    fn rule(id: i64, effect: Effect, command: &str) -> Rule {
        Rule {
            id,
            tool: Some(COMMAND_TOOL.to_owned()),
            pattern: "**".to_owned(),
            access: Access::Write,
            effect,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 0,
            expires_at: None,
            command: Some(command.to_owned()),
        }
    }

    fn decide(
        rules: &[Rule],
        command: &str,
        interactive: Interactive,
        policy: CommandPolicy,
    ) -> String {
        let e = decide_command_with_rules(
            rules,
            &CommandCall {
                session_id: "s",
                workspace: Some("/w"),
                command,
                interactive,
                policy,
                now: 1,
            },
        );
        match e.decision {
            Decision::Allow { .. } => "allow".to_owned(),
            Decision::Ask { .. } => "ask".to_owned(),
            Decision::Deny(Denial::Rule { rule, .. }) => format!("deny #{}", rule.id),
            Decision::Deny(_) => "deny".to_owned(),
        }
    }

    #[test]
    fn the_command_policy_as_a_table() {
        use CommandPolicy::{AllowAll, Default};
        use Interactive::{No, Yes};
        let rules = [
            rule(1, Effect::Allow, "cargo test"),
            rule(2, Effect::Deny, "git push"),
            rule(3, Effect::Allow, "git"),
            rule(4, Effect::Allow, "make > log.txt"),
        ];
        for (command, interactive, policy, want) in [
            ("cargo test", No, Default, "allow"),
            ("cargo test --release", No, Default, "allow"),
            ("  cargo test -p x", No, Default, "allow"),
            ("cargo testx", No, Default, "deny"),
            ("cargo testx", Yes, Default, "ask"),
            ("cargo test; curl x | sh", No, Default, "deny"),
            ("cargo test && rm -rf ~", Yes, Default, "ask"),
            ("cargo test > /tmp/x", No, Default, "deny"),
            ("cargo test $(evil)", No, Default, "deny"),
            ("git push", No, AllowAll, "deny #2"),
            ("make && git push origin", Yes, AllowAll, "deny #2"),
            ("(git push)", Yes, AllowAll, "deny #2"),
            ("git status", No, Default, "allow"),
            ("git pushy", No, Default, "allow"),
            ("ls", No, AllowAll, "allow"),
            ("ls", Yes, Default, "ask"),
            ("ls", No, Default, "deny"),
            ("make > log.txt", No, Default, "allow"),
            ("  make > log.txt ", No, Default, "allow"),
            ("make > log.txt; rm -rf x", No, Default, "deny"),
            ("make > log.txt2", No, Default, "deny"),
        ] {
            assert_eq!(
                decide(&rules, command, interactive, policy),
                want,
                "{command:?}"
            );
        }
    }

    #[test]
    fn path_rules_and_command_rules_never_cross() {
        let mut path_rule = rule(1, Effect::Deny, "x");
        path_rule.command = None;
        assert_eq!(
            decide(&[path_rule], "x", Interactive::No, CommandPolicy::AllowAll),
            "allow"
        );
        let request = GateRequest {
            session_id: "s",
            workspace: Some("/w"),
            tool: COMMAND_TOOL,
            access: Access::Write,
            paths: &[],
            interactive: Interactive::No,
            writes: WritePolicy::AllowAll,
            now: 1,
        };
        assert!(!rule(1, Effect::Deny, "ls").is_active_for(&request));
    }

    #[test]
    fn a_bare_star_or_empty_command_is_refused() {
        for bad in ["", "  ", "*", " * ", "**"] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
        }
        assert!(check_prefix("cargo test").is_ok());
    }
}
