//! goat-gate end to end: the policy as a table of (rules, call) ->
//! decision, and the permission database on disk, including every way it
//! can be unusable (each must deny).

#![expect(clippy::unwrap_used, reason = "tests")]

mod db;
mod handle;
mod table;
