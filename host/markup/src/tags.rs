//! The inline tag layer: envelope markers, Qwen3-Coder XML
//! (`<function=…>`, `<parameter=…>`) and `<think>`, matched byte by byte.

use crate::detector::{Detector, Mode};
use crate::scan::{FirstCall, MARKER_CLOSE, MARKER_OPEN, OpenCall, Region};
use crate::verdict::Form;

/// Longest tool name captured from `<function=NAME>`, a `<parameter=KEY>` key
/// or a Hermes `"name"` value, in bytes.
///
/// OpenAI-style function names are at most 64 bytes; twice that leaves room
/// for any name a host offers while bounding the capture buffer. A longer
/// name cannot be an offered tool, so the tag is read as plain text.
pub const MAX_TOOL_NAME_BYTES: usize = 128;

// The tags the inline layer recognises, as indexes into `TAGS` and bits of a
// mask. `<function=` and `<parameter=` continue with a name up to `>`.
const TAGS: [&[u8]; 8] = [
    b"<tool_call>",
    b"</tool_call>",
    b"<function=",
    b"</function>",
    b"<parameter=",
    b"</parameter>",
    b"<think>",
    b"</think>",
];
const TAG_OPEN: usize = 0;
const TAG_CLOSE: usize = 1;
const TAG_FUNCTION: usize = 2;
const TAG_FUNCTION_END: usize = 3;
const TAG_PARAMETER: usize = 4;
const TAG_PARAMETER_END: usize = 5;
const TAG_THINK: usize = 6;
const TAG_THINK_END: usize = 7;

const fn bit(tag: usize) -> u8 {
    1 << tag
}

/// Tags that mean something in ordinary text.
pub(crate) const NORMAL_TAGS: u8 = !bit(TAG_THINK_END);
/// Inside `<think>` only its end matters.
pub(crate) const THINK_TAGS: u8 = bit(TAG_THINK_END);
/// Inside a parameter value: its end, the function's end, and the envelope
/// markers (a model that forgets `</parameter>` still closes its envelope).
pub(crate) const PARAMETER_TAGS: u8 =
    bit(TAG_OPEN) | bit(TAG_CLOSE) | bit(TAG_FUNCTION_END) | bit(TAG_PARAMETER_END);

#[derive(Debug, Clone, Copy)]
pub(crate) struct TagMatch {
    pub(crate) start: usize,
    /// Tags still matching what has been read.
    pub(crate) candidates: u8,
    /// Bytes matched so far, the `<` included.
    pub(crate) len: usize,
}

/// Bytes a tool name may contain. Anything else ends the capture: an offered
/// name never contains whitespace, quotes, angle brackets or backticks.
pub(crate) fn is_name_byte(b: u8) -> bool {
    !matches!(
        b,
        b' ' | b'\t' | b'\r' | b'\n' | b'<' | b'>' | b'`' | b'"' | b'\\'
    )
}

impl Detector {
    pub(crate) fn start_tag(&mut self, at: usize, candidates: u8) {
        self.tag = TagMatch {
            start: at,
            candidates,
            len: 1,
        };
        self.mode = Mode::Tag;
    }

    pub(crate) fn tag_failed(&mut self) {
        self.mode = Mode::Inline;
        if self.scan.region == Region::Normal {
            self.scan.cancel_pending();
        }
    }

    pub(crate) fn tag_byte(&mut self, b: u8, at: usize) -> bool {
        let k = self.tag.len;
        let mut still = 0u8;
        let mut complete = None;
        for (t, text) in TAGS.iter().enumerate() {
            if self.tag.candidates & bit(t) != 0 && text.get(k) == Some(&b) {
                still |= bit(t);
                if text.len() == k + 1 {
                    complete = Some(t);
                }
            }
        }
        if still == 0 {
            self.tag_failed();
            return false;
        }
        match complete {
            None => {
                self.tag.candidates = still;
                self.tag.len = k + 1;
            }
            Some(t @ (TAG_FUNCTION | TAG_PARAMETER)) => {
                self.name_len = 0;
                self.mode = Mode::Name {
                    function: t == TAG_FUNCTION,
                };
            }
            Some(t) => {
                self.mode = Mode::Inline;
                self.on_tag(t, self.tag.start, at + 1);
            }
        }
        true
    }

    pub(crate) fn name_byte(&mut self, function: bool, b: u8, at: usize) -> bool {
        if b == b'>' && self.name_len > 0 {
            self.mode = Mode::Inline;
            let end = at + 1;
            if function {
                self.on_function(self.tag.start, end);
            } else {
                self.on_parameter(end);
            }
            true
        } else if is_name_byte(b) && self.name_len < MAX_TOOL_NAME_BYTES {
            self.name[self.name_len] = b;
            self.name_len += 1;
            true
        } else {
            self.tag_failed();
            false
        }
    }

    pub(crate) fn lookup(&self) -> Option<usize> {
        let name = &self.name[..self.name_len];
        self.tools.iter().position(|t| t.as_bytes() == name)
    }

    fn on_function(&mut self, start: usize, end: usize) {
        let tool = self.lookup();
        let s = &mut self.scan;
        // An open call without `</function>` ends here.
        let call_start = s.opener.take().unwrap_or(start);
        s.tail = None;
        s.call = Some(tool.is_some());
        if let Some(tool) = tool {
            s.open_call = OpenCall {
                tool,
                start: call_start,
                parameters: false,
            };
            s.qualifying(tool, Form::QwenXml, call_start, end);
        }
    }

    fn on_parameter(&mut self, end: usize) {
        let s = &mut self.scan;
        match s.call {
            Some(qualifying) => {
                s.region = Region::Parameter;
                if qualifying {
                    s.open_call.parameters = true;
                    s.span_end = end;
                }
            }
            None => s.cancel_pending(),
        }
    }

    fn on_tag(&mut self, tag: usize, start: usize, end: usize) {
        let s = &mut self.scan;
        match tag {
            TAG_OPEN => {
                s.region = Region::Normal;
                s.markers |= MARKER_OPEN;
                s.call = None;
                s.tail = None;
                s.opener = Some(start);
            }
            TAG_CLOSE => {
                s.region = Region::Normal;
                s.markers |= MARKER_CLOSE;
                if s.call.or(s.tail) == Some(true) {
                    s.span_end = end;
                }
                s.call = None;
                s.tail = None;
                s.opener = None;
            }
            TAG_FUNCTION_END => match s.call {
                Some(qualifying) => {
                    s.region = Region::Normal;
                    s.call = None;
                    s.tail = Some(qualifying);
                    if qualifying {
                        s.span_end = end;
                        // ADR-0067: the first complete block, `</function>`
                        // after at least one parameter.
                        let c = s.open_call;
                        if c.parameters && s.complete.is_none() {
                            s.complete = Some(FirstCall {
                                tool: c.tool,
                                form: Form::QwenXml,
                                start: c.start,
                            });
                        }
                    }
                }
                None => s.cancel_pending(),
            },
            TAG_PARAMETER_END if s.region == Region::Parameter => {
                s.region = Region::Normal;
                if s.call == Some(true) {
                    s.span_end = end;
                }
            }
            TAG_THINK => {
                s.cancel_pending();
                s.region = Region::Think;
            }
            TAG_THINK_END => s.region = Region::Normal,
            _ => s.cancel_pending(),
        }
    }
}
