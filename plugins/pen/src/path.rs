//! Workspace-relative paths as the model writes them.
//!
//! The model gives paths relative to the workspace root. They are normalised
//! lexically (`./a`, `a/`, `sub/../a` are the same path) so results and errors
//! name one canonical form, and obvious escapes are refused with a message
//! the model can act on. This is a courtesy, not the boundary: the host's
//! preopen is what actually keeps every open inside the workspace.

use crate::{ToolError, ToolResult};

/// A normalised path inside the workspace: no leading `/`, no `.` or `..`
/// components, no empty components. The root is `"."`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WorkPath(String);

impl WorkPath {
    /// The workspace root.
    pub fn root() -> Self {
        Self(".".to_owned())
    }

    /// Normalises `raw`, refusing anything that cannot name a place inside
    /// the workspace.
    pub fn parse(raw: &str) -> ToolResult<Self> {
        if raw.contains('\0') {
            return Err(ToolError::InvalidArguments(format!(
                "path {raw:?} contains a NUL byte; give a plain relative path"
            )));
        }
        if raw.starts_with('/') || raw.starts_with('\\') || has_drive_prefix(raw) {
            return Err(ToolError::PermissionDenied(format!(
                "absolute path '{raw}' is not allowed: paths are relative to the workspace root \
                 (for example 'src/main.rs')"
            )));
        }
        let mut parts: Vec<&str> = Vec::new();
        for part in raw.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(ToolError::PermissionDenied(format!(
                            "path '{raw}' leaves the workspace; only paths inside the workspace \
                             root can be used"
                        )));
                    }
                }
                other => parts.push(other),
            }
        }
        if parts.is_empty() {
            Ok(Self::root())
        } else {
            Ok(Self(parts.join("/")))
        }
    }

    /// Parses an optional path argument; absent means the root.
    pub fn parse_or_root(raw: Option<&str>) -> ToolResult<Self> {
        raw.map_or_else(|| Ok(Self::root()), Self::parse)
    }

    /// The path as WASI `open-at` takes it relative to the preopen.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the workspace root.
    pub fn is_root(&self) -> bool {
        self.0 == "."
    }

    /// `self/name`, for walking.
    pub fn join(&self, name: &str) -> Self {
        if self.is_root() {
            Self(name.to_owned())
        } else {
            Self(format!("{}/{}", self.0, name))
        }
    }

    /// The parent directory and the last component, or `None` for the root.
    pub fn split_last(&self) -> Option<(Self, &str)> {
        if self.is_root() {
            return None;
        }
        Some(match self.0.rsplit_once('/') {
            Some((parent, name)) => (Self(parent.to_owned()), name),
            None => (Self::root(), self.0.as_str()),
        })
    }

    /// This path relative to `base`, when it lies under it.
    pub fn strip_prefix(&self, base: &WorkPath) -> Option<&str> {
        if base.is_root() {
            return Some(&self.0);
        }
        self.0
            .strip_prefix(base.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
    }
}

impl std::fmt::Display for WorkPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn has_drive_prefix(raw: &str) -> bool {
    let b = raw.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equivalent_spellings_normalise_to_one_path() {
        for raw in ["a", "./a", "a/", "sub/../a", "./sub/./../a//"] {
            assert_eq!(
                WorkPath::parse(raw).map(|p| p.0).ok(),
                Some("a".to_owned()),
                "{raw}"
            );
        }
        for raw in ["", ".", "./", "a/.."] {
            assert!(WorkPath::parse(raw).is_ok_and(|p| p.is_root()), "{raw}");
        }
    }

    #[test]
    fn escapes_and_absolute_paths_are_refused() {
        for raw in [
            "..",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "\\x",
            "C:x",
            "a\0b",
        ] {
            assert!(WorkPath::parse(raw).is_err(), "{raw}");
        }
    }
}
