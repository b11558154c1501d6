//! The permission gate (`goat-gate`): decides whether one tool call may touch the
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
//! A *deny* pattern without wildcards also covers everything below the
//! path it names, as gitignore reads a name: `deny secrets` denies
//! `secrets/prod.env` (it used to protect nothing inside `secrets/`), and
//! rules show it (`deny read 'secrets' and everything under it`). An
//! *allow* pattern grants exactly what it names: the router remembers a
//! person's "always" as the exact path asked about, which may be a
//! directory or a file never created, and that must not grow into
//! everything below it. `dir/**` allows a directory's contents.
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

mod boundary;
pub mod command;
mod db;
mod decide;
mod error;
mod handle;
mod path;
mod rule;

pub use boundary::{
    Boundary, PROTECTED_NAMES, Refusal, WriteRefusal, WriteRefusedBy, is_protected,
};
pub use command::{
    COMMAND_TOOL, CommandCall, CommandPolicy, decide_command, decide_command_with_rules,
};
pub use db::{DEFAULT_BUSY_TIMEOUT, PermissionDb, SCHEMA_VERSION};
pub use decide::{
    Decision, Denial, Evaluation, GateRequest, Grant, GrantedBy, Interactive, WritePolicy,
    canonical_path, decide, decide_with_boundary, decide_with_rules, decide_with_timeout,
    exact_pattern, now,
};
pub use error::GateError;
pub use goat_workpath::PathProblem;
pub use handle::GateHandle;
pub use path::{MAX_PATH_BYTES, MAX_PATTERN_BYTES, quoted};
pub use rule::{Access, Effect, NewRule, Rule, Scope};
