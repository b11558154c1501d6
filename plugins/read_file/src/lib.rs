//! `read_file`: a window of a text file, with line numbers.
//!
//! Text is UTF-8; a line that is not valid UTF-8 (and a file with no NUL in
//! its first block, so not binary) is read as Windows-1252 (Latin-1), the
//! rule in `goat_workpath::encoding`, and the result says so.
//!
//! The file is streamed in chunks and only the requested window is kept, so
//! reading lines 1-100 of a 2 GB log costs what reading 100 lines costs.

use goat_pen::args::Args;
use goat_pen::fs::{READ_CHUNK_BYTES, Workspace, fs_error, require_file};
use goat_pen::path::{self, WorkPath};
use goat_pen::text::{Output, cut_line_after, looks_binary};
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use goat_workpath::encoding::{TextEncoding, decode_windows_1252};
use wasip2::filesystem::types::Descriptor;

/// Lines returned when the call gives no `limit`: enough for most source
/// files in one call.
const DEFAULT_LIMIT: u64 = 2000;

/// Bytes of one line kept while scanning. A longer "line" (a minified bundle,
/// a data blob) is shown cut; the rest is skipped, not buffered.
const MAX_LINE_BYTES: usize = 64 * 1024;

struct ReadFile;

impl Guest for ReadFile {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "read_file",
            "Read a text file in the workspace. Returns the lines with their line numbers \
             (tab-separated). Use offset and limit to read a window of a long file; the result \
             says when the file continues. Text that is not UTF-8 is read as Windows-1252 \
             (Latin-1) and the result says so; edit_file and write_file keep that encoding. \
             Binary files are refused.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return. Default 2000."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            Access::Read,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["path", "offset", "limit"])?;
        let path = path::parse(args.string("path")?)?;
        let offset = args.opt_u64("offset")?.unwrap_or(1);
        let limit = args.opt_u64("limit")?.unwrap_or(DEFAULT_LIMIT);
        if offset == 0 {
            return Err(ToolError::InvalidArguments(
                "offset is a 1-based line number; use offset=1 for the first line".to_owned(),
            ));
        }
        if limit == 0 {
            return Err(ToolError::InvalidArguments(
                "limit must be at least 1".to_owned(),
            ));
        }
        read_window(&Workspace::open()?, &path, offset, limit)
    }
}

fn read_window(ws: &Workspace, path: &WorkPath, offset: u64, limit: u64) -> ToolResult<String> {
    let fd = ws.open_read(path)?;
    let stat = fd.stat().map_err(|e| fs_error(e, path, "stat"))?;
    require_file(path, stat.type_)?;

    let last = offset.saturating_add(limit - 1);
    let mut lines = Lines {
        fd,
        path,
        pos: 0,
        size: stat.size,
        buf: Chunk::Bytes(Vec::new()),
        shown: false,
        start: 0,
        eof: false,
        carry: Vec::new(),
    };
    // Room for the lines and their numbers (about an eighth more for
    // source-like lines), so that the result is built without growing.
    let size = usize::try_from(stat.size).unwrap_or(usize::MAX);
    let mut out = Output::with_capacity(size.saturating_add(size / 8).saturating_add(64));
    let (mut line_no, mut shown) = (0u64, 0u64);
    let mut more = false;
    let mut legacy_lines = 0u64;
    loop {
        // Lines before the window are only counted, never decoded.
        lines.shown = line_no + 1 >= offset;
        let Some((bytes, cut)) = lines.next_line()? else {
            break;
        };
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if line_no > last {
            more = true;
            break;
        }
        let (text, partial) = decode_line(bytes, line_no == 1);
        if matches!(text, Decoded::Legacy(_)) {
            legacy_lines += 1;
        }
        let text = cut_line_after(text.as_str(), cut + partial);
        if !out.numbered_line(line_no, &text, "") {
            more = true;
            break;
        }
        shown += 1;
    }

    if shown == 0 && !out.is_full() {
        if line_no == 0 {
            return Ok(format!("'{path}' is empty.\n"));
        }
        return Err(ToolError::InvalidArguments(format!(
            "offset {offset} is past the end of '{path}', which has {line_no} lines"
        )));
    }
    let shown_last = offset + shown.saturating_sub(1);
    let encoding_note = (legacy_lines > 0).then(|| {
        format!(
            "[{} shown {} not valid UTF-8 and {} read as {}; edit_file and write_file keep \
             that encoding]",
            goat_pen::text::plural(legacy_lines as usize, "line"),
            if legacy_lines == 1 { "is" } else { "are" },
            if legacy_lines == 1 { "was" } else { "were" },
            TextEncoding::Windows1252.name()
        )
    });
    let more_note = more.then(|| {
        let why = if out.is_full() {
            " (result size cap reached)"
        } else {
            ""
        };
        format!(
            "[showing lines {offset}-{shown_last}{why}; '{path}' continues: call read_file with \
             offset={} to read more]",
            shown_last + 1
        )
    });
    let note = match (encoding_note, more_note) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    };
    Ok(out.finish(note))
}

/// Splits a file into lines as it streams in, keeping at most
/// [`MAX_LINE_BYTES`] of any one line. A line inside one chunk is lent out
/// of the chunk; only a line spanning chunks is copied.
struct Lines<'a> {
    fd: Descriptor,
    path: &'a WorkPath,
    pos: u64,
    /// The file's size when it was opened.
    size: u64,
    buf: Chunk,
    /// Whether the next line will be shown, so that its chunk is worth
    /// checking as UTF-8.
    shown: bool,
    start: usize,
    eof: bool,
    carry: Vec<u8>,
}

/// One read's bytes: text when they are all UTF-8 (the usual case), checked
/// once for the whole chunk so that its lines are lent out as text without
/// checking each again. A chunk none of whose lines is shown (before the
/// window) is never checked.
enum Chunk {
    Unchecked(Vec<u8>),
    Text(String),
    Bytes(Vec<u8>),
}

impl Chunk {
    /// Checks an unchecked chunk as UTF-8, once.
    fn check(&mut self) {
        if let Self::Unchecked(bytes) = self {
            *self = match String::from_utf8(std::mem::take(bytes)) {
                Ok(text) => Self::Text(text),
                Err(e) => Self::Bytes(e.into_bytes()),
            };
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Self::Text(text) => text.as_bytes(),
            Self::Unchecked(bytes) | Self::Bytes(bytes) => bytes,
        }
    }

    /// The line at `begin..begin + len` cut to at most `keep` bytes (on a
    /// character boundary when it is text), and how many bytes were cut.
    fn line(&self, begin: usize, len: usize, keep: usize) -> (Line<'_>, usize) {
        let kept = len.min(keep);
        match self {
            Self::Text(text) => {
                let end = text.floor_char_boundary(begin + kept);
                (Line::Text(&text[begin..end]), len - (end - begin))
            }
            Self::Unchecked(bytes) | Self::Bytes(bytes) => {
                (Line::Bytes(&bytes[begin..begin + kept]), len - kept)
            }
        }
    }
}

/// A line as read: known text, or bytes still to decode.
enum Line<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// Appends `piece` to a line being carried across chunks, up to
/// [`MAX_LINE_BYTES`]; counts what did not fit in `cut`.
fn carry_on(carry: &mut Vec<u8>, cut: &mut usize, piece: &[u8]) {
    let room = MAX_LINE_BYTES.saturating_sub(carry.len());
    carry.extend_from_slice(&piece[..piece.len().min(room)]);
    *cut += piece.len().saturating_sub(room);
}

impl Lines<'_> {
    /// The next line without its `\n`, and how many bytes of it were cut.
    fn next_line(&mut self) -> ToolResult<Option<(Line<'_>, usize)>> {
        self.carry.clear();
        let mut cut = 0usize;
        let mut started = false;
        loop {
            if self.shown {
                self.buf.check();
            }
            let buf = self.buf.bytes();
            if self.start < buf.len() {
                started = true;
                let begin = self.start;
                let rest = &buf[begin..];
                match memchr::memchr(b'\n', rest) {
                    Some(i) => {
                        self.start = begin + i + 1;
                        if self.carry.is_empty() && cut == 0 {
                            return Ok(Some(self.buf.line(begin, i, MAX_LINE_BYTES)));
                        }
                        carry_on(&mut self.carry, &mut cut, &buf[begin..begin + i]);
                        return Ok(Some((Line::Bytes(&self.carry), cut)));
                    }
                    None => {
                        carry_on(&mut self.carry, &mut cut, rest);
                        self.start = buf.len();
                    }
                }
            }
            if self.eof {
                return Ok(started.then_some((Line::Bytes(&self.carry[..]), cut)));
            }
            // Ask for no more than the file holds: the host allocates what
            // is asked, and a short file then needs no second read to find
            // its end. A file that grows while being read is read up to the
            // size it had when opened; one that reports size 0 (a procfs
            // style file) is read until the host says it ended.
            let want = match self.size.saturating_sub(self.pos) {
                0 => READ_CHUNK_BYTES,
                left => left.min(READ_CHUNK_BYTES),
            };
            let (chunk, end) = self
                .fd
                .read(want, self.pos)
                .map_err(|e| fs_error(e, self.path, "read"))?;
            if self.pos == 0 && looks_binary(&chunk) {
                return Err(binary(self.path));
            }
            self.pos += chunk.len() as u64;
            self.eof = end || chunk.is_empty() || (self.size > 0 && self.pos >= self.size);
            self.buf = Chunk::Unchecked(chunk);
            self.start = 0;
        }
    }
}

/// A line as text: UTF-8 as it was, or Windows-1252 decoded.
enum Decoded<'a> {
    Utf8(&'a str),
    Legacy(String),
}

impl Decoded<'_> {
    fn as_str(&self) -> &str {
        match self {
            Self::Utf8(s) => s,
            Self::Legacy(s) => s,
        }
    }
}

/// The line as text, and how many bytes of a character cut in half at
/// [`MAX_LINE_BYTES`] were dropped from its end.
fn decode_line(line: Line<'_>, first: bool) -> (Decoded<'_>, usize) {
    let bytes = match line {
        Line::Text(text) => {
            let text = if first {
                text.strip_prefix('\u{FEFF}').unwrap_or(text)
            } else {
                text
            };
            return (Decoded::Utf8(text.strip_suffix('\r').unwrap_or(text)), 0);
        }
        Line::Bytes(bytes) => bytes,
    };
    let bytes = if first {
        bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
    } else {
        bytes
    };
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => (Decoded::Utf8(s), 0),
        // A line cut at MAX_LINE_BYTES may end inside a character.
        Err(e) if e.error_len().is_none() && bytes.len() >= MAX_LINE_BYTES - 4 => {
            let valid = e.valid_up_to();
            let text = std::str::from_utf8(&bytes[..valid]).unwrap_or("");
            (Decoded::Utf8(text), bytes.len() - valid)
        }
        Err(_) => (Decoded::Legacy(decode_windows_1252(bytes)), 0),
    }
}

fn binary(path: &WorkPath) -> ToolError {
    ToolError::InvalidArguments(format!(
        "'{path}' is a binary file (it has NUL bytes); read_file only reads text"
    ))
}

goat_pen::export_tool!(ReadFile);
