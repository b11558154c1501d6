//! Glob patterns over workspace-relative paths, as the tools take them.
//!
//! The dialect (`*`, `?`, `[abc]`, `{a,b}`, `\`, `**`) and the matcher are
//! [`goat_workpath::Glob`], one copy shared with the host; this module adds
//! the tools' length cap and words a bad pattern for the model.

use crate::{ToolError, ToolResult};

pub use goat_workpath::{Glob, MAX_ALTERNATIVES};

/// Longest pattern accepted.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// Compiles `pattern`, explaining what is wrong with a bad one.
pub fn compile(pattern: &str) -> ToolResult<Glob> {
    let invalid = |why: &dyn std::fmt::Display| {
        ToolError::InvalidArguments(format!("invalid glob pattern '{pattern}': {why}"))
    };
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(invalid(&"the pattern is longer than 1024 bytes"));
    }
    Glob::new(pattern).map_err(|problem| invalid(&problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    // What patterns match is goat-workpath's table; here the tools' cap and
    // the words the model reads.
    #[test]
    fn bad_patterns_say_why() {
        let message = |pattern: &str| match compile(pattern) {
            Err(ToolError::InvalidArguments(m)) => m,
            other => format!("unexpected {other:?}"),
        };
        assert_eq!(
            message("[abc"),
            "invalid glob pattern '[abc': '[' without a matching ']'"
        );
        assert_eq!(message(""), "invalid glob pattern '': the pattern is empty");
        assert!(message(&"a".repeat(MAX_PATTERN_BYTES + 1)).ends_with("longer than 1024 bytes"));
        assert!(compile(&"a".repeat(MAX_PATTERN_BYTES)).is_ok());
        assert!(compile("src/**/*.{rs,toml}").is_ok_and(|g| g.matches("src/a/b.rs")));
    }
}
