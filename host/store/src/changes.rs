//! Checkpoints (ADR-0073): what each file a Pen tool changed held before
//! and after the call, written with the call's outcome, and when `goat
//! undo` put it back.

use rusqlite::params;

use crate::store::now;
use crate::{Store, StoreError};

/// What kind of entry a path held, before or after a change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (or nothing, when the bytes and hash are `None`).
    #[default]
    File,
    /// A symbolic link: its target is the bytes.
    Link,
    /// A directory: only its permission bits are recorded.
    Dir,
}

impl EntryKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Link => "link",
            Self::Dir => "dir",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "link" => Self::Link,
            "dir" => Self::Dir,
            _ => Self::File,
        }
    }
}

/// One file a successful call changed: its workspace path (as it is on
/// disk, links inside the workspace resolved) and what it held before and
/// after.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChange {
    /// The path inside the workspace, `/`-separated.
    pub path: String,
    /// The bytes before the call; `None`: the file did not exist, or (with
    /// [`before_sha256`](Self::before_sha256) set) was too large to keep.
    pub before: Option<Vec<u8>>,
    /// What it was before (a link's target is in `before`; a directory has
    /// no bytes, only `before_mode`).
    pub before_kind: EntryKind,
    /// The sha256 of a file whose bytes were not kept; `None` otherwise.
    pub before_sha256: Option<String>,
    /// What it is after.
    pub after_kind: EntryKind,
    /// Its permission bits after (`0o7777`), a file's or a directory's;
    /// `None` when it does not exist after, for a link, and for a file an
    /// older GOAT recorded (it kept only a directory's). What `sessions
    /// diff --format patch` reads a mode change from.
    pub after_mode: Option<u32>,
    /// Its permission bits before the call (`0o7777`), which undo gives
    /// back (an executable script deleted and restored stays executable);
    /// `None` when it did not exist.
    pub before_mode: Option<u32>,
    /// The sha256 (hex) of the bytes after the call; `None`: the file does
    /// not exist after it. What undo compares the file with, to tell a
    /// change someone made since.
    pub after_sha256: Option<String>,
    /// The bytes after the call, kept for `sessions diff` when within the
    /// checkpoint cap; `None` when absent or larger.
    pub after: Option<Vec<u8>>,
}

/// A stored [`FileChange`], with where it belongs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeRecord {
    /// Row id.
    pub id: i64,
    /// The turn whose call made it.
    pub turn_id: i64,
    /// The call's row (`CallRecord::id`).
    pub call_row: i64,
    /// The tool that made it.
    pub tool: String,
    /// The change.
    pub change: FileChange,
    /// When undo put the file back (unix seconds); `None` while it stands.
    pub undone_at: Option<i64>,
    /// Whether it landed. `false` only for a command's change written
    /// before landing whose call never got its outcome (GOAT stopped in
    /// between): the file holds either its state before or after, and
    /// `goat sessions show` says which.
    pub landed: bool,
}

impl FileChange {
    /// Whether the path existed before.
    pub fn existed_before(&self) -> bool {
        self.before.is_some()
            || self.before_sha256.is_some()
            || self.before_kind == EntryKind::Dir && self.before_mode.is_some()
    }

    /// Whether the path exists after.
    pub fn exists_after(&self) -> bool {
        self.after_sha256.is_some()
            || self.after_kind == EntryKind::Dir && self.after_mode.is_some()
    }
}

impl Store {
    /// Every file change recorded in session `id`, oldest first.
    pub fn file_changes(&self, session_id: &str) -> Result<Vec<ChangeRecord>, StoreError> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT f.id, r.turn_id, c.tool, f.path, f.before, f.after_sha256, f.after, f.undone_at,
                    f.call_row, f.before_mode, f.before_kind, f.after_kind, f.before_sha256,
                    f.after_mode, f.landed
             FROM file_changes f
             JOIN tool_calls c ON f.call_row = c.id
             JOIN rounds r ON c.round_id = r.id
             JOIN turns t ON r.turn_id = t.id
             WHERE t.session_id = ?1 ORDER BY f.id",
        )?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok(ChangeRecord {
                    id: r.get(0)?,
                    turn_id: r.get(1)?,
                    tool: r.get(2)?,
                    change: FileChange {
                        path: r.get(3)?,
                        before: r.get(4)?,
                        before_mode: r.get(9)?,
                        before_kind: EntryKind::parse(&r.get::<_, String>(10)?),
                        after_kind: EntryKind::parse(&r.get::<_, String>(11)?),
                        before_sha256: r.get(12)?,
                        after_mode: r.get(13)?,
                        after_sha256: r.get(5)?,
                        after: r.get(6)?,
                    },
                    undone_at: r.get(7)?,
                    call_row: r.get(8)?,
                    landed: r.get(14)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Marks the changes `ids` undone, in one transaction, so a second undo
    /// does not put them back twice. Only changes still standing are
    /// marked; returns how many were.
    pub fn mark_undone(&mut self, ids: &[i64]) -> Result<usize, StoreError> {
        let tx = self.write()?;
        let at = now();
        let mut marked = 0;
        for id in ids {
            marked += tx
                .prepare_cached(
                    "UPDATE file_changes SET undone_at = ?2 WHERE id = ?1 AND undone_at IS NULL",
                )?
                .execute(params![id, at])?;
        }
        tx.commit()?;
        Ok(marked)
    }
}

impl Store {
    /// Writes a command's change set before it lands (`landed = 0`), in
    /// one transaction; [`Store::finish_call`] marks it landed with the
    /// call's outcome, [`Store::drop_journal`] removes it when the landing
    /// was refused or taken back.
    pub fn journal_changes(
        &mut self,
        call_row: i64,
        changes: &[FileChange],
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        insert(&tx, call_row, changes, false)?;
        tx.commit()?;
        Ok(())
    }

    /// Marks a call's changes written before landing as landed.
    pub fn mark_landed(&mut self, call_row: i64) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE file_changes SET landed = 1 WHERE call_row = ?1")?
            .execute([call_row])?;
        tx.commit()?;
        Ok(())
    }

    /// Removes a call's changes that have not landed.
    pub fn drop_journal(&mut self, call_row: i64) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("DELETE FROM file_changes WHERE call_row = ?1 AND landed = 0")?
            .execute([call_row])?;
        tx.commit()?;
        Ok(())
    }
}

/// Inserts a call's changes inside the transaction recording its outcome
/// (`landed`), or before a command's set lands (not yet).
pub(crate) fn insert(
    tx: &rusqlite::Transaction<'_>,
    call_row: i64,
    changes: &[FileChange],
    landed: bool,
) -> Result<(), StoreError> {
    for change in changes {
        tx.prepare_cached(
            "INSERT INTO file_changes (call_row, path, before, after_sha256, after, before_mode,
                 before_kind, after_kind, before_sha256, after_mode, landed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            call_row,
            change.path,
            change.before,
            change.after_sha256,
            change.after,
            change.before_mode,
            change.before_kind.as_str(),
            change.after_kind.as_str(),
            change.before_sha256,
            change.after_mode,
            landed
        ])?;
    }
    Ok(())
}
