//! Reading the config file through the table of settings: TOML types
//! checked as serde would (the same words), unknown keys refused, then
//! each value validated, and any mistake reported with the file, the line
//! and the key.

use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::de::{Error as _, IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer as _};
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::Settings;
use super::Source;
use super::table::{Raw, RawType, SETTINGS, SettingDef};

/// A value the file gives, its type checked, not yet validated.
struct Given {
    def: &'static SettingDef,
    raw: Raw,
    span: Range<usize>,
}

impl Settings {
    pub(super) fn apply_file(&mut self, path: &Path, text: &str) -> anyhow::Result<()> {
        let fail = |span: &Range<usize>, why: &str| file_error(path, text, span, why);
        let root = DeTable::parse(text).map_err(|e| match e.span() {
            Some(span) => fail(&span, e.message()),
            None => anyhow::anyhow!("config file {}: {}", path.display(), e.message()),
        })?;
        let mut given = Vec::new();
        collect("", root.into_inner(), &mut given).map_err(|(span, why)| fail(&span, &why))?;
        // Validated in the table's order, after every type is known to be
        // right, as the file was always read.
        given.sort_by_key(|g| SETTINGS.iter().position(|d| d.key == g.def.key));
        for Given { def, raw, span } in given {
            let source = Source::File {
                path: path.to_owned(),
                line: line_of(text, span.start),
            };
            if let Raw::Text(value) = &raw
                && value.trim().is_empty()
            {
                return Err(fail(&span, "it is empty; remove the line or give a value"));
            }
            def.set(self, raw, source)
                .map_err(|why| fail(&span, &why))?;
        }
        Ok(())
    }
}

/// The settings in `table` (the section `section`, `""` at the top), in
/// the file's order; the first mistake, with where it is.
fn collect(
    section: &str,
    table: DeTable<'_>,
    given: &mut Vec<Given>,
) -> Result<(), (Range<usize>, String)> {
    let keys = keys_in(section);
    for (key, value) in table {
        let name = key.get_ref().as_ref();
        let full = if section.is_empty() {
            name.to_owned()
        } else {
            format!("{section}.{name}")
        };
        if let Some(def) = SETTINGS.iter().find(|d| d.key == full) {
            let span = value.span();
            let raw = match def.takes() {
                RawType::Text => String::deserialize(ValueDeserializer::from(value)).map(Raw::Text),
                RawType::Number => {
                    u64::deserialize(ValueDeserializer::from(value)).map(Raw::Number)
                }
                RawType::Bool => bool::deserialize(ValueDeserializer::from(value)).map(Raw::Bool),
                RawType::Decimal => {
                    f64::deserialize(ValueDeserializer::from(value)).map(Raw::Decimal)
                }
                RawType::List => {
                    Vec::<String>::deserialize(ValueDeserializer::from(value)).map(Raw::List)
                }
                RawType::BoolOrList => match value.get_ref() {
                    DeValue::Boolean(on) => Ok(Raw::Bool(*on)),
                    _ => Vec::<String>::deserialize(ValueDeserializer::from(value)).map(Raw::List),
                },
            }
            .map_err(|e| (e.span().unwrap_or(span.clone()), e.message().to_owned()))?;
            given.push(Given { def, raw, span });
        } else if section.is_empty() && sections().any(|s| s == name) {
            let span = value.span();
            match value.into_inner() {
                DeValue::Table(inner) => collect(name, inner, given)?,
                other => {
                    let e = ValueDeserializer::from(Spanned::new(span.clone(), other))
                        .deserialize_any(Section(name))
                        .err()
                        .map_or_else(String::new, |e| e.message().to_owned());
                    return Err((span, e));
                }
            }
        } else {
            return Err((key.span(), unknown_field(name, &keys)));
        }
    }
    Ok(())
}

/// The keys a section may hold (at the top, sections too), in the
/// table's order.
fn keys_in(section: &str) -> Vec<&'static str> {
    let mut keys = Vec::new();
    for def in SETTINGS {
        let key = match def.key.split_once('.') {
            None if section.is_empty() => def.key,
            Some((table, _)) if section.is_empty() => table,
            Some((table, leaf)) if table == section => leaf,
            _ => continue,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// The sections (`[limits]`), in the table's order.
fn sections() -> impl Iterator<Item = &'static str> {
    SETTINGS
        .iter()
        .filter_map(|d| d.key.rsplit_once('.').map(|(table, _)| table))
}

/// Expects a section's table, and words a mistake as serde did when
/// the section was a struct (`limits` is `FileLimits`).
struct Section<'a>(&'a str);

impl<'de> Visitor<'de> for Section<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct File")?;
        for part in self.0.split('_') {
            let mut chars = part.chars();
            if let Some(first) = chars.next() {
                write!(f, "{}{}", first.to_uppercase(), chars.as_str())?;
            }
        }
        Ok(())
    }

    /// A section given as an array: refused with serde's words for a
    /// struct read from a sequence that is too short. (serde once read a
    /// full-length array as the section's values in order; a section is
    /// a table now.)
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        let fields = SETTINGS
            .iter()
            .filter(|d| d.key.split_once('.').is_some_and(|(t, _)| t == self.0))
            .count();
        Err(A::Error::invalid_length(
            n,
            &format!("{self} with {fields} elements").as_str(),
        ))
    }
}

impl fmt::Display for Section<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expecting(f)
    }
}

/// serde's words for a key that is not a setting.
fn unknown_field(name: &str, expected: &[&str]) -> String {
    let quoted: Vec<String> = expected.iter().map(|k| format!("`{k}`")).collect();
    match quoted.as_slice() {
        [] => format!("unknown field `{name}`, there are no fields"),
        [one] => format!("unknown field `{name}`, expected {one}"),
        [a, b] => format!("unknown field `{name}`, expected {a} or {b}"),
        all => format!("unknown field `{name}`, expected one of {}", all.join(", ")),
    }
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `config file F, line N, key `limits.x`: why`, the key read from the
/// line the error is on and the table header above it.
fn file_error(path: &Path, text: &str, span: &Range<usize>, why: &str) -> anyhow::Error {
    let line = line_of(text, span.start);
    match key_at(text, line) {
        Some(key) => anyhow::anyhow!(
            "config file {}, line {line}, key `{key}`: {why}",
            path.display()
        ),
        None => anyhow::anyhow!("config file {}, line {line}: {why}", path.display()),
    }
}

fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?;
    let (key, _) = here.split_once('=')?;
    let key = key.trim().trim_matches('"');
    let plain = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    if !plain(key) {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(['[', ']']).trim());
    Some(match table {
        Some(table) if plain(table) => format!("{table}.{key}"),
        _ => key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parsed(text: &str) -> anyhow::Result<Settings> {
        let mut settings = Settings::defaults();
        settings.apply_file(Path::new("/c/config.toml"), text)?;
        Ok(settings)
    }

    fn error(text: &str) -> String {
        match parsed(text) {
            Ok(_) => panic!("{text:?} was accepted"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn values_come_with_their_line() {
        let s = parsed("# mine\nmodel = \"qwen\"\n\n[limits]\ntool_timeout_secs = 5\n")
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(s.model.value.as_deref(), Some("qwen"));
        assert_eq!(s.model.source.to_string(), "/c/config.toml:2");
        assert_eq!(s.tool_timeout_secs.value, Some(5));
        assert_eq!(s.tool_timeout_secs.source.to_string(), "/c/config.toml:5");
        assert_eq!(s.limits().timeout, Duration::from_secs(5));
        assert_eq!(s.engine.source, Source::Default);
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        assert_eq!(
            error("model = \"q\"\nmax_rounds = \"x\"\n"),
            "config file /c/config.toml, line 2, key `max_rounds`: invalid type: string \"x\", \
             expected u64"
        );
        let unknown = error("model = \"q\"\nmodle = 3\n");
        assert!(
            unknown.starts_with("config file /c/config.toml, line 2, key `modle`: unknown field"),
            "{unknown}"
        );
        assert_eq!(
            error("[limits]\n\ntool_timeout_secs = 0\n"),
            "config file /c/config.toml, line 3, key `limits.tool_timeout_secs`: 0 is out of \
             range; use 1 to 3600 seconds"
        );
        assert_eq!(
            error("writes = \"yes\"\n"),
            "config file /c/config.toml, line 1, key `writes`: 'yes' is not a write mode; use \
             \"ask\" or \"allow\""
        );
        assert_eq!(
            error("engine = \"  \"\n"),
            "config file /c/config.toml, line 1, key `engine`: it is empty; remove the line or \
             give a value"
        );
        let syntax = error("model = \n");
        assert!(
            syntax.starts_with("config file /c/config.toml, line 1"),
            "{syntax}"
        );
    }
}
