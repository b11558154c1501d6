//! One ACP session: a GOAT session opened by the session core, its driver,
//! and the running turn's cancellation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionMode,
    SessionModeState, SessionNotification, SessionUpdate, UnstructuredCommandInput,
};
use anyhow::{Context, bail};
use goat_router::ApprovalMode;
use goat_session::{Budget, Driver, Events, OpenOptions};

use crate::approve::{EditorApprover, TurnCancel};
use crate::serve::Notes;
use crate::updates::{self, Calls};

/// A session the client opened.
pub struct Session {
    /// Runs its turns; shared with the task running the current one.
    pub driver: Arc<Driver>,
    /// The running turn's token; `None` between turns.
    pub cancel: TurnCancel,
    /// Whether `session.started` was said (at the first prompt: nothing,
    /// not even the engine's window, is asked before).
    pub started: Mutex<bool>,
    /// Whether the commands GOAT takes (`/undo`) were advertised.
    commands_said: std::sync::atomic::AtomicBool,
}

impl Session {
    /// Opens (or, with `load`, resumes) a GOAT session in `cwd`, its
    /// events going to the client as updates and its questions as
    /// permission requests. Runs nothing and asks the engine nothing.
    pub fn open(
        base: &OpenOptions,
        cwd: &Path,
        load: Option<&str>,
        cx: &ConnectionTo<Client>,
        notes: &Notes,
    ) -> anyhow::Result<Self> {
        let workspace = check_cwd(cwd, base.workspace.as_deref())?;
        let calls = Arc::new(Mutex::new(Calls::default()));
        let cancel: TurnCancel = Arc::new(Mutex::new(None));
        let events = {
            let cx = cx.clone();
            let calls = calls.clone();
            let workspace = workspace.clone();
            Events::new(
                move |event| {
                    let Some(session_id) = event.session_id.clone() else {
                        return;
                    };
                    let update = updates::update(
                        &workspace,
                        &mut calls.lock().unwrap_or_else(PoisonError::into_inner),
                        event,
                    );
                    if let Some(update) = update {
                        // A closed connection ends the serving loop; the
                        // turn goes on and the store keeps it.
                        let _ = cx.send_notification(SessionNotification::new(session_id, update));
                    }
                },
                true,
            )
        };
        let session_id = Arc::new(OnceLock::new());
        let approver = events.approver(Box::new(EditorApprover {
            cx: cx.clone(),
            session_id: session_id.clone(),
            calls,
            cancel: cancel.clone(),
            runtime: tokio::runtime::Handle::current(),
        }));
        let options = OpenOptions {
            workspace: Some(workspace),
            session: load.map(str::to_owned),
            ..base.clone()
        };
        let notes = notes.clone();
        let opened = goat_session::for_turn(&options, Some(approver), &move |line| notes(line))?;
        let _ = session_id.set(opened.session_id.clone());
        let driver = Driver::new(opened, events, Budget::default());
        Ok(Self {
            driver: Arc::new(driver),
            cancel,
            started: Mutex::new(false),
            commands_said: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.driver.opened.session_id
    }

    /// The modes, for `session/new` and `session/load`.
    pub fn modes(&self) -> SessionModeState {
        let all = [
            (
                ApprovalMode::Ask,
                "Ask",
                "Writes and commands no rule decides are asked about",
            ),
            (
                ApprovalMode::AcceptEdits,
                "Accept edits",
                "Writes inside the workspace are allowed; commands are asked about; deny \
                 rules still win",
            ),
            (
                ApprovalMode::ReadOnly,
                "Read-only",
                "No writes and no commands at all",
            ),
        ];
        SessionModeState::new(
            self.driver.opened.mode.get().name(),
            all.into_iter()
                .map(|(mode, name, about)| {
                    SessionMode::new(mode.name(), name).description(about.to_owned())
                })
                .collect(),
        )
    }

    /// Tells the client, once, the commands GOAT takes in a prompt:
    /// `/undo`. Said while the client is waiting for an answer (during
    /// `session/load`, before its answer; at the first prompt of a new
    /// session), never after the last answer it waits for, when it may
    /// already be gone.
    pub fn say_commands(&self, cx: &ConnectionTo<Client>) {
        if self
            .commands_said
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        self.send(
            cx,
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
                AvailableCommand::new(
                    "undo",
                    "Put back the files the last turn with changes changed (or turn N); \
                     refused if any changed since",
                )
                .input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new("turn number (optional)"),
                )),
            ])),
        );
    }

    /// Undoes a turn, as `/undo [N]` asks: the report, worded as `goat
    /// undo` words it, or why nothing was undone. The caller holds the
    /// session's turn slot, so no turn runs meanwhile.
    pub fn undo(&self, rest: &str) -> Result<goat_session::undo::UndoReport, String> {
        let turn = goat_session::undo::parse_turn(rest)?;
        let opened = &self.driver.opened;
        goat_session::undo::undo_driven(&opened.store, &opened.session_id, turn)
            .map_err(|e| format!("nothing was undone: {e:#}"))
    }

    /// Sends one update about this session.
    pub fn send(&self, cx: &ConnectionTo<Client>, update: SessionUpdate) {
        let _ = cx.send_notification(SessionNotification::new(self.id().to_owned(), update));
    }
}

/// The client's `cwd` as a workspace: absolute, and with `--workspace`
/// given, that directory. The rest (an existing directory; the store, the
/// permission database, the config and the plugins outside it) is checked
/// by the session core as for `--workspace`.
pub fn check_cwd(cwd: &Path, only: Option<&Path>) -> anyhow::Result<PathBuf> {
    if !cwd.is_absolute() {
        bail!(
            "the cwd '{}' is not an absolute path; ACP requires one",
            goat_session::text::escape_controls(&cwd.display().to_string())
        );
    }
    let workspace = goat_session::paths::workspace(Some(cwd))?;
    if let Some(only) = only {
        let only = goat_session::paths::workspace(Some(only)).context("the --workspace")?;
        if workspace != only {
            bail!(
                "goat acp was started with --workspace {}; the cwd {} is another directory",
                only.display(),
                workspace.display()
            );
        }
    }
    Ok(workspace)
}
