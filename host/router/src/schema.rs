//! Checking a call's arguments against the tool's JSON Schema.
//!
//! The subset GOAT's tools use: `type` (one or a list), `properties`,
//! `required`, `additionalProperties` (boolean or schema), `enum`,
//! `minimum`/`maximum`, `minLength`/`maxLength`, `items`,
//! `minItems`/`maxItems`. Other keywords are not enforced (the tool checks
//! its own arguments as well); nothing here is trusted for security, it
//! only gives the model a precise message before anything runs.

use serde_json::Value;

/// Deepest nesting checked; a schema deeper than this is a broken plugin.
const MAX_DEPTH: usize = 32;

/// Checks `value` against `schema`. The error names the argument and says
/// what was expected.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "", 0)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    match want {
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => kind(v) == other,
    }
}

fn name(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("argument '{path}'")
    }
}

fn check(schema: &Value, v: &Value, path: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    if let Some(t) = schema.get("type") {
        let wants: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !wants.is_empty() && !wants.iter().any(|w| type_matches(w, v)) {
            return Err(format!(
                "{} must be {}, got {} {}",
                name(path),
                wants.join(" or "),
                kind(v),
                short(v)
            ));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(v)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!(
            "{} must be one of {}, got {}",
            name(path),
            list.join(", "),
            short(v)
        ));
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema
            .get("minimum")
            .and_then(Value::as_f64)
            .filter(|m| n < *m)
        {
            return Err(format!("{} must be at least {min}, got {n}", name(path)));
        }
        if let Some(max) = schema
            .get("maximum")
            .and_then(Value::as_f64)
            .filter(|m| n > *m)
        {
            return Err(format!("{} must be at most {max}, got {n}", name(path)));
        }
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema
            .get("minLength")
            .and_then(Value::as_u64)
            .filter(|m| len < *m)
        {
            return Err(format!(
                "{} must be at least {min} characters long",
                name(path)
            ));
        }
        if let Some(max) = schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .filter(|m| len > *m)
        {
            return Err(format!(
                "{} must be at most {max} characters long",
                name(path)
            ));
        }
    }
    if let Some(items) = v.as_array() {
        let len = items.len() as u64;
        if let Some(min) = schema
            .get("minItems")
            .and_then(Value::as_u64)
            .filter(|m| len < *m)
        {
            return Err(format!("{} must have at least {min} items", name(path)));
        }
        if let Some(max) = schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .filter(|m| len > *m)
        {
            return Err(format!("{} must have at most {max} items", name(path)));
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(item_schema, item, &format!("{path}[{i}]"), depth + 1)?;
            }
        }
    }
    if let Some(obj) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for field in required.iter().filter_map(Value::as_str) {
                if obj.get(field).is_none_or(Value::is_null) {
                    return Err(format!("missing required argument '{}'", join(path, field)));
                }
            }
        }
        for (key, value) in obj {
            match props.and_then(|p| p.get(key)) {
                Some(sub) => check(sub, value, &join(path, key), depth + 1)?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        let mut known: Vec<&str> = props
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        // In one order however serde_json keeps maps (a
                        // build with the ACP SDK keeps insertion order).
                        known.sort_unstable();
                        return Err(format!(
                            "unknown argument '{}'; this tool takes: {}",
                            join(path, key),
                            known.join(", ")
                        ));
                    }
                    Some(extra @ Value::Object(_)) => {
                        check(extra, value, &join(path, key), depth + 1)?
                    }
                    _ => {}
                },
            }
        }
    }
    Ok(())
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 60 {
        let cut = (0..=60).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_table() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "offset": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let table: &[(Value, Option<&str>)] = &[
            (json!({"path": "a"}), None),
            (
                json!({"path": "a", "offset": 3, "mode": "b", "tags": ["x"]}),
                None,
            ),
            (json!({}), Some("missing required argument 'path'")),
            (
                json!({"path": null}),
                Some("missing required argument 'path'"),
            ),
            (
                json!({"path": 5}),
                Some("argument 'path' must be string, got integer 5"),
            ),
            (
                json!({"path": ""}),
                Some("argument 'path' must be at least 1 characters long"),
            ),
            (
                json!({"path": "a", "offset": "5"}),
                Some("argument 'offset' must be integer, got string \"5\""),
            ),
            (
                json!({"path": "a", "offset": 0}),
                Some("argument 'offset' must be at least 1, got 0"),
            ),
            (
                json!({"path": "a", "offset": 1.5}),
                Some("argument 'offset' must be integer, got number 1.5"),
            ),
            (
                json!({"path": "a", "mode": "c"}),
                Some("argument 'mode' must be one of \"a\", \"b\", got \"c\""),
            ),
            (
                json!({"path": "a", "tags": ["x", 1]}),
                Some("argument 'tags[1]' must be string, got integer 1"),
            ),
            (
                json!({"path": "a", "tags": ["x", "y", "z"]}),
                Some("argument 'tags' must have at most 2 items"),
            ),
            (
                json!({"path": "a", "pth": 1}),
                Some("unknown argument 'pth'; this tool takes: mode, offset, path, tags"),
            ),
            (
                json!(["a"]),
                Some("the arguments must be object, got array [\"a\"]"),
            ),
        ];
        for (value, want) in table {
            assert_eq!(validate(&schema, value).err().as_deref(), *want, "{value}");
        }
    }
}
