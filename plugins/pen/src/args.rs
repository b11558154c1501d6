//! Strict parsing of a tool's JSON arguments.
//!
//! Models misspell fields and send numbers as strings. Every mistake becomes
//! an `invalid-arguments` error that names the field, what was expected and
//! what was given, so the model can correct the call in one step. Unknown
//! fields are refused rather than ignored: a silently ignored `replace_all`
//! typo would change what an edit does.

use serde_json::{Map, Value};

use crate::{ToolError, ToolResult};

/// The parsed argument object of one call.
pub struct Args {
    fields: Map<String, Value>,
}

impl Args {
    /// Parses `json` as an object whose keys are all in `allowed`.
    pub fn parse(json: &str, allowed: &[&str]) -> ToolResult<Self> {
        let value: Value = serde_json::from_str(json).map_err(|e| {
            ToolError::InvalidArguments(format!("arguments are not valid JSON: {e}"))
        })?;
        let Value::Object(fields) = value else {
            return Err(ToolError::InvalidArguments(format!(
                "arguments must be a JSON object, got {}",
                kind(&value)
            )));
        };
        if let Some(unknown) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(ToolError::InvalidArguments(format!(
                "unknown argument '{unknown}'; this tool takes: {}",
                allowed.join(", ")
            )));
        }
        Ok(Self { fields })
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).filter(|v| !v.is_null())
    }

    /// A string argument that must be present.
    pub fn string(&self, name: &str) -> ToolResult<&str> {
        self.opt_string(name)?.ok_or_else(|| {
            ToolError::InvalidArguments(format!("missing required argument '{name}'"))
        })
    }

    /// A string argument that may be absent or null.
    pub fn opt_string(&self, name: &str) -> ToolResult<Option<&str>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong_type(name, "a string", other)),
        }
    }

    /// A non-negative integer argument that may be absent or null.
    pub fn opt_u64(&self, name: &str) -> ToolResult<Option<u64>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
                wrong_type(name, "a non-negative integer", &Value::Number(n.clone()))
            }),
            Some(other) => Err(wrong_type(name, "a non-negative integer", other)),
        }
    }

    /// A boolean argument that may be absent or null.
    pub fn opt_bool(&self, name: &str) -> ToolResult<Option<bool>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong_type(name, "true or false", other)),
        }
    }
}

fn wrong_type(name: &str, expected: &str, got: &Value) -> ToolError {
    let mut shown = got.to_string();
    if shown.len() > 80 {
        let cut = (0..=80)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    ToolError::InvalidArguments(format!(
        "argument '{name}' must be {expected}, got {} {shown}",
        kind(got)
    ))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
