//! Rebuilding the history the next prompt is built from.

use crate::{CallStatus, NewCall, Store, StoreError};

/// What a resumed session's interrupted calls say to the model.
pub const INTERRUPTED_RESULT: &str = "This tool call was interrupted: GOAT stopped while it was \
     pending, so it may not have run, or may have run only in part. Check the workspace before \
     repeating it.";

/// Added to the result of a call whose file changes `goat undo` put back,
/// followed by the paths, so the model does not assume they still stand.
pub const UNDONE_NOTE: &str =
    "[GOAT: the person has since undone this call's changes; back as they were before it:";

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
        /// The text the model sees.
        content: String,
    },
}

impl Store {
    /// The history the next prompt is built from: each turn's request,
    /// then its usable rounds and their calls' results, in order. Failed
    /// and cancelled rounds are left out; a call still pending is given the
    /// interrupted result, so every call in the history has an answer.
    pub fn history(&self, session_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        self.session(session_id)?;
        let mut out = Vec::new();
        let mut turns = self
            .conn
            .prepare_cached("SELECT id, prompt FROM turns WHERE session_id = ?1 ORDER BY id")?;
        let mut rounds = self.conn.prepare_cached(
            "SELECT id, content FROM rounds WHERE turn_id = ?1 AND status = 'ok' ORDER BY id",
        )?;
        let mut calls = self.conn.prepare_cached(
            "SELECT call_id, tool, arguments, status, result,
                    (SELECT group_concat(f.path, ', ') FROM file_changes f
                     WHERE f.call_row = tool_calls.id AND f.undone_at IS NOT NULL)
             FROM tool_calls WHERE round_id = ?1 ORDER BY id",
        )?;
        let turn_rows = turns
            .query_map([session_id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for (i, (turn_id, prompt)) in turn_rows.iter().enumerate() {
            let round_rows = rounds
                .query_map([turn_id], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            // A turn that left nothing usable (it failed or was cancelled
            // before any answer) and was asked again word for word is sent
            // once: the engine would otherwise get the same request twice
            // in a row. Asked differently, it stays: the next request may
            // refer to it ("try again").
            let asked_again = turn_rows.get(i + 1).is_some_and(|(_, next)| next == prompt);
            if round_rows.is_empty() && asked_again {
                continue;
            }
            out.push(HistoryEntry::User(prompt.clone()));
            for (round_id, content) in round_rows {
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
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                out.push(HistoryEntry::Assistant {
                    content,
                    calls: call_rows.iter().map(|(c, ..)| c.clone()).collect(),
                });
                for (call, status, result, undone) in call_rows {
                    let mut content = match (status, result) {
                        (CallStatus::Pending, _) | (_, None) => INTERRUPTED_RESULT.to_owned(),
                        (_, Some(text)) => text,
                    };
                    // ADR-0073: the model is told, where it made the change,
                    // that the person put the files back.
                    if let Some(paths) = undone {
                        content.push_str(&format!("\n\n{UNDONE_NOTE} {paths}.]"));
                    }
                    out.push(HistoryEntry::ToolResult {
                        call_id: call.call_id,
                        content,
                    });
                }
            }
        }
        Ok(out)
    }
}
