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
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use goat_engine::CancellationToken;
use goat_shepherd::TurnError;

use crate::console::{Answers, Input, Style, TerminalApprover, read_input};
use crate::run::{self, Printer, TurnOptions};
use crate::{Outcome, note};

/// Exit status after a second Ctrl-C, the shell's convention for SIGINT.
const FORCED_QUIT_STATUS: i32 = 130;

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
    let console = Console::start(&runtime)?;
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
    let opened = run::open(&args.turn, approver)?;
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

        let cancel = CancellationToken::new();
        console.begin_turn(cancel.clone());
        let mut printer = Printer::new(true);
        let result = runtime.block_on(
            opened
                .shepherd
                .run_turn(prompt, &cancel, &mut |event| printer.event(event)),
        );
        printer.finish(result.is_ok());
        console.end_turn();
        match result {
            Ok(_) => {}
            Err(TurnError::Cancelled) => {
                note("the turn was cancelled and is recorded as cancelled")
            }
            Err(e) => note(format_args!(
                "error: the turn failed: {:#}",
                anyhow::Error::new(e)
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

/// Whether a turn is running, for what Ctrl-C means.
#[derive(Default)]
struct State {
    /// The running turn's token; `None` at the prompt.
    turn: Option<CancellationToken>,
    /// Ctrl-Cs during this turn.
    interrupts: u32,
    /// An approval question is waiting for an answer.
    asking: bool,
    /// End of input was seen while discarding type-ahead; kept for the next
    /// read, so it is not lost.
    eof: bool,
}

/// The one reader of stdin and Ctrl-C for the whole chat.
struct Console {
    queue: Mutex<Receiver<Input>>,
    send: Sender<Input>,
    state: Mutex<State>,
}

impl Console {
    /// Starts the stdin thread and the Ctrl-C task. From here on Ctrl-C no
    /// longer kills GOAT: the console decides what it means.
    fn start(runtime: &tokio::runtime::Runtime) -> anyhow::Result<Arc<Self>> {
        let (send, queue) = mpsc::channel();
        let console = Arc::new(Self {
            queue: Mutex::new(queue),
            send: send.clone(),
            state: Mutex::default(),
        });
        std::thread::Builder::new()
            .name("goat-stdin".to_owned())
            .spawn(move || {
                let mut stdin = io::stdin().lock();
                loop {
                    let input = read_input(&mut stdin);
                    let eof = input == Input::Eof;
                    if send.send(input).is_err() || eof {
                        return;
                    }
                }
            })
            .context("starting the thread that reads the terminal")?;
        // Registered before this returns, so no Ctrl-C can fall back to
        // the default of killing the process mid-write.
        let mut interrupts = {
            let _entered = runtime.enter();
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .context("catching Ctrl-C")?
        };
        let watcher = console.clone();
        runtime.spawn(async move {
            while interrupts.recv().await.is_some() {
                watcher.interrupt();
            }
        });
        Ok(console)
    }

    /// The next line typed, end of input, or Ctrl-C at the prompt.
    fn next(&self) -> Input {
        if self.lock_state().eof {
            return Input::Eof;
        }
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.recv().unwrap_or(Input::Eof)
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn begin_turn(&self, token: CancellationToken) {
        let mut state = self.lock_state();
        state.turn = Some(token);
        state.interrupts = 0;
    }

    /// Back at the prompt. A Ctrl-C that cancelled the turn is not also a
    /// request to leave.
    fn end_turn(&self) {
        self.lock_state().turn = None;
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let mut kept = Vec::new();
        loop {
            match queue.try_recv() {
                Ok(Input::Interrupt) => {}
                Ok(other) => kept.push(other),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        for input in kept {
            let _ = self.send.send(input);
        }
    }

    /// Ctrl-C: at the prompt, leave; in a turn, cancel it (and answer a
    /// waiting question with no); a second time in a turn, quit at once.
    fn interrupt(&self) {
        let mut state = self.lock_state();
        let Some(token) = state.turn.clone() else {
            let _ = self.send.send(Input::Interrupt);
            return;
        };
        state.interrupts += 1;
        if state.interrupts == 1 {
            note(
                "cancelling: the turn stops after the step in progress (Ctrl-C again quits at \
                 once)",
            );
            token.cancel();
            if state.asking {
                let _ = self.send.send(Input::Interrupt);
            }
        } else {
            // The store keeps the turn as running and any call as pending;
            // resuming the session marks them interrupted.
            note("quitting; resume the session to mark what was in progress as interrupted");
            std::process::exit(FORCED_QUIT_STATUS);
        }
    }
}

/// Approval answers from the chat's console.
struct ConsoleAnswers(Arc<Console>);

impl Answers for ConsoleAnswers {
    fn next(&mut self) -> Input {
        {
            let mut state = self.0.lock_state();
            if state
                .turn
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
            {
                // Ctrl-C came before the question: the answer is no.
                return Input::Interrupt;
            }
            state.asking = true;
        }
        let input = self.0.next();
        self.0.lock_state().asking = false;
        input
    }

    fn discard_typeahead(&mut self) {
        let queue = self.0.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match queue.try_recv() {
                Ok(Input::Line(_)) => {}
                Ok(Input::Eof) => {
                    self.0.lock_state().eof = true;
                    return;
                }
                // Only Ctrl-C during a turn reaches the queue, and the
                // turn is already cancelled: answer no.
                Ok(Input::Interrupt) => {
                    let _ = self.0.send.send(Input::Interrupt);
                    return;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            }
        }
    }
}
