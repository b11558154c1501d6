//! `wc`, an example GOAT plugin: lines, words and bytes in workspace files.
//!
//! It is written the way a third-party plugin would be: one crate, the
//! shared `goat-pen` guest code for bindings, arguments, paths and walks,
//! built for `wasm32-unknown-unknown` and turned into a component by
//! `wasm-component-ld`. It declares `read` access, so the host preopens the
//! workspace read-only; it imports only `wasi:filesystem`, `wasi:io` and
//! the wall clock that `wasi:filesystem/types` names. Added with
//! `goat plugins add wc.wasm`, the model sees its tool as `wc__count`.

use goat_pen::args::Args;
use goat_pen::fs::{Kind, READ_CHUNK_BYTES, Walk, Workspace, fs_error};
use goat_pen::glob;
use goat_pen::path::{self, WorkPath};
use goat_pen::text::Output;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use wasip2::filesystem::types::DescriptorType;

/// Most files counted in one call: past this the result says it stopped,
/// and a narrower glob is the way on.
const MAX_FILES: usize = 2000;

/// Deepest a walk goes, as in `find_files`.
const MAX_WALK_DEPTH: usize = 64;

/// Counts of one file, or of several added up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    lines: u64,
    words: u64,
    bytes: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.lines += other.lines;
        self.words += other.words;
        self.bytes += other.bytes;
    }
}

/// Counts as `wc` does in the C locale: a line is a `\n`, a word a maximal
/// run of bytes that are not ASCII whitespace. Fed in chunks; a word split
/// across two chunks counts once.
#[derive(Default)]
struct Counter {
    counts: Counts,
    in_word: bool,
}

impl Counter {
    fn feed(&mut self, chunk: &[u8]) {
        self.counts.bytes += chunk.len() as u64;
        for &b in chunk {
            if b == b'\n' {
                self.counts.lines += 1;
            }
            let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c');
            if !space && !self.in_word {
                self.counts.words += 1;
            }
            self.in_word = !space;
        }
    }
}

fn count_file(ws: &Workspace, path: &WorkPath) -> ToolResult<Counts> {
    let fd = ws.open_read(path)?;
    let stat = fd.stat().map_err(|e| fs_error(e, path, "stat"))?;
    if stat.type_ != DescriptorType::RegularFile {
        return Err(ToolError::Conflict(format!(
            "'{path}' is not a regular file"
        )));
    }
    let mut counter = Counter::default();
    loop {
        let (chunk, end) = fd
            .read(READ_CHUNK_BYTES, counter.counts.bytes)
            .map_err(|e| fs_error(e, path, "read"))?;
        counter.feed(&chunk);
        if end || chunk.is_empty() {
            return Ok(counter.counts);
        }
    }
}

/// The message of a tool error, for a note about one file that could not
/// be counted while the others were.
fn message(e: &ToolError) -> &str {
    match e {
        ToolError::InvalidArguments(m)
        | ToolError::NotFound(m)
        | ToolError::Conflict(m)
        | ToolError::PermissionDenied(m)
        | ToolError::TooLarge(m)
        | ToolError::Io(m) => m,
    }
}

fn row(c: Counts, name: &str) -> String {
    format!("{:>8} {:>8} {:>8} {name}", c.lines, c.words, c.bytes)
}

struct Wc;

impl Guest for Wc {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "count",
            "Count lines, words and bytes in workspace files, like `wc`. `path` is a file or a \
             directory (default: the workspace root); in a directory, `glob` chooses the files \
             relative to it (default '**', every file at any depth; .git is skipped), e.g. \
             '**/*.rs'. Prints one line per file, `lines words bytes path`, sorted by path, then \
             a total line.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File or directory, relative to the workspace root. Default: the root."},
                    "glob": {"type": "string", "description": "Which files under a directory `path`, e.g. '**/*.md'. Default: '**'."}
                },
                "additionalProperties": false
            }),
            Access::Read,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["path", "glob"])?;
        let base = path::parse_or_root(args.opt_string("path")?)?;
        let pattern = args.opt_string("glob")?;
        let ws = Workspace::open()?;

        let mut files: Vec<WorkPath> = Vec::new();
        let mut capped = false;
        let mut unreadable_dirs = 0;
        let mut undecodable_note = None;
        match ws.stat(&base)?.type_ {
            DescriptorType::RegularFile => {
                if let Some(pattern) = pattern {
                    return Err(ToolError::InvalidArguments(format!(
                        "'{base}' is a file; `glob` ('{pattern}') only applies to a directory"
                    )));
                }
                files.push(base.clone());
            }
            DescriptorType::Directory => {
                let glob = glob::compile(pattern.unwrap_or("**"))?;
                let depth = glob
                    .max_depth()
                    .unwrap_or(MAX_WALK_DEPTH)
                    .min(MAX_WALK_DEPTH);
                let end = ws.walk(&base, depth, &mut |entry, kind, _| {
                    // Symlinks are not followed: a count is of what is here.
                    if kind == Kind::File
                        && entry
                            .strip_prefix(&base)
                            .is_some_and(|rel| glob.matches(rel))
                    {
                        if files.len() == MAX_FILES {
                            capped = true;
                            return Walk::Stop;
                        }
                        files.push(entry.clone());
                    }
                    Walk::Continue
                })?;
                capped |= end.hit_entry_cap;
                unreadable_dirs = end.unreadable_dirs;
                undecodable_note = end.undecodable_note();
            }
            _ => {
                return Err(ToolError::Conflict(format!(
                    "'{base}' is neither a file nor a directory"
                )));
            }
        }
        files.sort();
        if files.is_empty() {
            let mut text = format!(
                "No files match '{}' under '{base}'.\n",
                pattern.unwrap_or("**")
            );
            if let Some(note) = undecodable_note {
                text.push_str(&note);
                text.push('\n');
            }
            return Ok(text);
        }

        let mut out = Output::default();
        let mut total = Counts::default();
        let mut failed = Vec::new();
        for path in &files {
            match count_file(&ws, path) {
                Ok(c) => {
                    total.add(c);
                    if !out.line(&row(c, path.as_str())) {
                        capped = true;
                        break;
                    }
                }
                Err(e) => failed.push(format!("[{path}: {}]", message(&e))),
            }
        }
        let mut notes = vec![row(
            total,
            &format!(
                "total ({})",
                goat_pen::text::plural(files.len() - failed.len(), "file")
            ),
        )];
        if capped {
            notes.push(format!(
                "[stopped at {} files; use a narrower path or glob]",
                files.len()
            ));
        }
        if unreadable_dirs > 0 {
            notes.push(format!("[{unreadable_dirs} directories could not be read]"));
        }
        notes.extend(undecodable_note);
        notes.extend(failed);
        Ok(out.finish(Some(notes.join("\n"))))
    }
}

goat_pen::export_tool!(Wc);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_across_chunks_count_once() {
        let mut c = Counter::default();
        c.feed(b"hello wo");
        c.feed(b"rld\nsecond line\n");
        assert_eq!(
            c.counts,
            Counts {
                lines: 2,
                words: 4,
                bytes: 24
            }
        );
    }

    #[test]
    fn whitespace_only_has_no_words() {
        let mut c = Counter::default();
        c.feed(b" \t\r\n\x0b\x0c");
        assert_eq!(
            c.counts,
            Counts {
                lines: 1,
                words: 0,
                bytes: 6
            }
        );
    }
}
