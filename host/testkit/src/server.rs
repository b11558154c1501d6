//! The scripted server: each connection answered by the next [`Reply`],
//! every request recorded.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::tls::TestCa;

/// One step of a scripted body.
#[derive(Clone, Debug)]
pub enum Step {
    /// Write these bytes (and flush).
    Bytes(Vec<u8>),
    /// Wait.
    Sleep(Duration),
}

/// Holds a [`Reply`] back, before its status line, until the test calls
/// [`release`](Self::release): the engine is "thinking" for as long as the
/// test needs (a run mid-turn, to be raced or killed). A release before
/// the reply is reached is remembered.
#[derive(Clone, Debug, Default)]
pub struct Hold(Arc<tokio::sync::Notify>);

impl Hold {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets the held reply go on.
    pub fn release(&self) {
        self.0.notify_one();
    }
}

/// How one connection is answered.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub steps: Vec<Step>,
    /// Wait before sending the status line (model load, prefill).
    pub delay_headers: Duration,
    /// Close the connection without answering at all.
    pub hang_up: bool,
    /// Wait for this to be released before answering.
    pub hold: Option<Hold>,
    /// Extra response headers (`location` for a redirect).
    pub headers: Vec<(String, String)>,
}

impl Reply {
    /// A 200 event stream with `body` sent in one write.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::sse_steps(vec![Step::Bytes(body.into())])
    }

    /// A 200 event stream written in `chunk`-byte pieces with a short pause
    /// between them, so they arrive as separate reads.
    pub fn sse_chunked(body: &[u8], chunk: usize) -> Self {
        let mut steps = Vec::new();
        for piece in body.chunks(chunk.max(1)) {
            steps.push(Step::Bytes(piece.to_vec()));
            steps.push(Step::Sleep(Duration::from_millis(1)));
        }
        Self::sse_steps(steps)
    }

    pub fn sse_steps(steps: Vec<Step>) -> Self {
        Self {
            status: 200,
            content_type: "text/event-stream",
            steps,
            delay_headers: Duration::ZERO,
            hang_up: false,
            hold: None,
            headers: Vec::new(),
        }
    }

    /// An error status with `body` of `content_type`.
    pub fn error(status: u16, content_type: &'static str, body: &str) -> Self {
        Self {
            status,
            content_type,
            steps: vec![Step::Bytes(body.as_bytes().to_vec())],
            delay_headers: Duration::ZERO,
            hang_up: false,
            hold: None,
            headers: Vec::new(),
        }
    }

    /// A redirect: `status` (301, 302, 303, 307, 308) to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        let mut reply = Self::error(status, "text/plain", "moved");
        reply
            .headers
            .push(("location".to_owned(), location.to_owned()));
        reply
    }

    /// This reply, held back until `hold` is released (see [`Hold`]).
    pub fn held(mut self, hold: &Hold) -> Self {
        self.hold = Some(hold.clone());
        self
    }

    /// Accept, read the request, and close without a response.
    pub fn hang_up() -> Self {
        Self {
            hang_up: true,
            ..Self::sse(Vec::new())
        }
    }
}

/// What the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Answers a request from what it contains: an engine that looks at what
/// it was sent (counts its tokens, refuses it as too long, summarises).
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// What answers the requests no route takes.
enum Script {
    /// The next reply in order; connections beyond the script are dropped.
    Fixed(VecDeque<Reply>),
    /// A reply made for each request.
    Responder(Responder),
}

impl Script {
    fn next(&mut self, request: &Recorded) -> Option<Reply> {
        match self {
            Self::Fixed(replies) => replies.pop_front(),
            Self::Responder(respond) => Some(respond(request)),
        }
    }
}

/// What an engine without the endpoint answers: llama-server's 404.
fn not_found() -> Reply {
    Reply::error(
        404,
        "application/json",
        r#"{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}"#,
    )
}

/// The paths a client asks about the engine itself (its context window,
/// its models) rather than for an answer. They are answered by routes, 404
/// unless a test routes them, so a script of answers is never used up by
/// them, and recorded apart ([`ScriptedServer::probes`]). All are `GET`s
/// but Ollama's `/api/show`, a `POST`.
const PROBE_PATHS: &[&str] = &[
    "/props",
    "/v1/props",
    "/v1/models",
    "/models",
    "/api/v0/models",
    "/api/show",
];

/// The probe answered by a route though it is a `POST`.
const POSTED_PROBE: &str = "/api/show";

/// The server. Dropping it stops accepting.
pub struct ScriptedServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// `GET` requests answered by a route.
    probes: Arc<Mutex<Vec<Recorded>>>,
    /// `GET` path -> its answer, reused for every request to it.
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    /// Connections whose writes failed because the client went away.
    closed_early: Arc<Mutex<u32>>,
    task: tokio::task::JoinHandle<()>,
    /// `http` or `https`.
    scheme: &'static str,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedServer {
    /// Listens on a free local port and answers requests with `replies` in
    /// order; requests beyond the script are dropped. Requests to the
    /// probe paths (`/props`, `/v1/models`, LM Studio's and Ollama's) are
    /// answered by routes instead
    /// (404 unless [`route`](Self::route) says otherwise).
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::listen(Script::Fixed(replies.into()), None, true).await
    }

    /// Listens and answers each request with what `respond` makes of it.
    pub async fn start_with(respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::listen(Script::Responder(Arc::new(respond)), None, true).await
    }

    /// As [`start_with`](Self::start_with), listening on `ip` (a free
    /// port) rather than loopback: for an engine that containers reach
    /// through their bridge's gateway.
    pub async fn start_with_on(
        ip: std::net::IpAddr,
        respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::listen_on(ip, Script::Responder(Arc::new(respond)), None, true).await
    }

    /// Answers `GET path` (or Ollama's `POST /api/show`) with `reply` from
    /// now on (every time), instead of the script; recorded in
    /// [`probes`](Self::probes).
    pub fn route(&self, path: &str, reply: Reply) {
        self.routes.lock().unwrap().insert(path.to_owned(), reply);
    }

    /// The requests routes answered, in order.
    pub fn probes(&self) -> Vec<Recorded> {
        self.probes.lock().unwrap().clone()
    }

    /// As [`start`](Self::start), for benchmarks: an instant engine does
    /// no JSON work, so request bodies are not parsed (recorded as `null`)
    /// and what is measured is the host alone. It keeps connections alive
    /// (answers in chunked encoding and reads the next request on the same
    /// connection), as llama-server, vLLM and Ollama do, so a client that
    /// reuses its connection is measured doing so.
    pub async fn start_unparsed(replies: Vec<Reply>) -> Self {
        Self::listen(Script::Fixed(replies.into()), None, false).await
    }

    /// As [`start`](Self::start), over TLS with a certificate `ca` signed;
    /// [`base_url`](Self::base_url) is `https://`. A handshake that fails
    /// (the client did not trust the certificate) uses up no reply.
    pub async fn start_tls(replies: Vec<Reply>, ca: &TestCa) -> Self {
        Self::listen(Script::Fixed(replies.into()), Some(ca.acceptor()), true).await
    }

    async fn listen(script: Script, tls: Option<TlsAcceptor>, parse: bool) -> Self {
        Self::listen_on(std::net::Ipv4Addr::LOCALHOST.into(), script, tls, parse).await
    }

    async fn listen_on(
        ip: std::net::IpAddr,
        script: Script,
        tls: Option<TlsAcceptor>,
        parse: bool,
    ) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Shared {
            requests: Arc::new(Mutex::new(Vec::new())),
            probes: Arc::new(Mutex::new(Vec::new())),
            routes: Arc::new(Mutex::new(
                PROBE_PATHS
                    .iter()
                    .map(|p| ((*p).to_owned(), not_found()))
                    .collect(),
            )),
            closed: Arc::new(Mutex::new(0)),
            script: Arc::new(Mutex::new(script)),
            parse,
            // Only the bench engine, which parses nothing, keeps
            // connections: every other test sees one request per connection.
            keep_alive: !parse,
        };
        let tls_on = tls.is_some();
        let server = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                socket.set_nodelay(true).unwrap();
                let (shared, tls) = (server.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve(socket, shared).await,
                        Some(tls) => {
                            let Ok(stream) = tls.accept(socket).await else {
                                return;
                            };
                            serve(stream, shared).await;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            requests: shared.requests,
            probes: shared.probes,
            routes: shared.routes,
            closed_early: shared.closed,
            task,
            scheme: if tls_on { "https" } else { "http" },
        }
    }

    /// `http://127.0.0.1:PORT/v1` (`https://` from [`start_tls`](Self::start_tls)).
    pub fn base_url(&self) -> String {
        format!("{}://{}/v1", self.scheme, self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived, for at most `within`;
    /// whether they did.
    pub async fn wait_for_requests(&self, n: usize, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.requests.lock().unwrap().len() < n {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    pub fn closed_early(&self) -> u32 {
        *self.closed_early.lock().unwrap()
    }
}

/// What every connection's task shares with the server.
#[derive(Clone)]
struct Shared {
    requests: Arc<Mutex<Vec<Recorded>>>,
    probes: Arc<Mutex<Vec<Recorded>>>,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    closed: Arc<Mutex<u32>>,
    script: Arc<Mutex<Script>>,
    parse: bool,
    /// Serve request after request on one connection ([`serve_kept_alive`]).
    keep_alive: bool,
}

/// Answers request after request on one connection, each with the next
/// reply of the script, in chunked encoding, until the client closes it or
/// the script runs out. Only a reply's status, headers and bytes are sent:
/// the bench engine does not hang up, hold or delay. Probe paths are
/// answered by routes, as [`serve`] answers them.
async fn serve_kept_alive<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S, shared: Shared) {
    loop {
        let Some(recorded) = read_request(&mut socket, shared.parse).await else {
            return;
        };
        let Some(reply) = answer(&shared, recorded) else {
            return;
        };
        let mut out = head(&reply, "transfer-encoding: chunked").into_bytes();
        for step in reply.steps {
            if let Step::Bytes(b) = step
                && !b.is_empty()
            {
                out.extend_from_slice(format!("{:x}\r\n", b.len()).as_bytes());
                out.extend_from_slice(&b);
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"0\r\n\r\n");
        if socket.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// The answer to `recorded`, recorded: a route's when it asks a probe path
/// (or another path a test routed), else the script's next reply. `None`
/// beyond the script: the connection is then dropped unrecorded, as if
/// nothing had accepted it.
fn answer(shared: &Shared, recorded: Recorded) -> Option<Reply> {
    let routed = (recorded.method == "GET" || recorded.path == POSTED_PROBE)
        .then(|| shared.routes.lock().unwrap().get(&recorded.path).cloned())
        .flatten();
    if let Some(reply) = routed {
        shared.probes.lock().unwrap().push(recorded);
        return Some(reply);
    }
    let reply = shared.script.lock().unwrap().next(&recorded)?;
    shared.requests.lock().unwrap().push(recorded);
    Some(reply)
}

/// A reply's status line and headers, with `framing` (how its body ends)
/// and the reply's own headers.
fn head(reply: &Reply, framing: &str) -> String {
    let extra: String = reply
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\n{framing}\r\ncache-control: no-cache\r\n{extra}\r\n",
        reply.status,
        if reply.status == 200 { "OK" } else { "Error" },
        reply.content_type
    )
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S, shared: Shared) {
    if shared.keep_alive {
        return serve_kept_alive(socket, shared).await;
    }
    let Some(recorded) = read_request(&mut socket, shared.parse).await else {
        return;
    };
    let Some(reply) = answer(&shared, recorded) else {
        return;
    };
    let closed = shared.closed;
    if reply.hang_up {
        return;
    }
    if let Some(hold) = &reply.hold {
        hold.0.notified().await;
    }
    // A zero sleep still waits for the next timer tick (about 1 ms).
    if !reply.delay_headers.is_zero() {
        tokio::time::sleep(reply.delay_headers).await;
    }
    if socket
        .write_all(head(&reply, "connection: close").as_bytes())
        .await
        .is_err()
    {
        *closed.lock().unwrap() += 1;
        return;
    }
    for step in reply.steps {
        match step {
            Step::Bytes(b) => {
                if socket.write_all(&b).await.is_err() || socket.flush().await.is_err() {
                    *closed.lock().unwrap() += 1;
                    return;
                }
            }
            Step::Sleep(d) => tokio::time::sleep(d).await,
        }
    }
    let _ = socket.shutdown().await;
}

async fn read_request<S: AsyncRead + Unpin>(socket: &mut S, parse: bool) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let header_end = loop {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + len {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = if parse {
        serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}
