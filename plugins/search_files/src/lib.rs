//! `search_files`: a regular-expression search over workspace text files,
//! in grep's `path:line:text` form, at ripgrep's pace and with its manners.
//!
//! The engine is `regex-automata`'s meta regex, the one inside the `regex`
//! crate and ripgrep: literal prefilters (memchr, Teddy-style multi-literal
//! search), a lazy DFA, and fallbacks that are all linear in the input, so
//! no pattern can stall the tool; the compiled size is capped. The pattern
//! is parsed and its syntax tree rewritten so that it cannot match a line
//! break (as ripgrep does): every match then lies within one line, and a
//! file is searched as one byte buffer, not line by line. Only a matching
//! line (and its context) is ever located, decoded and copied; the scan
//! itself allocates nothing per line.
//!
//! Files are read whole (up to [`MAX_FILE_BYTES`]) into one buffer reused
//! across files; a NUL byte in the first block marks a file binary and the
//! rest is not read. Lines that are not valid UTF-8 are searched as bytes
//! and shown with U+FFFD in place of the bytes that do not decode.

use goat_pen::args::Args;
use goat_pen::fs::{Contents, Kind, Walk, Workspace};
use goat_pen::glob::{self, Glob};
use goat_pen::manners::Manners;
use goat_pen::path::{self, WorkPath};
use goat_pen::text::{Output, cut_line, plural};
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use memchr::memmem::Finder;
use memchr::{memchr, memchr_iter, memrchr};
use regex_automata::meta::{Cache, Regex};
use regex_automata::{Input, Span};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange};
use regex_syntax::hir::{Hir, HirKind};
use wasip2::filesystem::types::DescriptorType;

/// Most matching lines reported: past this, a narrower pattern serves the
/// model better than more lines.
const MAX_MATCHES: usize = 500;

/// Most context lines around each match.
const MAX_CONTEXT: u64 = 10;

/// Files larger than this are skipped: they are data or generated output,
/// and the whole file is held in memory while it is searched.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Most bytes of compiled regex (the NFA; the lazy DFA's cache has its own
/// default cap of 2 MiB): bounds memory and compile time for patterns like
/// `\w{1000}`, well inside the tool's 128 MiB memory limit.
const MAX_REGEX_BYTES: usize = 2 * 1024 * 1024;

/// Longest pattern accepted: a search pattern longer than this is not
/// something a person or model types, and parsing it costs time.
const MAX_PATTERN_BYTES: usize = 4096;

/// Deepest directory level searched.
const MAX_WALK_DEPTH: usize = 64;

struct SearchFiles;

impl Guest for SearchFiles {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "search_files",
            "Search the text files in the workspace for a regular expression (Rust regex syntax; \
             use (?i) for case-insensitive; a match never spans lines). Results are \
             'path:line:text' for matching lines and 'path-line-text' for context lines, with \
             '--' between groups. Like ripgrep, by default it skips files and directories named \
             in .gitignore, .ignore or .git/info/exclude and hidden ones (names starting with \
             '.'), and says how many it skipped; pass include_ignored: true to search them too. \
             Binary files and .git directories are always skipped. glob filters files: a pattern \
             without '/' (like '*.rs') matches file names at any depth; one with '/' matches \
             paths relative to `path`; a glob naming a hidden entry ('.github/**') includes it.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to search for."},
                    "path": {"type": "string", "description": "File or directory to search, relative to the workspace root. Default: the root."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.rs' or 'src/**/*.py'."},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match. Default 0."},
                    "include_ignored": {"type": "boolean", "description": "Also search files that .gitignore/.ignore/.git/info/exclude name and hidden files. Default false."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
            Access::Read,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(
            &arguments,
            &["pattern", "path", "glob", "context", "include_ignored"],
        )?;
        let pattern = args.string("pattern")?;
        let (regex, hir) = compile(pattern)?;
        let base = path::parse_or_root(args.opt_string("path")?)?;
        let glob_arg = args.opt_string("glob")?;
        let glob = glob_arg.map(glob::compile).transpose()?;
        let by_name = glob_arg.is_some_and(|g| !Glob::has_separator(g));
        let context = args.opt_u64("context")?.unwrap_or(0);
        if context > MAX_CONTEXT {
            return Err(ToolError::InvalidArguments(format!(
                "context must be between 0 and {MAX_CONTEXT}, got {context}"
            )));
        }
        let mut manners =
            Manners::from_include_ignored(args.opt_bool("include_ignored")?.unwrap_or(false));
        if let Some(g) = glob_arg {
            manners = manners.showing_hidden_named_in(g);
        }

        let ws = Workspace::open()?;
        let mut files: Vec<WorkPath> = Vec::new();
        let mut end = goat_pen::fs::WalkEnd::default();
        let single = ws.stat(&base)?.type_ != DescriptorType::Directory;
        if single {
            files.push(base.clone());
        } else {
            end = ws.walk_with(&base, manners, MAX_WALK_DEPTH, &mut |entry, kind, _| {
                if kind == Kind::File {
                    let wanted = match &glob {
                        None => true,
                        Some(g) if by_name => entry.split_last().is_some_and(|(_, n)| g.matches(n)),
                        Some(g) => entry.strip_prefix(&base).is_some_and(|rel| g.matches(rel)),
                    };
                    if wanted {
                        files.push(entry.clone());
                    }
                }
                Walk::Continue
            })?;
        }
        files.sort();

        let mut search = Search {
            cache: regex.create_cache(),
            required: required_literal(&hir).map(|lit| Finder::new(&lit).into_owned()),
            regex,
            context: context as usize,
            out: Output::default(),
            matches: 0,
            files_matched: 0,
            skipped_binary: 0,
            skipped_large: 0,
            unreadable: end.unreadable_dirs,
            stopped: false,
            wrote_group: false,
        };
        let mut buf = Vec::new();
        for file in &files {
            if search.stopped {
                break;
            }
            match ws.read_text_into(file, !single, MAX_FILE_BYTES, &mut buf) {
                Ok(Contents::Text) => search.file(file, &buf),
                Ok(Contents::Binary) => search.skipped_binary += 1,
                Ok(Contents::TooLarge) => search.skipped_large += 1,
                Err(e) if single => return Err(e),
                Err(_) => search.unreadable += 1,
            }
        }
        Ok(search.finish(pattern, files.len(), &end))
    }
}

/// Compiles `pattern` into a regex that never matches a line break,
/// refusing a pattern that is invalid, needs one, or compiles too large.
fn compile(pattern: &str) -> ToolResult<(Regex, Hir)> {
    let invalid = |why: &dyn std::fmt::Display| {
        ToolError::InvalidArguments(format!("invalid regular expression '{pattern}': {why}"))
    };
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(invalid(&format_args!(
            "the pattern is longer than {MAX_PATTERN_BYTES} bytes"
        )));
    }
    // (?m): ^ and $ match at line starts and ends, as a line-by-line grep's
    // do; crlf: $ also matches before "\r\n", and . never matches '\r'.
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .crlf(true)
        .build()
        .parse(pattern)
        .map_err(|e| invalid(&e))?;
    let hir = within_lines(hir).map_err(|()| {
        invalid(&"it can only match a line break ('\\n'), and matches are found within one line")
    })?;
    Regex::builder()
        .configure(Regex::config().nfa_size_limit(Some(MAX_REGEX_BYTES)))
        .build_from_hir(&hir)
        .map(|regex| (regex, hir))
        .map_err(|e| match e.size_limit() {
            Some(limit) => ToolError::InvalidArguments(format!(
                "regular expression '{pattern}' is too large: compiled it exceeds the \
                 {limit}-byte limit; use a simpler pattern (smaller repetition counts like {{100}} \
                 instead of {{1000}}, or ASCII classes such as [a-zA-Z0-9_] instead of \\w)"
            )),
            None => invalid(&e),
        })
}

/// Shortest literal worth a memmem scan: a single byte finds too many
/// candidate lines to pay for verifying each.
const MIN_REQUIRED_LITERAL_BYTES: usize = 3;

/// The longest literal that every match of `hir` contains, when `hir` is a
/// sequence with one (`[a-z]+zzqq` has `zzqq`; `fn \w+\(` has `fn `).
/// A plain literal pattern gets `None`: the regex engine searches for it
/// directly, as fast. This is ripgrep's inner-literal scan, which the
/// regex engine does not do for patterns whose prefix could also match
/// the literal.
fn required_literal(hir: &Hir) -> Option<Vec<u8>> {
    let HirKind::Concat(parts) = hir.kind() else {
        return None;
    };
    parts
        .iter()
        .filter_map(|part| match part.kind() {
            HirKind::Literal(lit) => Some(lit.0.to_vec()),
            _ => None,
        })
        .filter(|lit| lit.len() >= MIN_REQUIRED_LITERAL_BYTES)
        .max_by_key(Vec::len)
}

/// `hir` rewritten to never match `\n`: the byte is taken out of every
/// class (`\s`, `[^a]`, `(?s).`); a literal line break is refused. A class
/// left empty matches nothing, so `\n|x` still finds `x`.
fn within_lines(hir: Hir) -> Result<Hir, ()> {
    Ok(match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => {
            if lit.0.contains(&b'\n') {
                return Err(());
            }
            Hir::literal(lit.0)
        }
        HirKind::Class(Class::Unicode(mut class)) => {
            class.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(mut class)) => {
            class.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(mut rep) => {
            rep.sub = Box::new(within_lines(*rep.sub)?);
            Hir::repetition(rep)
        }
        HirKind::Capture(mut cap) => {
            cap.sub = Box::new(within_lines(*cap.sub)?);
            Hir::capture(cap)
        }
        HirKind::Concat(subs) => Hir::concat(
            subs.into_iter()
                .map(within_lines)
                .collect::<Result<_, _>>()?,
        ),
        HirKind::Alternation(subs) => {
            let kept: Vec<Hir> = subs
                .into_iter()
                .filter_map(|h| within_lines(h).ok())
                .collect();
            if kept.is_empty() {
                return Err(());
            }
            Hir::alternation(kept)
        }
    })
}

struct Search {
    regex: Regex,
    /// A literal every match contains, when the pattern has one and is
    /// not itself a plain literal: candidate lines are found with it.
    required: Option<Finder<'static>>,
    cache: Cache,
    context: usize,
    out: Output,
    matches: usize,
    files_matched: usize,
    skipped_binary: usize,
    skipped_large: usize,
    unreadable: usize,
    stopped: bool,
    /// Whether any group was written yet, for `--` separators.
    wrote_group: bool,
}

/// Byte range of one line in a file's buffer, without its `\n`.
#[derive(Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    /// 1-based line number.
    number: usize,
}

/// The line after `line`, if the buffer has one.
fn next_line(buf: &[u8], line: Line) -> Option<Line> {
    let start = line.end + 1;
    (start < buf.len()).then(|| Line {
        start,
        end: memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i),
        number: line.number + 1,
    })
}

/// The line before `line`, if any.
fn prev_line(buf: &[u8], line: Line) -> Option<Line> {
    (line.start > 0).then(|| {
        let end = line.start - 1;
        Line {
            start: memrchr(b'\n', &buf[..end]).map_or(0, |i| i + 1),
            end,
            number: line.number - 1,
        }
    })
}

impl Search {
    fn file(&mut self, path: &WorkPath, buf: &[u8]) {
        // Where line numbers are counted up to, and the number there.
        let (mut counted_at, mut counted_line) = (0usize, 1usize);
        // Number of the last line written for this file, to merge
        // overlapping context.
        let mut written: Option<usize> = None;
        let mut any = false;
        let mut at = 0usize;
        while at < buf.len() {
            let Some((start, end)) = self.next_matching_line(buf, at) else {
                break;
            };
            counted_line += memchr_iter(b'\n', &buf[counted_at..start]).count();
            counted_at = start;
            let line = Line {
                start,
                end,
                number: counted_line,
            };
            at = end + 1;

            if self.matches == MAX_MATCHES {
                self.stopped = true;
                break;
            }
            any = true;
            self.matches += 1;

            // Leading context, not repeating lines already written.
            let mut first = line;
            for _ in 0..self.context {
                match prev_line(buf, first) {
                    Some(prev) if written.is_none_or(|w| prev.number > w) => first = prev,
                    _ => break,
                }
            }
            if self.context > 0
                && self.wrote_group
                && written.is_none_or(|w| first.number > w + 1)
                && !self.emit("--")
            {
                break;
            }
            let mut ctx = first;
            while ctx.number < line.number {
                if !self.emit_line(path, buf, ctx, '-') {
                    return;
                }
                let Some(next) = next_line(buf, ctx) else {
                    break;
                };
                ctx = next;
            }
            if !self.emit_line(path, buf, line, ':') {
                return;
            }
            written = Some(line.number);
            self.wrote_group = true;
            // Trailing context, stopping before the next match so it is
            // printed as a match, not as context.
            let mut ctx = line;
            for _ in 0..self.context {
                let Some(next) = next_line(buf, ctx) else {
                    break;
                };
                let input = Input::new(buf).span(Span {
                    start: next.start,
                    end: next.end,
                });
                if self.regex.search_with(&mut self.cache, &input).is_some() {
                    break;
                }
                if !self.emit_line(path, buf, next, '-') {
                    return;
                }
                written = Some(next.number);
                ctx = next;
            }
        }
        if any {
            self.files_matched += 1;
        }
    }

    /// Byte range (without its `\n`) of the first line at or after `at`
    /// (a line start) that has a match.
    fn next_matching_line(&mut self, buf: &[u8], mut at: usize) -> Option<(usize, usize)> {
        let line_around = |from: usize, to: usize, at: usize| {
            let start = memrchr(b'\n', &buf[at..from]).map_or(at, |i| at + i + 1);
            let end = memchr(b'\n', &buf[to..]).map_or(buf.len(), |i| to + i);
            (start, end)
        };
        let Some(required) = &self.required else {
            let input = Input::new(buf).span(Span {
                start: at,
                end: buf.len(),
            });
            let found = self.regex.search_with(&mut self.cache, &input)?;
            // After a final line break there is no line, though `^` and
            // `$` match there.
            if found.start() == buf.len() && buf.ends_with(b"\n") {
                return None;
            }
            return Some(line_around(found.start(), found.end(), at));
        };
        // Only a line holding the required literal can match: find one
        // with memmem, then run the regex on that line alone.
        while at < buf.len() {
            let hit = at + required.find(&buf[at..])?;
            let (start, end) = line_around(hit, hit, at);
            let input = Input::new(buf).span(Span { start, end });
            if self.regex.search_with(&mut self.cache, &input).is_some() {
                return Some((start, end));
            }
            at = end + 1;
        }
        None
    }

    /// Writes `path{sep}number{sep}text` for `line`, without a trailing
    /// `\r`, decoded (lossily) only now that it is shown.
    fn emit_line(&mut self, path: &WorkPath, buf: &[u8], line: Line, sep: char) -> bool {
        let bytes = &buf[line.start..line.end];
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let shown = format!("{path}{sep}{}{sep}{}", line.number, cut_line(&text));
        self.emit(&shown)
    }

    fn emit(&mut self, line: &str) -> bool {
        if self.out.line(line) {
            true
        } else {
            self.stopped = true;
            false
        }
    }

    fn finish(self, pattern: &str, searched: usize, end: &goat_pen::fs::WalkEnd) -> String {
        let mut notes = Vec::new();
        if self.matches == 0 {
            notes.push(format!(
                "No matches for '{pattern}' in {} searched.",
                plural(searched, "file")
            ));
        } else {
            notes.push(format!(
                "[{} in {}; {} searched]",
                plural(self.matches, "matching line"),
                plural(self.files_matched, "file"),
                plural(searched, "file")
            ));
        }
        if self.stopped {
            notes.push(format!(
                "[stopped early: results are capped at {MAX_MATCHES} matches and 128 KiB; narrow \
                 the pattern, path or glob]"
            ));
        }
        if end.hit_entry_cap {
            notes.push(
                "[the directory walk stopped at its entry cap; search a subdirectory]".to_owned(),
            );
        }
        let skipped = [
            (self.skipped_binary, "(binary)"),
            (self.skipped_large, "(larger than 4 MiB)"),
            (self.unreadable, "(unreadable)"),
        ];
        for (n, why) in skipped {
            if n > 0 {
                notes.push(format!("[skipped {} {why}]", plural(n, "file")));
            }
        }
        notes.extend(end.skipped_note());
        notes.extend(end.undecodable_note());
        self.out.finish(Some(notes.join("\n")))
    }
}

goat_pen::export_tool!(SearchFiles);
