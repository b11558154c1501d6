//! `goat plugins`: the registry of plugin tools; the work is in
//! [`crate::plugins`].

pub use crate::plugins::{PluginsCommand, plugins};
