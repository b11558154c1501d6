//! What a view treats apart inside the workspace, found by one walk:
//! version-control metadata (bound read-only), what a rule hides (covered
//! by an empty file or directory), and a hidden file's other names (hard
//! links, covered too). Commands and MCP servers start their views from it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::fs::WorkspaceRules;
use crate::limits::MAX_WALK_ENTRIES;
use crate::run::CommandError;

/// Directories inside the workspace a view treats apart: existing
/// version-control metadata, and any directory git would take for a
/// repository (`HEAD`, `objects`, `refs`), bound read-only; what a rule
/// hides, and (when a rule could hide anything) every name no rule can be
/// asked about, covered by an empty one.
pub(crate) fn special_paths(
    workspace: &Path,
    rules: &dyn WorkspaceRules,
) -> Result<SpecialPaths, CommandError> {
    let mut read_only = Vec::new();
    let mut hidden = Vec::new();
    let mut budget = MAX_WALK_ENTRIES;
    let mut stack = vec![(workspace.to_path_buf(), String::new())];
    let mut complete = true;
    let hides = rules.hides_anything();
    // A hard link is its file under another name: the files a rule hides
    // that have more than one name, and the visible files that do, so
    // that a visible name of a hidden file is covered too.
    let mut hidden_ids: HashSet<(u64, u64)> = HashSet::new();
    let mut hidden_dirs: Vec<PathBuf> = Vec::new();
    let mut linked: Vec<(String, (u64, u64))> = Vec::new();
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
        if !rel.is_empty()
            && crate::inspect::looks_like_git_dir(entries.iter().map(|e| e.file_name()))
        {
            read_only.push(rel.clone());
            continue;
        }
        for entry in entries {
            if budget == 0 {
                complete = false;
                break;
            }
            budget -= 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // A symbolic link is never covered: a bind mount onto it would
            // follow it and cover what it points to (a program of the
            // view's, say) in its place. What it reaches is governed where
            // that is: a hidden target in the workspace is covered by its
            // own name, and the view holds nothing else of the host's that a
            // command may not read.
            if kind.is_symlink() {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                if hides {
                    let rel_path = Path::new(&rel).join(entry.file_name());
                    hidden.push((rel_path, kind.is_dir()));
                }
                continue;
            };
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if !rules.visible(&path) {
                if kind.is_dir() {
                    hidden_dirs.push(entry.path());
                } else if kind.is_file()
                    && let Some(id) = linked_file(&entry)
                {
                    hidden_ids.insert(id);
                }
                hidden.push((PathBuf::from(&path), kind.is_dir()));
                continue;
            }
            if hides
                && kind.is_file()
                && let Some(id) = linked_file(&entry)
            {
                linked.push((path.clone(), id));
            }
            if kind.is_dir() {
                if rules.is_protected_name(&name) {
                    read_only.push(path);
                } else {
                    stack.push((entry.path(), path));
                }
            }
        }
    }
    if hides && !linked.is_empty() {
        // Below a hidden directory, every file is hidden.
        while let Some(dir) = hidden_dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if budget == 0 {
                    complete = false;
                    break;
                }
                budget -= 1;
                if entry.file_type().is_ok_and(|k| k.is_dir()) {
                    hidden_dirs.push(entry.path());
                } else if let Some(id) = linked_file(&entry) {
                    hidden_ids.insert(id);
                }
            }
        }
        for (path, id) in linked {
            if hidden_ids.contains(&id) {
                hidden.push((PathBuf::from(path), false));
            }
        }
    }
    if !complete && hides {
        return Err(CommandError::Containment(format!(
            "the workspace has more than {MAX_WALK_ENTRIES} entries; the paths a rule hides \
             cannot all be found, so the command does not run"
        )));
    }
    Ok((read_only, hidden))
}

/// The device and inode of `entry` when it is a regular file with more
/// than one name (not following a symbolic link).
fn linked_file(entry: &std::fs::DirEntry) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = entry.metadata().ok()?;
    (meta.is_file() && meta.nlink() > 1).then_some((meta.dev(), meta.ino()))
}

/// What [`special_paths`] finds: directories to bind read-only (relative)
/// and paths to cover, with whether each is a directory.
pub(crate) type SpecialPaths = (Vec<String>, Vec<(PathBuf, bool)>);
