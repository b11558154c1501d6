//! `goat chat`: a conversation of turns in one session.
//!
//! Each line typed is one turn through the Shepherd, exactly as `goat run`
//! runs it: the answer streams to stdout, tool calls are one line each on
//! stderr, writes no rule decides are asked about at the terminal.
//!
//! At a terminal the prompt is typed into the composer ([`crate::composer`]):
//! line editing, history kept beside the store, a paste as one prompt,
//! Alt-Enter for a new line, Tab completing slash commands. Lines that are
//! slash commands ([`slash`]) are handled here and never sent to the model.
//!
//! Ctrl-C during a turn cancels that turn (the store records it as
//! cancelled) and comes back to the prompt; a second Ctrl-C in the same
//! turn quits at once. Ctrl-C at the prompt, or Ctrl-D, leaves. Without a
//! terminal on stdin, lines are read from it as prompts, one turn each, and
//! nothing is ever asked: writes no rule allows are denied.
//!
//! One thread reads stdin for the whole chat and a signal task watches
//! Ctrl-C; both feed one queue, which the prompt and the approval questions
//! read. At a terminal that thread reads only when asked: with the composer
//! for the prompt, a plain line for an answer, so an approval question can
//! be answered, or interrupted, while a turn is running, and a line typed
//! while the model works is dropped before a question rather than taken as
//! its answer.

mod attempts;
mod slash;

use std::io::{self, IsTerminal, Write};
use std::sync::PoisonError;

use anyhow::Context;
use goat_shepherd::TurnError;

use crate::approval::{Pager, TerminalApprover};
use crate::args::TurnOptions;
use crate::composer::{ComposerConfig, history_path};
use crate::printer::Printer;
use crate::session;
use crate::style::Style;
use crate::terminal::{AtRest, Console, ConsoleAnswers, Input, run_turn};
use crate::{Outcome, note};

use slash::{ChatState, Flow, Line};

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
    // The history file beside the store; the store's own checks (never in
    // the workspace) have run by the time the first prompt is read.
    // Not while `user_prompt_submit` hooks screen prompts: a prompt one
    // withholds is kept nowhere, the history file included.
    let screened = goat_state::paths::hooks_file(args.turn.store.db.as_deref())
        .ok()
        .and_then(|file| goat_hooks::Registry::load(file.resolved()).ok())
        .is_none_or(|registry| {
            registry
                .hooks
                .iter()
                .any(|h| h.event == goat_hooks::Event::UserPromptSubmit)
        });
    let history = crate::paths::store_path(args.turn.store.db.as_deref())
        .ok()
        .and_then(|path| history_path(&path.into_resolved()))
        .filter(|_| !screened);
    let console = Console::start(
        &runtime,
        AtRest::Leave,
        Some(ComposerConfig {
            history,
            commands: slash::names(),
        }),
    )?;
    let (printer, events) = crate::printer::shared(true);
    let approver: Option<Box<dyn goat_router::Approver>> = if terminal && io::stderr().is_terminal()
    {
        Some(events.approver(Box::new(TerminalApprover {
            answers: ConsoleAnswers(console.clone()),
            output: io::stderr(),
            style: Style::stderr(),
            pager: Pager::from_env(),
            width: crate::screen::stderr_columns(),
        })))
    } else {
        None
    };
    let opened = session::for_turn(&args.turn.open_options(), approver, &crate::stderr_note)?;
    let driver = goat_session::Driver::new(opened, events, goat_session::Budget::default());
    let opened = &driver.opened;
    note(format_args!(
        "chatting with {} at {} in {}; mode {}; /help lists commands; Alt-Enter adds a line; \
         Ctrl-C cancels a turn, Ctrl-D or Ctrl-C at the prompt leaves",
        crate::text::escape_controls(&opened.model),
        crate::text::escape_controls(&opened.engine_url),
        opened.workspace.display(),
        opened.mode.get().name(),
    ));
    if let Some(why) = runtime.block_on(opened.shepherd.check_tools_shown()) {
        note(Style::stderr().yellow(&crate::text::tools_not_shown(why)));
    }
    let turns_before = opened.turn_count()?;
    if args.turn.session.is_some() {
        show_recap(opened);
    }
    // Whether any turn got as far as the engine: a new session none did
    // is not kept (as with `goat run`).
    let mut reached = false;
    let mut attempt_settings = attempts::AttemptsSettings::default();

    loop {
        let shown = match opened.mode.get() {
            goat_router::ApprovalMode::Ask => "> ".to_owned(),
            other => format!("{}> ", other.name()),
        };
        let input = if terminal {
            console.prompt(&shown)
        } else {
            console.prompt("")
        };
        let line = match input {
            Input::Line(line) => line,
            Input::Eof | Input::Interrupt => {
                if terminal {
                    let _ = writeln!(io::stderr());
                }
                break;
            }
        };
        let prompt = match slash::classify(line.trim()) {
            Line::Prompt(prompt) => prompt,
            Line::Command { name, rest } => {
                let mut err = io::stderr();
                let mut state = ChatState {
                    opened,
                    out: &mut err,
                    runtime: &runtime,
                    console: &console,
                    turn: &args.turn,
                    attempts: &mut attempt_settings,
                };
                match slash::dispatch(&mut state, name, rest) {
                    Flow::Continue => continue,
                    Flow::Leave => break,
                }
            }
        };
        if prompt.is_empty() {
            continue;
        }

        *printer.lock().unwrap_or_else(PoisonError::into_inner) = Printer::new(true);
        let result = run_turn(Some(&console), &runtime, &driver, prompt, false, None).result;
        printer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish(result.is_ok());
        reached |= !matches!(&result, Err(TurnError::Engine(e)) if e.nothing_sent());
        match result {
            Ok(summary) => {
                if let Some(line) = crate::turn_stats::stats_line(&summary.stats) {
                    note(line);
                }
            }
            Err(TurnError::Cancelled) => {
                note("the turn was cancelled and is recorded as cancelled")
            }
            Err(e) => {
                crate::error(format_args!(
                    "the turn failed: {}",
                    crate::text::turn_failure(e)
                ));
                // Its rounds spent tokens too.
                let stats = opened.shepherd.last_turn_stats();
                if let Some(line) = crate::turn_stats::stats_line(&stats) {
                    note(line);
                }
            }
        }
    }
    let id = &opened.session_id;
    let removed = turns_before == 0
        && !reached
        && opened
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove_session(id)?;
    if removed {
        note(format_args!(
            "no turn reached the engine, so session {id} was not kept"
        ));
    } else {
        note(format_args!(
            "session {id} is kept in {}; continue it with goat chat --session {id}",
            opened.store_path.display(),
        ));
    }
    Ok(Outcome::Ok)
}

/// The last exchanges of a resumed session, on stderr.
fn show_recap(opened: &session::Opened) {
    let turns = opened
        .store
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .turns(&opened.session_id);
    match turns {
        Ok(turns) => {
            let mut err = io::stderr().lock();
            let _ = err.write_all(crate::recap::recap(&turns).as_bytes());
        }
        Err(e) => note(format_args!(
            "cannot read the earlier turns: {}",
            crate::text::escape_controls(&e.to_string())
        )),
    }
}
