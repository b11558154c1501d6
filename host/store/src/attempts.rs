//! Several attempts at one task (issue 42, ADR-0099): each run of attempts,
//! its attempts' sessions and kept layers, how each ended, its check, and
//! which one landed.

use rusqlite::{OptionalExtension, params};

use crate::store::now;
use crate::{Store, StoreError};

/// One run of attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRun {
    /// Row id.
    pub id: i64,
    /// The session its landings are recorded in.
    pub session_id: String,
    /// The workspace.
    pub workspace: String,
    /// The task, as every attempt was given it.
    pub prompt: String,
    /// The check each attempt was held to.
    pub verify: Option<String>,
    /// The permission database its landings are held to (`None`: the
    /// default beside the store).
    pub permissions: Option<String>,
    /// When it began (unix seconds).
    pub created_at: i64,
    /// The attempt whose changes are in the workspace, if one is.
    pub landed: Option<u32>,
    /// Its attempts, in order.
    pub attempts: Vec<AttemptRecord>,
}

/// The attempt of a run that is in the workspace, and what the run's
/// landings changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landing {
    /// The attempt.
    pub attempt: u32,
    /// The session its landing is recorded in.
    pub session_id: String,
    /// The sessions the run's landings are recorded in.
    pub sessions: Vec<String>,
    /// What the run's landings changed, not undone, oldest first.
    pub changes: Vec<crate::ChangeRecord>,
}

/// One attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRecord {
    /// 1-based.
    pub number: u32,
    /// Its own session, once it said which.
    pub session_id: Option<String>,
    /// Its kept layer.
    pub layer: String,
    /// `running`, `ended` or `discarded`.
    pub status: String,
    /// How its run ended (`completed`, ...), once it did.
    pub outcome: Option<String>,
    /// Its run's exit code.
    pub exit_code: Option<i64>,
    /// The check's exit code, when one ran.
    pub check_exit: Option<i64>,
    /// The end of the check's output.
    pub check_output: Option<String>,
}

impl AttemptRecord {
    /// Whether its check passed (`None`: no check ran).
    pub fn passed(&self) -> Option<bool> {
        self.check_exit.map(|code| code == 0)
    }
}

impl Store {
    /// Starts a run of attempts at `prompt` in `workspace`, its landings
    /// to be recorded in `session_id`.
    pub fn start_attempt_run(
        &mut self,
        session_id: &str,
        (workspace, permissions): (&str, Option<&str>),
        prompt: &str,
        verify: Option<&str>,
    ) -> Result<i64, StoreError> {
        self.session(session_id)?;
        let tx = self.write()?;
        tx.prepare_cached(
            "INSERT INTO attempt_runs (session_id, workspace, prompt, verify, permissions,
                                       created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            session_id,
            workspace,
            prompt,
            verify,
            permissions,
            now()
        ])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Records attempt `number` of run `run`, kept in `layer`, as running.
    pub fn add_attempt(&mut self, run: i64, number: u32, layer: &str) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "INSERT INTO attempts (run_id, number, layer, status) VALUES (?1, ?2, ?3, 'running')",
        )?
        .execute(params![run, number, layer])?;
        tx.commit()?;
        Ok(())
    }

    /// Records that attempt `number` of `run` runs as session `session_id`,
    /// and marks that session as an attempt.
    pub fn attempt_session(
        &mut self,
        run: i64,
        number: u32,
        session_id: &str,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE attempts SET session_id = ?3 WHERE run_id = ?1 AND number = ?2")?
            .execute(params![run, number, session_id])?;
        tx.prepare_cached("UPDATE sessions SET attempt_of = ?1 WHERE id = ?2")?
            .execute(params![run, session_id])?;
        tx.commit()?;
        Ok(())
    }

    /// Records how attempt `number` of `run` ended, and its check.
    pub fn end_attempt(
        &mut self,
        run: i64,
        number: u32,
        (outcome, exit_code): (Option<&str>, Option<i64>),
        check: Option<(i64, &str)>,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE attempts SET status = 'ended', outcome = ?3, exit_code = ?4, check_exit = ?5,
                    check_output = ?6
             WHERE run_id = ?1 AND number = ?2",
        )?
        .execute(params![
            run,
            number,
            outcome,
            exit_code,
            check.map(|c| c.0),
            check.map(|c| c.1)
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// The attempt of `run` whose landing is in the workspace: the newest
    /// landing that succeeded and was not undone. An undo takes a landing
    /// back whole, but for files whose earlier bytes were too large to
    /// keep (left as the landing left them, their rows not marked): a
    /// landing with any change undone is taken back.
    pub fn landed_attempt(&self, run: i64) -> Result<Option<u32>, StoreError> {
        Ok(self.landing(run)?.map(|l| l.attempt))
    }

    /// The landing of `run` that is in the workspace (see
    /// [`Store::landed_attempt`]), with every change the run's landings
    /// made that is not undone, oldest first: a swap's journal holds what
    /// the landing before it left, so what was there before the first is
    /// read from that one's.
    pub fn landing(&self, run: i64) -> Result<Option<Landing>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT json_extract(c.arguments, '$.attempt'), c.id, t.session_id
             FROM tool_calls c JOIN rounds r ON r.id = c.round_id
             JOIN turns t ON t.id = r.turn_id
             WHERE c.tool = 'land_attempt' AND c.status = 'ok' AND json_valid(c.arguments)
               AND json_extract(c.arguments, '$.run') = ?1
               AND EXISTS (SELECT 1 FROM file_changes f
                           WHERE f.call_row = c.id AND f.undone_at IS NULL)
               AND NOT EXISTS (SELECT 1 FROM file_changes f
                               WHERE f.call_row = c.id AND f.undone_at IS NOT NULL)
             ORDER BY c.id",
        )?;
        let landings = stmt
            .query_map([run], |r| {
                Ok((
                    r.get::<_, Option<u32>>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let Some((Some(attempt), _, session_id)) = landings.last().cloned() else {
            return Ok(None);
        };
        let rows: Vec<i64> = landings.iter().map(|l| l.1).collect();
        let mut sessions: Vec<String> = Vec::new();
        let mut changes = Vec::new();
        for (_, _, session_id) in &landings {
            if sessions.contains(session_id) {
                continue;
            }
            changes.extend(
                self.file_changes(session_id)?
                    .into_iter()
                    .filter(|c| c.undone_at.is_none() && rows.contains(&c.call_row)),
            );
            sessions.push(session_id.clone());
        }
        changes.sort_by_key(|c| c.id);
        Ok(Some(Landing {
            attempt,
            session_id,
            sessions,
            changes,
        }))
    }

    /// The session of a landing of `run` that failed part-way and could
    /// not take all its steps back (its journal kept, not undone), if one
    /// did: what the workspace holds there is neither attempt's.
    pub fn failed_landing(&self, run: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT t.session_id FROM tool_calls c JOIN rounds r ON r.id = c.round_id
                 JOIN turns t ON t.id = r.turn_id
                 WHERE c.tool = 'land_attempt' AND c.status = 'error' AND json_valid(c.arguments)
                   AND json_extract(c.arguments, '$.run') = ?1
                   AND EXISTS (SELECT 1 FROM file_changes f
                               WHERE f.call_row = c.id AND f.undone_at IS NULL)
                 ORDER BY c.id DESC LIMIT 1",
            )?
            .query_row([run], |r| r.get(0))
            .optional()?)
    }

    /// Records that attempt `number` of `run` was discarded (its layer
    /// removed).
    pub fn discard_attempt(&mut self, run: i64, number: u32) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE attempts SET status = 'discarded' WHERE run_id = ?1 AND number = ?2",
        )?
        .execute(params![run, number])?;
        tx.commit()?;
        Ok(())
    }

    /// The run of attempts `session_id` is an attempt of, if it is one.
    pub fn attempt_of(&self, session_id: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT attempt_of FROM sessions WHERE id = ?1")?
            .query_row([session_id], |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten())
    }

    /// Every run of attempts, newest first.
    pub fn attempt_runs(&self) -> Result<Vec<AttemptRun>, StoreError> {
        let ids: Vec<i64> = self
            .conn
            .prepare_cached("SELECT id FROM attempt_runs ORDER BY id DESC")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        ids.into_iter().map(|id| self.attempt_run(id)).collect()
    }

    /// Run of attempts `id`.
    pub fn attempt_run(&self, id: i64) -> Result<AttemptRun, StoreError> {
        let mut run = self
            .conn
            .prepare_cached(
                "SELECT id, session_id, workspace, prompt, verify, created_at, permissions
                 FROM attempt_runs WHERE id = ?1",
            )?
            .query_row([id], |r| {
                Ok(AttemptRun {
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    workspace: r.get(2)?,
                    prompt: r.get(3)?,
                    verify: r.get(4)?,
                    created_at: r.get(5)?,
                    permissions: r.get(6)?,
                    landed: None,
                    attempts: Vec::new(),
                })
            })
            .optional()?
            .ok_or_else(|| StoreError::NoAttemptRun(id))?;
        run.landed = self.landed_attempt(id)?;
        run.attempts = self
            .conn
            .prepare_cached(
                "SELECT number, session_id, layer, status, outcome, exit_code, check_exit,
                        check_output
                 FROM attempts WHERE run_id = ?1 ORDER BY number",
            )?
            .query_map([id], |r| {
                Ok(AttemptRecord {
                    number: r.get(0)?,
                    session_id: r.get(1)?,
                    layer: r.get(2)?,
                    status: r.get(3)?,
                    outcome: r.get(4)?,
                    exit_code: r.get(5)?,
                    check_exit: r.get(6)?,
                    check_output: r.get(7)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(run)
    }
}
