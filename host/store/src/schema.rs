//! The store's schema, its migrations, and how the file is opened.
//!
//! The file is opened, identified and migrated by `goat_state::sqlite`, as
//! every GOAT database is: its `PRAGMA application_id` marks it as a GOAT
//! store, its schema is versioned with `PRAGMA user_version`, and each
//! migration applies in one `BEGIN IMMEDIATE` transaction.

use std::path::Path;
use std::time::Duration;

use goat_state::sqlite::{self, DbError, DbSpec, Journal, Migration};
use rusqlite::Connection;

use crate::StoreError;

/// How long a write waits for another GOAT process holding the database
/// before failing: long enough to ride out a concurrent commit, short
/// enough that a stuck peer is reported rather than hanging a turn.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema this GOAT writes. A database with a higher version was made
/// by a newer GOAT and is refused rather than misread.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only:
/// a shipped migration is never edited.
const MIGRATIONS: &[Migration] = &[
    // 1: the first schema.
    Migration::sql(
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
    ),
    // 2: why a round failed, as a kind a program can count (`stats` used to
    // match the failure text). Rounds stored before are classified by what
    // this GOAT wrote for each kind: markup failures by their text's fixed
    // beginning, interrupted rounds by theirs, cancelled ones by status;
    // every other failed round was the engine's.
    Migration::sql(
        "ALTER TABLE rounds ADD COLUMN failure_kind TEXT
         CHECK (failure_kind IN ('engine', 'markup', 'cancelled', 'interrupted'));
    UPDATE rounds SET failure_kind = 'markup'
        WHERE status = 'failed' AND failure LIKE 'unexecuted tool-call markup%';
    UPDATE rounds SET failure_kind = 'interrupted'
        WHERE status = 'failed' AND failure_kind IS NULL AND failure LIKE 'interrupted: GOAT stopped%';
    UPDATE rounds SET failure_kind = 'cancelled' WHERE status = 'cancelled';
    UPDATE rounds SET failure_kind = 'engine' WHERE status = 'failed' AND failure_kind IS NULL;",
    ),
    // 3: which channel held a markup round's call (issue 12): the content,
    // or the reasoning channel when the engine's reasoning parser kept the
    // call there. On the round, not on `recovery_events`, because a second
    // malformed response in a turn is a markup round with no recovery event
    // and `stats` counts rounds. Every markup round stored before was found
    // in the content: that was the only channel GOAT read.
    Migration::sql(
        "ALTER TABLE rounds ADD COLUMN markup_channel TEXT
         CHECK (markup_channel IN ('content', 'reasoning'));
    UPDATE rounds SET markup_channel = 'content' WHERE failure_kind = 'markup';",
    ),
    // 4: a command's exit code (run_command, ADR-0070); NULL for every
    // other tool, for a command killed by a signal or its timeout, and for
    // calls stored before.
    Migration::sql("ALTER TABLE tool_calls ADD COLUMN exit_code INTEGER;"),
    // 5: checkpoints (issue 15, ADR-0073): what each file a Pen tool
    // changed held before the call (`before` NULL: it did not exist; its
    // permission bits in `before_mode`) and
    // after it (`after_sha256` NULL: it does not exist; `after` the bytes
    // when within the checkpoint cap, for `sessions diff`), and when `goat
    // undo` put it back. Written with the call's outcome, in its
    // transaction; a call that failed has none.
    Migration::sql(
        "CREATE TABLE file_changes (
        id INTEGER PRIMARY KEY,
        call_row INTEGER NOT NULL REFERENCES tool_calls(id),
        path TEXT NOT NULL,
        before BLOB,
        before_mode INTEGER,
        after_sha256 TEXT,
        after BLOB,
        undone_at INTEGER
    );
    CREATE INDEX file_changes_by_call ON file_changes(call_row, id);",
    ),
    // 6: summaries the model wrote of a session's older turns (issue 15,
    // ADR-0074). Later prompts carry the newest summary in place of the
    // turns up to `through_turn_id`; those turns stay in the store as they
    // were, so nothing is lost and `sessions show` still shows them.
    Migration::sql(
        "CREATE TABLE summaries (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        through_turn_id INTEGER NOT NULL REFERENCES turns(id),
        content TEXT NOT NULL,
        reason TEXT NOT NULL CHECK (reason IN ('window', 'overflow', 'asked')),
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX summaries_by_session ON summaries(session_id, id);",
    ),
    // 7: checkpoints of commands (issue 21, ADR-0077): what kind of entry
    // each path held before and after ('file', 'link' with its target as
    // the bytes, 'dir' with its bits), the sha256 of a file whose bytes
    // were too large to keep (`before` NULL, `before_sha256` set: it
    // existed, undo cannot bring it back), a directory's bits after, and
    // whether the change has landed: a command's set is written with
    // `landed = 0` before it lands and marked with its outcome, so a crash
    // in between leaves rows `goat sessions show` checks against the disk.
    Migration::sql(
        "ALTER TABLE file_changes ADD COLUMN before_kind TEXT NOT NULL DEFAULT 'file'
         CHECK (before_kind IN ('file', 'link', 'dir'));
    ALTER TABLE file_changes ADD COLUMN after_kind TEXT NOT NULL DEFAULT 'file'
         CHECK (after_kind IN ('file', 'link', 'dir'));
    ALTER TABLE file_changes ADD COLUMN before_sha256 TEXT;
    ALTER TABLE file_changes ADD COLUMN after_mode INTEGER;
    ALTER TABLE file_changes ADD COLUMN landed INTEGER NOT NULL DEFAULT 1;",
    ),
    // 8: what a command's network proxy decided (issue 28, ADR-0082): each
    // destination asked for, against the call, allowed or refused and why
    // (`verdict` a code, `detail` in words), with the list entry that
    // allowed it or would, and the address connected to or refused.
    Migration::sql(
        "CREATE TABLE egress_decisions (
        id INTEGER PRIMARY KEY,
        call_row INTEGER NOT NULL REFERENCES tool_calls(id),
        at INTEGER NOT NULL,
        request TEXT NOT NULL CHECK (request IN ('connect', 'http')),
        host TEXT NOT NULL,
        port INTEGER NOT NULL,
        verdict TEXT NOT NULL CHECK (verdict IN ('allowed', 'unreachable', 'not-listed',
            'ip-literal', 'non-public', 'bad-name', 'unresolved', 'sni-mismatch', 'not-tls',
            'bad-request')),
        detail TEXT NOT NULL,
        entry TEXT,
        address TEXT
    );
    CREATE INDEX egress_decisions_by_call ON egress_decisions(call_row, id);",
    ),
    // 9: of a round's prompt tokens, those the engine served from its
    // prompt cache, as it said (issue 25: `usage.prompt_tokens_details.
    // cached_tokens`, llama-server's `timings.cache_n`); NULL where it said
    // nothing, and for rounds stored before.
    Migration::sql("ALTER TABLE rounds ADD COLUMN cached_tokens INTEGER;"),
    // 10: a summary that reaches inside a turn (issue 25, ADR-0083): it
    // covers every turn before `through_turn_id` and, of that turn, the
    // rounds up to `through_round_id`; the turn's request stays in later
    // prompts. NULL: the whole of `through_turn_id`, as every summary
    // stored before covered.
    Migration::sql(
        "ALTER TABLE summaries ADD COLUMN through_round_id INTEGER REFERENCES rounds(id);",
    ),
    // 11: the results a session's prompts send as stubs (issue 25,
    // ADR-0083): those of its rounds up to this one. Kept so a resumed
    // session lays its first request out as the last process did, and the
    // engine's prompt cache still serves it; NULL: none yet.
    Migration::sql("ALTER TABLE sessions ADD COLUMN elided_through_round INTEGER;"),
    // 12: what refused part or all of a call, each named at its source
    // (issue 36): a rule, the fence, a protected path, the mode, the
    // person, a change set, the egress proxy, a suspended MCP tool, a
    // limit. A turn's outcome is derived from these, never from text.
    Migration::sql(
        "CREATE TABLE call_refusals (
             id INTEGER PRIMARY KEY,
             call_row INTEGER NOT NULL REFERENCES tool_calls(id),
             refused_by TEXT NOT NULL,
             target TEXT,
             reason TEXT NOT NULL
         );
         CREATE INDEX call_refusals_by_call ON call_refusals(call_row);",
    ),
    // 13: the hooks run for a call (issue 41, ADR-0098), whatever each
    // answered: its name and event, its verdict, its reason as it said it,
    // how long it ran.
    Migration::sql(
        "CREATE TABLE hook_runs (
             id INTEGER PRIMARY KEY,
             call_row INTEGER NOT NULL REFERENCES tool_calls(id),
             hook TEXT NOT NULL,
             event TEXT NOT NULL,
             verdict TEXT NOT NULL CHECK (verdict IN ('none', 'allow', 'ask', 'deny', 'failed')),
             reason TEXT NOT NULL,
             duration_ms INTEGER NOT NULL
         );
         CREATE INDEX hook_runs_by_call ON hook_runs(call_row);",
    ),
    // 14: the hooks run once a turn (issue 41): `user_prompt_submit`
    // before the model sees the prompt, `stop` as the model ends the turn.
    // `withheld_by`: the hook that kept the turn's prompt from the model
    // (the prompt is not kept, and the history leaves the turn out; `''`:
    // its hooks never let it through, being cancelled, failing or cut off
    // by a crash);
    // `prompt_from_hook`: the stop hook whose words are this turn's
    // prompt (it sent the model back to work).
    Migration::sql(
        "CREATE TABLE turn_hook_runs (
             id INTEGER PRIMARY KEY,
             turn_id INTEGER NOT NULL REFERENCES turns(id),
             hook TEXT NOT NULL,
             event TEXT NOT NULL CHECK (event IN ('user_prompt_submit', 'stop')),
             verdict TEXT NOT NULL CHECK (verdict IN ('none', 'allow', 'ask', 'deny', 'failed')),
             reason TEXT NOT NULL,
             duration_ms INTEGER NOT NULL
         );
         CREATE INDEX turn_hook_runs_by_turn ON turn_hook_runs(turn_id);
         ALTER TABLE turns ADD COLUMN withheld_by TEXT;
         ALTER TABLE turns ADD COLUMN prompt_from_hook TEXT;",
    ),
    // 15: several attempts at one task (issue 42, ADR-0099): a run of
    // attempts, with the session it started in; each attempt with its own
    // session, its kept layer, how it ended and its check. Which attempt
    // is in the workspace is read from the landings' calls
    // (`land_attempt`) and whether their changes were undone. `sessions.attempt_of`: the run a session is an attempt of (its
    // journal names files in its layer, never the workspace's).
    Migration::sql(
        "CREATE TABLE attempt_runs (
             id INTEGER PRIMARY KEY,
             session_id TEXT NOT NULL REFERENCES sessions(id),
             workspace TEXT NOT NULL,
             prompt TEXT NOT NULL,
             verify TEXT,
             permissions TEXT,
             created_at INTEGER NOT NULL
         );
         CREATE TABLE attempts (
             id INTEGER PRIMARY KEY,
             run_id INTEGER NOT NULL REFERENCES attempt_runs(id),
             number INTEGER NOT NULL,
             session_id TEXT,
             layer TEXT NOT NULL,
             status TEXT NOT NULL CHECK (status IN ('running', 'ended', 'discarded')),
             outcome TEXT,
             exit_code INTEGER,
             check_exit INTEGER,
             check_output TEXT,
             UNIQUE (run_id, number)
         );
         ALTER TABLE sessions ADD COLUMN attempt_of INTEGER REFERENCES attempt_runs(id);",
    ),
];

/// The store, for `goat_state::sqlite::open`. WAL so a reader (`goat
/// sessions`) never waits for a turn being written; `synchronous = NORMAL`
/// because a commit lost to a power cut costs the end of a session's
/// record, never its consistency.
const SPEC: DbSpec = DbSpec {
    name: "GOAT store",
    application_id: sqlite::ids::STORE,
    migrations: MIGRATIONS,
    busy_timeout: BUSY_TIMEOUT,
    journal: Journal::WalSyncNormal,
    legacy: Some(is_legacy_store),
};

/// Every store made before stores carried an application id (all of them,
/// up to schema version 1) is adopted: the id is written the first time
/// this GOAT opens it. Such a file is recognised by its tables; the shared
/// check has already required a schema version from 1 up to ours (GOAT
/// always wrote the first schema and its version in one transaction).
fn is_legacy_store(conn: &Connection) -> rusqlite::Result<bool> {
    sqlite::has_tables(
        conn,
        &[
            "sessions",
            "turns",
            "rounds",
            "tool_calls",
            "recovery_events",
        ],
    )
}

/// Opens the store's database at `path` (its directory exists) and brings
/// its schema up to date.
pub(crate) fn open(path: &Path) -> Result<Connection, StoreError> {
    sqlite::open(path, &SPEC).map_err(|err| store_error(path, err))
}

/// Opens the store's database at `path` to read it, creating and changing
/// nothing (see `goat_state::sqlite::open_read_only`): `None` when there
/// is no store yet.
pub(crate) fn open_read_only(path: &Path) -> Result<Option<Connection>, StoreError> {
    sqlite::open_read_only(path, &SPEC).map_err(|err| store_error(path, err))
}

/// The store's words for why its file could not be opened.
fn store_error(path: &Path, err: DbError) -> StoreError {
    let open = |reason: String| StoreError::Open {
        path: path.to_owned(),
        reason,
    };
    match err {
        DbError::NewerSchema { found, known, .. } => StoreError::TooNew {
            path: path.to_owned(),
            found,
            supported: known,
        },
        DbError::Unreadable { reason, .. } | DbError::Sqlite { reason, .. } => open(reason),
        DbError::Corrupt { reason, .. } => open(format!("not a usable SQLite database ({reason})")),
        DbError::Foreign { reason, .. } => open(format!(
            "it is not a GOAT store ({reason}); it was left as it was, so use another --db"
        )),
        DbError::Locked { waited, .. } => open(format!(
            "another process held it locked for {waited:?}; try again when it is done"
        )),
        DbError::OlderSchema { found, known, .. } => open(format!(
            "its schema version {found} is older than this GOAT's {known}, and reading does not \
             upgrade it; any GOAT command that writes it (goat run, goat chat) does"
        )),
        DbError::UnrecoveredLog { .. } => open(format!(
            "a GOAT that stopped before closing it left a write-ahead log ({}-wal), which cannot \
             be read without writing; run goat run or goat chat once to recover it, then try \
             again",
            path.display()
        )),
        DbError::Journal { mode, .. } => {
            open(format!("cannot enable WAL (journal mode is {mode})"))
        }
        other => open(other.to_string()),
    }
}
