//! `read_file`: a window of a UTF-8 text file, with line numbers.
//!
//! The file is streamed in chunks and only the requested window is kept, so
//! reading lines 1-100 of a 2 GB log costs what reading 100 lines costs.

use goat_pen::args::Args;
use goat_pen::fs::{READ_CHUNK_BYTES, Workspace, fs_error, require_file};
use goat_pen::path::WorkPath;
use goat_pen::text::{Output, cut_line, looks_binary};
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
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
            "Read a UTF-8 text file in the workspace. Returns the lines with their line numbers \
             (tab-separated). Use offset and limit to read a window of a long file; the result \
             says when the file continues. Binary files are refused.",
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
        let path = WorkPath::parse(args.string("path")?)?;
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
        buf: Vec::new(),
        start: 0,
        eof: false,
    };
    let mut out = Output::default();
    let (mut line_no, mut shown) = (0u64, 0u64);
    let mut more = false;
    while let Some((bytes, cut)) = lines.next_line()? {
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if line_no > last {
            more = true;
            break;
        }
        let mut text = cut_line(decode_line(&bytes, line_no == 1, path)?).into_owned();
        if cut > 0 {
            text.push_str(&format!(" … [line cut: {cut} more bytes]"));
        }
        if !out.line(&format!("{line_no:>6}\t{text}")) {
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
    let note = more.then(|| {
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
    Ok(out.finish(note))
}

/// Splits a file into lines as it streams in, keeping at most
/// [`MAX_LINE_BYTES`] of any one line.
struct Lines<'a> {
    fd: Descriptor,
    path: &'a WorkPath,
    pos: u64,
    buf: Vec<u8>,
    start: usize,
    eof: bool,
}

impl Lines<'_> {
    /// The next line without its `\n`, and how many bytes of it were cut.
    fn next_line(&mut self) -> ToolResult<Option<(Vec<u8>, usize)>> {
        let mut line = Vec::new();
        let mut cut = 0usize;
        let mut started = false;
        loop {
            if self.start < self.buf.len() {
                started = true;
                let rest = &self.buf[self.start..];
                let (piece, found) = match rest.iter().position(|&b| b == b'\n') {
                    Some(i) => (&rest[..i], true),
                    None => (rest, false),
                };
                let room = MAX_LINE_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&piece[..piece.len().min(room)]);
                cut += piece.len().saturating_sub(room);
                self.start += piece.len() + usize::from(found);
                if found {
                    return Ok(Some((line, cut)));
                }
            }
            if self.eof {
                return Ok(started.then_some((line, cut)));
            }
            let (chunk, end) = self
                .fd
                .read(READ_CHUNK_BYTES, self.pos)
                .map_err(|e| fs_error(e, self.path, "read"))?;
            if self.pos == 0 && looks_binary(&chunk) {
                return Err(binary(self.path));
            }
            self.pos += chunk.len() as u64;
            self.eof = end || chunk.is_empty();
            self.buf = chunk;
            self.start = 0;
        }
    }
}

fn decode_line<'a>(bytes: &'a [u8], first: bool, path: &WorkPath) -> ToolResult<&'a str> {
    let bytes = if first {
        bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
    } else {
        bytes
    };
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s),
        // A line cut at MAX_LINE_BYTES may end inside a character.
        Err(e) if e.error_len().is_none() && bytes.len() >= MAX_LINE_BYTES - 4 => {
            Ok(std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""))
        }
        Err(_) => Err(binary(path)),
    }
}

fn binary(path: &WorkPath) -> ToolError {
    ToolError::InvalidArguments(format!(
        "'{path}' is a binary file or not UTF-8 text; read_file only reads text"
    ))
}

goat_pen::export_tool!(ReadFile);
