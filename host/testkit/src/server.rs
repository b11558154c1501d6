//! The scripted server: each connection answered by the next [`Reply`],
//! every request recorded.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
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

/// The server. Dropping it stops accepting.
pub struct ScriptedServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
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
    /// Listens on a free local port and answers connections with
    /// `replies` in order; connections beyond the script are dropped.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::listen(replies, None, Mode::Scripted).await
    }

    /// As [`start`](Self::start), for benchmarks: an instant engine does
    /// no JSON work, so request bodies are not parsed (recorded as `null`)
    /// and what is measured is the host alone. It keeps connections alive
    /// (answers in chunked encoding and reads the next request on the same
    /// connection), as llama-server, vLLM and Ollama do, so a client that
    /// reuses its connection is measured doing so.
    pub async fn start_unparsed(replies: Vec<Reply>) -> Self {
        Self::listen(replies, None, Mode::Bench).await
    }

    /// As [`start`](Self::start), over TLS with a certificate `ca` signed;
    /// [`base_url`](Self::base_url) is `https://`. A handshake that fails
    /// (the client did not trust the certificate) uses up no reply.
    pub async fn start_tls(replies: Vec<Reply>, ca: &TestCa) -> Self {
        Self::listen(replies, Some(ca.acceptor()), Mode::Scripted).await
    }

    async fn listen(replies: Vec<Reply>, tls: Option<TlsAcceptor>, mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let closed_early = Arc::new(Mutex::new(0));
        let script = Arc::new(Mutex::new(VecDeque::from(replies)));
        let tls_on = tls.is_some();
        let (reqs, closed) = (requests.clone(), closed_early.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                socket.set_nodelay(true).unwrap();
                let (reqs, closed) = (reqs.clone(), closed.clone());
                let (script, tls) = (script.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None if mode == Mode::Bench => {
                            serve_kept_alive(socket, script, reqs).await;
                        }
                        None => {
                            let reply = script.lock().unwrap().pop_front();
                            if let Some(reply) = reply {
                                serve(socket, reply, reqs, closed, true).await;
                            }
                        }
                        Some(tls) => {
                            let Ok(stream) = tls.accept(socket).await else {
                                return;
                            };
                            let reply = script.lock().unwrap().pop_front();
                            if let Some(reply) = reply {
                                serve(stream, reply, reqs, closed, true).await;
                            }
                        }
                    }
                });
            }
        });
        Self {
            addr,
            requests,
            closed_early,
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

/// How a [`ScriptedServer`] serves its connections.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One reply per connection, then close; request bodies parsed.
    Scripted,
    /// Bodies not parsed, connections kept alive ([`ScriptedServer::start_unparsed`]).
    Bench,
}

/// Answers request after request on one connection, each with the next
/// reply of the script, in chunked encoding, until the client closes it or
/// the script runs out. Only a reply's status, headers and bytes are sent:
/// the bench engine does not hang up, hold or delay.
async fn serve_kept_alive(
    mut socket: TcpStream,
    script: Arc<Mutex<VecDeque<Reply>>>,
    reqs: Arc<Mutex<Vec<Recorded>>>,
) {
    loop {
        let Some(recorded) = read_request(&mut socket, false).await else {
            return;
        };
        reqs.lock().unwrap().push(recorded);
        let Some(reply) = script.lock().unwrap().pop_front() else {
            return;
        };
        let mut out = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n",
            reply.status,
            if reply.status == 200 { "OK" } else { "Error" },
            reply.content_type
        )
        .into_bytes();
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

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: S,
    reply: Reply,
    reqs: Arc<Mutex<Vec<Recorded>>>,
    closed: Arc<Mutex<u32>>,
    parse: bool,
) {
    let Some(recorded) = read_request(&mut socket, parse).await else {
        return;
    };
    reqs.lock().unwrap().push(recorded);
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
    let extra: String = reply
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\nconnection: close\r\ncache-control: no-cache\r\n{extra}\r\n",
        reply.status,
        if reply.status == 200 { "OK" } else { "Error" },
        reply.content_type
    );
    if socket.write_all(head.as_bytes()).await.is_err() {
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
