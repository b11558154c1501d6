//! Colour and the spinner on stderr: escape codes only where a person
//! sees them, and the line that says the model is still loading or
//! reading the prompt.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
        // Its line is rewritten in place: it must not be the answer's.
        crate::screen::end_open_line();
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
