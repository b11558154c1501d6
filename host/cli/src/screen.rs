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

/// The width of the terminal stderr is, in columns, as
/// [`stdout_columns`] for stdout: GOAT's own lines go there.
pub fn stderr_columns() -> Option<usize> {
    let stderr = io::stderr();
    if !stderr.is_terminal() {
        return None;
    }
    let size = rustix::termios::tcgetwinsize(&stderr).ok()?;
    (size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// GOAT's own `line` wrapped at spaces to `width` columns, so a terminal
/// never breaks it inside a word; lines after the first begin with
/// `indent` (GOAT's mark and spaces). Colour escapes (`ESC [ … m`) take no columns; a word
/// wider than a line is left whole for the terminal to break. Text with
/// newlines is wrapped line by line.
pub fn wrap_words(text: &str, width: usize, indent: &str) -> String {
    use unicode_width::UnicodeWidthChar;
    let visible = |word: &str| {
        let mut cols = 0;
        let mut in_escape = false;
        for c in word.chars() {
            match (in_escape, c) {
                (false, '\u{1b}') => in_escape = true,
                (true, c) if c.is_ascii_alphabetic() => in_escape = false,
                (true, _) => {}
                (false, c) => cols += c.width().unwrap_or(0),
            }
        }
        cols
    };
    let pad = indent;
    let indent = visible(indent);
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut col = 0;
        for (j, word) in line.split(' ').enumerate() {
            let w = visible(word);
            if j > 0 {
                if col + 1 + w > width && col > indent {
                    out.push('\n');
                    out.push_str(pad);
                    col = indent;
                } else {
                    out.push(' ');
                    col += 1;
                }
            }
            out.push_str(word);
            col += w;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap_words;

    #[test]
    fn lines_break_at_spaces_never_inside_a_word() {
        let line = "goat: chatting with smollm2 at http://127.0.0.1:18080/v1 in /tmp/ws; mode ask";
        let wrapped = wrap_words(line, 40, "      ");
        assert_eq!(
            wrapped,
            "goat: chatting with smollm2 at\n      http://127.0.0.1:18080/v1 in\n      /tmp/ws; mode ask"
        );
        for l in wrapped.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
    }

    #[test]
    fn colour_escapes_take_no_columns_and_short_lines_stay() {
        let red = "\u{1b}[31merror:\u{1b}[0m the turn failed";
        // 22 columns seen, 32 bytes.
        assert_eq!(wrap_words(red, 22, "  "), red);
        assert_eq!(
            wrap_words(red, 21, "  "),
            "\u{1b}[31merror:\u{1b}[0m the turn\n  failed"
        );
        assert_eq!(wrap_words("a\nb c", 80, ""), "a\nb c");
    }
}
