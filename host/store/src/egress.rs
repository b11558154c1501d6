//! What a call's network proxy decided (ADR-0082): every destination a
//! command asked GOAT's egress proxy for, allowed or refused and why,
//! kept against the call.

use rusqlite::params;

use crate::{Store, StoreError};

/// Which request the proxy was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressRequest {
    /// `CONNECT host:port`: a tunnel (https).
    Connect,
    /// A plain HTTP request, forwarded.
    Http,
}

/// What the proxy decided. Each of `goat-egress`'s outcomes has one, so a
/// new refusal cannot be stored unnamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressVerdict {
    /// Listed, and connected to.
    Allowed,
    /// Listed, but no address accepted the connection.
    Unreachable,
    /// No entry names the host on that port.
    NotListed,
    /// An IP address no entry names.
    IpLiteral,
    /// A listed name that resolved to an address that is not public.
    NonPublic,
    /// A host no name can be (a NUL byte, a numeric form, ...).
    BadName,
    /// The name did not resolve.
    Unresolved,
    /// The tunnel's TLS handshake named another host.
    SniMismatch,
    /// A tunnel to a name that was not TLS.
    NotTls,
    /// A request the proxy does not serve.
    BadRequest,
}

impl EgressVerdict {
    /// Whether the connection was refused.
    pub fn refused(self) -> bool {
        !matches!(self, Self::Allowed | Self::Unreachable)
    }
}

/// One decision, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EgressRecord {
    /// When (unix seconds).
    pub at: i64,
    /// Which request.
    pub request: EgressRequest,
    /// The host as the proxy read it.
    pub host: String,
    /// The port (0 when the request named none the proxy could read).
    pub port: u16,
    /// What was decided.
    pub verdict: EgressVerdict,
    /// Why, in words.
    pub detail: String,
    /// The list entry that allowed it, or the one that would.
    pub entry: Option<String>,
    /// The address connected to, or refused.
    pub address: Option<String>,
}

/// A stored decision with the call it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EgressRow {
    /// The call's row.
    pub call_row: i64,
    /// The decision.
    pub record: EgressRecord,
}

impl Store {
    /// Records a call's proxy decisions, in one transaction.
    pub fn record_egress(
        &mut self,
        call_row: i64,
        records: &[EgressRecord],
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        for r in records {
            tx.prepare_cached(
                "INSERT INTO egress_decisions
                   (call_row, at, request, host, port, verdict, detail, entry, address)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                call_row, r.at, r.request, r.host, r.port, r.verdict, r.detail, r.entry, r.address
            ])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every proxy decision of a session's calls, in order.
    pub fn egress(&self, session_id: &str) -> Result<Vec<EgressRow>, StoreError> {
        self.session(session_id)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.call_row, e.at, e.request, e.host, e.port, e.verdict, e.detail, e.entry,
                    e.address
             FROM egress_decisions e
             JOIN tool_calls c ON e.call_row = c.id
             JOIN rounds r ON c.round_id = r.id
             JOIN turns t ON r.turn_id = t.id
             WHERE t.session_id = ?1 ORDER BY e.id",
        )?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok(EgressRow {
                    call_row: r.get(0)?,
                    record: EgressRecord {
                        at: r.get(1)?,
                        request: r.get(2)?,
                        host: r.get(3)?,
                        port: r.get(4)?,
                        verdict: r.get(5)?,
                        detail: r.get(6)?,
                        entry: r.get(7)?,
                        address: r.get(8)?,
                    },
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}
