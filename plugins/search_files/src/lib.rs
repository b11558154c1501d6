//! `search_files`: a regular-expression search over workspace text files,
//! in grep's `path:line:text` form.
//!
//! The regex engine is `regex-lite`: guaranteed linear time in the input
//! (no backtracking), so no pattern can stall the tool, and small enough to
//! keep the component compact.

use goat_pen::args::Args;
use goat_pen::fs::{Kind, Walk, Workspace};
use goat_pen::glob::{self, Glob};
use goat_pen::path::{self, WorkPath};
use goat_pen::text::{Output, cut_line, looks_binary, plural};
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use regex_lite::{Regex, RegexBuilder};
use wasip2::filesystem::types::DescriptorType;

/// Most matching lines reported: past this, a narrower pattern serves the
/// model better than more lines.
const MAX_MATCHES: usize = 500;

/// Most context lines around each match.
const MAX_CONTEXT: u64 = 10;

/// Files larger than this are skipped: they are data or generated output,
/// and reading them would eat the tool's time limit.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Compiled-regex size limit: bounds memory for pathological patterns.
const MAX_REGEX_BYTES: usize = 1024 * 1024;

/// Deepest directory level searched.
const MAX_WALK_DEPTH: usize = 64;

struct SearchFiles;

impl Guest for SearchFiles {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "search_files",
            "Search the text files in the workspace for a regular expression (Rust regex syntax; \
             use (?i) for case-insensitive). Results are 'path:line:text' for matching lines and \
             'path-line-text' for context lines, with '--' between groups. Binary files and .git \
             directories are skipped. glob filters files: a pattern without '/' (like '*.rs') \
             matches file names at any depth; one with '/' matches paths relative to `path`.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to search for."},
                    "path": {"type": "string", "description": "File or directory to search, relative to the workspace root. Default: the root."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.rs' or 'src/**/*.py'."},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match. Default 0."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
            Access::Read,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["pattern", "path", "glob", "context"])?;
        let pattern = args.string("pattern")?;
        let regex = RegexBuilder::new(pattern)
            .size_limit(MAX_REGEX_BYTES)
            .build()
            .map_err(|e| {
                ToolError::InvalidArguments(format!("invalid regular expression '{pattern}': {e}"))
            })?;
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

        let ws = Workspace::open()?;
        let mut files: Vec<WorkPath> = Vec::new();
        let mut unreadable_dirs = 0;
        let mut hit_entry_cap = false;
        let mut undecodable_names = 0;
        if ws.stat(&base)?.type_ == DescriptorType::Directory {
            let end = ws.walk(&base, MAX_WALK_DEPTH, &mut |entry, kind, _| {
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
            unreadable_dirs = end.unreadable_dirs;
            hit_entry_cap = end.hit_entry_cap;
            undecodable_names = end.undecodable_names;
        } else {
            files.push(base.clone());
        }
        files.sort();

        let mut search = Search {
            regex: Some(&regex),
            context: context as usize,
            ..Search::default()
        };
        for file in &files {
            if search.stopped {
                break;
            }
            match ws.read_file(file, MAX_FILE_BYTES) {
                Ok(bytes) if looks_binary(&bytes) => search.skipped_binary += 1,
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => search.file(file, &text),
                    Err(_) => search.skipped_binary += 1,
                },
                Err(ToolError::TooLarge(_)) => search.skipped_large += 1,
                Err(e) if files.len() == 1 => return Err(e),
                Err(_) => search.unreadable += 1,
            }
        }
        search.unreadable += unreadable_dirs;
        Ok(search.finish(pattern, files.len(), hit_entry_cap, undecodable_names))
    }
}

#[derive(Default)]
struct Search<'r> {
    regex: Option<&'r Regex>,
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

impl Search<'_> {
    fn file(&mut self, path: &WorkPath, text: &str) {
        let Some(regex) = self.regex else { return };
        let lines: Vec<&str> = text.lines().collect();
        // Last line index written for this file, to merge overlapping context.
        let mut written: Option<usize> = None;
        let mut any = false;
        for (i, line) in lines.iter().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if self.matches == MAX_MATCHES {
                self.stopped = true;
                break;
            }
            any = true;
            self.matches += 1;
            let from = i.saturating_sub(self.context);
            let from = written.map_or(from, |w| from.max(w + 1));
            if self.context > 0
                && self.wrote_group
                && written.is_none_or(|w| from > w + 1)
                && !self.emit("--")
            {
                break;
            }
            for (j, ctx) in lines.iter().enumerate().take(i).skip(from) {
                if !self.emit(&format!("{path}-{}-{}", j + 1, cut_line(ctx))) {
                    return;
                }
            }
            if !self.emit(&format!("{path}:{}:{}", i + 1, cut_line(line))) {
                return;
            }
            written = Some(i);
            self.wrote_group = true;
            // Trailing context, stopping before the next match so it is
            // printed as a match, not as context.
            let to = (i + self.context).min(lines.len().saturating_sub(1));
            for (j, ctx) in lines.iter().enumerate().take(to + 1).skip(i + 1) {
                if regex.is_match(ctx) {
                    break;
                }
                if !self.emit(&format!("{path}-{}-{}", j + 1, cut_line(ctx))) {
                    return;
                }
                written = Some(j);
            }
        }
        if any {
            self.files_matched += 1;
        }
    }

    fn emit(&mut self, line: &str) -> bool {
        if self.out.line(line) {
            true
        } else {
            self.stopped = true;
            false
        }
    }

    fn finish(
        self,
        pattern: &str,
        searched: usize,
        hit_entry_cap: bool,
        undecodable_names: usize,
    ) -> String {
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
        if hit_entry_cap {
            notes.push(
                "[the directory walk stopped at its entry cap; search a subdirectory]".to_owned(),
            );
        }
        let skipped = [
            (self.skipped_binary, "(binary or not UTF-8)"),
            (self.skipped_large, "(larger than 4 MiB)"),
            (self.unreadable, "(unreadable)"),
        ];
        for (n, why) in skipped {
            if n > 0 {
                notes.push(format!("[skipped {} {why}]", plural(n, "file")));
            }
        }
        notes.extend(goat_pen::fs::undecodable_note(undecodable_names));
        self.out.finish(Some(notes.join("\n")))
    }
}

goat_pen::export_tool!(SearchFiles);
