//! The permission gate: decides whether one tool call may touch the
//! workspace paths it names, from rules kept in a SQLite permission database.
//!
//! # Rules and how they combine
//!
//! A [`Rule`] names a tool (or all tools), a path pattern inside the
//! workspace, an [`Access`] (read or write), an [`Effect`] (allow or deny), a
//! [`Scope`] (one session, or persistent), optionally one workspace, and an
//! optional expiry. For each path a call names:
//!
//! 1. The path is resolved lexically inside the workspace (`./a`, `a/`,
//!    `sub/../a` are one path). An absolute path, a NUL byte or a `..` that
//!    leaves the workspace denies the call outright; no rule is consulted.
//! 2. Rules that are expired, belong to another session or another
//!    workspace, or name another tool are ignored. (Where the workspace
//!    cannot be named, allow rules bound to one are ignored and deny rules
//!    bound to one still apply.)
//! 3. A matching deny rule denies. Deny wins over allow, whatever the
//!    rules' specificity or order. A deny-*read* rule also denies writing
//!    calls, because a writing tool can read what it writes (`edit_file`
//!    shows the text it replaced); a deny-*write* rule leaves reads alone.
//! 4. A matching allow rule for the call's access allows.
//! 5. Otherwise the default: reads are allowed; a write is
//!    [`Decision::Ask`] when a person is at a terminal, denied otherwise,
//!    unless the caller runs with [`WritePolicy::AllowAll`].
//!
//! A call is allowed only if every path is: any denied path denies it, and
//! the reason names that path (paths that leave the workspace are found
//! before any rule is read); otherwise any path needing approval makes the
//! whole call one `Ask` listing those paths. A call without path fields is
//! judged as the workspace root, so only rules whose pattern covers the
//! whole workspace (`**`) apply to it.
//!
//! # Patterns
//!
//! A pattern is resolved like a call path when the rule is stored, then
//! matched component by component: a literal component matches itself, `*`
//! any run of characters within one component, `?` one character, and `**`
//! (a whole component) any number of components, including none. So
//! `src/main.rs` is that file, `dir/**` is the directory and everything
//! under it (not `dir2`), `**/.env` is every `.env`, and `**` or the empty
//! pattern is the whole workspace. There is no escaping: a `*` in a file
//! name is a wildcard in a pattern, and `[`, `{` and `\` are literal (the
//! shared glob dialect's classes and alternatives are not used for rules; see
//! `gate/path.rs`). Paths are resolved and patterns matched by the
//! `goat-workpath` crate, the same code the Pen tools run. A trailing `/`
//! is refused with a hint, since `dir/` would otherwise quietly mean the
//! directory entry alone.
//!
//! # Key decision: pure logic, fail closed around it
//!
//! [`decide_with_rules`] is a pure function of the rules and the request, so
//! the policy is tested as a table. [`decide`] wraps it with the one piece of
//! I/O, reading the rules, and turns every failure there (unreadable,
//! corrupt, foreign, newer-schema or locked database) into a
//! [`Decision::Deny`] whose reason says what is wrong: a gate that cannot
//! read its rules cannot know which denials it would be skipping.
//!
//! # Security
//!
//! - The only inputs from a tool call are the values of the tool's declared
//!   path fields ([`GateRequest::paths`]); the request has no place for the
//!   rest of the arguments, so nothing else the model writes can sway a
//!   decision.
//! - Rule management ([`PermissionDb::add`], [`PermissionDb::revoke`],
//!   [`PermissionDb::list`]) is host API for the CLI. The router must never
//!   offer it to a tool, and the database must live outside every workspace.
//! - Matching is lexical. The gate does not follow symlinks: a symlink inside
//!   the workspace pointing at a denied path reaches it under another name.
//!   And a rule on `dir/**` is judged against the paths a call names, so a
//!   tool that walks a directory (`search_files` on `.`) is not stopped at
//!   `dir` by the gate. Deny rules are a guard against the model naming a
//!   path, not a filesystem view; the Pen's preopen is the boundary.
//! - Names are compared exactly (case-sensitive, no Unicode
//!   normalisation); on a case-insensitive filesystem `SRC/x` and `src/x`
//!   are one file but two paths to the gate.

mod db;
mod error;
mod path;

use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use db::{DEFAULT_BUSY_TIMEOUT, PermissionDb, SCHEMA_VERSION};
pub use error::GateError;
pub use path::{MAX_PATH_BYTES, MAX_PATTERN_BYTES};

use goat_workpath::{WorkspacePath, resolve};
use path::{Pattern, explain, quoted};

/// Whether a call reads or writes.
///
/// The caller maps a tool's declared access: `none` and `read` are
/// [`Access::Read`], `read-write` is [`Access::Write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Access {
    /// Looks at the workspace without changing it.
    Read,
    /// May change the workspace (and read it).
    Write,
}

impl Access {
    /// The word stored in the database and shown to people.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }

    fn from_db(text: &str) -> Option<Self> {
        match text {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            _ => None,
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Read => "reading",
            Self::Write => "writing",
        }
    }
}

/// What a rule does when it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Effect {
    /// Let the call through (unless a deny rule also matches).
    Allow,
    /// Refuse the call; always wins over allow.
    Deny,
}

impl Effect {
    /// The word stored in the database and shown to people.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }

    fn from_db(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// Where a rule applies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Only to calls in the session with this id.
    Session(String),
    /// To every session, until revoked or expired.
    Persistent,
}

/// One stored permission rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The database's id, used to revoke it and named in reasons.
    pub id: i64,
    /// The tool it applies to; `None` for all tools.
    pub tool: Option<String>,
    /// A path pattern relative to the workspace root, in canonical form
    /// (`**` is the whole workspace; see the module docs for the syntax).
    pub pattern: String,
    /// Which calls it is about; see [`Access`] and the module docs for how a
    /// deny-read rule also covers writes.
    pub access: Access,
    /// Allow or deny.
    pub effect: Effect,
    /// One session or all.
    pub scope: Scope,
    /// The one workspace (its canonical path) the rule applies in; `None`
    /// for every workspace. A person's "always" at an approval question is
    /// bound to the workspace it was asked in.
    pub workspace: Option<String>,
    /// When it was made, in unix seconds.
    pub created_at: i64,
    /// From when it no longer applies, in unix seconds; `None` for never.
    pub expires_at: Option<i64>,
}

impl Rule {
    /// Whether the rule has stopped applying at `now` (unix seconds).
    pub fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// Whether the rule is in force for this request's session, tool and
    /// time, before looking at paths.
    fn is_active_for(&self, request: &GateRequest<'_>) -> bool {
        let session_ok = match &self.scope {
            Scope::Session(id) => id == request.session_id,
            Scope::Persistent => true,
        };
        let workspace_ok = match (&self.workspace, request.workspace) {
            (None, _) => true,
            (Some(rule), Some(call)) => rule == call,
            // A workspace GOAT cannot name as text: allow rules bound to a
            // workspace do not apply there, deny rules do (fail closed).
            (Some(_), None) => self.effect == Effect::Deny,
        };
        let tool_ok = self.tool.as_deref().is_none_or(|tool| tool == request.tool);
        session_ok && workspace_ok && tool_ok && !self.is_expired(request.now)
    }

    /// Whether the rule has a say over a call needing `access`.
    fn governs(&self, access: Access) -> bool {
        match (self.effect, self.access) {
            // A writing tool can read what it writes, so keeping a path from
            // being read keeps it from writing tools too.
            (Effect::Deny, Access::Read) => true,
            (Effect::Deny, Access::Write) | (Effect::Allow, Access::Read | Access::Write) => {
                self.access == access
            }
        }
    }
}

impl fmt::Display for Rule {
    /// `#3: deny read 'secrets/**' for all tools, persistent`, as reasons
    /// and `goat permissions list` show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{}: {} {} {} for ",
            self.id,
            self.effect.as_str(),
            self.access.as_str(),
            quoted(&self.pattern)
        )?;
        match &self.tool {
            Some(tool) => write!(f, "{}", escape_controls(tool))?,
            None => f.write_str("all tools")?,
        }
        match &self.scope {
            Scope::Session(id) => write!(f, ", session {}", escape_controls(id))?,
            Scope::Persistent => f.write_str(", persistent")?,
        }
        if let Some(workspace) = &self.workspace {
            write!(f, ", in {}", escape_controls(workspace))?;
        }
        if let Some(at) = self.expires_at {
            write!(f, ", expires at {at} (unix)")?;
        }
        Ok(())
    }
}

/// A rule to add: everything but the id, which the database assigns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRule {
    /// The tool it applies to; `None` for all tools (the CLI's `*`).
    pub tool: Option<String>,
    /// A path pattern relative to the workspace root; normalised on add.
    pub pattern: String,
    /// Read or write.
    pub access: Access,
    /// Allow or deny.
    pub effect: Effect,
    /// One session or all.
    pub scope: Scope,
    /// The one workspace it applies in (canonical path); `None` for all.
    pub workspace: Option<String>,
    /// Now, in unix seconds.
    pub created_at: i64,
    /// When it stops applying, in unix seconds, after `created_at`.
    pub expires_at: Option<i64>,
}

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

/// The gate's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Run the call.
    Allow {
        /// Which rule or default allowed each path.
        reason: String,
    },
    /// Do not run it; the reason is the call's result for the model.
    Deny {
        /// Written for the model: that the call was denied, and why.
        reason: String,
    },
    /// Ask the person at the terminal; run the call only if they agree.
    Ask {
        /// What to ask, one line: the tool and the resolved paths that need
        /// approval, quoted and escaped.
        prompt: String,
        /// Those paths, canonical (unquoted, unescaped); empty when the call
        /// names no path and the question is about the whole workspace.
        asked: Vec<String>,
    },
}

impl Decision {
    /// Whether the call may run without asking anyone.
    pub fn is_allow(&self) -> bool {
        match self {
            Self::Allow { .. } => true,
            Self::Deny { .. } | Self::Ask { .. } => false,
        }
    }

    /// Whether the call is refused.
    pub fn is_deny(&self) -> bool {
        match self {
            Self::Deny { .. } => true,
            Self::Allow { .. } | Self::Ask { .. } => false,
        }
    }

    /// The reason or prompt.
    pub fn message(&self) -> &str {
        match self {
            Self::Allow { reason } | Self::Deny { reason } => reason,
            Self::Ask { prompt, .. } => prompt,
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
/// the answer is [`Decision::Deny`] with a reason naming the file and the
/// problem. A file that is not a permission database is never modified.
pub fn decide(db_path: &Path, request: &GateRequest<'_>) -> Decision {
    decide_with_timeout(db_path, DEFAULT_BUSY_TIMEOUT, request)
}

/// [`decide`], waiting up to `busy_timeout` for a lock.
pub fn decide_with_timeout(
    db_path: &Path,
    busy_timeout: Duration,
    request: &GateRequest<'_>,
) -> Decision {
    match PermissionDb::open_with_timeout(db_path, busy_timeout).and_then(|db| db.list()) {
        Ok(rules) => decide_with_rules(&rules, request),
        Err(err) => {
            let until = if err.is_retryable() {
                "while it is locked"
            } else {
                "until it is fixed"
            };
            Decision::Deny {
                reason: format!("denied: {err}; calls are denied {until}"),
            }
        }
    }
}

/// Decides `request` against `rules`: the whole policy, with no I/O.
///
/// # Security
///
/// A rule that would be in force but whose pattern does not compile denies
/// the call: skipping it could skip a deny.
pub fn decide_with_rules(rules: &[Rule], request: &GateRequest<'_>) -> Decision {
    let tool = escape_controls(request.tool);

    // Resolve every path before looking at rules: an escape is refused as
    // such, never matched, so no allow rule can let it through.
    let mut paths = Vec::with_capacity(request.paths.len());
    for raw in request.paths {
        match resolve(raw) {
            Ok(path) => paths.push(path),
            Err(problem) => {
                return Decision::Deny {
                    reason: format!(
                        "denied: {tool} was not run because {}",
                        explain(problem, &quoted(raw))
                    ),
                };
            }
        }
    }

    let mut active = Vec::new();
    for rule in rules.iter().filter(|r| r.is_active_for(request)) {
        match Pattern::parse(&rule.pattern) {
            Ok(pattern) => active.push((rule, pattern)),
            Err(why) => {
                return Decision::Deny {
                    reason: format!(
                        "denied: permission rule #{} has an invalid pattern {} ({why}); \
                         calls are denied until it is revoked",
                        rule.id,
                        quoted(&rule.pattern)
                    ),
                };
            }
        }
    }

    let whole = [WorkspacePath::root()];
    let named = !paths.is_empty();
    let subjects = if named { &paths[..] } else { &whole[..] };

    let mut allowed = Vec::new();
    let mut to_ask = Vec::new();
    for path in subjects {
        let subject = if named {
            format!(
                "{} {} with {tool}",
                request.access.verb(),
                quoted(path.as_str())
            )
        } else {
            format!("calling {tool}")
        };
        let matching = |effect: Effect| {
            active
                .iter()
                .filter(|(rule, pattern)| {
                    rule.effect == effect && rule.governs(request.access) && pattern.matches(path)
                })
                .map(|(rule, _)| *rule)
                .min_by_key(|rule| rule.id)
        };
        if let Some(rule) = matching(Effect::Deny) {
            return Decision::Deny {
                reason: format!("denied: {subject} is forbidden by permission rule {rule}"),
            };
        }
        if let Some(rule) = matching(Effect::Allow) {
            allowed.push(format!("{subject} by permission rule {rule}"));
            continue;
        }
        match (request.access, request.writes, request.interactive) {
            (Access::Read, _, _) => {
                allowed.push(format!("{subject} (reads are allowed by default)"));
            }
            (Access::Write, WritePolicy::AllowAll, _) => {
                allowed.push(format!("{subject} (writes are allowed: --allow-writes)"));
            }
            (Access::Write, WritePolicy::Default, Interactive::Yes) => to_ask.push(path),
            (Access::Write, WritePolicy::Default, Interactive::No) => {
                return Decision::Deny {
                    reason: format!(
                        "denied: {subject} needs approval and no one is at a terminal to give \
                         it; the user can allow it with `goat permissions allow {tool} {} \
                         --write` or run with --allow-writes",
                        quoted(&suggested_pattern(named.then_some(path)))
                    ),
                };
            }
        }
    }

    if to_ask.is_empty() {
        return Decision::Allow {
            reason: format!("allowed: {}", allowed.join("; ")),
        };
    }
    let prompt = if named {
        let list: Vec<String> = to_ask.iter().map(|p| quoted(p.as_str())).collect();
        format!("{tool} wants to write {}; allow it?", list.join(", "))
    } else {
        format!("{tool} wants write access to the workspace; allow it?")
    };
    let asked = if named {
        to_ask.iter().map(|p| p.as_str().to_owned()).collect()
    } else {
        Vec::new()
    };
    Decision::Ask { prompt, asked }
}

/// The pattern a denial suggests allowing: the path's directory, which is
/// what a person approving one write in it usually means.
fn suggested_pattern(path: Option<&WorkspacePath>) -> String {
    match path {
        Some(path) => match path.parent() {
            Some(dir) => format!("{dir}/**"),
            None => path.as_str().to_owned(),
        },
        None => "**".to_owned(),
    }
}

/// Tool names and session ids are the host's, but tool names come from
/// plugins' specs: escape control characters before they reach a terminal.
fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn deny_read_governs_writes_but_deny_write_leaves_reads_alone() {
        let rule = |effect, access| Rule {
            id: 1,
            tool: None,
            pattern: "**".to_owned(),
            access,
            effect,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 0,
            expires_at: None,
        };
        assert!(rule(Effect::Deny, Access::Read).governs(Access::Read));
        assert!(rule(Effect::Deny, Access::Read).governs(Access::Write));
        assert!(!rule(Effect::Deny, Access::Write).governs(Access::Read));
        assert!(rule(Effect::Deny, Access::Write).governs(Access::Write));
        assert!(rule(Effect::Allow, Access::Read).governs(Access::Read));
        assert!(!rule(Effect::Allow, Access::Read).governs(Access::Write));
        assert!(!rule(Effect::Allow, Access::Write).governs(Access::Read));
        assert!(rule(Effect::Allow, Access::Write).governs(Access::Write));
    }

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
        let path = |raw| resolve(raw).unwrap();
        assert_eq!(suggested_pattern(Some(&path("src/main.rs"))), "src/**");
        assert_eq!(suggested_pattern(Some(&path("a/b/c.txt"))), "a/b/**");
        assert_eq!(suggested_pattern(Some(&path("notes.txt"))), "notes.txt");
        assert_eq!(suggested_pattern(None), "**");
    }

    #[test]
    fn control_characters_in_names_are_escaped() {
        assert_eq!(escape_controls("write_file"), "write_file");
        assert_eq!(escape_controls("x\u{1b}[31my\n"), "x\\u{1b}[31my\\n");
    }

    #[test]
    fn rules_display_every_field_people_need() {
        let rule = Rule {
            id: 7,
            tool: Some("write_file".to_owned()),
            pattern: "src/**".to_owned(),
            access: Access::Write,
            effect: Effect::Allow,
            scope: Scope::Session("s1".to_owned()),
            workspace: Some("/home/me/p".to_owned()),
            created_at: 10,
            expires_at: Some(20),
        };
        assert_eq!(
            rule.to_string(),
            "#7: allow write 'src/**' for write_file, session s1, in /home/me/p, expires at 20 \
             (unix)"
        );
    }
}
