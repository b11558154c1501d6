//! `goat chat`: a conversation of turns in one session.
//!
//! Each line typed is one turn through the Shepherd, exactly as `goat run`
//! runs it: the answer streams to stdout, tool calls are one line each on
//! stderr, writes no rule decides are asked about at the terminal.
//!
//! Ctrl-C during a turn cancels that turn (the store records it as
//! cancelled) and comes back to the prompt; a second Ctrl-C in the same
//! turn quits at once. Ctrl-C at the prompt, or Ctrl-D, leaves. Without a
//! terminal on stdin, lines are read from it as prompts, one turn each, and
//! nothing is ever asked: writes no rule allows are denied.
//!
//! One thread reads stdin for the whole chat and a signal task watches
//! Ctrl-C; both feed one queue, which the prompt and the approval questions
//! read. So an approval question can be answered, or interrupted, while a
//! turn is running, and a line typed while the model works is not taken as
//! an answer to a question that had not been asked yet.

use std::io::{self, IsTerminal, Write};

use anyhow::Context;
use goat_shepherd::TurnError;

use crate::approval::TerminalApprover;
use crate::args::TurnOptions;
use crate::printer::Printer;
use crate::session;
use crate::style::Style;
use crate::terminal::{AtRest, Console, ConsoleAnswers, Input, run_turn};
use crate::{Outcome, note};

/// Typed at the prompt to leave, as well as Ctrl-D.
const LEAVE_COMMANDS: [&str; 2] = ["/exit", "/quit"];

#[derive(clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    turn: TurnOptions,
}

pub fn chat(args: ChatArgs) -> anyhow::Result<Outcome> {
    let terminal = io::stdin().is_terminal();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let console = Console::start(&runtime, AtRest::Leave)?;
    let approver: Option<Box<dyn goat_shepherd::Approver>> =
        if terminal && io::stderr().is_terminal() {
            Some(Box::new(TerminalApprover {
                answers: ConsoleAnswers(console.clone()),
                output: io::stderr(),
                style: Style::stderr(),
            }))
        } else {
            None
        };
    let opened = session::for_turn(&args.turn, approver)?;
    note(format_args!(
        "chatting with {} at {} in {}; Ctrl-C cancels a turn, Ctrl-D or Ctrl-C at the prompt \
         leaves",
        crate::text::escape_controls(&opened.model),
        crate::text::escape_controls(&opened.engine_url),
        opened.workspace.display()
    ));

    loop {
        if terminal {
            let mut err = io::stderr().lock();
            let _ = write!(err, "> ");
            let _ = err.flush();
        }
        let line = match console.next() {
            Input::Line(line) => line,
            Input::Eof | Input::Interrupt => {
                if terminal {
                    let _ = writeln!(io::stderr());
                }
                break;
            }
        };
        let prompt = line.trim();
        if prompt.is_empty() {
            continue;
        }
        if LEAVE_COMMANDS.contains(&prompt) {
            break;
        }

        let mut printer = Printer::new(true);
        let result = run_turn(
            Some(&console),
            &runtime,
            &opened.shepherd,
            prompt,
            &mut printer,
        );
        printer.finish(result.is_ok());
        match result {
            Ok(summary) => {
                if let Some(line) = crate::turn_stats::stats_line(&summary.stats) {
                    note(line);
                }
            }
            Err(TurnError::Cancelled) => {
                note("the turn was cancelled and is recorded as cancelled")
            }
            Err(e) => note(format_args!(
                "error: the turn failed: {}",
                crate::text::turn_failure(e)
            )),
        }
    }
    note(format_args!(
        "session {id} is kept in {}; continue it with goat chat --session {id}",
        opened.store_path.display(),
        id = opened.session_id,
    ));
    Ok(Outcome::Ok)
}
