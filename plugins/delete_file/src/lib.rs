//! `delete_file`: remove one file (or symbolic link); never a directory.

use goat_pen::args::Args;
use goat_pen::change::Entry;
use goat_pen::fs::Workspace;
use goat_pen::path;
use goat_pen::text::plural;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};

struct DeleteFile;

impl Guest for DeleteFile {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "delete_file",
            "Delete one file (or symbolic link) in the workspace. Directories are never \
             deleted; delete the files in one one by one if that is really meant.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            Access::ReadWrite,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["path"])?;
        let path = path::parse(args.string("path")?)?;
        let ws = Workspace::open()?;
        let what = match ws.entry(&path)? {
            Entry::Missing => {
                return Err(ToolError::NotFound(format!(
                    "'{path}' does not exist (paths are relative to the workspace root); \
                     nothing was deleted"
                )));
            }
            Entry::Dir => {
                return Err(ToolError::Conflict(format!(
                    "'{path}' is a directory; delete_file removes files only, and nothing was \
                     deleted"
                )));
            }
            Entry::Other => {
                return Err(ToolError::Conflict(format!(
                    "'{path}' is a device, pipe or socket; it was not deleted"
                )));
            }
            Entry::File(size) => plural(size as usize, "byte"),
            Entry::Symlink => "a symbolic link; what it pointed to is untouched".to_owned(),
        };
        ws.unlink(&path)?;
        Ok(format!("Deleted '{path}' ({what})."))
    }
}

goat_pen::export_tool!(DeleteFile);
