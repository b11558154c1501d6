//! The decision: a pure function of the rules and one call, returned as
//! data, and the one piece of I/O around it (reading the rules), which
//! fails closed.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use goat_workpath::{PathProblem, WorkspacePath, resolve};

use crate::boundary::{self, Boundary};
use crate::db::{DEFAULT_BUSY_TIMEOUT, PermissionDb};
use crate::path::{Pattern, explain, quoted};
#[cfg(test)]
use crate::rule::Scope;
use crate::rule::{Access, Effect, Rule};

/// Whether a person is at a terminal to approve a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interactive {
    /// Someone can answer a prompt: writes without a rule become `Ask`.
    Yes,
    /// No one can: writes without a rule are denied (unless allowed by
    /// [`WritePolicy::AllowAll`]).
    No,
}

/// What to do with writes no rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WritePolicy {
    /// Ask when interactive, deny otherwise.
    Default,
    /// Allow them (`--allow-writes`). Deny rules still win.
    AllowAll,
}

/// One call to decide.
#[derive(Clone, Copy, Debug)]
pub struct GateRequest<'a> {
    /// The session making the call; selects its session rules.
    pub session_id: &'a str,
    /// The workspace's canonical path, selecting rules bound to it; `None`
    /// when it is not valid UTF-8 (then only deny rules bound to a
    /// workspace apply).
    pub workspace: Option<&'a str>,
    /// The tool's name.
    pub tool: &'a str,
    /// What the tool's declared access needs.
    pub access: Access,
    /// The raw values of the tool's declared path fields, as the model wrote
    /// them. Empty for a tool without path fields. An optional path field
    /// the call left out names the workspace root; pass `"."` for it.
    ///
    /// # Security
    ///
    /// Only these values may come from the call's arguments; pass nothing
    /// else the model wrote.
    pub paths: &'a [&'a str],
    /// Whether someone can answer an approval prompt.
    pub interactive: Interactive,
    /// What to do with writes no rule decides.
    pub writes: WritePolicy,
    /// Now, in unix seconds, for rule expiry.
    pub now: i64,
}

/// The gate's answer, as data: what it decided and on what grounds.
///
/// Nothing here is pre-rendered. [`Evaluation::reason`] writes the text the
/// model and the store get; the CLI renders questions and rules for a
/// terminal with its own escaper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evaluation {
    /// The tool the call is for.
    pub tool: String,
    /// What the call needs.
    pub access: Access,
    /// The decision and its grounds.
    pub decision: Decision,
}

/// What the gate decided.
///
/// Deliberately exhaustive: a new kind of decision must be handled by every
/// caller, not fall into a wildcard arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run the call: every path it names (or, naming none, the workspace)
    /// is allowed, each on the grounds given.
    Allow {
        /// One grant per path, in the order the call names them.
        grants: Vec<Grant>,
    },
    /// Do not run it.
    Deny(Denial),
    /// Ask the person at the terminal; run the call only if they agree.
    Ask {
        /// The resolved paths that need approval (canonical, unquoted);
        /// empty when the call names no path and the question is about the
        /// whole workspace.
        asked: Vec<String>,
    },
}

/// Why one path, or the whole workspace, was allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The resolved path; `None` for a call naming no path (the workspace).
    pub path: Option<String>,
    /// On what grounds.
    pub by: GrantedBy,
}

/// The grounds of a [`Grant`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantedBy {
    /// An allow rule matched (the lowest id, when several did).
    Rule(Rule),
    /// Reads are allowed by default.
    ReadDefault,
    /// Writes are allowed for this run (`--allow-writes`).
    AllowWrites,
    /// Commands are allowed for this run (`--allow-commands`).
    AllowCommands,
}

/// Why a call was denied.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Denial {
    /// A path the call names cannot be a workspace path (absolute, leaves
    /// the workspace, NUL, too long); no rule was consulted.
    Path {
        /// The value as the model wrote it.
        raw: String,
        /// What is wrong with it.
        problem: PathProblem,
    },
    /// A deny rule matched.
    Rule {
        /// The resolved path; `None` for a call naming no path.
        path: Option<String>,
        /// The rule (the lowest id, when several did).
        rule: Rule,
    },
    /// A rule in force has a pattern that does not compile, so the gate
    /// cannot know what it would deny.
    InvalidRule {
        /// The rule.
        rule: Rule,
        /// Why its pattern does not compile.
        why: String,
    },
    /// The call writes in a protected directory
    /// ([`crate::PROTECTED_NAMES`]) and no allow rule names it.
    Protected {
        /// The resolved path.
        path: String,
    },
    /// The write needs approval and no one is at a terminal.
    NeedsApproval {
        /// The resolved path; `None` for a call naming no path.
        path: Option<String>,
    },
    /// A command needs approval and no one is at a terminal.
    CommandNeedsApproval {
        /// The command line.
        command: String,
    },
    /// The rules cannot be read (missing, corrupt, foreign, newer, locked).
    Unavailable {
        /// What is wrong, naming the file.
        error: String,
        /// Whether waiting may help (the database is locked).
        retryable: bool,
    },
}

impl Evaluation {
    /// Whether the call may run without asking anyone.
    pub fn is_allow(&self) -> bool {
        match self.decision {
            Decision::Allow { .. } => true,
            Decision::Deny(_) | Decision::Ask { .. } => false,
        }
    }

    /// Whether the call is refused.
    pub fn is_deny(&self) -> bool {
        match self.decision {
            Decision::Deny(_) => true,
            Decision::Allow { .. } | Decision::Ask { .. } => false,
        }
    }

    /// The rules the decision rests on: the allow rules that granted, or
    /// the deny (or broken) rule that refused.
    pub fn matched_rules(&self) -> Vec<&Rule> {
        match &self.decision {
            Decision::Allow { grants } => grants
                .iter()
                .filter_map(|g| match &g.by {
                    GrantedBy::Rule(rule) => Some(rule),
                    GrantedBy::ReadDefault | GrantedBy::AllowWrites | GrantedBy::AllowCommands => {
                        None
                    }
                })
                .collect(),
            Decision::Deny(Denial::Rule { rule, .. } | Denial::InvalidRule { rule, .. }) => {
                vec![rule]
            }
            Decision::Deny(
                Denial::Path { .. }
                | Denial::Protected { .. }
                | Denial::NeedsApproval { .. }
                | Denial::CommandNeedsApproval { .. }
                | Denial::Unavailable { .. },
            )
            | Decision::Ask { .. } => Vec::new(),
        }
    }

    /// What the call does to a path, for reasons: `writing 'a.txt' with
    /// write_file`, or `calling TOOL` when it names no path.
    fn subject(&self, path: Option<&str>) -> String {
        match path {
            Some(path) => format!("{} {} with {}", self.access.verb(), quoted(path), self.tool),
            None => format!("calling {}", self.tool),
        }
    }

    /// The decision in words, for the model and the store: `allowed: ...`,
    /// `denied: ...`, or the question for an [`Decision::Ask`].
    ///
    /// Tool names and paths are written as they are (paths quoted); this is
    /// not terminal output, and whoever prints it escapes it.
    pub fn reason(&self) -> String {
        match &self.decision {
            Decision::Allow { grants } => {
                let grants: Vec<String> = grants
                    .iter()
                    .map(|g| {
                        let subject = self.subject(g.path.as_deref());
                        match &g.by {
                            GrantedBy::Rule(rule) => {
                                format!("{subject} by permission rule {rule}")
                            }
                            GrantedBy::ReadDefault => {
                                format!("{subject} (reads are allowed by default)")
                            }
                            GrantedBy::AllowWrites => {
                                format!("{subject} (writes are allowed: --allow-writes)")
                            }
                            GrantedBy::AllowCommands => {
                                format!("{subject} (commands are allowed: --allow-commands)")
                            }
                        }
                    })
                    .collect();
                format!("allowed: {}", grants.join("; "))
            }
            Decision::Deny(denial) => self.denial_reason(denial),
            Decision::Ask { .. } => self.question(),
        }
    }

    fn denial_reason(&self, denial: &Denial) -> String {
        let tool = &self.tool;
        match denial {
            Denial::Path { raw, problem } => format!(
                "denied: {tool} was not run because {}",
                explain(*problem, &quoted(raw))
            ),
            Denial::Rule { path, rule } => format!(
                "denied: {} is forbidden by permission rule {rule}",
                self.subject(path.as_deref())
            ),
            Denial::InvalidRule { rule, why } => format!(
                "denied: permission rule #{} has an invalid pattern {} ({why}); calls are \
                 denied until it is revoked",
                rule.id,
                quoted(&rule.pattern)
            ),
            Denial::Protected { path } => format!(
                "denied: {} is refused: it is version-control metadata, which no tool may \
                 change (whatever --allow-writes says) unless a rule names it: \
                 `goat permissions allow {tool} {} --write`",
                self.subject(Some(path)),
                quoted(path)
            ),
            Denial::NeedsApproval { path } => format!(
                "denied: {} needs approval and no one is at a terminal to give it; the user \
                 can allow it with `goat permissions allow {tool} {} --write` or run with \
                 --allow-writes",
                self.subject(path.as_deref()),
                quoted(&suggested_pattern(path.as_deref()))
            ),
            Denial::CommandNeedsApproval { command } => {
                crate::command::needs_approval_reason(command)
            }
            Denial::Unavailable { error, retryable } => {
                let until = if *retryable {
                    "while it is locked"
                } else {
                    "until it is fixed"
                };
                format!("denied: {error}; calls are denied {until}")
            }
        }
    }

    /// The approval question, one line: the tool and the paths it wants
    /// to write (quoted), or the workspace when it names none.
    pub fn question(&self) -> String {
        match &self.decision {
            Decision::Ask { asked } if !asked.is_empty() => {
                let list: Vec<String> = asked.iter().map(|p| quoted(p)).collect();
                format!(
                    "{} wants to write {}; allow it?",
                    self.tool,
                    list.join(", ")
                )
            }
            _ => format!(
                "{} wants write access to the workspace; allow it?",
                self.tool
            ),
        }
    }
}

/// The canonical spelling of a call's path value as the gate reads it
/// (`.` for the workspace root), or why it is refused.
pub fn canonical_path(raw: &str) -> Result<String, String> {
    resolve(raw)
        .map(|path| path.as_str().to_owned())
        .map_err(|problem| explain(problem, &quoted(raw)))
}

/// The rule pattern that matches this call path and nothing more, for
/// remembering a person's approval as a rule.
///
/// `None` when no pattern says exactly that: the path has `*` or `?`
/// (patterns have no escapes, so they would match other paths), or it is
/// not a valid call path, or it names the workspace root (`.`, `src/..`),
/// which as a pattern would mean the whole workspace.
pub fn exact_pattern(raw: &str) -> Option<String> {
    let path = canonical_path(raw).ok()?;
    // `.` as a pattern is the whole workspace, far more than the one
    // directory entry a call naming `.` (or `src/..`) is about.
    if path == "." || path.contains(['*', '?']) {
        return None;
    }
    Pattern::parse(&path).ok().map(|_| path)
}

/// Now, in unix seconds, for [`GateRequest::now`].
///
/// A clock set before 1970 reads as 0, which keeps every expiring rule in
/// force: deny rules keep denying.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}

/// Decides `request` against the rules in the permission database at
/// `db_path`, waiting up to [`DEFAULT_BUSY_TIMEOUT`] for a lock.
///
/// # Security
///
/// Fails closed: if the database cannot be opened, is not a permission
/// database, has a newer schema, has an unreadable rule, or stays locked,
/// the answer is [`Denial::Unavailable`], naming the file and the problem.
/// A file that is not a permission database is never modified.
pub fn decide(db_path: &Path, request: &GateRequest<'_>) -> Evaluation {
    decide_with_timeout(db_path, DEFAULT_BUSY_TIMEOUT, request)
}

/// [`decide`], and the [`Boundary`] the sandbox holds the call to, both
/// from one reading of the rules. The boundary is `None` when the call is
/// denied.
pub fn decide_with_boundary(
    db_path: &Path,
    request: &GateRequest<'_>,
) -> (Evaluation, Option<Boundary>) {
    match PermissionDb::open_with_timeout(db_path, DEFAULT_BUSY_TIMEOUT).and_then(|db| db.list()) {
        Ok(rules) => evaluate_with_boundary(&rules, request),
        Err(err) => (unavailable(request, &err), None),
    }
}

/// The decision and, when it lets the call through, the boundary, from
/// `rules`; a boundary that cannot be compiled denies.
pub(crate) fn evaluate_with_boundary(
    rules: &[Rule],
    request: &GateRequest<'_>,
) -> (Evaluation, Option<Boundary>) {
    let evaluation = decide_with_rules(rules, request);
    if evaluation.is_deny() {
        return (evaluation, None);
    }
    match Boundary::compile(rules, request) {
        Ok(boundary) => (evaluation, Some(boundary)),
        Err(refusal) => (
            Evaluation {
                tool: request.tool.to_owned(),
                access: request.access,
                decision: Decision::Deny(Denial::Unavailable {
                    error: refusal.0,
                    retryable: false,
                }),
            },
            None,
        ),
    }
}

pub(crate) fn unavailable(request: &GateRequest<'_>, err: &crate::GateError) -> Evaluation {
    Evaluation {
        tool: request.tool.to_owned(),
        access: request.access,
        decision: Decision::Deny(Denial::Unavailable {
            error: err.to_string(),
            retryable: err.is_retryable(),
        }),
    }
}

/// [`decide`], waiting up to `busy_timeout` for a lock.
pub fn decide_with_timeout(
    db_path: &Path,
    busy_timeout: Duration,
    request: &GateRequest<'_>,
) -> Evaluation {
    match PermissionDb::open_with_timeout(db_path, busy_timeout).and_then(|db| db.list()) {
        Ok(rules) => decide_with_rules(&rules, request),
        Err(err) => unavailable(request, &err),
    }
}

/// Decides `request` against `rules`: the whole policy, with no I/O.
///
/// # Security
///
/// A rule that would be in force but whose pattern does not compile denies
/// the call: skipping it could skip a deny.
pub fn decide_with_rules(rules: &[Rule], request: &GateRequest<'_>) -> Evaluation {
    Evaluation {
        tool: request.tool.to_owned(),
        access: request.access,
        decision: decision(rules, request),
    }
}

fn decision(rules: &[Rule], request: &GateRequest<'_>) -> Decision {
    // Resolve every path before looking at rules: an escape is refused as
    // such, never matched, so no allow rule can let it through.
    let mut paths = Vec::with_capacity(request.paths.len());
    for raw in request.paths {
        match resolve(raw) {
            Ok(path) => paths.push(path),
            Err(problem) => {
                return Decision::Deny(Denial::Path {
                    raw: (*raw).to_owned(),
                    problem,
                });
            }
        }
    }

    let mut active = Vec::new();
    for rule in rules.iter().filter(|r| r.is_active_for(request)) {
        match Pattern::parse(&rule.pattern) {
            Ok(pattern) => active.push((rule, pattern)),
            Err(why) => {
                return Decision::Deny(Denial::InvalidRule {
                    rule: rule.clone(),
                    why: why.to_string(),
                });
            }
        }
    }

    let whole = [WorkspacePath::root()];
    let named = !paths.is_empty();
    let subjects = if named { &paths[..] } else { &whole[..] };

    let mut grants = Vec::new();
    let mut to_ask = Vec::new();
    for path in subjects {
        let shown = named.then(|| path.as_str().to_owned());
        let matching = |effect: Effect| {
            active
                .iter()
                .filter(|(rule, pattern)| {
                    rule.effect == effect
                        && rule.governs(request.access)
                        && match effect {
                            // A deny rule naming a directory protects what
                            // is in it; an allow rule grants what it names.
                            Effect::Deny => pattern.covers(path),
                            Effect::Allow => pattern.matches(path),
                        }
                })
                .map(|(rule, _)| *rule)
                .min_by_key(|rule| rule.id)
        };
        if let Some(rule) = matching(Effect::Deny) {
            return Decision::Deny(Denial::Rule {
                path: shown,
                rule: rule.clone(),
            });
        }
        // Version-control metadata: no default, flag or wildcard lets a
        // tool write there; only an allow rule naming it does.
        if request.access == Access::Write
            && named
            && boundary::is_protected(path.as_str())
            && Boundary::compile(rules, request)
                .map_or(true, |b| b.writable(path.as_str()).is_err())
        {
            return Decision::Deny(Denial::Protected {
                path: path.as_str().to_owned(),
            });
        }
        let by = if let Some(rule) = matching(Effect::Allow) {
            GrantedBy::Rule(rule.clone())
        } else {
            match (request.access, request.writes, request.interactive) {
                (Access::Read, _, _) => GrantedBy::ReadDefault,
                (Access::Write, WritePolicy::AllowAll, _) => GrantedBy::AllowWrites,
                (Access::Write, WritePolicy::Default, Interactive::Yes) => {
                    to_ask.push(path.as_str().to_owned());
                    continue;
                }
                (Access::Write, WritePolicy::Default, Interactive::No) => {
                    return Decision::Deny(Denial::NeedsApproval { path: shown });
                }
            }
        };
        grants.push(Grant { path: shown, by });
    }

    if to_ask.is_empty() {
        Decision::Allow { grants }
    } else {
        Decision::Ask {
            asked: if named { to_ask } else { Vec::new() },
        }
    }
}

/// The pattern a denial suggests allowing: the path's directory, which is
/// what a person approving one write in it usually means.
fn suggested_pattern(path: Option<&str>) -> String {
    match path.map(resolve) {
        Some(Ok(path)) => match path.parent() {
            Some(dir) => format!("{dir}/**"),
            None => path.as_str().to_owned(),
        },
        Some(Err(_)) | None => "**".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_reads_the_clock_in_seconds() {
        // 2024-01-01; a milliseconds clock would be far past the upper bound.
        assert!(
            (1_704_067_200..10_000_000_000).contains(&now()),
            "{}",
            now()
        );
    }

    #[test]
    fn suggestions_name_the_directory() {
        assert_eq!(suggested_pattern(Some("src/main.rs")), "src/**");
        assert_eq!(suggested_pattern(Some("a/b/c.txt")), "a/b/**");
        assert_eq!(suggested_pattern(Some("notes.txt")), "notes.txt");
        assert_eq!(suggested_pattern(None), "**");
    }

    #[test]
    fn an_evaluation_names_the_rules_it_rests_on() {
        let rule = |id, effect| Rule {
            id,
            tool: None,
            pattern: "src/**".to_owned(),
            access: Access::Write,
            effect,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 0,
            expires_at: None,
            command: None,
        };
        let request = GateRequest {
            session_id: "s",
            workspace: None,
            tool: "write_file",
            access: Access::Write,
            paths: &["src/a.rs"],
            interactive: Interactive::No,
            writes: WritePolicy::Default,
            now: 0,
        };
        let allowed = decide_with_rules(&[rule(4, Effect::Allow)], &request);
        assert_eq!(allowed.matched_rules(), vec![&rule(4, Effect::Allow)]);
        assert_eq!(
            allowed.decision,
            Decision::Allow {
                grants: vec![Grant {
                    path: Some("src/a.rs".to_owned()),
                    by: GrantedBy::Rule(rule(4, Effect::Allow)),
                }]
            }
        );
        let denied = decide_with_rules(&[rule(4, Effect::Allow), rule(9, Effect::Deny)], &request);
        assert_eq!(denied.matched_rules(), vec![&rule(9, Effect::Deny)]);
        assert!(
            denied
                .reason()
                .starts_with("denied: writing 'src/a.rs' with write_file")
        );
    }
}
