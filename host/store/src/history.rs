//! Rebuilding the history the next prompt is built from.

use crate::{CallErrorKind, CallStatus, NewCall, Store, StoreError, Summary};

/// What a resumed session's interrupted calls say to the model.
pub const INTERRUPTED_RESULT: &str = "This tool call was interrupted: GOAT stopped while it was \
     pending, so it may not have run, or may have run only in part. Check the workspace before \
     repeating it.";

/// Added to the result of a call whose file changes `goat undo` put back,
/// followed by the paths, so the model does not assume they still stand.
pub const UNDONE_NOTE: &str =
    "[GOAT: the person has since undone this call's changes; back as they were before it:";

/// Added to the result of the last call of a response that made more
/// calls than run, saying how many were left out of the history unrun.
pub fn dropped_unrun_note(dropped: usize) -> String {
    let calls = if dropped == 1 { "call" } else { "calls" };
    format!(
        "[GOAT: this response made {dropped} further tool {calls} that did not run (too many \
         calls in one response); they are left out here. Make fewer calls at a time.]"
    )
}

/// One entry of the history the next prompt is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryEntry {
    /// A person's request.
    User(String),
    /// A usable answer and the calls it made.
    Assistant {
        /// What it said.
        content: String,
        /// Its calls.
        calls: Vec<NewCall>,
    },
    /// The result of one call.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The tool called.
        tool: String,
        /// How the call ended (`Interrupted` for one left pending).
        status: CallStatus,
        /// The text the model sees.
        content: String,
    },
}

/// One turn's part of the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryTurn {
    /// The turn's row id.
    pub turn_id: i64,
    /// Its request, usable rounds and results, in order.
    pub entries: Vec<HistoryEntry>,
    /// Each usable round in it: its row id and the index in `entries` of
    /// its answer (its results follow), in order.
    pub rounds: Vec<(i64, usize)>,
}

impl HistoryTurn {
    /// The round (row id) each entry belongs to; `None` for the request.
    pub fn round_of(&self, index: usize) -> Option<i64> {
        self.rounds
            .iter()
            .take_while(|(_, start)| *start <= index)
            .last()
            .map(|(id, _)| *id)
    }
}

impl Store {
    /// The history the next prompt is built from: each turn's request,
    /// then its usable rounds and their calls' results, in order. Failed
    /// and cancelled rounds are left out; a call still pending is given the
    /// interrupted result, so every call in the history has an answer.
    ///
    /// Calls a response made past what runs (stored with
    /// [`CallErrorKind::TooManyCalls`]) are left out of its answer and of
    /// the results alike, so every call carried still has its result; the
    /// last result carried says how many were left out
    /// ([`dropped_unrun_note`]). The record keeps them all.
    ///
    /// # Security
    ///
    /// A model that answers with thousands of calls would otherwise make
    /// every later request carry them and their results, too large for
    /// any window: one response could end the turn.
    pub fn history(&self, session_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        Ok(self
            .history_turns(session_id, None)?
            .into_iter()
            .flat_map(|t| t.entries)
            .collect())
    }

    /// [`history`](Self::history) by turn, from the turn after `after`
    /// (a summary's `through_turn_id`) on, or from the first.
    pub fn history_turns(
        &self,
        session_id: &str,
        after: Option<i64>,
    ) -> Result<Vec<HistoryTurn>, StoreError> {
        self.history_from(session_id, after, None)
    }

    /// The history a prompt carries after `summary` (all of it without
    /// one): the turns after the one it ends in, and, when it ends inside
    /// a turn (`through_round_id`), that turn's request and its rounds
    /// after that round.
    pub fn history_since(
        &self,
        session_id: &str,
        summary: Option<&Summary>,
    ) -> Result<Vec<HistoryTurn>, StoreError> {
        match summary {
            None => self.history_from(session_id, None, None),
            Some(s) => match s.through_round_id {
                None => self.history_from(session_id, Some(s.through_turn_id), None),
                Some(round) => self.history_from(
                    session_id,
                    Some(s.through_turn_id - 1),
                    Some((s.through_turn_id, round)),
                ),
            },
        }
    }

    /// The history from the turn after `after` on; of the turn `partial`
    /// names, only the request and the rounds after the round it names.
    fn history_from(
        &self,
        session_id: &str,
        after: Option<i64>,
        partial: Option<(i64, i64)>,
    ) -> Result<Vec<HistoryTurn>, StoreError> {
        self.session(session_id)?;
        let mut out = Vec::new();
        let mut turns = self.conn.prepare_cached(
            // A prompt a hook withheld never reached the model and never
            // will.
            "SELECT id, prompt, prompt_from_hook IS NOT NULL FROM turns
             WHERE session_id = ?1 AND id > ?2 AND withheld_by IS NULL ORDER BY id",
        )?;
        let mut rounds = self.conn.prepare_cached(
            "SELECT id, content FROM rounds WHERE turn_id = ?1 AND status = 'ok' ORDER BY id",
        )?;
        let mut calls = self.conn.prepare_cached(
            "SELECT call_id, tool, arguments, status, result,
                    (SELECT group_concat(f.path, ', ') FROM file_changes f
                     WHERE f.call_row = tool_calls.id AND f.undone_at IS NOT NULL),
                    error_kind
             FROM tool_calls WHERE round_id = ?1 ORDER BY id",
        )?;
        let turn_rows = turns
            .query_map(rusqlite::params![session_id, after.unwrap_or(0)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for (i, (turn_id, prompt, from_hook)) in turn_rows.iter().enumerate() {
            let round_rows = rounds
                .query_map([turn_id], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })?
                .filter(|row| match (row, partial) {
                    (Ok((round, _)), Some((turn, through))) if turn == *turn_id => *round > through,
                    _ => true,
                })
                .collect::<Result<Vec<_>, _>>()?;
            // A turn that left nothing usable (it failed or was cancelled
            // before any answer) and was asked again word for word is sent
            // once: the engine would otherwise get the same request twice
            // in a row. Asked differently, it stays: the next request may
            // refer to it ("try again").
            let asked_again = turn_rows
                .get(i + 1)
                .is_some_and(|(_, next, _)| next == prompt);
            // A stop hook's words that the model never answered (the turn
            // was cancelled or failed at once) are not sent on once a later
            // turn began: they spoke to a turn that is over.
            let stranded = *from_hook && i + 1 < turn_rows.len();
            if round_rows.is_empty() && (asked_again || stranded) {
                continue;
            }
            let mut entries = vec![HistoryEntry::User(prompt.clone())];
            let mut round_starts = Vec::with_capacity(round_rows.len());
            for (round_id, content) in round_rows {
                round_starts.push((round_id, entries.len()));
                let call_rows = calls
                    .query_map([round_id], |r| {
                        Ok((
                            NewCall {
                                call_id: r.get(0)?,
                                tool: r.get(1)?,
                                arguments: r.get(2)?,
                            },
                            CallStatus::parse(&r.get::<_, String>(3)?)?,
                            r.get::<_, Option<String>>(4)?,
                            r.get::<_, Option<String>>(5)?,
                            r.get::<_, Option<String>>(6)?
                                .map(|k| CallErrorKind::parse(&k))
                                .transpose()?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                let total = call_rows.len();
                let mut call_rows: Vec<_> = call_rows
                    .into_iter()
                    .enumerate()
                    // The first call always stays: an answer that made
                    // calls is carried as one that made calls.
                    .filter(|(i, row)| *i == 0 || row.4 != Some(CallErrorKind::TooManyCalls))
                    .map(|(_, (call, status, result, undone, _))| (call, status, result, undone))
                    .collect();
                let dropped = total - call_rows.len();
                entries.push(HistoryEntry::Assistant {
                    content,
                    calls: call_rows.iter().map(|(c, ..)| c.clone()).collect(),
                });
                let last = call_rows.len().saturating_sub(1);
                for (i, (call, status, result, undone)) in call_rows.drain(..).enumerate() {
                    let (status, mut content) = match (status, result) {
                        (CallStatus::Pending, _) | (_, None) => {
                            (CallStatus::Interrupted, INTERRUPTED_RESULT.to_owned())
                        }
                        (status, Some(text)) => (status, text),
                    };
                    // ADR-0073: the model is told, where it made the change,
                    // that the person put the files back.
                    if let Some(paths) = undone {
                        content.push_str(&format!("\n\n{UNDONE_NOTE} {paths}.]"));
                    }
                    if i == last && dropped > 0 {
                        content.push_str(&format!("\n\n{}", dropped_unrun_note(dropped)));
                    }
                    entries.push(HistoryEntry::ToolResult {
                        call_id: call.call_id,
                        tool: call.tool,
                        status,
                        content,
                    });
                }
            }
            out.push(HistoryTurn {
                turn_id: *turn_id,
                entries,
                rounds: round_starts,
            });
        }
        Ok(out)
    }
}
