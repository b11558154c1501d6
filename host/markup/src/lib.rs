//! Recognises Qwen tool-call markup that a model wrote into its answer as
//! plain text instead of calling a tool (ADR-0065).
//!
//! A local model sometimes streams `<function=read_file>…</tool_call>` as
//! ordinary content: nothing runs, and without this crate the turn would look
//! successful. [`Detector`] reads the assistant's *content* (never its
//! reasoning) and returns a [`Verdict`] saying whether such unexecuted markup
//! is there, which offered tool it names, and where it is.
//!
//! # What counts
//!
//! - Qwen3-Coder XML, `<function=NAME>` (with `<parameter=KEY>…</parameter>`
//!   children and `</function>`), or Hermes JSON, `<tool_call>` then optional
//!   whitespace then a JSON object whose top-level `"name"` is NAME.
//! - NAME must be one of the tools offered in this request, *and* the text
//!   must carry an envelope marker, `<tool_call>` or `</tool_call>`, somewhere
//!   live. A bare `<function=read_file>` in prose is not an attempted call; the
//!   failure the ADR records is function markup with an orphan `</tool_call>`.
//! - Nothing inside Markdown fenced code blocks, inline code spans or
//!   `<think>…</think>` counts, neither markup nor envelope markers.
//! - Inside a parameter value only `</parameter>`, `</function>` and the
//!   envelope markers are recognised, so a value that quotes markup does not
//!   change which call the verdict names.
//!
//! Markdown is read as CommonMark reads it, narrowed to what matters here:
//! fences open with up to three spaces of indentation (a tab never) and at
//! least three backticks or tildes, a backtick fence's info string holds no
//! backtick, and a fence closes on a line of the same character, at least as
//! long, with only whitespace after; an unclosed fence runs to the end. Code
//! spans close on the next run of exactly as many backticks in the same
//! paragraph (blank lines and fences end paragraphs); an unmatched run is
//! literal. Not modelled, on purpose: indented code blocks (a model's
//! indented markup is still an attempted call), backslash escapes, block
//! quotes and list containers. An unclosed `<think>` runs to the end; a
//! `</think>` with no opener is ordinary text (content from a server that
//! splits reasoning out never has one).
//!
//! # Key decision: one pass, bytes in, no look-back
//!
//! The host feeds streamed bytes as they arrive, split anywhere (inside a tag,
//! a fence, a UTF-8 character), and the verdict must not depend on how they
//! were split. The detector is therefore a byte-at-a-time state machine that
//! never keeps or rereads the text: every token of interest is ASCII, so
//! partial tokens carry over in a few bytes of state, and `memchr` skips the
//! bytes in between. Markdown is modelled block-first as CommonMark does:
//! fences are decided per line, then inline constructs (code spans, `<think>`,
//! calls, parameter values) apply in order of where they start.
//!
//! The one construct that needs look-ahead is the inline code span: a run of
//! backticks is code only if a run of the same length closes it in the same
//! paragraph. Instead of buffering, the detector keeps scanning as if the run
//! were literal and remembers a snapshot of its findings from before the run.
//! A closing run restores the snapshot (everything since was code); the end of
//! the paragraph drops the snapshot (the run was literal, the findings stand).
//! The snapshot is a small fixed-size copy, so work stays linear in the input.
//!
//! # Security
//!
//! The verdict carries no arguments and nothing executable: a tool name picked
//! from the host's own offered list, a form, the envelope markers seen and a
//! byte span. This crate offers no way to turn text into a tool call; recovery
//! asks the model for a fresh structured call, which then goes through the
//! normal route, permission gate and sandbox. All limits are named constants
//! below, so hostile text cannot make the detector allocate or work without
//! bound.

use memchr::{memchr, memchr2, memchr3};

/// Longest tool name captured from `<function=NAME>`, a `<parameter=KEY>` key
/// or a Hermes `"name"` value, in bytes.
///
/// OpenAI-style function names are at most 64 bytes; twice that leaves room
/// for any name a host offers while bounding the capture buffer. A longer
/// name cannot be an offered tool, so the tag is read as plain text.
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// How far after a Hermes `<tool_call>{` the top-level `"name"` key may
/// appear, in bytes from the `{`.
///
/// Hermes templates emit `"name"` first, so a real call names itself within a
/// few bytes; 4 KiB tolerates arguments written first. Past the window the
/// object is read as plain text again, so an endless unnamed object cannot
/// hide the rest of the answer.
pub const HERMES_NAME_WINDOW: usize = 4 * 1024;

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

/// Which tool-call syntax the unexecuted markup used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Form {
    /// Qwen3-Coder XML: `<function=NAME>`, `<parameter=KEY>…</parameter>`,
    /// `</function>`.
    QwenXml,
    /// Hermes JSON (Qwen2.5, Qwen3): `<tool_call>` then
    /// `{"name": NAME, "arguments": …}`.
    HermesJson,
}

impl Form {
    /// The form's name in machine-readable output: `qwen-xml` or
    /// `hermes-json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::QwenXml => "qwen-xml",
            Form::HermesJson => "hermes-json",
        }
    }
}

/// A tool-call envelope marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Marker {
    /// `<tool_call>`.
    Open,
    /// `</tool_call>`.
    Close,
}

impl Marker {
    /// The marker as it appears in text.
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::Open => "<tool_call>",
            Marker::Close => "</tool_call>",
        }
    }
}

/// What the detector found in one assistant message.
///
/// # Security
///
/// Deliberately holds no arguments and nothing that could be executed; see
/// the crate documentation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Verdict {
    /// The content holds unexecuted tool-call markup: a call naming an
    /// offered tool, and an envelope marker, both outside code and reasoning.
    pub unexecuted: bool,
    /// The offered tool named by the first qualifying call, when
    /// `unexecuted`.
    pub tool: Option<String>,
    /// The syntax of the first qualifying call, when `unexecuted`.
    pub form: Option<Form>,
    /// Every envelope marker kind seen outside code and reasoning, in the
    /// order `Open`, `Close`, whether or not the content is `unexecuted`.
    pub markers: Vec<Marker>,
    /// Byte offsets `[start, end)` into the whole content, when `unexecuted`:
    /// from the start of the first qualifying call (its `<tool_call>` when only
    /// whitespace separates them) to the end of the last tag belonging to any
    /// qualifying call (its `</tool_call>` when only whitespace follows the
    /// call, or the Hermes object's closing brace).
    pub span: Option<(usize, usize)>,
}

/// Checks one complete message at once: [`Detector::new`], one
/// [`Detector::feed`], [`Detector::finish`].
pub fn detect(offered_tools: &[&str], content: &str) -> Verdict {
    let mut detector = Detector::new(offered_tools);
    detector.feed(content.as_bytes());
    detector.finish()
}

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
const NORMAL_TAGS: u8 = !bit(TAG_THINK_END);
/// Inside `<think>` only its end matters.
const THINK_TAGS: u8 = bit(TAG_THINK_END);
/// Inside a parameter value: its end, the function's end, and the envelope
/// markers (a model that forgets `</parameter>` still closes its envelope).
const PARAMETER_TAGS: u8 =
    bit(TAG_OPEN) | bit(TAG_CLOSE) | bit(TAG_FUNCTION_END) | bit(TAG_PARAMETER_END);

const MARKER_OPEN: u8 = 1;
const MARKER_CLOSE: u8 = 2;

/// A streaming detector for one assistant message.
///
/// Feed the content's bytes in any number of chunks, split anywhere, then
/// [`finish`](Detector::finish). The verdict is the same for every split.
/// Memory is fixed after construction apart from the offered names; work is
/// linear in the input.
#[derive(Debug, Clone)]
pub struct Detector {
    tools: Vec<String>,
    /// Offset of the next chunk's first byte in the whole content.
    base: usize,
    mode: Mode,
    /// The open fence, meaningful in the `Fence*` modes.
    fence: Fence,
    /// The tag being matched, meaningful in `Mode::Tag` and `Mode::Name`.
    tag: TagMatch,
    /// A name being captured: `<function=NAME>`, a key, or a Hermes name.
    name: [u8; MAX_TOOL_NAME_BYTES],
    name_len: usize,
    /// Findings and inline state as if every waiting code span were literal.
    scan: Scan,
    /// Code spans waiting for their closing run, oldest first, each with the
    /// findings from just before it opened.
    pending: Vec<PendingSpan>,
    /// A line that opened with three or more backticks: a fence unless another
    /// backtick follows on the line. Holds the findings from the line's start.
    tentative_fence: Option<TentativeFence>,
}

/// What the byte layer is in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// At the start of a line outside a fence, reading indentation.
    LineStart { indent: u8, fence_eligible: bool },
    /// Tildes at the start of a line: a fence from three on.
    Tildes { len: usize },
    /// Inside a line; what matters depends on `Scan::region`.
    Inline,
    /// After `<`, matching one of `TAGS`.
    Tag,
    /// After `<function=` (`function`) or `<parameter=`, reading up to `>`.
    Name { function: bool },
    /// A run of backticks.
    Backticks { len: usize, line_start: bool },
    /// At the start of a line inside a fence, reading indentation.
    FenceLineStart { indent: u8 },
    /// Fence characters at a line start inside a fence: a closing fence?
    FenceRun { len: usize },
    /// After a long enough closing run: only whitespace may follow.
    FenceTail,
    /// Inside a fence (or its info string), skipping to the newline.
    FenceBody,
}

#[derive(Debug, Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
}

#[derive(Debug, Clone, Copy)]
struct TagMatch {
    start: usize,
    /// Tags still matching what has been read.
    candidates: u8,
    /// Bytes matched so far, the `<` included.
    len: usize,
}

#[derive(Debug, Clone, Copy)]
struct PendingSpan {
    len: usize,
    before: Scan,
}

#[derive(Debug, Clone, Copy)]
struct TentativeFence {
    len: usize,
    before: Scan,
}

/// Where inline text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    /// Ordinary text, including a function body between parameters.
    Normal,
    /// Inside `<think>`: reasoning, ignored up to `</think>`.
    Think,
    /// Inside a parameter value of an open function.
    Parameter,
    /// Inside a Hermes JSON object after `<tool_call>`.
    Json,
}

/// Everything a code-span snapshot must restore: inline state and findings.
/// Small and `Copy` on purpose; no buffers.
#[derive(Debug, Clone, Copy)]
struct Scan {
    region: Region,
    json: Json,
    /// An XML function is open: `Some(qualifying)`.
    call: Option<bool>,
    /// Only whitespace since a call ended: `Some(qualifying)`; a
    /// `</tool_call>` now belongs to that call.
    tail: Option<bool>,
    /// Only whitespace since a live `<tool_call>` that started here.
    opener: Option<usize>,
    first: Option<FirstCall>,
    /// End of the last tag belonging to a qualifying call.
    span_end: usize,
    markers: u8,
}

impl Scan {
    fn new() -> Self {
        Scan {
            region: Region::Normal,
            json: Json::new(0, 0),
            call: None,
            tail: None,
            opener: None,
            first: None,
            span_end: 0,
            markers: 0,
        }
    }

    /// Something other than whitespace was read in ordinary text.
    fn cancel_pending(&mut self) {
        self.opener = None;
        self.tail = None;
    }

    /// A qualifying call was found: remember it if it is the first, and
    /// extend the span.
    fn qualifying(&mut self, tool: usize, form: Form, start: usize, end: usize) {
        if self.first.is_none() {
            self.first = Some(FirstCall { tool, form, start });
        }
        self.span_end = end;
    }
}

#[derive(Debug, Clone, Copy)]
struct FirstCall {
    /// Index into `Detector::tools`.
    tool: usize,
    form: Form,
    start: usize,
}

/// Just enough JSON to find the top-level `"name"` and the object's end.
#[derive(Debug, Clone, Copy)]
struct Json {
    /// The `<tool_call>` that introduced the object.
    start: usize,
    /// The object's `{`.
    brace_at: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    key: Key,
    name: NameSearch,
}

impl Json {
    fn new(start: usize, brace_at: usize) -> Self {
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
enum Key {
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
enum NameSearch {
    Searching,
    Found { qualifying: bool },
    Failed,
}

/// Whether `at` is preceded by a newline and at most three spaces, all in
/// `chunk[from..at]`, and if so how many spaces. `from` must be inside a line
/// (its line start already read), so the look-back never passes it: at most
/// four bytes, all already in hand.
fn line_start(chunk: &[u8], from: usize, at: usize) -> Option<u8> {
    let mut q = at;
    while q > from && at - q < 4 && chunk[q - 1] == b' ' {
        q -= 1;
    }
    let indent = at - q;
    (indent <= 3 && q > from && chunk[q - 1] == b'\n').then_some(indent as u8)
}

/// Bytes a tool name may contain. Anything else ends the capture: an offered
/// name never contains whitespace, quotes, angle brackets or backticks.
fn is_name_byte(b: u8) -> bool {
    !matches!(
        b,
        b' ' | b'\t' | b'\r' | b'\n' | b'<' | b'>' | b'`' | b'"' | b'\\'
    )
}

impl Detector {
    /// A detector for one message, given the names of the tools offered in
    /// the request that produced it.
    pub fn new<I, S>(offered_tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Detector {
            tools: offered_tools
                .into_iter()
                .map(|t| t.as_ref().to_owned())
                .collect(),
            base: 0,
            mode: Mode::LineStart {
                indent: 0,
                fence_eligible: true,
            },
            fence: Fence { ch: b'`', len: 0 },
            tag: TagMatch {
                start: 0,
                candidates: 0,
                len: 0,
            },
            name: [0; MAX_TOOL_NAME_BYTES],
            name_len: 0,
            scan: Scan::new(),
            pending: Vec::with_capacity(MAX_PENDING_CODE_SPANS),
            tentative_fence: None,
        }
    }

    /// Reads the next bytes of the content. A chunk may end anywhere,
    /// including inside a tag or a multi-byte character.
    pub fn feed(&mut self, chunk: &[u8]) {
        let mut i = 0;
        while i < chunk.len() {
            i = match self.mode {
                Mode::Inline if self.in_plain_text() => self.plain_text_fast(chunk, i),
                Mode::Inline => self.inline_fast(chunk, i),
                Mode::FenceBody => self.fence_body_fast(chunk, i),
                _ => {
                    if self.step(chunk[i], self.base + i) {
                        i + 1
                    } else {
                        i
                    }
                }
            };
        }
        self.base += chunk.len();
    }

    /// Ends the message and returns the verdict.
    pub fn finish(mut self) -> Verdict {
        match self.mode {
            Mode::Backticks { len, line_start } => self.end_backticks(len, line_start),
            Mode::Tag | Mode::Name { .. } => self.tag_failed(),
            _ => {}
        }
        // The last line ends here: a line-start fence with no second backtick
        // run on it is a fence, and its info string was never content.
        if let Some(t) = self.tentative_fence.take() {
            self.scan = t.before;
        }
        // The paragraph ends here: every waiting code span was literal.
        self.pending.clear();
        self.verdict()
    }

    fn verdict(&self) -> Verdict {
        let s = &self.scan;
        let mut markers = Vec::new();
        if s.markers & MARKER_OPEN != 0 {
            markers.push(Marker::Open);
        }
        if s.markers & MARKER_CLOSE != 0 {
            markers.push(Marker::Close);
        }
        match s.first {
            Some(first) if !markers.is_empty() => Verdict {
                unexecuted: true,
                tool: self.tools.get(first.tool).cloned(),
                form: Some(first.form),
                markers,
                span: Some((first.start, s.span_end)),
            },
            _ => Verdict {
                markers,
                ..Verdict::default()
            },
        }
    }

    /// Ordinary text with nothing waiting on whitespace: the common state,
    /// served by `plain_text_fast`.
    fn in_plain_text(&self) -> bool {
        self.scan.region == Region::Normal && self.scan.opener.is_none() && self.scan.tail.is_none()
    }

    /// `Mode::Inline` in plain text (see `in_plain_text`): loops over the
    /// chunk while the next interesting byte can be settled on the spot, and
    /// hands over to `step` otherwise. Returns the next index.
    ///
    /// Each shortcut does exactly what `step` would do with the same bytes;
    /// the unit tests compare the two on generated input.
    fn plain_text_fast(&mut self, chunk: &[u8], mut i: usize) -> usize {
        loop {
            // `i` is always inside a line. With no code span waiting and no
            // tentative fence, a newline only matters when the next line
            // starts with a fence character, so search for those instead and
            // look back a few bytes for the line start.
            let lines_matter = !self.pending.is_empty() || self.tentative_fence.is_some();
            let found = if lines_matter {
                memchr3(b'<', b'`', b'\n', &chunk[i..])
            } else {
                memchr3(b'<', b'`', b'~', &chunk[i..])
            };
            let Some(k) = found else {
                if !lines_matter && let Some(indent) = line_start(chunk, i, chunk.len()) {
                    self.mode = Mode::LineStart {
                        indent,
                        fence_eligible: true,
                    };
                }
                return chunk.len();
            };
            let at = i + k;
            if !lines_matter
                && matches!(chunk[at], b'`' | b'~')
                && let Some(indent) = line_start(chunk, i, at)
            {
                self.mode = Mode::LineStart {
                    indent,
                    fence_eligible: true,
                };
                return at;
            }
            match chunk[at] {
                // Not at a line start: ordinary text.
                b'~' => i = at + 1,
                b'\n' if self.tentative_fence.is_none() => {
                    // What `LineStart` would do, when the line's start is in
                    // this chunk: whitespace first, then the first other byte.
                    let line = at + 1;
                    let ws = chunk[line..]
                        .iter()
                        .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\r'))
                        .count();
                    let j = line + ws;
                    let eligible = ws <= 3 && chunk[line..j].iter().all(|&b| b == b' ');
                    match chunk.get(j) {
                        // A blank line ends the paragraph; the newline at `j`
                        // then starts the next line.
                        Some(b'\n') => {
                            self.pending.clear();
                            i = j;
                        }
                        Some(b'`' | b'~') if eligible => {
                            self.mode = Mode::LineStart {
                                indent: ws as u8, // at most 3
                                fence_eligible: true,
                            };
                            return j;
                        }
                        Some(_) => i = j,
                        None => {
                            self.mode = Mode::LineStart {
                                indent: 0,
                                fence_eligible: true,
                            };
                            return line;
                        }
                    }
                }
                // Every tag's second byte is one of these; anything else ends
                // the match at once and is read again as text.
                b'<' if chunk
                    .get(at + 1)
                    .is_some_and(|c| !matches!(c, b't' | b'/' | b'f' | b'p')) =>
                {
                    i = at + 1;
                }
                b'`' => {
                    let len = chunk[at..].iter().take_while(|&&b| b == b'`').count();
                    if at + len == chunk.len() {
                        // The run may go on in the next chunk.
                        self.mode = Mode::Backticks {
                            len,
                            line_start: false,
                        };
                        return chunk.len();
                    }
                    self.end_backticks(len, false);
                    i = at + len;
                    if !self.in_plain_text() {
                        return i;
                    }
                }
                _ => {
                    return if self.step(chunk[at], self.base + at) {
                        at + 1
                    } else {
                        at
                    };
                }
            }
        }
    }

    /// `Mode::FenceBody`: only the fence character at the start of a line
    /// can close the fence, so skips to the next one and looks back for the
    /// line start.
    fn fence_body_fast(&mut self, chunk: &[u8], mut i: usize) -> usize {
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

    /// In `Mode::Inline`, skips bytes that cannot matter in the current state
    /// and steps the first one that might. Returns the next index.
    fn inline_fast(&mut self, chunk: &[u8], i: usize) -> usize {
        let rest = &chunk[i..];
        let waiting = !self.pending.is_empty() || self.tentative_fence.is_some();
        let found = match self.scan.region {
            Region::Normal if self.scan.opener.is_none() && self.scan.tail.is_none() => {
                memchr3(b'<', b'`', b'\n', rest)
            }
            Region::Think | Region::Parameter if waiting => memchr3(b'<', b'`', b'\n', rest),
            Region::Think | Region::Parameter => memchr2(b'<', b'\n', rest),
            Region::Json if self.json_string_skippable() && !waiting => {
                let j = &self.scan.json;
                let limit = if j.name == NameSearch::Searching {
                    let window_end = j.brace_at.saturating_add(HERMES_NAME_WINDOW);
                    rest.len().min(window_end.saturating_sub(self.base + i))
                } else {
                    rest.len()
                };
                match memchr3(b'"', b'\\', b'\n', &rest[..limit]) {
                    Some(k) => Some(k),
                    None if limit < rest.len() => Some(limit),
                    None => None,
                }
            }
            // Whitespace-sensitive or byte-level state: one byte at a time.
            _ => Some(0),
        };
        match found {
            None => chunk.len(),
            Some(k) => {
                let at = i + k;
                if self.step(chunk[at], self.base + at) {
                    at + 1
                } else {
                    at
                }
            }
        }
    }

    fn json_string_skippable(&self) -> bool {
        let j = &self.scan.json;
        j.in_string && !j.escaped && !matches!(j.key, Key::Reading { .. } | Key::InValue)
    }

    /// Reads one byte at absolute offset `at`. Returns false when the byte
    /// only changed the mode and must be read again in the new one.
    fn step(&mut self, b: u8, at: usize) -> bool {
        match self.mode {
            Mode::Inline => self.inline_byte(b, at),
            Mode::LineStart {
                indent,
                fence_eligible,
            } => match b {
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
            },
            Mode::Tildes { len } => {
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
            Mode::Backticks { len, line_start } => {
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
            Mode::Tag => self.tag_byte(b, at),
            Mode::Name { function } => self.name_byte(function, b, at),
            Mode::FenceLineStart { indent } => match b {
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
            },
            Mode::FenceRun { len } => {
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
            Mode::FenceTail => {
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
            Mode::FenceBody => {
                if b == b'\n' {
                    self.mode = Mode::FenceLineStart { indent: 0 };
                }
                true
            }
        }
    }

    fn inline_byte(&mut self, b: u8, at: usize) -> bool {
        match self.scan.region {
            Region::Normal => match b {
                b'\n' => self.newline(),
                b'<' => self.start_tag(at, NORMAL_TAGS),
                b'`' => {
                    self.backticks_start();
                    self.mode = Mode::Backticks {
                        len: 1,
                        line_start: false,
                    };
                }
                b' ' | b'\t' | b'\r' => {}
                b'{' if self.scan.opener.is_some() => self.enter_json(at),
                _ => self.scan.cancel_pending(),
            },
            Region::Think | Region::Parameter => match b {
                b'\n' => self.newline(),
                b'<' if self.scan.region == Region::Think => self.start_tag(at, THINK_TAGS),
                b'<' => self.start_tag(at, PARAMETER_TAGS),
                b'`' => {
                    self.mode = Mode::Backticks {
                        len: 1,
                        line_start: false,
                    }
                }
                _ => {}
            },
            Region::Json => return self.json_byte(b, at),
        }
        true
    }

    fn newline(&mut self) {
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

    fn open_fence(&mut self, ch: u8, len: usize) {
        // A fence interrupts the paragraph: waiting code spans were literal.
        self.pending.clear();
        self.scan.cancel_pending();
        self.fence = Fence { ch, len };
    }

    /// Effects of a backtick run's first byte on the inline state.
    fn backticks_start(&mut self) {
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

    fn end_backticks(&mut self, len: usize, line_start: bool) {
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

    fn start_tag(&mut self, at: usize, candidates: u8) {
        self.tag = TagMatch {
            start: at,
            candidates,
            len: 1,
        };
        self.mode = Mode::Tag;
    }

    fn tag_failed(&mut self) {
        self.mode = Mode::Inline;
        if self.scan.region == Region::Normal {
            self.scan.cancel_pending();
        }
    }

    fn tag_byte(&mut self, b: u8, at: usize) -> bool {
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

    fn name_byte(&mut self, function: bool, b: u8, at: usize) -> bool {
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

    fn lookup(&self) -> Option<usize> {
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
            s.qualifying(tool, Form::QwenXml, call_start, end);
        }
    }

    fn on_parameter(&mut self, end: usize) {
        let s = &mut self.scan;
        match s.call {
            Some(qualifying) => {
                s.region = Region::Parameter;
                if qualifying {
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

    fn enter_json(&mut self, at: usize) {
        let start = self.scan.opener.take().unwrap_or(at);
        self.scan.tail = None;
        self.scan.region = Region::Json;
        self.scan.json = Json::new(start, at);
    }

    /// Leaves the JSON object; `close_end` is the end of its closing brace.
    fn leave_json(&mut self, close_end: Option<usize>) {
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
    fn json_other_byte(&mut self) {
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

    fn json_byte(&mut self, b: u8, at: usize) -> bool {
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

#[cfg(test)]
#[path = "../tests/common/rng.rs"]
mod test_rng;

#[cfg(test)]
mod tests {
    //! Checks the streaming machinery against simpler models of itself: the
    //! `memchr` fast paths against one byte at a time, and the whole detector
    //! against a non-streaming reference that looks ahead instead of keeping
    //! snapshots.

    use super::*;

    const TOOLS: &[&str] = &["read_file", "write_file"];

    use crate::test_rng::Rng;

    /// No `{`: the reference leaves Hermes JSON to the table tests.
    const FRAGMENTS: &[&str] = &[
        "<tool_call>",
        "</tool_call>",
        "<function=read_file>",
        "<function=write_file>",
        "<function=other>",
        "</function>",
        "<parameter=path>",
        "</parameter>",
        "<think>",
        "</think>",
        "<func",
        "tion=read_file>",
        "<",
        ">",
        "```",
        "````",
        "~~~",
        "~",
        "   ",
        "    ",
        "\t",
        "`",
        "``",
        "`x`",
        "\n",
        "\n",
        "\n\n",
        "\r\n",
        " ",
        "word",
        "é",
        "🦀",
    ];

    /// Hermes JSON pieces, for tests that do not use the reference.
    const JSON_FRAGMENTS: &[&str] = &[
        "<tool_call>{\"name\": \"read_file\"}",
        "<tool_call>\n{\"arguments\": {\"content\": \"",
        "\"}, \"name\": \"write_file\"}",
        "\"name\"",
        ": ",
        "\"",
        "\\",
        "{",
        "}",
        "[",
        "]",
        ",",
    ];

    fn generate(rng: &mut Rng) -> Vec<u8> {
        let mut text = Vec::new();
        for _ in 0..rng.below(40) {
            text.extend_from_slice(FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes());
        }
        text
    }

    /// Like `generate`, with JSON, and now and then a string long enough to
    /// cross the Hermes name window.
    fn generate_with_json(rng: &mut Rng) -> Vec<u8> {
        let mut text = Vec::new();
        for _ in 0..rng.below(40) {
            match rng.below(10) {
                0..=2 => text
                    .extend_from_slice(JSON_FRAGMENTS[rng.below(JSON_FRAGMENTS.len())].as_bytes()),
                3 if rng.below(8) == 0 => {
                    text.resize(text.len() + HERMES_NAME_WINDOW - 40 + rng.below(80), b'x');
                }
                _ => text.extend_from_slice(FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes()),
            }
        }
        text
    }

    fn one_shot(bytes: &[u8]) -> Verdict {
        let mut d = Detector::new(TOOLS);
        d.feed(bytes);
        d.finish()
    }

    /// Drives the detector without any fast path.
    fn bytewise(bytes: &[u8]) -> Verdict {
        let mut d = Detector::new(TOOLS);
        for &b in bytes {
            while !d.step(b, d.base) {}
            d.base += 1;
        }
        d.finish()
    }

    /// The rules, written the obvious way: find fences and paragraphs line by
    /// line, then walk the visible text, looking ahead for each code span's
    /// closing run.
    fn reference(tools: &[&str], text: &[u8]) -> Verdict {
        let n = text.len();
        let mut visible = vec![true; n];
        let mut para = vec![0usize; n];
        let mut pid = 0;
        let mut fence: Option<(u8, usize)> = None;
        let mut start = 0;
        while start < n {
            let end = text[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(n, |k| start + k + 1);
            let line = &text[start..end];
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let ws = body
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\r'))
                .count();
            let spaces_only = body[..ws].iter().all(|&b| b == b' ');
            let hide = match fence {
                Some((ch, len)) => {
                    let sp = body.iter().take_while(|&&b| b == b' ').count();
                    let run = body[sp..].iter().take_while(|&&b| b == ch).count();
                    let rest = &body[sp + run..];
                    if sp <= 3
                        && run >= len
                        && rest.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
                    {
                        fence = None;
                        pid += 1;
                    }
                    true
                }
                None if ws == body.len() && line.ends_with(b"\n") => {
                    pid += 1;
                    false
                }
                // Trailing whitespace at the end of the text.
                None if ws == body.len() => false,
                None => {
                    let c = body[ws];
                    let run = body[ws..].iter().take_while(|&&b| b == c).count();
                    let opens = spaces_only
                        && ws <= 3
                        && run >= 3
                        && (c == b'~' || (c == b'`' && !body[ws + run..].contains(&b'`')));
                    if opens {
                        fence = Some((c, run));
                        pid += 1;
                    }
                    opens
                }
            };
            for k in start..end {
                visible[k] = !hide;
                para[k] = pid;
            }
            start = end;
        }

        let run_at = |i: usize| text[i..].iter().take_while(|&&b| b == b'`').count();
        let closer = |from: usize, len: usize, p: usize| {
            let mut j = from;
            while j < n && visible[j] && para[j] == p {
                if text[j] == b'`' {
                    let run = run_at(j);
                    if run == len {
                        return Some(j);
                    }
                    j += run;
                } else {
                    j += 1;
                }
            }
            None
        };
        let name_at = |i: usize| {
            let len = text[i..].iter().take_while(|&&b| is_name_byte(b)).count();
            (len > 0 && len <= MAX_TOOL_NAME_BYTES && text.get(i + len) == Some(&b'>'))
                .then(|| &text[i..i + len])
        };

        #[derive(PartialEq)]
        enum R {
            Normal,
            Think,
            Param,
        }
        let mut region = R::Normal;
        let (mut call, mut tail, mut opener) = (None::<bool>, None::<bool>, None::<usize>);
        let mut first: Option<(usize, usize)> = None;
        let (mut span_end, mut open, mut close) = (0, false, false);
        let mut i = 0;
        while i < n {
            if !visible[i] {
                opener = None;
                tail = None;
                i += 1;
                continue;
            }
            let rest = &text[i..];
            let b = text[i];
            if region == R::Think {
                if rest.starts_with(b"</think>") {
                    region = R::Normal;
                    i += 8;
                } else {
                    i += 1;
                }
                continue;
            }
            if b == b'`' && region == R::Normal {
                opener = None;
                tail = None;
                let len = run_at(i);
                i = match closer(i + len, len, para[i]) {
                    Some(c) => c + len,
                    None => i + len,
                };
                continue;
            }
            if b == b'<' {
                if rest.starts_with(b"<tool_call>") {
                    (region, open, call, tail, opener) = (R::Normal, true, None, None, Some(i));
                    i += 11;
                    continue;
                }
                if rest.starts_with(b"</tool_call>") {
                    close = true;
                    if call.or(tail) == Some(true) {
                        span_end = i + 12;
                    }
                    (region, call, tail, opener) = (R::Normal, None, None, None);
                    i += 12;
                    continue;
                }
                if rest.starts_with(b"</function>") && call.is_some() {
                    if call == Some(true) {
                        span_end = i + 11;
                    }
                    (region, tail, call) = (R::Normal, call, None);
                    i += 11;
                    continue;
                }
                if rest.starts_with(b"</parameter>") && region == R::Param {
                    if call == Some(true) {
                        span_end = i + 12;
                    }
                    region = R::Normal;
                    i += 12;
                    continue;
                }
                if region == R::Normal {
                    if let Some(name) = rest
                        .strip_prefix(b"<function=")
                        .and_then(|_| name_at(i + 10))
                    {
                        let tool = tools.iter().position(|t| t.as_bytes() == name);
                        let start = opener.take().unwrap_or(i);
                        tail = None;
                        call = Some(tool.is_some());
                        i += 10 + name.len() + 1;
                        if let Some(tool) = tool {
                            first.get_or_insert((tool, start));
                            span_end = i;
                        }
                        continue;
                    }
                    if let Some(key) = rest
                        .strip_prefix(b"<parameter=")
                        .and_then(|_| name_at(i + 11))
                        && call.is_some()
                    {
                        i += 11 + key.len() + 1;
                        region = R::Param;
                        if call == Some(true) {
                            span_end = i;
                        }
                        continue;
                    }
                    if rest.starts_with(b"<think>") {
                        (region, opener, tail) = (R::Think, None, None);
                        i += 7;
                        continue;
                    }
                }
            }
            if region == R::Normal && !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                assert!(!(b == b'{' && opener.is_some()), "no JSON here");
                opener = None;
                tail = None;
            }
            i += 1;
        }
        let markers: Vec<Marker> = [(open, Marker::Open), (close, Marker::Close)]
            .into_iter()
            .filter_map(|(seen, m)| seen.then_some(m))
            .collect();
        match first {
            Some((tool, start)) if !markers.is_empty() => Verdict {
                unexecuted: true,
                tool: Some(tools[tool].to_owned()),
                form: Some(Form::QwenXml),
                markers,
                span: Some((start, span_end)),
            },
            _ => Verdict {
                markers,
                ..Verdict::default()
            },
        }
    }

    #[test]
    fn fast_paths_skip_only_bytes_that_cannot_matter() {
        let mut rng = Rng(0xFA57);
        let mut hermes = 0;
        for n in 0..4000 {
            let bytes = generate_with_json(&mut rng);
            hermes += usize::from(one_shot(&bytes).form == Some(Form::HermesJson));
            assert_eq!(
                one_shot(&bytes),
                bytewise(&bytes),
                "input {n}: {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        assert!(hermes > 100, "only {hermes} Hermes verdicts");
    }

    #[test]
    fn streaming_agrees_with_the_lookahead_reference() {
        let mut rng = Rng(0x0065);
        let mut unexecuted = 0;
        const INPUTS: usize = 20_000;
        for n in 0..INPUTS {
            let bytes = generate(&mut rng);
            let want = reference(TOOLS, &bytes);
            unexecuted += usize::from(want.unexecuted);
            assert_eq!(
                one_shot(&bytes),
                want,
                "input {n}: {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        assert!(
            unexecuted > INPUTS / 20 && unexecuted < INPUTS * 19 / 20,
            "{unexecuted} of {INPUTS} unexecuted"
        );
    }

    #[test]
    fn reference_agrees_with_a_few_known_verdicts() {
        // The reference is only useful if it is right on its own.
        let adr = b"Ok.\n<function=read_file>\n</function>\n</tool_call>";
        assert_eq!(reference(TOOLS, adr).span, Some((4, adr.len())));
        assert!(!reference(TOOLS, b"`<function=read_file></tool_call>`").unexecuted);
        assert!(!reference(TOOLS, b"```\n<function=read_file></tool_call>").unexecuted);
        assert!(reference(TOOLS, b"` <function=read_file></tool_call>").unexecuted);
    }
}
