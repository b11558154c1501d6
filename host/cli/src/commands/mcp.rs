//! `goat mcp serve`: GOAT's sandboxed tools for another agent, over MCP
//! on stdio (docs/mcp.md, ADR-0084).
//!
//! This file parses the flags and wires: `goat_session::direct` checks and
//! loads everything before the client connects (exit 2 when something is
//! wrong), `goat_mcp` serves. stdout is the protocol's; GOAT's own lines
//! (the session served, one per call) go to stderr, with everything the
//! client said escaped.

use std::path::PathBuf;

use anyhow::Context;
use goat_session::direct::{DirectOptions, prepare};

use crate::args::{DbArg, PermissionsArg};
use crate::{Outcome, note, stderr_note};

#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// Serve the Pen file tools, the approved plugins and (with
    /// --allow-commands, or a client that can ask its person) run_command
    /// over MCP on stdin and stdout, through the same gate, record and undo
    /// as a chat. The connection is a session in the store.
    Serve(ServeArgs),
    /// Add an MCP server whose tools the model may call once you trust
    /// them: goat mcp add NAME [--env VAR]... [--read DIR]... [--writes]
    /// [--network] -- COMMAND [ARGS]... It runs contained like a command.
    Add(super::mcp_servers::AddArgs),
    /// List the MCP servers, with what their tool definitions cost.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// Show a server, its trusted tools, and how what it offers now
    /// differs (it is started contained to ask).
    Show(super::mcp_servers::ProbeArgs),
    /// Start a server contained, show every tool it offers, and pin their
    /// definitions: a tool whose definition later changes is suspended
    /// until trusted again.
    Trust(super::mcp_servers::TrustArgs),
    /// Remove a server.
    Remove {
        /// The server's name.
        name: String,
        #[command(flatten)]
        store: DbArg,
    },
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// The directory the tools may see (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    store: DbArg,
    #[command(flatten)]
    permissions: PermissionsArg,
    /// Let writing tools change files where no deny rule forbids it.
    /// Without it, a write no rule decides is asked of the client's person
    /// (MCP elicitation) where the client can ask, and otherwise denied.
    #[arg(long)]
    allow_writes: bool,
    /// Offer run_command and let it run commands no rule decides, inside
    /// the command sandbox; deny rules still win. Without it, run_command
    /// is offered only to a client that can ask its person, and asked.
    #[arg(long)]
    allow_commands: bool,
    /// The approval mode: ask, accept-edits or read-only (as `goat run`).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    mode: Option<goat_router::ApprovalMode>,
    /// Serve only these tools, comma-separated (e.g.
    /// read_file,list_directory); each must be on offer.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// Offer `goat_undo`: the client may put back the files a call of this
    /// session changed, as `goat undo` would (refused if any changed since).
    #[arg(long)]
    offer_undo: bool,
}

fn parse_mode(text: &str) -> Result<goat_router::ApprovalMode, String> {
    goat_router::ApprovalMode::from_name(text)
        .ok_or_else(|| format!("'{text}' is not a mode; use ask, accept-edits or read-only"))
}

pub fn mcp(command: McpCommand) -> anyhow::Result<Outcome> {
    match command {
        McpCommand::Serve(args) => serve(args),
        McpCommand::Add(args) => super::mcp_servers::add(args),
        McpCommand::List { json, store } => super::mcp_servers::list(json, store.db.as_deref()),
        McpCommand::Show(args) => super::mcp_servers::show(&args),
        McpCommand::Trust(args) => super::mcp_servers::trust(&args),
        McpCommand::Remove { name, store } => {
            super::mcp_servers::remove(&name, store.db.as_deref())
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<Outcome> {
    let opts = DirectOptions {
        workspace: args.workspace,
        db: args.store.db,
        permissions: args.permissions.permissions,
        allow_writes: args.allow_writes,
        allow_commands: args.allow_commands,
        mode: args.mode,
        tools: args.tools,
        offer_undo: args.offer_undo,
    };
    let prepared = prepare(&opts, &stderr_note)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(goat_mcp::serve_stdio(prepared, Box::new(|line| note(line))))?;
    Ok(Outcome::Ok)
}
