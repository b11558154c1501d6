//! The hooks the person added: [`goat_state::paths::HOOKS_FILE`] beside the
//! store, read and written as the MCP server list is (a private regular
//! file, written whole or not at all).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::pin::Pins;

/// A hook's timeout when none is given: a policy answer should be quick.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// The longest timeout a hook may have (Claude Code's default).
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// The most the file may hold.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One hook, as the person added it and last trusted it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// Its name, as `goat hooks` commands take it.
    pub name: String,
    /// When it runs.
    pub event: Event,
    /// Which tools it runs for (`None`: every one).
    pub matcher: Option<String>,
    /// The program and its arguments, the program by its absolute path
    /// and every argument that named a file as an absolute path; empty
    /// for a component hook.
    pub argv: Vec<String>,
    /// A component hook's file, absolute (`None`: a command hook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<PathBuf>,
    /// Its wall-clock limit.
    pub timeout_secs: u64,
    /// What the person trusted: the definition's hash and every file's.
    pub pins: Pins,
}

/// Why `name` cannot name a hook, if it cannot.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not a hook name: use 1 to 64 letters, digits, '-' and '_'",
            name.escape_default()
        ))
    }
}

/// The file and what it holds.
#[derive(Debug)]
pub struct Registry {
    path: PathBuf,
    /// The hooks, in the order they were added (and run).
    pub hooks: Vec<HookEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    hooks: Vec<HookEntry>,
}

/// A hooks file that could not be read or written. Either way no hook
/// runs from it: a session refuses to start rather than run without the
/// hooks the person added.
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
    /// The file is not what GOAT writes, or is where others may write.
    #[error(
        "{path} is not a GOAT hooks file GOAT can trust ({why}); fix it or move it away (the \
         hooks in it are then forgotten)"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

impl HookEntry {
    /// What it runs.
    pub fn runs(&self) -> crate::pin::Runs<'_> {
        match &self.component {
            Some(path) => crate::pin::Runs::Component(path),
            None => crate::pin::Runs::Command(&self.argv),
        }
    }
}

impl Registry {
    /// Reads `path`; no file is no hook.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let invalid = |why: String| RegistryError::Invalid {
            path: path.to_path_buf(),
            why,
        };
        let Some(bytes) = goat_state::fs::read_private_list(path, MAX_FILE_BYTES)
            .map_err(|e| invalid(e.to_string()))?
        else {
            return Ok(Self {
                path: path.to_path_buf(),
                hooks: Vec::new(),
            });
        };
        let file: File = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        if file.version != 1 {
            return Err(invalid(format!("format version {} is not 1", file.version)));
        }
        for hook in &file.hooks {
            check_name(&hook.name).map_err(&invalid)?;
            if hook.argv.is_empty() == hook.component.is_none() {
                return Err(invalid(format!(
                    "hook '{}' must run either a command or a component",
                    hook.name
                )));
            }
            if hook.timeout_secs == 0 || hook.timeout_secs > MAX_TIMEOUT_SECS {
                return Err(invalid(format!(
                    "hook '{}' has a timeout of {} s, outside 1 to {MAX_TIMEOUT_SECS}",
                    hook.name, hook.timeout_secs
                )));
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            hooks: file.hooks,
        })
    }

    /// Writes the list, whole or not at all (mode 0600, in a private
    /// directory).
    pub fn save(&self) -> Result<(), RegistryError> {
        let io_error = |source| RegistryError::Io {
            path: self.path.clone(),
            source,
        };
        let file = File {
            version: 1,
            hooks: self.hooks.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| io_error(e.into()))?;
        bytes.push(b'\n');
        goat_state::fs::write_private_list(&self.path, &bytes).map_err(|e| match e {
            goat_state::fs::ListWriteError::Io(source) => io_error(source),
            goat_state::fs::ListWriteError::Unsafe(why) => RegistryError::Invalid {
                path: self.path.clone(),
                why,
            },
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hook called `name`.
    pub fn get(&self, name: &str) -> Option<&HookEntry> {
        self.hooks.iter().find(|h| h.name == name)
    }

    /// The hook called `name`, to change.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut HookEntry> {
        self.hooks.iter_mut().find(|h| h.name == name)
    }
}
