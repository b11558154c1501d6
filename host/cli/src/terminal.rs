//! The terminal while GOAT runs: one reader of stdin and Ctrl-C that the
//! chat's prompt and every approval question read from, and what Ctrl-C
//! means (the policy, implemented once here, used by `goat chat`, `goat
//! run` and `goat demo`).

use std::io::{self, BufRead as _, IsTerminal, Write as _};
use std::os::fd::AsFd as _;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use goat_engine::CancellationToken;
use goat_session::{Driver, TurnReport};

use rustix::termios::QueueSelector;

use crate::approval::Answers;
use crate::composer::{Composer, ComposerConfig};
use crate::note;

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
/// the first cancels it (the Shepherd stops the request or the command or
/// MCP call in progress, ADR-0087, and records the turn as cancelled), a
/// second quits at once. The console and
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
                "cancelling: what is running is stopped and the turn ends (Ctrl-C again quits \
                 at once)",
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

/// What the chat or a question asks the reader thread for, at a terminal.
enum Request {
    /// A prompt, read with the composer after showing this text.
    Prompt(String),
    /// One plain line: an answer to a question.
    Line,
}

/// How often a plain read checks whether its asker still wants the line:
/// short enough that a question given up (Ctrl-C) frees the terminal at
/// once for what comes next, long enough to cost nothing.
const READ_CHECK_INTERVAL_MS: i32 = 100;

/// The one reader of stdin and Ctrl-C while GOAT runs at a terminal: the
/// chat's prompt and every approval question read from it.
///
/// At a terminal the reader thread reads only when asked ([`Console::prompt`]
/// with the composer, an answer as a plain line), so nothing else (a
/// question, a pager) ever competes with it for keys, and what is typed
/// while the model works stays in the terminal until a question drops it.
/// From a pipe it reads every line as it comes, as prompts.
pub struct Console {
    queue: Mutex<Receiver<Input>>,
    send: Sender<Input>,
    state: Mutex<State>,
    at_rest: AtRest,
    /// Whether stdin is a terminal: there end of input is one Ctrl-D, and
    /// reading goes on after it; on a pipe it is final.
    terminal: bool,
    /// At a terminal: asks the reader thread for the next read.
    requests: Option<Sender<Request>>,
    /// Whether a plain read's asker still waits for it.
    want_line: Arc<AtomicBool>,
}

impl Console {
    /// Starts the stdin thread and the Ctrl-C task. From here on Ctrl-C no
    /// longer kills GOAT: the console decides what it means. With
    /// `composer`, prompts at a terminal are read with the line editor.
    pub fn start(
        runtime: &tokio::runtime::Runtime,
        at_rest: AtRest,
        composer: Option<ComposerConfig>,
    ) -> anyhow::Result<Arc<Self>> {
        let (send, queue) = mpsc::channel();
        let terminal = io::stdin().is_terminal();
        let want_line = Arc::new(AtomicBool::new(false));
        let (requests, asked) = if terminal {
            let (requests, asked) = mpsc::channel();
            (Some(requests), Some(asked))
        } else {
            (None, None)
        };
        let console = Arc::new(Self {
            queue: Mutex::new(queue),
            send: send.clone(),
            state: Mutex::default(),
            at_rest,
            terminal,
            requests,
            want_line: want_line.clone(),
        });
        let reader = move || match asked {
            Some(asked) => read_on_request(&asked, &send, &want_line, composer),
            None => read_every_line(&send),
        };
        std::thread::Builder::new()
            .name("goat-stdin".to_owned())
            .spawn(reader)
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

    /// The chat's next prompt: at a terminal read with the composer after
    /// showing `shown`; from a pipe the next line. Or end of input, or
    /// Ctrl-C at the prompt.
    pub fn prompt(&self, shown: &str) -> Input {
        let Some(requests) = &self.requests else {
            return self.next();
        };
        {
            let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            // A Ctrl-C at rest already queued is the answer; a line is one
            // a question gave up on, meant for nothing.
            loop {
                match queue.try_recv() {
                    Ok(Input::Line(_)) => {}
                    Ok(other) => return other,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
        }
        if requests.send(Request::Prompt(shown.to_owned())).is_err() {
            return Input::Eof;
        }
        self.next()
    }

    /// The next input queued: a line, end of input, or Ctrl-C.
    fn next(&self) -> Input {
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

    /// One plain line for a question: at a terminal the reader is asked
    /// for it, and told to stop waiting when the answer came otherwise
    /// (Ctrl-C).
    fn answer(&self) -> Input {
        let Some(requests) = &self.requests else {
            return self.next();
        };
        self.want_line.store(true, Ordering::SeqCst);
        let input = if requests.send(Request::Line).is_err() {
            Input::Eof
        } else {
            self.next()
        };
        self.want_line.store(false, Ordering::SeqCst);
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

/// The reader thread from a pipe: every line as it comes.
fn read_every_line(send: &Sender<Input>) {
    let mut stdin = io::stdin().lock();
    loop {
        let mut line = String::new();
        let (input, last) = match stdin.read_line(&mut line) {
            Ok(0) => (Input::Eof, true),
            Ok(_) => (Input::Line(trim_line_end(&line).to_owned()), false),
            Err(_) => (Input::Eof, true),
        };
        if send.send(input).is_err() || last {
            return;
        }
    }
}

/// The reader thread at a terminal: reads only what is asked for. The
/// composer is set up at the first prompt.
fn read_on_request(
    asked: &Receiver<Request>,
    send: &Sender<Input>,
    want_line: &AtomicBool,
    composer: Option<ComposerConfig>,
) {
    let mut config = composer;
    let mut composer: Option<Composer> = None;
    // The line editor needs the terminal on both sides.
    let editable = io::stdout().is_terminal();
    for request in asked {
        let input = match request {
            Request::Prompt(shown) => {
                if composer.is_none()
                    && editable
                    && let Some(config) = config.take()
                {
                    composer = Composer::new(config)
                        .map_err(|e| note(format_args!("no line editing: {e}")))
                        .ok();
                }
                match composer.as_mut() {
                    Some(composer) => composer.read(&shown),
                    None => {
                        let mut err = io::stderr().lock();
                        let _ = write!(err, "{shown}");
                        let _ = err.flush();
                        drop(err);
                        match read_terminal_line(&|| true) {
                            Some(input) => input,
                            None => continue,
                        }
                    }
                }
            }
            Request::Line => match read_terminal_line(&|| want_line.load(Ordering::SeqCst)) {
                Some(input) => input,
                None => continue,
            },
        };
        if send.send(input).is_err() {
            return;
        }
    }
}

/// Most bytes one plain answer may hold; the rest of a longer line is
/// dropped. An answer is a letter or a sentence for the model.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// One line from the terminal (in its ordinary line mode), waiting only
/// while `wanted` says so: `None` when it stopped being wanted first.
fn read_terminal_line(wanted: &dyn Fn() -> bool) -> Option<Input> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = io::stdin();
    let fd = stdin.as_fd();
    let mut line = Vec::new();
    let interval = Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(READ_CHECK_INTERVAL_MS) * 1_000_000,
    };
    loop {
        if !wanted() {
            return None;
        }
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&interval)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return Some(Input::Eof),
        }
        let mut buf = [0u8; 4096];
        match rustix::io::read(fd, &mut buf) {
            // Ctrl-D at the start of a line.
            Ok(0) if line.is_empty() => return Some(Input::Eof),
            Ok(0) => {}
            Ok(n) => {
                let room = MAX_ANSWER_BYTES.saturating_sub(line.len());
                line.extend_from_slice(buf.get(..n.min(room)).unwrap_or_default());
                if !buf.get(..n).is_some_and(|read| read.ends_with(b"\n")) {
                    continue;
                }
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(_) => return Some(Input::Eof),
        }
        let text = String::from_utf8_lossy(&line);
        return Some(Input::Line(trim_line_end(&text).to_owned()));
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
        let input = self.0.answer();
        self.0.lock_state().asking = false;
        input
    }

    fn discard_typeahead(&mut self) {
        if self.0.terminal {
            // What was typed while the model worked is still in the
            // terminal (nothing reads it between prompts): drop it.
            let _ = rustix::termios::tcflush(io::stdin().as_fd(), QueueSelector::IFlush);
        }
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

/// Runs one turn through the session core, which says what happens to the
/// events' sink (the printer, a JSON Lines writer). With
/// `console` (at a terminal) it watches Ctrl-C, so a waiting question is
/// answered with no; without one, [`drive`] does.
pub(crate) fn run_turn(
    console: Option<&Console>,
    runtime: &tokio::runtime::Runtime,
    driver: &Driver,
    prompt: &str,
    allow_denials: bool,
    early: Option<&EarlyStop>,
) -> TurnReport {
    let Some(console) = console else {
        return runtime.block_on(drive(driver, prompt, allow_denials, early));
    };
    if let Some(early) = early {
        early.hand_over();
    }
    let cancel = CancellationToken::new();
    console.begin_turn(cancel.clone());
    let report = runtime.block_on(driver.turn(prompt, &cancel, allow_denials));
    console.end_turn();
    report
}

/// SIGTERM and SIGINT caught from the first instant of a run, before
/// anything slow starts, until the turn's own watchers take over
/// ([`hand_over`](Self::hand_over)).
///
/// A signal before the turn has nothing to cancel: the run says so in its
/// last line (outcome `cancelled`) and exits 130 at once. What was being
/// opened is left as a crash would leave it, which the store survives
/// (every write is one transaction).
pub(crate) struct EarlyStop {
    handed_over: Arc<AtomicBool>,
}

impl EarlyStop {
    /// Watches both signals on `runtime`; `say` writes the last line,
    /// naming the signal.
    pub(crate) fn watch(runtime: &tokio::runtime::Runtime, say: Box<dyn Fn(&str) + Send>) -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let handed_over = Arc::new(AtomicBool::new(false));
        // Registered here, synchronously: from now on neither signal is
        // the default "kill now".
        let _entered = runtime.enter();
        let mut terminate = signal(SignalKind::terminate()).ok();
        let mut interrupt = signal(SignalKind::interrupt()).ok();
        let standing_down = handed_over.clone();
        runtime.spawn(async move {
            loop {
                let name = tokio::select! {
                    Some(()) = async { terminate.as_mut()?.recv().await } => "SIGTERM",
                    Some(()) = async { interrupt.as_mut()?.recv().await } => "SIGINT",
                    else => return,
                };
                if standing_down.load(Ordering::SeqCst) {
                    continue;
                }
                say(name);
                std::process::exit(FORCED_QUIT_STATUS);
            }
        });
        Self { handed_over }
    }

    /// The turn's watchers are in place: signals are theirs from now on.
    pub(crate) fn hand_over(&self) {
        self.handed_over.store(true, Ordering::SeqCst);
    }
}

/// Exit status after a second SIGTERM, the shell's convention for it.
const TERMINATED_STATUS: i32 = 143;

/// Runs the turn without a terminal (and in the demo), catching Ctrl-C
/// and SIGTERM only while it runs.
///
/// SIGTERM is how a harness's timeout or a supervisor stops a process:
/// the first cancels the turn as Ctrl-C does, so the turn is recorded as
/// cancelled and the stream ends with its outcome (`cancelled`, exit 130)
/// instead of stopping mid-line; a second quits at once (143).
async fn drive(
    driver: &Driver,
    prompt: &str,
    allow_denials: bool,
    early: Option<&EarlyStop>,
) -> TurnReport {
    use tokio::signal::unix::{SignalKind, signal};
    let cancel = CancellationToken::new();
    let mut turn = pin!(driver.turn(prompt, &cancel, allow_denials));
    let mut interrupts = TurnInterrupts::default();
    interrupts.begin(cancel.clone());
    // Registered before the turn is first polled, so neither signal is
    // the default "kill now" once the turn has begun.
    let mut interrupt = match signal(SignalKind::interrupt()) {
        Ok(stream) => Some(stream),
        Err(e) => {
            note(format_args!(
                "cannot catch Ctrl-C ({e}); it will end GOAT at once"
            ));
            None
        }
    };
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(stream) => Some(stream),
        Err(e) => {
            note(format_args!(
                "cannot catch SIGTERM ({e}); it will end GOAT at once"
            ));
            None
        }
    };
    // The turn's own watchers are registered: the early one stands down.
    if let Some(early) = early {
        early.hand_over();
    }
    let mut terminations = 0u32;
    loop {
        tokio::select! {
            biased;
            Some(()) = async { interrupt.as_mut()?.recv().await } => {
                interrupts.press();
            }
            Some(()) = async { terminate.as_mut()?.recv().await } => {
                terminations += 1;
                if terminations > 1 {
                    note("terminated again; quitting at once");
                    std::process::exit(TERMINATED_STATUS);
                }
                note("terminated (SIGTERM): cancelling the turn and what it is running \
                      (SIGTERM again quits at once)");
                cancel.cancel();
            }
            result = &mut turn => return result,
        }
    }
}
