//! Checkpoints (ADR-0073): what each file a Pen tool changed held before
//! and after the call, written with the call's outcome, and when `goat
//! undo` put it back.

use rusqlite::params;

use crate::store::now;
use crate::{Store, StoreError};

/// One file a successful call changed: its workspace path (as it is on
/// disk, links inside the workspace resolved) and what it held before and
/// after.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChange {
    /// The path inside the workspace, `/`-separated.
    pub path: String,
    /// The bytes before the call; `None`: the file did not exist.
    pub before: Option<Vec<u8>>,
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
}

impl Store {
    /// Every file change recorded in session `id`, oldest first.
    pub fn file_changes(&self, session_id: &str) -> Result<Vec<ChangeRecord>, StoreError> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT f.id, r.turn_id, c.tool, f.path, f.before, f.after_sha256, f.after, f.undone_at,
                    f.call_row, f.before_mode
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
                        after_sha256: r.get(5)?,
                        after: r.get(6)?,
                    },
                    undone_at: r.get(7)?,
                    call_row: r.get(8)?,
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

/// Inserts a call's changes inside the transaction recording its outcome.
pub(crate) fn insert(
    tx: &rusqlite::Transaction<'_>,
    call_row: i64,
    changes: &[FileChange],
) -> Result<(), StoreError> {
    for change in changes {
        tx.prepare_cached(
            "INSERT INTO file_changes (call_row, path, before, after_sha256, after, before_mode)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            call_row,
            change.path,
            change.before,
            change.after_sha256,
            change.after,
            change.before_mode
        ])?;
    }
    Ok(())
}
