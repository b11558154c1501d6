//! One running server: the contained process, the pump that frames what
//! it writes, and the SDK's client over both.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCreateRequestMethod,
    Implementation, ListRootsRequestMethod, ProtocolVersion, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

/// The largest message GOAT reads from a server. A longer one is dropped
/// as it streams (never held whole), and the call waiting for it is told.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// How much of a server's stderr is kept, for saying why it failed.
const STDERR_TAIL_BYTES: usize = 2048;

/// A server that is up: its process and the client talking to it.
pub struct Connection {
    /// The SDK's client; dropped (in the runtime) before the process.
    pub service: Option<RunningService<RoleClient, GoatClient>>,
    /// The contained process (none for a server at a URL).
    pub process: Option<goat_command::Server>,
    /// What it said on stderr, last.
    pub stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Told when a message over [`MAX_MESSAGE_BYTES`] was dropped.
    pub oversize: Arc<Notify>,
    /// The tools it offers now.
    pub live: Vec<Tool>,
    /// GOAT's proxy, serving it for its life when its network is a list.
    pub proxy: Option<Arc<ServerProxy>>,
}

/// GOAT's egress proxy (ADR-0082) serving one server for as long as it
/// lives; what it decided is read call by call.
#[derive(Debug)]
pub struct ServerProxy {
    proxy: goat_egress::Proxy,
    serving: Mutex<Vec<goat_egress::Serving>>,
}

impl ServerProxy {
    /// A proxy allowing `list` only.
    pub fn new(list: goat_egress::Allowlist) -> Self {
        Self {
            proxy: goat_egress::Proxy::new(list),
            serving: Mutex::new(Vec::new()),
        }
    }

    /// How many decisions it has made so far.
    pub fn decided(&self) -> usize {
        self.all().decisions.len()
    }

    /// Every decision so far.
    pub fn all(&self) -> goat_egress::Served {
        let mut all = goat_egress::Served::default();
        for serving in self
            .serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let served = serving.decisions();
            all.decisions.extend(served.decisions);
            all.dropped += served.dropped;
        }
        all
    }
}

impl goat_command::ProxyLink for ServerProxy {
    fn serve(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        let serving = self.proxy.serve(listener)?;
        self.serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(serving);
        Ok(())
    }
}

impl Connection {
    /// A handle to call through.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.service.as_ref().map(|s| s.peer().clone())
    }

    /// What it said on stderr last, escaped, on one line.
    pub fn stderr_tail(&self) -> String {
        let bytes: Vec<u8> = self
            .stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(
                "; its last words on stderr: {}",
                crate::render::escape(text).replace('\n', " | ")
            )
        }
    }

    /// How it ended, if it has, waiting up to `wait` for it to.
    pub fn ended(&mut self, wait: Duration) -> Option<String> {
        let until = std::time::Instant::now() + wait;
        let process = self.process.as_mut()?;
        loop {
            if let Some(status) = process.exited() {
                return Some(
                    match (
                        status.code(),
                        std::os::unix::process::ExitStatusExt::signal(&status),
                    ) {
                        (Some(code), _) => format!("exit status {code}"),
                        (None, Some(signal)) => format!("killed by signal {signal}"),
                        (None, None) => "ended".to_owned(),
                    },
                );
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What the client says about itself, and the newest revision that has a
/// handshake (GOAT speaks 2024-11-05 through 2025-11-25).
pub fn client_config() -> GoatClient {
    let mut config = ClientConfig::default();
    config.protocol_version = ProtocolVersion::V_2025_11_25;
    config.client_info = Implementation::new("goat", env!("CARGO_PKG_VERSION"));
    GoatClient(config)
}

/// GOAT as a server's client: it declares no capabilities, and answers a
/// server's sampling, elicitation and roots requests as unsupported
/// (JSON-RPC "method not found"). The SDK's own defaults would answer a
/// question with "decline" and the roots with an empty list, which a
/// server cannot tell from a person who declined or a client with no
/// roots (issue 39).
#[derive(Clone, Debug)]
pub struct GoatClient(ClientConfig);

impl ClientHandler for GoatClient {
    fn get_info(&self) -> ClientConfig {
        self.0.clone()
    }

    #[expect(
        deprecated,
        reason = "roots are deprecated (SEP-2577); GOAT answers them as unsupported until the SDK drops them"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListRootsRequestMethod>())
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(ErrorData::method_not_found::<ElicitationCreateRequestMethod>())
    }
}

/// Starts keeping the last of `stderr` in `tail`, on a thread of its own.
pub fn keep_stderr(stderr: std::process::ChildStderr, tail: Arc<Mutex<VecDeque<u8>>>) {
    std::thread::spawn(move || {
        let mut stderr = stderr;
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
            kept.extend(&chunk[..n]);
            let over = kept.len().saturating_sub(STDERR_TAIL_BYTES);
            kept.drain(..over);
        }
    });
}

/// The handshake and the tool list, over the process's pipes, in the
/// runtime. Lines that are not JSON are dropped; a message over
/// [`MAX_MESSAGE_BYTES`] is dropped as it streams and `oversize` told.
pub async fn handshake(
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    oversize: Arc<Notify>,
    timeout: Duration,
) -> Result<(RunningService<RoleClient, GoatClient>, Vec<Tool>), String> {
    let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(std::os::fd::OwnedFd::from(stdin))
        .map_err(|e| format!("its stdin: {e}"))?;
    let stdout =
        tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(stdout))
            .map_err(|e| format!("its stdout: {e}"))?;
    let (framed, ours) = tokio::io::duplex(1 << 16);
    tokio::spawn(pump(stdout, ours, oversize));
    let service = tokio::time::timeout(timeout, client_config().serve((framed, stdin)))
        .await
        .map_err(|_| {
            format!(
                "it did not answer the handshake within {} s",
                timeout.as_secs()
            )
        })?
        .map_err(|e| format!("the handshake failed: {e}"))?;
    let tools = tokio::time::timeout(timeout, service.list_all_tools())
        .await
        .map_err(|_| format!("it did not list its tools within {} s", timeout.as_secs()))?
        .map_err(|e| format!("listing its tools failed: {e}"))?;
    Ok((service, tools))
}

/// The handshake and the tool list with a Streamable HTTP server at
/// `url`, with `bearer` as its token; no response over
/// [`MAX_MESSAGE_BYTES`] is read.
pub async fn handshake_http(
    url: String,
    bearer: Option<String>,
    timeout: Duration,
) -> Result<(RunningService<RoleClient, GoatClient>, Vec<Tool>), String> {
    use rmcp::transport::streamable_http_client::{
        StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    };
    // ring, as for the engine; installed once for the process (an error
    // means one is already there).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    config.max_sse_event_size = MAX_MESSAGE_BYTES;
    config.max_json_response_size = MAX_MESSAGE_BYTES;
    let transport = StreamableHttpClientTransport::from_config(config);
    let service = tokio::time::timeout(timeout, client_config().serve(transport))
        .await
        .map_err(|_| {
            format!(
                "it did not answer the handshake within {} s",
                timeout.as_secs()
            )
        })?
        .map_err(|e| format!("the handshake failed: {e}"))?;
    let tools = tokio::time::timeout(timeout, service.list_all_tools())
        .await
        .map_err(|_| format!("it did not list its tools within {} s", timeout.as_secs()))?
        .map_err(|e| format!("listing its tools failed: {e}"))?;
    Ok((service, tools))
}

/// Copies whole lines from the server to the client: JSON lines only,
/// none longer than [`MAX_MESSAGE_BYTES`].
async fn pump(
    mut from: tokio::net::unix::pipe::Receiver,
    mut to: tokio::io::DuplexStream,
    oversize: Arc<Notify>,
) {
    let mut line: Vec<u8> = Vec::new();
    let mut skipping = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            let (piece, ends) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], Some(i + 1)),
                None => (rest, None),
            };
            if !skipping {
                line.extend_from_slice(piece);
                if line.len() > MAX_MESSAGE_BYTES {
                    skipping = true;
                    line = Vec::new();
                    oversize.notify_one();
                }
            }
            match ends {
                Some(i) => {
                    if !skipping && looks_like_json(&line) {
                        line.push(b'\n');
                        if to.write_all(&line).await.is_err() {
                            return;
                        }
                    }
                    line.clear();
                    skipping = false;
                    rest = &rest[i..];
                }
                None => rest = &[],
            }
        }
    }
    let _ = to.shutdown().await;
}

fn looks_like_json(line: &[u8]) -> bool {
    line.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{' || b == b'[')
}
