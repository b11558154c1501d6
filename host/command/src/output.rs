//! A command's output, kept with a cap: the head and the tail, and how much
//! was cut between them.

use std::collections::VecDeque;

/// Output being captured: the first `head_cap` bytes, the last `tail_cap`
/// bytes, and the count of everything seen.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

/// What was kept of a command's output (stdout and stderr, interleaved as
/// written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The kept text (lossy UTF-8), with a line saying how much was cut
    /// where it was cut.
    pub text: String,
    /// Every byte the command wrote.
    pub total_bytes: u64,
    /// Whether anything was left out.
    pub cut: bool,
}

impl Capture {
    /// Keeps `head_cap` bytes from the start and `tail_cap` from the end.
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    /// Takes the next bytes written.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let room = self.head_cap.saturating_sub(self.head.len());
        let first = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..first]);
        bytes = &bytes[first..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(&bytes[bytes.len().saturating_sub(self.tail_cap)..]);
            return;
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..over);
        self.tail.extend(bytes);
    }

    /// The output as kept.
    pub fn finish(self) -> Captured {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let cut = self.total > kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if cut {
            if !text.ends_with('\n') && !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "[... {} bytes of output cut here; {} bytes in all, the first {} and the last {} \
                 kept ...]\n",
                self.total - kept,
                self.total,
                self.head.len(),
                self.tail.len()
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        Captured {
            text,
            total_bytes: self.total,
            cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Capture::new(4, 4);
        c.feed(b"abc");
        c.feed(b"def");
        let out = c.finish();
        assert_eq!(out.text, "abcdef");
        assert!(!out.cut);
        assert_eq!(out.total_bytes, 6);
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_what_was_cut() {
        let mut c = Capture::new(4, 4);
        for chunk in [&b"0123"[..], b"4567", b"89", b"abcdef"] {
            c.feed(chunk);
        }
        let out = c.finish();
        assert!(out.cut);
        assert_eq!(out.total_bytes, 16);
        assert_eq!(
            out.text,
            "0123\n[... 8 bytes of output cut here; 16 bytes in all, the first 4 and the last 4 \
             kept ...]\ncdef"
        );
    }
}
