//! The MCP server: the handshake opens the session, `tools/list` says what
//! is on offer, `tools/call` is a direct call down the one road.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};

use goat_engine::{CancellationToken, ToolCall};
use goat_router::Approver;
use goat_session::direct::{DirectSession, Prepared};
use goat_session::text::escape_controls;
use goat_store::{CallOutcome, CallStatus};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

use crate::approve::ElicitApprover;
use crate::tools::mcp_tools;

/// Largest `tools/call` arguments object, as JSON, that is taken down the
/// road: a `write_file` of a large source file fits many times over; a
/// call past it is refused before anything is recorded, so no client can
/// fill the store. (The transport itself drops any message over rmcp's
/// 16 MiB line limit.)
pub const MAX_ARGUMENTS_BYTES: usize = 4 * 1024 * 1024;

/// What is said on stderr, one line each (the CLI's notes).
pub type Say = Box<dyn Fn(&str) + Send + Sync>;

/// One served connection: the session, opened at the handshake.
struct GoatServer {
    prepared: Mutex<Option<Prepared>>,
    session: OnceLock<DirectSession>,
    /// The client's name, as the session records it (escaped when said).
    client: OnceLock<String>,
    say: Say,
    /// Fired when the client goes away (see [`Watched`]): every call it
    /// left running is stopped at once, as its own cancel would stop it.
    gone: CancellationToken,
}

/// Serves MCP on stdin and stdout until the client closes them. The
/// session is made when the client says who it is.
pub async fn serve_stdio(prepared: Prepared, say: Say) -> anyhow::Result<()> {
    serve(prepared, say, rmcp::transport::stdio()).await
}

/// Serves MCP, newline-delimited JSON-RPC as on stdio, on `read` and
/// `write` until the client closes them: [`serve_stdio`] on other pipes
/// (the benchmark's in-memory ones).
pub async fn serve<R, W>(prepared: Prepared, say: Say, (read, write): (R, W)) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let gone = CancellationToken::new();
    let server = GoatServer {
        prepared: Mutex::new(Some(prepared)),
        session: OnceLock::new(),
        client: OnceLock::new(),
        say,
        gone: gone.clone(),
    };
    let read = Watched {
        inner: read,
        gone: gone.clone(),
    };
    let write = Watched {
        inner: write,
        gone: gone.clone(),
    };
    let running = server.serve((read, write)).await?;
    running.waiting().await?;
    gone.cancel();
    Ok(())
}

/// One end of the client's pipes, watched for the client going away: its
/// input ends (EOF) or fails, or an answer cannot be written to it.
///
/// # Security
///
/// The SDK lets the calls a client left running finish for a while after
/// its input ends, so that their answers can still be sent. A client that
/// has gone cannot be asked anything nor told the outcome, so what it
/// started is stopped at once instead: a command is killed with its
/// process group and none of its changes land, a question is a denial
/// (ADR-0087, issue 39).
struct Watched<T> {
    inner: T,
    gone: CancellationToken,
}

impl<T> Watched<T> {
    /// Fires `gone` when `polled` says the pipe failed.
    fn failed<V>(&self, polled: Poll<std::io::Result<V>>) -> Poll<std::io::Result<V>> {
        if matches!(polled, Poll::Ready(Err(_))) {
            self.gone.cancel();
        }
        polled
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let (before, room) = (buf.filled().len(), buf.remaining());
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        // Nothing read into room for something: the end of the input.
        if matches!(polled, Poll::Ready(Ok(()))) && room > 0 && buf.filled().len() == before {
            self.gone.cancel();
        }
        self.failed(polled)
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        self.failed(polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.failed(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.failed(polled)
    }
}

impl GoatServer {
    /// Opens the session for the client `request` names, with the client's
    /// person as the approver when it says it can ask them.
    fn open(
        &self,
        request: &InitializeRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let Some(prepared) = self
            .prepared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Err(McpError::invalid_request(
                "this connection is already initialized",
                None,
            ));
        };
        let asks = context
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form);
        let approver: Option<Box<dyn Approver>> = asks.then(|| {
            Box::new(ElicitApprover::new(
                context.peer.clone(),
                tokio::runtime::Handle::current(),
            )) as Box<dyn Approver>
        });
        let client = &request.client_info.name;
        let session = prepared.open(client, approver).map_err(|e| {
            McpError::internal_error(format!("GOAT could not open a session: {e:#}"), None)
        })?;
        (self.say)(&format!(
            "serving session {} to {} in {} (mode {}; approvals {})",
            session.session_id,
            escape_controls(client),
            session.workspace.display(),
            session.mode.name(),
            if asks {
                "asked through the client"
            } else {
                "not asked: the client cannot ask its person"
            }
        ));
        let _ = self.client.set(client.clone());
        let _ = self.session.set(session);
        Ok(())
    }

    /// `goat_undo` (`--offer-undo`): puts back the files the session's
    /// last call with changes (or turn `turn`) changed, as `goat undo`
    /// does, and says what it did; an error result unless every file is
    /// back and recorded so.
    fn undo(
        &self,
        session: &DirectSession,
        client: &str,
        arguments: &serde_json::Value,
    ) -> CallToolResult {
        let turn = match arguments.get("turn") {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::Number(n)) => n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| format!("turn must be a positive whole number, not {n}")),
            Some(other) => Err(format!("turn must be a positive whole number, not {other}")),
        };
        let undone = turn.and_then(|turn| {
            // Never beside a call: rmcp runs requests at once, and a call's
            // write landing mid-undo would be overwritten.
            tokio::task::block_in_place(|| {
                session.calls.while_no_call(|| {
                    goat_session::undo::undo_driven(&session.store, &session.session_id, turn)
                })
            })
            .map_err(|e| format!("nothing was undone: {e:#}"))
        });
        let (text, ok) = match undone {
            Ok(report) => (report.to_string(), report.succeeded()),
            Err(why) => (why, false),
        };
        (self.say)(&format!(
            "{} {}: {}",
            escape_controls(client),
            crate::tools::UNDO_TOOL,
            escape_controls(text.lines().next().unwrap_or(""))
        ));
        let content = vec![ContentBlock::text(text)];
        if ok {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        }
    }

    fn session(&self) -> Result<&DirectSession, McpError> {
        self.session
            .get()
            .ok_or_else(|| McpError::invalid_request("initialize first: no session is open", None))
    }
}

impl ServerHandler for GoatServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("goat", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "GOAT's sandboxed tools: paths are relative to the workspace root. A call may \
                 be denied by the person's permission rules; its result says so and which \
                 flag or rule would allow it, and then nothing happened.",
            )
    }

    /// Only the revisions with an `initialize` handshake: it is where the
    /// client names itself and says whether it can ask its person.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let info = self.negotiate_initialize(&request)?;
        self.open(&request, &context)?;
        Ok(info)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let session = self.session()?;
        let mut tools = mcp_tools(&session.calls.offered(), &session.calls.schemas());
        if session.offer_undo {
            tools.push(crate::tools::undo_tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.session()?;
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let raw = arguments.to_string();
        if raw.len() > MAX_ARGUMENTS_BYTES {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "refused: the arguments are {} bytes, over GOAT's limit of {MAX_ARGUMENTS_BYTES}; \
                 nothing ran and nothing was recorded",
                raw.len()
            ))])
            .into());
        }
        let name = request.name.to_string();
        let client = self.client.get().map_or("the client", String::as_str);
        if name == crate::tools::UNDO_TOOL && session.offer_undo {
            return Ok(self.undo(session, client, &arguments).into());
        }
        let call = ToolCall {
            index: 0,
            id: format!("mcp-{}", context.id),
            id_generated: true,
            name: name.clone(),
            raw_arguments: raw,
            arguments: Ok(arguments),
        };
        let said = format!("{client} called {name} over MCP");
        // The client's notifications/cancelled for this request, or its
        // going away, stops a command or MCP call that is running.
        let stop = self.gone.child_token();
        let relay = tokio::spawn({
            let (cancelled, stop) = (context.ct.clone(), stop.clone());
            async move {
                cancelled.cancelled().await;
                stop.cancel();
            }
        });
        let outcome = session.calls.call_until(&said, &call, Some(&stop)).await;
        relay.abort();
        if self.gone.is_cancelled() {
            (self.say)(&format!(
                "{} went away during {} (its outcome follows)",
                escape_controls(client),
                escape_controls(&name)
            ));
        }
        match outcome {
            Ok(outcome) => {
                (self.say)(&format!(
                    "{} {}: {}",
                    escape_controls(client),
                    escape_controls(&name),
                    status_word(&outcome)
                ));
                Ok(result(outcome).into())
            }
            Err(e) => {
                let why = format!("GOAT could not run this call: {e}");
                (self.say)(&escape_controls(&why));
                Ok(CallToolResult::error(vec![ContentBlock::text(why)]).into())
            }
        }
    }
}

/// One word for the stderr line.
fn status_word(outcome: &CallOutcome) -> &'static str {
    match outcome.status {
        CallStatus::Ok if outcome.refusals.is_empty() => "ok",
        CallStatus::Ok => "partly refused",
        CallStatus::Denied => "denied",
        CallStatus::Error if outcome.error_kind == Some(goat_store::CallErrorKind::Cancelled) => {
            "cancelled"
        }
        CallStatus::Error => "failed",
        CallStatus::Pending | CallStatus::Interrupted => "not run",
    }
}

/// The call's result as the client gets it: the text the model would get,
/// an error result for anything but a success nothing refused (a command
/// that ran while its proxy refused a host, or whose change set was
/// refused, is an error, each refusal named first).
fn result(outcome: CallOutcome) -> CallToolResult {
    let mut text = String::new();
    // A denied call's result is its reason already.
    let said = outcome.status == CallStatus::Denied;
    for refusal in outcome.refusals.iter().filter(|_| !said) {
        text.push_str(&format!("refused ({}): {}\n", refusal.by, refusal.reason));
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&outcome.result);
    let content = vec![ContentBlock::text(text)];
    match outcome.status {
        CallStatus::Ok if outcome.refusals.is_empty() => CallToolResult::success(content),
        CallStatus::Ok
        | CallStatus::Error
        | CallStatus::Denied
        | CallStatus::Pending
        | CallStatus::Interrupted => CallToolResult::error(content),
    }
}
