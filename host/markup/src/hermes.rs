//! Hermes JSON: just enough of the object after `<tool_call>` to find its
//! top-level `"name"` and its closing brace.

use crate::detector::{Detector, Mode};
use crate::scan::Region;
use crate::tags::{MAX_TOOL_NAME_BYTES, is_name_byte};
use crate::verdict::Form;

/// How far after a Hermes `<tool_call>{` the top-level `"name"` key may
/// appear, in bytes from the `{`.
///
/// Hermes templates emit `"name"` first, so a real call names itself within a
/// few bytes; 4 KiB tolerates arguments written first. Past the window the
/// object is read as plain text again, so an endless unnamed object cannot
/// hide the rest of the answer.
pub const HERMES_NAME_WINDOW: usize = 4 * 1024;

/// Just enough JSON to find the top-level `"name"` and the object's end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Json {
    /// The `<tool_call>` that introduced the object.
    pub(crate) start: usize,
    /// The object's `{`.
    pub(crate) brace_at: usize,
    pub(crate) depth: u32,
    pub(crate) in_string: bool,
    pub(crate) escaped: bool,
    pub(crate) key: Key,
    pub(crate) name: NameSearch,
}

impl Json {
    pub(crate) fn new(start: usize, brace_at: usize) -> Self {
        Json {
            start,
            brace_at,
            depth: 1,
            in_string: false,
            escaped: false,
            key: Key::Expect,
            name: NameSearch::Searching,
        }
    }
}

/// Progress towards a top-level `"name": "…"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// Not at a top-level key.
    Idle,
    /// After `{` or `,` at depth 1: a key comes next.
    Expect,
    /// Inside a top-level key; `ok` while it still spells a prefix of `name`.
    Reading { matched: u8, ok: bool },
    /// After the key `"name"`, before `:`.
    AfterName,
    /// After `"name":`, before the value's `"`.
    AfterColon,
    /// Inside the name value, capturing into `Detector::name`.
    InValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameSearch {
    Searching,
    Found { qualifying: bool },
    Failed,
}

impl Detector {
    pub(crate) fn json_string_skippable(&self) -> bool {
        let j = &self.scan.json;
        j.in_string && !j.escaped && !matches!(j.key, Key::Reading { .. } | Key::InValue)
    }

    pub(crate) fn enter_json(&mut self, at: usize) {
        let start = self.scan.opener.take().unwrap_or(at);
        self.scan.tail = None;
        self.scan.region = Region::Json;
        self.scan.json = Json::new(start, at);
    }

    /// Leaves the JSON object; `close_end` is the end of its closing brace.
    pub(crate) fn leave_json(&mut self, close_end: Option<usize>) {
        let s = &mut self.scan;
        s.region = Region::Normal;
        if let NameSearch::Found { qualifying } = s.json.name {
            s.tail = Some(qualifying);
            if let (true, Some(end)) = (qualifying, close_end) {
                s.span_end = end;
            }
        }
    }

    /// A byte with no meaning to the JSON scanner (a backtick, a literal
    /// tilde, a scalar's letters): inside a string it is content that no
    /// name contains; outside one it interrupts a `"name": "…"` in progress.
    pub(crate) fn json_other_byte(&mut self) {
        let j = &mut self.scan.json;
        if j.in_string {
            j.escaped = false;
            if j.key == Key::InValue {
                j.name = NameSearch::Failed;
                j.key = Key::Idle;
            } else if let Key::Reading { matched, .. } = j.key {
                j.key = Key::Reading { matched, ok: false };
            }
        } else {
            if matches!(j.key, Key::AfterName | Key::AfterColon) {
                j.name = NameSearch::Failed;
            }
            j.key = Key::Idle;
        }
    }

    pub(crate) fn json_byte(&mut self, b: u8, at: usize) -> bool {
        let j = self.scan.json;
        if j.name == NameSearch::Searching && at >= j.brace_at.saturating_add(HERMES_NAME_WINDOW) {
            self.leave_json(None);
            return false;
        }
        if b == b'`' {
            self.backticks_start();
            self.mode = Mode::Backticks {
                len: 1,
                line_start: false,
            };
            return true;
        }
        if j.in_string {
            self.json_string_byte(b, at)
        } else {
            self.json_structure_byte(b, at)
        }
    }

    fn json_string_byte(&mut self, b: u8, at: usize) -> bool {
        let j = &mut self.scan.json;
        if j.escaped || b == b'\\' {
            j.escaped = !j.escaped;
            match j.key {
                Key::InValue => {
                    j.name = NameSearch::Failed;
                    j.key = Key::Idle;
                }
                Key::Reading { matched, .. } => j.key = Key::Reading { matched, ok: false },
                _ => {}
            }
            return true;
        }
        match b {
            b'"' => {
                j.in_string = false;
                match j.key {
                    Key::Reading {
                        matched: 4,
                        ok: true,
                    } => j.key = Key::AfterName,
                    Key::Reading { .. } => j.key = Key::Idle,
                    Key::InValue => {
                        j.key = Key::Idle;
                        let tool = self.lookup();
                        let s = &mut self.scan;
                        s.json.name = NameSearch::Found {
                            qualifying: tool.is_some(),
                        };
                        if let Some(tool) = tool {
                            s.qualifying(tool, Form::HermesJson, s.json.start, at + 1);
                        }
                    }
                    _ => {}
                }
            }
            b'\n' => {
                self.newline();
            }
            _ => match j.key {
                Key::Reading { matched, ok } => {
                    let ok = ok && b"name".get(usize::from(matched)) == Some(&b);
                    j.key = Key::Reading {
                        matched: matched.saturating_add(1),
                        ok,
                    };
                }
                Key::InValue => {
                    if self.name_len < MAX_TOOL_NAME_BYTES && is_name_byte(b) {
                        self.name[self.name_len] = b;
                        self.name_len += 1;
                    } else {
                        j.name = NameSearch::Failed;
                        j.key = Key::Idle;
                    }
                }
                _ => {}
            },
        }
        true
    }

    fn json_structure_byte(&mut self, b: u8, at: usize) -> bool {
        let j = &mut self.scan.json;
        match b {
            b' ' | b'\t' | b'\r' => {}
            b'\n' => self.newline(),
            b'"' => {
                j.in_string = true;
                j.key = match j.key {
                    Key::Expect => Key::Reading {
                        matched: 0,
                        ok: true,
                    },
                    Key::AfterColon => {
                        self.name_len = 0;
                        Key::InValue
                    }
                    Key::AfterName => {
                        j.name = NameSearch::Failed;
                        Key::Idle
                    }
                    _ => Key::Idle,
                };
            }
            b'{' | b'[' => {
                j.depth = j.depth.saturating_add(1);
                if matches!(j.key, Key::AfterName | Key::AfterColon) {
                    j.name = NameSearch::Failed;
                }
                j.key = Key::Idle;
            }
            b'}' | b']' => {
                j.depth -= 1;
                j.key = Key::Idle;
                if j.depth == 0 {
                    self.leave_json(Some(at + 1));
                }
            }
            b',' => {
                j.key = if j.depth == 1 && j.name == NameSearch::Searching {
                    Key::Expect
                } else {
                    Key::Idle
                };
            }
            b':' if j.key == Key::AfterName => j.key = Key::AfterColon,
            // Markup where JSON should be: the object is over (or never was).
            b'<' => {
                self.leave_json(None);
                return false;
            }
            _ => self.json_other_byte(),
        }
        true
    }
}
