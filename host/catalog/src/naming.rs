//! Plugin names and the names their tools are offered under.

use std::fmt;

use crate::error::CatalogError;
use crate::registry::Approval;

/// Between a plugin's name and its tool's in an exposed name.
pub const SEPARATOR: &str = "__";

/// The longest plugin name: with the separator and a tool name it must fit
/// the 64 bytes OpenAI-compatible function names allow.
pub const MAX_PLUGIN_NAME_BYTES: usize = 32;

/// A usable plugin name: lowercase letters, digits and single underscores,
/// starting with a letter, not ending in `_`, at most
/// [`MAX_PLUGIN_NAME_BYTES`].
///
/// # Security
///
/// Because a plugin name never contains [`SEPARATOR`] nor ends in `_`, the
/// first `__` of an [`ExposedName`] is always the separator: no plugin can
/// take a name that reads as another plugin's tool, or as a built-in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PluginName(String);

impl PluginName {
    /// `name` as a plugin name, or why it cannot be one.
    pub fn new(name: &str) -> Result<Self, CatalogError> {
        let shape = !name.is_empty()
            && name.len() <= MAX_PLUGIN_NAME_BYTES
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !name.contains(SEPARATOR)
            && !name.ends_with('_');
        if shape {
            Ok(Self(name.to_owned()))
        } else {
            Err(CatalogError::PluginName {
                name: name.to_owned(),
            })
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PluginName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name a plugin's tool is offered under: `PLUGIN__TOOL`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExposedName {
    full: String,
    plugin_len: usize,
}

impl ExposedName {
    /// The exposed name of `tool` (the name its spec declares) in `plugin`.
    pub fn new(plugin: &PluginName, tool: &str) -> Self {
        Self {
            full: format!("{plugin}{SEPARATOR}{tool}"),
            plugin_len: plugin.as_str().len(),
        }
    }

    /// The whole name, as the model, the gate and the store see it.
    pub fn as_str(&self) -> &str {
        &self.full
    }

    /// The plugin's part.
    pub fn plugin(&self) -> &str {
        &self.full[..self.plugin_len]
    }

    /// The tool's part: the name its own spec gives.
    pub fn tool(&self) -> &str {
        &self.full[self.plugin_len + SEPARATOR.len()..]
    }
}

impl fmt::Display for ExposedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

/// The Pen tools' names: what no plugin may take.
pub fn builtin_names() -> Vec<&'static str> {
    goat_sandbox::builtin::PEN_TOOLS
        .iter()
        .map(|b| b.name)
        .collect()
}

/// Why a plugin `name` exposing `exposed` cannot be added next to the
/// `builtins` and the plugins already approved, if it cannot.
pub fn check_clash(
    name: &str,
    exposed: &str,
    builtins: &[&str],
    existing: &[Approval],
) -> Result<(), CatalogError> {
    let clash = |why: String| {
        Err(CatalogError::Clash {
            name: name.to_owned(),
            why,
        })
    };
    if builtins.contains(&name) {
        return clash(format!(
            "'{name}' is the name of a built-in tool; choose another plugin name with --name"
        ));
    }
    if builtins.contains(&exposed) {
        return clash(format!(
            "its tool would be named '{exposed}', which is a built-in tool; plugins cannot \
             shadow built-in tools"
        ));
    }
    if let Some(other) = existing.iter().find(|a| a.name == name) {
        return clash(format!(
            "a plugin named '{name}' is already added (tool {}, sha256 {}); remove it first \
             (goat plugins remove {name}) or choose another name with --name",
            other.tool, other.sha256
        ));
    }
    if let Some(other) = existing.iter().find(|a| a.tool == exposed) {
        return clash(format!(
            "its tool would be named '{exposed}', which plugin '{}' already offers; choose \
             another name with --name",
            other.name
        ));
    }
    Ok(())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn plugin_names_cannot_hide_the_separator() {
        for ok in ["wc", "my_tool", "a1", "x_y_z"] {
            assert!(PluginName::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Wc",
            "1wc",
            "a__b",
            "wc_",
            "_wc",
            "w-c",
            "w.c",
            "wc\n",
            "ü",
            "a_very_long_plugin_name_that_is_over_32",
        ] {
            assert!(PluginName::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_first_separator_splits_an_exposed_name_exactly() {
        // Plugin names have no `__` and do not end in `_`; tool names start
        // with a letter. So the first `__` is the separator.
        for (plugin, tool) in [("wc", "count"), ("a_b", "c__d"), ("x", "y_")] {
            let exposed = ExposedName::new(&PluginName::new(plugin).unwrap(), tool);
            let (p, t) = exposed.as_str().split_once(SEPARATOR).unwrap();
            assert_eq!((p, t), (plugin, tool));
            assert_eq!((exposed.plugin(), exposed.tool()), (plugin, tool));
        }
    }

    pub(crate) fn approval(name: &str, tool: &str) -> Approval {
        Approval {
            name: name.to_owned(),
            tool: tool.to_owned(),
            declared_name: String::new(),
            description: String::new(),
            sha256: "00".to_owned(),
            access: "read".to_owned(),
            imports: Vec::new(),
            added_at: 0,
            grants: goat_sandbox::Grants::default(),
        }
    }

    #[test]
    fn clashes_are_refused_as_a_table() {
        let builtins = ["read_file", "write_file"];
        let existing = [approval("wc", "wc__count")];
        let table: [(&str, &str, Option<&str>); 5] = [
            ("lines", "lines__count", None),
            ("read_file", "read_file__x", Some("built-in tool")),
            ("write", "write_file", Some("cannot shadow built-in")),
            ("wc", "wc__other", Some("already added")),
            ("other", "wc__count", Some("plugin 'wc' already offers")),
        ];
        for (name, exposed, want) in table {
            match (check_clash(name, exposed, &builtins, &existing), want) {
                (Ok(()), None) => {}
                (Err(why), Some(want)) => {
                    assert!(why.to_string().contains(want), "{name}: {why}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
