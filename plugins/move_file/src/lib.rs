//! `move_file`: rename or move a file or directory within the workspace.

use goat_pen::args::Args;
use goat_pen::change::Entry;
use goat_pen::fs::Workspace;
use goat_pen::path;
use goat_pen::text::plural;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};

struct MoveFile;

impl Guest for MoveFile {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "move_file",
            "Move or rename a file or directory within the workspace. Missing parent \
             directories of the destination are created. An existing destination file is \
             replaced only with overwrite: true; a directory is never replaced.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "from": {"type": "string", "description": "Path to move, relative to the workspace root."},
                    "to": {"type": "string", "description": "New path, relative to the workspace root."},
                    "overwrite": {"type": "boolean", "description": "Replace an existing file at 'to' (default false)."}
                },
                "required": ["from", "to"],
                "additionalProperties": false
            }),
            Access::ReadWrite,
            &["from", "to"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["from", "to", "overwrite"])?;
        let from = path::parse(args.string("from")?)?;
        let to = path::parse(args.string("to")?)?;
        let overwrite = args.opt_bool("overwrite")?.unwrap_or(false);
        if from.split_last().is_none() || to.split_last().is_none() {
            return Err(ToolError::InvalidArguments(
                "the workspace root itself cannot be moved or replaced".to_owned(),
            ));
        }
        if from == to {
            return Err(ToolError::InvalidArguments(format!(
                "'from' and 'to' are both '{from}'; nothing to move"
            )));
        }
        if to.as_str().starts_with(&format!("{from}/")) {
            return Err(ToolError::InvalidArguments(format!(
                "cannot move '{from}' into itself ('{to}')"
            )));
        }
        let ws = Workspace::open()?;
        let what = match ws.entry(&from)? {
            Entry::Missing => {
                return Err(ToolError::NotFound(format!(
                    "'{from}' does not exist (paths are relative to the workspace root); \
                     find_files or list_directory shows what is there"
                )));
            }
            Entry::Other => {
                return Err(ToolError::Conflict(format!(
                    "'{from}' is not a regular file, link or directory; it was not moved"
                )));
            }
            Entry::File(size) => format!("file, {}", plural(size as usize, "byte")),
            Entry::Symlink => "symbolic link".to_owned(),
            Entry::Dir => "directory".to_owned(),
        };
        let replaced = match ws.entry(&to)? {
            Entry::Missing => None,
            Entry::Dir => {
                return Err(ToolError::Conflict(format!(
                    "'{to}' is an existing directory; give the full new path (for example \
                     '{to}/{}')",
                    from.split_last().map(|(_, name)| name).unwrap_or_default()
                )));
            }
            Entry::File(_) | Entry::Symlink if !overwrite => {
                return Err(ToolError::Conflict(format!(
                    "'{to}' already exists; nothing was moved. Pass overwrite: true to replace \
                     it, or choose another path"
                )));
            }
            Entry::File(size) => Some(plural(size as usize, "byte")),
            Entry::Symlink => Some("a symbolic link".to_owned()),
            Entry::Other => {
                return Err(ToolError::Conflict(format!(
                    "'{to}' is a device, pipe or socket; it is never replaced"
                )));
            }
        };
        let created_dirs = match to.split_last() {
            Some((parent, _)) => ws.create_dir_all(&parent)?,
            None => Vec::new(),
        };
        if let Err(refused) = ws.rename(&from, &to) {
            // Nothing moved: the directories made for it go too, newest
            // first, so a refused move leaves the workspace as it was.
            for dir in created_dirs.iter().rev() {
                ws.remove_empty_dir(dir);
            }
            return Err(refused);
        }
        let mut msg = format!("Moved '{from}' to '{to}' ({what}).");
        if let Some(old) = replaced {
            msg.push_str(&format!(" It replaced the previous '{to}' ({old})."));
        }
        if !created_dirs.is_empty() {
            let names: Vec<String> = created_dirs.iter().map(|d| format!("'{d}'")).collect();
            msg.push_str(&format!(" Created directories: {}.", names.join(", ")));
        }
        Ok(msg)
    }
}

goat_pen::export_tool!(MoveFile);
