//! What can go wrong in the catalog.

use std::path::PathBuf;

/// A catalog failure. Names and descriptions in it are raw: whoever prints
/// it to a terminal escapes it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The name cannot be a plugin's.
    #[error(
        "'{name}' is not a usable plugin name: use lowercase letters, digits and single \
         underscores, starting with a letter, not ending in '_', at most \
         {max} bytes (e.g. --name my_tool)",
        max = crate::MAX_PLUGIN_NAME_BYTES
    )]
    PluginName {
        /// The name refused.
        name: String,
    },
    /// The plugin would take a name already in use.
    #[error("plugin '{name}' was not added: {why}")]
    Clash {
        /// The plugin's name.
        name: String,
        /// Which name it would take, and from whom.
        why: String,
    },
    /// The plugin registry cannot be opened, read or written; the error
    /// names the file and what to do.
    #[error(transparent)]
    Registry(#[from] goat_state::sqlite::DbError),
    /// The exposed name is not a usable tool name.
    #[error(
        "the exposed name '{exposed}' is not a usable tool name (at most 64 bytes); choose a \
         shorter plugin name with --name"
    )]
    ExposedName {
        /// The name that does not fit.
        exposed: String,
        /// Why the sandbox refused it.
        #[source]
        source: goat_sandbox::SandboxError,
    },
    /// A file of the catalog cannot be read or written.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done (`reading`, `writing`, `creating`).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file that must be a regular file is not.
    #[error("{} is not a regular file (it is {kind}); give a component's .wasm file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead ("a FIFO", "a symlink").
        kind: &'static str,
    },
    /// What the person would grant the plugin is not usable.
    #[error("plugin '{name}' was not added: {why}")]
    Grants {
        /// The plugin's name.
        name: String,
        /// What is wrong, and how to write it instead.
        why: String,
    },
    /// The sandbox refused the component.
    #[error(transparent)]
    Sandbox(#[from] goat_sandbox::SandboxError),
}

impl CatalogError {
    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { what, path, source }
    }
}
