//! The MCP servers the person added, and the tool definitions they
//! trusted: one JSON file in GOAT's host state (`mcp.json` beside the
//! store), never in a workspace, written whole or not at all.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The longest server name: `NAME__TOOL` must fit OpenAI's 64.
pub const MAX_SERVER_NAME: usize = 24;

/// The default wall-clock limit for starting a server and for each call.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The most a call or a start may be given.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// One server, as added.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerEntry {
    /// Its name: the `NAME` of `NAME__TOOL`.
    pub name: String,
    /// The program and its arguments (stdio); empty for a server at a URL.
    #[serde(default)]
    pub command: Vec<String>,
    /// A Streamable HTTP server's URL (`https`, or `http` on loopback).
    #[serde(default)]
    pub url: Option<String>,
    /// The variable of GOAT's environment holding its bearer token (read
    /// when GOAT connects, never stored).
    #[serde(default)]
    pub bearer_env: Option<String>,
    /// Names of the person's environment variables it gets.
    #[serde(default)]
    pub env: Vec<String>,
    /// Host directories it may read besides the system and toolchains.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// Whether it may write the workspace.
    #[serde(default)]
    pub writes: bool,
    /// Whether it has the network.
    #[serde(default)]
    pub network: bool,
    /// The only destinations it may reach, through GOAT's proxy
    /// (`commands.network`'s entries: `host`, `host:port`, `*.domain`);
    /// empty: none, unless `network`.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Seconds it may take to start, and to answer each call.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// When it was added (unix seconds).
    pub added_at: i64,
    /// What the person trusted, once they did.
    #[serde(default)]
    pub trusted: Option<Trusted>,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// The definitions the person trusted, pinned by hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trusted {
    /// When (unix seconds).
    pub at: i64,
    /// Each tool offered then and usable.
    pub tools: Vec<PinnedTool>,
}

/// One tool's definition as trusted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedTool {
    /// The server's name for it.
    pub name: String,
    /// Its description, raw (escaped whenever shown).
    pub description: String,
    /// Its arguments' JSON Schema.
    pub input_schema: Value,
    /// Its result's JSON Schema, if it declares one.
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// [`definition_hash`] of the above.
    pub sha256: String,
}

impl PinnedTool {
    /// Pins a definition.
    pub fn new(
        name: &str,
        description: &str,
        input_schema: Value,
        output_schema: Option<Value>,
    ) -> Self {
        let sha256 = definition_hash(name, description, &input_schema, output_schema.as_ref());
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema,
            output_schema,
            sha256,
        }
    }
}

/// The sha256 of a tool's name, description and schemas, over a canonical
/// JSON spelling (object keys sorted at every depth), so the order a
/// server writes its keys in does not count as a change.
pub fn definition_hash(
    name: &str,
    description: &str,
    input_schema: &Value,
    output_schema: Option<&Value>,
) -> String {
    let definition = serde_json::json!({
        "name": name,
        "description": description,
        "inputSchema": input_schema,
        "outputSchema": output_schema,
    });
    let mut canonical = String::new();
    write_canonical(&definition, &mut canonical);
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Why a server's name is refused, if it is.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.contains("__")
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{}' cannot name an MCP server: use up to {MAX_SERVER_NAME} lowercase letters, \
             digits and single underscores, starting with a letter",
            name.escape_default()
        ))
    }
}

/// The name the model calls a server's tool by, or why it has none: an
/// engine takes `[a-zA-Z0-9_-]{1,64}` only.
pub fn exposed_name(server: &str, tool: &str) -> Result<String, String> {
    let name = format!("{server}__{tool}");
    let usable = !tool.is_empty()
        && name.len() <= 64
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if usable {
        Ok(name)
    } else {
        Err(format!(
            "the tool name '{}' cannot be offered to a model (only letters, digits, '_' and '-', \
             and {} characters at most for the whole name '{server}__TOOL')",
            tool.escape_default(),
            64
        ))
    }
}

/// Why `url` is refused as an MCP server's, if it is: `https`, or
/// plain `http` only to this machine (loopback), where nothing on the way
/// can read the token.
pub fn check_url(url: &str) -> Result<(), String> {
    let shown = url.escape_default();
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("'{shown}' is not a URL (give https://HOST/PATH)"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') || url.chars().any(char::is_whitespace) {
        return Err(format!(
            "'{shown}' is not a URL GOAT connects to (no host, or a user in it)"
        ));
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    match scheme {
        "https" => Ok(()),
        "http" if matches!(host, "127.0.0.1" | "localhost" | "::1") => Ok(()),
        "http" => Err(format!(
            "'{shown}' is plain http to another machine: anything on the way could read the \
             calls and the token; use https (plain http is for 127.0.0.1, ::1 and localhost)"
        )),
        _ => Err(format!("'{shown}' is not an http or https URL")),
    }
}

/// The file and what it holds.
#[derive(Debug)]
pub struct Registry {
    path: PathBuf,
    /// The servers, in the order they were added.
    pub servers: Vec<ServerEntry>,
}

/// What the file holds.
#[derive(Serialize, Deserialize)]
struct File {
    /// The file's format.
    version: u32,
    servers: Vec<ServerEntry>,
}

/// A registry that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file would be where others may write.
    #[error("{path} was not written: {why}; keep GOAT's store (--db) in a directory of your own")]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The file is not what GOAT writes.
    #[error(
        "{path} is not a GOAT MCP server list ({why}); fix it or move it away (the servers in \
         it are then forgotten)"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

/// The most the file may hold: a server list, not a dump.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

impl Registry {
    /// Reads `path`; no file is an empty list.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let io_error = |source| RegistryError::Io {
            path: path.to_path_buf(),
            source,
        };
        let invalid = |why: String| RegistryError::Invalid {
            path: path.to_path_buf(),
            why,
        };
        let bytes = match goat_state::fs::read_private_list(path, MAX_FILE_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    servers: Vec::new(),
                });
            }
            Err(goat_state::fs::ListReadError::Io(source)) => return Err(io_error(source)),
            Err(e) => return Err(invalid(e.to_string())),
        };
        let parsed: File = serde_json::from_slice(&bytes).map_err(|e| RegistryError::Invalid {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        if parsed.version != 1 {
            return Err(RegistryError::Invalid {
                path: path.to_path_buf(),
                why: format!("format version {} is not 1", parsed.version),
            });
        }
        for server in &parsed.servers {
            check_name(&server.name).map_err(|why| RegistryError::Invalid {
                path: path.to_path_buf(),
                why,
            })?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            servers: parsed.servers,
        })
    }

    /// Writes the list, whole or not at all (mode 0600).
    pub fn save(&self) -> Result<(), RegistryError> {
        let io_error = |source| RegistryError::Io {
            path: self.path.clone(),
            source,
        };
        let file = File {
            version: 1,
            servers: self.servers.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| io_error(e.into()))?;
        bytes.push(b'\n');
        goat_state::fs::write_private_list(&self.path, &bytes).map_err(|e| match e {
            goat_state::fs::ListWriteError::Io(source) => io_error(source),
            goat_state::fs::ListWriteError::Unsafe(why) => RegistryError::Unsafe {
                path: self.path.clone(),
                why,
            },
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The server called `name`.
    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The server called `name`, to change.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut ServerEntry> {
        self.servers.iter_mut().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_ignores_key_order_and_sees_every_change() {
        let a: Value =
            serde_json::from_str(r#"{"type":"object","properties":{"x":{"type":"string"}}}"#)
                .unwrap_or_default();
        let b: Value =
            serde_json::from_str(r#"{"properties":{"x":{"type":"string"}},"type":"object"}"#)
                .unwrap_or_default();
        let c: Value =
            serde_json::from_str(r#"{"properties":{"x":{"type":"number"}},"type":"object"}"#)
                .unwrap_or_default();
        assert_eq!(
            definition_hash("t", "d", &a, None),
            definition_hash("t", "d", &b, None)
        );
        assert_ne!(
            definition_hash("t", "d", &a, None),
            definition_hash("t", "d", &c, None)
        );
        assert_ne!(
            definition_hash("t", "d", &a, None),
            definition_hash("t", "d ", &a, None)
        );
        assert_ne!(
            definition_hash("t", "d", &a, None),
            definition_hash("u", "d", &a, None)
        );
        assert_ne!(
            definition_hash("t", "d", &a, None),
            definition_hash("t", "d", &a, Some(&c))
        );
    }

    #[test]
    fn names_table() {
        for ok in ["github", "docs2", "my_server"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Git",
            "a__b",
            "a_",
            "2x",
            "a-b",
            "a.b",
            "abcdefghijklmnopqrstuvwxy",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            exposed_name("s", "get-sum").ok().as_deref(),
            Some("s__get-sum")
        );
        assert!(exposed_name("s", "bad name").is_err());
        assert!(exposed_name("s", "a.b").is_err());
        assert!(exposed_name("s", &"x".repeat(62)).is_err());
        for ok in [
            "https://mcp.example.com/mcp",
            "http://127.0.0.1:8000/mcp",
            "http://[::1]:9/x",
            "http://localhost/",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com/mcp",
            "ftp://x/",
            "mcp.example.com",
            "https://u:p@h/",
            "http://127.0.0.1.evil.com/",
            "https:///x",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
