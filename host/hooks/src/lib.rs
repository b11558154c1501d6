//! Hooks (issue 41, ADR-0098): programs the person added with `goat hooks
//! add`, run at an event of the one road, given Claude Code's JSON on stdin
//! and read with Claude Code's answers, so a hook written for Claude Code
//! works on GOAT.
//!
//! The key decisions, each where the hosts GOAT learns from went wrong:
//!
//! - **Only the person adds a hook.** The list is [`Registry`], a file
//!   beside the store (never in a workspace): nothing a repository holds
//!   (`.claude/settings.json`, `.goat/`) is ever loaded as a hook.
//! - **Trust is pinned to every byte** ([`pin`]): the hash of the
//!   definition and of every file it runs (the program, and each argument
//!   that names a file: the script). A change suspends the hook until the
//!   person trusts it again; a suspended hook denies the calls it matches,
//!   so its guard is never silently dropped. A hook whose file lies in the
//!   workspace, where the agent writes, never runs.
//! - **A hook can only narrow** ([`Verdict`]): its deny denies, its ask
//!   asks, its allow changes nothing (the router says so).
//! - **It fails closed**: a hook that exits with anything but 0 or 2, times
//!   out, prints past its cap or answers something that is not its JSON
//!   denies, with the reason. Every host GOAT learns from lets the call
//!   through then.
//! - **It is contained** ([`run`]): as `run_command` is (a view or
//!   Landlock, no network, a timeout, capped output), with the workspace
//!   read-only: what a policy hook writes is dropped.
//!
//! What a hook says is the hook's: callers escape it and frame it as the
//! hook's words before the model or a terminal sees it.

mod answer;
mod event;
mod matcher;
pub mod pin;
mod registry;
mod run;
mod turn;

pub use answer::{Answer, read_answer};
pub use event::Event;
pub use matcher::{alias_of, check_matcher, matches};
pub use registry::{
    DEFAULT_TIMEOUT_SECS, HookEntry, MAX_TIMEOUT_SECS, Registry, RegistryError, check_name,
};
pub use run::{HookRun, Hooks, PostToolUse, PreToolUse, Verdict, drop_changes};
pub use turn::TurnHook;
