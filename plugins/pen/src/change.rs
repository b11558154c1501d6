//! Moving and deleting: the two changes to the workspace that are not a
//! file's content.
//!
//! Both are one host call each (`rename-at`, `unlink-file-at`), so each
//! happens completely or not at all. The host's fence decides whether the
//! paths may be changed (protected names such as `.git`, deny rules, a
//! directory with rules inside it); these functions only give the model a
//! clear message first.

use wasip2::filesystem::types::DescriptorType;

use crate::fs::{Workspace, fs_error};
use crate::path::WorkPath;
use crate::{ToolError, ToolResult};

/// What a path is, without following a final symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Nothing there.
    Missing,
    /// A regular file of this many bytes.
    File(u64),
    /// A symbolic link (moved or deleted as the link itself).
    Symlink,
    /// A directory.
    Dir,
    /// A device, pipe or socket.
    Other,
}

impl Workspace {
    /// What is at `path`, the last component not followed.
    pub fn entry(&self, path: &WorkPath) -> ToolResult<Entry> {
        let stat = match self.lstat(path) {
            Ok(stat) => stat,
            Err(ToolError::NotFound(_)) => return Ok(Entry::Missing),
            Err(e) => return Err(e),
        };
        Ok(match stat.type_ {
            DescriptorType::RegularFile => Entry::File(stat.size),
            DescriptorType::SymbolicLink => Entry::Symlink,
            DescriptorType::Directory => Entry::Dir,
            _ => Entry::Other,
        })
    }

    /// Renames `from` to `to`; `to`'s parent must exist. Replaces an
    /// existing file at `to`: callers check first.
    pub fn rename(&self, from: &WorkPath, to: &WorkPath) -> ToolResult<()> {
        self.require_writable(from)?;
        self.root
            .rename_at(from.as_str(), &self.root, to.as_str())
            .map_err(|e| match e {
                wasip2::filesystem::types::ErrorCode::NoEntry => fs_error(e, from, "move"),
                _ => fs_error(e, to, &format!("move '{from}' to")),
            })
    }

    /// Removes the directory `path` if it is empty, quietly: used to undo
    /// directories made for a change that did not happen.
    pub fn remove_empty_dir(&self, path: &WorkPath) {
        let _ = self.root.remove_directory_at(path.as_str());
    }

    /// Removes the file (or symbolic link) at `path`.
    pub fn unlink(&self, path: &WorkPath) -> ToolResult<()> {
        self.require_writable(path)?;
        self.root
            .unlink_file_at(path.as_str())
            .map_err(|e| fs_error(e, path, "delete"))
    }
}
