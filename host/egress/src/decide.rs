//! The decision, as pure functions over the list: whether a destination
//! may be looked up, and whether the addresses it resolved to may be
//! connected to. The proxy does the I/O between the two and after; every
//! answer here is data ([`Admission`], [`Refusal`]), rendered elsewhere.

use std::fmt;
use std::net::IpAddr;

use crate::addr::{AddressClass, class};
use crate::host::{Host, NameProblem, canonical};
use crate::list::Allowlist;

/// The name every resolver agrees is this machine, answered by GOAT
/// without a lookup (RFC 6761), so no hosts file or DNS server decides
/// what it means.
pub const LOCALHOST: &str = "localhost";

/// What the list says before any lookup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Listed: connect to these addresses and no other (an address
    /// literal, or `localhost`'s own).
    Connect {
        /// The entry that allowed it, as written.
        entry: String,
        /// Where to connect, in order.
        addresses: Vec<IpAddr>,
    },
    /// A listed name: look it up, then [`check_resolved`].
    Resolve {
        /// The entry that allowed it, as written.
        entry: String,
    },
    /// Refused.
    Refused(Refusal),
}

/// Why a destination was refused. Not `#[non_exhaustive]`: whoever stores or
/// shows a refusal matches every kind, so a new one cannot pass unnamed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No entry names this host on this port.
    NotListed,
    /// An IP address no entry names.
    IpLiteral,
    /// A listed name that resolved to an address that is not public, which
    /// no entry names.
    NonPublic {
        /// The address.
        address: IpAddr,
        /// What kind it is.
        class: AddressClass,
    },
    /// A host no name can be: refused before any rule.
    BadName(NameProblem),
    /// The name did not resolve.
    Unresolved(String),
    /// The tunnel's TLS handshake names another host (SNI): a shared
    /// front end would route it there.
    SniMismatch {
        /// The name the handshake gave.
        sni: String,
    },
    /// The tunnel to a name did not start with a TLS handshake.
    NotTls,
    /// The request was not one the proxy serves.
    BadRequest(String),
}

impl Refusal {
    /// A short code, stored with the decision (`goat-store` keeps its own
    /// typed copy, mapped from this one by an exhaustive match).
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotListed => "not_listed",
            Self::IpLiteral => "ip_literal",
            Self::NonPublic { .. } => "non_public",
            Self::BadName(_) => "bad_name",
            Self::Unresolved(_) => "unresolved",
            Self::SniMismatch { .. } => "sni_mismatch",
            Self::NotTls => "not_tls",
            Self::BadRequest(_) => "bad_request",
        }
    }

    /// What a list entry would allow it, if any would: `host` (on the web
    /// ports) or `host:port`, or the address itself.
    pub fn would_allow(&self, host: &Host, port: u16) -> Option<String> {
        let with_port = |host: String| {
            if port == 443 || port == 80 {
                host
            } else {
                format!("{host}:{port}")
            }
        };
        match self {
            Self::NotListed | Self::IpLiteral => Some(with_port(host.to_string())),
            Self::NonPublic { address, .. } => Some(with_port(Host::Ip(*address).to_string())),
            Self::BadName(_)
            | Self::Unresolved(_)
            | Self::SniMismatch { .. }
            | Self::NotTls
            | Self::BadRequest(_) => None,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotListed => f.write_str("not listed"),
            Self::IpLiteral => f.write_str("an IP address that is not listed"),
            Self::NonPublic { address, class } => write!(
                f,
                "it resolved to {}, {}, which is not listed",
                Host::Ip(*address),
                class.describe()
            ),
            Self::BadName(problem) => write!(f, "{problem}"),
            Self::Unresolved(why) => write!(f, "it did not resolve: {why}"),
            Self::SniMismatch { sni } => write!(
                f,
                "the TLS handshake names another host (\"{sni}\"), which a shared front end \
                 would route to"
            ),
            Self::NotTls => f.write_str(
                "a tunnel to a name must start with a TLS handshake; plain http goes through \
                 HTTP_PROXY",
            ),
            Self::BadRequest(why) => write!(f, "{why}"),
        }
    }
}

/// Most characters of text a client sent (a request's target, a
/// handshake's name) kept in a decision: enough for any real host, while a
/// command sending megabytes of name costs GOAT, the store and the model
/// a line, not megabytes (the hostile review of ADR-0082).
pub const MAX_SHOWN_CHARS: usize = 255;

/// `raw` escaped (control and non-ASCII characters as Rust escapes) and
/// cut to [`MAX_SHOWN_CHARS`], with how long it was when cut.
pub fn shown(raw: &str) -> String {
    let mut out: String = raw
        .chars()
        .take(MAX_SHOWN_CHARS)
        .collect::<String>()
        .escape_debug()
        .collect();
    if raw.chars().nth(MAX_SHOWN_CHARS).is_some() {
        out.push_str(&format!("... ({} bytes in all)", raw.len()));
    }
    out
}

/// What the list says about `host` on `port`, before any lookup.
pub fn admit(list: &Allowlist, host: &Host, port: u16) -> Admission {
    let Some(entry) = list.entries().iter().find(|e| e.matches(host, port)) else {
        return Admission::Refused(match host {
            Host::Ip(_) => Refusal::IpLiteral,
            Host::Name(_) => Refusal::NotListed,
        });
    };
    let written = entry.to_string();
    match host {
        Host::Ip(ip) => Admission::Connect {
            entry: written,
            addresses: vec![*ip],
        },
        Host::Name(name) if name == LOCALHOST => Admission::Connect {
            entry: written,
            addresses: vec![
                IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            ],
        },
        Host::Name(_) => Admission::Resolve { entry: written },
    }
}

/// The addresses a listed name resolved to, checked: every one must be
/// public, or listed itself for this port. One that is neither refuses
/// the name (a rebinding answer mixes a public address with a local one;
/// none of them is used). Returns the addresses to connect to, in the
/// resolver's order, each in its canonical form.
pub fn check_resolved(
    list: &Allowlist,
    port: u16,
    resolved: &[IpAddr],
) -> Result<Vec<IpAddr>, Refusal> {
    if resolved.is_empty() {
        return Err(Refusal::Unresolved("no address".to_owned()));
    }
    let mut out = Vec::with_capacity(resolved.len());
    for ip in resolved {
        let ip = canonical(*ip);
        let kind = class(ip);
        let listed = list.entries().iter().any(|e| e.lists_address(ip, port));
        if kind != AddressClass::Public && !listed {
            return Err(Refusal::NonPublic {
                address: ip,
                class: kind,
            });
        }
        if !out.contains(&ip) {
            out.push(ip);
        }
    }
    Ok(out)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::host::parse_host;

    fn list(items: &[&str]) -> Allowlist {
        Allowlist::parse(items).unwrap()
    }

    fn ips(items: &[&str]) -> Vec<IpAddr> {
        items.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn the_list_decides_before_any_lookup() {
        let l = list(&[
            "registries.rust",
            "localhost:8080",
            "10.0.0.5:3128",
            "*.example.com:8443",
        ]);
        let host = |s: &str| parse_host(s).unwrap();
        let resolve = |entry: &str| Admission::Resolve {
            entry: entry.to_owned(),
        };
        let table: &[(&str, u16, Admission)] = &[
            ("index.crates.io", 443, resolve("index.crates.io")),
            ("static.crates.io", 80, resolve("static.crates.io")),
            ("crates.io", 443, Admission::Refused(Refusal::NotListed)),
            (
                "index.crates.io",
                8443,
                Admission::Refused(Refusal::NotListed),
            ),
            (
                "localhost",
                8080,
                Admission::Connect {
                    entry: "localhost:8080".to_owned(),
                    addresses: ips(&["127.0.0.1", "::1"]),
                },
            ),
            ("localhost", 8081, Admission::Refused(Refusal::NotListed)),
            (
                "10.0.0.5",
                3128,
                Admission::Connect {
                    entry: "10.0.0.5:3128".to_owned(),
                    addresses: ips(&["10.0.0.5"]),
                },
            ),
            ("10.0.0.5", 443, Admission::Refused(Refusal::IpLiteral)),
            ("127.0.0.1", 8080, Admission::Refused(Refusal::IpLiteral)),
            ("[::1]", 8080, Admission::Refused(Refusal::IpLiteral)),
            ("a.example.com", 8443, resolve("*.example.com:8443")),
            ("example.com", 8443, Admission::Refused(Refusal::NotListed)),
        ];
        for (raw, port, want) in table {
            assert_eq!(&admit(&l, &host(raw), *port), want, "{raw}:{port}");
        }
        assert_eq!(
            admit(&Allowlist::default(), &host("index.crates.io"), 443),
            Admission::Refused(Refusal::NotListed)
        );
    }

    #[test]
    fn a_listed_name_reaches_only_public_addresses_or_listed_ones() {
        let l = list(&["registry.test:8080", "10.0.0.5:8080"]);
        type Row<'a> = (&'a [&'a str], u16, Result<Vec<IpAddr>, Refusal>);
        let table: &[Row<'_>] = &[
            (&["151.101.1.137"], 8080, Ok(ips(&["151.101.1.137"]))),
            (
                &["151.101.1.137", "151.101.1.137", "2a04:4e42::223"],
                8080,
                Ok(ips(&["151.101.1.137", "2a04:4e42::223"])),
            ),
            // Rebinding: a public address and this machine.
            (
                &["151.101.1.137", "127.0.0.1"],
                8080,
                Err(Refusal::NonPublic {
                    address: "127.0.0.1".parse().unwrap(),
                    class: AddressClass::Loopback,
                }),
            ),
            (
                &["::ffff:127.0.0.1"],
                8080,
                Err(Refusal::NonPublic {
                    address: "127.0.0.1".parse().unwrap(),
                    class: AddressClass::Loopback,
                }),
            ),
            (
                &["169.254.169.254"],
                8080,
                Err(Refusal::NonPublic {
                    address: "169.254.169.254".parse().unwrap(),
                    class: AddressClass::LinkLocal,
                }),
            ),
            // A private address listed itself, on this port.
            (&["10.0.0.5"], 8080, Ok(ips(&["10.0.0.5"]))),
            (
                &["10.0.0.5"],
                9090,
                Err(Refusal::NonPublic {
                    address: "10.0.0.5".parse().unwrap(),
                    class: AddressClass::Private,
                }),
            ),
            (&[], 8080, Err(Refusal::Unresolved("no address".to_owned()))),
        ];
        for (resolved, port, want) in table {
            assert_eq!(
                &check_resolved(&l, *port, &ips(resolved)),
                want,
                "{resolved:?}"
            );
        }
    }

    #[test]
    fn a_refusal_names_the_entry_that_would_allow_it() {
        let host = |s: &str| parse_host(s).unwrap();
        assert_eq!(
            Refusal::NotListed.would_allow(&host("example.org"), 443),
            Some("example.org".to_owned())
        );
        assert_eq!(
            Refusal::NotListed.would_allow(&host("localhost"), 9000),
            Some("localhost:9000".to_owned())
        );
        assert_eq!(
            Refusal::IpLiteral.would_allow(&host("[::1]"), 8080),
            Some("[::1]:8080".to_owned())
        );
        let rebound = Refusal::NonPublic {
            address: "127.0.0.1".parse().unwrap(),
            class: AddressClass::Loopback,
        };
        assert_eq!(
            rebound.would_allow(&host("registry.test"), 8080),
            Some("127.0.0.1:8080".to_owned())
        );
        assert_eq!(Refusal::NotTls.would_allow(&host("example.org"), 443), None);
    }
}
