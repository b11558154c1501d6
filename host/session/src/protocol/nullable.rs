//! The schema's nullable properties, made required: a reader can count on
//! the key being there.

use super::OMITTED_WHEN_EMPTY;

/// Marks as required every property that may be `null` (an `Option`
/// serde always writes), except [`OMITTED_WHEN_EMPTY`]: a reader can count
/// on the key being there.
pub(super) fn require_nullable(schema: &mut serde_json::Value) {
    use serde_json::Value;
    match schema {
        Value::Object(object) => {
            if let Some(Value::Object(properties)) = object.get("properties") {
                let mut nullable: Vec<String> = properties
                    .iter()
                    .filter(|(name, _)| !OMITTED_WHEN_EMPTY.contains(&name.as_str()))
                    .filter(|(_, p)| allows_null(p))
                    .map(|(name, _)| name.clone())
                    .collect();
                // Sorted, as a sorted map would give them, whichever order
                // the map keeps.
                nullable.sort();
                let required = object
                    .entry("required")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(required) = required {
                    for name in nullable {
                        if !required.iter().any(|r| r.as_str() == Some(&name)) {
                            required.push(Value::String(name));
                        }
                    }
                }
            }
            for value in object.values_mut() {
                require_nullable(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(require_nullable),
        _ => {}
    }
}

/// Whether a property's schema lets it be `null`.
fn allows_null(property: &serde_json::Value) -> bool {
    let null = serde_json::Value::String("null".to_owned());
    match property.get("type") {
        Some(serde_json::Value::Array(types)) => types.contains(&null),
        _ => property
            .get("anyOf")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|any| any.iter().any(|s| s.get("type") == Some(&null))),
    }
}
