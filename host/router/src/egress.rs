//! A command's way out through GOAT's egress proxy (ADR-0082): the
//! session's [`Proxy`] serving one call, what it decided written to the
//! store as the call's record, and what the person and the model are told.
//!
//! The same pieces serve any client GOAT contains with a proxied network:
//! an MCP server launcher would make its own [`CallProxy`] from the
//! server's list and keep it for the server's life, recording against the
//! server instead of a call.

use std::sync::{Mutex, PoisonError};
use std::time::UNIX_EPOCH;

use goat_command::{Network, ProxyLink, Used};
use goat_egress::{Decision, Outcome, Proxy, Refusal, RequestKind, Served, Serving};
use goat_store::{EgressRecord, EgressRequest, EgressVerdict, Refusal as CallRefusal, RefusedBy};

/// The setting a command's list comes from, named in every refusal.
pub const COMMANDS_NETWORK: &str = "commands.network";

/// Where a plugin's hosts come from, named in every refusal.
pub const PLUGIN_HOSTS: &str = "the plugin's --allow-host grants";

/// Most refused destinations a result lists; the rest are counted.
const MAX_REFUSALS_LISTED: usize = 20;

/// The session's proxy serving one client, for as long as this lives.
#[derive(Debug)]
pub struct CallProxy<'a> {
    proxy: &'a Proxy,
    serving: Mutex<Vec<Serving>>,
}

impl<'a> CallProxy<'a> {
    /// A client of `proxy`, served once its containment hands over a
    /// listener.
    pub fn new(proxy: &'a Proxy) -> Self {
        Self {
            proxy,
            serving: Mutex::new(Vec::new()),
        }
    }

    /// Stops serving (every connection it carried ends) and returns what
    /// was decided.
    pub fn finish(self) -> Served {
        let mut all = Served::default();
        for serving in self
            .serving
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            let served = serving.finish();
            all.decisions.extend(served.decisions);
            all.dropped += served.dropped;
        }
        all
    }
}

/// Most `wasi:http` requests one plugin call may make. Past it each is
/// refused before it reaches the proxy, and the call's outcome says how
/// many: the proxy keeps every decision of a call this size (its own cap
/// is far higher), so no refusal goes unrecorded.
pub const MAX_PLUGIN_REQUESTS: usize = 256;

/// A plugin call's way out for its `wasi:http` requests (ADR-0097): a
/// proxy allowing only the hosts the person granted the plugin, listening
/// on the loopback from the call's first request until the call ends.
pub struct PluginEgress {
    proxy: Proxy,
    key: goat_egress::ClientKey,
    serving: Mutex<Option<(std::net::SocketAddr, Serving)>>,
    requests: std::sync::atomic::AtomicUsize,
}

impl PluginEgress {
    /// A way out to `hosts` (the plugin's grants, checked at add; an empty
    /// list allows nothing, and every request is still recorded).
    pub fn new(hosts: &[String]) -> Result<Self, String> {
        let list = goat_egress::Allowlist::parse(hosts).map_err(|e| e.to_string())?;
        // 128 random bits each.
        let secret = || {
            crate::random::random_hex(16).map_err(|e| format!("no random token for the proxy: {e}"))
        };
        let key = goat_egress::ClientKey {
            token: secret()?,
            mark: secret()?,
        };
        Ok(Self {
            proxy: Proxy::requiring(list, key.clone()),
            key,
            serving: Mutex::new(None),
            requests: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Stops serving; what was decided, if any request was made.
    pub fn finish(&self) -> Option<Served> {
        self.serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .map(|(_, serving)| serving.finish())
    }

    /// The refusal of the requests made past [`MAX_PLUGIN_REQUESTS`], if
    /// there were any.
    pub fn over_limit(&self) -> Option<CallRefusal> {
        let made = self.requests.load(std::sync::atomic::Ordering::Relaxed);
        let past = made.checked_sub(MAX_PLUGIN_REQUESTS).filter(|n| *n > 0)?;
        Some(CallRefusal::new(
            RefusedBy::Limit,
            None,
            format!(
                "{past} wasi:http requests past the {MAX_PLUGIN_REQUESTS} a plugin call may make \
                 were refused"
            ),
        ))
    }
}

impl goat_sandbox::HttpEgress for PluginEgress {
    fn proxy(&self) -> std::io::Result<goat_sandbox::ProxyAccess> {
        let made = self
            .requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if made >= MAX_PLUGIN_REQUESTS {
            return Err(std::io::Error::other("too many requests in one call"));
        }
        let mut serving = self.serving.lock().unwrap_or_else(PoisonError::into_inner);
        let addr = match &*serving {
            Some((addr, _)) => *addr,
            None => {
                let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
                let addr = listener.local_addr()?;
                *serving = Some((addr, self.proxy.serve(listener)?));
                addr
            }
        };
        Ok(goat_sandbox::ProxyAccess {
            addr,
            token: self.key.token.clone(),
            mark: self.key.mark.clone(),
        })
    }
}

impl ProxyLink for CallProxy<'_> {
    fn serve(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        let serving = self.proxy.serve(listener)?;
        self.serving
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(serving);
        Ok(())
    }
}

/// The store's kind of each refusal (an exhaustive match: a new refusal
/// cannot be stored unnamed).
fn verdict(outcome: &Outcome) -> EgressVerdict {
    match outcome {
        Outcome::Allowed { .. } => EgressVerdict::Allowed,
        Outcome::Unreachable { .. } => EgressVerdict::Unreachable,
        Outcome::Refused(refusal) => match refusal {
            Refusal::NotListed => EgressVerdict::NotListed,
            Refusal::IpLiteral => EgressVerdict::IpLiteral,
            Refusal::NonPublic { .. } => EgressVerdict::NonPublic,
            Refusal::BadName(_) => EgressVerdict::BadName,
            Refusal::Unresolved(_) => EgressVerdict::Unresolved,
            Refusal::SniMismatch { .. } => EgressVerdict::SniMismatch,
            Refusal::NotTls => EgressVerdict::NotTls,
            Refusal::BadRequest(_) => EgressVerdict::BadRequest,
        },
    }
}

/// The decisions as the store keeps them.
pub fn records(served: &Served) -> Vec<EgressRecord> {
    served.decisions.iter().map(record).collect()
}

fn record(d: &Decision) -> EgressRecord {
    let (detail, entry, address) = match &d.outcome {
        Outcome::Allowed { entry, address } => (
            "listed".to_owned(),
            Some(entry.clone()),
            Some(address.to_string()),
        ),
        Outcome::Unreachable { entry, why } => (why.clone(), Some(entry.clone()), None),
        Outcome::Refused(refusal) => (
            refusal.to_string(),
            d.would_allow.clone(),
            match refusal {
                Refusal::NonPublic { address, .. } => Some(address.to_string()),
                _ => None,
            },
        ),
    };
    EgressRecord {
        at: d
            .at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |t| i64::try_from(t.as_secs()).unwrap_or(i64::MAX)),
        request: match d.kind {
            RequestKind::Connect => EgressRequest::Connect,
            RequestKind::Http => EgressRequest::Http,
        },
        host: d.host.clone(),
        port: d.port,
        verdict: verdict(&d.outcome),
        detail,
        entry,
        address,
    }
}

/// A destination as the model and the person read it: `host:port`, or
/// the host alone where no port was read (an unreadable request).
fn destination(host: &str, port: u16) -> String {
    if port == 0 {
        host.to_owned()
    } else {
        format!("{host}:{port}")
    }
}

/// Each destination the proxy refused, once, as the call's refusals: a
/// command's or an MCP server's, from the decisions recorded for it.
pub fn refusals(records: &[EgressRecord]) -> Vec<CallRefusal> {
    let mut out: Vec<CallRefusal> = Vec::new();
    for record in records {
        match record.verdict {
            EgressVerdict::Allowed | EgressVerdict::Unreachable => continue,
            EgressVerdict::NotListed
            | EgressVerdict::IpLiteral
            | EgressVerdict::NonPublic
            | EgressVerdict::BadName
            | EgressVerdict::Unresolved
            | EgressVerdict::SniMismatch
            | EgressVerdict::NotTls
            | EgressVerdict::BadRequest => {}
        }
        let target = destination(&record.host, record.port);
        if out
            .iter()
            .any(|r| r.target.as_deref() == Some(target.as_str()))
        {
            continue;
        }
        let reason = format!("GOAT's network proxy refused {target}: {}", record.detail);
        out.push(CallRefusal::new(RefusedBy::Egress, Some(target), reason));
    }
    out
}

/// For the result the model reads: each destination refused, why, and the
/// entry of `setting` that would allow it; empty when nothing was refused.
pub fn refusals_note(served: &Served, setting: &str, client: &str) -> String {
    // In first-seen order, counted; the index keeps a flood of refusals
    // linear.
    let mut lines: Vec<(String, usize)> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for d in served.decisions.iter() {
        let Outcome::Refused(refusal) = &d.outcome else {
            continue;
        };
        let target = destination(&d.host, d.port);
        let fix = match (&d.would_allow, refusal) {
            (Some(entry), Refusal::NonPublic { .. }) => format!(
                "; a listed name reaches such an address only when the address is listed \
                 too: add \"{entry}\" to {setting}"
            ),
            (Some(entry), _) => format!("; to allow it, add \"{entry}\" to {setting}"),
            (None, _) => format!("; no entry of {setting} allows this"),
        };
        let why = match refusal {
            Refusal::NotListed => format!("not listed in {setting}"),
            other => other.to_string(),
        };
        let line = format!("{target}: {why}{fix}");
        match seen.get(&line) {
            Some(&i) => lines[i].1 += 1,
            None => {
                seen.insert(line.clone(), lines.len());
                lines.push((line, 1));
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let more = lines.len().saturating_sub(MAX_REFUSALS_LISTED);
    let listed: Vec<String> = lines
        .iter()
        .take(MAX_REFUSALS_LISTED)
        .map(|(line, n)| {
            if *n > 1 {
                format!("  {line} ({n} times)")
            } else {
                format!("  {line}")
            }
        })
        .collect();
    let mut note = format!(
        "\n[goat: GOAT's network proxy refused what {client} asked for:\n{}",
        listed.join("\n")
    );
    if more > 0 {
        note.push_str(&format!("\n  ... and {more} more"));
    }
    if served.dropped > 0 {
        note.push_str(&format!(
            "\n  ({} more decisions were not kept)",
            served.dropped
        ));
    }
    note.push_str("]\n");
    note
}

/// The network as the approval question shows it.
pub fn describe(network: Network, proxy: Option<&Proxy>, used: Option<Used>) -> String {
    match network {
        Network::Closed => "network closed".to_owned(),
        Network::Open => "NETWORK OPEN".to_owned(),
        Network::Proxied => {
            let list = proxy.map_or_else(|| "nothing".to_owned(), |p| p.list().describe());
            let port_caveat = match used {
                Some(Used::Landlock) => {
                    "; with Landlock only, the proxy's port number is open on every address"
                }
                Some(Used::Namespace) | None => "",
            };
            format!("network only through GOAT's proxy, to {list}{port_caveat}")
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// The sandbox tells the proxy's own answers from an origin's by this
    /// header; the two crates must name the same one.
    #[test]
    fn the_sandbox_knows_the_proxys_answer_header() {
        assert_eq!(
            goat_sandbox::PROXY_ANSWER_HEADER,
            goat_egress::proxy::ANSWER_HEADER
        );
    }

    fn refused(host: &str, port: u16, refusal: Refusal, fix: Option<&str>) -> Decision {
        Decision {
            at: SystemTime::now(),
            kind: RequestKind::Connect,
            host: host.to_owned(),
            port,
            would_allow: fix.map(str::to_owned),
            outcome: Outcome::Refused(refusal),
        }
    }

    #[test]
    fn a_refusal_names_the_host_and_the_entry_that_would_allow_it() {
        let served = Served {
            decisions: vec![
                refused("example.org", 443, Refusal::NotListed, Some("example.org")),
                refused("example.org", 443, Refusal::NotListed, Some("example.org")),
                refused(
                    "registry.test",
                    8080,
                    Refusal::NonPublic {
                        address: "127.0.0.1".parse().unwrap(),
                        class: goat_egress::AddressClass::Loopback,
                    },
                    Some("127.0.0.1:8080"),
                ),
                refused("(unreadable request)", 0, Refusal::NotTls, None),
            ],
            dropped: 0,
        };
        let note = refusals_note(&served, COMMANDS_NETWORK, "this command");
        assert!(
            note.contains(
                "  example.org:443: not listed in commands.network; to allow it, add \
                 \"example.org\" to commands.network (2 times)"
            ),
            "{note}"
        );
        assert!(
            note.contains("registry.test:8080: it resolved to 127.0.0.1, a loopback address"),
            "{note}"
        );
        assert!(
            note.contains("add \"127.0.0.1:8080\" to commands.network"),
            "{note}"
        );
        assert!(
            note.contains("no entry of commands.network allows this"),
            "{note}"
        );
        assert_eq!(
            refusals_note(&Served::default(), COMMANDS_NETWORK, "this command"),
            ""
        );
        let stored = records(&served);
        assert_eq!(stored[2].verdict, EgressVerdict::NonPublic);
        assert_eq!(stored[2].address.as_deref(), Some("127.0.0.1"));
        assert_eq!(stored[2].entry.as_deref(), Some("127.0.0.1:8080"));
    }
}
