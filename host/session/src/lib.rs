//! One GOAT session for every front end (ADR-0080).
//!
//! Everything that assembles a session lives here: the settings
//! ([`config`]), where host state lives and the checks that keep it out of
//! the workspace ([`paths`]), the repository's `AGENTS.md`
//! ([`instructions`]), and the one assembly of store, permission gate,
//! router and Shepherd ([`assemble`]). A turn is driven by [`drive`], which
//! speaks one typed protocol ([`protocol`]): events flow out, in order,
//! each with its sequence number; approvals flow in, answered by the
//! front end. The terminal chat, `goat run` (its text, JSON and JSON Lines
//! output) and the demo are renderers of that protocol; so are the MCP
//! server and the ACP agent that build on it.
//!
//! Nothing here writes to a terminal. What assembly has to say (a resumed
//! session, the project instructions read, a plugin left out) goes to the
//! front end's [`Notes`]; [`text`] has the escaping every front end uses
//! for text from outside before it reaches a terminal.

pub mod assemble;
pub mod config;
pub mod direct;
pub mod drive;
pub mod instructions;
pub mod paths;
pub mod preview;
pub mod protocol;
pub mod text;
pub mod undo;

pub use assemble::{
    OpenOptions, Opened, Parts, Plugins, Start, command_tool, engine_slots, engine_with, for_turn,
    host_files, open, read_only_sandbox, sandbox, sandbox_and_tools, server_reads, system_prompt,
    tools_in,
};
pub use drive::{Budget, Driver, Events, TurnReport};
pub use protocol::{AttemptEnded, AttemptsEnded, Event, EventKind, Outcome, SCHEMA_VERSION};

/// Where a session's diagnostics go: one line each, said by GOAT (a
/// resumed session, the `AGENTS.md` read, a plugin left out). A terminal
/// front end prints them on stderr; they are never part of an output
/// stream a program parses.
pub type Notes<'a> = &'a (dyn Fn(&str) + Sync);
