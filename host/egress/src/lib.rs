//! GOAT's egress proxy (`goat-egress`): the one way out to the network for
//! a client that may reach only listed destinations (a command with
//! `commands.network = [...]`, ADR-0082; an MCP server, later, the same
//! way).
//!
//! The key decision: the client is given no network but a TCP connection
//! to this proxy (its containment sees to that), and the proxy decides
//! each destination itself. It reads the request (`CONNECT host:port`, or
//! a plain HTTP request for an absolute `http://` URI), reads the host
//! strictly ([`host`]), checks it against the [`Allowlist`], looks the name
//! up itself, refuses an answer that leads to this machine or a private
//! network unless that address is listed too ([`decide`], [`addr`]), and
//! connects to the address it checked. A tunnel's TLS handshake must name
//! the host the CONNECT named ([`sni`]). Every decision is kept as data for
//! the caller to record against the call ([`Decision`]).
//!
//! The pure parts (hosts, the list, the decision, the ClientHello, the
//! request head) are synchronous and tested as tables; [`proxy`] is the
//! one part with I/O, on a small Tokio runtime of its own.

pub mod addr;
pub mod decide;
pub mod host;
pub mod http;
pub mod list;
pub mod proxy;
pub mod sni;

pub use addr::AddressClass;
pub use decide::Refusal;
pub use host::{Host, NameProblem};
pub use list::{Allowlist, Entry, EntryError, NAMED_SETS, NamedSet};
pub use proxy::{
    ClientKey, Decision, Outcome, Proxy, RequestKind, Resolve, Served, Serving, SystemResolver,
};
