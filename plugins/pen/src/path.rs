//! Workspace-relative paths as the model writes them.
//!
//! The model gives paths relative to the workspace root. They are resolved
//! by [`goat_workpath::resolve`], the same function the host's permission
//! gate calls, so the gate judges exactly the path a tool opens: normalised
//! lexically (`./a`, `a/`, `sub/../a` are the same path) so results and
//! errors name one canonical form, and obvious escapes refused. This module
//! only words the refusal for the model. It is a courtesy, not the boundary:
//! the host's preopen is what actually keeps every open inside the workspace.

use goat_workpath::{MAX_PATH_BYTES, PathProblem, resolve};

use crate::{ToolError, ToolResult};

/// A normalised path inside the workspace: no leading `/`, no `.` or `..`
/// components, no empty components. The root is `"."`.
pub use goat_workpath::WorkspacePath as WorkPath;

/// Normalises `raw`, refusing anything that cannot name a place inside the
/// workspace.
pub fn parse(raw: &str) -> ToolResult<WorkPath> {
    resolve(raw).map_err(|problem| match problem {
        PathProblem::TooLong { len } => ToolError::InvalidArguments(format!(
            "the path is {len} bytes long, more than the {MAX_PATH_BYTES} bytes a path may \
             have; give a shorter path"
        )),
        PathProblem::Nul => ToolError::InvalidArguments(format!(
            "path {raw:?} contains a NUL byte; give a plain relative path"
        )),
        PathProblem::Absolute => ToolError::PermissionDenied(format!(
            "absolute path '{raw}' is not allowed: paths are relative to the workspace root \
             (for example 'src/main.rs')"
        )),
        PathProblem::Escapes => ToolError::PermissionDenied(format!(
            "path '{raw}' leaves the workspace; only paths inside the workspace root can be used"
        )),
    })
}

/// Parses an optional path argument; absent means the root.
pub fn parse_or_root(raw: Option<&str>) -> ToolResult<WorkPath> {
    raw.map_or_else(|| Ok(WorkPath::root()), parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Which paths resolve to what is goat-workpath's table; here only the
    // words the model reads.
    #[test]
    fn refusals_tell_the_model_what_to_do() {
        let message = |raw: &str| match parse(raw) {
            Err(ToolError::InvalidArguments(m) | ToolError::PermissionDenied(m)) => m,
            other => format!("unexpected {other:?}"),
        };
        assert!(message("a\0b").contains("NUL byte"));
        assert!(message("/etc/passwd").contains("absolute path '/etc/passwd'"));
        assert!(message("../x").contains("path '../x' leaves the workspace"));
        assert!(message(&"a".repeat(MAX_PATH_BYTES + 1)).contains("give a shorter path"));
        assert!(matches!(parse("a\0"), Err(ToolError::InvalidArguments(_))));
        assert!(matches!(parse(".."), Err(ToolError::PermissionDenied(_))));
        assert!(parse_or_root(None).is_ok_and(|p| p.is_root()));
        assert!(parse_or_root(Some("./a/")).is_ok_and(|p| p.as_str() == "a"));
    }
}
