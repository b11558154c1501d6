//! The record of what happened: sessions, turns, rounds, tool calls and
//! recovery events, written one logical step per transaction, and read back
//! whole for showing a session.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, params};

use crate::store::now;
use crate::{
    CallDecision, CallErrorKind, CallStatus, INTERRUPTED_RESULT, MARKUP_FAILURE_PREFIX,
    MarkupChannel, RoundFailure, RoundStatus, Store, StoreError, TurnStatus,
};

/// A session as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id.
    pub id: String,
    /// The workspace it works in.
    pub workspace: String,
    /// The engine it talks to.
    pub engine_url: String,
    /// The model.
    pub model: String,
    /// When it began (unix seconds).
    pub created_at: i64,
    /// How many turns it has.
    pub turns: i64,
}

/// A structured call in a finished round, as the model made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCall {
    /// The engine's (or GOAT's) call id.
    pub call_id: String,
    /// The tool name as the model wrote it.
    pub tool: String,
    /// The raw arguments text.
    pub arguments: String,
}

/// A finished, usable response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundOk {
    /// What the model said.
    pub content: String,
    /// Its separate reasoning.
    pub reasoning: String,
    /// Why it stopped.
    pub finish_reason: Option<String>,
    /// Token counts.
    pub prompt_tokens: Option<u64>,
    /// Token counts.
    pub completion_tokens: Option<u64>,
    /// Of the prompt tokens, those the engine served from its prompt
    /// cache, where it said.
    pub cached_tokens: Option<u64>,
    /// Its structured calls, stored as pending.
    pub calls: Vec<NewCall>,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOutcome {
    /// Ok, Error, Denied.
    pub status: CallStatus,
    /// What the model is shown.
    pub result: String,
    /// Why it produced no result, for a program to count.
    pub error_kind: Option<CallErrorKind>,
    /// The gate's decision, if it got that far.
    pub decision: Option<CallDecision>,
    /// Why the gate decided so.
    pub decision_reason: Option<String>,
    /// How long it ran.
    pub duration: Duration,
    /// A command's exit code (`run_command`); `None` for other tools and a
    /// command that did not exit on its own.
    pub exit_code: Option<i32>,
    /// The files the call changed, from every kind of tool, with what
    /// they held before (ADR-0073, ADR-0077).
    pub changes: Vec<crate::FileChange>,
    /// Whether [`changes`](Self::changes) are written with this outcome or
    /// were written before they landed.
    pub changes_stored: crate::ChangesStored,
    /// Everything that refused part or all of the call, each named at its
    /// source; empty when nothing was refused.
    pub refusals: Vec<crate::Refusal>,
    /// The hooks run for the call (issue 41), in order, whatever each
    /// answered; a hook's denial is also among the refusals.
    pub hooks: Vec<HookRan>,
}

/// One hook run for a call, as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookRan {
    /// The hook's name.
    pub hook: String,
    /// The event (`pre_tool_use`, ...).
    pub event: String,
    /// What it answered: `none`, `allow`, `ask`, `deny`, `failed`.
    pub verdict: String,
    /// Its reason, or why it failed, as it said it (raw: escaped where
    /// shown).
    pub reason: String,
    /// How long it ran, in milliseconds (0: it did not run).
    pub duration_ms: u64,
}

/// What ADR-0065 recovery recorded about a malformed response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The offered tool the markup named.
    pub tool: String,
    /// The envelope markers seen, e.g. `</tool_call>`.
    pub markers: Vec<String>,
    /// Where in the channel's text, byte offsets.
    pub span: Option<(usize, usize)>,
    /// Which channel held the markup.
    pub channel: MarkupChannel,
}

/// One stored tool call, for showing a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// Row id.
    pub id: i64,
    /// The call as made.
    pub call: NewCall,
    /// Where it stands.
    pub status: CallStatus,
    /// The gate's decision.
    pub decision: Option<CallDecision>,
    /// Why.
    pub decision_reason: Option<String>,
    /// What the model was shown.
    pub result: Option<String>,
    /// Why it produced no result.
    pub error_kind: Option<CallErrorKind>,
    /// How long it ran.
    pub duration_ms: Option<i64>,
    /// A command's exit code.
    pub exit_code: Option<i64>,
    /// When it started running (unix seconds); `None` for a call that
    /// never ran.
    pub started_at: Option<i64>,
    /// When it ended (unix seconds).
    pub ended_at: Option<i64>,
}

/// One stored round, failed ones included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRecord {
    /// Row id.
    pub id: i64,
    /// How it ended.
    pub status: RoundStatus,
    /// What the model said.
    pub content: String,
    /// What it reasoned, as the engine's reasoning channel gave it.
    pub reasoning: String,
    /// Why it stopped.
    pub finish_reason: Option<String>,
    /// Why it failed, for a program to count.
    pub failure_kind: Option<RoundFailure>,
    /// Why it failed, in words.
    pub failure: Option<String>,
    /// For a markup round, which channel held the call.
    pub markup_channel: Option<MarkupChannel>,
    /// The prompt tokens the engine reported for it; `None` when it
    /// reported none.
    pub prompt_tokens: Option<u64>,
    /// Likewise, the completion tokens.
    pub completion_tokens: Option<u64>,
    /// Of the prompt tokens, those the engine said its prompt cache
    /// served; `None` when it said nothing.
    pub cached_tokens: Option<u64>,
    /// When its request was sent (unix seconds).
    pub started_at: i64,
    /// When it ended (unix seconds); `None` while streaming, or when GOAT
    /// stopped before recording its end.
    pub ended_at: Option<i64>,
    /// Its calls.
    pub calls: Vec<CallRecord>,
}

/// One stored turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRecord {
    /// Row id.
    pub id: i64,
    /// The request.
    pub prompt: String,
    /// How it ended.
    pub status: TurnStatus,
    /// The error that ended it.
    pub error: Option<String>,
    /// Whether ADR-0065 recovery was used.
    pub recovery_used: bool,
    /// When it began (unix seconds).
    pub started_at: i64,
    /// When it ended (unix seconds); `None` while running.
    pub ended_at: Option<i64>,
    /// Its rounds.
    pub rounds: Vec<RoundRecord>,
    /// The hook that kept its prompt from the model (`""`: its hooks never
    /// let it through); the prompt is then empty, never kept.
    pub withheld_by: Option<String>,
    /// The stop hook whose words are its prompt: not the person's.
    pub prompt_from_hook: Option<String>,
}

/// A new session id: 16 hex digits from the clock and process, unique
/// enough for one user's sessions and readable on a command line.
fn new_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

impl Store {
    /// Starts a session; returns its id.
    pub fn create_session(
        &mut self,
        workspace: &Path,
        engine_url: &str,
        model: &str,
    ) -> Result<String, StoreError> {
        let id = new_session_id();
        let tx = self.write()?;
        tx.prepare_cached("INSERT INTO sessions (id, workspace, engine_url, model, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![id, workspace.to_string_lossy(), engine_url, model, now()],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// A session by id.
    pub fn session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT s.id, s.workspace, s.engine_url, s.model, s.created_at,
                        (SELECT count(*) FROM turns t WHERE t.session_id = s.id)
                 FROM sessions s WHERE s.id = ?1",
            )?
            .query_row([id], session_row)
            .optional()?
            .ok_or_else(|| StoreError::NoSession(id.to_owned()))
    }

    /// The session whose id is `given`, or the one session whose id starts
    /// with it (ids are long; people type the first few characters).
    pub fn find_session(&self, given: &str) -> Result<SessionInfo, StoreError> {
        match self.session(given) {
            Err(StoreError::NoSession(_)) => {}
            other => return other,
        }
        // Ids are lowercase hex: anything else matches nothing, and a
        // pattern character can never reach the LIKE.
        if given.is_empty() || !given.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::NoSession(given.to_owned()));
        }
        let pattern = format!("{}%", given.to_ascii_lowercase());
        let ids: Vec<String> = self
            .conn
            .prepare_cached("SELECT id FROM sessions WHERE id LIKE ?1 ORDER BY id LIMIT 6")?
            .query_map([&pattern], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        match ids.as_slice() {
            [] => Err(StoreError::NoSession(given.to_owned())),
            [one] => self.session(one),
            _ => Err(StoreError::AmbiguousSession {
                prefix: given.to_owned(),
                matches: ids.into_iter().take(5).collect(),
            }),
        }
    }

    /// All sessions, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT s.id, s.workspace, s.engine_url, s.model, s.created_at,
                    (SELECT count(*) FROM turns t WHERE t.session_id = s.id)
             FROM sessions s ORDER BY s.created_at DESC, s.rowid DESC",
        )?;
        let rows = stmt
            .query_map([], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Starts a turn for `prompt`.
    pub fn start_turn(&mut self, session_id: &str, prompt: &str) -> Result<i64, StoreError> {
        self.session(session_id)?;
        let tx = self.write()?;
        tx.prepare_cached("INSERT INTO turns (session_id, prompt, status, started_at) VALUES (?1, ?2, 'running', ?3)")?.execute(params![session_id, prompt, now()],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Ends a turn.
    pub fn finish_turn(
        &mut self,
        turn_id: i64,
        status: TurnStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE turns SET status = ?2, error = ?3, ended_at = ?4 WHERE id = ?1")?
            .execute(params![turn_id, status.as_str(), error, now()])?;
        tx.commit()?;
        Ok(())
    }

    /// Starts a round (its response streaming).
    pub fn start_round(&mut self, turn_id: i64) -> Result<i64, StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "INSERT INTO rounds (turn_id, status, started_at) VALUES (?1, 'streaming', ?2)",
        )?
        .execute(params![turn_id, now()])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Records a usable response and its calls, as pending, in one
    /// transaction. Returns the calls' row ids in order.
    pub fn finish_round_ok(&mut self, round_id: i64, ok: &RoundOk) -> Result<Vec<i64>, StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE rounds SET status = 'ok', content = ?2, reasoning = ?3, finish_reason = ?4,
                    prompt_tokens = ?5, completion_tokens = ?6, ended_at = ?7, cached_tokens = ?8
             WHERE id = ?1",
        )?
        .execute(params![
            round_id,
            ok.content,
            ok.reasoning,
            ok.finish_reason,
            ok.prompt_tokens.and_then(|n| i64::try_from(n).ok()),
            ok.completion_tokens.and_then(|n| i64::try_from(n).ok()),
            now(),
            ok.cached_tokens.and_then(|n| i64::try_from(n).ok()),
        ])?;
        let mut ids = Vec::with_capacity(ok.calls.len());
        for call in &ok.calls {
            tx.prepare_cached("INSERT INTO tool_calls (round_id, call_id, tool, arguments, status) VALUES (?1, ?2, ?3, ?4, 'pending')")?.execute(params![round_id, call.call_id, call.tool, call.arguments],
            )?;
            ids.push(tx.last_insert_rowid());
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Records a round that failed (engine error, cancelled, markup left
    /// unexecuted): kept for the record, never sent in a prompt again. Its
    /// status follows from `kind`.
    pub fn finish_round_failed(
        &mut self,
        round_id: i64,
        kind: RoundFailure,
        content: &str,
        failure: &str,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE rounds SET status = ?2, content = ?3, failure = ?4, failure_kind = ?5, ended_at = ?6
             WHERE id = ?1")?.execute(params![round_id, kind.status(), content, failure, kind, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Keeps the usage the engine reported for a round that failed (a
    /// `length` finish, a markup recovery): the tokens were spent, and
    /// `/status` and `goat stats` count them.
    pub fn record_round_usage(
        &mut self,
        round_id: i64,
        prompt_tokens: u64,
        completion_tokens: u64,
        cached_tokens: Option<u64>,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE rounds SET prompt_tokens = ?2, completion_tokens = ?3, cached_tokens = ?4
             WHERE id = ?1",
        )?
        .execute(params![
            round_id,
            i64::try_from(prompt_tokens).ok(),
            i64::try_from(completion_tokens).ok(),
            cached_tokens.and_then(|n| i64::try_from(n).ok()),
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// Records a malformed response that gets no recovery (the turn's one
    /// is spent, or no round is left): failed as markup, with both
    /// channels' text and the channel that held the call.
    pub fn finish_round_markup(
        &mut self,
        round_id: i64,
        content: &str,
        reasoning: &str,
        channel: MarkupChannel,
        failure: &str,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE rounds SET status = ?2, content = ?3, reasoning = ?4, failure = ?5,
                    failure_kind = ?6, markup_channel = ?7, ended_at = ?8
             WHERE id = ?1",
        )?
        .execute(params![
            round_id,
            RoundFailure::Markup.status(),
            content,
            reasoning,
            failure,
            RoundFailure::Markup,
            channel,
            now()
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// ADR-0065: records a malformed response as failed, with what the
    /// detector saw and both channels' text, and marks the turn's one
    /// recovery as used, all in one transaction. If this fails, recovery
    /// must stop.
    pub fn record_recovery(
        &mut self,
        round_id: i64,
        content: &str,
        reasoning: &str,
        recovery: &Recovery,
    ) -> Result<(), StoreError> {
        let failure = match recovery.channel {
            MarkupChannel::Content => {
                format!("{MARKUP_FAILURE_PREFIX}: no structured call was made; asked once for one")
            }
            MarkupChannel::Reasoning => format!(
                "{MARKUP_FAILURE_PREFIX} in the reasoning channel: no structured call was made; \
                 asked once for one"
            ),
        };
        self.record_recovery_as(round_id, content, reasoning, recovery, &failure)
    }

    /// ADR-0079: [`Store::record_recovery`] for a response the engine
    /// itself failed to parse as a call (llama.cpp's "Failed to parse
    /// input"), its message kept in the failure.
    pub fn record_parse_recovery(
        &mut self,
        round_id: i64,
        content: &str,
        recovery: &Recovery,
        engine_message: &str,
    ) -> Result<(), StoreError> {
        let failure = format!(
            "{MARKUP_FAILURE_PREFIX}: the engine could not parse the model's tool call \
             ({engine_message}); no structured call was made; asked once for one"
        );
        self.record_recovery_as(round_id, content, "", recovery, &failure)
    }

    fn record_recovery_as(
        &mut self,
        round_id: i64,
        content: &str,
        reasoning: &str,
        recovery: &Recovery,
        failure: &str,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        let turn_id: i64 = tx
            .prepare_cached("SELECT turn_id FROM rounds WHERE id = ?1")?
            .query_row([round_id], |r| r.get(0))?;
        tx.prepare_cached(
            "UPDATE rounds SET status = ?5, content = ?2, reasoning = ?7,
                    failure = ?4, failure_kind = ?6, markup_channel = ?8, ended_at = ?3
             WHERE id = ?1",
        )?
        .execute(params![
            round_id,
            content,
            now(),
            failure,
            RoundFailure::Markup.status(),
            RoundFailure::Markup,
            reasoning,
            recovery.channel,
        ])?;
        tx.prepare_cached("INSERT INTO recovery_events (turn_id, round_id, tool, markers, span_start, span_end, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?.execute(params![
                turn_id,
                round_id,
                recovery.tool,
                recovery.markers.join(" "),
                recovery.span.and_then(|s| i64::try_from(s.0).ok()),
                recovery.span.and_then(|s| i64::try_from(s.1).ok()),
                now()
            ],
        )?;
        tx.prepare_cached("UPDATE turns SET recovery_used = 1 WHERE id = ?1")?
            .execute([turn_id])?;
        tx.commit()?;
        Ok(())
    }

    /// Marks a pending call as started (the gate's decision made).
    pub fn start_call(&mut self, call_row: i64) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached("UPDATE tool_calls SET started_at = ?2 WHERE id = ?1")?
            .execute(params![call_row, now()])?;
        tx.commit()?;
        Ok(())
    }

    /// Every refusal recorded against session `id`'s calls, oldest first,
    /// each with the row of its call.
    pub fn refusals(&self, session_id: &str) -> Result<Vec<(i64, crate::Refusal)>, StoreError> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT f.call_row, f.refused_by, f.target, f.reason
             FROM call_refusals f
             JOIN tool_calls c ON f.call_row = c.id
             JOIN rounds r ON c.round_id = r.id
             JOIN turns t ON r.turn_id = t.id
             WHERE t.session_id = ?1 ORDER BY f.id",
        )?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok((
                    r.get(0)?,
                    crate::Refusal {
                        by: r.get(1)?,
                        target: r.get(2)?,
                        reason: r.get(3)?,
                    },
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Every hook run recorded against session `id`'s calls, oldest
    /// first, each with the row of its call.
    pub fn hook_runs(&self, session_id: &str) -> Result<Vec<(i64, HookRan)>, StoreError> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT h.call_row, h.hook, h.event, h.verdict, h.reason, h.duration_ms
             FROM hook_runs h
             JOIN tool_calls c ON h.call_row = c.id
             JOIN rounds r ON c.round_id = r.id
             JOIN turns t ON r.turn_id = t.id
             WHERE t.session_id = ?1 ORDER BY h.id",
        )?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok((
                    r.get(0)?,
                    HookRan {
                        hook: r.get(1)?,
                        event: r.get(2)?,
                        verdict: r.get(3)?,
                        reason: r.get(4)?,
                        duration_ms: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                    },
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Records how a call ended.
    pub fn finish_call(&mut self, call_row: i64, outcome: &CallOutcome) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.prepare_cached(
            "UPDATE tool_calls SET status = ?2, result = ?3, error_kind = ?4, decision = ?5,
                    decision_reason = ?6, duration_ms = ?7, ended_at = ?8, exit_code = ?9
             WHERE id = ?1",
        )?
        .execute(params![
            call_row,
            outcome.status,
            outcome.result,
            outcome.error_kind,
            outcome.decision,
            outcome.decision_reason,
            i64::try_from(outcome.duration.as_millis()).unwrap_or(i64::MAX),
            now(),
            outcome.exit_code
        ])?;
        if outcome.changes_stored == crate::ChangesStored::WithOutcome {
            crate::changes::insert(&tx, call_row, &outcome.changes, true)?;
        }
        for ran in &outcome.hooks {
            tx.prepare_cached(
                "INSERT INTO hook_runs (call_row, hook, event, verdict, reason, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                call_row,
                ran.hook,
                ran.event,
                ran.verdict,
                ran.reason,
                i64::try_from(ran.duration_ms).unwrap_or(i64::MAX)
            ])?;
        }
        for refusal in &outcome.refusals {
            tx.prepare_cached(
                "INSERT INTO call_refusals (call_row, refused_by, target, reason)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                call_row,
                refusal.by,
                refusal.target,
                refusal.reason
            ])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// For a session resumed after a crash: every pending call gets a
    /// result saying it was interrupted; rounds left streaming and turns
    /// left running are marked failed. One transaction. Returns how many
    /// calls were interrupted.
    pub fn interrupt_pending(&mut self, session_id: &str) -> Result<usize, StoreError> {
        let tx = self.write()?;
        let calls = tx.prepare_cached("UPDATE tool_calls SET status = ?4, result = ?2, error_kind = ?5, ended_at = ?3
             WHERE status = 'pending' AND round_id IN
               (SELECT r.id FROM rounds r JOIN turns t ON r.turn_id = t.id WHERE t.session_id = ?1)")?.execute(params![
                session_id,
                INTERRUPTED_RESULT,
                now(),
                CallStatus::Interrupted,
                CallErrorKind::Interrupted
            ],
        )?;
        tx.prepare_cached("UPDATE rounds SET status = ?3, failure = 'interrupted: GOAT stopped while it was streaming',
                    failure_kind = ?4, ended_at = ?2
             WHERE status = 'streaming' AND turn_id IN (SELECT id FROM turns WHERE session_id = ?1)")?.execute(params![
                session_id,
                now(),
                RoundFailure::Interrupted.status(),
                RoundFailure::Interrupted
            ],
        )?;
        tx.prepare_cached("UPDATE turns SET status = 'failed', error = 'interrupted: GOAT stopped during this turn', ended_at = ?2
             WHERE status = 'running' AND session_id = ?1")?.execute(params![session_id, now()],
        )?;
        tx.commit()?;
        Ok(calls)
    }

    /// Everything stored about a session's turns, failed rounds included.
    pub fn turns(&self, session_id: &str) -> Result<Vec<TurnRecord>, StoreError> {
        self.session(session_id)?;
        let mut turns = self.conn.prepare(
            "SELECT id, prompt, status, error, recovery_used, started_at, ended_at, withheld_by,
                    prompt_from_hook FROM turns
             WHERE session_id = ?1 ORDER BY id",
        )?;
        let mut rounds = self.conn.prepare(
            "SELECT id, status, content, finish_reason, failure, failure_kind, reasoning, markup_channel,
                    prompt_tokens, completion_tokens, started_at, ended_at, cached_tokens FROM rounds
             WHERE turn_id = ?1 ORDER BY id",
        )?;
        let mut calls = self.conn.prepare(
            "SELECT id, call_id, tool, arguments, status, decision, decision_reason, result, error_kind, duration_ms,
                    exit_code, started_at, ended_at
             FROM tool_calls WHERE round_id = ?1 ORDER BY id",
        )?;
        let mut out = turns
            .query_map([session_id], |r| {
                Ok(TurnRecord {
                    id: r.get(0)?,
                    prompt: r.get(1)?,
                    status: TurnStatus::parse(&r.get::<_, String>(2)?)?,
                    error: r.get(3)?,
                    recovery_used: r.get::<_, i64>(4)? != 0,
                    started_at: r.get(5)?,
                    ended_at: r.get(6)?,
                    rounds: Vec::new(),
                    withheld_by: r.get(7)?,
                    prompt_from_hook: r.get(8)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for turn in &mut out {
            turn.rounds = rounds
                .query_map([turn.id], |r| {
                    Ok(RoundRecord {
                        id: r.get(0)?,
                        status: RoundStatus::parse(&r.get::<_, String>(1)?)?,
                        content: r.get(2)?,
                        finish_reason: r.get(3)?,
                        failure: r.get(4)?,
                        failure_kind: r.get(5)?,
                        reasoning: r.get(6)?,
                        markup_channel: r.get(7)?,
                        prompt_tokens: count(r.get(8)?),
                        completion_tokens: count(r.get(9)?),
                        started_at: r.get(10)?,
                        ended_at: r.get(11)?,
                        cached_tokens: count(r.get(12)?),
                        calls: Vec::new(),
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            for round in &mut turn.rounds {
                round.calls = calls
                    .query_map([round.id], |r| {
                        Ok(CallRecord {
                            id: r.get(0)?,
                            call: NewCall {
                                call_id: r.get(1)?,
                                tool: r.get(2)?,
                                arguments: r.get(3)?,
                            },
                            status: CallStatus::parse(&r.get::<_, String>(4)?)?,
                            decision: r.get(5)?,
                            decision_reason: r.get(6)?,
                            result: r.get(7)?,
                            error_kind: r.get(8)?,
                            duration_ms: r.get(9)?,
                            exit_code: r.get(10)?,
                            started_at: r.get(11)?,
                            ended_at: r.get(12)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
            }
        }
        Ok(out)
    }
}

/// A stored token count, which GOAT writes only from a `u64` (a negative one
/// would be another program's, and is no count).
fn count(n: Option<i64>) -> Option<u64> {
    n.and_then(|n| u64::try_from(n).ok())
}

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: r.get(0)?,
        workspace: r.get(1)?,
        engine_url: r.get(2)?,
        model: r.get(3)?,
        created_at: r.get(4)?,
        turns: r.get(5)?,
    })
}
