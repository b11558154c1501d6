//! One file per subcommand, as cargo lays out its commands: each declares
//! its arguments and calls into the rest of the crate, which does the
//! work. [`Command`] is the list; [`dispatch`] runs one.

mod acp;
pub(crate) mod atif;
mod attempts;
mod chat;
mod config;
mod demo;
mod detect;
pub(crate) mod diff;
mod export;
mod hooks;
mod hooks_import;
mod mcp;
mod mcp_servers;
mod permissions;
mod plugin_new;
mod plugins;
mod probe;
mod run;
mod run_attempts;
pub(crate) mod sessions;
mod stats;
mod tools;
pub(crate) mod undo;

use clap::Subcommand;

use crate::Outcome;

#[derive(Subcommand)]
pub enum Command {
    /// Run a real turn with no model at hand: a replayed Qwen3-Coder session
    /// (including a tool call written as text) drives the real Shepherd,
    /// recovery, router, gate, sandbox and store in a throwaway workspace.
    Demo(demo::DemoArgs),
    /// A conversation with the model in one session: each line typed is a
    /// turn. Ctrl-C cancels a turn; Ctrl-D, or Ctrl-C at the prompt, leaves.
    Chat(chat::ChatArgs),
    /// Send PROMPT to the model and let it work in the workspace: one turn,
    /// its answer streamed to stdout, tool activity to stderr.
    Run(run::RunArgs),
    /// Serve the Agent Client Protocol (v1) on stdio: GOAT as the agent
    /// behind Zed, JetBrains, Neovim or VS Code (docs/editors.md). Every
    /// session is a GOAT session, its approvals asked through the editor.
    Acp(acp::AcpArgs),
    /// Put back the files one turn changed: each is checked first to hold
    /// what GOAT left there, and if any was changed since, nothing is
    /// restored. Commands' changes are put back too; plugins' are not kept.
    Undo(undo::UndoArgs),
    /// Serve GOAT's sandboxed tools to another agent over MCP (stdio), with
    /// the same gate, record and undo as a chat.
    Mcp {
        #[command(subcommand)]
        command: mcp::McpCommand,
    },
    /// Show the sessions in the store and what happened in them.
    Sessions {
        #[command(subcommand)]
        command: sessions::SessionsCommand,
    },
    /// Check that the engine returns this model's tool calls as structured
    /// calls: a few requests offering the Pen tools, each classified, then a
    /// verdict. Never runs a tool.
    Probe(probe::ProbeArgs),
    /// Per model and engine: turns, rounds, tool calls, and how often the
    /// model wrote tool calls as text, was recovered, or failed twice.
    Stats(stats::StatsArgs),
    /// The settings in effect (config file, environment, defaults) and
    /// where each comes from.
    Config {
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Manage the permission rules the gate applies to tool calls.
    Permissions {
        #[command(subcommand)]
        command: permissions::PermissionsCommand,
    },
    /// Add, list, inspect and remove plugin tools: third-party components
    /// run in the same sandbox, behind the same gate, named PLUGIN__TOOL.
    Plugins {
        #[command(subcommand)]
        command: plugins::PluginsCommand,
    },
    /// Add, list, trust and remove hooks: programs run before each tool
    /// call, given Claude Code's JSON, that can deny or ask but never
    /// allow more than the rules do.
    Hooks {
        #[command(subcommand)]
        command: hooks::HooksCommand,
    },
    /// Inspect and run tools directly, without a model.
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// The attempts `goat run --attempts` made, each kept in its own layer
    /// of the workspace: list them, show one, land another, discard them.
    Attempts {
        #[command(subcommand)]
        command: attempts::AttemptsCommand,
    },
    /// Run an attempt's check inside its layer (used by goat run
    /// --attempts).
    #[command(hide = true)]
    AttemptCheck(attempts::AttemptCheckArgs),
    /// Check an assistant message for tool-call markup written as text
    /// instead of a call, and print the verdict as one line of JSON.
    ///
    /// Exits 0 whether or not markup is found; read the "unexecuted" field.
    Detect(detect::DetectArgs),
}

/// Runs one command.
pub fn dispatch(command: Command) -> anyhow::Result<Outcome> {
    match command {
        Command::Demo(args) => demo::demo(args),
        Command::Stats(args) => stats::stats(args),
        Command::Probe(args) => probe::probe(args),
        Command::Run(args) => run::run(args),
        Command::Acp(args) => acp::acp(args),
        Command::Chat(args) => chat::chat(args),
        Command::Undo(args) => undo::undo(args),
        Command::Config { command } => config::config(command),
        Command::Mcp { command } => mcp::mcp(command),
        Command::Sessions { command } => sessions::sessions(command),
        Command::Permissions { command } => permissions::permissions(command),
        Command::Plugins { command } => plugins::plugins(command),
        Command::Tools { command } => tools::tools(command),
        Command::Hooks { command } => hooks::hooks(command),
        Command::Detect(args) => detect::detect(args),
        Command::Attempts { command } => attempts::attempts(command),
        Command::AttemptCheck(args) => attempts::attempt_check(args),
    }
}
