//! The `goat` command.
//!
//! `goat chat` is a conversation in one session and `goat run` one turn:
//! each drives the model through the Shepherd, every tool call goes
//! through the AppToolRouter and the permission gate (writes no rule
//! decides are asked about at the terminal, with a diff), and every step
//! is recorded in the store, so `goat sessions` can show what happened and
//! `--session` can carry on. `goat config show` prints the settings in
//! effect (defaults, config file, environment) and where each came from.
//! `goat permissions` manages the gate's rules. `goat tools` runs one tool
//! by hand, through the same router and gate; `goat detect` runs the
//! unexecuted-markup detector (ADR-0065) on a saved assistant message;
//! `goat probe` checks that an engine returns structured tool calls;
//! `goat demo` runs a replayed session through the real stack.
//!
//! Exit status: 0 success; 1 the turn or the tool call failed, was denied
//! or was cancelled (the error is printed as the model would see it); 2 bad
//! usage or a host problem before anything ran.

mod chat;
mod config;
mod console;
mod demo;
mod detect;
mod paths;
mod permissions;
mod plugins;
mod probe;
mod run;
mod sessions;
mod stats;
mod text;
mod tools;

use std::fmt::Display;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "goat",
    version,
    about = "GOAT: a hardened agent host for local coding models"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a real turn with no model at hand: a replayed Qwen3-Coder session
    /// (including a tool call written as text) drives the real Shepherd,
    /// recovery, router, gate, sandbox and store in a throwaway workspace.
    Demo {
        /// The store to record the session in (else GOAT_DB, else the default).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// A conversation with the model in one session: each line typed is a
    /// turn. Ctrl-C cancels a turn; Ctrl-D, or Ctrl-C at the prompt, leaves.
    Chat(chat::ChatArgs),
    /// Send PROMPT to the model and let it work in the workspace: one turn,
    /// its answer streamed to stdout, tool activity to stderr.
    Run(run::RunArgs),
    /// Show the sessions in the store and what happened in them.
    Sessions {
        #[command(subcommand)]
        command: sessions::SessionsCommand,
    },
    /// Check that the engine returns this model's tool calls as structured
    /// calls: a few requests offering the Pen tools, each classified, then a
    /// verdict. Never runs a tool.
    Probe {
        /// The engine's base URL (else GOAT_ENGINE_URL).
        #[arg(long, value_name = "URL")]
        engine: Option<String>,
        /// The model name (else GOAT_MODEL).
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// The variable holding a bearer key, if the engine needs one.
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        /// How many requests to send.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=100))]
        count: u16,
    },
    /// Per model and engine: turns, rounds, tool calls, and how often the
    /// model wrote tool calls as text, was recovered, or failed twice.
    Stats {
        /// The store (else GOAT_DB, else the default).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The settings in effect (config file, environment, defaults) and
    /// where each comes from.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
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
    /// Inspect and run tools directly, without a model.
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Check an assistant message for tool-call markup written as text
    /// instead of a call, and print the verdict as one line of JSON.
    ///
    /// Exits 0 whether or not markup is found; read the "unexecuted" field.
    Detect {
        /// The tools offered with the request, comma-separated
        /// (e.g. read_file,write_file). Only these names count.
        #[arg(long, value_name = "NAMES", value_delimiter = ',', required = true)]
        tools: Vec<String>,
        /// The message's content; standard input when absent.
        file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print each setting's effective value and where it came from.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How a command ended, beyond plain success.
enum Outcome {
    Ok,
    /// The turn or tool call failed, was denied or was cancelled: exit 1.
    Failed,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors quote files, engines and plugins (a plugin's trap
            // names its own functions): nothing in them may drive the
            // terminal.
            note(format_args!(
                "error: {}",
                text::escape_for_terminal(&format!("{e:#}"))
            ));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn dispatch(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Demo { db } => demo::demo(db.as_deref()),
        Command::Stats { db, json } => stats::stats(db.as_deref(), json),
        Command::Probe {
            engine,
            model,
            api_key_env,
            count,
        } => probe::probe(
            engine.as_deref(),
            model.as_deref(),
            api_key_env.as_deref(),
            usize::from(count),
        ),
        Command::Run(args) => run::run(args),
        Command::Chat(args) => chat::chat(args),
        Command::Config {
            command: ConfigCommand::Show { json },
        } => config::show(json),
        Command::Sessions { command } => sessions::sessions(command),
        Command::Permissions { command } => permissions::permissions(command),
        Command::Plugins { command } => plugins::plugins(command),
        Command::Tools { command } => tools::tools(command),
        Command::Detect { tools, file } => detect::detect(&tools, file.as_deref()),
    }
}

/// One line from GOAT itself on stderr, `goat: ...`.
///
/// A closed stderr is ignored rather than a panic (as `eprintln!` would
/// be): losing a status line must not abort a turn that is changing files.
fn note(line: impl Display) {
    let mut err = io::stderr().lock();
    console::clear_spinner_line(&mut err);
    let _ = writeln!(err, "goat: {line}");
}
