//! `write_file`: create or overwrite a file, creating missing parent
//! directories.

use goat_pen::args::Args;
use goat_pen::fs::{Workspace, require_file};
use goat_pen::path;
use goat_pen::text::plural;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use goat_workpath::encoding::TextEncoding;

/// Largest content one call writes. Source files are far smaller; a model
/// producing more than this in one argument is almost certainly looping.
const MAX_WRITE_BYTES: usize = 4 * 1024 * 1024;

struct WriteFile;

impl Guest for WriteFile {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "write_file",
            "Create a file in the workspace, or replace the whole content of an existing one. \
             Missing parent directories are created. A new file is UTF-8; an existing text file \
             keeps its encoding. To change part of a file, use edit_file.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
            Access::ReadWrite,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["path", "content"])?;
        let path = path::parse(args.string("path")?)?;
        let content = args.string("content")?;
        if content.len() > MAX_WRITE_BYTES {
            return Err(ToolError::TooLarge(format!(
                "content is {} bytes; write_file writes at most {MAX_WRITE_BYTES} bytes per call",
                content.len()
            )));
        }
        let Some((parent, _)) = path.split_last() else {
            return Err(ToolError::Conflict(
                "the workspace root is a directory; give a file path such as 'notes.txt'"
                    .to_owned(),
            ));
        };
        let ws = Workspace::open()?;
        let before = if ws.exists(&path)? {
            let stat = ws.stat(&path)?;
            require_file(&path, stat.type_)?;
            Some(stat.size)
        } else {
            None
        };
        // A text file not in UTF-8 keeps its encoding (the rule in
        // goat_workpath::encoding, as read_file reads it).
        let encoding = match before {
            Some(size) if size <= MAX_WRITE_BYTES as u64 => {
                let old = ws.read_file(&path, MAX_WRITE_BYTES as u64)?;
                if goat_workpath::encoding::is_mixed(&old) {
                    return Err(ToolError::Conflict(format!(
                        "'{path}' mixes UTF-8 lines with Windows-1252 ones (read_file showed \
                         each in its own), so rewriting it whole in either would change the \
                         others; nothing was written. Change it with edit_file, which keeps \
                         every byte it does not replace, or delete_file and then write_file \
                         to write it anew as UTF-8"
                    )));
                }
                goat_workpath::encoding::decode(&old).map_or(TextEncoding::Utf8, |(_, e)| e)
            }
            _ => TextEncoding::Utf8,
        };
        let bytes = goat_workpath::encoding::encode(content, encoding)
            .map_err(|bad| goat_pen::encoding::unencodable(&path, encoding, bad))?;
        let created_dirs = ws.create_dir_all(&parent)?;
        ws.write_file(&path, &bytes)?;

        let size = format!(
            "{}, {}",
            plural(content.len(), "byte"),
            plural(content.lines().count(), "line")
        );
        let mut msg = match before {
            None => format!("Created '{path}' ({size})."),
            Some(old) => format!(
                "Overwrote '{path}' ({size}; it had {}).",
                plural(old as usize, "byte")
            ),
        };
        msg.push_str(&goat_pen::encoding::kept_note(encoding));
        if !created_dirs.is_empty() {
            let names: Vec<String> = created_dirs.iter().map(|d| format!("'{d}'")).collect();
            msg.push_str(&format!(" Created directories: {}.", names.join(", ")));
        }
        Ok(msg)
    }
}

goat_pen::export_tool!(WriteFile);
