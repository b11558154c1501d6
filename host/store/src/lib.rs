//! GOAT's store: sessions, turns, rounds, tool calls and recovery events in
//! SQLite, outside any workspace.
//!
//! The key decision: the store is the record the next prompt is rebuilt
//! from, so it must never say something happened that did not. Every
//! logical step is one `BEGIN IMMEDIATE` transaction; a tool call is
//! written as pending before it runs, so a session resumed after a crash
//! can give each pending call a result saying it was interrupted (and the
//! history sent to the engine stays valid); a round that failed, such as a
//! malformed response ADR-0065 recovers from, is kept for the record and
//! left out of every later prompt. Migrations are versioned
//! (`PRAGMA user_version`) and each applies in one transaction.
//!
//! rusqlite is blocking: async callers run these methods on a blocking
//! thread. This crate knows nothing of engines or tools beyond names and
//! text.
//!
//! The modules, by job: `schema` (the migrations, and opening the file
//! through `goat_state::sqlite`, which checks it is a GOAT store), `store`
//! (the [`Store`], where it lives, its one way to write), `records`
//! (sessions, turns, rounds, tool calls, recovery events), `history` (what
//! the next prompt is rebuilt from), `summaries` (the model's summaries of
//! older turns, which later prompts carry instead of them), `stats` (counts
//! per model and engine), `changes` (checkpoints of the files tools
//! changed, for undo and `sessions diff`), `egress` (what a command's network
//! proxy allowed and refused, ADR-0082) and `lock` (one process drives a session at a time: an OS
//! advisory lock per session, which the kernel releases when the process
//! ends, however it ends).

mod attempts;
mod changes;
mod egress;
mod error;
mod history;
mod lock;
mod records;
mod remove;
mod schema;
mod stats;
mod status;
mod store;
mod summaries;
mod turn_hooks;

pub use attempts::{AttemptRecord, AttemptRun, Landing};
pub use changes::{ChangeRecord, EntryKind, FileChange};
pub use egress::{EgressRecord, EgressRequest, EgressRow, EgressVerdict};
pub use error::StoreError;
/// Re-exported from `goat_state`, where every host-state directory is made.
pub use goat_state::fs::create_private_dir;
pub use history::{HistoryEntry, HistoryTurn, INTERRUPTED_RESULT, UNDONE_NOTE, dropped_unrun_note};
pub use lock::SessionLock;
pub use records::{
    CallOutcome, CallRecord, HookRan, NewCall, Recovery, RoundOk, RoundRecord, SessionInfo,
    TurnRecord,
};
pub use schema::{BUSY_TIMEOUT, SCHEMA_VERSION};
pub use stats::{MARKUP_FAILURE_PREFIX, SessionTokens, Stats};
pub use status::{
    CallDecision, CallErrorKind, CallStatus, ChangesStored, MarkupChannel, Refusal, RefusedBy,
    RoundFailure, RoundStatus, TurnStatus,
};
pub use store::Store;
pub use summaries::{CompactReason, NewSummary, Summary};
pub use turn_hooks::TurnHooks;
