//! The proxy itself: an accept loop per client on a listener it is given,
//! each request decided by [`crate::decide`], resolved and connected to by
//! GOAT, and every decision kept for the caller to record.
//!
//! It runs on a small Tokio runtime of its own (one worker, a few blocking
//! threads for name lookups), started when the first client is served, so
//! a caller on any thread (a blocking worker running a command, a
//! synchronous `goat tools call`) can use it.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::timeout;

use crate::decide::{Admission, Refusal, admit, check_resolved};
use crate::host::{AuthorityProblem, Host, parse_authority, parse_host};
use crate::http::{self, Head, MAX_HEAD_BYTES};
use crate::list::Allowlist;
use crate::sni::{self, Hello, MAX_HELLO_BYTES};

/// Longest wait for a client's request head: a client that connects and
/// says nothing holds a connection slot, no more.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait for a request head on a proxy with one client
/// ([`Proxy::requiring`]): GOAT sends its head at once, and a stranger
/// holding connections open cannot hold them long.
pub const KEYED_HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest wait for a tunnel's TLS ClientHello after the `200`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest a name lookup may take (the C library's resolver retries for
/// longer than a build should wait on one name).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest wait for one address to accept a connection; the next address
/// is tried after it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Most connections served at once for one client: cargo and npm open a
/// few dozen in parallel; past this, new ones wait to be accepted.
pub const MAX_CONNECTIONS: usize = 256;

/// Most decisions kept for one client (a command that opens a million
/// connections is told how many more there were, not each one).
pub const MAX_DECISIONS_KEPT: usize = 10_000;

/// The header on every answer the proxy gives itself (a refusal, an
/// unreachable destination), so a client GOAT speaks for (a plugin's
/// `wasi:http` request) can tell the proxy's answer from the origin's.
pub const ANSWER_HEADER: &str = "goat-egress";

/// Blocking threads for name lookups (`getaddrinfo` blocks).
const LOOKUP_THREADS: usize = 8;

/// Looks a name up; the system's resolver by default.
pub trait Resolve: Send + Sync {
    /// The addresses `host` (a checked name) has.
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>>;
}

/// The C library's resolver (`getaddrinfo`: the hosts file, then DNS, as
/// the machine is configured).
#[derive(Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        Ok((host, port).to_socket_addrs()?.map(|a| a.ip()).collect())
    }
}

/// Which kind of request a decision was about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `CONNECT host:port`: a tunnel.
    Connect,
    /// A plain HTTP request, forwarded.
    Http,
}

/// What came of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Allowed by `entry`, and connected to `address`.
    Allowed {
        /// The list entry that allowed it, as written.
        entry: String,
        /// Where GOAT connected.
        address: SocketAddr,
    },
    /// Allowed by `entry`, but no address accepted the connection.
    Unreachable {
        /// The list entry that allowed it.
        entry: String,
        /// Why, in words.
        why: String,
    },
    /// Refused.
    Refused(Refusal),
}

/// One decision, for the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// When it was made.
    pub at: SystemTime,
    /// Which request.
    pub kind: RequestKind,
    /// The host as the proxy read it (a refused name escaped, never raw).
    pub host: String,
    /// The port (0 when the request named none the proxy could read).
    pub port: u16,
    /// What the list entry would be that allows it, for a refusal one
    /// entry could lift.
    pub would_allow: Option<String>,
    /// What came of it.
    pub outcome: Outcome,
}

impl Decision {
    /// Whether the request was refused.
    pub fn refused(&self) -> bool {
        matches!(self.outcome, Outcome::Refused(_))
    }
}

/// What one client's serving came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// The decisions, in order, at most [`MAX_DECISIONS_KEPT`].
    pub decisions: Vec<Decision>,
    /// How many more there were.
    pub dropped: usize,
}

/// The proxy for one list: serves any number of clients, each on its own
/// listener, each with its own record.
///
/// # Security
///
/// Nothing is connected to that [`admit`] and [`check_resolved`] did not
/// allow: a name is looked up by GOAT, every address checked, and the
/// connection made to the checked address, never by name again. A tunnel
/// passes no byte on before its TLS ClientHello has named the host the
/// CONNECT named (or none). A forwarded request carries the `Host` of its
/// checked URI and no second request.
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("list", &self.inner.list)
            .finish_non_exhaustive()
    }
}

struct Inner {
    list: Allowlist,
    resolver: Arc<dyn Resolve>,
    runtime: OnceLock<Result<Runtime, String>>,
    /// What a client must send, and how the proxy marks its answers to
    /// it, when the proxy listens where others could reach it.
    client: Option<ClientKey>,
}

/// A proxy's one client, for a proxy on the host's loopback.
#[derive(Clone, Debug)]
pub struct ClientKey {
    /// What the client sends as `Proxy-Authorization: Bearer TOKEN`.
    pub token: String,
    /// The value of [`ANSWER_HEADER`] on the proxy's own answers: another
    /// secret, so that no answer ever shows the token.
    pub mark: String,
}

/// The runtime, shut down without waiting when the proxy goes (dropping
/// a Tokio runtime inside another's async context would panic).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl Proxy {
    /// A proxy allowing `list`, looking names up with the system's
    /// resolver.
    pub fn new(list: Allowlist) -> Self {
        Self::with_resolver(list, Arc::new(SystemResolver))
    }

    /// A proxy looking names up with `resolver`.
    pub fn with_resolver(list: Allowlist, resolver: Arc<dyn Resolve>) -> Self {
        Self::built(list, resolver, None)
    }

    /// A proxy allowing `list` that serves only the client holding `key`,
    /// and marks its own answers with `key.mark` ([`ANSWER_HEADER`]). For a
    /// proxy on the host's loopback, which any local process could
    /// otherwise use: a connection without the token (whatever it sent,
    /// readable or not) is answered a bare `407`, decides nothing, is
    /// recorded nowhere, and is given [`KEYED_HEAD_TIMEOUT`] to send its
    /// head.
    pub fn requiring(list: Allowlist, key: ClientKey) -> Self {
        Self::built(list, Arc::new(SystemResolver), Some(key))
    }

    fn built(list: Allowlist, resolver: Arc<dyn Resolve>, client: Option<ClientKey>) -> Self {
        Self {
            inner: Arc::new(Inner {
                list,
                resolver,
                runtime: OnceLock::new(),
                client,
            }),
        }
    }

    /// What it allows.
    pub fn list(&self) -> &Allowlist {
        &self.inner.list
    }

    fn runtime(&self) -> io::Result<&tokio::runtime::Runtime> {
        let made = self.inner.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(LOOKUP_THREADS)
                .thread_name("goat-egress")
                .enable_io()
                .enable_time()
                .build()
                .map(|rt| Runtime(Some(rt)))
                .map_err(|e| e.to_string())
        });
        match made {
            Ok(Runtime(Some(rt))) => Ok(rt),
            Ok(Runtime(None)) => Err(io::Error::other("the proxy's runtime is gone")),
            Err(why) => Err(io::Error::other(format!(
                "the proxy's runtime could not start: {why}"
            ))),
        }
    }

    /// Serves every connection made to `listener` (already listening; on
    /// the host's loopback, or made in a command's own network namespace)
    /// until the returned [`Serving`] is finished or dropped, which also
    /// ends every connection it was carrying.
    pub fn serve(&self, listener: std::net::TcpListener) -> io::Result<Serving> {
        let rt = self.runtime()?;
        listener.set_nonblocking(true)?;
        let listener = {
            let _in = rt.enter();
            TcpListener::from_std(listener)?
        };
        let log = Arc::new(Mutex::new(Served::default()));
        let ctx = Arc::new(Ctx {
            proxy: self.clone(),
            log: log.clone(),
        });
        let task = rt.spawn(accept_loop(listener, ctx));
        Ok(Serving {
            task: task.abort_handle(),
            log,
        })
    }
}

/// One client being served. Dropping it stops serving and closes every
/// connection it carried.
#[derive(Debug)]
pub struct Serving {
    task: AbortHandle,
    log: Arc<Mutex<Served>>,
}

impl Serving {
    /// Stops serving and returns every decision made.
    pub fn finish(self) -> Served {
        self.task.abort();
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.clone()
    }

    /// The decisions so far.
    pub fn decisions(&self) -> Served {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What every connection of one client shares.
struct Ctx {
    proxy: Proxy,
    log: Arc<Mutex<Served>>,
}

impl Ctx {
    fn record(&self, decision: Decision) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if log.decisions.len() < MAX_DECISIONS_KEPT {
            log.decisions.push(decision);
        } else {
            log.dropped += 1;
        }
    }

    fn list(&self) -> &Allowlist {
        &self.proxy.inner.list
    }
}

async fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    // Dropped with this task (when serving stops): every connection task
    // in it is aborted, so nothing of a finished command stays connected.
    let mut connections = JoinSet::new();
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(_) => {
                // Out of descriptors, or a connection reset before it was
                // accepted: wait a moment rather than spin.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let ctx = ctx.clone();
        connections.spawn(async move {
            let _slot = slot;
            serve_one(client, &ctx).await;
        });
    }
}

/// Reads the request head into `buf`; its length and what it is.
async fn read_head(
    client: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> io::Result<Result<(Head, usize), String>> {
    let mut chunk = [0u8; 4096];
    loop {
        match http::parse(buf) {
            Ok(Some(parsed)) => return Ok(Ok(parsed)),
            Ok(None) => {}
            Err(why) => return Ok(Err(why)),
        }
        let room = (MAX_HEAD_BYTES + 1 - buf.len()).min(chunk.len());
        let n = client.read(&mut chunk[..room]).await?;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn serve_one(mut client: TcpStream, ctx: &Ctx) {
    let mut buf = Vec::with_capacity(4096);
    let key = ctx.proxy.inner.client.as_ref();
    let wait = if key.is_some() {
        KEYED_HEAD_TIMEOUT
    } else {
        HEAD_TIMEOUT
    };
    let head = match timeout(wait, read_head(&mut client, &mut buf)).await {
        Ok(Ok(head)) => head,
        // Silent, slow or gone: there was no request to decide.
        Ok(Err(_)) | Err(_) => return,
    };
    // Before anything is read into a decision or an answer: a stranger
    // learns nothing and leaves nothing in the record.
    if let Some(key) = key {
        let sent = http::proxy_authorization(&buf).unwrap_or_default();
        if !same(&sent, format!("Bearer {}", key.token).as_bytes()) {
            let _ = client
                .write_all(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n\
                      Proxy-Authenticate: Bearer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            let _ = client.shutdown().await;
            return;
        }
    }
    let (head, len) = match head {
        Ok(parsed) => parsed,
        Err(why) => {
            refuse(
                &mut client,
                ctx,
                RequestKind::Http,
                "(unreadable request)".to_owned(),
                Refusal::BadRequest(why),
            )
            .await;
            return;
        }
    };
    let rest = buf.split_off(len);
    match head {
        Head::Connect { authority } => tunnel(client, ctx, &authority, rest).await,
        Head::Forward(forward) => forward_http(client, ctx, forward, rest).await,
    }
}

/// The authority of a request, read; a refusal when it cannot be.
fn target(authority: &str, default_port: Option<u16>) -> Result<(Host, u16), (String, Refusal)> {
    parse_authority(authority, default_port).map_err(|problem| {
        let shown = crate::decide::shown(authority);
        let refusal = match problem {
            AuthorityProblem::Host(name) => Refusal::BadName(name),
            other => Refusal::BadRequest(other.to_string()),
        };
        (shown, refusal)
    })
}

/// Where `host:port` may be connected: the entry and a connected stream,
/// or why not.
async fn connect(
    ctx: &Ctx,
    host: &Host,
    port: u16,
) -> Result<(String, TcpStream, SocketAddr), Outcome> {
    let (entry, addresses) = match admit(ctx.list(), host, port) {
        Admission::Refused(refusal) => return Err(Outcome::Refused(refusal)),
        Admission::Connect { entry, addresses } => (entry, addresses),
        Admission::Resolve { entry } => {
            let Host::Name(name) = host else {
                return Err(Outcome::Refused(Refusal::BadRequest(
                    "an address was to be looked up".to_owned(),
                )));
            };
            let resolver = ctx.proxy.inner.resolver.clone();
            let name = name.clone();
            let lookup = tokio::task::spawn_blocking(move || resolver.resolve(&name, port));
            let resolved = match timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(Ok(addresses))) => addresses,
                Ok(Ok(Err(e))) => return Err(Outcome::Refused(Refusal::Unresolved(e.to_string()))),
                Ok(Err(e)) => return Err(Outcome::Refused(Refusal::Unresolved(e.to_string()))),
                Err(_) => {
                    return Err(Outcome::Refused(Refusal::Unresolved(format!(
                        "no answer within {} s",
                        RESOLVE_TIMEOUT.as_secs()
                    ))));
                }
            };
            match check_resolved(ctx.list(), port, &resolved) {
                Ok(addresses) => (entry, addresses),
                Err(refusal) => return Err(Outcome::Refused(refusal)),
            }
        }
    };
    let mut last = String::from("no address");
    // The checked addresses, and only those: never the name again.
    for ip in addresses {
        let address = SocketAddr::new(ip, port);
        match timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok((entry, stream, address)),
            Ok(Err(e)) => last = format!("{address}: {e}"),
            Err(_) => {
                last = format!(
                    "{address}: no answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                );
            }
        }
    }
    Err(Outcome::Unreachable { entry, why: last })
}

/// A request's destination, read, admitted and connected.
struct Opened {
    host: Host,
    port: u16,
    entry: String,
    upstream: TcpStream,
    address: SocketAddr,
}

/// Reads `authority` and connects to it; `None` when that failed, the
/// failure then recorded and answered to the client.
async fn open(
    client: &mut TcpStream,
    ctx: &Ctx,
    kind: RequestKind,
    authority: &str,
    default_port: Option<u16>,
) -> Option<Opened> {
    let (host, port) = match target(authority, default_port) {
        Ok(t) => t,
        Err((shown, refusal)) => {
            refuse(client, ctx, kind, shown, refusal).await;
            return None;
        }
    };
    match connect(ctx, &host, port).await {
        Ok((entry, upstream, address)) => Some(Opened {
            host,
            port,
            entry,
            upstream,
            address,
        }),
        Err(outcome) => {
            fail(client, ctx, kind, &host, port, outcome).await;
            None
        }
    }
}

async fn tunnel(mut client: TcpStream, ctx: &Ctx, authority: &str, mut hello: Vec<u8>) {
    let kind = RequestKind::Connect;
    let Some(Opened {
        host,
        port,
        entry,
        mut upstream,
        address,
    }) = open(&mut client, ctx, kind, authority, None).await
    else {
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    // To a name, nothing passes before the ClientHello has named it. To a
    // listed address, anything does (the person named the address, and a
    // protocol whose server speaks first would wait forever for the
    // client).
    let check = match &host {
        Host::Ip(_) => Ok(()),
        Host::Name(name) => {
            match timeout(HELLO_TIMEOUT, read_hello(&mut client, &mut hello)).await {
                Err(_) => Err(Refusal::BadRequest(format!(
                    "no TLS handshake within {} s",
                    HELLO_TIMEOUT.as_secs()
                ))),
                // Gone before saying anything: nothing passed.
                Ok(None) => Ok(()),
                Ok(Some(Hello::Name(sni))) => match parse_host(&sni) {
                    Ok(Host::Name(ref said)) if said == name => Ok(()),
                    _ => Err(Refusal::SniMismatch {
                        sni: crate::decide::shown(&sni),
                    }),
                },
                // A front end would route by a name the proxy cannot read
                // (Encrypted Client Hello: the listed name outside, any
                // site of the same front end inside), or by none.
                Ok(Some(Hello::Encrypted)) => Err(Refusal::BadRequest(
                    "the TLS handshake hides the host it is for (Encrypted Client Hello), so \
                     the proxy cannot check it; turn ECH off for this client"
                        .to_owned(),
                )),
                Ok(Some(Hello::NoName)) => Err(Refusal::BadRequest(
                    "the TLS handshake names no host; a tunnel to a name must name it in the \
                     handshake (SNI)"
                        .to_owned(),
                )),
                Ok(Some(Hello::NotTls)) => Err(Refusal::NotTls),
                Ok(Some(Hello::Malformed | Hello::Incomplete)) => Err(Refusal::BadRequest(
                    "the TLS handshake does not parse".to_owned(),
                )),
            }
        }
    };
    if let Err(refusal) = check {
        // The 200 is sent; closing the tunnel is the refusal.
        ctx.record(decision(kind, &host, port, Outcome::Refused(refusal)));
        return;
    }
    ctx.record(decision(
        kind,
        &host,
        port,
        Outcome::Allowed { entry, address },
    ));
    if upstream.write_all(&hello).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Reads until `hello` holds a whole ClientHello (or what shows it is not
/// one); `None` when the client closed first.
async fn read_hello(client: &mut TcpStream, hello: &mut Vec<u8>) -> Option<Hello> {
    let mut chunk = [0u8; 4096];
    loop {
        if !hello.is_empty() {
            match sni::client_hello(hello) {
                Hello::Incomplete if hello.len() < MAX_HELLO_BYTES => {}
                Hello::Incomplete => return Some(Hello::Malformed),
                other => return Some(other),
            }
        }
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                return if hello.is_empty() {
                    None
                } else {
                    Some(Hello::Incomplete)
                };
            }
            Ok(n) => hello.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn forward_http(mut client: TcpStream, ctx: &Ctx, forward: http::Forward, rest: Vec<u8>) {
    let kind = RequestKind::Http;
    let Some(Opened {
        host,
        port,
        entry,
        mut upstream,
        address,
    }) = open(&mut client, ctx, kind, &forward.authority, Some(80)).await
    else {
        return;
    };
    ctx.record(decision(
        kind,
        &host,
        port,
        Outcome::Allowed { entry, address },
    ));
    let mut head = forward.origin_head(&host, port);
    let already = usize::try_from(forward.body_len)
        .unwrap_or(usize::MAX)
        .min(rest.len());
    // The body read with the head, and no byte past it: whatever the
    // client sends after its one request is never passed on.
    head.extend_from_slice(&rest[..already]);
    if upstream.write_all(&head).await.is_err() {
        return;
    }
    let remaining = forward.body_len - already as u64;
    let (mut client_read, mut client_write) = client.split();
    let (mut up_read, mut up_write) = upstream.split();
    let to_client = async {
        let _ = tokio::io::copy(&mut up_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    let to_server = copy_exactly(&mut client_read, &mut up_write, remaining);
    tokio::pin!(to_client);
    tokio::select! {
        () = &mut to_client => {}
        () = to_server => to_client.await,
    }
}

/// Copies at most `n` bytes.
async fn copy_exactly<R, W>(from: &mut R, to: &mut W, n: u64)
where
    R: AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let _ = tokio::io::copy(&mut from.take(n), to).await;
}

fn decision(kind: RequestKind, host: &Host, port: u16, outcome: Outcome) -> Decision {
    let would_allow = match &outcome {
        Outcome::Refused(refusal) => refusal.would_allow(host, port),
        Outcome::Allowed { .. } | Outcome::Unreachable { .. } => None,
    };
    Decision {
        at: SystemTime::now(),
        kind,
        host: host.to_string(),
        port,
        would_allow,
        outcome,
    }
}

/// Records `outcome` (a refusal or an unreachable destination) and answers
/// the client.
async fn fail(
    client: &mut TcpStream,
    ctx: &Ctx,
    kind: RequestKind,
    host: &Host,
    port: u16,
    outcome: Outcome,
) {
    let (status, text) = match &outcome {
        Outcome::Refused(refusal) => ("403 Forbidden", format!("refused: {refusal}")),
        Outcome::Unreachable { why, .. } => ("502 Bad Gateway", format!("unreachable: {why}")),
        Outcome::Allowed { .. } => return,
    };
    let body = format!("GOAT's network proxy: {host}:{port} {text}\n");
    ctx.record(decision(kind, host, port, outcome));
    answer(client, ctx, status, &body).await;
}

/// Records a refusal of a request whose host could not be read, and
/// answers the client.
async fn refuse(
    client: &mut TcpStream,
    ctx: &Ctx,
    kind: RequestKind,
    shown: String,
    refusal: Refusal,
) {
    let status = match refusal {
        Refusal::BadRequest(_) => "400 Bad Request",
        _ => "403 Forbidden",
    };
    let body = format!("GOAT's network proxy: {shown} refused: {refusal}\n");
    ctx.record(Decision {
        at: SystemTime::now(),
        kind,
        host: shown,
        port: 0,
        would_allow: None,
        outcome: Outcome::Refused(refusal),
    });
    answer(client, ctx, status, &body).await;
}

/// Whether `a` and `b` are the same bytes, in time that does not depend
/// on where they first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn answer(client: &mut TcpStream, ctx: &Ctx, status: &str, body: &str) {
    // The mark is the client's own secret where it has one: an origin
    // cannot forge it, and it is not the token.
    let mark = ctx
        .proxy
        .inner
        .client
        .as_ref()
        .map_or(status, |key| key.mark.as_str());
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         {ANSWER_HEADER}: {mark}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}
