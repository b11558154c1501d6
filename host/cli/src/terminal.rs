//! The terminal while GOAT runs: one reader of stdin and Ctrl-C that the
//! chat's prompt and every approval question read from, and what Ctrl-C
//! means (the policy, implemented once here, used by `goat chat`, `goat
//! run` and `goat demo`).

use std::io::{self, BufRead as _, IsTerminal};
use std::pin::pin;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use goat_engine::CancellationToken;
use goat_shepherd::{Shepherd, TurnError, TurnSummary};

use crate::approval::Answers;
use crate::note;
use crate::printer::Printer;

/// One thing typed at the terminal, or the end of typing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A line, without its line end.
    Line(String),
    /// End of input (Ctrl-D, or the pipe closed).
    Eof,
    /// Ctrl-C while waiting for an answer.
    Interrupt,
}

/// `line` without its `\n` or `\r\n`.
fn trim_line_end(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Exit status after a second Ctrl-C, the shell's convention for SIGINT.
const FORCED_QUIT_STATUS: i32 = 130;

/// What Ctrl-C means when no turn is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtRest {
    /// Leave: the prompt reads [`Input::Interrupt`] (`goat chat`).
    Leave,
    /// Quit at once, as Ctrl-C would without GOAT catching it (`goat run`,
    /// before and after its one turn).
    Exit,
}

/// What Ctrl-C does to a running turn, the one rule for every command:
/// the first cancels it (the Shepherd stops after the step in progress and
/// records the turn as cancelled), a second quits at once. The console and
/// the plain driver ([`drive`]) only count presses into it.
#[derive(Default)]
struct TurnInterrupts {
    /// The running turn's token; `None` at the prompt.
    turn: Option<CancellationToken>,
    /// Ctrl-Cs during this turn.
    presses: u32,
}

/// What one Ctrl-C did.
enum Press {
    /// No turn is running: the caller's [`AtRest`] decides.
    AtRest,
    /// The running turn is cancelled (this was the first press).
    Cancelled,
}

impl TurnInterrupts {
    fn begin(&mut self, token: CancellationToken) {
        self.turn = Some(token);
        self.presses = 0;
    }

    fn end(&mut self) {
        self.turn = None;
    }

    /// Whether the running turn was cancelled.
    fn cancelled(&self) -> bool {
        self.turn
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// One Ctrl-C: the first in a turn cancels it, a second quits at once.
    fn press(&mut self) -> Press {
        let Some(token) = &self.turn else {
            return Press::AtRest;
        };
        self.presses += 1;
        if self.presses == 1 {
            note(
                "cancelling: the turn stops after the step in progress (Ctrl-C again quits at \
                 once)",
            );
            token.cancel();
            Press::Cancelled
        } else {
            // The store keeps the turn as running and any call as pending;
            // resuming the session marks them interrupted.
            note("quitting; resume the session to mark what was in progress as interrupted");
            std::process::exit(FORCED_QUIT_STATUS);
        }
    }
}

/// The console's state, for what Ctrl-C and end of input mean.
#[derive(Default)]
struct State {
    interrupts: TurnInterrupts,
    /// An approval question is waiting for an answer.
    asking: bool,
    /// End of input was seen while discarding type-ahead; kept for the next
    /// read, so it is not lost.
    eof: bool,
}

/// The one reader of stdin and Ctrl-C while GOAT runs at a terminal: the
/// chat's prompt and every approval question read from it.
pub struct Console {
    queue: Mutex<Receiver<Input>>,
    send: Sender<Input>,
    state: Mutex<State>,
    at_rest: AtRest,
    /// Whether stdin is a terminal: there end of input is one Ctrl-D, and
    /// reading goes on after it; on a pipe it is final.
    terminal: bool,
}

impl Console {
    /// Starts the stdin thread and the Ctrl-C task. From here on Ctrl-C no
    /// longer kills GOAT: the console decides what it means.
    pub fn start(runtime: &tokio::runtime::Runtime, at_rest: AtRest) -> anyhow::Result<Arc<Self>> {
        let (send, queue) = mpsc::channel();
        let terminal = io::stdin().is_terminal();
        let console = Arc::new(Self {
            queue: Mutex::new(queue),
            send: send.clone(),
            state: Mutex::default(),
            at_rest,
            terminal,
        });
        std::thread::Builder::new()
            .name("goat-stdin".to_owned())
            .spawn(move || {
                let mut stdin = io::stdin().lock();
                loop {
                    let mut line = String::new();
                    let (input, last) = match stdin.read_line(&mut line) {
                        // Ctrl-D at a terminal ends one read, not the
                        // terminal: reading goes on. A pipe has ended.
                        Ok(0) => (Input::Eof, !terminal),
                        Ok(_) => (Input::Line(trim_line_end(&line).to_owned()), false),
                        Err(_) => (Input::Eof, true),
                    };
                    if send.send(input).is_err() || last {
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
    pub fn next(&self) -> Input {
        if self.lock_state().eof {
            return Input::Eof;
        }
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let input = queue.recv().unwrap_or(Input::Eof);
        if input == Input::Eof && !self.terminal {
            // Nothing more will come; every later read is the end too,
            // instead of waiting forever.
            self.lock_state().eof = true;
        }
        input
    }

    /// Removes every queued Ctrl-C, keeping the rest in order; whether
    /// there was one.
    fn take_interrupts(&self) -> bool {
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let mut kept = Vec::new();
        let mut interrupted = false;
        loop {
            match queue.try_recv() {
                Ok(Input::Interrupt) => interrupted = true,
                Ok(other) => kept.push(other),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        for input in kept {
            let _ = self.send.send(input);
        }
        interrupted
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A turn starts. A Ctrl-C typed just before it (after the line was
    /// read) cancels it: it was meant for what was about to run.
    pub fn begin_turn(&self, token: CancellationToken) {
        let early = self.take_interrupts();
        let mut state = self.lock_state();
        state.interrupts.begin(token);
        if early {
            state.interrupts.press();
        }
    }

    /// Back at the prompt. A Ctrl-C that cancelled the turn is not also a
    /// request to leave.
    pub fn end_turn(&self) {
        self.lock_state().interrupts.end();
        self.take_interrupts();
    }

    /// Ctrl-C: at the prompt, leave; in a turn, cancel it (and answer a
    /// waiting question with no); a second time in a turn, quit at once.
    fn interrupt(&self) {
        let mut state = self.lock_state();
        match state.interrupts.press() {
            Press::AtRest => match self.at_rest {
                AtRest::Leave => {
                    let _ = self.send.send(Input::Interrupt);
                }
                AtRest::Exit => {
                    note("interrupted");
                    std::process::exit(FORCED_QUIT_STATUS);
                }
            },
            Press::Cancelled => {
                if state.asking {
                    let _ = self.send.send(Input::Interrupt);
                }
            }
        }
    }
}

/// Approval answers from the console.
pub struct ConsoleAnswers(pub Arc<Console>);

impl Answers for ConsoleAnswers {
    fn next(&mut self) -> Input {
        {
            let mut state = self.0.lock_state();
            if state.interrupts.cancelled() {
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

/// Runs one turn, the answer and activity shown by `printer`. With
/// `console` (at a terminal) it watches Ctrl-C, so a waiting question is
/// answered with no; without one, [`drive`] does.
pub(crate) fn run_turn(
    console: Option<&Console>,
    runtime: &tokio::runtime::Runtime,
    shepherd: &Shepherd,
    prompt: &str,
    printer: &mut Printer,
) -> Result<TurnSummary, TurnError> {
    let Some(console) = console else {
        return runtime.block_on(drive(shepherd, prompt, printer));
    };
    let cancel = CancellationToken::new();
    console.begin_turn(cancel.clone());
    let result = runtime.block_on(shepherd.run_turn(prompt, &cancel, &mut |event| {
        printer.event(event);
    }));
    console.end_turn();
    result
}

/// Runs the turn without a terminal (and in the demo), catching Ctrl-C
/// only while it runs.
async fn drive(
    shepherd: &Shepherd,
    prompt: &str,
    printer: &mut Printer,
) -> Result<TurnSummary, TurnError> {
    let cancel = CancellationToken::new();
    let mut on_event = |event| printer.event(event);
    let mut turn = pin!(shepherd.run_turn(prompt, &cancel, &mut on_event));
    let mut interrupts = TurnInterrupts::default();
    interrupts.begin(cancel.clone());
    // Polled before the turn (the select is biased), so the handler is in
    // place before the first request: a Ctrl-C is never the default
    // "kill now" once the turn has begun.
    let mut interrupt = pin!(tokio::signal::ctrl_c());
    let mut armed = true;
    loop {
        tokio::select! {
            biased;
            signal = &mut interrupt, if armed => {
                if let Err(e) = signal {
                    note(format_args!("cannot catch Ctrl-C ({e}); it will end GOAT at once"));
                    armed = false;
                    continue;
                }
                interrupt.set(tokio::signal::ctrl_c());
                interrupts.press();
            }
            result = &mut turn => return result,
        }
    }
}
