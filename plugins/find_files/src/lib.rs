//! `find_files`: workspace files whose path matches a glob.

use goat_pen::args::Args;
use goat_pen::fs::{Kind, Walk, Workspace};
use goat_pen::glob::{self, Glob};
use goat_pen::manners::Manners;
use goat_pen::path::{self, WorkPath};
use goat_pen::text::Output;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};

/// Most paths returned: a pattern matching more than this is too broad to
/// be useful, and the note says so.
const MAX_RESULTS: usize = 1000;

/// Deepest a `**` walk goes. Real source trees are far shallower; a deeper
/// one is a symlink farm or generated output.
const MAX_WALK_DEPTH: usize = 64;

struct FindFiles;

impl Guest for FindFiles {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "find_files",
            "Find files in the workspace whose path matches a glob pattern, relative to `path` \
             (default: the workspace root). `*` and `?` match within one path component, `**` \
             matches any number of directories, `[abc]` and `{a,b}` are supported: '**/*.rs' \
             finds Rust files at any depth, '*.rs' only at the top. Returns matching file paths \
             relative to the workspace root, sorted. Like ripgrep and fd, by default it skips files \
             and directories named in .gitignore, .ignore or .git/info/exclude and hidden ones \
             (names starting with '.') unless the pattern names them ('.github/**'), and says \
             how many it skipped; pass include_ignored: true to include them. .git directories \
             are always skipped.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. 'src/**/*.rs'."},
                    "path": {"type": "string", "description": "Directory to search from, relative to the workspace root. Default: the root."},
                    "include_ignored": {"type": "boolean", "description": "Also find files that .gitignore/.ignore/.git/info/exclude name and hidden files. Default false."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
            Access::Read,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["pattern", "path", "include_ignored"])?;
        let pattern = args.string("pattern")?;
        let glob = glob::compile(pattern)?;
        let manners =
            Manners::from_include_ignored(args.opt_bool("include_ignored")?.unwrap_or(false))
                .showing_hidden_named_in(pattern);
        let base = path::parse_or_root(args.opt_string("path")?)?;
        let ws = Workspace::open()?;
        if ws.stat(&base)?.type_ != wasip2::filesystem::types::DescriptorType::Directory {
            return Err(ToolError::Conflict(format!(
                "'{base}' is not a directory to search"
            )));
        }

        let depth = glob
            .max_depth()
            .unwrap_or(MAX_WALK_DEPTH)
            .min(MAX_WALK_DEPTH);
        let mut found: Vec<WorkPath> = Vec::new();
        let mut capped = false;
        let end = ws.walk_with(&base, manners, depth, &mut |entry, kind, _| {
            if matches!(kind, Kind::File | Kind::Symlink)
                && entry
                    .strip_prefix(&base)
                    .is_some_and(|rel| glob.matches(rel))
            {
                if found.len() == MAX_RESULTS {
                    capped = true;
                    return Walk::Stop;
                }
                found.push(entry.clone());
            }
            Walk::Continue
        })?;
        found.sort();

        if found.is_empty() {
            let where_ = if base.is_root() {
                String::new()
            } else {
                format!(" under '{base}'")
            };
            let hint = if Glob::has_separator(pattern) || pattern.starts_with("**") {
                String::new()
            } else {
                format!(
                    " ('{pattern}' matches only directly{where_}; try '**/{pattern}' for any depth)"
                )
            };
            let mut text = format!("No files match '{pattern}'{where_}.{hint}\n");
            for note in end.skipped_note().into_iter().chain(end.undecodable_note()) {
                text.push_str(&note);
                text.push('\n');
            }
            return Ok(text);
        }
        let mut out = Output::default();
        for path in &found {
            if !out.line(path.as_str()) {
                capped = true;
                break;
            }
        }
        let mut notes = Vec::new();
        if capped || end.hit_entry_cap {
            notes.push(format!(
                "[stopped at {} matches; use a narrower pattern or path]",
                found.len()
            ));
        }
        if end.unreadable_dirs > 0 {
            notes.push(format!(
                "[{} directories could not be read]",
                end.unreadable_dirs
            ));
        }
        notes.extend(end.skipped_note());
        notes.extend(end.undecodable_note());
        Ok(out.finish((!notes.is_empty()).then(|| notes.join("\n"))))
    }
}

goat_pen::export_tool!(FindFiles);
