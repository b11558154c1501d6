//! The proxy on loopback, through real sockets: what it passes on, what it
//! refuses and what it records. Names are looked up by a scripted resolver,
//! so a listed name can be made to lead anywhere; the servers behind are
//! plain listeners on 127.0.0.1 that record every byte they receive.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use goat_egress::{Allowlist, Outcome, Proxy, Refusal, Resolve, Served, Serving};
use goat_testkit::tls_client_hello;

/// Every name leads to 127.0.0.1.
struct AllHere;

impl Resolve for AllHere {
    fn resolve(&self, _: &str, _: u16) -> io::Result<Vec<IpAddr>> {
        Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)])
    }
}

/// A server on 127.0.0.1 that answers each connection with `reply` once
/// it has read what the client sent (until a blank line, or `until`
/// bytes), and records it.
struct Upstream {
    port: u16,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    _thread: JoinHandle<()>,
}

impl Upstream {
    fn start(reply: &'static [u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                stream
                    .set_read_timeout(Some(Duration::from_millis(500)))
                    .unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                    if got.windows(4).any(|w| w == b"\r\n\r\n") && !got.starts_with(&[0x16]) {
                        // A request head: wait a moment for anything after it.
                        std::thread::sleep(Duration::from_millis(100));
                        let mut more = [0u8; 4096];
                        stream.set_nonblocking(true).unwrap();
                        while let Ok(n) = stream.read(&mut more) {
                            if n == 0 {
                                break;
                            }
                            got.extend_from_slice(&more[..n]);
                        }
                        break;
                    }
                }
                record.lock().unwrap().push(got);
                let _ = stream.set_nonblocking(false);
                let _ = stream.write_all(reply);
                let _ = stream.shutdown(Shutdown::Both);
            }
        });
        Self {
            port,
            seen,
            _thread: thread,
        }
    }

    fn seen(&self) -> Vec<Vec<u8>> {
        self.seen.lock().unwrap().clone()
    }
}

/// The proxy for `items`, serving one listener; its address.
fn proxy(items: &[String]) -> (Serving, u16) {
    let list = Allowlist::parse(items).unwrap();
    let proxy = Proxy::with_resolver(list, Arc::new(AllHere));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (proxy.serve(listener).unwrap(), port)
}

/// Sends `request` to the proxy and reads everything it answers.
fn exchange(proxy_port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", proxy_port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A minimal TLS ClientHello record naming `name`.
fn hello(name: &str) -> Vec<u8> {
    tls_client_hello(Some(name), &[])
}

/// Opens a tunnel, sends `first` through it, and returns the proxy's
/// answer with what came back.
fn through_tunnel(proxy_port: u16, authority: &str, first: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", proxy_port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .unwrap();
    let mut head = [0u8; 39];
    let n = s.read(&mut head).unwrap();
    let mut out = String::from_utf8_lossy(&head[..n]).into_owned();
    if !out.starts_with("HTTP/1.1 200") {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        out.push_str(&String::from_utf8_lossy(&rest));
        return out;
    }
    s.write_all(first).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    out.push_str(&String::from_utf8_lossy(&rest));
    out
}

fn refusals(served: &Served) -> Vec<(String, u16, Refusal, Option<String>)> {
    served
        .decisions
        .iter()
        .filter_map(|d| match &d.outcome {
            Outcome::Refused(r) => Some((d.host.clone(), d.port, r.clone(), d.would_allow.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_listed_localhost_port_is_fetched_with_its_own_host_and_one_request() {
    let up =
        Upstream::start(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    let (serving, port) = proxy(&[format!("localhost:{}", up.port)]);
    let answer = exchange(
        port,
        format!(
            "POST http://localhost:{}/index?x=1 HTTP/1.1\r\nHost: elsewhere.example\r\n\
             Proxy-Authorization: Basic c2VjcmV0\r\nContent-Length: 4\r\n\r\nbody\
             GET http://localhost:{}/second HTTP/1.1\r\n\r\n",
            up.port, up.port
        )
        .as_bytes(),
    );
    assert!(answer.ends_with("hello"), "{answer}");
    let seen = up.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let request = String::from_utf8_lossy(&seen[0]);
    assert_eq!(
        request,
        format!(
            "POST /index?x=1 HTTP/1.1\r\nHost: localhost:{}\r\nContent-Length: 4\r\n\
             Connection: close\r\n\r\nbody",
            up.port
        )
    );
    let served = serving.finish();
    assert_eq!(served.decisions.len(), 1);
    assert!(
        matches!(&served.decisions[0].outcome, Outcome::Allowed { entry, address }
            if *entry == format!("localhost:{}", up.port) && address.ip().is_loopback()),
        "{served:?}"
    );
}

#[test]
fn an_unlisted_port_an_ip_literal_and_a_tricky_name_are_refused_before_any_connection() {
    let up = Upstream::start(b"HTTP/1.1 200 OK\r\n\r\n");
    let (serving, port) = proxy(&["localhost:1".to_owned()]);
    for request in [
        format!("GET http://localhost:{}/ HTTP/1.1\r\n\r\n", up.port),
        format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", up.port),
        format!("CONNECT [::ffff:127.0.0.1]:{} HTTP/1.1\r\n\r\n", up.port),
        format!("CONNECT 127.1:{} HTTP/1.1\r\n\r\n", up.port),
        format!(
            "CONNECT localhost@evil.example:{} HTTP/1.1\r\n\r\n",
            up.port
        ),
        format!(
            "GET http://localhost%00.evil.example:{}/ HTTP/1.1\r\n\r\n",
            up.port
        ),
        "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_owned(),
    ] {
        let answer = exchange(port, request.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 400"),
            "{request}: {answer}"
        );
    }
    assert_eq!(up.seen(), Vec::<Vec<u8>>::new());
    let refused = refusals(&serving.finish());
    assert_eq!(refused.len(), 7, "{refused:?}");
    assert_eq!(
        refused[0],
        (
            "localhost".to_owned(),
            up.port,
            Refusal::NotListed,
            Some(format!("localhost:{}", up.port))
        )
    );
    assert_eq!(refused[1].2, Refusal::IpLiteral);
    assert_eq!(refused[1].3, Some(format!("127.0.0.1:{}", up.port)));
    assert_eq!(refused[2].2, Refusal::IpLiteral);
    assert!(matches!(refused[3].2, Refusal::BadName(_)), "{refused:?}");
    assert!(
        matches!(refused[4].2, Refusal::BadRequest(_)),
        "{refused:?}"
    );
    assert!(matches!(refused[5].2, Refusal::BadName(_)), "{refused:?}");
    assert!(
        matches!(refused[6].2, Refusal::BadRequest(_)),
        "{refused:?}"
    );
}

#[test]
fn a_listed_name_that_resolves_to_this_machine_is_refused_unless_the_address_is_listed() {
    let up = Upstream::start(b"pong");
    let (serving, port) = proxy(&[format!("registry.test:{}", up.port)]);
    let answer = through_tunnel(
        port,
        &format!("registry.test:{}", up.port),
        &hello("registry.test"),
    );
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("127.0.0.1"), "{answer}");
    assert_eq!(up.seen(), Vec::<Vec<u8>>::new());
    let refused = refusals(&serving.finish());
    assert!(
        matches!(&refused[0], (host, _, Refusal::NonPublic { .. }, Some(fix))
            if host == "registry.test" && *fix == format!("127.0.0.1:{}", up.port)),
        "{refused:?}"
    );
    // Listing the address lets the same name through.
    let (serving, port) = proxy(&[
        format!("registry.test:{}", up.port),
        format!("127.0.0.1:{}", up.port),
    ]);
    let answer = through_tunnel(
        port,
        &format!("registry.test:{}", up.port),
        &hello("registry.test"),
    );
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("pong"),
        "{answer}"
    );
    assert_eq!(up.seen(), vec![hello("registry.test")]);
    assert_eq!(refusals(&serving.finish()), Vec::new());
}

/// The hostile review of ADR-0082: Encrypted Client Hello carries the
/// listed name outside and any site of the same front end inside; a
/// handshake with no name lets the front end choose. Neither passes a
/// byte. A name of megabytes is kept as one short line.
#[test]
fn a_hidden_or_missing_handshake_name_passes_nothing_and_a_huge_one_is_cut() {
    let up = Upstream::start(b"pong");
    let (serving, port) = proxy(&[
        format!("registry.test:{}", up.port),
        format!("127.0.0.1:{}", up.port),
    ]);
    let authority = format!("registry.test:{}", up.port);
    // encrypted_client_hello (0xfe0d), with an inner name the proxy
    // cannot read, and the draft's number (0xffce).
    for kind in [0xfe0du16, 0xffce] {
        let mut ech = kind.to_be_bytes().to_vec();
        ech.extend(26u16.to_be_bytes());
        ech.extend(b"INNER-SNI-attacker.example");
        let answer = through_tunnel(
            port,
            &authority,
            &tls_client_hello(Some("registry.test"), &ech),
        );
        assert_eq!(answer, "HTTP/1.1 200 Connection established\r\n\r\n");
    }
    let answer = through_tunnel(port, &authority, &tls_client_hello(None, &[]));
    assert_eq!(answer, "HTTP/1.1 200 Connection established\r\n\r\n");
    let huge = "\u{1}".repeat(15_000);
    let answer = through_tunnel(port, &authority, &hello(&huge));
    assert_eq!(answer, "HTTP/1.1 200 Connection established\r\n\r\n");
    assert!(up.seen().iter().all(Vec::is_empty), "{:?}", up.seen());
    let refused = refusals(&serving.finish());
    assert_eq!(refused.len(), 4, "{refused:?}");
    for (_, _, refusal, _) in &refused[..2] {
        assert!(
            refusal.to_string().contains("Encrypted Client Hello"),
            "{refusal}"
        );
    }
    assert!(
        refused[2].2.to_string().contains("names no host"),
        "{}",
        refused[2].2
    );
    let Refusal::SniMismatch { sni } = &refused[3].2 else {
        panic!("{refused:?}");
    };
    assert!(sni.len() < 2_000, "{} bytes kept", sni.len());
    assert!(sni.ends_with("... (15000 bytes in all)"), "{sni}");
}

#[test]
fn a_tunnel_whose_handshake_names_another_host_or_is_not_tls_passes_nothing() {
    let up = Upstream::start(b"pong");
    let (serving, port) = proxy(&[
        format!("registry.test:{}", up.port),
        format!("127.0.0.1:{}", up.port),
    ]);
    let authority = format!("registry.test:{}", up.port);
    let answer = through_tunnel(port, &authority, &hello("attacker.example"));
    assert_eq!(answer, "HTTP/1.1 200 Connection established\r\n\r\n");
    let answer = through_tunnel(
        port,
        &authority,
        b"GET / HTTP/1.1\r\nHost: attacker.example\r\n\r\n",
    );
    assert_eq!(answer, "HTTP/1.1 200 Connection established\r\n\r\n");
    // The upstream saw connections (made before the 200) but no byte.
    assert!(up.seen().iter().all(Vec::is_empty), "{:?}", up.seen());
    let refused = refusals(&serving.finish());
    assert!(
        matches!(&refused[0].2, Refusal::SniMismatch { sni } if sni == "attacker.example"),
        "{refused:?}"
    );
    assert_eq!(refused[1].2, Refusal::NotTls);
}

#[test]
fn finishing_the_serving_ends_its_tunnels_and_stops_accepting() {
    // A server that never answers: the tunnel stays open until the proxy
    // closes it.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let up_port = silent.local_addr().unwrap().port();
    let holder = std::thread::spawn(move || {
        let (mut s, _) = silent.accept().unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        all
    });
    let (serving, port) = proxy(&[format!("127.0.0.1:{up_port}")]);
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(format!("CONNECT 127.0.0.1:{up_port} HTTP/1.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut head = [0u8; 39];
    s.read_exact(&mut head).unwrap();
    s.write_all(b"raw bytes to a listed address").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let served = serving.finish();
    assert!(matches!(
        served.decisions[0].outcome,
        Outcome::Allowed { .. }
    ));
    // The upstream sees its connection end, with the bytes sent.
    assert_eq!(holder.join().unwrap(), b"raw bytes to a listed address");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    assert!(matches!(s.read_to_end(&mut rest), Ok(0)), "{rest:?}");
    // Nothing accepts there any more.
    std::thread::sleep(Duration::from_millis(100));
    let refused = TcpStream::connect(("127.0.0.1", port));
    assert!(refused.is_err(), "the listener is still open");
}

/// A proxy requiring a token (a plugin call's, on the loopback) serves
/// only a client that sends it: without it, or with another, even with a
/// head that does not parse, the answer is a bare `407` that shows
/// neither secret, nothing reaches the listed server and nothing is
/// decided or recorded; with it, the request is served and the proxy's
/// own answers carry the mark, never the token.
#[test]
fn a_proxy_requiring_a_token_serves_only_the_client_that_sends_it() {
    let up =
        Upstream::start(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    let list = Allowlist::parse(&[format!("localhost:{}", up.port)]).unwrap();
    let proxy = Proxy::requiring(
        list,
        goat_egress::ClientKey {
            token: "s3cret".to_owned(),
            mark: "m4rk".to_owned(),
        },
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serving = proxy.serve(listener).unwrap();
    let request = |auth: &str| {
        exchange(
            port,
            format!("GET http://localhost:{}/x HTTP/1.1\r\n{auth}\r\n", up.port).as_bytes(),
        )
    };
    for auth in [
        "",
        "Proxy-Authorization: Bearer wrong\r\n",
        "Proxy-Authorization: s3cret\r\n",
    ] {
        let answer = request(auth);
        assert!(answer.starts_with("HTTP/1.1 407"), "{auth:?}: {answer}");
    }
    let tunnel = through_tunnel(port, &format!("localhost:{}", up.port), &hello("localhost"));
    assert!(tunnel.starts_with("HTTP/1.1 407"), "{tunnel}");
    // A head the proxy cannot read is no way around it, and its answer
    // gives nothing away.
    for bad in [
        &b"GET /x HTTP/1.1\r\n\r\n"[..],
        b"\x16\x03\x01garbage\r\n\r\n",
    ] {
        let answer = exchange(port, bad);
        assert!(answer.starts_with("HTTP/1.1 407"), "{answer}");
        assert!(
            !answer.contains("s3cret") && !answer.contains("m4rk"),
            "{answer}"
        );
    }
    assert!(up.seen().is_empty());
    let answer = request("Proxy-Authorization: Bearer s3cret\r\n");
    assert!(answer.ends_with("ok"), "{answer}");
    let other = exchange(
        port,
        b"GET http://localhost:9/x HTTP/1.1\r\nProxy-Authorization: Bearer s3cret\r\n\r\n",
    );
    assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    assert!(other.contains("goat-egress: m4rk\r\n"), "{other}");
    assert!(!other.contains("s3cret"), "{other}");
    let served = serving.finish();
    assert_eq!(served.decisions.len(), 2, "{served:?}");
    assert_eq!(up.seen().len(), 1);
}
