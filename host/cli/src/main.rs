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
//!
//! Layout: `commands/` has one file per subcommand (its arguments, then a
//! call into the rest); `args` the flags several share; `config` the table
//! of settings; `session` the one assembly of store, gate, router and
//! Shepherd; `terminal` stdin and the Ctrl-C policy; `approval` the
//! question, its preview and diff; `printer` and `style` what a turn shows.
//! `plugins`, `tools` and `paths` are the catalog and host state.

mod approval;
mod args;
mod commands;
mod composer;
mod markdown;
mod printer;
mod recap;
mod screen;
mod style;
mod terminal;
mod turn_stats;

// The session core (ADR-0080): settings, host paths, AGENTS.md, the one
// assembly, text escaping. The CLI parses arguments and renders.
use goat_session::assemble as session;
use goat_session::{config, paths, text};

use std::fmt::Display;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use text::{GOAT_LINE, GOAT_MORE};

#[derive(Parser)]
#[command(
    name = "goat",
    version,
    long_version = long_version(),
    about = "GOAT: a hardened agent host for local coding models"
)]
struct Cli {
    #[command(subcommand)]
    command: commands::Command,
}

/// `goat --version`: the version, and whether the built-in tools run code
/// compiled when this binary was built (issue 38) or are compiled on their
/// first call, and why.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let tools = match goat_sandbox::precompiled_builtins() {
            Ok(n) => format!(
                "{n} built-in tools compiled when this binary was built (compiled again on their \
                 first call where this machine cannot run that code)"
            ),
            Err(why) => format!(
                "built-in tools compiled on their first call: not compiled when this binary was \
                 built ({why})"
            ),
        };
        format!("{}\n{tools}", env!("CARGO_PKG_VERSION"))
    })
}

/// How a command ended, beyond plain success.
enum Outcome {
    Ok,
    /// The turn or tool call failed, was denied or was cancelled: exit 1.
    Failed,
    /// `goat run`: the exit code of the turn's outcome
    /// ([`goat_session::Outcome::exit_code`]).
    Code(u8),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::dispatch(cli.command) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::Code(code)) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors quote files, engines and plugins (a plugin's trap
            // names its own functions): nothing in them may drive the
            // terminal.
            error(text::escape_for_terminal(&text::error_chain(e.chain())));
            ExitCode::from(2)
        }
    }
}

/// Whether `e` is stdout closed by its reader (`goat ... | head`), also
/// when a JSON writer wrapped the I/O error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
    })
}

/// One line from GOAT itself on stderr, `▌ goat: ...` ([`GOAT_LINE`]),
/// wrapped at words on a terminal, its later lines under the text after
/// the mark ([`GOAT_MORE`]).
///
/// A closed stderr is ignored rather than a panic (as `eprintln!` would
/// be): losing a status line must not abort a turn that is changing files.
fn note(line: impl Display) {
    // The answer may have left its line open on the same screen.
    screen::end_open_line();
    // At a terminal, wrapped at words: the terminal would break it
    // anywhere.
    let text = format!("{GOAT_LINE}{line}");
    let text = match screen::stderr_columns() {
        Some(width) => screen::wrap_words(&text, width, GOAT_MORE),
        None => text,
    };
    let mut err = io::stderr().lock();
    style::clear_spinner_line(&mut err);
    let _ = writeln!(err, "{text}");
}

/// [`note`] as the session core takes it ([`goat_session::Notes`]).
fn stderr_note(line: &str) {
    note(line);
}

/// `▌ goat: error: ...` on stderr, the `error:` in red where colour is
/// allowed (stderr a terminal, no `NO_COLOR`).
fn error(message: impl Display) {
    note(format_args!(
        "{} {message}",
        style::Style::stderr().red("error:")
    ));
}
