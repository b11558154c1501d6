//! `list_directory`: the entries of a directory, optionally recursive.

use goat_pen::args::Args;
use goat_pen::fs::{Kind, Walk, Workspace};
use goat_pen::manners::Manners;
use goat_pen::path;
use goat_pen::text::{Output, plural};
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use wasip2::filesystem::types::DescriptorType;

/// Entries listed when the call gives no `depth`: the directory itself.
const DEFAULT_DEPTH: u64 = 1;

/// Deepest recursion a call may ask for; deeper trees are better explored
/// with find_files.
const MAX_DEPTH: u64 = 10;

/// Most entries in one listing: enough to see a project's shape, few enough
/// to leave the model room to think about it.
const MAX_ENTRIES: usize = 1000;

struct ListDirectory;

impl Guest for ListDirectory {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "list_directory",
            "List a directory in the workspace: each entry with its kind (dir, file with size in \
             bytes, or symlink with its target), sorted by name. depth > 1 lists subdirectories \
             too. Paths in the result are relative to the workspace root. Like ripgrep and fd, by \
             default it leaves out entries named in .gitignore, .ignore or .git/info/exclude and \
             hidden ones (names starting with '.'), and says how many; pass include_ignored: true \
             to list them too.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the workspace root. Default: the root."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "How many levels to list. Default 1."},
                    "include_ignored": {"type": "boolean", "description": "Also list entries that .gitignore/.ignore/.git/info/exclude name and hidden entries. Default false."}
                },
                "additionalProperties": false
            }),
            Access::Read,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["path", "depth", "include_ignored"])?;
        let path = path::parse_or_root(args.opt_string("path")?)?;
        let depth = args.opt_u64("depth")?.unwrap_or(DEFAULT_DEPTH);
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(ToolError::InvalidArguments(format!(
                "depth must be between 1 and {MAX_DEPTH}, got {depth}"
            )));
        }
        let manners =
            Manners::from_include_ignored(args.opt_bool("include_ignored")?.unwrap_or(false));
        let ws = Workspace::open()?;
        let stat = ws.stat(&path)?;
        if stat.type_ != DescriptorType::Directory {
            return Err(ToolError::Conflict(format!(
                "'{path}' is not a directory; use read_file to read a file"
            )));
        }

        let mut out = Output::default();
        let mut count = 0usize;
        let mut capped = false;
        let end = ws.walk_with(&path, manners, depth as usize, &mut |entry, kind, _| {
            if count == MAX_ENTRIES {
                capped = true;
                return Walk::Stop;
            }
            let line = match kind {
                Kind::Dir => format!("{entry}/  (dir)"),
                Kind::File => match ws.lstat(entry) {
                    Ok(s) => format!("{entry}  (file, {})", plural(s.size as usize, "byte")),
                    Err(_) => format!("{entry}  (file)"),
                },
                Kind::Symlink => match ws.read_link(entry) {
                    Ok(target) => format!("{entry}  (symlink -> {target})"),
                    Err(_) => format!("{entry}  (symlink)"),
                },
                Kind::Other => format!("{entry}  (special file)"),
            };
            if !out.line(&line) {
                capped = true;
                return Walk::Stop;
            }
            count += 1;
            Walk::Continue
        })?;

        if out.is_empty() && end.undecodable_names == 0 {
            let mut text = format!("'{path}' is empty.\n");
            if let Some(note) = end.skipped_note() {
                text = format!("'{path}' has nothing to show.\n{note}\n");
            }
            return Ok(text);
        }
        let mut notes = Vec::new();
        if capped || end.hit_entry_cap {
            notes.push(format!(
                "[listing stopped after {count} entries; list a subdirectory or use a smaller depth]"
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

goat_pen::export_tool!(ListDirectory);
