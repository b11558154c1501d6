//! Text handling shared by the tools: binary detection, line cutting, and an
//! output buffer that stops at the result cap instead of overflowing it.

use crate::{MAX_LINE_CHARS, MAX_OUTPUT_BYTES};

pub use goat_workpath::encoding::BINARY_PROBE_BYTES;

/// The one binary rule (a NUL near the start), shared with the host
/// (`goat_workpath::encoding::looks_binary`), searched with memchr's SIMD:
/// core's search goes four bytes at a time on wasm32.
pub fn looks_binary(data: &[u8]) -> bool {
    memchr::memchr(0, goat_workpath::encoding::binary_probe(data)).is_some()
}

/// `line` cut to at most [`MAX_LINE_CHARS`] characters, with a marker saying
/// how many bytes of the line are not shown.
pub fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    cut_line_after(line, 0)
}

/// Like [`cut_line`] for a line of which `already_cut` trailing bytes were
/// dropped before it got here (read_file bounds what it buffers of one
/// line); the marker counts both.
pub fn cut_line_after(line: &str, already_cut: usize) -> std::borrow::Cow<'_, str> {
    // No more bytes than the limit means no more characters either.
    let at = if line.len() <= MAX_LINE_CHARS {
        None
    } else {
        line.char_indices().nth(MAX_LINE_CHARS).map(|(at, _)| at)
    };
    match (at, already_cut) {
        (None, 0) => std::borrow::Cow::Borrowed(line),
        (at, extra) => {
            let at = at.unwrap_or(line.len());
            std::borrow::Cow::Owned(format!(
                "{}… [line cut: {} more bytes]",
                &line[..at],
                line.len() - at + extra
            ))
        }
    }
}

/// Collects result lines up to [`MAX_OUTPUT_BYTES`].
#[derive(Default)]
pub struct Output {
    text: String,
    full: bool,
}

impl Output {
    /// An empty output with room for `bytes` (never more than the cap), for
    /// a caller that knows roughly how much it will write.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            text: String::with_capacity(bytes.min(MAX_OUTPUT_BYTES)),
            full: false,
        }
    }

    /// Appends `line` and a newline. Returns `false`, appending nothing,
    /// once the next line would pass the cap: the caller stops and says so.
    pub fn line(&mut self, line: &str) -> bool {
        if self.full || self.text.len() + line.len() + 1 > MAX_OUTPUT_BYTES {
            self.full = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        true
    }

    /// Appends `{n:>6}\t{text}{suffix}` and a newline, the numbered-line
    /// form of `cat -n`, without formatting machinery: read_file writes one
    /// per line shown. Returns `false`, appending nothing, at the cap.
    pub fn numbered_line(&mut self, n: u64, text: &str, suffix: &str) -> bool {
        // The number, right-aligned in six columns, and the tab, written
        // byte by byte: each `push_str` is a `memory.copy`, which wasmtime
        // runs as a call into its runtime, so a line costs one (its text).
        let mut head = [b' '; 21];
        head[20] = b'\t';
        let mut at = 20;
        let mut v = n;
        loop {
            at -= 1;
            head[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let head = &head[at.min(14)..];
        let len = head.len() + text.len() + suffix.len() + 1;
        if self.full || self.text.len() + len > MAX_OUTPUT_BYTES {
            self.full = true;
            return false;
        }
        for &b in head {
            self.text.push(char::from(b));
        }
        self.text.push_str(text);
        if !suffix.is_empty() {
            self.text.push_str(suffix);
        }
        self.text.push('\n');
        true
    }

    /// Whether a line was refused for the cap.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text, with `note` appended on its own line when given. Notes are
    /// small and always fit: the cap leaves them room.
    pub fn finish(mut self, note: Option<String>) -> String {
        if let Some(note) = note {
            self.text.push_str(&note);
            self.text.push('\n');
        }
        self.text
    }
}

/// "1 line", "2 lines": `n` and `noun`, plural when `n` is not 1.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
