//! GOAT's sandboxed tools for any agent, over MCP (`goat mcp serve`).
//!
//! The key decision: the server is one more front end of the session
//! core, never a second assembly. `goat-session` checks and loads the
//! tools ([`goat_session::direct::prepare`]) before anyone connects; the
//! client's `initialize` names the session's model and says whether it can
//! ask its person (elicitation), and then the session is opened with the
//! one router assembly. Every `tools/call` is a direct call
//! ([`goat_router::DirectCalls`]): arguments, the gate (its rules, the
//! mode, deny wins), the fence, then the sandbox or the command
//! containment, recorded as a turn with its decision, result and
//! checkpoint, so `goat sessions show`, `goat sessions diff` and `goat
//! undo` work on what another agent did.
//!
//! What the client says is data: its name is stored as the model and
//! escaped wherever GOAT prints it; its arguments reach the gate only
//! through the tool's declared path fields; a client that claims it can
//! ask its person and then cannot gets a denial, never a write.
//!
//! Only the stdio transport is served; the protocol revisions are those
//! with an `initialize` handshake (up to 2025-11-25), because the
//! handshake is where the client names itself.

mod approve;
mod server;
mod tools;

pub use server::{MAX_ARGUMENTS_BYTES, Say, serve, serve_stdio};
pub use tools::{annotations, mcp_tools};
