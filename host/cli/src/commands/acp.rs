//! `goat acp`: GOAT as the agent behind an editor, over the Agent Client
//! Protocol (v1) on stdio (ADR-0085, docs/editors.md). The work is
//! goat-acp's; this parses the flags and starts it.
//!
//! stdout carries the protocol and nothing else; GOAT's notes go to
//! stderr, escaped, as for every command.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::Outcome;
use crate::args::{DbArg, EngineArgs, PermissionsArg};

#[derive(clap::Args)]
pub struct AcpArgs {
    /// The only directory a client may open sessions in (its `cwd` must be
    /// this directory); without it, any directory that passes the checks
    /// `--workspace` gets.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    store: DbArg,
    #[command(flatten)]
    permissions: PermissionsArg,
    /// Let writing tools change files where no deny rule forbids it,
    /// without asking the editor.
    #[arg(long)]
    allow_writes: bool,
    /// Let the model run commands no rule decides, inside the command
    /// sandbox, without asking the editor; deny rules still win.
    #[arg(long)]
    allow_commands: bool,
    /// The approval mode sessions start in: `ask`, `accept-edits` or
    /// `read-only`; the editor switches it with session/set_mode (default:
    /// $GOAT_MODE, else `mode` in the config file, else ask).
    #[arg(long, value_name = "MODE", value_parser = crate::args::parse_mode)]
    mode: Option<goat_router::ApprovalMode>,
    /// Most rounds (requests to the engine) a turn may take.
    #[arg(long, value_name = "N", value_parser = crate::args::parse_max_rounds)]
    max_rounds: Option<usize>,
    /// The engine's context window in tokens.
    #[arg(long, value_name = "TOKENS")]
    context_tokens: Option<u64>,
}

pub fn acp(args: AcpArgs) -> anyhow::Result<Outcome> {
    let open = goat_session::OpenOptions {
        workspace: args.workspace,
        engine: args.engine.flags(),
        db: args.store.db,
        permissions: args.permissions.permissions,
        allow_writes: args.allow_writes,
        allow_commands: args.allow_commands,
        mode: args.mode,
        max_rounds: args.max_rounds,
        context_tokens: args.context_tokens,
        session: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(goat_acp::serve(goat_acp::ServeOptions {
        open,
        // What assembly says (a resumed session, AGENTS.md read) quotes
        // the workspace: escaped before it reaches stderr.
        notes: Arc::new(|line: &str| crate::note(crate::text::escape_for_terminal(line))),
    }))?;
    Ok(Outcome::Ok)
}
