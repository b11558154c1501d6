//! The tools on offer as MCP describes them: name, description, argument
//! schema and annotations that say what each really does.

use std::sync::Arc;

use goat_engine::ToolSchema;
use goat_router::OfferedTool;
use rmcp::model::{Tool, ToolAnnotations};

/// What a tool does, as MCP's hints say it:
///
/// - `readOnlyHint`: a tool that cannot change the workspace (its spec
///   asks for read access or none; the sandbox never gives it more).
/// - `destructiveHint`: any tool that writes can replace or remove what is
///   there (`write_file` overwrites, `edit_file` rewrites, a plugin or a
///   command may do anything the gate lets it), so it is never said to
///   be only additive.
/// - `openWorldHint`: only a command whose network is not closed reaches
///   beyond the workspace; a component has no socket to reach it with.
/// - `idempotentHint` is left unsaid (the protocol's default, false).
pub fn annotations(tool: &OfferedTool) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(!tool.writes)
        .destructive(tool.writes)
        .open_world(tool.network)
}

/// Every offered tool with its schema, as `tools/list` gives them. Results
/// are text (a file's lines, a listing, a command's output), so no tool
/// declares an output schema.
pub fn mcp_tools(offered: &[OfferedTool], schemas: &[ToolSchema]) -> Vec<Tool> {
    offered
        .iter()
        .filter_map(|tool| {
            let schema = schemas.iter().find(|s| s.name == tool.name)?;
            let input = match &schema.parameters {
                serde_json::Value::Object(map) => map.clone(),
                // A tool's schema is an object (the catalog checks it); an
                // empty object schema keeps a broken one listable.
                _ => serde_json::Map::from_iter([(
                    "type".to_owned(),
                    serde_json::Value::String("object".to_owned()),
                )]),
            };
            Some(
                Tool::new(
                    tool.name.clone(),
                    schema.description.clone(),
                    Arc::new(input),
                )
                .with_annotations(annotations(tool)),
            )
        })
        .collect()
}

/// The undo tool's name (`goat mcp serve --offer-undo`): no tool on offer
/// can have it (built-ins have their own names; plugins' and MCP servers'
/// are namespaced with `__`).
pub const UNDO_TOOL: &str = "goat_undo";

/// `goat_undo` as `tools/list` gives it.
pub fn undo_tool() -> Tool {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "turn": {
                "type": "integer",
                "minimum": 1,
                "description": "The turn to undo, as `goat sessions show` numbers them \
                                (default: the last one with changes not yet undone)."
            }
        },
        "additionalProperties": false
    });
    let schema = schema.as_object().cloned().unwrap_or_default();
    Tool::new(
        UNDO_TOOL,
        "Put back the files that the last call with changes in this session changed (or turn \
         `turn`), as `goat undo` does. Refused, changing nothing, if any of them changed since.",
        Arc::new(schema),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(false),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(writes: bool, network: bool) -> OfferedTool {
        OfferedTool {
            name: "t".to_owned(),
            kind: goat_router::ToolKind::Builtin,
            writes,
            path_fields: Vec::new(),
            network,
        }
    }

    #[test]
    fn the_hints_follow_what_the_tool_may_do() {
        let read = annotations(&offered(false, false));
        assert_eq!(read.read_only_hint, Some(true));
        assert_eq!(read.destructive_hint, Some(false));
        assert_eq!(read.open_world_hint, Some(false));
        let write = annotations(&offered(true, false));
        assert_eq!(write.read_only_hint, Some(false));
        assert_eq!(write.destructive_hint, Some(true));
        let networked = annotations(&offered(true, true));
        assert_eq!(networked.open_world_hint, Some(true));
    }
}
