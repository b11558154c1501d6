//! Rules: what they say, and whether one is in force for a call.

use std::fmt;

use crate::decide::GateRequest;
use crate::path::quoted;

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

    pub(crate) fn from_db(text: &str) -> Option<Self> {
        match text {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            _ => None,
        }
    }

    pub(crate) fn verb(self) -> &'static str {
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

    pub(crate) fn from_db(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// Where a rule applies. Exhaustive, like [`crate::Decision`]: callers
/// saving rules must handle every scope.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
    /// For a command rule: the command, or the prefix of commands, it is
    /// about (`cargo test`). A command rule is never asked about paths, and
    /// a path rule never about commands (see [`crate::command`]).
    pub command: Option<String>,
}

impl Rule {
    /// Whether the rule has stopped applying at `now` (unix seconds).
    pub fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// Whether the rule is in force for this request's session, tool and
    /// time, before looking at paths.
    pub(crate) fn is_active_for(&self, request: &GateRequest<'_>) -> bool {
        let tool_ok = self.tool.as_deref().is_none_or(|tool| tool == request.tool);
        self.command.is_none()
            && self.is_in_force(request.session_id, request.workspace, request.now)
            && tool_ok
    }

    /// Whether the rule applies in this session and workspace at `now`,
    /// before looking at the tool, paths or command.
    pub(crate) fn is_in_force(&self, session_id: &str, workspace: Option<&str>, now: i64) -> bool {
        let session_ok = match &self.scope {
            Scope::Session(id) => id == session_id,
            Scope::Persistent => true,
        };
        let workspace_ok = match (&self.workspace, workspace) {
            (None, _) => true,
            (Some(rule), Some(call)) => rule == call,
            // A workspace GOAT cannot name as text: allow rules bound to a
            // workspace do not apply there, deny rules do (fail closed).
            (Some(_), None) => self.effect == Effect::Deny,
        };
        session_ok && workspace_ok && !self.is_expired(now)
    }

    /// Whether the rule also covers everything below the path its pattern
    /// names: a deny rule whose pattern has no wildcards (`secrets`
    /// denies `secrets/prod.env`). Allow rules grant exactly what they
    /// name.
    pub fn covers_below(&self) -> bool {
        self.effect == Effect::Deny && crate::path::covers_below(&self.pattern)
    }

    /// Whether the rule has a say over a call needing `access`.
    pub(crate) fn governs(&self, access: Access) -> bool {
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
    /// and `goat permissions list` show it. Tool names, session ids and
    /// workspaces are written as they are: whoever prints this to a
    /// terminal escapes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(command) = &self.command {
            write!(
                f,
                "#{}: {} command {} and what follows it for ",
                self.id,
                self.effect.as_str(),
                quoted(command)
            )?;
        } else {
            write!(
                f,
                "#{}: {} {} {}{} for ",
                self.id,
                self.effect.as_str(),
                self.access.as_str(),
                quoted(&self.pattern),
                if self.covers_below() {
                    " and everything under it"
                } else {
                    ""
                }
            )?;
        }
        match &self.tool {
            Some(tool) => f.write_str(tool)?,
            None => f.write_str("all tools")?,
        }
        match &self.scope {
            Scope::Session(id) => write!(f, ", session {id}")?,
            Scope::Persistent => f.write_str(", persistent")?,
        }
        if let Some(workspace) = &self.workspace {
            write!(f, ", in {workspace}")?;
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
    /// For a command rule, the command or prefix; `pattern` is then `**`.
    pub command: Option<String>,
}

#[cfg(test)]
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
            command: None,
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
    fn a_deny_rule_without_wildcards_says_it_covers_what_is_under_it() {
        let rule = |effect, pattern: &str| Rule {
            id: 2,
            tool: None,
            pattern: pattern.to_owned(),
            access: Access::Read,
            effect,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 0,
            expires_at: None,
            command: None,
        };
        assert_eq!(
            rule(Effect::Deny, "secrets").to_string(),
            "#2: deny read 'secrets' and everything under it for all tools, persistent"
        );
        assert_eq!(
            rule(Effect::Deny, "secrets/**").to_string(),
            "#2: deny read 'secrets/**' for all tools, persistent"
        );
        assert_eq!(
            rule(Effect::Allow, "notes").to_string(),
            "#2: allow read 'notes' for all tools, persistent"
        );
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
            command: None,
        };
        assert_eq!(
            rule.to_string(),
            "#7: allow write 'src/**' for write_file, session s1, in /home/me/p, expires at 20 \
             (unix)"
        );
    }
}
