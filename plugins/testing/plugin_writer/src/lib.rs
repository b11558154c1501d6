//! A test guest shaped as a plugin that writes: it declares `read-write`
//! access and imports only what a plugin may, so `goat plugins add`
//! accepts it. It writes `content` to `path` (creating or replacing it),
//! with `remove: true` removes `path`, or with `rename_to` renames `path`,
//! through raw WASI calls. The tests
//! check that what it changes is kept for undo, listed in `files_changed`
//! and in the session's patch. Never shipped.

use goat_pen::args::Args;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, OpenFlags, PathFlags};

fn root() -> ToolResult<Descriptor> {
    get_directories()
        .into_iter()
        .next()
        .map(|(d, _)| d)
        .ok_or_else(|| ToolError::PermissionDenied("no preopen".to_owned()))
}

fn raw(e: ErrorCode) -> ToolError {
    ToolError::Io(format!("wasi error: {}", e.name()))
}

struct PluginWriter;

impl Guest for PluginWriter {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "write",
            "Test plugin: writes content to a file, or removes it.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "remove": {"type": "boolean"},
                    "rename_to": {"type": "string"}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            Access::ReadWrite,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(&arguments, &["path", "content", "remove", "rename_to"])?;
        let path = args.string("path")?;
        if let Some(to) = args.opt_string("rename_to")? {
            let dir = root()?;
            dir.rename_at(path, &dir, to).map_err(raw)?;
            return Ok(format!("renamed {path} to {to}"));
        }
        if args.opt_bool("remove")?.unwrap_or(false) {
            root()?.unlink_file_at(path).map_err(raw)?;
            return Ok(format!("removed {path}"));
        }
        let content = args.opt_string("content")?.unwrap_or("");
        let fd = root()?
            .open_at(
                PathFlags::empty(),
                path,
                OpenFlags::CREATE | OpenFlags::TRUNCATE,
                DescriptorFlags::WRITE,
            )
            .map_err(raw)?;
        fd.write(content.as_bytes(), 0).map_err(raw)?;
        Ok(format!("wrote {} bytes to {path}", content.len()))
    }
}

goat_pen::export_tool!(PluginWriter);
