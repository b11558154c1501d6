//! `goat undo`: put back the files one turn changed (ADR-0073); and the
//! reports the chat's `/undo` and `/diff` print ([`undo_turn`],
//! [`session_diff`]).
//!
//! The checks and writes are `goat_shepherd::checkpoint`'s; this file
//! picks the session and turn, takes the session's lock and words the
//! outcome. Everything from the store (paths, file lines) is escaped.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use goat_shepherd::checkpoint::{Restored, UndoError, plan_undo};
use goat_store::{CallStatus, ChangeRecord, SessionInfo, Store};

use crate::args::DbArg;
use crate::{Outcome, paths, text};

#[derive(clap::Args)]
pub struct UndoArgs {
    /// The session (its id or a unique prefix; default: the workspace's
    /// latest session).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The turn, numbered as `goat sessions show` numbers them (default:
    /// the last turn with changes not yet undone).
    #[arg(long, value_name = "N")]
    turn: Option<usize>,
    /// The workspace whose latest session to undo in (default: the
    /// current directory); not needed with --session.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    store: DbArg,
}

pub fn undo(args: UndoArgs) -> anyhow::Result<Outcome> {
    let path = paths::store_path(args.store.db.as_deref())?.into_resolved();
    if !path.exists() {
        bail!(
            "nothing to undo: there is no store yet at {}",
            path.display()
        );
    }
    let mut store = Store::open(&path)?;
    let session = match &args.session {
        Some(id) => store
            .find_session(id)
            .context("`goat sessions list` shows the sessions")?,
        None => latest_session(&store, args.workspace.as_deref())?,
    };
    // A session another process drives is not changed under it.
    let _lock = store.lock_session(&session.id)?;
    let report = undo_turn(&mut store, &session, args.turn)?;
    let mut out = io::stdout().lock();
    write!(out, "{report}")?;
    out.flush()?;
    Ok(match report.outcome {
        _ if report.unrecorded.is_some() => Outcome::Failed,
        UndoOutcome::Refused(_) | UndoOutcome::Stopped { .. } => Outcome::Failed,
        UndoOutcome::Undone(_) | UndoOutcome::Nothing(_) => Outcome::Ok,
    })
}

/// The newest session working in `workspace` (default: the current
/// directory).
fn latest_session(store: &Store, workspace: Option<&Path>) -> anyhow::Result<SessionInfo> {
    let workspace = paths::workspace(workspace)?;
    let found = store.list_sessions()?.into_iter().find(|s| {
        let stored = Path::new(&s.workspace);
        stored == workspace || stored.canonicalize().is_ok_and(|c| c == workspace)
    });
    found.with_context(|| {
        format!(
            "no session works in {}; give --session ID (`goat sessions list` shows them) or \
             --workspace DIR",
            text::escape_controls(&workspace.to_string_lossy())
        )
    })
}

/// What undoing a turn came to.
#[derive(Debug)]
pub struct UndoReport {
    /// The session.
    pub session: String,
    /// The turn, numbered from 1 as `sessions show` numbers them; 0 when no
    /// turn was chosen.
    pub turn: usize,
    /// Whether the turn ran commands, whose changes are not checkpointed.

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
            UndoOutcome::Nothing(why) => writeln!(f, "nothing to undo: {why}")?,
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
                session.id,
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
