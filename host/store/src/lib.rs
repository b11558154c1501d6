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

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

/// How long a write waits for another GOAT process holding the database
/// before failing: long enough to ride out a concurrent commit, short
/// enough that a stuck peer is reported rather than hanging a turn.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema this GOAT writes. A database with a higher version was made
/// by a newer GOAT and is refused rather than misread.
pub const SCHEMA_VERSION: i64 = 1;

/// How every round that failed because the model wrote a tool call as
/// text begins its failure text, recovered or not; `stats` counts them by
/// it.
pub const MARKUP_FAILURE_PREFIX: &str = "unexecuted tool-call markup";

/// What a resumed session's interrupted calls say to the model.
pub const INTERRUPTED_RESULT: &str = "This tool call was interrupted: GOAT stopped while it was \
     pending, so it may not have run, or may have run only in part. Check the workspace before \
     repeating it.";

const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        engine_url TEXT NOT NULL,
        model TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        prompt TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
        error TEXT,
        recovery_used INTEGER NOT NULL DEFAULT 0,
        started_at INTEGER NOT NULL,
        ended_at INTEGER
    );
    CREATE TABLE rounds (
        id INTEGER PRIMARY KEY,
        turn_id INTEGER NOT NULL REFERENCES turns(id),
        status TEXT NOT NULL CHECK (status IN ('streaming', 'ok', 'failed', 'cancelled')),
        content TEXT NOT NULL DEFAULT '',
        reasoning TEXT NOT NULL DEFAULT '',
        finish_reason TEXT,
        failure TEXT,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        started_at INTEGER NOT NULL,
        ended_at INTEGER
    );
    CREATE TABLE tool_calls (
        id INTEGER PRIMARY KEY,
        round_id INTEGER NOT NULL REFERENCES rounds(id),
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'error', 'denied', 'interrupted')),
        decision TEXT,
        decision_reason TEXT,
        result TEXT,
        error_kind TEXT,
        started_at INTEGER,
        ended_at INTEGER,
        duration_ms INTEGER
    );
    CREATE TABLE recovery_events (
        id INTEGER PRIMARY KEY,
        turn_id INTEGER NOT NULL REFERENCES turns(id),
        round_id INTEGER NOT NULL REFERENCES rounds(id),
        tool TEXT NOT NULL,
        markers TEXT NOT NULL,
        span_start INTEGER,
        span_end INTEGER,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX turns_by_session ON turns(session_id, id);
    CREATE INDEX rounds_by_turn ON rounds(turn_id, id);
    CREATE INDEX calls_by_round ON tool_calls(round_id, id);",
];

/// Why the store failed. Every variant ends the turn: the record must not
/// silently diverge from what happened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file or its directory cannot be used.
    #[error("cannot open the GOAT store at {path}: {reason}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The database was written by a newer GOAT.
    #[error(
        "the GOAT store at {path} has schema version {found}, newer than this GOAT's {supported}; upgrade GOAT or use another --db"
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// Ours.
        supported: i64,
    },
    /// The store would live inside the workspace, where tools can write.
    #[error(
        "the GOAT store {db} is inside the workspace {workspace}; tools could reach it. Use --db or GOAT_DB to put it elsewhere"
    )]
    InsideWorkspace {
        /// The store file.
        db: PathBuf,
        /// The workspace.
        workspace: PathBuf,
    },
    /// No such session.
    #[error("no session '{0}' in the store")]
    NoSession(String),
    /// SQLite failed.
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    /// Still going (or GOAT stopped mid-turn).
    Running,
    /// The model answered.
    Completed,
    /// An error ended it.
    Failed,
    /// The person cancelled it.
    Cancelled,
}

/// How a round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundStatus {
    /// The response is still streaming (or GOAT stopped meanwhile).
    Streaming,
    /// A usable response; it is part of later prompts.
    Ok,
    /// Unusable (an engine error, or a malformed response ADR-0065 recovers
    /// from); kept for the record, left out of later prompts.
    Failed,
    /// Cancelled while streaming; left out of later prompts.
    Cancelled,
}

/// Where a tool call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallStatus {
    /// Recorded, not finished.
    Pending,
    /// It ran and returned a result.
    Ok,
    /// It failed (invalid arguments, unknown tool, tool error, sandbox stop).
    Error,
    /// The permission gate denied it.
    Denied,
    /// GOAT stopped while it was pending.
    Interrupted,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            /// The name stored in the database and shown to people.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),* }
            }

            fn parse(s: &str) -> Result<Self, rusqlite::Error> {
                match s {
                    $($text => Ok(Self::$variant),)*
                    other => Err(rusqlite::Error::InvalidColumnType(
                        0,
                        format!("unknown {} '{other}'", stringify!($ty)),
                        rusqlite::types::Type::Text,
                    )),
                }
            }
        }
    };
}

text_enum!(TurnStatus { Running => "running", Completed => "completed", Failed => "failed", Cancelled => "cancelled" });
text_enum!(RoundStatus { Streaming => "streaming", Ok => "ok", Failed => "failed", Cancelled => "cancelled" });
text_enum!(CallStatus { Pending => "pending", Ok => "ok", Error => "error", Denied => "denied", Interrupted => "interrupted" });

/// A session as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id.
    pub id: String,
    /// The workspace it works in.
    pub workspace: String,
    /// The engine it talks to.
    pub engine_url: String,
    /// The model.
    pub model: String,
    /// When it began (unix seconds).
    pub created_at: i64,
    /// How many turns it has.
    pub turns: i64,
}

/// A structured call in a finished round, as the model made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCall {
    /// The engine's (or GOAT's) call id.
    pub call_id: String,
    /// The tool name as the model wrote it.
    pub tool: String,
    /// The raw arguments text.
    pub arguments: String,
}

/// A finished, usable response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundOk {
    /// What the model said.
    pub content: String,
    /// Its separate reasoning.
    pub reasoning: String,
    /// Why it stopped.
    pub finish_reason: Option<String>,
    /// Token counts.
    pub prompt_tokens: Option<u64>,
    /// Token counts.
    pub completion_tokens: Option<u64>,
    /// Its structured calls, stored as pending.
    pub calls: Vec<NewCall>,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOutcome {
    /// Ok, Error, Denied.
    pub status: CallStatus,
    /// What the model is shown.
    pub result: String,
    /// A machine-readable kind for errors (`not-found`, `timeout`, ...).
    pub error_kind: Option<String>,
    /// The gate's decision (`allow`, `deny`, `ask-allowed`, ...), if it got that far.
    pub decision: Option<String>,
    /// Why the gate decided so.
    pub decision_reason: Option<String>,
    /// How long it ran.
    pub duration: Duration,
}

/// What ADR-0065 recovery recorded about a malformed response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The offered tool the markup named.
    pub tool: String,
    /// The envelope markers seen, e.g. `</tool_call>`.
    pub markers: Vec<String>,
    /// Where in the content, byte offsets.
    pub span: Option<(usize, usize)>,
}

/// One entry of the history the next prompt is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryEntry {
    /// A person's request.
    User(String),
    /// A usable answer and the calls it made.
    Assistant {
        /// What it said.
        content: String,
        /// Its calls.
        calls: Vec<NewCall>,
    },
    /// The result of one call.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The text the model sees.
        content: String,
    },
}

/// Counts for one model on one engine, to make persistent engine or
/// template mismatches visible.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// The model name.
    pub model: String,
    /// The engine URL.
    pub engine_url: String,
    /// Sessions.
    pub sessions: i64,
    /// Turns.
    pub turns: i64,
    /// Rounds, failed ones included.
    pub rounds: i64,
    /// Structured tool calls.
    pub tool_calls: i64,
    /// Responses that wrote a tool call as text (recovered or not).
    pub markup_responses: i64,
    /// Turns that used their one recovery.
    pub recoveries: i64,
    /// Of those, turns that then completed: one recovery fixed it.
    pub recovered: i64,
    /// Turns where the model wrote a tool call as text twice.
    pub failed_twice: i64,
}

/// One stored tool call, for showing a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// Row id.
    pub id: i64,
    /// The call as made.
    pub call: NewCall,
    /// Where it stands.
    pub status: CallStatus,
    /// The gate's decision.
    pub decision: Option<String>,
    /// Why.
    pub decision_reason: Option<String>,
    /// What the model was shown.
    pub result: Option<String>,
    /// Error kind.
    pub error_kind: Option<String>,
    /// How long it ran.
    pub duration_ms: Option<i64>,
}

/// One stored round, failed ones included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRecord {
    /// Row id.
    pub id: i64,
    /// How it ended.
    pub status: RoundStatus,
    /// What the model said.
    pub content: String,
    /// Why it stopped.
    pub finish_reason: Option<String>,
    /// Why it failed.
    pub failure: Option<String>,
    /// Its calls.
    pub calls: Vec<CallRecord>,
}

/// One stored turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRecord {
    /// Row id.
    pub id: i64,
    /// The request.
    pub prompt: String,
    /// How it ended.
    pub status: TurnStatus,
    /// The error that ended it.
    pub error: Option<String>,
    /// Whether ADR-0065 recovery was used.
    pub recovery_used: bool,
    /// Its rounds.
    pub rounds: Vec<RoundRecord>,
}

/// The store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A new session id: 16 hex digits from the clock and process, unique
/// enough for one user's sessions and readable on a command line.
fn new_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

impl Store {
    /// The default location: `$XDG_DATA_HOME/goat/goat.db`, else
    /// `~/.local/share/goat/goat.db`.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/share"))
            })?;
        Some(base.join("goat").join("goat.db"))
    }

    /// Refuses a store path inside `workspace`.
    ///
    /// # Security
    ///
    /// Tools can write anywhere in the workspace; a store there could be
    /// rewritten by a tool, and with it the history the model is shown.
    pub fn ensure_outside(db: &Path, workspace: &Path) -> Result<(), StoreError> {
        let canon = |p: &Path| -> PathBuf {
            // The file may not exist yet: resolve its directory.
            match (p.parent(), p.file_name()) {
                (Some(dir), Some(name)) => {
                    let dir = if dir.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        dir
                    };
                    dir.canonicalize()
                        .map(|d| d.join(name))
                        .unwrap_or_else(|_| p.to_owned())
                }
                _ => p.to_owned(),
            }
        };
        let workspace = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_owned());
        let db = canon(db);
        if db.starts_with(&workspace) {
            return Err(StoreError::InsideWorkspace { db, workspace });
        }
        Ok(())
    }

    /// Opens (creating, with a private directory) the store at `path` and
    /// brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_owned(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| open_err(e.to_string()))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| open_err(e.to_string()))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(|e| open_err(format!("not a usable SQLite database ({e})")))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_err(format!(
                "cannot enable WAL (journal mode is {mode})"
            )));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| open_err(e.to_string()))?;
        let mut store = Self {
            conn,
            path: path.to_owned(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS
            .iter()
            .enumerate()
            .skip(usize::try_from(version).unwrap_or(0))
        {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Re-check inside the lock: another GOAT may have migrated.
            let current: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if current > i64::try_from(i).unwrap_or(i64::MAX) {
                continue;
            }
            tx.execute_batch(sql)?;
            tx.pragma_update(
                None,
                "user_version",
                i64::try_from(i + 1).unwrap_or(i64::MAX),
            )?;
            tx.commit()?;
        }
        Ok(())
    }

    fn write(&mut self) -> Result<Transaction<'_>, StoreError> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// Starts a session; returns its id.
    pub fn create_session(
        &mut self,
        workspace: &Path,
        engine_url: &str,
        model: &str,
    ) -> Result<String, StoreError> {
        let id = new_session_id();
        let tx = self.write()?;
        tx.execute(
            "INSERT INTO sessions (id, workspace, engine_url, model, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, workspace.to_string_lossy(), engine_url, model, now()],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// A session by id.
    pub fn session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        self.conn
            .query_row(
                "SELECT s.id, s.workspace, s.engine_url, s.model, s.created_at,
                        (SELECT count(*) FROM turns t WHERE t.session_id = s.id)
                 FROM sessions s WHERE s.id = ?1",
                [id],
                session_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::NoSession(id.to_owned()))
    }

    /// All sessions, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT s.id, s.workspace, s.engine_url, s.model, s.created_at,
                    (SELECT count(*) FROM turns t WHERE t.session_id = s.id)
             FROM sessions s ORDER BY s.created_at DESC, s.rowid DESC",
        )?;
        let rows = stmt
            .query_map([], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Starts a turn for `prompt`.
    pub fn start_turn(&mut self, session_id: &str, prompt: &str) -> Result<i64, StoreError> {
        self.session(session_id)?;
        let tx = self.write()?;
        tx.execute(
            "INSERT INTO turns (session_id, prompt, status, started_at) VALUES (?1, ?2, 'running', ?3)",
            params![session_id, prompt, now()],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Ends a turn.
    pub fn finish_turn(
        &mut self,
        turn_id: i64,
        status: TurnStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute(
            "UPDATE turns SET status = ?2, error = ?3, ended_at = ?4 WHERE id = ?1",
            params![turn_id, status.as_str(), error, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Starts a round (its response streaming).
    pub fn start_round(&mut self, turn_id: i64) -> Result<i64, StoreError> {
        let tx = self.write()?;
        tx.execute(
            "INSERT INTO rounds (turn_id, status, started_at) VALUES (?1, 'streaming', ?2)",
            params![turn_id, now()],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Records a usable response and its calls, as pending, in one
    /// transaction. Returns the calls' row ids in order.
    pub fn finish_round_ok(&mut self, round_id: i64, ok: &RoundOk) -> Result<Vec<i64>, StoreError> {
        let tx = self.write()?;
        tx.execute(
            "UPDATE rounds SET status = 'ok', content = ?2, reasoning = ?3, finish_reason = ?4,
                    prompt_tokens = ?5, completion_tokens = ?6, ended_at = ?7 WHERE id = ?1",
            params![
                round_id,
                ok.content,
                ok.reasoning,
                ok.finish_reason,
                ok.prompt_tokens.and_then(|n| i64::try_from(n).ok()),
                ok.completion_tokens.and_then(|n| i64::try_from(n).ok()),
                now()
            ],
        )?;
        let mut ids = Vec::with_capacity(ok.calls.len());
        for call in &ok.calls {
            tx.execute(
                "INSERT INTO tool_calls (round_id, call_id, tool, arguments, status) VALUES (?1, ?2, ?3, ?4, 'pending')",
                params![round_id, call.call_id, call.tool, call.arguments],
            )?;
            ids.push(tx.last_insert_rowid());
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Records a round that failed (engine error, cancelled, truncated):
    /// kept for the record, never sent in a prompt again.
    pub fn finish_round_failed(
        &mut self,
        round_id: i64,
        status: RoundStatus,
        content: &str,
        failure: &str,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute(
            "UPDATE rounds SET status = ?2, content = ?3, failure = ?4, ended_at = ?5 WHERE id = ?1",
            params![round_id, status.as_str(), content, failure, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// ADR-0065: records a malformed response as failed, with what the
    /// detector saw, and marks the turn's one recovery as used, all in one
    /// transaction. If this fails, recovery must stop.
    pub fn record_recovery(
        &mut self,
        round_id: i64,
        content: &str,
        recovery: &Recovery,
    ) -> Result<(), StoreError> {
        let tx = self.write()?;
        let turn_id: i64 = tx.query_row(
            "SELECT turn_id FROM rounds WHERE id = ?1",
            [round_id],
            |r| r.get(0),
        )?;
        tx.execute(
            "UPDATE rounds SET status = 'failed', content = ?2,
                    failure = ?4, ended_at = ?3
             WHERE id = ?1",
            params![
                round_id,
                content,
                now(),
                format!("{MARKUP_FAILURE_PREFIX}: no structured call was made; asked once for one")
            ],
        )?;
        tx.execute(
            "INSERT INTO recovery_events (turn_id, round_id, tool, markers, span_start, span_end, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                turn_id,
                round_id,
                recovery.tool,
                recovery.markers.join(" "),
                recovery.span.and_then(|s| i64::try_from(s.0).ok()),
                recovery.span.and_then(|s| i64::try_from(s.1).ok()),
                now()
            ],
        )?;
        tx.execute(
            "UPDATE turns SET recovery_used = 1 WHERE id = ?1",
            [turn_id],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Marks a pending call as started (the gate's decision made).
    pub fn start_call(&mut self, call_row: i64) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute(
            "UPDATE tool_calls SET started_at = ?2 WHERE id = ?1",
            params![call_row, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records how a call ended.
    pub fn finish_call(&mut self, call_row: i64, outcome: &CallOutcome) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute(
            "UPDATE tool_calls SET status = ?2, result = ?3, error_kind = ?4, decision = ?5,
                    decision_reason = ?6, duration_ms = ?7, ended_at = ?8 WHERE id = ?1",
            params![
                call_row,
                outcome.status.as_str(),
                outcome.result,
                outcome.error_kind,
                outcome.decision,
                outcome.decision_reason,
                i64::try_from(outcome.duration.as_millis()).unwrap_or(i64::MAX),
                now()
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// For a session resumed after a crash: every pending call gets a
    /// result saying it was interrupted; rounds left streaming and turns
    /// left running are marked failed. One transaction. Returns how many
    /// calls were interrupted.
    pub fn interrupt_pending(&mut self, session_id: &str) -> Result<usize, StoreError> {
        let tx = self.write()?;
        let calls = tx.execute(
            "UPDATE tool_calls SET status = 'interrupted', result = ?2, error_kind = 'interrupted', ended_at = ?3
             WHERE status = 'pending' AND round_id IN
               (SELECT r.id FROM rounds r JOIN turns t ON r.turn_id = t.id WHERE t.session_id = ?1)",
            params![session_id, INTERRUPTED_RESULT, now()],
        )?;
        tx.execute(
            "UPDATE rounds SET status = 'failed', failure = 'interrupted: GOAT stopped while it was streaming', ended_at = ?2
             WHERE status = 'streaming' AND turn_id IN (SELECT id FROM turns WHERE session_id = ?1)",
            params![session_id, now()],
        )?;
        tx.execute(
            "UPDATE turns SET status = 'failed', error = 'interrupted: GOAT stopped during this turn', ended_at = ?2
             WHERE status = 'running' AND session_id = ?1",
            params![session_id, now()],
        )?;
        tx.commit()?;
        Ok(calls)
    }

    /// The history the next prompt is built from: each turn's request,
    /// then its usable rounds and their calls' results, in order. Failed
    /// and cancelled rounds are left out; a call still pending is given the
    /// interrupted result, so every call in the history has an answer.
    pub fn history(&self, session_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        self.session(session_id)?;
        let mut out = Vec::new();
        let mut turns = self
            .conn
            .prepare("SELECT id, prompt FROM turns WHERE session_id = ?1 ORDER BY id")?;
        let mut rounds = self.conn.prepare(
            "SELECT id, content FROM rounds WHERE turn_id = ?1 AND status = 'ok' ORDER BY id",
        )?;
        let mut calls = self.conn.prepare(
            "SELECT call_id, tool, arguments, status, result FROM tool_calls WHERE round_id = ?1 ORDER BY id",
        )?;
        let turn_rows = turns
            .query_map([session_id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for (turn_id, prompt) in turn_rows {
            out.push(HistoryEntry::User(prompt));
            let round_rows = rounds
                .query_map([turn_id], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            for (round_id, content) in round_rows {
                let call_rows = calls
                    .query_map([round_id], |r| {
                        Ok((
                            NewCall {
                                call_id: r.get(0)?,
                                tool: r.get(1)?,
                                arguments: r.get(2)?,
                            },
                            CallStatus::parse(&r.get::<_, String>(3)?)?,
                            r.get::<_, Option<String>>(4)?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                out.push(HistoryEntry::Assistant {
                    content,
                    calls: call_rows.iter().map(|(c, _, _)| c.clone()).collect(),
                });
                for (call, status, result) in call_rows {
                    let content = match (status, result) {
                        (CallStatus::Pending, _) | (_, None) => INTERRUPTED_RESULT.to_owned(),
                        (_, Some(text)) => text,
                    };
                    out.push(HistoryEntry::ToolResult {
                        call_id: call.call_id,
                        content,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Counts per model and engine, most used first.
    pub fn stats(&self) -> Result<Vec<Stats>, StoreError> {
        let like = format!("{MARKUP_FAILURE_PREFIX}%");
        let mut stmt = self.conn.prepare(
            "WITH markup AS (
                 SELECT r.turn_id, count(*) AS n FROM rounds r
                 WHERE r.status = 'failed' AND r.failure LIKE ?1 GROUP BY r.turn_id
             )
             SELECT s.model, s.engine_url,
                    count(DISTINCT s.id),
                    count(DISTINCT t.id),
                    (SELECT count(*) FROM rounds r JOIN turns t2 ON r.turn_id = t2.id
                       JOIN sessions s2 ON t2.session_id = s2.id
                       WHERE s2.model = s.model AND s2.engine_url = s.engine_url),
                    (SELECT count(*) FROM tool_calls c JOIN rounds r ON c.round_id = r.id
                       JOIN turns t2 ON r.turn_id = t2.id JOIN sessions s2 ON t2.session_id = s2.id
                       WHERE s2.model = s.model AND s2.engine_url = s.engine_url),
                    coalesce(sum(m.n), 0),
                    count(DISTINCT CASE WHEN t.recovery_used = 1 THEN t.id END),
                    count(DISTINCT CASE WHEN t.recovery_used = 1 AND t.status = 'completed' THEN t.id END),
                    count(DISTINCT CASE WHEN m.n >= 2 THEN t.id END)
             FROM sessions s
             LEFT JOIN turns t ON t.session_id = s.id
             LEFT JOIN markup m ON m.turn_id = t.id
             GROUP BY s.model, s.engine_url
             ORDER BY count(DISTINCT t.id) DESC, s.model",
        )?;
        let rows = stmt
            .query_map([like], |r| {
                Ok(Stats {
                    model: r.get(0)?,
                    engine_url: r.get(1)?,
                    sessions: r.get(2)?,
                    turns: r.get(3)?,
                    rounds: r.get(4)?,
                    tool_calls: r.get(5)?,
                    markup_responses: r.get(6)?,
                    recoveries: r.get(7)?,
                    recovered: r.get(8)?,
                    failed_twice: r.get(9)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Everything stored about a session's turns, failed rounds included.
    pub fn turns(&self, session_id: &str) -> Result<Vec<TurnRecord>, StoreError> {
        self.session(session_id)?;
        let mut turns = self.conn.prepare(
            "SELECT id, prompt, status, error, recovery_used FROM turns WHERE session_id = ?1 ORDER BY id",
        )?;
        let mut rounds = self.conn.prepare(
            "SELECT id, status, content, finish_reason, failure FROM rounds WHERE turn_id = ?1 ORDER BY id",
        )?;
        let mut calls = self.conn.prepare(
            "SELECT id, call_id, tool, arguments, status, decision, decision_reason, result, error_kind, duration_ms
             FROM tool_calls WHERE round_id = ?1 ORDER BY id",
        )?;
        let mut out = turns
            .query_map([session_id], |r| {
                Ok(TurnRecord {
                    id: r.get(0)?,
                    prompt: r.get(1)?,
                    status: TurnStatus::parse(&r.get::<_, String>(2)?)?,
                    error: r.get(3)?,
                    recovery_used: r.get::<_, i64>(4)? != 0,
                    rounds: Vec::new(),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for turn in &mut out {
            turn.rounds = rounds
                .query_map([turn.id], |r| {
                    Ok(RoundRecord {
                        id: r.get(0)?,
                        status: RoundStatus::parse(&r.get::<_, String>(1)?)?,
                        content: r.get(2)?,
                        finish_reason: r.get(3)?,
                        failure: r.get(4)?,
                        calls: Vec::new(),
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            for round in &mut turn.rounds {
                round.calls = calls
                    .query_map([round.id], |r| {
                        Ok(CallRecord {
                            id: r.get(0)?,
                            call: NewCall {
                                call_id: r.get(1)?,
                                tool: r.get(2)?,
                                arguments: r.get(3)?,
                            },
                            status: CallStatus::parse(&r.get::<_, String>(4)?)?,
                            decision: r.get(5)?,
                            decision_reason: r.get(6)?,
                            result: r.get(7)?,
                            error_kind: r.get(8)?,
                            duration_ms: r.get(9)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
            }
        }
        Ok(out)
    }
}

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: r.get(0)?,
        workspace: r.get(1)?,
        engine_url: r.get(2)?,
        model: r.get(3)?,
        created_at: r.get(4)?,
        turns: r.get(5)?,
    })
}

/// Creates `dir` (and its parents) so only its owner can enter it: the
/// place for host state such as the store and the permission database.
#[cfg(unix)]
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// See the unix version.
#[cfg(not(unix))]
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}
