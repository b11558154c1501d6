//! GOAT as an MCP client (ADR-0086): the servers the person added, each
//! run contained like a command, its tools pinned when trusted and taken
//! down the router's one road.
//!
//! - [`registry`]: the servers and their trusted definitions, one file in
//!   GOAT's host state (never in a workspace).
//! - [`hub`]: a session's servers, each started at its first call inside
//!   a view ([`goat_command::start_server`]) and stopped with the session;
//!   a tool whose live definition no longer matches its pin is suspended.
//! - [`connection`]: one server's process and the SDK's client over its
//!   pipes, with whole JSON lines only and a cap on each message.
//! - [`render`]: a result as the model reads it: escaped, capped, images
//!   and resources named, never inlined.
//! - [`offer`]: each tool, or a search tool and a call tool for them when
//!   their definitions would take too much of the window.

pub mod connection;
pub mod hub;
pub mod offer;
pub mod pins;
pub mod registry;
pub mod render;

pub use hub::{Hub, list_live, start_contained};
pub use pins::{changed_tools, definition, shared_name, shared_names};
pub use registry::{PinnedTool, Registry, ServerEntry, Trusted, check_name, exposed_name};
/// A tool as a server offers it now.
pub use rmcp::model::Tool as LiveTool;
