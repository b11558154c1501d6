//! Resolving a raw workspace-relative path.
//!
//! `/` is the only separator, `.` and empty components vanish, `..` removes
//! the previous component, and anything that cannot name a place inside the
//! workspace (absolute, drive-prefixed, NUL, `..` past the root, longer than
//! any path a system can open) is refused. This is a courtesy and a policy
//! input, not the boundary: the host's preopen is what keeps every open
//! inside the workspace.

use std::fmt;

/// Longest path accepted, in bytes.
///
/// Linux's `PATH_MAX` is 4096, so a longer path cannot be opened anyway; the
/// cap also bounds the work of matching a model-supplied string.
pub const MAX_PATH_BYTES: usize = 4096;

/// Why a raw path cannot name a place inside the workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathProblem {
    /// Longer than [`MAX_PATH_BYTES`].
    TooLong {
        /// The path's length in bytes.
        len: usize,
    },
    /// Contains a NUL byte, which no system call can take.
    Nul,
    /// Starts with `/` or `\`, or a drive prefix such as `C:`.
    Absolute,
    /// A `..` climbs above the workspace root.
    Escapes,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong { len } => write!(
                f,
                "the path is {len} bytes long, more than the {MAX_PATH_BYTES} bytes a path may have"
            ),
            Self::Nul => f.write_str("the path contains a NUL byte"),
            Self::Absolute => f.write_str("the path is absolute"),
            Self::Escapes => f.write_str("the path leaves the workspace"),
        }
    }
}

impl std::error::Error for PathProblem {}

/// Resolves `raw` lexically into a path inside the workspace.
///
/// The checks run in a fixed order (length, NUL, absolute, escape), so a
/// path with several problems is always refused for the same one.
pub fn resolve(raw: &str) -> Result<WorkspacePath, PathProblem> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(PathProblem::TooLong { len: raw.len() });
    }
    if raw.contains('\0') {
        return Err(PathProblem::Nul);
    }
    if raw.starts_with('/') || raw.starts_with('\\') || has_drive_prefix(raw) {
        return Err(PathProblem::Absolute);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathProblem::Escapes);
                }
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        Ok(WorkspacePath::root())
    } else {
        Ok(WorkspacePath(parts.join("/")))
    }
}

/// `C:...` is a drive path on Windows; refused so that no tool can be
/// pointed at one.
fn has_drive_prefix(raw: &str) -> bool {
    let b = raw.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// A normalised path inside the workspace: no leading `/`, no `.` or `..`
/// components, no empty components. The root is `"."`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// The workspace root.
    pub fn root() -> Self {
        Self(".".to_owned())
    }

    /// The canonical spelling: components joined by `/`, `.` for the root.
    /// This is also the path as WASI `open-at` takes it relative to the
    /// preopen.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the workspace root.
    pub fn is_root(&self) -> bool {
        self.0 == "."
    }

    /// The components, none for the root.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        let text = if self.is_root() { "" } else { self.0.as_str() };
        text.split('/').filter(|part| !part.is_empty())
    }

    /// `self/name`, for walking; `name` is one directory entry's name.
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

    /// The parent directory's canonical spelling, `None` at the top level
    /// (and for the root).
    pub fn parent(&self) -> Option<&str> {
        self.0.rsplit_once('/').map(|(parent, _)| parent)
    }

    /// This path relative to `base`, when it lies under it.
    pub fn strip_prefix(&self, base: &WorkspacePath) -> Option<&str> {
        if base.is_root() {
            return Some(&self.0);
        }
        self.0
            .strip_prefix(base.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
