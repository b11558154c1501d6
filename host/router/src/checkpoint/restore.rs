//! Undo: check every path of a turn first, then put each back; if any step
//! fails, take back the steps done, so a turn is undone whole or not at
//! all (ADR-0073, ADR-0077).

use std::io;
use std::path::Path;

use goat_command::attempt::Before;
use goat_store::{ChangeRecord, EntryKind};

use super::beneath::{self, Now};

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
    /// A file's earlier bytes were too large to keep: it cannot be put
    /// back by anything but undo's own report of it.
    #[error("'{0}' held bytes too large to keep before it was changed; they cannot be put back")]
    Unkept(String),
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

/// What undo did to one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restored {
    /// It held other bytes (or another link target) before the turn: they
    /// are back.
    Restored(String),
    /// It did not exist before the turn: it is removed.
    Removed(String),
    /// The turn deleted (or moved away) a file: it is back.
    Recreated(String),
    /// A directory's permission bits are back, or a directory the turn
    /// removed is made again.
    Directory(String),
    /// Its earlier bytes were too large to keep (a command's change to a
    /// file over the checkpoint cap): it is left as the turn left it.
    NotKept(String),
    /// A directory the turn made is left in place: something is in it.
    Kept(String),
}

/// What a path is to become.
#[derive(Clone, Debug)]
enum Target {
    Absent,
    File {
        bytes: Vec<u8>,
        mode: Option<u32>,
    },
    Link(Vec<u8>),
    Dir(Option<u32>),
    /// Existed, bytes not kept.
    Unkept,
}

/// What a path must hold now for undo to go ahead.
#[derive(Clone, Debug)]
enum Expected {
    Absent,
    File(String),
    Link(String),
    Dir,
}

/// One path to put back.
#[derive(Debug)]
struct Planned {
    path: String,
    target: Target,
    expected: Expected,
    /// Whether something is there now.
    exists: bool,
    /// The change rows it undoes.
    ids: Vec<i64>,
}

/// A turn's paths, each checked to hold what GOAT left there, ready to be
/// put back.
#[derive(Debug)]
pub struct UndoPlan {
    root: std::path::PathBuf,
    paths: Vec<Planned>,
}

fn target_of(change: &goat_store::FileChange) -> Target {
    match change.before_kind {
        EntryKind::Dir => Target::Dir(change.before_mode),
        EntryKind::Link => change.before.clone().map_or(Target::Absent, Target::Link),
        EntryKind::File => match (&change.before, &change.before_sha256) {
            (Some(bytes), _) => Target::File {
                bytes: bytes.clone(),
                mode: change.before_mode,
            },
            (None, Some(_)) => Target::Unkept,
            (None, None) => Target::Absent,
        },
    }
}

fn expected_of(change: &goat_store::FileChange) -> Expected {
    match (change.after_kind, &change.after_sha256) {
        (EntryKind::Dir, _) if change.after_mode.is_some() => Expected::Dir,
        (EntryKind::Link, Some(sha)) => Expected::Link(sha.clone()),
        (_, Some(sha)) => Expected::File(sha.clone()),
        (_, None) => Expected::Absent,
    }
}

/// What `workspace` held before the changes `records` made (one landing's,
/// none undone, oldest first), for a landing that takes them back in the
/// same change set as it brings its own (`goat attempts land` swapping one
/// attempt for another). Checked as [`plan_undo`] checks a turn: each path
/// must still hold what the changes left; and each file's earlier bytes
/// must have been kept. In path order, parents first.
pub fn befores(
    workspace: &Path,
    records: &[&ChangeRecord],
) -> Result<Vec<(String, Before)>, UndoError> {
    plan_undo(workspace, records)?;
    let mut out: Vec<(String, Before)> = Vec::new();
    for record in records {
        let change = &record.change;
        // The earliest change to a path says what was there before.
        if out.iter().any(|(p, _)| *p == change.path) {
            continue;
        }
        let before = match target_of(change) {
            Target::Absent => Before::Absent,
            Target::File { bytes, mode } => Before::File {
                bytes,
                mode: mode.unwrap_or(0o644),
            },
            Target::Link(to) => Before::Link(to),
            Target::Dir(mode) => Before::Dir(mode.unwrap_or(0o755)),
            Target::Unkept => return Err(UndoError::Unkept(change.path.clone())),
        };
        out.push((change.path.clone(), before));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Checks the changes of one turn (`changes`, oldest first, none undone)
/// against `workspace`: each path's state now must be what the turn's last
/// change to it left, and nothing on the way to it may keep it from being
/// written (a file where a directory should be). All are checked before
/// anything is written; any mismatch refuses the whole turn, naming every
/// path.
pub fn plan_undo(workspace: &Path, changes: &[&ChangeRecord]) -> Result<UndoPlan, UndoError> {
    let workspace_error = |source| UndoError::Workspace {
        path: workspace.to_owned(),
        source,
    };
    let root = workspace.canonicalize().map_err(workspace_error)?;
    let root_fd = beneath::open_root(&root).map_err(workspace_error)?;
    let mut paths: Vec<Planned> = Vec::new();
    for record in changes {
        let change = &record.change;
        if let Some(planned) = paths.iter_mut().find(|p| p.path == change.path) {
            planned.ids.push(record.id);
            planned.expected = expected_of(change);
        } else {
            paths.push(Planned {
                path: change.path.clone(),
                target: target_of(change),
                expected: expected_of(change),
                exists: false,
                ids: vec![record.id],
            });
        }
    }
    let mut changed = Vec::new();
    for planned in &mut paths {
        if goat_gate::is_protected(&planned.path) {
            return Err(UndoError::Protected(planned.path.clone()));
        }
        let now = beneath::now(&root_fd, &planned.path).map_err(workspace_error)?;
        planned.exists = !matches!(now, Now::Absent | Now::Blocked(_));
        let why = match (&now, &planned.expected) {
            (Now::Absent, Expected::Absent) => continue,
            // Nothing there and nothing to put there.
            (Now::Blocked(_), Expected::Absent) if matches!(planned.target, Target::Absent) => {
                continue;
            }
            (Now::Blocked(why), _) => why.clone(),
            (Now::File { sha256 }, Expected::File(want)) if sha256 == want => continue,
            (Now::Link { sha256 }, Expected::Link(want)) if sha256 == want => continue,
            (Now::Dir, Expected::Dir) => continue,
            (Now::Absent, _) => "it was removed".to_owned(),
            (_, Expected::Absent) => "it was created again".to_owned(),
            (Now::File { .. }, Expected::File(_)) => "its content differs".to_owned(),
            (Now::Link { .. }, Expected::Link(_)) => "the link leads elsewhere".to_owned(),
            (Now::File { .. }, _) => "it is now a file".to_owned(),
            (Now::Link { .. }, _) => "it is now a link".to_owned(),
            (Now::Dir, _) => "it is now a directory".to_owned(),
            (Now::Other(what), _) => format!("it is now {what}"),
        };
        changed.push((planned.path.clone(), why));
    }
    if !changed.is_empty() {
        return Err(UndoError::Changed(changed));
    }
    Ok(UndoPlan { root, paths })
}

impl UndoPlan {
    /// Puts every path back, each with an atomic replace (or a removal),
    /// reached through no link. Returns what was done and the change rows
    /// it undid; on an I/O failure, the path it stopped at and why, after
    /// taking back every step already done (so nothing was undone, and
    /// the list is empty).
    pub fn apply(self) -> (Vec<Restored>, Vec<i64>, Option<(String, io::Error)>) {
        let root_fd = match beneath::open_root(&self.root) {
            Ok(fd) => fd,
            Err(e) => return (Vec::new(), Vec::new(), Some((".".to_owned(), e))),
        };
        let mut journal = beneath::Journal::new(&root_fd);
        let mut done = Vec::new();
        let mut ids = Vec::new();
        // Files and links first, parents before children; then
        // directories: removed deepest first, modes set last.
        let mut order: Vec<&Planned> = self.paths.iter().collect();
        order.sort_by(|a, b| a.path.cmp(&b.path));
        let (dirs, files): (Vec<&Planned>, Vec<&Planned>) = order.into_iter().partition(|p| {
            matches!(p.expected, Expected::Dir) || matches!(p.target, Target::Dir(_))
        });
        for planned in files.iter().chain(dirs.iter().rev()) {
            let path = planned.path.as_str();
            let step = match (&planned.target, planned.exists) {
                (Target::File { bytes, mode }, _) => journal.write(path, bytes, *mode).map(|()| {
                    Some(if planned.exists {
                        Restored::Restored(path.to_owned())
                    } else {
                        Restored::Recreated(path.to_owned())
                    })
                }),
                (Target::Link(target), _) => journal.link(path, target).map(|()| {
                    Some(if planned.exists {
                        Restored::Restored(path.to_owned())
                    } else {
                        Restored::Recreated(path.to_owned())
                    })
                }),
                (Target::Dir(mode), _) => journal
                    .directory(path, *mode)
                    .map(|()| Some(Restored::Directory(path.to_owned()))),
                (Target::Absent, true) if matches!(planned.expected, Expected::Dir) => {
                    journal.remove_empty_dir(path).map(|removed| {
                        Some(if removed {
                            Restored::Removed(path.to_owned())
                        } else {
                            Restored::Kept(path.to_owned())
                        })
                    })
                }
                (Target::Absent, true) => journal
                    .remove(path)
                    .map(|()| Some(Restored::Removed(path.to_owned()))),
                (Target::Absent, false) => Ok(None),
                (Target::Unkept, _) => Ok(Some(Restored::NotKept(path.to_owned()))),
            };
            match step {
                Ok(restored) => {
                    if let Some(restored) = restored {
                        if !matches!(restored, Restored::NotKept(_)) {
                            ids.extend(&planned.ids);
                        }
                        done.push(restored);
                    } else {
                        ids.extend(&planned.ids);
                    }
                }
                Err(e) => {
                    journal.rollback();
                    return (Vec::new(), Vec::new(), Some((planned.path.clone(), e)));
                }
            }
        }
        journal.commit();
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
                ..FileChange::default()
            },
            undone_at: None,
            landed: true,
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

    /// Issue 22: a turn wrote `a.txt` and deleted `z/zz.txt`; then `z`
    /// became a regular file. The check sees it, and nothing is restored.
    #[test]
    fn a_file_in_the_way_of_a_restore_refuses_the_whole_turn_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "new").unwrap();
        std::fs::write(dir.path().join("z"), "a file now").unwrap();
        let changes = [
            change(1, "a.txt", Some(b"old"), Some(b"new")),
            change(2, "z/zz.txt", Some(b"kept"), None),
        ];
        let refs: Vec<&ChangeRecord> = changes.iter().collect();
        let err = plan_undo(dir.path(), &refs).unwrap_err();
        assert!(
            matches!(&err, UndoError::Changed(files) if files.iter().any(|(p, _)| p == "z/zz.txt")),
            "{err}"
        );
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"new");
    }

    /// Issue 22: an apply that fails part way puts back what it restored.
    #[test]
    fn an_apply_that_fails_midway_takes_back_what_it_restored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "new").unwrap();
        std::fs::create_dir(dir.path().join("ro")).unwrap();
        let changes = [
            change(1, "a.txt", Some(b"old"), Some(b"new")),
            change(2, "ro/b.txt", Some(b"back"), None),
        ];
        let refs: Vec<&ChangeRecord> = changes.iter().collect();
        let plan = plan_undo(dir.path(), &refs).unwrap();
        // Between the check and the write, the directory becomes
        // unwritable (root is not stopped by modes: make it a mount-free
        // failure instead by replacing the directory with a file).
        std::fs::remove_dir(dir.path().join("ro")).unwrap();
        std::fs::write(dir.path().join("ro"), "in the way").unwrap();
        let (done, ids, stopped) = plan.apply();
        assert!(stopped.is_some());
        assert!(done.is_empty() && ids.is_empty());
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"new");
        // No temporary or backup name is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    /// Issue 22: planted names like the old `.goat-undo.PID.N` block
    /// nothing: the temporary names are random.
    #[test]
    fn planted_temporary_names_do_not_block_undo() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "new").unwrap();
        for n in 0..64 {
            std::fs::write(
                dir.path()
                    .join(format!(".goat-undo.{}.{n}", std::process::id())),
                "planted",
            )
            .unwrap();
        }
        let changes = [change(1, "a.txt", Some(b"old"), Some(b"new"))];
        let refs: Vec<&ChangeRecord> = changes.iter().collect();
        let (_, _, stopped) = plan_undo(dir.path(), &refs).unwrap().apply();
        assert!(stopped.is_none(), "{stopped:?}");
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"old");
    }
}
