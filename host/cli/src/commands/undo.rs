//! `goat undo`: put back the files one turn changed (ADR-0073). The undo
//! itself is in the core (`goat_session::undo`), shared with the chat, `goat
//! acp` and `goat mcp serve`; this file picks the session and takes its
//! lock.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use goat_session::undo::undo_turn;
use goat_store::{SessionInfo, Store};

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
    // An attempt's journal names the files of its layer, not the
    // workspace's: what it changed is in the workspace only once landed,
    // and the landing is what undo takes back.
    if let Some(run) = store.attempt_of(&session.id)? {
        bail!(
            "session {} is an attempt of run {run}: its changes are in its own layer, not in \
             the workspace; goat undo takes back the attempt that landed (in the landing's own \
             session), and goat attempts discard removes the others",
            session.id
        );
    }
    // A session another process drives is not changed under it.
    let _lock = store.lock_session(&session.id)?;
    let report = undo_turn(&mut store, &session, args.turn)?;
    let mut out = io::stdout().lock();
    write!(out, "{report}")?;
    out.flush()?;
    Ok(if report.succeeded() {
        Outcome::Ok
    } else {
        Outcome::Failed
    })
}

/// The newest session working in `workspace` (default: the current
/// directory).
fn latest_session(store: &Store, workspace: Option<&Path>) -> anyhow::Result<SessionInfo> {
    let workspace = paths::workspace(workspace)?;
    let found = store.list_sessions()?.into_iter().find(|s| {
        let stored = Path::new(&s.workspace);
        (stored == workspace || stored.canonicalize().is_ok_and(|c| c == workspace))
            && store.attempt_of(&s.id).is_ok_and(|run| run.is_none())
    });
    found.with_context(|| {
        format!(
            "no session works in {}; give --session ID (`goat sessions list` shows them) or \
             --workspace DIR",
            text::escape_controls(&workspace.to_string_lossy())
        )
    })
}
