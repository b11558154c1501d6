//! A tool's description of itself, checked before the host uses it.

use serde::{Deserialize, Serialize};

/// What a tool may do with the workspace (the Pen).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// No filesystem at all.
    None,
    /// The workspace, preopened read-only.
    Read,
    /// The workspace, preopened read-write.
    ReadWrite,
}

impl Access {
    /// The name used in the WIT contract and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Read => "read",
            Self::ReadWrite => "read-write",
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a tool presents itself to the host and, through it, to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model calls the tool by: `[a-z][a-z0-9_]*`, at most 64 bytes.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments: an object schema.
    pub parameters: serde_json::Value,
    /// Workspace access the tool declares it needs. The host grants at most
    /// this, and less when the caller allows less.
    pub access: Access,
    /// Top-level argument fields that hold workspace paths.
    pub path_fields: Vec<String>,
}

/// Longest accepted tool name; engines and models handle short names best.
pub const MAX_TOOL_NAME_BYTES: usize = 64;

/// Longest accepted description, so one tool cannot flood the prompt.
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

impl ToolSpec {
    /// Checks what the host relies on. Returns why the spec is unusable.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let name_ok = self.name.len() <= MAX_TOOL_NAME_BYTES
            && self.name.starts_with(|c: char| c.is_ascii_lowercase())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !name_ok {
            return Err(format!(
                "tool name '{}' must match [a-z][a-z0-9_]* and be at most {MAX_TOOL_NAME_BYTES} bytes",
                self.name
            ));
        }
        if self.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(format!(
                "description is longer than {MAX_DESCRIPTION_BYTES} bytes"
            ));
        }
        if self.parameters.get("type").and_then(|t| t.as_str()) != Some("object") {
            return Err("parameters must be a JSON Schema with \"type\": \"object\"".to_owned());
        }
        let properties = self
            .parameters
            .get("properties")
            .and_then(|p| p.as_object());
        for field in &self.path_fields {
            if !properties.is_some_and(|p| p.contains_key(field)) {
                return Err(format!(
                    "path field '{field}' is not a property of the parameters"
                ));
            }
        }
        Ok(())
    }
}
