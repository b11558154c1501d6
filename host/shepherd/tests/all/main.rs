//! goat-shepherd end to end: the permission gate's policy as a table of
//! (rules, call) -> decision and its database on disk, including every way
//! it can be unusable (each must deny); and the Shepherd's ADR-0065
//! recovery through the real router, gate, sandbox and store.

#![expect(clippy::unwrap_used, reason = "tests")]

mod approvals;
mod gate_db;
mod gate_table;
mod live_engine;
mod shepherd;
