//! Undo in the core (ADR-0073, issue 36): put back the files one turn of a
//! session changed, for every front end: `goat undo`, the chat's `/undo`,
//! `goat acp`'s `/undo` command and `goat mcp serve --offer-undo`.
//!
//! The checks and writes are `goat_router::checkpoint`'s; this module
//! picks the turn, records what was put back in the store and words the
//! outcome. Everything from the store (paths, file lines) is escaped.

use std::fmt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use anyhow::bail;
use goat_router::checkpoint::{Restored, UndoError, plan_undo};
use goat_store::{CallStatus, ChangeRecord, SessionInfo, Store};

use crate::text;

/// What follows `/undo`: nothing (the last turn with changes) or a turn
/// number; anything else is refused with what to write instead.
pub fn parse_turn(rest: &str) -> Result<Option<usize>, String> {
    let rest = rest.trim();
    if rest.is_empty() {
        return Ok(None);
    }
    match rest.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!(
            "'{}' is not a turn number; /undo puts back the last turn with changes, /undo N \
             turn N (goat sessions show lists them)",
            text::escape_controls(rest)
        )),
    }
}

/// Undoes turn `turn` (default: the last with changes not yet undone) of
/// the session `session_id` that this process drives (it holds the
/// session's lock, so nothing else changes it meanwhile).
pub fn undo_driven(
    store: &Mutex<Store>,
    session_id: &str,
    turn: Option<usize>,
) -> anyhow::Result<UndoReport> {
    let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
    let session = store.session(session_id)?;
    undo_turn(&mut store, &session, turn)
}

impl UndoReport {
    /// Whether every file the turn changed is back as it was (or there was
    /// nothing to undo) and the store recorded it.
    pub fn succeeded(&self) -> bool {
        self.unrecorded.is_none()
            && matches!(
                self.outcome,
                UndoOutcome::Undone(_) | UndoOutcome::Nothing(_)
            )
    }
}

/// What undoing a turn came to.
#[derive(Debug)]
pub struct UndoReport {
    /// The session.
    pub session: String,
    /// The turn, numbered from 1 as `sessions show` numbers them; 0 when no
    /// turn was chosen.
    pub turn: usize,
    /// How many of the turn's moves and deletes were not checkpointed (a
    /// directory or link moved, a link deleted).
    pub unkept: usize,
    /// What happened.
    pub outcome: UndoOutcome,
    /// Files were put back but the store could not record it: why.
    pub unrecorded: Option<String>,
}

/// What happened to the turn's files.
#[derive(Debug)]
pub enum UndoOutcome {
    /// Every file is back.
    Undone(Vec<Restored>),
    /// Nothing to undo, and why.
    Nothing(String),
    /// Nothing was restored, and why (a file changed since).
    Refused(String),
    /// Writing stopped at a file: those before it are back.
    Stopped {
        /// Put back.
        done: Vec<Restored>,
        /// Where it stopped.
        path: String,
        /// Why.
        error: String,
    },
}

impl fmt::Display for UndoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = |f: &mut fmt::Formatter<'_>, done: &[Restored]| {
            for restored in done {
                let (what, path) = match restored {
                    Restored::Restored(p) => ("restored", p),
                    Restored::Removed(p) => ("removed (it did not exist before)", p),
                    Restored::Recreated(p) => ("recreated", p),
                    Restored::Directory(p) => ("directory put back", p),
                    Restored::Kept(p) => ("kept (a directory the turn made; not empty)", p),
                    Restored::NotKept(p) => (
                        "NOT put back (its earlier bytes were too large to keep; it is as the \
                         turn left it)",
                        p,
                    ),
                };
                writeln!(f, "  {what} {}", text::escape_controls(path))?;
            }
            Ok(())
        };
        let turn = self.turn;
        let session = text::escape_controls(&self.session);
        match &self.outcome {
            UndoOutcome::Undone(done) => {
                writeln!(
                    f,
                    "undid turn {turn} of session {session}: {}",
                    text::count(done.len(), "file")
                )?;
                files(f, done)?;
            }
            UndoOutcome::Nothing(why) => {
                writeln!(f, "nothing to undo: {}", text::escape_controls(why))?;
            }
            UndoOutcome::Refused(why) => writeln!(
                f,
                "did not undo turn {turn} of session {session}: {}",
                text::escape_controls(why)
            )?,
            UndoOutcome::Stopped { done, path, error } => {
                writeln!(
                    f,
                    "undo of turn {turn} of session {session} failed at {}: {}; every step \
                     already done was taken back, so nothing was undone",
                    text::escape_controls(path),
                    text::escape_controls(error)
                )?;
                files(f, done)?;
            }
        }
        if self.unkept > 0 {
            writeln!(
                f,
                "note: turn {turn} also moved a directory or link, or deleted a link ({}); \
                 undo does not reverse that",
                text::count(self.unkept, "call")
            )?;
        }
        if let Some(why) = &self.unrecorded {
            writeln!(
                f,
                "warning: the files above are back, but the store could not record it ({}); \
                 the model is not told, and a second undo would find the files changed and \
                 refuse",
                text::escape_controls(why)
            )?;
        }
        Ok(())
    }
}

/// Undoes turn `turn` of `session` (default: its last turn with changes
/// not yet undone): checks every file the turn changed still holds what
/// GOAT left there, then puts each back, and records that in the store.
/// The caller holds the session's lock.
pub fn undo_turn(
    store: &mut Store,
    session: &SessionInfo,
    turn: Option<usize>,
) -> anyhow::Result<UndoReport> {
    let turns = store.turns(&session.id)?;
    let changes = store.file_changes(&session.id)?;
    let mut report = UndoReport {
        session: session.id.clone(),
        turn: 0,
        unkept: 0,
        outcome: UndoOutcome::Nothing(String::new()),
        unrecorded: None,
    };
    let chosen = match turn {
        Some(n) => match n.checked_sub(1).and_then(|i| turns.get(i)) {
            Some(record) => (n, record),
            None => bail!(
                "session {} has {}; there is no turn {n}",
                text::escape_controls(&session.id),
                text::count(turns.len(), "turn")
            ),
        },
        None => {
            let last = changes.iter().rev().find(|c| c.undone_at.is_none());
            match last.and_then(|c| (1..).zip(&turns).find(|(_, t)| t.id == c.turn_id)) {
                Some(found) => found,
                None => {
                    report.outcome = UndoOutcome::Nothing(format!(
                        "no turn of session {} has changed files left to undo",
                        session.id
                    ));
                    return Ok(report);
                }
            }
        }
    };
    let (n, record) = chosen;
    report.turn = n;
    report.unkept = record
        .rounds
        .iter()
        .flat_map(|r| &r.calls)
        .filter(|c| {
            matches!(c.call.tool.as_str(), "move_file" | "delete_file")
                && c.status == CallStatus::Ok
                && !changes.iter().any(|change| change.call_row == c.id)
        })
        .count();
    let of_turn: Vec<&ChangeRecord> = changes.iter().filter(|c| c.turn_id == record.id).collect();
    let pending: Vec<&ChangeRecord> = of_turn
        .iter()
        .copied()
        .filter(|c| c.undone_at.is_none())
        .collect();
    if pending.is_empty() {
        report.outcome = UndoOutcome::Nothing(if of_turn.is_empty() {
            format!("turn {n} changed no files GOAT keeps copies of")
        } else {
            format!("turn {n}'s changes were already undone")
        });
        return Ok(report);
    }
    let plan = match plan_undo(Path::new(&session.workspace), &pending) {
        Ok(plan) => plan,
        Err(e @ (UndoError::Changed(_) | UndoError::Protected(_))) => {
            report.outcome = UndoOutcome::Refused(e.to_string());
            return Ok(report);
        }
        Err(e) => return Err(e.into()),
    };
    let (done, ids, stopped) = plan.apply();
    // The files are back whatever the store says next: a failure to
    // record it is reported beside them, never as "nothing was undone".
    if let Err(e) = store.mark_undone(&ids) {
        report.unrecorded = Some(e.to_string());
    }
    report.outcome = match stopped {
        None => UndoOutcome::Undone(done),
        Some((path, error)) => UndoOutcome::Stopped {
            done,
            path,
            error: error.to_string(),
        },
    };
    Ok(report)
}
