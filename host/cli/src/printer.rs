//! Shows a turn as it happens: the answer streamed to stdout, one line per
//! tool call (and the recovery) on stderr, the spinner while the model is
//! silent.
//!
//! At a terminal the answer is rendered ([`crate::markdown`]: Markdown,
//! words wrapped at the width) and GOAT's lines never share a line with
//! it ([`crate::screen`]). When stdout is not a terminal the answer is
//! written exactly as the model wrote it, held per round and written only
//! once the round turns out to be an answer, so `goat run ... > answer.md`
//! never keeps tool-call markup that did not run.

use std::io::{self, IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

use goat_session::drive::Events;

use goat_session::protocol::{
    CallStatus, CompactionReason, Event, EventKind, ToolCallCompleted, WarningCode,
};
use serde_json::Value;

use crate::markdown::Renderer;
use crate::style::{Spinner, Style};
use crate::{note, screen, text};

/// What GOAT says when ADR-0065's one recovery starts.
const RECOVERY_LINE: &str =
    "the model wrote a tool call as text; asking it once to use the structured format";

/// What the spinner (or a status line) says while the engine loads.
const LOADING_LABEL: &str = "the engine is loading the model";

/// Added to the recovery line when the call was in the reasoning channel.
const REASONING_NOTE: &str =
    " (the engine's reasoning parser kept the call in the reasoning channel)";

/// Longest tool result line shown on stderr, in characters: enough for a
/// denial's reason and its hint, short of a wall of text.
const RESULT_LINE_CHARS: usize = 300;

/// A printer the session's events reach: the events to hand the session
/// core, and the printer to finish each turn with.
pub(crate) fn shared(stream_answer: bool) -> (Arc<Mutex<Printer>>, Arc<Events>) {
    let printer = Arc::new(Mutex::new(Printer::new(stream_answer)));
    let sink = printer.clone();
    let events = Events::new(
        move |event| {
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .event(event);
        },
        false,
    );
    (printer, events)
}

/// Shows a turn as it happens.
pub(crate) struct Printer {
    /// Whether the answer goes to stdout (not with `--json`).
    stream_answer: bool,
    stdout_open: bool,
    stdout_tty: bool,
    /// Something of the answer was written, and whether it ended a line.
    wrote: bool,
    at_line_start: bool,
    /// A round began and has not written yet.
    new_round: bool,
    /// The arguments of the call in progress (calls run one at a time).
    arguments: Option<String>,
    /// Colour for GOAT's own lines on stderr; also whether a spinner may
    /// rewrite its line there.
    style: Style,
    /// Shown from the start of a round until the model's first text.
    spinner: Option<Spinner>,
    /// When stdout is not a terminal, the round's text so far: written
    /// once the round turns out to be an answer or comes with calls, and
    /// dropped when it was a tool call written as text, so a redirected
    /// answer never holds markup that did not run.
    pending: String,
    /// This round's "the engine is loading" line was shown.
    told_loading: bool,
    /// At a terminal: the answer rendered for it.
    renderer: Renderer,
}

impl Printer {
    pub(crate) fn new(stream_answer: bool) -> Self {
        let stdout_tty = io::stdout().is_terminal();
        Self {
            stream_answer,
            stdout_open: true,
            stdout_tty,
            wrote: false,
            at_line_start: true,
            new_round: false,
            arguments: None,
            style: Style::stderr(),
            spinner: None,
            pending: String::new(),
            told_loading: false,
            renderer: Renderer::new(
                screen::stdout_columns(),
                stdout_tty && Style::new(stdout_tty).is_color(),
            ),
        }
    }

    /// Renders one event of the session protocol; those a terminal does
    /// not show (the whole message again, approvals, the turn's end) are
    /// passed over.
    pub(crate) fn event(&mut self, event: &Event) {
        match &event.kind {
            EventKind::RoundStarted { .. } => {
                self.flush_pending();
                self.end_message();
                self.new_round = true;
                self.told_loading = false;
                self.stop_spinner();
                // Model load and prompt processing can take minutes; say
                // that GOAT is waiting, not stuck.
                if self.style.is_color() {
                    self.spinner = Some(Spinner::start("waiting for the model"));
                }
            }
            // llama-server answers 503 until its weights are loaded; GOAT
            // asks again within the first-byte timeout.
            EventKind::EngineLoading { .. } => {
                if let Some(spinner) = &self.spinner {
                    spinner.relabel(LOADING_LABEL);
                } else if !self.told_loading {
                    self.status(&format!(
                        "{LOADING_LABEL}; waiting for it (timeouts.first_byte_secs bounds the wait)"
                    ));
                }
                self.told_loading = true;
            }
            EventKind::MessageDelta { text, .. } => {
                if !text.is_empty() {
                    self.stop_spinner();
                }
                self.answer(text);
            }
            // Reasoning is the model's scratch work, not the answer; the
            // store keeps it.
            EventKind::ReasoningDelta { .. } => {
                if let Some(spinner) = &self.spinner {
                    spinner.relabel("the model is thinking");
                }
            }
            EventKind::ToolCallStarted { arguments, .. } => {
                self.stop_spinner();
                self.flush_pending();
                self.end_message();
                self.arguments = Some(arguments.clone());
            }
            EventKind::ToolCallCompleted(call) => {
                let arguments = self.arguments.take().unwrap_or_default();
                let line = call_line(call, &arguments);
                let line = match call.status {
                    CallStatus::Ok if call.refused.is_empty() => line,
                    CallStatus::Ok | CallStatus::Denied | CallStatus::Interrupted => {
                        self.style.yellow(&line)
                    }
                    CallStatus::Error => self.style.red(&line),
                };
                self.status(&line);
            }
            // ADR-0074, ADR-0083: older turns, or the running turn's older
            // rounds, were summarised to fit the window; `goat sessions
            // show` still has them whole.
            EventKind::Compaction {
                turns,
                rounds,
                reason,
            } => {
                self.stop_spinner();
                self.flush_pending();
                let why = match reason {
                    CompactionReason::Overflow => {
                        "because the engine refused the request as too long"
                    }
                    CompactionReason::Window | CompactionReason::Asked => {
                        "to fit the context window"
                    }
                };
                let count = |n: u64, noun| {
                    crate::text::count(usize::try_from(n).unwrap_or(usize::MAX), noun)
                };
                let what = match (*turns, *rounds) {
                    (t, 0) => count(t, "older turn"),
                    (0, r) => count(r, "earlier round") + " of this turn",
                    (t, r) => format!(
                        "{} and {} of this turn",
                        count(t, "older turn"),
                        count(r, "earlier round")
                    ),
                };
                self.status(&format!(
                    "{what} summarised {why}; the store keeps them whole"
                ));
            }
            // Issue 22: the repository's instructions take at most a
            // share of the window; the person hears when they were cut.
            EventKind::Warning {
                code: WarningCode::ProjectInstructionsCut | WarningCode::WindowNotSaid,
                message,
            } => self.status(message),
            EventKind::Warning {
                code: WarningCode::ToolsNotShown,
                message,
            } => {
                self.stop_spinner();
                self.flush_pending();
                let line = self.style.yellow(message);
                self.status(&line);
            }
            EventKind::Recovery { in_reasoning, .. } => {
                self.stop_spinner();
                // On a terminal it was shown as it came; the recovery line
                // says what it was.
                self.pending.clear();
                self.end_message();
                let line = if *in_reasoning {
                    self.style
                        .yellow(&format!("{RECOVERY_LINE}{REASONING_NOTE}"))
                } else {
                    self.style.yellow(RECOVERY_LINE)
                };
                self.status(&line);
            }
            // A turn's hooks are said only when one objected; the store
            // and `goat sessions show` keep every run.
            EventKind::HooksRan {
                objection: Some(said),
                went_on,
                ..
            } => {
                self.stop_spinner();
                self.flush_pending();
                self.end_message();
                let line = if *went_on {
                    format!("{said}; the model goes on")
                } else {
                    said.clone()
                };
                let line = self.style.yellow(&crate::text::escape_controls(&line));
                self.status(&line);
            }
            // `goat run --attempts` says each attempt's check and its end
            // in its own lines.
            EventKind::AttemptChecked { .. }
            | EventKind::AttemptsCompleted(_)
            | EventKind::HooksRan {
                objection: None, ..
            }
            | EventKind::SessionStarted(_)
            | EventKind::TurnStarted { .. }
            | EventKind::MessageCompleted { .. }
            | EventKind::ReasoningCompleted { .. }
            | EventKind::ApprovalRequested(_)
            | EventKind::ApprovalResolved { .. }
            | EventKind::TurnCompleted(_)
            | EventKind::TurnFailed(_)
            | EventKind::Error { .. } => {}
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.stop();
        }
    }

    fn answer(&mut self, text: &str) {
        if !self.stream_answer || !self.stdout_open || text.is_empty() {
            return;
        }
        if self.stdout_tty {
            self.emit(text);
        } else {
            self.pending.push_str(text);
        }
    }

    fn flush_pending(&mut self) {
        if !self.pending.is_empty() {
            let text = std::mem::take(&mut self.pending);
            self.emit(&text);
        }
    }

    fn emit(&mut self, text: &str) {
        let mut out = String::new();
        // Each round is a separate message; do not run them together.
        if self.new_round && self.wrote && !self.at_line_start {
            out.push('\n');
        }
        self.new_round = false;
        if self.stdout_tty {
            // Escaped inside the renderer, whatever construct it is in.
            out.push_str(&self.renderer.feed(text));
        } else {
            // Redirected: the answer exactly as the model wrote it.
            out.push_str(text);
        }
        self.show(&out);
    }

    /// Ends the round's message at a terminal: its last line, if it never
    /// got a newline, is shown now (and left open, for [`Printer::status`]
    /// or the next round to end).
    fn end_message(&mut self) {
        if self.stdout_tty && self.stdout_open {
            let rest = self.renderer.finish();
            self.show(&rest);
        }
    }

    fn show(&mut self, out: &str) {
        if out.is_empty() {
            return;
        }
        self.write_stdout(out);
        self.wrote = true;
        self.at_line_start = out.ends_with('\n');
        if self.stdout_tty {
            screen::answer_wrote(out);
        }
    }

    fn write_stdout(&mut self, text: &str) {
        let mut out = io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            // No one reads the answer any more. The turn goes on: stopping
            // halfway through the model's edits would be worse, and the
            // store keeps the answer.
            if e.kind() != io::ErrorKind::BrokenPipe {
                note(format_args!(
                    "cannot write the answer to stdout ({e}); the turn goes on and the store \
                     keeps it"
                ));
            }
            self.stdout_open = false;
        }
    }

    /// One line on stderr, starting on a fresh line when the answer shares
    /// the terminal.
    fn status(&mut self, line: &str) {
        self.end_message();
        // `note` ends the answer's open line on the screen first.
        note(line);
        if self.stdout_tty {
            self.at_line_start = true;
        }
    }

    /// Ends the answer with a newline. The last round's text is written
    /// only if the turn `completed`: a turn that failed (a second tool call
    /// written as text, a broken stream) or was cancelled has no answer to
    /// redirect; the store keeps what it said.
    pub(crate) fn finish(&mut self, completed: bool) {
        self.stop_spinner();
        if completed {
            self.flush_pending();
        } else {
            self.pending.clear();
        }
        self.end_message();
        if self.stdout_open && self.wrote && !self.at_line_start {
            self.write_stdout("\n");
            self.at_line_start = true;
        }
        if self.stdout_tty {
            screen::answer_wrote("\n");
        }
    }
}

/// `write_file(path="a.txt", content="hi") -> ok: Created 'a.txt' (2 bytes)`
fn call_line(call: &ToolCallCompleted, arguments: &str) -> String {
    let result = match call.status {
        // The result already says "denied: ...".
        CallStatus::Denied => call
            .result_excerpt
            .strip_prefix("denied: ")
            .unwrap_or(&call.result_excerpt),
        CallStatus::Ok | CallStatus::Error | CallStatus::Interrupted => &call.result_excerpt,
    };
    let first = text::first_line(result, RESULT_LINE_CHARS);
    let status = match call.status {
        CallStatus::Ok => "ok",
        CallStatus::Error => "error",
        CallStatus::Denied => "denied",
        CallStatus::Interrupted => "interrupted",
    };
    let summary = text::call_summary(&call.tool, arguments);
    let mut line = if first.is_empty() {
        format!("{summary} -> {status}")
    } else {
        format!("{summary} -> {status}: {first}")
    };
    if call.status == CallStatus::Ok
        && let Some(change) = change_summary(&call.tool, arguments)
    {
        line.push_str(&format!(" [{change}]"));
    }
    // What ran yet was refused in part (a host the proxy refused): said on
    // the line, the first with how many more.
    if call.status != CallStatus::Denied
        && let Some(first) = call.refused.first()
    {
        let what = first.target.as_deref().unwrap_or(&call.tool);
        let more = call.refused.len() - 1;
        line.push_str(&format!(
            " [refused: {}{}]",
            text::snippet(what, RESULT_LINE_CHARS),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    line
}

/// What a successful write changed, in lines: `-2 +3 lines` for an edit,
/// `5 lines` for a whole file written.
fn change_summary(tool: &str, arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let lines = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(|t| t.lines().count())
    };
    match tool {
        "edit_file" => Some(format!(
            "-{} +{} lines",
            lines("old_string")?,
            lines("new_string")?
        )),
        "write_file" => Some(text::count(lines("content")?, "line")),
        "move_file" => Some("moved".to_owned()),
        "delete_file" => Some("deleted".to_owned()),
        _ => None,
    }
}
