//! A server's tools held to what was trusted: which pinned tools no
//! longer match what it offers, and names a call could not tell apart.

use std::collections::BTreeMap;

use rmcp::model::Tool;
use serde_json::Value;

use crate::registry::{ServerEntry, definition_hash};

/// Each pinned tool `live` no longer matches, and why.
pub fn changed_tools(server: &ServerEntry, live: &[Tool]) -> Vec<(String, String)> {
    let Some(trusted) = &server.trusted else {
        return Vec::new();
    };
    trusted
        .tools
        .iter()
        .filter_map(|pinned| {
            let Some(now) = live.iter().find(|t| t.name == pinned.name) else {
                return Some((
                    pinned.name.clone(),
                    "the server no longer offers it".to_owned(),
                ));
            };
            let named = live.iter().filter(|t| t.name == pinned.name).count();
            if named > 1 {
                return Some((pinned.name.clone(), shared_name(named)));
            }
            let (description, input, output) = definition(now);
            (definition_hash(&now.name, &description, &input, output.as_ref()) != pinned.sha256)
                .then(|| {
                    (
                        pinned.name.clone(),
                        format!(
                            "its definition changed since it was trusted; `goat mcp show {}` shows \
                             how, and `goat mcp trust {}` trusts it again",
                            server.name, server.name
                        ),
                    )
                })
        })
        .collect()
}

/// Why a tool whose name `count` of the server's tools share is neither
/// pinned nor offered: a call names a tool, and could not say which.
pub fn shared_name(count: usize) -> String {
    format!(
        "the server offers {count} tools with this name, and a call could not say which one \
         runs; it is not offered"
    )
}

/// The names more than one of `live` carry, with how many carry each.
pub fn shared_names(live: &[Tool]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::<String, usize>::new();
    for tool in live {
        *counts.entry(tool.name.to_string()).or_default() += 1;
    }
    counts.retain(|_, count| *count > 1);
    counts
}

/// A live tool's description and schemas, as pinned.
pub fn definition(tool: &Tool) -> (String, Value, Option<Value>) {
    (
        tool.description.as_deref().unwrap_or_default().to_owned(),
        Value::Object((*tool.input_schema).clone()),
        tool.output_schema
            .as_ref()
            .map(|schema| Value::Object((**schema).clone())),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::{PinnedTool, Trusted};

    fn live(name: &str, description: &str) -> Result<Tool, serde_json::Error> {
        serde_json::from_value(json!({
            "name": name, "description": description,
            "inputSchema": {"type": "object"}
        }))
    }

    #[test]
    fn a_name_two_live_tools_share_suspends_the_one_pinned() -> Result<(), serde_json::Error> {
        let one = live("dup", "the first")?;
        let (description, input, output) = definition(&one);
        let mut server: ServerEntry =
            serde_json::from_value(json!({"name": "nm", "command": ["/bin/true"], "added_at": 0}))?;
        server.trusted = Some(Trusted {
            at: 0,
            tools: vec![PinnedTool::new("dup", &description, input, output)],
        });
        assert!(changed_tools(&server, std::slice::from_ref(&one)).is_empty());
        let both = [one, live("dup", "the second")?];
        assert_eq!(
            changed_tools(&server, &both),
            [("dup".to_owned(), shared_name(2))]
        );
        assert_eq!(shared_names(&both).get("dup"), Some(&2));
        assert!(shared_names(&both[..1]).is_empty());
        Ok(())
    }
}
