//! A plugin's `wasi:http` requests (ADR-0097): each sent by GOAT through
//! the egress proxy serving the call, never straight to the network.
//!
//! The proxy decides every destination against the hosts the person
//! granted the plugin at `goat plugins add`, looks the name up itself,
//! refuses an answer leading to this machine or a private network, and
//! records each decision for the call's outcome. The caller starts the
//! proxy when the first request needs it ([`HttpEgress`]); a call given
//! none has every request refused here, before any connection is made.
//!
//! `http://` goes to the proxy as an absolute-form request; `https://` is
//! a `CONNECT` tunnel through it, with TLS to the origin checked against
//! the system's roots (rustls-native-certs, which honours
//! `SSL_CERT_FILE`). A refusal by the proxy reaches the plugin as
//! `HTTP-request-denied`, an unreachable destination as
//! `destination-unavailable`; the plugin never reads the proxy's own
//! answer as the origin's.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::uri::Scheme;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep, sleep_until, timeout};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// The header GOAT's egress proxy puts on its own answers (a refusal, an
/// unreachable destination), so a plugin's request is told it was refused
/// instead of reading GOAT's words as the origin's.
pub const PROXY_ANSWER_HEADER: &str = "goat-egress";

/// Longest a proxy's answer to `CONNECT` may be: a status line and a few
/// headers.
const MAX_CONNECT_ANSWER_BYTES: usize = 8 * 1024;

/// Most bytes one write to an outgoing body may hand the host (wasmtime's
/// default is 1 MiB): with the one buffered chunk, what a body holds in
/// GOAT's memory before it is sent. A plugin opening thousands of bodies
/// and never sending them holds 32 KiB each, not 2 MiB.
const BODY_CHUNK_BYTES: usize = 16 * 1024;

/// Most bytes of headers one `fields` resource may hold in GOAT's memory
/// (wasmtime's default is 128 KiB per resource).
pub(crate) const FIELD_BYTES: usize = 16 * 1024;

/// Largest `http://` request body sent through the proxy: it is read
/// whole first, so the proxy is given a `Content-Length` (it reads no
/// chunked body). Inside an `https://` tunnel a body streams.
const MAX_PLAIN_BODY_BYTES: usize = 1024 * 1024;

/// Where a plugin's `wasi:http` requests leave: the caller's egress proxy
/// for this call.
pub trait HttpEgress: Send + Sync {
    /// Where the proxy serving this call listens, started now if no
    /// request has needed it yet.
    fn proxy(&self) -> std::io::Result<ProxyAccess>;
}

/// A proxy serving one call, and how to be served by it.
#[derive(Clone, Debug)]
pub struct ProxyAccess {
    /// Where it listens (on the loopback).
    pub addr: SocketAddr,
    /// The token it requires (`Proxy-Authorization: Bearer TOKEN`): no
    /// other local process can use it.
    pub token: String,
    /// What it marks its own answers with: no origin can pass its answer
    /// off as the proxy's.
    pub mark: String,
}

/// How one call's `wasi:http` requests leave: through the caller's proxy,
/// or not at all.
pub(crate) struct PluginHttp {
    egress: Option<Arc<dyn HttpEgress>>,
    /// When the call's time is up: no request outlives its call, even one
    /// the guest blocks on (epoch interruption does not reach a guest
    /// waiting in the host).
    deadline: Instant,
}

impl PluginHttp {
    pub(crate) fn new(egress: Option<Arc<dyn HttpEgress>>, time: Duration) -> Self {
        Self {
            egress,
            deadline: Instant::now() + time,
        }
    }
}

type Sent = Result<
    (
        Response<WasiBody>,
        Box<dyn Future<Output = Result<(), Error>> + Send>,
    ),
    Error,
>;

impl WasiHttpHooks for PluginHttp {
    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        1
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        BODY_CHUNK_BYTES
    }

    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
        _: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let proxy = match &self.egress {
            Some(egress) => egress.proxy().map_err(|_| Error::HttpRequestDenied),
            None => Err(Error::HttpRequestDenied),
        };
        let deadline = self.deadline;
        Box::new(async move {
            let proxy = proxy?;
            let connect = options.and_then(|o| o.connect_timeout);
            let first_byte = options.and_then(|o| o.first_byte_timeout);
            // Each step within what the guest asked for, and all of them
            // within the call's own time.
            let (response, connection) =
                tokio::time::timeout_at(deadline, send(proxy, request, connect, first_byte))
                    .await
                    .map_err(|_| Error::ConnectionTimeout)??;
            let response = response.map(|incoming| {
                Until {
                    incoming,
                    deadline: Box::pin(sleep_until(deadline)),
                }
                .boxed_unsync()
            });
            let connection = async move {
                match tokio::time::timeout_at(deadline, connection).await {
                    Ok(done) => done.map_err(Error::from),
                    Err(_) => Err(Error::HttpResponseTimeout),
                }
            };
            Ok((
                response,
                Box::new(connection) as Box<dyn Future<Output = _> + Send>,
            ))
        })
    }
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

type Connection = Pin<Box<dyn Future<Output = Result<(), hyper::Error>> + Send>>;

/// Sends `request` through the proxy at `proxy`: the response's head and
/// the connection that carries its body.
async fn send(
    proxy: ProxyAccess,
    mut request: Request<WasiBody>,
    connect: Option<Duration>,
    first_byte: Option<Duration>,
) -> Result<(Response<Incoming>, Connection), Error> {
    let connect = connect.unwrap_or(Duration::MAX);
    let first_byte = first_byte.unwrap_or(Duration::MAX);
    let uri = request.uri().clone();
    let authority = uri.authority().ok_or(Error::HttpRequestUriInvalid)?;
    // The proxy refuses userinfo in an absolute URI; a tunnel's Host
    // header would carry it to the origin, so it is refused for both.
    if authority.as_str().contains('@') {
        return Err(Error::HttpRequestUriInvalid);
    }
    let tls = uri.scheme() == Some(&Scheme::HTTPS);
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let host = authority.host();
    let authorization = format!("Bearer {}", proxy.token);
    let to_proxy = timeout(connect, TcpStream::connect(proxy.addr))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Connect)?;
    let stream: Box<dyn Stream> = if tls {
        let tunnel = timeout(connect, tunnel(to_proxy, host, port, &authorization))
            .await
            .map_err(|_| Error::ConnectionTimeout)??;
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|_| Error::HttpRequestUriInvalid)?;
        let connector = tokio_rustls::TlsConnector::from(tls_config()?);
        let stream = timeout(connect, connector.connect(name, tunnel))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        // Inside the tunnel the origin is spoken to directly.
        *request.uri_mut() = origin_form(&uri);
        Box::new(stream)
    } else {
        // The proxy reads the absolute URI to know where it goes, and a
        // body of the length it is told.
        request = with_length(request).await?;
        let value =
            http::HeaderValue::from_str(&authorization).map_err(|_| Error::HttpRequestDenied)?;
        request
            .headers_mut()
            .insert(http::header::PROXY_AUTHORIZATION, value);
        Box::new(to_proxy)
    };
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(Error::from)?;
    let mut connection: Connection = Box::pin(connection);
    let sent = timeout(first_byte, sender.send_request(request));
    tokio::pin!(sent);
    // The connection is driven while the response is awaited; it may end
    // (the origin closes after a short answer) before the response is
    // read, which is then ready.
    let (sent, connection): (_, Connection) = tokio::select! {
        biased;
        sent = &mut sent => (sent, connection),
        ended = &mut connection => {
            ended.map_err(Error::from)?;
            (sent.await, Box::pin(std::future::ready(Ok(()))))
        }
    };
    let response = sent
        .map_err(|_| Error::ConnectionReadTimeout)?
        .map_err(Error::from)?;
    let from_proxy = response
        .headers()
        .get(PROXY_ANSWER_HEADER)
        .is_some_and(|mark| mark.as_bytes() == proxy.mark.as_bytes());
    if !tls && from_proxy {
        return Err(refused(response.status()));
    }
    Ok((response, connection))
}

/// `request` with its body read whole (at most [`MAX_PLAIN_BODY_BYTES`])
/// and its `Content-Length` set, so hyper does not send it chunked.
async fn with_length(request: Request<WasiBody>) -> Result<Request<WasiBody>, Error> {
    let (mut parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_PLAIN_BODY_BYTES);
    let bytes = limited
        .collect()
        .await
        .map_err(|_| Error::HttpRequestBodySize(None))?
        .to_bytes();
    if !bytes.is_empty() || parts.method != http::Method::GET {
        parts
            .headers
            .insert(http::header::CONTENT_LENGTH, bytes.len().into());
    }
    let body = http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync();
    Ok(Request::from_parts(parts, body))
}

/// What the proxy's own answer (`status`) means for the plugin.
fn refused(status: StatusCode) -> Error {
    if status == StatusCode::BAD_GATEWAY {
        Error::DestinationUnavailable
    } else {
        Error::HttpRequestDenied
    }
}

/// Asks the proxy for a tunnel to `host:port`; the stream once it said yes.
async fn tunnel(
    mut stream: TcpStream,
    host: &str,
    port: u16,
    authorization: &str,
) -> Result<TcpStream, Error> {
    let target = format!("{host}:{port}");
    let ask = format!(
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: {authorization}\r\n\r\n"
    );
    stream
        .write_all(ask.as_bytes())
        .await
        .map_err(Error::Connect)?;
    // Read byte by byte up to the blank line, so nothing of the tunnel's
    // first bytes is consumed here.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_CONNECT_ANSWER_BYTES {
            return Err(Error::HttpProtocolError);
        }
        match stream.read_u8().await {
            Ok(byte) => head.push(byte),
            Err(_) => return Err(Error::ConnectionTerminated),
        }
    }
    let status = head
        .split(|b| *b == b' ')
        .nth(1)
        .and_then(|code| std::str::from_utf8(code).ok())
        .and_then(|code| code.parse::<u16>().ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or(Error::HttpProtocolError)?;
    if status == StatusCode::OK {
        Ok(stream)
    } else {
        Err(refused(status))
    }
}

/// `uri` without its scheme and authority.
fn origin_form(uri: &Uri) -> Uri {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    Uri::builder()
        .path_and_query(path)
        .build()
        .unwrap_or_else(|_| Uri::from_static("/"))
}

/// The TLS client every plugin request uses: the system's roots, read
/// once.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static CONFIG: OnceLock<Option<Arc<rustls::ClientConfig>>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .ok()
                .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
        })
        .clone()
        .ok_or(Error::TlsProtocolError)
}

/// A response body that ends in an error once the call's time is up.
struct Until {
    incoming: Incoming,
    deadline: Pin<Box<Sleep>>,
}

impl Body for Until {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
        }
        Pin::new(&mut self.incoming)
            .poll_frame(cx)
            .map_err(Error::from)
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.incoming.size_hint()
    }
}
