//! `goat tools`: the tools, listed and run by hand; the work is in
//! [`crate::tools`].

pub use crate::tools::{ToolsCommand, tools};
