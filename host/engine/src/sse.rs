//! Server-sent events, decoded the way browsers decode them.
//!
//! Follows the WHATWG event-stream rules: a leading BOM is skipped; lines
//! end in LF, CRLF or a lone CR (and a CR at the end of one read may be the
//! first half of a CRLF finished by the next); `data:` lines accumulate,
//! joined by `\n`; a blank line dispatches the event; lines starting with
//! `:` are comments; one optional space after the colon is dropped. The
//! decoder is fed bytes as they arrive and never rescans what it has read.
//!
//! One addition: llama.cpp reports a failure inside a 200 stream as an
//! `error:` field rather than a `data:` one. Browsers ignore unknown fields;
//! an agent host must not, so the decoder keeps it on the event.

/// Longest line accepted. Engines put one JSON chunk on a line, a few KiB
/// at most; a line this long is a broken or hostile stream.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Largest event (all its data lines together) accepted.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when given.
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
    /// An `error:` field (llama.cpp's way of failing inside a 200 stream).
    pub error: Option<String>,
}

/// Why the stream cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line longer than [`MAX_LINE_BYTES`].
    #[error("a line of the event stream is longer than {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// An event larger than [`MAX_EVENT_BYTES`].
    #[error("an event in the stream is larger than {limit} bytes")]
    EventTooLarge {
        /// The limit.
        limit: usize,
    },
}

/// Incremental event-stream decoder.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous read ended in CR: a LF starting this one belongs to it.
    after_cr: bool,
    /// Still at the very start of the stream (a BOM may follow).
    at_start: bool,
    /// Bytes of a possible BOM seen at the start, not yet decided.
    bom_seen: usize,
    data: String,
    has_data: bool,
    event: Option<String>,
    error: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self {
            at_start: true,
            ..Self::default()
        }
    }

    /// Feeds `bytes`, pushing every event they complete onto `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.at_start {
            while self.bom_seen < BOM.len() {
                match bytes.first() {
                    None => return Ok(()),
                    Some(&b) if b == BOM[self.bom_seen] => {
                        self.bom_seen += 1;
                        bytes = &bytes[1..];
                    }
                    Some(_) => {
                        // Not a BOM after all: what matched so far is text.
                        self.line.extend_from_slice(&BOM[..self.bom_seen]);
                        break;
                    }
                }
            }
            self.at_start = false;
        }
        if bytes.is_empty() {
            return Ok(());
        }
        if self.after_cr {
            self.after_cr = false;
            if bytes.first() == Some(&b'\n') {
                bytes = &bytes[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', bytes) {
            self.push_line_bytes(&bytes[..i])?;
            self.end_line(out)?;
            if bytes[i] == b'\r' {
                match bytes.get(i + 1) {
                    Some(b'\n') => bytes = &bytes[i + 2..],
                    Some(_) => bytes = &bytes[i + 1..],
                    None => {
                        self.after_cr = true;
                        bytes = &[];
                    }
                }
            } else {
                bytes = &bytes[i + 1..];
            }
        }
        self.push_line_bytes(bytes)
    }

    /// Whether the decoder holds an undispatched event or partial line: a
    /// stream that ends here ended in the middle of something.
    pub fn is_mid_event(&self) -> bool {
        !self.line.is_empty() || self.has_data || self.event.is_some() || self.error.is_some()
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            return Err(SseError::LineTooLong {
                limit: MAX_LINE_BYTES,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        // Decoded as browsers do: invalid UTF-8 becomes U+FFFD.
        let line = String::from_utf8_lossy(&line);
        let line = line.as_ref();
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(SseError::EventTooLarge {
                        limit: MAX_EVENT_BYTES,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "error" => self.error = Some(value.to_owned()),
            // `id` and `retry` only matter to a reconnecting browser.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        let error = self.error.take();
        if !self.has_data && error.is_none() {
            // Per the spec, an event with no data is not dispatched.
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            error,
        });
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn decode_in(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out).unwrap();
        }
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn line_endings_lf_crlf_and_lone_cr_are_equivalent() {
        for stream in [
            &b"data: a\n\ndata: b\n\n"[..],
            b"data: a\r\n\r\ndata: b\r\n\r\n",
            b"data: a\r\rdata: b\r\r",
            b"data: a\r\n\rdata: b\n\r\n",
        ] {
            assert_eq!(data(&decode_in(&[stream])), ["a", "b"], "{stream:?}");
        }
    }

    #[test]
    fn every_split_of_a_stream_decodes_the_same() {
        let stream = "\u{feff}: ping\r\ndata: {\"x\": \"é🦀\"}\r\n\r\nevent: e\rdata: one\rdata: two\r\rerror: {\"code\": 500}\n\ndata: three\r\ndata: four\r\n\r\ndata: [DONE]\n\n"
            .as_bytes();
        let whole = decode_in(&[stream]);
        assert_eq!(
            data(&whole),
            ["{\"x\": \"é🦀\"}", "one\ntwo", "", "three\nfour", "[DONE]"]
        );
        assert_eq!(whole[1].event.as_deref(), Some("e"));
        assert_eq!(whole[2].error.as_deref(), Some("{\"code\": 500}"));
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                let got = decode_in(&[&stream[..i], &stream[i..j], &stream[j..]]);
                assert_eq!(got, whole, "split at {i}, {j}");
            }
        }
    }

    #[test]
    fn bom_only_at_the_start_and_partial_bom_is_text() {
        assert_eq!(data(&decode_in(&[b"\xEF\xBB", b"\xBFdata: x\n\n"])), ["x"]);
        // A field name that merely starts like a BOM is kept as text (and
        // ignored as an unknown field) rather than swallowed.
        assert_eq!(decode_in(&[b"\xEFxx: y\n\n"]), Vec::<SseEvent>::new());
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored_and_space_is_optional() {
        let got = decode_in(&[b": keep-alive\nid: 7\nretry: 10\ndata:no-space\n\n"]);
        assert_eq!(data(&got), ["no-space"]);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        assert!(decode_in(&[b"event: x\n\n"]).is_empty());
    }

    #[test]
    fn oversized_lines_and_events_are_errors() {
        let mut d = SseDecoder::new();
        let long = vec![b'a'; MAX_LINE_BYTES + 1];
        assert_eq!(
            d.feed(&long, &mut Vec::new()),
            Err(SseError::LineTooLong {
                limit: MAX_LINE_BYTES
            })
        );
        let mut d = SseDecoder::new();
        let line = format!("data: {}\n", "b".repeat(MAX_LINE_BYTES - 10));
        let mut res = Ok(());
        for _ in 0..5 {
            res = res.and(d.feed(line.as_bytes(), &mut Vec::new()));
        }
        assert_eq!(
            res,
            Err(SseError::EventTooLarge {
                limit: MAX_EVENT_BYTES
            })
        );
    }

    #[test]
    fn mid_event_is_reported_for_truncation() {
        let mut d = SseDecoder::new();
        d.feed(b"data: {\"par", &mut Vec::new()).unwrap();
        assert!(d.is_mid_event());
        let mut d = SseDecoder::new();
        d.feed(b"data: x\n\n", &mut Vec::new()).unwrap();
        assert!(!d.is_mid_event());
    }
}
