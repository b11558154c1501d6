//! GOAT's tool catalog: which tools exist, under which names, and the one
//! place they are loaded.
//!
//! A tool is either a built-in Pen tool (embedded in the binary) or a
//! plugin: a WASI 0.2 component the person approved with `goat plugins
//! add`, copied into the plugin directory beside the store under its
//! sha256 and recorded in a small SQLite registry there.
//!
//! The key decisions:
//!
//! - **Names are a type.** A plugin's tool is offered as `PLUGIN__TOOL`
//!   ([`ExposedName`]): OpenAI-compatible function names allow only
//!   `[a-zA-Z0-9_-]{1,64}`, so no dots; a [`PluginName`] may not contain
//!   `__` or end in `_`, and tool names start with a letter, so the first
//!   `__` always splits an exposed name, and no built-in (none contains
//!   `__`) can be named. The exposed name is the one the model calls, the
//!   gate judges and the store records.
//! - **Approval is of bytes.** Every load reads the stored file, recomputes
//!   its sha256 from the very bytes it then compiles, and compares it with
//!   the approved one; anything wrong leaves that plugin out with a
//!   [`LoadProblem`] saying why, and every other tool still loads.
//! - **One loader.** [`load_tools`] is the only function that assembles the
//!   tool list the router sees, so `run`, `chat`, `tools` and `probe`
//!   cannot disagree about what is offered.
//!
//! The catalog renders nothing for a terminal: names and descriptions in its
//! errors are raw, and the CLI escapes whatever it prints.

mod error;
mod loader;
mod naming;
mod registry;

pub use error::CatalogError;
pub use loader::{LoadProblem, Loaded, PluginSource, load_tools};
pub use naming::{
    ExposedName, MAX_PLUGIN_NAME_BYTES, PluginName, SEPARATOR, builtin_names, check_clash,
};
pub use registry::{
    Approval, Candidate, FileState, REGISTRY_FILE, Registry, approve, file_state, forget_stored,
    read_capped, spec_file, stored_file,
};
