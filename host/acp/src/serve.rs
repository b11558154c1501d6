//! The connection: one handler per ACP v1 method, the sessions it opened.
//!
//! Handlers run in the SDK's dispatch loop, one message at a time, so a
//! handler never waits for the client: a prompt's turn runs in a task of
//! its own and answers when it ends, which leaves the loop free for
//! `session/cancel` and for the answers to permission requests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason, TextContent,
};
use agent_client_protocol::{Agent, Error, ErrorCode};
use goat_engine::CancellationToken;
use goat_router::ApprovalMode;
use goat_session::OpenOptions;

use crate::session::Session;

/// Where what assembly has to say goes (stderr, escaped, in `goat acp`).
pub type Notes = Arc<dyn Fn(&str) + Send + Sync>;

/// What `goat acp` was started with.
pub struct ServeOptions {
    /// The settings every session starts from: engine, store, permission
    /// database, mode, caps. `workspace`, when set, is the only directory
    /// a client may use as its `cwd`.
    pub open: OpenOptions,
    /// Where notes go.
    pub notes: Notes,
}

struct State {
    options: ServeOptions,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The prompts' turns, each a task of its own.
    turns: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl State {
    fn session(&self, id: &str) -> Result<Arc<Session>, Error> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::RESOURCE_NOT_FOUND,
                    format!(
                        "no session '{}' is open on this connection; open it with session/new \
                         or session/load",
                        goat_session::text::escape_controls(id)
                    ),
                )
            })
    }

    fn keep(&self, session: Session) -> Arc<Session> {
        let session = Arc::new(session);
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.id().to_owned(), session.clone());
        session
    }
}

/// A failure to open a session, as the client sees it.
fn open_failed(e: &anyhow::Error) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        goat_session::text::error_chain(e.chain()),
    )
}

/// GOAT starts only the MCP servers the person added and trusted
/// (ADR-0086), never a client's, and works in one workspace per session.
fn refuse_extras(mcp_servers: usize, additional_directories: usize) -> Result<(), Error> {
    if mcp_servers > 0 {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            "GOAT does not start an editor's MCP servers: it runs only the servers the person \
             added and trusted (goat mcp add, goat mcp trust), contained, and offers those in \
             every session; send an empty mcpServers list",
        ));
    }
    if additional_directories > 0 {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            "GOAT works in one directory per session; send no additionalDirectories",
        ));
    }
    Ok(())
}

/// Serves ACP v1 on stdin and stdout until the client closes stdin.
pub async fn serve(options: ServeOptions) -> anyhow::Result<()> {
    let state = Arc::new(State {
        options,
        sessions: Mutex::new(HashMap::new()),
        turns: Mutex::new(Vec::new()),
    });
    let (s_new, s_load, s_prompt, s_mode, s_cancel) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let ended = Agent
        .v1()
        .name("goat")
        .on_receive_request(
            async move |_: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .prompt_capabilities(
                                    PromptCapabilities::new().embedded_context(true),
                                ),
                        )
                        .agent_info(Implementation::new("goat", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let state = s_new.clone();
                let opened = refuse_extras(
                    request.mcp_servers.len(),
                    request.additional_directories.len(),
                )
                .and_then(|()| {
                    tokio::task::block_in_place(|| {
                        Session::open(
                            &state.options.open,
                            &request.cwd,
                            None,
                            &cx,
                            &state.options.notes,
                        )
                    })
                    .map_err(|e| open_failed(&e))
                });
                match opened {
                    Ok(session) => {
                        let session = state.keep(session);
                        responder.respond(
                            NewSessionResponse::new(session.id().to_owned()).modes(session.modes()),
                        )
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let state = s_load.clone();
                let id = request.session_id.0.to_string();
                if state.session(&id).is_ok() {
                    return responder.respond_with_error(Error::new(
                        ErrorCode::INVALID_REQUEST,
                        "that session is already open on this connection",
                    ));
                }
                let opened = refuse_extras(
                    request.mcp_servers.len(),
                    request.additional_directories.len(),
                )
                .and_then(|()| {
                    tokio::task::block_in_place(|| {
                        let session = Session::open(
                            &state.options.open,
                            &request.cwd,
                            Some(&id),
                            &cx,
                            &state.options.notes,
                        )?;
                        crate::replay::replay(&session, &cx)?;
                        Ok(session)
                    })
                    .map_err(|e| open_failed(&e))
                });
                match opened {
                    Ok(session) => {
                        let session = state.keep(session);
                        // The client knows the session it loads: said with
                        // the replay, before the answer.
                        session.say_commands(&cx);
                        responder.respond(LoadSessionResponse::new().modes(session.modes()))
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let session = match s_prompt.session(&request.session_id.0) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                let prompt = match crate::prompt::prompt_text(&request.prompt) {
                    Ok(prompt) => prompt,
                    Err(e) => return responder.respond_with_error(e),
                };
                let cancel = CancellationToken::new();
                {
                    let mut running = session
                        .cancel
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if running.is_some() {
                        drop(running);
                        return responder.respond_with_error(Error::new(
                            ErrorCode::INVALID_REQUEST,
                            "a turn is already running in this session; wait for it or send \
                             session/cancel",
                        ));
                    }
                    session.say_commands(&cx);
                    // `/undo [N]`: no turn, no model; done while the turn
                    // slot is held, so no turn starts meanwhile.
                    if let Some(rest) = crate::prompt::undo_command(&prompt) {
                        let undone = tokio::task::block_in_place(|| session.undo(rest));
                        drop(running);
                        return match undone {
                            Ok(report) => {
                                session.send(
                                    &cx,
                                    SessionUpdate::AgentMessageChunk(ContentChunk::new(
                                        ContentBlock::Text(TextContent::new(report.to_string())),
                                    )),
                                );
                                responder.respond(PromptResponse::new(StopReason::EndTurn))
                            }
                            Err(why) => responder
                                .respond_with_error(Error::new(ErrorCode::INVALID_PARAMS, why)),
                        };
                    }
                    *running = Some(cancel.clone());
                }
                let turn = tokio::spawn(async move {
                    let answer = crate::prompt::run(session, prompt, cancel).await;
                    let _ = responder.respond_with_result(answer);
                });
                let mut turns = s_prompt
                    .turns
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                turns.retain(|t| !t.is_finished());
                turns.push(turn);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let session = match s_mode.session(&request.session_id.0) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                let ceiling = s_mode.options.open.mode;
                match ApprovalMode::from_name(&request.mode_id.0) {
                    Some(mode) if ceiling.is_some_and(|c| !mode.within(c)) => responder
                        .respond_with_error(Error::new(
                            ErrorCode::INVALID_PARAMS,
                            format!(
                                "the person started goat acp with --mode {}; a client may \
                                 lower that mode, never raise it",
                                ceiling.map_or("", ApprovalMode::name)
                            ),
                        )),
                    Some(mode) => {
                        session.driver.opened.mode.set(mode);
                        responder.respond(SetSessionModeResponse::new())
                    }
                    None => responder.respond_with_error(Error::new(
                        ErrorCode::INVALID_PARAMS,
                        "no such mode; use ask, accept-edits or read-only",
                    )),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Ok(session) = s_cancel.session(&notification.session_id.0)
                    && let Some(token) = &*session
                        .cancel
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                {
                    token.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(crate::wire::stdio())
        .await;
    stop_what_was_left(&state).await;
    ended.map_err(|e| anyhow::anyhow!("the ACP connection failed: {e}"))
}

/// The editor went away (its stdin ended) or the connection failed: no
/// one is left to answer a question or read an answer, so every turn still
/// running is cancelled as `session/cancel` would (a command is killed and
/// none of its changes land, ADR-0087) and waited for, so that it is
/// recorded as cancelled before the process exits (issue 39).
async fn stop_what_was_left(state: &State) {
    for session in state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
    {
        if let Some(token) = &*session
            .cancel
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            token.cancel();
        }
    }
    let turns = std::mem::take(&mut *state.turns.lock().unwrap_or_else(PoisonError::into_inner));
    for turn in turns {
        let _ = turn.await;
    }
}
