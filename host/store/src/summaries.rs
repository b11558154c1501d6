//! Summaries of a session's older turns, written by the model when its
//! history outgrew the engine's context window (ADR-0073).
//!
//! A summary covers every turn up to `through_turn_id`, or, when it reaches
//! inside that turn (`through_round_id`, issue 25), the turns before it and
//! that turn's rounds up to `through_round_id`, the turn's request kept;
//! the next prompt carries the newest summary instead of what it covers. The turns are never
//! changed or removed: the store keeps the whole record, so compaction
//! loses nothing a person (or a later GOAT) can read.

use rusqlite::{OptionalExtension, params};

use crate::store::now;
use crate::{Store, StoreError};

/// Why a summary was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactReason {
    /// The next request would not have fit the window.
    Window,
    /// The engine refused a request as too long.
    Overflow,
    /// The person asked (`/compact`).
    Asked,
}

impl CompactReason {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Window => "window",
            Self::Overflow => "overflow",
            Self::Asked => "asked",
        }
    }

    fn parse(s: &str) -> Result<Self, rusqlite::Error> {
        match s {
            "window" => Ok(Self::Window),
            "overflow" => Ok(Self::Overflow),
            "asked" => Ok(Self::Asked),
            other => Err(rusqlite::Error::FromSqlConversionFailure(
                0,
                rusqlite::types::Type::Text,
                format!("unknown summary reason '{other}'").into(),
            )),
        }
    }
}

/// One stored summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Row id.
    pub id: i64,
    /// The last turn it covers (every turn of the session up to this one).
    pub through_turn_id: i64,
    /// Where it ends inside that turn: its rounds up to this one (the
    /// turn's request stays in later prompts); `None` for the whole turn.
    pub through_round_id: Option<i64>,
    /// What the model wrote.
    pub content: String,
    /// Why it was written.
    pub reason: CompactReason,
    /// The summarising request's token counts, when the engine sent them.
    pub prompt_tokens: Option<u64>,
    /// Likewise.
    pub completion_tokens: Option<u64>,
    /// When (unix seconds).
    pub created_at: i64,
}

/// A summary to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSummary {
    /// The last turn it covers.
    pub through_turn_id: i64,
    /// Where it ends inside that turn, if it does not cover all of it.
    pub through_round_id: Option<i64>,
    /// What the model wrote.
    pub content: String,
    /// Why.
    pub reason: CompactReason,
    /// Token counts of the summarising request.
    pub prompt_tokens: Option<u64>,
    /// Likewise.
    pub completion_tokens: Option<u64>,
}

const COLUMNS: &str = "id, through_turn_id, content, reason, prompt_tokens, completion_tokens, \
     created_at, through_round_id";

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Summary> {
    Ok(Summary {
        id: r.get(0)?,
        through_turn_id: r.get(1)?,
        content: r.get(2)?,
        reason: CompactReason::parse(&r.get::<_, String>(3)?)?,
        prompt_tokens: r
            .get::<_, Option<i64>>(4)?
            .and_then(|n| u64::try_from(n).ok()),
        completion_tokens: r
            .get::<_, Option<i64>>(5)?
            .and_then(|n| u64::try_from(n).ok()),
        created_at: r.get(6)?,
        through_round_id: r.get(7)?,
    })
}

impl Store {
    /// Stores a summary of `session_id`'s turns up to
    /// `summary.through_turn_id`, which must be one of its turns (and
    /// `through_round_id`, if given, one of that turn's rounds).
    pub fn add_summary(
        &mut self,
        session_id: &str,
        summary: &NewSummary,
    ) -> Result<i64, StoreError> {
        let tx = self.write()?;
        let owner: Option<String> = tx
            .prepare_cached("SELECT session_id FROM turns WHERE id = ?1")?
            .query_row([summary.through_turn_id], |r| r.get(0))
            .optional()?;
        if owner.as_deref() != Some(session_id) {
            return Err(StoreError::NoSession(session_id.to_owned()));
        }
        if let Some(round) = summary.through_round_id {
            let turn: Option<i64> = tx
                .prepare_cached("SELECT turn_id FROM rounds WHERE id = ?1")?
                .query_row([round], |r| r.get(0))
                .optional()?;
            if turn != Some(summary.through_turn_id) {
                return Err(StoreError::NoSession(session_id.to_owned()));
            }
        }
        tx.prepare_cached(
            "INSERT INTO summaries (session_id, through_turn_id, content, reason, prompt_tokens,
                                    completion_tokens, created_at, through_round_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            session_id,
            summary.through_turn_id,
            summary.content,
            summary.reason.as_str(),
            summary.prompt_tokens.and_then(|n| i64::try_from(n).ok()),
            summary
                .completion_tokens
                .and_then(|n| i64::try_from(n).ok()),
            now(),
            summary.through_round_id,
        ])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// The round up to which `session_id`'s prompts send tool results as
    /// stubs (ADR-0083), as the last cut left it; `None` before any cut.
    pub fn elided_through(&self, session_id: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .prepare_cached("SELECT elided_through_round FROM sessions WHERE id = ?1")?
            .query_row([session_id], |r| r.get(0))
            .optional()?
            .ok_or_else(|| StoreError::NoSession(session_id.to_owned()))
    }

    /// Records that `session_id`'s prompts send the results of its rounds
    /// up to `round` as stubs from now on. It only moves forward.
    pub fn set_elided_through(&mut self, session_id: &str, round: i64) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE sessions SET elided_through_round = ?2
             WHERE id = ?1 AND (elided_through_round IS NULL OR elided_through_round < ?2)",
        )?
        .execute(params![session_id, round])?;
        tx.commit()?;
        Ok(())
    }

    /// The session's newest summary: the one the next prompt carries.
    pub fn latest_summary(&self, session_id: &str) -> Result<Option<Summary>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM summaries WHERE session_id = ?1 ORDER BY id DESC LIMIT 1"
            ))?
            .query_row([session_id], summary_row)
            .optional()?)
    }

    /// Every summary of the session, oldest first.
    pub fn summaries(&self, session_id: &str) -> Result<Vec<Summary>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM summaries WHERE session_id = ?1 ORDER BY id"
            ))?
            .query_map([session_id], summary_row)?
            .collect::<Result<_, _>>()?)
    }
}
