//! The policy at the filesystem boundary: what one call's tool may see and
//! change, asked by the sandbox about each *resolved* file the tool
//! touches, not about the names the model wrote.
//!
//! The gate's decision ([`crate::decide`]) looks at the paths a call names,
//! before it runs. A tool then opens whatever those names resolve to, and a
//! walking tool or a plugin opens names nobody wrote down. A [`Boundary`]
//! is compiled once per call from the same rules and answers, for any path
//! the sandbox resolved inside the workspace:
//!
//! - [`Boundary::visible`]: no deny rule keeps it from being read. A path
//!   that is not visible does not exist for the tool: it is not listed, not
//!   found, not opened.
//! - [`Boundary::writable`]: no deny rule keeps it from being written, and
//!   it is not a protected path ([`PROTECTED_NAMES`]) unless an allow rule
//!   for writing names that protected directory explicitly.

use goat_workpath::{WorkspacePath, resolve};

use crate::decide::GateRequest;
use crate::path::{Pattern, quoted};
use crate::rule::{Access, Effect, Rule};

/// Directory names whose contents no tool may change, at any depth, whatever
/// `--allow-writes` or a wildcard rule says: version-control metadata. A
/// write there runs code on the host later (`.git/config`'s `fsmonitor`,
/// `.git/hooks/*`), so it needs a rule naming the directory itself (for
/// example `goat permissions allow write_file .git/info/exclude --write`).
///
/// # Security
///
/// Reading them stays allowed: a model may look at history.
pub const PROTECTED_NAMES: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// One call's policy at the filesystem boundary, compiled from the rules in
/// force for its session, workspace and tool.
#[derive(Clone, Debug)]
pub struct Boundary {
    /// Deny rules that keep paths from being read (and so written).
    hidden: Vec<(Rule, Pattern)>,
    /// Deny rules that keep paths from being written.
    read_only: Vec<(Rule, Pattern)>,
    /// Allow rules for writing whose pattern names a protected directory
    /// literally: only these lift the protection, and only where they match.
    unprotect: Vec<Pattern>,
}

/// Why a write at the boundary is refused, in words for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

/// A write the boundary refuses: which kind of protection refused it, and
/// why in words for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRefusal {
    /// What refused it.
    pub by: WriteRefusedBy,
    /// Why, for the model.
    pub reason: String,
}

/// Which protection refused a write at the boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteRefusedBy {
    /// A deny rule covers the path (or the path is not a workspace path).
    Rule,
    /// The path is in version-control metadata and no rule names it.
    Protected,
}

impl Boundary {
    /// The boundary for `request`'s session, workspace and tool, from
    /// `rules`. Fails (naming the rule) when a rule in force does not
    /// compile: skipping it could skip a deny.
    pub fn compile(rules: &[Rule], request: &GateRequest<'_>) -> Result<Self, Refusal> {
        let mut boundary = Self {
            hidden: Vec::new(),
            read_only: Vec::new(),
            unprotect: Vec::new(),
        };
        for rule in rules.iter().filter(|r| r.is_active_for(request)) {
            let pattern = Pattern::parse(&rule.pattern).map_err(|why| {
                Refusal(format!(
                    "permission rule #{} has an invalid pattern {} ({why})",
                    rule.id,
                    quoted(&rule.pattern)
                ))
            })?;
            match (rule.effect, rule.access) {
                (Effect::Deny, Access::Read) => boundary.hidden.push((rule.clone(), pattern)),
                (Effect::Deny, Access::Write) => boundary.read_only.push((rule.clone(), pattern)),
                (Effect::Allow, Access::Write) if names_protected(&rule.pattern) => {
                    boundary.unprotect.push(pattern);
                }
                (Effect::Allow, _) => {}
            }
        }
        Ok(boundary)
    }

    /// A boundary with no rules: only the protected paths.
    pub fn protected_only() -> Self {
        Self {
            hidden: Vec::new(),
            read_only: Vec::new(),
            unprotect: Vec::new(),
        }
    }

    /// Whether any path could be invisible to the tool.
    pub fn hides_anything(&self) -> bool {
        !self.hidden.is_empty()
    }

    /// The directories (workspace paths, `.` for the root) below which
    /// everything this boundary hides lies: each hiding rule's literal
    /// leading components, before its first wildcard. A file that is
    /// hidden is found by walking these, so a second name for it (a hard
    /// link elsewhere in the workspace) can be judged by what it is.
    pub fn hidden_roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = Vec::new();
        for (rule, _) in &self.hidden {
            let literal = literal_prefix(&rule.pattern);
            let root = if literal.is_empty() {
                ".".to_owned()
            } else {
                literal.join("/")
            };
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots
    }

    /// Whether the tool may see `path` (workspace-relative, resolved, `/`
    /// between components, `.` for the root).
    pub fn visible(&self, path: &str) -> bool {
        let Some(path) = workspace_path(path) else {
            return false;
        };
        // Deny rules match as the gate's decision matches them: a pattern
        // without wildcards covers what is below it too, so a file reached
        // through a link's other name is held to the rule it is under.
        !self.hidden.iter().any(|(_, p)| p.covers(&path))
    }

    /// Whether the tool may create, change, rename or remove `path`, and if
    /// not, why.
    pub fn writable(&self, path: &str) -> Result<(), Refusal> {
        self.write_refusal(path).map_err(|r| Refusal(r.reason))
    }

    /// Whether the tool may create, change, rename or remove `path`, and if
    /// not, which protection refuses it and why.
    pub fn write_refusal(&self, path: &str) -> Result<(), WriteRefusal> {
        let refuse = |by, reason| Err(WriteRefusal { by, reason });
        let Some(resolved) = workspace_path(path) else {
            return refuse(
                WriteRefusedBy::Rule,
                format!("{} is not a workspace path", quoted(path)),
            );
        };
        if let Some((rule, _)) = self
            .hidden
            .iter()
            .chain(&self.read_only)
            .find(|(_, p)| p.covers(&resolved))
        {
            return refuse(
                WriteRefusedBy::Rule,
                format!(
                    "writing {} is forbidden by permission rule {rule}",
                    quoted(resolved.as_str())
                ),
            );
        }
        if let Some(name) = protected_component(&resolved)
            && !self.unprotect.iter().any(|p| p.matches(&resolved))
        {
            return refuse(
                WriteRefusedBy::Protected,
                format!(
                    "writing {} is refused: '{name}' holds version-control metadata, which no \
                     tool may change unless a rule names it (goat permissions allow TOOL {} \
                     --write)",
                    quoted(resolved.as_str()),
                    quoted(resolved.as_str())
                ),
            );
        }
        Ok(())
    }

    /// Whether a deny rule could match something strictly below the
    /// directory `dir`, so that renaming the directory would move protected
    /// files under names no rule covers. Errs on the side of yes: a pattern
    /// beginning with a wildcard could match below any directory.
    pub fn governs_below(&self, dir: &str) -> bool {
        let Some(dir) = workspace_path(dir) else {
            return true;
        };
        self.hidden
            .iter()
            .chain(&self.read_only)
            .any(|(rule, _)| could_match_below(&rule.pattern, &dir))
    }
}

/// `path` as the gate reads workspace paths.
fn workspace_path(path: &str) -> Option<WorkspacePath> {
    resolve(path).ok()
}

/// The first protected directory name among `path`'s components.
fn protected_component(path: &WorkspacePath) -> Option<&'static str> {
    path.components()
        .find_map(|c| PROTECTED_NAMES.iter().copied().find(|name| *name == c))
}

/// Whether a pattern names a protected directory literally, as a whole
/// component (`.git/hooks/**`, `sub/.git/config`), not through a wildcard.
fn names_protected(pattern: &str) -> bool {
    pattern.split('/').any(|c| PROTECTED_NAMES.contains(&c))
}

/// Whether `pattern` could match a path strictly below `dir`: its literal
/// leading components (before the first wildcard) and `dir` are one a
/// prefix of the other.
fn could_match_below(pattern: &str, dir: &WorkspacePath) -> bool {
    let literal = literal_prefix(pattern);
    let dir: Vec<&str> = if dir.is_root() {
        Vec::new()
    } else {
        dir.components().collect()
    };
    let common = literal.len().min(dir.len());
    literal[..common] == dir[..common]
}

/// `pattern`'s leading components before the first one with a wildcard.
fn literal_prefix(pattern: &str) -> Vec<&str> {
    pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .take_while(|c| !c.contains(['*', '?']))
        .collect()
}

/// Whether `path` (as [`Boundary::visible`] reads it) lies in a protected
/// directory; for callers that must treat such paths apart (the approval
/// preview, the gate's own decision).
pub fn is_protected(path: &str) -> bool {
    workspace_path(path).is_some_and(|p| protected_component(&p).is_some())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::decide::{Interactive, WritePolicy};
    use crate::rule::Scope;

    fn rule(id: i64, effect: Effect, access: Access, pattern: &str) -> Rule {
        Rule {
            id,
            tool: None,
            pattern: pattern.to_owned(),
            access,
            effect,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 0,
            expires_at: None,
            command: None,
        }
    }

    fn boundary(rules: &[Rule]) -> Boundary {
        Boundary::compile(
            rules,
            &GateRequest {
                session_id: "s",
                workspace: Some("/w"),
                tool: "read_file",
                access: Access::Read,
                paths: &[],
                interactive: Interactive::No,
                writes: WritePolicy::AllowAll,
                now: 0,
            },
        )
        .unwrap()
    }

    #[test]
    fn deny_read_hides_and_keeps_from_writing() {
        let b = boundary(&[rule(1, Effect::Deny, Access::Read, "secrets/**")]);
        assert!(!b.visible("secrets/prod.env"));
        assert!(b.visible("src/main.rs"));
        assert!(b.writable("secrets/prod.env").is_err());
        assert!(b.writable("src/main.rs").is_ok());
    }

    #[test]
    fn a_deny_without_wildcards_covers_what_is_below_it() {
        // As the gate decides on a declared name (`deny secret` denies
        // `secret/key.txt`), so the fence on the file reached: the same
        // file through a link named otherwise is still under the rule.
        let b = boundary(&[rule(1, Effect::Deny, Access::Read, "secret")]);
        assert!(!b.visible("secret"));
        assert!(!b.visible("secret/key.txt"));
        assert!(b.writable("secret/key.txt").is_err());
        assert!(b.visible("secretive.txt"));
        let w = boundary(&[rule(1, Effect::Deny, Access::Write, "vendor")]);
        assert!(w.visible("vendor/lib.rs"));
        assert!(w.writable("vendor/lib.rs").is_err());
    }

    #[test]
    fn deny_write_leaves_visible() {
        let b = boundary(&[rule(1, Effect::Deny, Access::Write, "*.lock")]);
        assert!(b.visible("Cargo.lock"));
        let why = b.writable("Cargo.lock").unwrap_err().0;
        assert!(why.contains("rule #1"), "{why}");
    }

    #[test]
    fn version_control_metadata_is_read_only_unless_named() {
        let b = boundary(&[]);
        for path in [
            ".git",
            ".git/config",
            "sub/.git/hooks/pre-commit",
            ".jj/repo",
            ".hg/hgrc",
        ] {
            assert!(b.visible(path), "{path}");
            assert!(b.writable(path).is_err(), "{path}");
        }
        assert!(b.writable(".github/workflows/ci.yml").is_ok());
        assert!(b.writable("git/config").is_ok());
        // A wildcard does not name it; a literal component does.
        let wild = boundary(&[rule(1, Effect::Allow, Access::Write, "**")]);
        assert!(wild.writable(".git/config").is_err());
        let named = boundary(&[rule(1, Effect::Allow, Access::Write, ".git/info/**")]);
        assert!(named.writable(".git/info/exclude").is_ok());
        assert!(named.writable(".git/config").is_err());
    }

    #[test]
    fn directory_renames_are_governed_by_literal_prefixes() {
        let b = boundary(&[rule(1, Effect::Deny, Access::Read, "secrets/**")]);
        assert!(b.governs_below("secrets"));
        assert!(b.governs_below("."));
        assert!(!b.governs_below("src"));
        let wild = boundary(&[rule(1, Effect::Deny, Access::Read, "**/*.env")]);
        assert!(wild.governs_below("src"));
    }

    #[test]
    fn hidden_files_lie_below_each_hiding_rules_literal_prefix() {
        let b = boundary(&[
            rule(1, Effect::Deny, Access::Read, "secret"),
            rule(2, Effect::Deny, Access::Read, "conf/*.key"),
            rule(3, Effect::Deny, Access::Write, "src/**"),
        ]);
        assert_eq!(b.hidden_roots(), ["secret", "conf"]);
        let wild = boundary(&[rule(1, Effect::Deny, Access::Read, "**/*.env")]);
        assert_eq!(wild.hidden_roots(), ["."]);
        assert!(Boundary::protected_only().hidden_roots().is_empty());
    }
}
