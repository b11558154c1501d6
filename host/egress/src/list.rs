//! The list of destinations a client may reach (`commands.network = [...]`):
//! entries as the person writes them, and the named sets they can opt
//! into.
//!
//! An entry is `host` (ports 80 and 443), `host:port`, `host:*` (every
//! port), `*.host` (any name below `host`, not `host` itself), an IP
//! address (`10.0.0.5`, `[fd00::1]:8080`), or a named set
//! ([`NAMED_SETS`], `registries.rust`). Nothing matches by default: an
//! empty list lets nothing through.

use std::fmt;
use std::net::IpAddr;

use crate::host::{Host, NameProblem, parse_host, parse_port};

/// A named set of registry hosts the person can opt into by name, each
/// host with why it is there.
#[derive(Debug)]
pub struct NamedSet {
    /// Its name in `commands.network`.
    pub name: &'static str,
    /// What it is for.
    pub about: &'static str,
    /// Each host (ports 80 and 443) and why a build needs it.
    pub hosts: &'static [(&'static str, &'static str)],
}

/// Every named set. Only what a language's package manager needs to
/// download packages from its public registry: never an API that takes
/// uploads (publishing), never a host shared by everyone's files (a
/// cloud's storage endpoint, GitHub's raw content), which would carry the
/// workspace out as easily as in.
pub const NAMED_SETS: &[NamedSet] = &[
    NamedSet {
        name: "registries.rust",
        about: "cargo fetching crates from crates.io",
        hosts: &[
            (
                "index.crates.io",
                "the sparse index cargo reads (config.json and each crate's entry)",
            ),
            (
                "static.crates.io",
                "the .crate files cargo downloads (the index's dl)",
            ),
        ],
    },
    NamedSet {
        name: "registries.python",
        about: "pip, uv and poetry installing from PyPI",
        hosts: &[
            ("pypi.org", "the simple index (/simple/) and JSON metadata"),
            (
                "files.pythonhosted.org",
                "the wheels and source archives the index links to",
            ),
        ],
    },
    NamedSet {
        name: "registries.node",
        about: "npm, pnpm and yarn installing from the npm registry",
        hosts: &[
            (
                "registry.npmjs.org",
                "package metadata and tarballs (npm and pnpm)",
            ),
            (
                "registry.yarnpkg.com",
                "yarn's name for the same registry (yarn 1's default)",
            ),
        ],
    },
    NamedSet {
        name: "registries.go",
        about: "go mod download through the default GOPROXY",
        hosts: &[
            (
                "proxy.golang.org",
                "the module proxy: lists, go.mod files and module zips",
            ),
            (
                "sum.golang.org",
                "the checksum database go verifies each module against",
            ),
        ],
    },
];

/// Which ports an entry allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ports {
    /// 80 and 443: `host` with no port.
    Web,
    /// One port: `host:port`.
    One(u16),
    /// Every port: `host:*`.
    Any,
}

impl Ports {
    /// Whether `port` is allowed.
    pub fn allows(self, port: u16) -> bool {
        match self {
            Self::Web => port == 80 || port == 443,
            Self::One(p) => p == port,
            Self::Any => true,
        }
    }
}

/// What hosts an entry names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Exactly this name.
    Name(String),
    /// Any name strictly below this one (`*.example.com`: `a.example.com`,
    /// `a.b.example.com`, not `example.com`).
    Below(String),
    /// Exactly this address.
    Ip(IpAddr),
}

/// One allowed destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The hosts.
    pub pattern: Pattern,
    /// The ports.
    pub ports: Ports,
    /// The named set it came from, if any.
    pub set: Option<&'static str>,
}

impl Entry {
    /// Whether the entry allows `host` on `port`.
    pub fn matches(&self, host: &Host, port: u16) -> bool {
        if !self.ports.allows(port) {
            return false;
        }
        match (&self.pattern, host) {
            (Pattern::Name(want), Host::Name(name)) => want == name,
            (Pattern::Below(parent), Host::Name(name)) => name
                .strip_suffix(parent.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Pattern::Ip(want), Host::Ip(ip)) => want == ip,
            _ => false,
        }
    }

    /// Whether the entry names the address `ip` itself (on `port`).
    pub fn lists_address(&self, ip: IpAddr, port: u16) -> bool {
        self.ports.allows(port) && self.pattern == Pattern::Ip(ip)
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Pattern::Name(name) => f.write_str(name)?,
            Pattern::Below(parent) => write!(f, "*.{parent}")?,
            Pattern::Ip(ip) => write!(f, "{}", Host::Ip(*ip))?,
        }
        match self.ports {
            Ports::Web => Ok(()),
            Ports::One(port) => write!(f, ":{port}"),
            Ports::Any => f.write_str(":*"),
        }
    }
}

/// Why an entry of the list was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// A URL, not a host.
    #[error("'{0}' is a URL; write the host alone (\"crates.io\") or host:port")]
    Url(String),
    /// `registries.x` that is not a named set.
    #[error("'{given}' is not a named set; the sets are {known}")]
    UnknownSet {
        /// What was written.
        given: String,
        /// The sets there are.
        known: String,
    },
    /// `*` alone, or a wildcard anywhere but a leading `*.`.
    #[error(
        "'{0}': a wildcard is only a leading \"*.\" followed by at least two labels \
         (\"*.example.com\"); to open every destination, set commands.network = true"
    )]
    Wildcard(String),
    /// The port part.
    #[error("'{0}': the port must be a number from 1 to 65535, or *")]
    Port(String),
    /// An IPv6 address without brackets.
    #[error("'{0}': write an IPv6 address in brackets (\"[fd00::1]:8080\")")]
    Ipv6(String),
    /// The host part.
    #[error("'{given}': {problem}")]
    Host {
        /// What was written.
        given: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
}

/// The destinations a client may reach, in the order written, with named
/// sets expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<Entry>,
    /// What the person wrote, for showing it back.
    written: Vec<String>,
}

impl Allowlist {
    /// Reads every item; the first one that is not a destination is the
    /// error.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self, EntryError> {
        let mut list = Self::default();
        for item in items {
            let item = item.as_ref().trim();
            list.written.push(item.to_owned());
            list.entries.extend(parse_entry(item)?);
        }
        Ok(list)
    }

    /// The entries, named sets expanded.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// What the person wrote, one item each.
    pub fn written(&self) -> &[String] {
        &self.written
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The list as a person reads it: each item as written, a named set
    /// followed by its hosts.
    pub fn describe(&self) -> String {
        if self.written.is_empty() {
            return "nothing".to_owned();
        }
        self.written
            .iter()
            .map(|item| match NAMED_SETS.iter().find(|s| s.name == item) {
                Some(set) => format!(
                    "{item} ({})",
                    set.hosts
                        .iter()
                        .map(|(h, _)| *h)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => item.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One item: a named set's entries, or one entry.
fn parse_entry(item: &str) -> Result<Vec<Entry>, EntryError> {
    if let Some(set) = NAMED_SETS.iter().find(|s| s.name == item) {
        return Ok(set
            .hosts
            .iter()
            .map(|(host, _)| Entry {
                pattern: Pattern::Name((*host).to_owned()),
                ports: Ports::Web,
                set: Some(set.name),
            })
            .collect());
    }
    if item.starts_with("registries.") {
        return Err(EntryError::UnknownSet {
            given: item.to_owned(),
            known: NAMED_SETS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    if item.contains("://") || item.contains('/') {
        return Err(EntryError::Url(item.to_owned()));
    }
    let (host, port) = split_port(item)?;
    let ports = match port {
        None => Ports::Web,
        Some("*") => Ports::Any,
        Some(p) => Ports::One(parse_port(p).ok_or_else(|| EntryError::Port(item.to_owned()))?),
    };
    let host_error = |problem| EntryError::Host {
        given: item.to_owned(),
        problem,
    };
    let pattern = if let Some(parent) = host.strip_prefix("*.") {
        match parse_host(parent).map_err(host_error)? {
            Host::Name(name) if name.contains('.') => Pattern::Below(name),
            _ => return Err(EntryError::Wildcard(item.to_owned())),
        }
    } else if host.contains('*') {
        return Err(EntryError::Wildcard(item.to_owned()));
    } else {
        match parse_host(host).map_err(host_error)? {
            Host::Name(name) => Pattern::Name(name),
            Host::Ip(ip) => Pattern::Ip(ip),
        }
    };
    Ok(vec![Entry {
        pattern,
        ports,
        set: None,
    }])
}

/// `host` and its port, if written.
fn split_port(item: &str) -> Result<(&str, Option<&str>), EntryError> {
    if item.starts_with('[') {
        return match item.find(']') {
            Some(end) => {
                let (host, rest) = item.split_at(end + 1);
                match rest {
                    "" => Ok((host, None)),
                    _ => match rest.strip_prefix(':') {
                        Some(port) => Ok((host, Some(port))),
                        None => Err(EntryError::Ipv6(item.to_owned())),
                    },
                }
            }
            None => Err(EntryError::Ipv6(item.to_owned())),
        };
    }
    match item.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => Err(EntryError::Ipv6(item.to_owned())),
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((item, None)),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn one(item: &str) -> Result<Entry, EntryError> {
        Allowlist::parse(&[item]).map(|l| l.entries()[0].clone())
    }

    #[test]
    fn entries_are_read_and_shown_as_written() {
        for item in [
            "crates.io",
            "crates.io:8443",
            "crates.io:*",
            "*.crates.io",
            "*.crates.io:443",
            "127.0.0.1:8080",
            "10.0.0.5",
            "[::1]:8080",
            "localhost:3000",
        ] {
            assert_eq!(one(item).unwrap().to_string(), item);
        }
        assert_eq!(one("Crates.IO.").unwrap().to_string(), "crates.io");
    }

    #[test]
    fn entries_that_are_not_destinations_are_refused_with_what_to_write() {
        let bad = [
            ("https://crates.io", "is a URL"),
            ("crates.io/api", "is a URL"),
            ("registries.ruby", "the sets are registries.rust"),
            ("*", "wildcard"),
            ("*.com", "wildcard"),
            ("cra*tes.io", "wildcard"),
            ("crates.io:0", "port"),
            ("crates.io:http", "port"),
            ("::1", "brackets"),
            ("crates.io\0", "NUL"),
            ("127.1", "a.b.c.d"),
            ("", "empty"),
        ];
        for (item, says) in bad {
            let e = one(item).unwrap_err().to_string();
            assert!(e.contains(says), "{item:?}: {e}");
        }
    }

    #[test]
    fn a_named_set_expands_to_its_hosts_on_the_web_ports() {
        let list = Allowlist::parse(&["registries.rust", "localhost:8080"]).unwrap();
        let names: Vec<String> = list.entries().iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["index.crates.io", "static.crates.io", "localhost:8080"]
        );
        assert_eq!(
            list.describe(),
            "registries.rust (index.crates.io, static.crates.io), localhost:8080"
        );
        for set in NAMED_SETS {
            for (host, why) in set.hosts {
                assert!(parse_host(host).is_ok() && !why.is_empty(), "{host}");
            }
        }
    }

    #[test]
    fn every_named_set_and_host_is_in_the_documented_table() {
        let page = include_str!("../../../docs/configuration.md");
        for set in NAMED_SETS {
            assert!(
                page.contains(&format!("| `{}` |", set.name)),
                "{}",
                set.name
            );
            for (host, _) in set.hosts {
                assert!(page.contains(&format!("| `{host}` |")), "{host}");
            }
        }
    }

    #[test]
    fn a_wildcard_covers_names_below_and_not_the_name_itself() {
        let e = one("*.example.com").unwrap();
        let name = |s: &str| Host::Name(s.to_owned());
        assert!(e.matches(&name("a.example.com"), 443));
        assert!(e.matches(&name("a.b.example.com"), 80));
        assert!(!e.matches(&name("example.com"), 443));
        assert!(!e.matches(&name("badexample.com"), 443));
        assert!(!e.matches(&name("a.example.com"), 8080));
        let exact = one("example.com").unwrap();
        assert!(exact.matches(&name("example.com"), 443));
        assert!(!exact.matches(&name("a.example.com"), 443));
        assert!(!exact.matches(&name("example.com"), 22));
        assert!(
            one("example.com:*")
                .unwrap()
                .matches(&name("example.com"), 22)
        );
    }
}
