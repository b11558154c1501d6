//! The request head a client sends a proxy, read with `httparse`, and the
//! head the proxy sends on for plain HTTP.
//!
//! Two requests are served: `CONNECT host:port` (a tunnel, for https) and
//! a request with an absolute `http://` URI (plain HTTP, forwarded). A
//! forwarded request goes on with its `Host` header made from the URI (so
//! the name checked is the name the server routes by), without the
//! proxy's and the hop's own headers, with `Connection: close`, and with
//! exactly `Content-Length` bytes of body: one request per connection, so
//! nothing after it reaches the server unchecked.

use crate::host::Host;

/// Largest request head the proxy reads: the request line and headers of
/// any package manager's request fit many times over.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Most headers in a request head.
const MAX_HEADERS: usize = 128;

/// A request the proxy serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// `CONNECT authority`.
    Connect {
        /// `host:port`, as written.
        authority: String,
    },
    /// A plain HTTP request to forward.
    Forward(Forward),
}

/// A plain HTTP request with an absolute URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forward {
    /// The method.
    pub method: String,
    /// The URI's authority, as written.
    pub authority: String,
    /// The path and query (`/` when the URI has none).
    pub path: String,
    /// `HTTP/1.x`'s `x`.
    pub minor: u8,
    /// The headers passed on, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body's length (`Content-Length`; 0 without one).
    pub body_len: u64,
}

/// Headers that belong to the hop or the proxy, never passed on (RFC 9110
/// 7.6.1), and `Host`, which is made from the URI.
const DROPPED: &[&str] = &[
    "host",
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// Reads a request head from the start of `buf`: `Ok(None)` while it is
/// incomplete, with the head's length in bytes once it is whole.
pub fn parse(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            if buf.len() >= MAX_HEAD_BYTES {
                return Err(format!(
                    "the request head is larger than {MAX_HEAD_BYTES} bytes"
                ));
            }
            return Ok(None);
        }
        Err(e) => return Err(format!("the request does not parse: {e}")),
    };
    let method = req.method.unwrap_or_default();
    let target = req.path.unwrap_or_default();
    let minor = req.version.unwrap_or(1);
    if method == "CONNECT" {
        return Ok(Some((
            Head::Connect {
                authority: target.to_owned(),
            },
            len,
        )));
    }
    let rest = match target.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &target[7..],
        _ => {
            return Err(
                "only CONNECT host:port and requests for an absolute http:// URI are served \
                 (https goes through CONNECT)"
                    .to_owned(),
            );
        }
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let path = match path.chars().next() {
        None => "/".to_owned(),
        Some('?') => format!("/{path}"),
        Some(_) => path.to_owned(),
    };
    let mut named_by_connection: Vec<String> = Vec::new();
    let mut body_len: Option<u64> = None;
    let mut kept = Vec::new();
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "transfer-encoding" {
            return Err("a request body must be sent with Content-Length".to_owned());
        }
        if name == "content-length" {
            let value = std::str::from_utf8(h.value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| "Content-Length is not a number".to_owned())?;
            if body_len.is_some_and(|n| n != value) {
                return Err("two different Content-Length headers".to_owned());
            }
            body_len = Some(value);
        }
        if name == "connection" {
            named_by_connection.extend(
                String::from_utf8_lossy(h.value)
                    .split(',')
                    .map(|t| t.trim().to_ascii_lowercase()),
            );
        }
        kept.push((h.name.to_owned(), h.value.to_vec()));
    }
    let headers = kept
        .into_iter()
        .filter(|(name, _)| {
            let lower = name.to_ascii_lowercase();
            if lower == "content-length" {
                return true;
            }
            !DROPPED.contains(&lower.as_str()) && !named_by_connection.contains(&lower)
        })
        .collect();
    Ok(Some((
        Head::Forward(Forward {
            method: method.to_owned(),
            authority: authority.to_owned(),
            path,
            minor,
            headers,
            body_len: body_len.unwrap_or(0),
        }),
        len,
    )))
}

/// The value of the `Proxy-Authorization` header in the request head
/// `head`, if it has exactly one.
pub fn proxy_authorization(head: &[u8]) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(head).ok()?;
    let mut found = req
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("proxy-authorization"));
    let value = found.next()?.value.to_vec();
    found.next().is_none().then_some(value)
}

impl Forward {
    /// The head sent to the server: origin form, `Host` from the checked
    /// authority, `Connection: close`.
    pub fn origin_head(&self, host: &Host, port: u16) -> Vec<u8> {
        let mut out =
            format!("{} {} HTTP/1.{}\r\n", self.method, self.path, self.minor).into_bytes();
        let host_value = if port == 80 {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        out.extend(format!("Host: {host_value}\r\n").into_bytes());
        for (name, value) in &self.headers {
            out.extend(name.as_bytes());
            out.extend(b": ");
            out.extend(value);
            out.extend(b"\r\n");
        }
        out.extend(b"Connection: close\r\n\r\n");
        out
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_are_read() {
        let (head, len) = parse(b"CONNECT crates.io:443 HTTP/1.1\r\nHost: crates.io:443\r\n\r\nX")
            .unwrap()
            .unwrap();
        assert_eq!(
            head,
            Head::Connect {
                authority: "crates.io:443".to_owned()
            }
        );
        assert_eq!(len, 55);
        assert_eq!(parse(b"CONNECT crates.io:443 HTTP/1.1\r\n").unwrap(), None);
        let raw = b"GET http://localhost:8080/a/b?c=1 HTTP/1.1\r\nHost: evil.example\r\n\
                    Proxy-Connection: keep-alive\r\nConnection: x-secret\r\nX-Secret: 1\r\n\
                    Accept: */*\r\nContent-Length: 3\r\n\r\nabc";
        let (head, len) = parse(raw).unwrap().unwrap();
        let Head::Forward(f) = head else {
            panic!("{head:?}")
        };
        assert_eq!(len, raw.len() - 3);
        assert_eq!(f.authority, "localhost:8080");
        assert_eq!(f.path, "/a/b?c=1");
        assert_eq!(f.body_len, 3);
        let host = crate::host::Host::Name("localhost".to_owned());
        assert_eq!(
            String::from_utf8(f.origin_head(&host, 8080)).unwrap(),
            "GET /a/b?c=1 HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n\
             Content-Length: 3\r\nConnection: close\r\n\r\n"
        );
        let Head::Forward(bare) = parse(b"GET HTTP://a.example?q HTTP/1.0\r\n\r\n")
            .unwrap()
            .unwrap()
            .0
        else {
            panic!()
        };
        assert_eq!(
            (bare.authority.as_str(), bare.path.as_str()),
            ("a.example", "/?q")
        );
    }

    #[test]
    fn requests_the_proxy_does_not_serve_are_refused() {
        for raw in [
            &b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"[..],
            b"GET https://a.example/ HTTP/1.1\r\n\r\n",
            b"GET ftp://a.example/ HTTP/1.1\r\n\r\n",
            b"POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"POST http://a.example/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            b"GET http://a.example/ HTTP/1.1\r\nX: a\0b\r\n\r\n",
            b"\0GET http://a.example/ HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(raw).is_err(), "{}", String::from_utf8_lossy(raw));
        }
        let huge = vec![b'a'; MAX_HEAD_BYTES + 1];
        let mut req = b"GET http://a.example/ HTTP/1.1\r\nX: ".to_vec();
        req.extend(huge);
        assert!(parse(&req).is_err());
    }
}
