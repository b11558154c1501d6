//! The one screen that the model's answer (stdout) and GOAT's own lines
//! (stderr) share at a terminal: where its cursor is, and how wide it is.
//!
//! The two streams are written by different parts of GOAT (the printer,
//! the approval question, every `goat:` note), so whether the last byte
//! on the terminal ended a line is kept here, once, for the process: the
//! answer says when it leaves a line open, and everything GOAT writes on
//! stderr first calls [`end_open_line`]. So `I will add the flag.` and
//! `goat: edit_file wants…` are never on one line.
//!
//! GOAT's own open lines (the `> ` prompt, an approval question) are
//! always ended by the person's Enter, which the terminal echoes; only the
//! answer can leave a line open when GOAT speaks next.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The answer's last write to the terminal did not end its line.
static ANSWER_LINE_OPEN: AtomicBool = AtomicBool::new(false);

/// Records what the answer just wrote to the terminal (stdout at a
/// terminal only; a redirected answer is not on the screen).
pub fn answer_wrote(text: &str) {
    if let Some(last) = text.chars().last() {
        ANSWER_LINE_OPEN.store(last != '\n', Ordering::Release);
    }
}

/// Ends the answer's open line, if it left one, before GOAT writes its
/// own line: the newline goes to stdout, where the open line is, so a
/// redirected stderr never gets it.
pub fn end_open_line() {
    if ANSWER_LINE_OPEN.swap(false, Ordering::AcqRel) {
        let mut out = io::stdout().lock();
        let _ = out.write_all(b"\n").and_then(|()| out.flush());
    }
}

/// The width of the terminal stdout is, in columns, or `None` when stdout
/// is not a terminal or does not say (a pty nobody sized reports 0).
pub fn stdout_columns() -> Option<usize> {
    let stdout = io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
    (size.ws_col > 0).then_some(usize::from(size.ws_col))
}
