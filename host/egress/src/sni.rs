//! The server name a TLS ClientHello asks for (SNI), read from the first
//! bytes a client sends through a tunnel.
//!
//! A CONNECT names a host; the TLS handshake inside names the host the
//! client wants to talk to. A front end shared by many sites (a CDN, where
//! every registry lives) routes by the handshake's name, so
//! `CONNECT registry.npmjs.org:443` followed by a handshake for
//! `attacker.example` would reach the attacker through a listed address.
//! The proxy reads the ClientHello before passing a byte on, and refuses a
//! name other than the one the CONNECT gave. What is encrypted after the
//! handshake (the HTTP `Host` header inside) it cannot see; see
//! docs/security.md.

/// Most bytes of handshake read to find the name: a ClientHello with
/// post-quantum key shares is about 2 KiB, and a TLS record at most 16 KiB.
pub const MAX_HELLO_BYTES: usize = 64 * 1024;

/// Largest TLS record fragment (RFC 8446: 2^14 bytes, plaintext).
const MAX_RECORD_BYTES: usize = 16 * 1024;

/// What the first bytes of a tunnel are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hello {
    /// More bytes are needed.
    Incomplete,
    /// Not a TLS handshake at all.
    NotTls,
    /// A TLS handshake that does not parse as a ClientHello, or is larger
    /// than [`MAX_HELLO_BYTES`].
    Malformed,
    /// A ClientHello with no server name (a client connecting to an
    /// address).
    NoName,
    /// A ClientHello naming this host.
    Name(String),
    /// A ClientHello with an Encrypted Client Hello extension: the name
    /// outside may not be the one a front end routes by.
    Encrypted,
}

/// The extension numbers of Encrypted Client Hello: the RFC's and the
/// draft's (ESNI) that clients sent before it.
const ECH_EXTENSIONS: [usize; 2] = [0xfe0d, 0xffce];

/// Reads the ClientHello at the start of `buf`.
pub fn client_hello(buf: &[u8]) -> Hello {
    let mut handshake: Vec<u8> = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = buf.get(at..at + 5) else {
            if at == 0 && !buf.is_empty() && buf[0] != 0x16 {
                return Hello::NotTls;
            }
            return Hello::Incomplete;
        };
        // A handshake record (22) of TLS 1.x (major version 3).
        if header[0] != 0x16 || header[1] != 3 {
            return if at == 0 {
                Hello::NotTls
            } else {
                Hello::Malformed
            };
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len == 0 || len > MAX_RECORD_BYTES {
            return Hello::Malformed;
        }
        let Some(fragment) = buf.get(at + 5..at + 5 + len) else {
            return Hello::Incomplete;
        };
        handshake.extend_from_slice(fragment);
        at += 5 + len;
        if handshake.len() < 4 {
            continue;
        }
        // A ClientHello (1), with its 24-bit length.
        if handshake[0] != 1 {
            return Hello::Malformed;
        }
        let body_len = (usize::from(handshake[1]) << 16)
            | (usize::from(handshake[2]) << 8)
            | usize::from(handshake[3]);
        if body_len + 4 > MAX_HELLO_BYTES {
            return Hello::Malformed;
        }
        if handshake.len() < body_len + 4 {
            continue;
        }
        return server_name(&handshake[4..4 + body_len]).unwrap_or(Hello::Malformed);
    }
}

/// A cursor over a message; every read is bounds-checked.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.buf.split_at_checked(n)?;
        self.buf = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// A vector with a length prefix of one or two bytes.
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(n)
    }

    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(n)
    }
}

/// The server name in a ClientHello's body; `None` when it does not parse.
fn server_name(body: &[u8]) -> Option<Hello> {
    let mut r = Reader { buf: body };
    r.take(2)?; // legacy_version
    r.take(32)?; // random
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
    if r.buf.is_empty() {
        return Some(Hello::NoName);
    }
    let mut extensions = Reader { buf: r.vec16()? };
    let mut found = None;
    let mut encrypted = false;
    while !extensions.buf.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        encrypted |= ECH_EXTENSIONS.contains(&kind);
        if kind != 0 {
            continue;
        }
        // Two server_name extensions: which one a front end reads is
        // anyone's guess.
        if found.is_some() {
            return None;
        }
        let mut list = Reader {
            buf: Reader { buf: data }.vec16()?,
        };
        let mut name = None;
        while !list.buf.is_empty() {
            let name_type = list.u8()?;
            let host = list.vec16()?;
            // host_name (0); one only, as RFC 6066 requires.
            if name_type != 0 || name.is_some() || host.is_empty() {
                return None;
            }
            name = Some(std::str::from_utf8(host).ok()?.to_owned());
        }
        found = Some(name?);
    }
    Some(match found {
        _ if encrypted => Hello::Encrypted,
        Some(name) => Hello::Name(name),
        None => Hello::NoName,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use goat_testkit::tls_client_hello;

    /// A minimal ClientHello record naming `name` (or none), with one
    /// unrelated extension (supported_versions) after it.
    fn hello(name: Option<&str>) -> Vec<u8> {
        tls_client_hello(name, &[0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04])
    }

    #[test]
    fn the_server_name_is_read_from_a_client_hello() {
        let named = hello(Some("registry.npmjs.org"));
        assert_eq!(
            client_hello(&named),
            Hello::Name("registry.npmjs.org".to_owned())
        );
        assert_eq!(client_hello(&hello(None)), Hello::NoName);
        for cut in [0, 3, 5, 40, named.len() - 1] {
            assert_eq!(client_hello(&named[..cut]), Hello::Incomplete, "{cut}");
        }
        assert_eq!(client_hello(b"GET / HTTP/1.1\r\n"), Hello::NotTls);
        assert_eq!(client_hello(b"G"), Hello::NotTls);
        assert_eq!(client_hello(b"SSH-2.0-OpenSSH\r\n"), Hello::NotTls);
    }

    #[test]
    fn a_hello_split_across_records_is_read_whole() {
        let one = hello(Some("files.pythonhosted.org"));
        let hs = &one[5..];
        let (a, b) = hs.split_at(20);
        let mut two = Vec::new();
        for part in [a, b] {
            two.extend([0x16, 3, 1]);
            two.extend((part.len() as u16).to_be_bytes());
            two.extend(part);
        }
        assert_eq!(
            client_hello(&two),
            Hello::Name("files.pythonhosted.org".to_owned())
        );
    }

    #[test]
    fn a_hello_that_does_not_parse_is_malformed() {
        let mut bad = hello(Some("a.example"));
        // The handshake type: not a ClientHello.
        bad[5] = 2;
        assert_eq!(client_hello(&bad), Hello::Malformed);
        let mut short = hello(Some("a.example"));
        // The server_name extension's length (the 23rd byte from the
        // end) runs past the message.
        let n = short.len();
        short[n - 23] = 0xff;
        assert_eq!(client_hello(&short), Hello::Malformed);
        // A record claiming more than TLS allows.
        assert_eq!(client_hello(&[0x16, 3, 1, 0xff, 0xff]), Hello::Malformed);
    }
}
