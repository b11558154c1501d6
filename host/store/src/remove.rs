//! Removing a session and everything recorded under it.

use rusqlite::{OptionalExtension, params};

use crate::{Store, StoreError};

impl Store {
    /// Removes session `id` with its turns, rounds, tool calls, file
    /// changes, proxy decisions, refusals, hook runs, recovery events and
    /// summaries, in one transaction: all of it or none. Whether it
    /// existed.
    ///
    /// The caller holds the session's lock (or knows no other process can
    /// drive it): a session being driven is never removed under its driver.
    pub fn remove_session(&mut self, id: &str) -> Result<bool, StoreError> {
        let tx = self.write()?;
        let run: Option<i64> = tx
            .query_row(
                "SELECT id FROM attempt_runs WHERE session_id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(run) = run {
            return Err(StoreError::RunSession {
                id: id.to_owned(),
                run,
            });
        }
        // An attempt's session: the attempt stays, without it.
        tx.execute(
            "UPDATE attempts SET session_id = NULL WHERE session_id = ?1",
            params![id],
        )?;
        let turns = "SELECT id FROM turns WHERE session_id = ?1";
        let rounds = format!("SELECT id FROM rounds WHERE turn_id IN ({turns})");
        tx.execute("DELETE FROM summaries WHERE session_id = ?1", params![id])?;
        tx.execute(
            &format!("DELETE FROM recovery_events WHERE turn_id IN ({turns})"),
            params![id],
        )?;
        tx.execute(
            &format!(
                "DELETE FROM file_changes WHERE call_row IN
                   (SELECT id FROM tool_calls WHERE round_id IN ({rounds}))"
            ),
            params![id],
        )?;
        tx.execute(
            &format!(
                "DELETE FROM egress_decisions WHERE call_row IN
                   (SELECT id FROM tool_calls WHERE round_id IN ({rounds}))"
            ),
            params![id],
        )?;
        // What refused a call and the hooks run for it, every row that
        // names one of the session's calls or turns.
        for table in ["call_refusals", "hook_runs"] {
            tx.execute(
                &format!(
                    "DELETE FROM {table} WHERE call_row IN
                       (SELECT id FROM tool_calls WHERE round_id IN ({rounds}))"
                ),
                params![id],
            )?;
        }
        tx.execute(
            &format!("DELETE FROM turn_hook_runs WHERE turn_id IN ({turns})"),
            params![id],
        )?;
        tx.execute(
            &format!("DELETE FROM tool_calls WHERE round_id IN ({rounds})"),
            params![id],
        )?;
        tx.execute(
            &format!("DELETE FROM rounds WHERE turn_id IN ({turns})"),
            params![id],
        )?;
        tx.execute("DELETE FROM turns WHERE session_id = ?1", params![id])?;
        let removed = tx.execute("DELETE FROM sessions WHERE id = ?1", params![id])? > 0;
        tx.commit()?;
        Ok(removed)
    }
}
