//! Undo: check every file of a turn first, then put each back.

use std::io;
use std::path::Path;

use goat_store::ChangeRecord;

use super::beneath::{self, State};

/// Why a turn's files cannot be put back. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UndoError {
    /// Files hold something other than what GOAT left there: someone (or
    /// a later turn, or a command) changed them since.
    #[error("{}", changed_message(.0))]
    Changed(Vec<(String, String)>),
    /// A file is in a protected directory (`.git`, ...), which undo never
    /// writes.
    #[error(
        "'{0}' is in a protected directory, which undo never writes; nothing was restored. \
         Put it back by hand if you need to"
    )]
    Protected(String),
    /// The workspace cannot be opened.
    #[error("cannot open the workspace {path}: {source}")]
    Workspace {
        /// The workspace.
        path: std::path::PathBuf,
        /// Why.
        source: io::Error,
    },
}

fn changed_message(files: &[(String, String)]) -> String {
    let list: Vec<String> = files
        .iter()
        .map(|(path, why)| format!("'{path}' ({why})"))
        .collect();
    format!(
        "{} changed since GOAT wrote {}: {}; nothing was restored, so no one's later work is \
         lost. Undo a later turn first, or put the files back by hand",
        if files.len() == 1 {
            "a file has"
        } else {
            "files have"
        },
        if files.len() == 1 { "it" } else { "them" },
        list.join(", ")
    )
}

/// What undo did to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restored {
    /// It held other bytes before the turn: they are back.
    Restored(String),
    /// It did not exist before the turn: it is removed.
    Removed(String),
    /// The turn deleted (or moved away) a file: it is back.
    Recreated(String),
}

/// One file to put back.
#[derive(Debug)]
struct Planned {
    path: String,
    /// What it held before the turn's first change to it.
    before: Option<Vec<u8>>,
    /// Its permission bits then, when known.
    before_mode: Option<u32>,
    /// Whether it exists now.
    exists: bool,
    /// The change rows it undoes.
    ids: Vec<i64>,
}

/// A turn's files, each checked to hold what GOAT left there, ready to be
/// put back.
#[derive(Debug)]
pub struct UndoPlan {
    root: std::path::PathBuf,
    files: Vec<Planned>,
}

/// Checks the changes of one turn (`changes`, oldest first, none undone)
/// against the files in `workspace`: each path's state now must be what
/// the turn's last change to it left. All are checked before anything is
/// written; any mismatch refuses the whole turn, naming every file.
pub fn plan_undo(workspace: &Path, changes: &[&ChangeRecord]) -> Result<UndoPlan, UndoError> {
    let workspace_error = |source| UndoError::Workspace {
        path: workspace.to_owned(),
        source,
    };
    let root = workspace.canonicalize().map_err(workspace_error)?;
    let root_fd = beneath::open_root(&root).map_err(workspace_error)?;
    let mut files: Vec<Planned> = Vec::new();
    let mut last_after: Vec<Option<String>> = Vec::new();
    for record in changes {
        let change = &record.change;
        if let Some(i) = files.iter().position(|f| f.path == change.path) {
            if let (Some(file), Some(after)) = (files.get_mut(i), last_after.get_mut(i)) {
                file.ids.push(record.id);
                after.clone_from(&change.after_sha256);
            }
        } else {
            files.push(Planned {
                path: change.path.clone(),
                before: change.before.clone(),
                before_mode: change.before_mode,
                exists: false,
                ids: vec![record.id],
            });
            last_after.push(change.after_sha256.clone());
        }
    }
    let mut changed = Vec::new();
    for (file, expected) in files.iter_mut().zip(&last_after) {
        if goat_gate::is_protected(&file.path) {
            return Err(UndoError::Protected(file.path.clone()));
        }
        let now = beneath::state(&root_fd, &file.path).map_err(workspace_error)?;
        file.exists = !matches!(now, State::Absent);
        let why = match (&now, expected) {
            (State::Absent, None) => continue,
            (State::File { sha256, .. }, Some(want)) if sha256 == want => continue,
            (State::Absent, Some(_)) => "it was removed".to_owned(),
            (State::File { .. }, None) => "it was created again".to_owned(),
            (State::File { .. }, Some(_)) => "its content differs".to_owned(),
            (State::Other(what), _) => format!("it is now {what}"),
        };
        changed.push((file.path.clone(), why));
    }
    if !changed.is_empty() {
        return Err(UndoError::Changed(changed));
    }
    Ok(UndoPlan { root, files })
}

impl UndoPlan {
    /// Puts every file back, each with an atomic replace (or a removal),
    /// reached through no link. Returns what was done and the change rows
    /// it undid; on an I/O failure, also the file it stopped at and why
    /// (the files before it are back, the rest untouched).
    pub fn apply(self) -> (Vec<Restored>, Vec<i64>, Option<(String, io::Error)>) {
        let mut done = Vec::new();
        let mut ids = Vec::new();
        let root_fd = match beneath::open_root(&self.root) {
            Ok(fd) => fd,
            Err(e) => return (done, ids, Some((".".to_owned(), e))),
        };
        for file in self.files {
            let result = match &file.before {
                Some(bytes) => beneath::write_atomic(&root_fd, &file.path, bytes, file.before_mode)
                    .map(|()| {
                        if file.exists {
                            Restored::Restored(file.path.clone())
                        } else {
                            Restored::Recreated(file.path.clone())
                        }
                    }),
                None if file.exists => beneath::remove(&root_fd, &file.path)
                    .map(|()| Restored::Removed(file.path.clone())),
                None => {
                    ids.extend(file.ids);
                    continue;
                }
            };
            match result {
                Ok(restored) => {
                    done.push(restored);
                    ids.extend(file.ids);
                }
                Err(e) => return (done, ids, Some((file.path, e))),
            }
        }
        (done, ids, None)
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]

    use goat_store::FileChange;

    use super::*;

    fn change(id: i64, path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> ChangeRecord {
        ChangeRecord {
            id,
            turn_id: 1,
            call_row: id,
            tool: "write_file".into(),
            change: FileChange {
                path: path.into(),
                before: before.map(<[u8]>::to_vec),
                before_mode: None,
                after_sha256: after.map(beneath::sha256_hex),
                after: after.map(<[u8]>::to_vec),
            },
            undone_at: None,
        }
    }

    #[test]
    fn a_protected_path_is_never_written_and_nothing_else_is_either() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "new").unwrap();
        std::fs::write(dir.path().join(".git/config"), "new").unwrap();
        let changes = [
            change(1, "a.txt", Some(b"old"), Some(b"new")),
            change(2, ".git/config", Some(b"[core]"), Some(b"new")),
        ];
        let refs: Vec<&ChangeRecord> = changes.iter().collect();
        assert!(matches!(
            plan_undo(dir.path(), &refs),
            Err(UndoError::Protected(p)) if p == ".git/config"
        ));
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"new");
    }

    #[test]
    fn several_changes_to_one_file_are_undone_to_the_first_before() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "three").unwrap();
        let changes = [
            change(1, "a.txt", Some(b"one"), Some(b"two")),
            change(2, "a.txt", Some(b"two"), Some(b"three")),
        ];
        let refs: Vec<&ChangeRecord> = changes.iter().collect();
        let (done, ids, stopped) = plan_undo(dir.path(), &refs).unwrap().apply();
        assert!(stopped.is_none());
        assert_eq!(done, [Restored::Restored("a.txt".into())]);
        assert_eq!(ids, [1, 2]);
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"one");
    }
}
