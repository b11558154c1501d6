//! The person at the terminal: approval questions with what a call would
//! change, colour only where it can be seen, and the spinner that says the
//! model is still loading or reading the prompt.
//!
//! Nothing here decides anything. The gate decides whether to ask; this
//! module asks, shows what the write would do, and hands the answer back to
//! the router, which saves "session" and "always" answers as rules.
//!
//! Everything shown that came from the model or the workspace is escaped:
//! a diff line cannot move the cursor or forge a prompt.

use std::fs;
use std::io::{self, BufRead as _, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use goat_engine::CancellationToken;
use goat_shepherd::{Approval, ApprovalRequest, Approver};
use serde_json::Value;

use crate::note;
use crate::text::{escape_controls, truncate};

/// Most lines of each side of a change shown in an approval.
const PREVIEW_LINES: usize = 8;

/// Largest file read to show what a write would change; past this the
/// approval says how large it is instead.
const PREVIEW_FILE_BYTES: u64 = 1024 * 1024;

/// Longest preview line, in characters.
const PREVIEW_LINE_CHARS: usize = 160;

/// Wrong answers to one approval question before it counts as "deny".
const ANSWER_ATTEMPTS: usize = 3;

/// How often the spinner moves.
const SPINNER_TICK: Duration = Duration::from_millis(100);

/// Whether a spinner line is on stderr now, so a status line clears it
/// first instead of being glued to it.
static SPINNING: AtomicBool = AtomicBool::new(false);

/// Colour and terminal control for one stream: on only when it is a
/// terminal and `NO_COLOR` is not set (<https://no-color.org>).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    color: bool,
}

impl Style {
    /// For stderr, where GOAT's own lines go.
    pub fn stderr() -> Self {
        Self::new(io::stderr().is_terminal())
    }

    /// Colour when `terminal` and `NO_COLOR` is unset or empty.
    pub fn new(terminal: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: terminal && !no_color,
        }
    }

    /// Whether escape codes (colour, the spinner) may be written.
    pub fn is_color(self) -> bool {
        self.color
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }
}

/// Clears the spinner's line if one is showing, before a status line.
pub fn clear_spinner_line(out: &mut impl Write) {
    if SPINNING.load(Ordering::Acquire) {
        let _ = write!(out, "\r\x1b[2K");
    }
}

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

/// Where answers come from.
pub trait Answers: Send {
    /// The next line, end of input, or an interrupt.
    fn next(&mut self) -> Input;

    /// Drops anything typed before the question was shown, so a stray `y`
    /// typed while the model was working cannot answer it.
    fn discard_typeahead(&mut self) {}
}

/// `line` without its `\n` or `\r\n`.
fn trim_line_end(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Asks about writes at the terminal: the tool, the resolved paths, what
/// would change, and the four answers.
pub struct TerminalApprover<A, W> {
    pub answers: A,
    pub output: W,
    pub style: Style,
}

impl<A: Answers, W: Write + Send> Approver for TerminalApprover<A, W> {
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval {
        self.answers.discard_typeahead();
        let question = question(request, self.style);
        let menu = if request.can_remember {
            "allow? [o]nce, for this [s]ession, [a]lways in this workspace, [d]eny (default deny): "
        } else {
            "allow? [o]nce, [d]eny (default deny); this path cannot be saved as an exact rule: "
        };
        clear_spinner_line(&mut self.output);
        if write!(self.output, "{question}goat: {menu}")
            .and_then(|()| self.output.flush())
            .is_err()
        {
            return Approval::Deny;
        }
        for attempt in 1..=ANSWER_ATTEMPTS {
            let line = match self.answers.next() {
                Input::Line(line) => line,
                Input::Eof | Input::Interrupt => {
                    let _ = writeln!(self.output);
                    return Approval::Deny;
                }
            };
            match parse_answer(&line, request.can_remember) {
                Some(answer) => return answer,
                None if attempt < ANSWER_ATTEMPTS => {
                    let hint = if request.can_remember {
                        "please answer o, s, a or d: "
                    } else {
                        "please answer o or d: "
                    };
                    if write!(self.output, "goat: {hint}")
                        .and_then(|()| self.output.flush())
                        .is_err()
                    {
                        return Approval::Deny;
                    }
                }
                None => {}
            }
        }
        let _ = writeln!(self.output, "goat: no clear answer; denied");
        Approval::Deny
    }
}

/// The answer typed, or `None` for something that is not one. An empty
/// line is the default, deny.
fn parse_answer(line: &str, can_remember: bool) -> Option<Approval> {
    match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Some(Approval::Once),
        "s" | "session" if can_remember => Some(Approval::Session),
        "a" | "always" if can_remember => Some(Approval::Always),
        "" | "d" | "deny" | "n" | "no" => Some(Approval::Deny),
        _ => None,
    }
}

/// The question's lines, each ending in a newline: the gate's prompt, the
/// workspace, then what would change.
pub fn question(request: &ApprovalRequest<'_>, style: Style) -> String {
    let mut out = format!(
        "goat: {}\n       workspace: {}\n",
        escape_controls(request.prompt),
        escape_controls(&request.workspace.display().to_string())
    );
    for line in preview(request) {
        let painted = match line.as_bytes().first() {
            Some(b'+') => style.green(&line),
            Some(b'-') => style.red(&line),
            _ => line,
        };
        out.push_str("       ");
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

/// What the call would change, as lines to show (already escaped):
/// for `write_file` and `edit_file` a diff against the file as it is now,
/// for any other tool its arguments.
pub fn preview(request: &ApprovalRequest<'_>) -> Vec<String> {
    let args = request.arguments;
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = request.paths.first().map(String::as_str);
    match (request.tool, path) {
        ("write_file", Some(path)) => match text("content") {
            Some(content) => write_preview(request.workspace, path, content),
            None => arguments_preview(args),
        },
        ("edit_file", Some(path)) => match (text("old_string"), text("new_string")) {
            (Some(old), Some(new)) => {
                let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
                edit_preview(request.workspace, path, old, new, all)
            }
            _ => arguments_preview(args),
        },
        _ => arguments_preview(args),
    }
}

fn arguments_preview(args: &Value) -> Vec<String> {
    vec![format!(
        "arguments: {}",
        truncate(&escape_controls(&args.to_string()), PREVIEW_LINE_CHARS * 2)
    )]
}

/// The file at `path` as it is now, for a preview.
enum Existing {
    Missing,
    Text(String),
    /// Cannot be shown; says why.
    Unshown(String),
}

fn existing(workspace: &Path, path: &str) -> Existing {
    let full = workspace.join(path);
    let meta = match fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Existing::Missing,
        Err(e) => return Existing::Unshown(format!("cannot read it to compare ({e})")),
    };
    // Only a preview, never the boundary (the sandbox is): still, a link
    // out of the workspace is not followed here either.
    match full.canonicalize() {
        Ok(real) if real.starts_with(workspace) => {}
        Ok(_) => {
            return Existing::Unshown(
                "it is a link leading outside the workspace; the tool will refuse it".to_owned(),
            );
        }
        Err(_) if meta.file_type().is_symlink() => {
            return Existing::Unshown("it is a dangling link".to_owned());
        }
        Err(e) => return Existing::Unshown(format!("cannot resolve it ({e})")),
    }
    let meta = match fs::metadata(&full) {
        Ok(meta) => meta,
        Err(e) => return Existing::Unshown(format!("cannot read it to compare ({e})")),
    };
    if !meta.is_file() {
        return Existing::Unshown("it is not a regular file".to_owned());
    }
    if meta.len() > PREVIEW_FILE_BYTES {
        return Existing::Unshown(format!(
            "it is {} bytes, too large to compare here",
            meta.len()
        ));
    }
    match fs::read(&full) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Existing::Text(text),
            Err(_) => Existing::Unshown("it is not UTF-8 text".to_owned()),
        },
        Err(e) => Existing::Unshown(format!("cannot read it to compare ({e})")),
    }
}

fn write_preview(workspace: &Path, path: &str, content: &str) -> Vec<String> {
    let shown = escape_controls(path);
    match existing(workspace, path) {
        Existing::Missing => {
            let mut lines = vec![format!(
                "creates '{shown}': {}, {}",
                count(content.lines().count(), "line"),
                count(content.len(), "byte")
            )];
            let added: Vec<&str> = content.lines().collect();
            lines.extend(side('+', &added));
            lines
        }
        Existing::Text(old) if old == content => {
            vec![format!("'{shown}' already has exactly this content")]
        }
        Existing::Text(old) => {
            let mut lines = vec![format!(
                "replaces '{shown}' ({} now, {} after):",
                count(old.lines().count(), "line"),
                count(content.lines().count(), "line")
            )];
            lines.extend(diff(&old, content));
            lines
        }
        Existing::Unshown(why) => vec![format!(
            "writes '{shown}' ({}, {}); the current file is not shown: {why}",
            count(content.lines().count(), "line"),
            count(content.len(), "byte")
        )],
    }
}

fn edit_preview(workspace: &Path, path: &str, old: &str, new: &str, all: bool) -> Vec<String> {
    let shown = escape_controls(path);
    let current = match existing(workspace, path) {
        Existing::Text(text) => text,
        Existing::Missing => {
            return vec![format!(
                "'{shown}' does not exist; the edit will fail and change nothing"
            )];
        }
        Existing::Unshown(why) => {
            let mut lines = vec![format!("edits '{shown}'; the file is not shown: {why}")];
            lines.extend(side('-', &old.lines().collect::<Vec<_>>()));
            lines.extend(side('+', &new.lines().collect::<Vec<_>>()));
            return lines;
        }
    };
    let found = if old.is_empty() {
        0
    } else {
        current.matches(old).count()
    };
    match found {
        0 => vec![format!(
            "the text to replace is not in '{shown}'; the edit will fail and change nothing"
        )],
        n if n > 1 && !all => vec![format!(
            "the text to replace is in '{shown}' {n} times; without replace_all the edit will \
             fail and change nothing"
        )],
        n => {
            let after = current.replace(old, new);
            let mut lines = vec![format!(
                "edits '{shown}' ({} replaced):",
                count(n, "occurrence")
            )];
            lines.extend(diff(&current, &after));
            lines
        }
    }
}

/// The changed region between `old` and `new`, by lines: what is left when
/// the common first and last lines are set aside, as `-` and `+` lines.
fn diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let removed = &a[prefix..a.len() - suffix];
    let added = &b[prefix..b.len() - suffix];
    if removed.is_empty() && added.is_empty() {
        // Only the line ends differ (a final newline, CRLF).
        return vec!["only line endings change".to_owned()];
    }
    let mut lines = vec![format!(
        "at line {}: -{} +{}",
        prefix + 1,
        count(removed.len(), "line"),
        count(added.len(), "line")
    )];
    lines.extend(side('-', removed));
    lines.extend(side('+', added));
    lines
}

/// Up to [`PREVIEW_LINES`] of `lines`, each marked, escaped and cut.
fn side(mark: char, lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|line| {
            format!(
                "{mark} {}",
                truncate(
                    &escape_controls(&line.replace('\t', "    ")),
                    PREVIEW_LINE_CHARS
                )
            )
        })
        .collect();
    if lines.len() > PREVIEW_LINES {
        out.push(format!(
            "{mark} … {} more",
            count(lines.len() - PREVIEW_LINES, "line")
        ));
    }
    out
}

/// `1 line`, `3 lines`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A line on stderr saying GOAT is waiting for the model, with the seconds
/// so far, until the first text arrives. Only on a terminal without
/// `NO_COLOR`: it rewrites its own line.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    label: Arc<Mutex<&'static str>>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts spinning with `label`.
    pub fn start(label: &'static str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let label = Arc::new(Mutex::new(label));
        let (thread_stop, thread_label) = (stop.clone(), label.clone());
        SPINNING.store(true, Ordering::Release);
        let thread = std::thread::Builder::new()
            .name("goat-spinner".to_owned())
            .spawn(move || spin(&thread_stop, &thread_label))
            .ok();
        if thread.is_none() {
            SPINNING.store(false, Ordering::Release);
        }
        Self {
            stop,
            label,
            thread,
        }
    }

    /// Changes what it says it is waiting for.
    pub fn relabel(&self, label: &'static str) {
        *self.label.lock().unwrap_or_else(PoisonError::into_inner) = label;
    }

    /// Stops it and clears its line, before anything else is written.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stop.store(true, Ordering::Release);
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.halt();
    }
}

fn spin(stop: &AtomicBool, label: &Mutex<&'static str>) {
    const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let started = Instant::now();
    let mut frame = 0;
    while !stop.load(Ordering::Acquire) {
        let text = *label.lock().unwrap_or_else(PoisonError::into_inner);
        let mut err = io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{} {text} ({}s)",
            FRAMES[frame % FRAMES.len()],
            started.elapsed().as_secs()
        );
        let _ = err.flush();
        drop(err);
        frame += 1;
        std::thread::park_timeout(SPINNER_TICK);
    }
    let mut err = io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
    SPINNING.store(false, Ordering::Release);
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
        state.turn = Some(token.clone());
        state.interrupts = 0;
        if early {
            state.interrupts = 1;
            note(
                "cancelling: the turn stops after the step in progress (Ctrl-C again quits at once)",
            );
            token.cancel();
        }
    }

    /// Back at the prompt. A Ctrl-C that cancelled the turn is not also a
    /// request to leave.
    pub fn end_turn(&self) {
        self.lock_state().turn = None;
        self.take_interrupts();
    }

    /// Ctrl-C: at the prompt, leave; in a turn, cancel it (and answer a
    /// waiting question with no); a second time in a turn, quit at once.
    fn interrupt(&self) {
        let mut state = self.lock_state();
        let Some(token) = state.turn.clone() else {
            match self.at_rest {
                AtRest::Leave => {
                    let _ = self.send.send(Input::Interrupt);
                }
                AtRest::Exit => {
                    note("interrupted");
                    std::process::exit(FORCED_QUIT_STATUS);
                }
            }
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

/// Approval answers from the console.
pub struct ConsoleAnswers(pub Arc<Console>);

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Typed(Vec<Input>);

    impl Answers for Typed {
        fn next(&mut self) -> Input {
            if self.0.is_empty() {
                Input::Eof
            } else {
                self.0.remove(0)
            }
        }
    }

    fn ask(typed: &[&str], can_remember: bool) -> (Approval, String) {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let paths = ["a.txt".to_owned()];
        let arguments = json!({"path": "a.txt", "content": "hi\n"});
        let mut out = Vec::new();
        let mut approver = TerminalApprover {
            answers: Typed(typed.iter().map(|t| Input::Line((*t).to_owned())).collect()),
            output: &mut out,
            style: Style { color: false },
        };
        let answer = approver.approve(&ApprovalRequest {
            tool: "write_file",
            prompt: "write_file wants to write 'a.txt'; allow it?",
            paths: &paths,
            arguments: &arguments,
            workspace: ws.path(),
            can_remember,
        });
        (answer, String::from_utf8(out).unwrap_or_default())
    }

    #[test]
    fn each_answer_and_the_default() {
        for (typed, want) in [
            ("o", Approval::Once),
            ("yes", Approval::Once),
            ("s", Approval::Session),
            ("ALWAYS", Approval::Always),
            ("a", Approval::Always),
            ("d", Approval::Deny),
            ("", Approval::Deny),
            ("n", Approval::Deny),
        ] {
            assert_eq!(ask(&[typed], true).0, want, "{typed:?}");
        }
    }

    #[test]
    fn unclear_answers_are_asked_again_then_denied() {
        let (answer, shown) = ask(&["maybe", "s"], true);
        assert_eq!(answer, Approval::Session);
        assert!(shown.contains("please answer o, s, a or d"), "{shown}");
        let (answer, shown) = ask(&["x", "y?", "z"], true);
        assert_eq!(answer, Approval::Deny);
        assert!(
            shown.ends_with("goat: no clear answer; denied\n"),
            "{shown}"
        );
        // End of input is a no.
        assert_eq!(ask(&[], true).0, Approval::Deny);
    }

    #[test]
    fn session_and_always_are_not_offered_when_they_cannot_be_saved() {
        let (answer, shown) = ask(&["s", "a", "always"], false);
        assert_eq!(answer, Approval::Deny);
        assert!(shown.contains("[o]nce, [d]eny"), "{shown}");
        assert_eq!(ask(&["o"], false).0, Approval::Once);
    }

    #[test]
    fn the_question_shows_the_tool_path_workspace_and_new_content() {
        let (_, shown) = ask(&["d"], true);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(
            lines[0],
            "goat: write_file wants to write 'a.txt'; allow it?"
        );
        assert!(lines[1].starts_with("       workspace: "), "{shown}");
        assert_eq!(lines[2], "       creates 'a.txt': 1 line, 3 bytes");
        assert_eq!(lines[3], "       + hi");
        assert!(!shown.contains('\x1b'), "no escape codes without colour");
    }

    fn preview_in(files: &[(&str, &str)], tool: &str, arguments: Value) -> Vec<String> {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (name, content) in files {
            fs::write(ws.path().join(name), content).unwrap_or_else(|e| panic!("{e}"));
        }
        let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let paths = [arguments["path"].as_str().unwrap_or_default().to_owned()];
        preview(&ApprovalRequest {
            tool,
            prompt: "",
            paths: &paths,
            arguments: &arguments,
            workspace: &root,
            can_remember: true,
        })
    }

    #[test]
    fn an_edit_shows_the_changed_lines_of_the_file() {
        let lines = preview_in(
            &[("a.rs", "fn a() {}\nfn b() {\n    1\n}\n")],
            "edit_file",
            json!({"path": "a.rs", "old_string": "    1\n", "new_string": "    2\n    3\n"}),
        );
        assert_eq!(
            lines,
            [
                "edits 'a.rs' (1 occurrence replaced):",
                "at line 3: -1 line +2 lines",
                "-     1",
                "+     2",
                "+     3",
            ]
        );
    }

    #[test]
    fn an_edit_that_will_fail_says_so() {
        let none = preview_in(
            &[("a.rs", "x\n")],
            "edit_file",
            json!({"path": "a.rs", "old_string": "y", "new_string": "z"}),
        );
        assert!(none[0].contains("not in 'a.rs'"), "{none:?}");
        let twice = preview_in(
            &[("a.rs", "x\nx\n")],
            "edit_file",
            json!({"path": "a.rs", "old_string": "x", "new_string": "z"}),
        );
        assert!(twice[0].contains("2 times"), "{twice:?}");
        let missing = preview_in(
            &[],
            "edit_file",
            json!({"path": "b.rs", "old_string": "x", "new_string": "z"}),
        );
        assert!(missing[0].contains("does not exist"), "{missing:?}");
    }

    #[test]
    fn an_overwrite_shows_the_diff_and_escapes_control_characters() {
        let lines = preview_in(
            &[("a.txt", "one\ntwo\nthree\n")],
            "write_file",
            json!({"path": "a.txt", "content": "one\n\u{1b}[2Jtwo\nthree\n"}),
        );
        assert_eq!(
            lines,
            [
                "replaces 'a.txt' (3 lines now, 3 lines after):",
                "at line 2: -1 line +1 line",
                "- two",
                "+ \\u{1b}[2Jtwo",
            ]
        );
        let same = preview_in(
            &[("a.txt", "x\n")],
            "write_file",
            json!({"path": "a.txt", "content": "x\n"}),
        );
        assert_eq!(same, ["'a.txt' already has exactly this content"]);
    }

    #[test]
    fn a_long_change_is_cut() {
        let content: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let lines = preview_in(
            &[],
            "write_file",
            json!({"path": "new.txt", "content": content}),
        );
        assert_eq!(lines[0], "creates 'new.txt': 20 lines, 150 bytes");
        assert_eq!(lines.len(), 1 + PREVIEW_LINES + 1);
        assert_eq!(lines[PREVIEW_LINES + 1], "+ … 12 lines more");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_workspace_is_not_read_for_the_preview() {
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        fs::write(outside.path().join("secret"), "top secret\n").unwrap_or_else(|e| panic!("{e}"));
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("s"))
            .unwrap_or_else(|e| panic!("{e}"));
        let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let arguments = json!({"path": "s", "content": "x"});
        let lines = preview(&ApprovalRequest {
            tool: "write_file",
            prompt: "",
            paths: &["s".to_owned()],
            arguments: &arguments,
            workspace: &root,
            can_remember: true,
        });
        assert!(lines[0].contains("outside the workspace"), "{lines:?}");
        assert!(!lines.concat().contains("top secret"), "{lines:?}");
    }
}
