//! Host names and addresses as a request or a list entry spells them, read
//! strictly: one spelling per host, and anything another parser could read
//! as a different host refused rather than guessed at.
//!
//! Allowlists have been slipped past by names that two parsers read
//! differently: a NUL byte that ends the name for the resolver but not for
//! the check (`allowed.com\0.evil.com`), userinfo (`allowed.com@evil.com`),
//! percent-encoding, a backslash some URL parsers take for a slash, an
//! IPv4 address in a form only `inet_aton` reads (`127.1`, `0x7f.1`,
//! `2130706433`), a trailing dot, upper case, Unicode that folds to ASCII,
//! an IPv6 zone. Each is refused here or brought to its one form before
//! any rule is looked at.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest host name the resolver takes (RFC 1035: 255 octets on the wire,
/// 253 characters written).
pub const MAX_NAME_CHARS: usize = 253;

/// Longest label (RFC 1035).
pub const MAX_LABEL_CHARS: usize = 63;

/// A host as GOAT compares it: a name in its one form (ASCII lower case,
/// no trailing dot), or an address (an IPv4-mapped IPv6 address is its
/// IPv4 address).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name.
    Name(String),
    /// An IP address literal.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V4(v4)) => write!(f, "{v4}"),
            Self::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
        }
    }
}

/// Why a host was refused before any rule was looked at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameProblem {
    /// Nothing there.
    #[error("the host is empty")]
    Empty,
    /// A NUL byte: a resolver written in C stops reading there.
    #[error("the host holds a NUL byte")]
    Nul,
    /// A control character or white space.
    #[error("the host holds a control character or white space")]
    Control,
    /// Not ASCII: an internationalised name must be written in its `xn--`
    /// form, which is the one the resolver sees.
    #[error("the host is not ASCII (write an internationalised name in its xn-- form)")]
    NotAscii,
    /// A character no host name holds, which some URL parser gives a
    /// meaning (`@` userinfo, `%` encoding, `\` or `/` a path, `:` a port).
    #[error("the host holds '{0}', which no host name does")]
    Forbidden(char),
    /// Longer than [`MAX_NAME_CHARS`].
    #[error("the host is longer than {MAX_NAME_CHARS} characters")]
    TooLong,
    /// A label longer than [`MAX_LABEL_CHARS`].
    #[error("a label of the host is longer than {MAX_LABEL_CHARS} characters")]
    LabelTooLong,
    /// Two dots in a row, a leading dot, or more than one trailing dot.
    #[error("the host has an empty label")]
    EmptyLabel,
    /// A label starting or ending with `-`.
    #[error("a label of the host starts or ends with '-'")]
    Hyphen,
    /// A name whose last label is a number: `inet_aton` reads it as an
    /// IPv4 address (`127.1`, `0x7f.0.0.1`, `2130706433`).
    #[error("the host is an IPv4 address written in a form other than a.b.c.d")]
    NumericForm,
    /// An IPv6 address with a zone (`fe80::1%eth0`), or a bracketed
    /// literal that is not an IPv6 address.
    #[error("the host is not a valid IPv6 address in brackets")]
    BadIpv6,
}

/// Reads `raw` as a host: a bracketed IPv6 literal, a dotted-quad IPv4
/// literal, or a name.
pub fn parse_host(raw: &str) -> Result<Host, NameProblem> {
    if raw.is_empty() {
        return Err(NameProblem::Empty);
    }
    for c in raw.chars() {
        if c == '\0' {
            return Err(NameProblem::Nul);
        }
        if c.is_control() || c.is_whitespace() {
            return Err(NameProblem::Control);
        }
        if !c.is_ascii() {
            return Err(NameProblem::NotAscii);
        }
    }
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(NameProblem::BadIpv6)?;
        if inner.contains('%') {
            return Err(NameProblem::BadIpv6);
        }
        let v6: Ipv6Addr = inner.parse().map_err(|_| NameProblem::BadIpv6)?;
        return Ok(Host::Ip(canonical(IpAddr::V6(v6))));
    }
    if let Some(bad) = raw
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
    {
        return Err(NameProblem::Forbidden(bad));
    }
    if let Ok(v4) = raw.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(v4)));
    }
    // One trailing dot is the same name, written absolute; more is not a
    // name.
    let name = raw.strip_suffix('.').unwrap_or(raw).to_ascii_lowercase();
    if name.len() > MAX_NAME_CHARS {
        return Err(NameProblem::TooLong);
    }
    let labels: Vec<&str> = name.split('.').collect();
    for label in &labels {
        if label.is_empty() {
            return Err(NameProblem::EmptyLabel);
        }
        if label.len() > MAX_LABEL_CHARS {
            return Err(NameProblem::LabelTooLong);
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(NameProblem::Hyphen);
        }
    }
    if labels.last().is_some_and(|last| is_numeric_label(last)) {
        return Err(NameProblem::NumericForm);
    }
    Ok(Host::Name(name))
}

/// Whether a label is a number as `inet_aton` reads one: decimal, octal
/// (leading `0`) or hexadecimal (`0x`). WHATWG's URL standard takes a host
/// whose last label is such a number for an IPv4 address, and so does the
/// C library's resolver.
fn is_numeric_label(label: &str) -> bool {
    let hex = label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"));
    match hex {
        Some(digits) => digits.chars().all(|c| c.is_ascii_hexdigit()),
        None => label.chars().all(|c| c.is_ascii_digit()),
    }
}

/// An address in the one form GOAT compares: an IPv4-mapped IPv6 address
/// (`::ffff:127.0.0.1`) is the IPv4 address it maps, as the kernel treats
/// it when connecting.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        IpAddr::V4(_) => ip,
    }
}

/// Why an authority (`host:port`) was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorityProblem {
    /// The host part.
    #[error(transparent)]
    Host(#[from] NameProblem),
    /// No port where one is needed (`CONNECT host` without `:443`).
    #[error("no port is given")]
    NoPort,
    /// The port is not a number from 1 to 65535.
    #[error("the port is not a number from 1 to 65535")]
    BadPort,
    /// `user@host`: userinfo names one host and hides another.
    #[error("the authority holds userinfo ('@'), which hides the host it names")]
    Userinfo,
}

/// Reads an authority, `host:port` or `[v6]:port`, with `default_port`
/// used when there is no port (`None`: a port is required).
pub fn parse_authority(
    raw: &str,
    default_port: Option<u16>,
) -> Result<(Host, u16), AuthorityProblem> {
    if raw.contains('@') {
        return Err(AuthorityProblem::Userinfo);
    }
    let (host, port) = if raw.starts_with('[') {
        match raw.find(']') {
            Some(end) => {
                let (host, rest) = raw.split_at(end + 1);
                match rest {
                    "" => (host, None),
                    _ => match rest.strip_prefix(':') {
                        Some(port) => (host, Some(port)),
                        None => return Err(NameProblem::BadIpv6.into()),
                    },
                }
            }
            None => return Err(NameProblem::BadIpv6.into()),
        }
    } else {
        match raw.rsplit_once(':') {
            Some((host, port)) => {
                if host.contains(':') {
                    // An IPv6 address without brackets cannot be told
                    // from its port.
                    return Err(NameProblem::BadIpv6.into());
                }
                (host, Some(port))
            }
            None => (raw, None),
        }
    };
    let port = match port {
        Some(port) => parse_port(port).ok_or(AuthorityProblem::BadPort)?,
        None => default_port.ok_or(AuthorityProblem::NoPort)?,
    };
    Ok((parse_host(host)?, port))
}

/// A port: decimal digits only (no sign, no leading `+`), 1 to 65535.
pub(crate) fn parse_port(raw: &str) -> Option<u16> {
    if raw.is_empty() || raw.len() > 5 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse::<u16>().ok().filter(|p| *p != 0)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn name(s: &str) -> Result<Host, NameProblem> {
        Ok(Host::Name(s.to_owned()))
    }

    fn ip(s: &str) -> Result<Host, NameProblem> {
        Ok(Host::Ip(s.parse().unwrap()))
    }

    #[test]
    fn hosts_are_read_strictly_in_one_form() {
        let table: &[(&str, Result<Host, NameProblem>)] = &[
            ("crates.io", name("crates.io")),
            ("Crates.IO", name("crates.io")),
            ("crates.io.", name("crates.io")),
            ("crates.io..", Err(NameProblem::EmptyLabel)),
            (".crates.io", Err(NameProblem::EmptyLabel)),
            ("a..b", Err(NameProblem::EmptyLabel)),
            ("localhost", name("localhost")),
            ("_dmarc.example.com", name("_dmarc.example.com")),
            ("-bad.example", Err(NameProblem::Hyphen)),
            ("xn--bcher-kva.example", name("xn--bcher-kva.example")),
            ("bücher.example", Err(NameProblem::NotAscii)),
            // Fullwidth dot and letters, which NFKC would fold to ASCII.
            ("ｃrates.io", Err(NameProblem::NotAscii)),
            ("crates.io\0.evil.com", Err(NameProblem::Nul)),
            ("crates.io evil.com", Err(NameProblem::Control)),
            ("crates.io\r\nx", Err(NameProblem::Control)),
            ("allowed.com@evil.com", Err(NameProblem::Forbidden('@'))),
            ("evil.com%2ecrates.io", Err(NameProblem::Forbidden('%'))),
            ("evil.com\\crates.io", Err(NameProblem::Forbidden('\\'))),
            ("evil.com/crates.io", Err(NameProblem::Forbidden('/'))),
            ("evil.com:443", Err(NameProblem::Forbidden(':'))),
            ("*.crates.io", Err(NameProblem::Forbidden('*'))),
            ("", Err(NameProblem::Empty)),
            ("127.0.0.1", ip("127.0.0.1")),
            ("127.1", Err(NameProblem::NumericForm)),
            ("0x7f.0.0.1", Err(NameProblem::NumericForm)),
            ("0177.0.0.1", Err(NameProblem::NumericForm)),
            ("2130706433", Err(NameProblem::NumericForm)),
            ("127.0.0.01", Err(NameProblem::NumericForm)),
            ("1.2.3.4.5", Err(NameProblem::NumericForm)),
            ("example.0x1f", Err(NameProblem::NumericForm)),
            // Not a number: a name.
            ("example.0xg", name("example.0xg")),
            ("[::1]", ip("::1")),
            ("[::ffff:127.0.0.1]", ip("127.0.0.1")),
            ("[fe80::1%eth0]", Err(NameProblem::BadIpv6)),
            ("[crates.io]", Err(NameProblem::BadIpv6)),
            ("[::1", Err(NameProblem::BadIpv6)),
            (&"a".repeat(64), Err(NameProblem::LabelTooLong)),
            (
                &format!("{}.com", vec!["a".repeat(60); 5].join(".")),
                Err(NameProblem::TooLong),
            ),
        ];
        for (raw, want) in table {
            assert_eq!(&parse_host(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn authorities_need_their_port_and_hide_no_host() {
        let ok = |host: Host, port: u16| Ok((host, port));
        let n = |s: &str| Host::Name(s.to_owned());
        type Row<'a> = (&'a str, Option<u16>, Result<(Host, u16), AuthorityProblem>);
        let table: &[Row<'_>] = &[
            ("crates.io:443", None, ok(n("crates.io"), 443)),
            ("crates.io", None, Err(AuthorityProblem::NoPort)),
            ("crates.io", Some(80), ok(n("crates.io"), 80)),
            ("crates.io:0", None, Err(AuthorityProblem::BadPort)),
            ("crates.io:65536", None, Err(AuthorityProblem::BadPort)),
            ("crates.io:+443", None, Err(AuthorityProblem::BadPort)),
            ("crates.io:", None, Err(AuthorityProblem::BadPort)),
            (
                "[::1]:8080",
                None,
                ok(Host::Ip("::1".parse().unwrap()), 8080),
            ),
            ("[::1]", Some(80), ok(Host::Ip("::1".parse().unwrap()), 80)),
            ("[::1]x", None, Err(NameProblem::BadIpv6.into())),
            ("::1:8080", None, Err(NameProblem::BadIpv6.into())),
            ("a@b:443", None, Err(AuthorityProblem::Userinfo)),
            (
                "crates.io\0:443",
                None,
                Err(AuthorityProblem::Host(NameProblem::Nul)),
            ),
        ];
        for (raw, default, want) in table {
            assert_eq!(&parse_authority(raw, *default), want, "{raw:?}");
        }
    }
}
