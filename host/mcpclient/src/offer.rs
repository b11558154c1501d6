//! What a request offers of the MCP tools: each one, or, when their
//! definitions would take more than a share of the context window, two
//! tools that stand for them (ADR-0086): one that searches the pinned
//! definitions and one that calls a tool it found. The offer is decided
//! once per session, so every request's tools stay the same and the
//! engine's prompt cache holds (ADR-0083).

use goat_engine::ToolSchema;
use goat_router::ExternalTool;
use serde_json::{Value, json};

/// The search tool's name.
pub const SEARCH_TOOL: &str = "mcp_search";

/// The call tool's name.
pub const CALL_TOOL: &str = "mcp_call";

/// The most definitions one search returns.
pub const MAX_FOUND: usize = 8;

/// About how many tokens a tool's definition takes in a request: its
/// bytes over four, plus the template's framing.
pub fn tool_tokens(tool: &ExternalTool) -> u64 {
    let bytes = tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    (bytes as u64).div_ceil(4) + 10
}

/// The two tools that stand for `tools`.
pub fn on_demand_schemas(tools: &[ExternalTool]) -> Vec<ToolSchema> {
    let mut servers: Vec<&str> = tools.iter().map(|t| t.server.as_str()).collect();
    servers.dedup();
    vec![
        ToolSchema {
            name: SEARCH_TOOL.to_owned(),
            description: format!(
                "Search the tools of the MCP servers ({}; {} tools in all) by words in their \
                 names and descriptions. Returns up to {MAX_FOUND} definitions: name, \
                 description and JSON Schema of the arguments. Call one with {CALL_TOOL}.",
                servers.join(", "),
                tools.len()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for; empty lists every tool's name."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        },
        ToolSchema {
            name: CALL_TOOL.to_owned(),
            description: format!(
                "Call an MCP tool that {SEARCH_TOOL} found, by its full name (SERVER__TOOL), \
                 with arguments that fit its schema."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "description": "The tool's full name, SERVER__TOOL."},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["tool", "arguments"],
                "additionalProperties": false
            }),
        },
    ]
}

/// The definitions matching `query`, best first, as the model reads them.
pub fn search(tools: &[ExternalTool], query: &str) -> String {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return format!("the MCP tools: {}", names.join(", "));
    }
    let mut scored: Vec<(usize, &ExternalTool)> = tools
        .iter()
        .map(|t| {
            let name = t.name.to_lowercase();
            let description = t.description.to_lowercase();
            let score = words
                .iter()
                .map(|w| {
                    3 * usize::from(name.contains(w.as_str()))
                        + usize::from(description.contains(w.as_str()))
                })
                .sum();
            (score, t)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    if scored.is_empty() {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return format!(
            "no MCP tool matches '{}'; the tools are: {}",
            crate::render::escape(query),
            names.join(", ")
        );
    }
    let found: Vec<Value> = scored
        .iter()
        .take(MAX_FOUND)
        .map(|(_, t)| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let mut text = String::new();
    for definition in &found {
        text.push_str(&definition.to_string());
        text.push('\n');
    }
    if scored.len() > MAX_FOUND {
        text.push_str(&format!(
            "({} more match; narrow the query)\n",
            scored.len() - MAX_FOUND
        ));
    }
    text
}
