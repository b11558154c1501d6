//! goat-shepherd end to end: approvals through the router, and the
//! Shepherd's ADR-0065 recovery through the real router, gate, sandbox and
//! store.

#![expect(clippy::unwrap_used, reason = "tests")]

mod approvals;
mod caps;
mod context;
mod direct;
mod live_engine;
mod parse_error;
mod prefill;
mod real_engine;
pub(crate) mod shepherd;
