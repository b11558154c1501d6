//! GOAT as an Agent Client Protocol agent (ADR-0085): `goat acp`.
//!
//! An editor (Zed, JetBrains, Neovim, VS Code) starts `goat acp` and speaks
//! ACP protocol v1 to it on stdio. This crate is one more renderer of the
//! session core (ADR-0080): each ACP session is a GOAT session assembled by
//! [`goat_session::for_turn`] with the client's `cwd` as the workspace,
//! driven by a [`goat_session::Driver`]; the core's events become
//! `session/update` notifications ([`updates`]), and the gate's questions
//! become `session/request_permission` requests ([`approve`]). It holds no
//! policy of its own: the gate decides, the Pen and the fence keep the
//! files, the store records, as for `goat run`.
//!
//! # Security
//!
//! The client is not trusted more than a terminal user's keyboard:
//!
//! - its `cwd` is checked as `--workspace` is (absolute, an existing
//!   directory, the store, permission database, config and plugins outside
//!   it), and with `--workspace` given it must be that directory;
//! - GOAT never uses the client's `fs/*` or `terminal/*` methods: the tools
//!   read and write through the Pen and the fence;
//! - the client's MCP servers are refused (GOAT starts only the servers the
//!   person added and trusted, ADR-0086, and offers those);
//! - an answer to a permission request that is not one of the options
//!   offered, a cancelled request, or a failed one, is a denial;
//! - nothing runs before the first `session/prompt`: opening a session asks
//!   the engine nothing and runs no command.

pub mod approve;
mod prompt;
mod replay;
mod serve;
mod session;
pub mod stop;
pub mod updates;
mod wire;

pub use serve::{ServeOptions, serve};
