//! Shared code of GOAT's Pen file tools.
//!
//! Every Pen tool is its own WASI 0.2 component, built from its own crate, so
//! that each one carries only the code it runs and the host can grant each
//! one exactly the workspace access it declares. What they have in common
//! lives here: the `goat:tool` bindings (generated once, exported by each tool
//! with [`export_tool!`]), strict argument parsing, workspace-relative path
//! handling, directory walking with ripgrep's manners (ignore files, hidden entries)
//! and glob matching.
//!
//! The key decision: the guest checks paths only to give the model a clear
//! message. The boundary itself is the host's: the workspace is the only
//! preopen, and wasmtime-wasi (built on cap-std) refuses any open that
//! resolves outside it, symlinks included. Nothing here is trusted for
//! security; the hostile tests run a guest that skips these checks.

pub mod args;
pub mod change;
pub mod encoding;
pub mod fs;
pub mod glob;
pub mod manners;
pub mod path;
pub mod text;

/// Bindings of the `goat:tool` `file-tool` world, generated from `wit/`.
#[expect(missing_docs, reason = "generated code; the WIT file documents it")]
pub mod bindings {
    wit_bindgen::generate!({
        world: "file-tool",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "export_tool",
        default_bindings_module: "goat_pen::bindings",
        with: {
            "wasi:io/error@0.2.12": wasip2::io::error,
            "wasi:io/poll@0.2.12": wasip2::io::poll,
            "wasi:io/streams@0.2.12": wasip2::io::streams,
            "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
            "wasi:filesystem/types@0.2.12": wasip2::filesystem::types,
            "wasi:filesystem/preopens@0.2.12": wasip2::filesystem::preopens,
        },
    });
}

pub use bindings::export_tool;
pub use bindings::exports::goat::tool::tool::{Access, Guest, ToolError, ToolSpec};

/// Result of a tool call, as the WIT contract types it.
pub type ToolResult<T> = Result<T, ToolError>;

/// Most bytes a tool returns to the model in one result: about 32k tokens,
/// a large share of a local model's context window. Tools stop early and say
/// how to get the rest rather than exceed it.
pub const MAX_OUTPUT_BYTES: usize = 128 * 1024;

/// Longest line a listing tool shows before cutting it, so that one minified
/// file cannot fill a whole result.
pub const MAX_LINE_CHARS: usize = 2000;

/// Builds a [`ToolSpec`] for a tool that takes workspace paths in `path_fields`.
pub fn spec(
    name: &str,
    description: &str,
    parameters: serde_json::Value,
    access: Access,
    path_fields: &[&str],
) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: parameters.to_string(),
        access,
        path_fields: path_fields.iter().map(|f| (*f).to_owned()).collect(),
    }
}
