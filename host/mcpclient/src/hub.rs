//! The servers of one session: started at their first call, held to
//! their pinned definitions, stopped with the session.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use goat_command::{Containment, ContainmentMode, Network, ServerSpec, WorkspaceRules};
use goat_engine::ToolSchema;
use goat_router::{ExternalOutcome, ExternalTool, ExternalTools};
use goat_store::{CallErrorKind, CallStatus};
use rmcp::model::{CallToolRequestParams, Tool};
use serde_json::Value;
use tokio::sync::Notify;

use crate::connection::{Connection, MAX_MESSAGE_BYTES, ServerProxy, handshake, keep_stderr};
use crate::offer::{self, CALL_TOOL, SEARCH_TOOL};
use crate::pins::changed_tools;
use crate::registry::{PinnedTool, ServerEntry, exposed_name};
use crate::render;

/// Over this share of the context window, the tools are offered on
/// demand (ADR-0086).
pub const ON_DEMAND_SHARE: f64 = 0.10;

/// The trusted servers of one session.
pub struct Hub {
    servers: Vec<ServerEntry>,
    base: Containment,
    runtime: Option<tokio::runtime::Runtime>,
    connections: Mutex<HashMap<String, Connection>>,
    /// Tools found changed (or gone) when their server started: name and
    /// why.
    suspended: Mutex<HashMap<String, String>>,
    on_demand: OnceLock<bool>,
}

/// A hub that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("the MCP client's runtime could not start: {0}")]
pub struct HubError(std::io::Error);

impl Hub {
    /// A hub for `servers` (the trusted ones are offered), contained as
    /// `base` (the session's command containment) says, with each
    /// server's own network, variables and readable directories on top.
    pub fn new(servers: Vec<ServerEntry>, base: Containment) -> Result<Self, HubError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("goat-mcp-client")
            .enable_all()
            .build()
            .map_err(HubError)?;
        Ok(Self {
            servers: servers
                .into_iter()
                .filter(|s| s.trusted.is_some())
                .collect(),
            base,
            runtime: Some(runtime),
            connections: Mutex::new(HashMap::new()),
            suspended: Mutex::new(HashMap::new()),
            on_demand: OnceLock::new(),
        })
    }

    /// Whether any server is offered.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Runs `future` in the hub's runtime and waits for it, from a thread
    /// outside it (the router's).
    fn block<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let runtime = self.runtime.as_ref()?;
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv().ok()
    }

    /// Each pinned tool, by the name the model calls it. A name pinned
    /// twice for one server (an older GOAT trusted such a server) is left
    /// out: a call could not say which definition it is.
    fn pinned(&self) -> Vec<(&ServerEntry, &PinnedTool, String)> {
        self.servers
            .iter()
            .flat_map(|server| {
                let tools: Vec<&PinnedTool> =
                    server.trusted.iter().flat_map(|t| t.tools.iter()).collect();
                let once =
                    |tool: &PinnedTool| tools.iter().filter(|t| t.name == tool.name).count() == 1;
                tools
                    .iter()
                    .copied()
                    .filter(|tool| once(tool))
                    .filter_map(|tool| {
                        exposed_name(&server.name, &tool.name)
                            .ok()
                            .map(|name| (server, tool, name))
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn all_tools(&self) -> Vec<ExternalTool> {
        self.pinned()
            .into_iter()
            .map(|(server, tool, name)| ExternalTool {
                name,
                server: server.name.clone(),
                description: render::escape(&tool.description),
                parameters: tool.input_schema.clone(),
                writes: server.writes,
                network: server.network || !server.hosts.is_empty(),
            })
            .collect()
    }

    fn on_demand(&self) -> bool {
        self.on_demand.get().copied().unwrap_or(false)
    }

    /// Stops a server (its whole process group), closing its client in
    /// the runtime.
    fn stop(&self, mut connection: Connection) {
        let service = connection.service.take();
        let _ = self.block(async move {
            if let Some(service) = service {
                let _ = service.cancel().await;
            }
        });
        if let Some(process) = connection.process.take() {
            process.stop();
        }
    }

    /// Starts (or connects to) `server`, shakes hands, and checks what it
    /// offers against what was trusted.
    fn start(
        &self,
        server: &ServerEntry,
        rules: &dyn WorkspaceRules,
    ) -> Result<Connection, String> {
        let connection = match &server.url {
            Some(url) => self.connect(server, url)?,
            None => self.spawn(server, rules)?,
        };
        let changed = changed_tools(server, &connection.live);
        let mut suspended = self
            .suspended
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (tool, why) in changed {
            if let Ok(name) = exposed_name(&server.name, &tool) {
                suspended.insert(name, why);
            }
        }
        Ok(connection)
    }

    /// Connects to a server at a URL (no process: it runs elsewhere).
    fn connect(&self, server: &ServerEntry, url: &str) -> Result<Connection, String> {
        let bearer = match &server.bearer_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                format!("the variable {var}, named for its bearer token, is not set")
            })?),
            None => None,
        };
        let timeout = Duration::from_secs(server.timeout_secs);
        let (service, live) = self
            .block(crate::connection::handshake_http(
                url.to_owned(),
                bearer,
                timeout,
            ))
            .unwrap_or_else(|| Err("the MCP client's runtime is gone".to_owned()))
            .map_err(|why| render::escape(&why))?;
        Ok(Connection {
            service: Some(service),
            process: None,
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            oversize: Arc::new(Notify::new()),
            live,
            proxy: None,
        })
    }

    /// Starts a stdio server contained and shakes hands.
    fn spawn(
        &self,
        server: &ServerEntry,
        rules: &dyn WorkspaceRules,
    ) -> Result<Connection, String> {
        let proxy = proxy_for(server)?;
        let mut process = start_contained(server, &self.base, rules, proxy.as_deref())?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = process.stderr.take() {
            keep_stderr(err, Arc::clone(&stderr));
        }
        let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
            return Err("its pipes could not be opened".to_owned());
        };
        let oversize = Arc::new(Notify::new());
        let timeout = Duration::from_secs(server.timeout_secs);
        let shaken = self
            .block(handshake(stdin, stdout, Arc::clone(&oversize), timeout))
            .unwrap_or_else(|| Err("the MCP client's runtime is gone".to_owned()));
        let mut connection = Connection {
            service: None,
            process: Some(process),
            stderr,
            oversize,
            live: Vec::new(),
            proxy,
        };
        match shaken {
            Ok((service, live)) => {
                connection.service = Some(service);
                connection.live = live;
                // Between calls it does nothing (ADR-0086).
                if let Some(process) = &connection.process {
                    process.pause();
                }
                Ok(connection)
            }
            Err(why) => {
                let ended = connection.ended(Duration::from_millis(300));
                let tail = connection.stderr_tail();
                self.stop(connection);
                // A server that fetches itself at start (npx, uvx) waits
                // on a network it does not have: say so.
                let offline = if server.network || !server.hosts.is_empty() {
                    ""
                } else {
                    "; it has no network: one that downloads as it starts (npx -y, uvx) needs \
                     --network or --allow-host, or its package installed beforehand and its \
                     directory given with --read"
                };
                Err(match ended {
                    Some(how) => format!("{why}; it ended ({how}){tail}{offline}"),
                    None => format!("{why}{tail}{offline}"),
                })
            }
        }
    }
}

/// Starts `server` contained as `base` says (with `rules` on the
/// workspace), lists what it offers now, and stops it.
pub fn list_live(
    server: &ServerEntry,
    base: &Containment,
    rules: &dyn WorkspaceRules,
) -> Result<Vec<Tool>, String> {
    let hub = Hub::new(Vec::new(), base.clone()).map_err(|e| e.to_string())?;
    let connection = hub.start(server, rules)?;
    let live = connection.live.clone();
    hub.stop(connection);
    Ok(live)
}

/// The proxy a server whose network is a list of hosts goes through.
fn proxy_for(server: &ServerEntry) -> Result<Option<Arc<ServerProxy>>, String> {
    if server.hosts.is_empty() {
        return Ok(None);
    }
    let list = goat_egress::Allowlist::parse(&server.hosts)
        .map_err(|e| format!("its list of hosts: {e}"))?;
    Ok(Some(Arc::new(ServerProxy::new(list))))
}

/// The setting a server's list of hosts comes from, named in refusals.
pub const SERVER_HOSTS: &str = "the server's --allow-host list (goat mcp add)";

/// Starts `server` in a view: the session's containment, with its own
/// network, readable directories and variables (read now from GOAT's
/// environment; a variable that is not set is left out).
/// With `proxy`, its network is that proxy alone.
pub fn start_contained(
    server: &ServerEntry,
    base: &Containment,
    rules: &dyn WorkspaceRules,
    proxy: Option<&ServerProxy>,
) -> Result<goat_command::Server, String> {
    let Some((program, args)) = server.command.split_first() else {
        return Err("it has no command to start".to_owned());
    };
    let mut containment = base.clone();
    containment.mode = ContainmentMode::Namespace;
    containment.network = match (server.network, proxy.is_some()) {
        (true, _) => Network::Open,
        (false, true) => Network::Proxied,
        (false, false) => Network::Closed,
    };
    containment.read_paths.extend(server.read.iter().cloned());
    let env: Vec<(String, OsString)> = server
        .env
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (name.clone(), value)))
        .collect();
    goat_command::start_server(
        &containment,
        rules,
        &ServerSpec {
            program,
            args,
            env: &env,
            writable: server.writes,
            proxy: proxy.map(|p| p as &dyn goat_command::ProxyLink),
        },
    )
    .map_err(|e| format!("it could not be started contained: {e}"))
}

/// A failure before or around the call, for the model.
fn server_failed(text: String) -> ExternalOutcome {
    ExternalOutcome {
        status: CallStatus::Error,
        error_kind: Some(CallErrorKind::ServerFailed),
        text,
        changes: None,
        egress: Vec::new(),
        refusals: Vec::new(),
    }
}

impl ExternalTools for Hub {
    fn tools(&self) -> Vec<ExternalTool> {
        // A suspended tool stays findable, so that a call to it says why
        // it does not run; it is no longer offered.
        self.all_tools()
    }

    fn schemas(&self) -> Vec<ToolSchema> {
        if self.servers.is_empty() {
            return Vec::new();
        }
        if self.on_demand() {
            return offer::on_demand_schemas(&self.all_tools());
        }
        let suspended = self
            .suspended
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.all_tools()
            .into_iter()
            .filter(|t| !suspended.contains_key(&t.name))
            .map(|t| ToolSchema {
                name: t.name,
                description: t.description,
                parameters: t.parameters,
            })
            .collect()
    }

    fn status(&self) -> Vec<String> {
        let tools = self.all_tools();
        // The order `call` takes them in: connections, then suspended.
        let running = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let suspended = self
            .suspended
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let how = match self.on_demand.get() {
            Some(true) => "offered on demand (mcp_search, mcp_call)",
            Some(false) => "offered",
            None => "not offered yet",
        };
        self.servers
            .iter()
            .map(|server| {
                let own: Vec<&ExternalTool> =
                    tools.iter().filter(|t| t.server == server.name).collect();
                let cost: u64 = own.iter().map(|t| offer::tool_tokens(t)).sum();
                let off = own
                    .iter()
                    .filter(|t| suspended.contains_key(&t.name))
                    .count();
                format!(
                    "{}: {} tools, about {cost} tokens, {how}; {}{}",
                    server.name,
                    own.len(),
                    if running.contains_key(&server.name) {
                        "running"
                    } else {
                        "starts at its first call"
                    },
                    if off > 0 {
                        format!("; {off} suspended (goat mcp show {})", server.name)
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }

    fn fit_window(&self, tokens: u64) {
        let _ = self.on_demand.get_or_init(|| {
            let cost: u64 = self.all_tools().iter().map(offer::tool_tokens).sum();
            (cost as f64) > (tokens as f64) * ON_DEMAND_SHARE
        });
    }

    fn indirect(&self, name: &str, args: &Value) -> Option<Result<String, (String, Value)>> {
        if !self.on_demand() || self.servers.is_empty() {
            return None;
        }
        match name {
            SEARCH_TOOL => {
                let query = args
                    .get("query")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let suspended = self
                    .suspended
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let tools: Vec<ExternalTool> = self
                    .all_tools()
                    .into_iter()
                    .filter(|t| !suspended.contains_key(&t.name))
                    .collect();
                Some(Ok(offer::search(&tools, query)))
            }
            CALL_TOOL => {
                let tool = args.get("tool").and_then(Value::as_str).unwrap_or_default();
                let arguments = args
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
                Some(Err((tool.to_owned(), arguments)))
            }
            _ => None,
        }
    }

    fn call(
        &self,
        tool: &str,
        args: &Value,
        rules: &dyn WorkspaceRules,
        interrupt: &goat_command::Interrupt,
    ) -> ExternalOutcome {
        let pinned = self.pinned();
        let Some((server, pinned_tool, _)) = pinned.iter().find(|(_, _, name)| name == tool) else {
            return server_failed(format!("no MCP tool is called '{tool}'"));
        };
        let not_run = |when: String| ExternalOutcome {
            status: CallStatus::Error,
            error_kind: Some(CallErrorKind::Cancelled),
            text: format!("{tool} did not run: the turn was cancelled {when}"),
            changes: None,
            egress: Vec::new(),
            refusals: Vec::new(),
        };
        if interrupt.is_fired() {
            return not_run("before it started".to_owned());
        }
        let mut connections = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !connections.contains_key(&server.name) {
            match self.start(server, rules) {
                Ok(connection) => {
                    connections.insert(server.name.clone(), connection);
                }
                Err(why) => {
                    return server_failed(format!(
                        "{tool} did not run: the MCP server '{}' could not be started: {}",
                        server.name,
                        render::escape(&why)
                    ));
                }
            }
            if interrupt.is_fired() {
                return not_run(format!(
                    "while its MCP server '{}' was starting",
                    server.name
                ));
            }
        }
        if let Some(why) = self
            .suspended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
        {
            return ExternalOutcome {
                status: CallStatus::Denied,
                error_kind: Some(CallErrorKind::Denied),
                text: format!("denied: {tool} is suspended: {why}"),
                changes: None,
                egress: Vec::new(),
                refusals: vec![goat_store::Refusal::new(
                    goat_store::RefusedBy::Suspended,
                    Some(tool.to_owned()),
                    format!("{tool} is suspended: {why}"),
                )],
            };
        }
        let Some(connection) = connections.get_mut(&server.name) else {
            return server_failed(format!("the MCP server '{}' is not running", server.name));
        };
        let Some(peer) = connection.peer() else {
            return server_failed(format!("the MCP server '{}' is not connected", server.name));
        };
        let watch = server
            .writes
            .then(|| goat_command::WorkspaceWatch::take(&self.base.workspace, rules));
        let mut params = CallToolRequestParams::new(pinned_tool.name.clone());
        params.arguments = args.as_object().cloned();
        let timeout = Duration::from_secs(server.timeout_secs);
        let oversize = Arc::clone(&connection.oversize);
        let proxy = connection.proxy.clone();
        let decided_before = proxy.as_ref().map_or(0, |p| p.decided());
        if let Some(process) = &connection.process {
            process.resume();
        }
        let interrupt = interrupt.clone();
        let started = std::time::Instant::now();
        let answer = self.block(async move {
            // Dropping the SDK's call future (the interrupt) sends the
            // server `notifications/cancelled` for it. The call is polled
            // first, so a call that was interrupted was also sent.
            tokio::select! {
                biased;
                answer = tokio::time::timeout(timeout, peer.call_tool(params)) => match answer {
                    Ok(Ok(result)) => Answer::Result(Box::new(result)),
                    Ok(Err(e)) => Answer::Failed(e.to_string()),
                    Err(_) => Answer::TimedOut,
                },
                () = oversize.notified() => Answer::Oversize,
                () = goat_router::interrupt_fired(&interrupt) => Answer::Interrupted,
            }
        });
        // A server whose connection failed (it died, or closed its output)
        // is let end before it is stopped: a stopped process cannot finish
        // exiting, and how it ended is what the person is told (stopped
        // first, the exit was seen only when the kernel was quicker than
        // the stop). Its changes are read after, so nothing it does
        // meanwhile escapes the record.
        let ended = match &answer {
            Some(Answer::Failed(_)) => connections
                .get_mut(&server.name)
                .and_then(|c| c.ended(SERVER_END_WAIT)),
            _ => None,
        };
        // Stopped before its changes are read: nothing it does after its
        // answer escapes the record.
        if let Some(connection) = connections.get(&server.name)
            && let Some(process) = &connection.process
        {
            process.pause();
        }
        let mut warnings = String::new();
        let changes = match watch {
            Some(Ok(watch)) => {
                for (dir, removed) in watch.remove_planted(rules) {
                    warnings.push_str(&match removed {
                        Ok(()) => format!(
                            "\n[goat: the MCP server '{}' made a repository directory '{}'; GOAT \
                             removed it (git would run what it holds)]",
                            server.name,
                            render::escape(&dir)
                        ),
                        Err(e) => format!(
                            "\n[goat: WARNING: the MCP server '{}' made a repository directory \
                             '{}', and GOAT could not remove it ({e}); do not run git in this \
                             workspace before you look at it]",
                            server.name,
                            render::escape(&dir)
                        ),
                    });
                }
                match watch.changes(rules) {
                    Ok(set) => Some(set),
                    Err(e) => {
                        warnings.push_str(&format!(
                            "\n[goat: what the server changed could not be read ({e}); goat \
                             undo cannot put it back]"
                        ));
                        None
                    }
                }
            }
            Some(Err(e)) => {
                warnings.push_str(&format!(
                    "\n[goat: the workspace could not be read before the call ({e}); what the \
                     server changed is not recorded and goat undo cannot put it back]"
                ));
                None
            }
            None => None,
        };
        // What the proxy decided during this call, recorded against it
        // and told to the model.
        let (egress, egress_note) = match &proxy {
            Some(proxy) => {
                let mut served = proxy.all();
                served
                    .decisions
                    .drain(..decided_before.min(served.decisions.len()));
                (
                    goat_router::egress::records(&served),
                    goat_router::egress::refusals_note(&served, SERVER_HOSTS, "this server"),
                )
            }
            None => (Vec::new(), String::new()),
        };
        let name = &server.name;
        let outcome = match answer {
            Some(Answer::Result(result)) => {
                let text = render::render(&result);
                if result.is_error == Some(true) {
                    ExternalOutcome {
                        status: CallStatus::Error,
                        error_kind: Some(CallErrorKind::ToolError),
                        text: format!("{tool} reported an error: {text}"),
                        changes: None,
                        egress: Vec::new(),
                        refusals: Vec::new(),
                    }
                } else {
                    ExternalOutcome {
                        status: CallStatus::Ok,
                        error_kind: None,
                        text,
                        changes: None,
                        egress: Vec::new(),
                        refusals: Vec::new(),
                    }
                }
            }
            Some(Answer::Interrupted) => ExternalOutcome {
                status: CallStatus::Error,
                error_kind: Some(CallErrorKind::Cancelled),
                text: format!(
                    "{tool} was cancelled with the turn after {:.2} s: GOAT asked the MCP \
                     server '{name}' to cancel it (notifications/cancelled){}; an answer it sends \
                     later is dropped",
                    started.elapsed().as_secs_f64(),
                    if connections.get(name).is_some_and(|c| c.process.is_some()) {
                        " and holds the server still until its next call"
                    } else {
                        ""
                    }
                ),
                changes: None,
                egress: Vec::new(),
                refusals: Vec::new(),
            },
            Some(Answer::TimedOut) => {
                if let Some(connection) = connections.remove(name) {
                    self.stop(connection);
                }
                ExternalOutcome {
                    status: CallStatus::Error,
                    error_kind: Some(CallErrorKind::Timeout),
                    text: format!(
                        "{tool} timed out after {} s: the MCP server '{name}' was stopped, with \
                         everything it started; it starts again at its next call",
                        timeout.as_secs()
                    ),
                    changes: None,
                    egress: Vec::new(),
                    refusals: Vec::new(),
                }
            }
            Some(Answer::Oversize) => {
                if let Some(connection) = connections.remove(name) {
                    self.stop(connection);
                }
                ExternalOutcome {
                    status: CallStatus::Error,
                    error_kind: Some(CallErrorKind::TooLarge),
                    text: format!(
                        "{tool} failed: the MCP server '{name}' sent a message over {} MiB, which \
                         GOAT dropped unread; the server was stopped and starts again at its next \
                         call",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ),
                    changes: None,
                    egress: Vec::new(),
                    refusals: Vec::new(),
                }
            }
            Some(Answer::Failed(why)) => {
                let mut text = format!("{tool} failed: {}", render::escape(&why));
                if let Some(connection) = connections.remove(name) {
                    match ended {
                        Some(how) => {
                            text = format!(
                                "{tool} failed: the MCP server '{name}' ended during the call \
                             ({how}){}; it starts again at its next call",
                                connection.stderr_tail()
                            )
                        }
                        None => text.push_str(&format!(
                            "; the MCP server '{name}' was stopped and starts again at its next \
                             call"
                        )),
                    }
                    self.stop(connection);
                }
                server_failed(text)
            }
            None => server_failed("the MCP client's runtime is gone".to_owned()),
        };
        let mut outcome = ExternalOutcome {
            changes,
            egress,
            refusals: Vec::new(),
            ..outcome
        };
        outcome.text.push_str(&egress_note);
        outcome.text.push_str(&warnings);
        outcome
    }
}

/// How a call ended, in the runtime.
enum Answer {
    Result(Box<rmcp::model::CallToolResult>),
    Failed(String),
    TimedOut,
    Oversize,
    Interrupted,
}

/// How long a server whose pipe closed during a call is given to be seen
/// ending, so the result can say how it ended (a loaded machine can take
/// more than a second to reap a view); past it, it is stopped.
const SERVER_END_WAIT: Duration = Duration::from_secs(5);

impl Drop for Hub {
    fn drop(&mut self) {
        let connections: Vec<Connection> = self
            .connections
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, c)| c)
            .collect();
        for connection in connections {
            self.stop(connection);
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
