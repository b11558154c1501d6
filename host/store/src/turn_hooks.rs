//! The hooks run once a turn (issue 41): what each answered, recorded
//! against the turn; a prompt a hook withheld from the model; a turn whose
//! prompt is a stop hook's words.

use rusqlite::params;

use crate::store::now;
use crate::{HookRan, Store, StoreError};

/// A turn's hooks, as `goat sessions show` tells them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnHooks {
    /// The turn's row id.
    pub turn_id: i64,
    /// The hook that kept the turn's prompt from the model.
    pub withheld_by: Option<String>,
    /// The stop hook whose words are the turn's prompt.
    pub prompt_from_hook: Option<String>,
    /// Each hook run at the turn, in order.
    pub runs: Vec<HookRan>,
}

impl Store {
    /// Starts a turn whose prompt its `user_prompt_submit` hooks have yet
    /// to let through: none kept, and left out of the history (as one
    /// withheld, by no hook yet) until [`Store::admit_prompt`].
    pub fn start_screened_turn(&mut self, session_id: &str) -> Result<i64, StoreError> {
        self.session(session_id)?;
        let tx = self.write()?;
        tx.prepare_cached(
            "INSERT INTO turns (session_id, prompt, status, started_at, withheld_by)
             VALUES (?1, '', 'running', ?2, '')",
        )?
        .execute(params![session_id, now()])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Starts a turn whose prompt is the words of the stop hook `hook`,
    /// which sent the model back to work.
    pub fn start_turn_from_hook(
        &mut self,
        session_id: &str,
        prompt: &str,
        hook: &str,
    ) -> Result<i64, StoreError> {
        self.session(session_id)?;
        let tx = self.write()?;
        tx.prepare_cached(
            "INSERT INTO turns (session_id, prompt, status, started_at, prompt_from_hook)
             VALUES (?1, ?2, 'running', ?3, ?4)",
        )?
        .execute(params![session_id, prompt, now(), hook])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Records that the hook `hook` kept turn `turn_id`'s prompt from the
    /// model: the prompt is blanked (a hook that withholds a prompt may be
    /// keeping a secret out of the record too) and the history leaves the
    /// turn out.
    pub fn withhold_prompt(&mut self, turn_id: i64, hook: &str) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE turns SET prompt = '', withheld_by = ?2 WHERE id = ?1")?
            .execute(params![turn_id, hook])?;
        tx.commit()?;
        Ok(())
    }

    /// Sets turn `turn_id`'s prompt, which its `user_prompt_submit` hooks
    /// let through, and puts the turn in the history.
    pub fn admit_prompt(&mut self, turn_id: i64, prompt: &str) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE turns SET prompt = ?2, withheld_by = NULL WHERE id = ?1")?
            .execute(params![turn_id, prompt])?;
        tx.commit()?;
        Ok(())
    }

    /// Records the hooks run at turn `turn_id`, in order.
    pub fn record_turn_hooks(&mut self, turn_id: i64, runs: &[HookRan]) -> Result<(), StoreError> {
        if runs.is_empty() {
            return Ok(());
        }
        let tx = self.write()?;
        for ran in runs {
            tx.prepare_cached(
                "INSERT INTO turn_hook_runs (turn_id, hook, event, verdict, reason, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                turn_id,
                ran.hook,
                ran.event,
                ran.verdict,
                ran.reason,
                i64::try_from(ran.duration_ms).unwrap_or(i64::MAX)
            ])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every turn of session `session_id` a hook ran at, withheld or
    /// wrote, oldest first.
    pub fn turn_hooks(&self, session_id: &str) -> Result<Vec<TurnHooks>, StoreError> {
        self.session(session_id)?;
        let mut turns = self.conn.prepare_cached(
            "SELECT id, withheld_by, prompt_from_hook FROM turns WHERE session_id = ?1
             AND (withheld_by IS NOT NULL OR prompt_from_hook IS NOT NULL
                  OR EXISTS (SELECT 1 FROM turn_hook_runs h WHERE h.turn_id = turns.id))
             ORDER BY id",
        )?;
        let mut runs = self.conn.prepare_cached(
            "SELECT hook, event, verdict, reason, duration_ms FROM turn_hook_runs
             WHERE turn_id = ?1 ORDER BY id",
        )?;
        let rows = turns
            .query_map([session_id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = Vec::with_capacity(rows.len());
        for (turn_id, withheld_by, prompt_from_hook) in rows {
            let ran = runs
                .query_map([turn_id], |r| {
                    Ok(HookRan {
                        hook: r.get(0)?,
                        event: r.get(1)?,
                        verdict: r.get(2)?,
                        reason: r.get(3)?,
                        duration_ms: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            out.push(TurnHooks {
                turn_id,
                withheld_by,
                prompt_from_hook,
                runs: ran,
            });
        }
        Ok(out)
    }
}
