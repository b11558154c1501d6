//! Markdown as far as it hides markup: fenced code blocks, decided per line,
//! and inline code spans, decided by snapshots instead of look-ahead.

use memchr::memchr;

use crate::detector::{Detector, Mode};
use crate::scan::{Region, Scan};

/// Most inline code spans that may be waiting for their closing backtick run
/// at once within one paragraph.
///
/// Each waiting span holds one snapshot of the detector's findings (about a
/// hundred bytes), so this bounds memory and the work per backtick run.
/// Ordinary text has one or two; reaching the cap takes sixteen backtick runs
/// of different lengths, all unclosed, in one paragraph. A run beyond the cap
/// is read as literal text: from there on that paragraph's code spans may
/// differ from CommonMark's. Either way nothing is executed; at worst a
/// contrived message is or is not retried.
pub const MAX_PENDING_CODE_SPANS: usize = 16;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Fence {
    pub(crate) ch: u8,
    pub(crate) len: usize,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingSpan {
    pub(crate) len: usize,
    pub(crate) before: Scan,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct TentativeFence {
    pub(crate) len: usize,
    pub(crate) before: Scan,
}

/// Whether `at` is preceded by a newline and at most three spaces, all in
/// `chunk[from..at]`, and if so how many spaces. `from` must be inside a line
/// (its line start already read), so the look-back never passes it: at most
/// four bytes, all already in hand.
pub(crate) fn line_start(chunk: &[u8], from: usize, at: usize) -> Option<u8> {
    let mut q = at;
    while q > from && at - q < 4 && chunk[q - 1] == b' ' {
        q -= 1;
    }
    let indent = at - q;
    (indent <= 3 && q > from && chunk[q - 1] == b'\n').then_some(indent as u8)
}

impl Detector {
    /// `Mode::LineStart`: indentation decides whether the line may open a
    /// fence.
    pub(crate) fn line_start_byte(&mut self, b: u8, indent: u8, fence_eligible: bool) -> bool {
        match b {
            b' ' => {
                self.mode = Mode::LineStart {
                    indent: indent.saturating_add(1),
                    fence_eligible,
                };
                true
            }
            // CommonMark counts a tab as up to four columns: never a fence.
            b'\t' | b'\r' => {
                self.mode = Mode::LineStart {
                    indent,
                    fence_eligible: false,
                };
                true
            }
            b'\n' => {
                // A blank line ends the paragraph: waiting spans were literal.
                self.pending.clear();
                self.mode = Mode::LineStart {
                    indent: 0,
                    fence_eligible: true,
                };
                true
            }
            b'`' if fence_eligible && indent <= 3 => {
                self.backticks_start();
                self.mode = Mode::Backticks {
                    len: 1,
                    line_start: true,
                };
                true
            }
            b'~' if fence_eligible && indent <= 3 => {
                self.mode = Mode::Tildes { len: 1 };
                true
            }
            _ => {
                self.mode = Mode::Inline;
                false
            }
        }
    }

    /// `Mode::Tildes`: three or more tildes open a fence, fewer are text.
    pub(crate) fn tildes_byte(&mut self, b: u8, len: usize) -> bool {
        if b == b'~' {
            self.mode = Mode::Tildes { len: len + 1 };
            true
        } else if len >= 3 {
            // The rest of the line is the info string.
            self.open_fence(b'~', len);
            self.mode = Mode::FenceBody;
            false
        } else {
            self.literal_tildes();
            self.mode = Mode::Inline;
            false
        }
    }

    /// `Mode::Backticks`: the run's length is only known at its first
    /// other byte.
    pub(crate) fn backticks_byte(&mut self, b: u8, len: usize, line_start: bool) -> bool {
        if b == b'`' {
            self.mode = Mode::Backticks {
                len: len + 1,
                line_start,
            };
            true
        } else {
            self.mode = Mode::Inline;
            self.end_backticks(len, line_start);
            false
        }
    }

    /// `Mode::FenceLineStart`: up to three spaces, then maybe the closing
    /// run.
    pub(crate) fn fence_line_start_byte(&mut self, b: u8, indent: u8) -> bool {
        match b {
            b' ' if indent < 3 => {
                self.mode = Mode::FenceLineStart { indent: indent + 1 };
                true
            }
            b'\n' => {
                self.mode = Mode::FenceLineStart { indent: 0 };
                true
            }
            _ if b == self.fence.ch => {
                self.mode = Mode::FenceRun { len: 1 };
                true
            }
            _ => {
                self.mode = Mode::FenceBody;
                false
            }
        }
    }

    /// `Mode::FenceRun`: a run at least as long as the opening one may close
    /// the fence.
    pub(crate) fn fence_run_byte(&mut self, b: u8, len: usize) -> bool {
        if b == self.fence.ch {
            self.mode = Mode::FenceRun { len: len + 1 };
            true
        } else {
            self.mode = if len >= self.fence.len {
                Mode::FenceTail
            } else {
                Mode::FenceBody
            };
            false
        }
    }

    /// `Mode::FenceTail`: only whitespace may follow a closing run.
    pub(crate) fn fence_tail_byte(&mut self, b: u8) -> bool {
        self.mode = match b {
            b' ' | b'\t' | b'\r' => Mode::FenceTail,
            // The fence is closed; a new paragraph starts.
            b'\n' => Mode::LineStart {
                indent: 0,
                fence_eligible: true,
            },
            _ => Mode::FenceBody,
        };
        true
    }

    /// `Mode::FenceBody`, one byte at a time.
    pub(crate) fn fence_body_byte(&mut self, b: u8) -> bool {
        if b == b'\n' {
            self.mode = Mode::FenceLineStart { indent: 0 };
        }
        true
    }

    /// `Mode::FenceBody`: only the fence character at the start of a line
    /// can close the fence, so skips to the next one and looks back for the
    /// line start.
    pub(crate) fn fence_body_fast(&mut self, chunk: &[u8], mut i: usize) -> usize {
        let from = i;
        loop {
            let Some(k) = memchr(self.fence.ch, &chunk[i..]) else {
                if let Some(indent) = line_start(chunk, from, chunk.len()) {
                    self.mode = Mode::FenceLineStart { indent };
                }
                return chunk.len();
            };
            let at = i + k;
            if let Some(indent) = line_start(chunk, from, at) {
                self.mode = Mode::FenceLineStart { indent };
                return at;
            }
            i = at + 1;
        }
    }

    pub(crate) fn newline(&mut self) {
        if self.scan.region == Region::Json && self.scan.json.in_string {
            // JSON strings hold no raw newline: this was never a JSON object.
            self.leave_json(None);
        }
        match self.tentative_fence.take() {
            Some(t) => {
                // The line was an opening fence; its info string is not content.
                self.scan = t.before;
                self.open_fence(b'`', t.len);
                self.mode = Mode::FenceLineStart { indent: 0 };
            }
            None => {
                self.mode = Mode::LineStart {
                    indent: 0,
                    fence_eligible: true,
                }
            }
        }
    }

    pub(crate) fn open_fence(&mut self, ch: u8, len: usize) {
        // A fence interrupts the paragraph: waiting code spans were literal.
        self.pending.clear();
        self.scan.cancel_pending();
        self.fence = Fence { ch, len };
    }

    /// Effects of a backtick run's first byte on the inline state.
    pub(crate) fn backticks_start(&mut self) {
        match self.scan.region {
            Region::Normal => self.scan.cancel_pending(),
            Region::Json => self.json_other_byte(),
            Region::Think | Region::Parameter => {}
        }
    }

    /// One to two tildes at a line start: ordinary text.
    fn literal_tildes(&mut self) {
        match self.scan.region {
            Region::Normal => self.scan.cancel_pending(),
            Region::Json => self.json_other_byte(),
            Region::Think | Region::Parameter => {}
        }
    }

    pub(crate) fn end_backticks(&mut self, len: usize, line_start: bool) {
        if line_start && len >= 3 {
            self.tentative_fence = Some(TentativeFence {
                len,
                before: self.scan,
            });
        } else {
            // A backtick after the opening run: the line is not a fence.
            self.tentative_fence = None;
        }
        // Read as text whatever the line turns out to be; a fence discards it.
        if let Some(j) = self.pending.iter().position(|p| p.len == len) {
            // Closes the span opened by pending[j]: everything since was code.
            self.scan = self.pending[j].before;
            self.pending.truncate(j);
        } else if self.scan.region == Region::Normal && self.pending.len() < MAX_PENDING_CODE_SPANS
        {
            self.pending.push(PendingSpan {
                len,
                before: self.scan,
            });
        }
    }
}
