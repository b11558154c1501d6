//! `goat sessions list` and `goat sessions show`: what the store recorded;
//! `goat sessions diff`: what it changed; `goat sessions rm`: forgetting it.
//!
//! Reading never creates or changes anything: with no store file there are
//! no sessions, and an existing store is opened read-only (never migrated). Failed rounds are shown with the rest (a malformed response
//! ADR-0065 recovered from, an engine error), because the record is only
//! useful if it is the whole record.

use std::io::{self, IsTerminal as _, Write};
use std::path::Path;

use anyhow::{Context, bail};
use clap::Subcommand;
use goat_store::{CallRecord, RoundRecord, SessionInfo, Store, Summary, TurnRecord};
use serde_json::{Value, json};

use crate::args::DbArg;
use crate::{Outcome, note, paths, text};

/// Longest prompt or answer excerpt in `sessions show`, in characters.
const EXCERPT_CHARS: usize = 100;

/// Longest gate reason or result line in `sessions show`, in characters.
const REASON_CHARS: usize = 200;

#[derive(Subcommand)]
pub enum SessionsCommand {
    /// List the sessions, newest first: id, created, turns, model, workspace.
    List {
        #[command(flatten)]
        store: DbArg,
        /// Print them as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Show one session's turns, rounds (failed ones included) and tool calls.
    Show {
        /// The session's id, as `goat sessions list` shows it.
        id: String,
        #[command(flatten)]
        store: DbArg,
        /// Print everything as JSON, full texts included.
        #[arg(long)]
        json: bool,
    },
    /// Print a session as a Markdown transcript (requests, the model's
    /// text, each tool call with its decision and result, failures), as
    /// JSON (what `show --json` prints), or as an ATIF trajectory (Harbor's
    /// Agent Trajectory Interchange Format).
    Export {
        /// The session's id (or a unique prefix).
        id: String,
        /// md, json or atif.
        #[arg(long, value_enum, default_value_t = super::export::Format::Md)]
        format: super::export::Format,
        #[command(flatten)]
        store: DbArg,
    },
    /// What a session changed in its workspace, from before its first
    /// change to after its last (changes undone left out): a unified diff
    /// per file to read (binary files named, not shown), or with `--format
    /// patch` a patch `git apply` takes against the tree it started from.
    Diff {
        /// The session's id (or a unique prefix).
        id: String,
        /// text (to read: every line escaped) or patch (for `git apply`:
        /// raw bytes, binary files, modes and links; written to a file or
        /// a pipe, never to a terminal).
        #[arg(long, value_enum, default_value_t = super::diff::Format::Text)]
        format: super::diff::Format,
        #[command(flatten)]
        store: DbArg,
    },
    /// Remove sessions and everything recorded in them (turns, rounds,
    /// tool calls). Files a session changed in its workspace stay as they
    /// are. A session another GOAT is driving is left alone.
    Rm {
        /// The sessions' ids (or unique prefixes), as `goat sessions list`
        /// shows them.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        store: DbArg,
    },
}

pub fn sessions(command: SessionsCommand) -> anyhow::Result<Outcome> {
    match command {
        SessionsCommand::List { store, json } => list(store.db.as_deref(), json),
        SessionsCommand::Show { id, store, json } => show(&id, store.db.as_deref(), json),
        SessionsCommand::Diff { id, format, store } => diff(&id, format, store.db.as_deref()),
        SessionsCommand::Rm { ids, store } => remove(&ids, store.db.as_deref()),
        SessionsCommand::Export { id, format, store } => {
            super::export::export(&id, format, store.db.as_deref())
        }
    }
}

/// Prints what session `id` changed, read without changing anything.
///
/// # Security
///
/// A patch holds the bytes the session wrote, unescaped (an escaped patch
/// would not apply), so it is refused when stdout is a terminal: what the
/// model wrote could drive it. It is built whole before a byte is
/// written, so a failure leaves stdout empty, never half a patch.
fn diff(id: &str, format: super::diff::Format, db: Option<&Path>) -> anyhow::Result<Outcome> {
    if format == super::diff::Format::Patch && io::stdout().is_terminal() {
        bail!(
            "a patch holds the files' bytes as the session left them, control characters \
             included, so it is not printed to a terminal: send it to a file or a program \
             (`goat sessions diff {} --format patch > session.patch`), or leave out \
             --format patch to read the changes",
            text::escape_controls(id)
        );
    }
    let Some(store) = open_existing(db)? else {
        bail!(
            "no session '{}': there is no store yet",
            text::escape_controls(id)
        );
    };
    let session = store
        .find_session(id)
        .context("`goat sessions list` shows the sessions")?;
    let bytes = match format {
        super::diff::Format::Text => super::diff::session_diff(&store, &session.id)?.into_bytes(),
        super::diff::Format::Patch => {
            let patch = super::diff::patch::session_patch(&store, &session)?;
            for dir in &patch.dirs_left_out {
                note(format_args!(
                    "not in the patch, which holds only files and links: {dir}"
                ));
            }
            if patch.bytes.is_empty() {
                note(format_args!(
                    "session {} has no file changes a patch can hold",
                    text::escape_controls(&session.id)
                ));
            }
            patch.bytes
        }
    };
    let mut out = io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(Outcome::Ok)
}

/// Removes each session named, each in its own transaction and under its
/// lock, and says what became of each; any that could not be removed
/// makes the command fail, the others stay removed.
fn remove(ids: &[String], db: Option<&Path>) -> anyhow::Result<Outcome> {
    let path = paths::store_path(db)?.into_resolved();
    if !path.exists() {
        bail!(
            "no sessions to remove: there is no store yet at {}",
            path.display()
        );
    }
    let mut store = Store::open(&path)?;
    let mut outcome = Outcome::Ok;
    for given in ids {
        let shown = text::escape_controls(given);
        let removed = store.find_session(given).and_then(|info| {
            // Held while removing: a session another process drives is
            // never removed under it (SessionInUse names the holder).
            let _lock = store.lock_session(&info.id)?;
            store.remove_session(&info.id).map(|_| info)
        });
        match removed {
            Ok(info) => println!(
                "removed session {} ({} turn{})",
                info.id,
                info.turns,
                if info.turns == 1 { "" } else { "s" }
            ),
            Err(e) => {
                crate::error(format_args!(
                    "session '{shown}' was not removed: {}",
                    text::escape_controls(&e.to_string())
                ));
                outcome = Outcome::Failed;
            }
        }
    }
    Ok(outcome)
}

/// The store, if there is one, opened to read: nothing is created or
/// changed (no directory, no `-wal` or `-shm`, no migration).
pub(crate) fn open_existing(db: Option<&Path>) -> anyhow::Result<Option<Store>> {
    let path = paths::store_path(db)?.into_resolved();
    Ok(Store::open_read_only(&path)?)
}

fn list(db: Option<&Path>, json: bool) -> anyhow::Result<Outcome> {
    let sessions = match open_existing(db)? {
        Some(store) => store.list_sessions()?,
        None => Vec::new(),
    };
    let mut out = io::stdout().lock();
    if json {
        let rows: Vec<Value> = sessions.iter().map(session_json).collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else if sessions.is_empty() {
        note("no sessions yet");
    } else {
        let rows: Vec<[String; 5]> = sessions
            .iter()
            .map(|s| {
                [
                    text::escape_controls(&s.id),
                    text::utc(s.created_at),
                    s.turns.to_string(),
                    text::escape_controls(&s.model),
                    text::escape_controls(&s.workspace),
                ]
            })
            .collect();
        let header = ["ID", "CREATED", "TURNS", "MODEL", "WORKSPACE"].map(str::to_owned);
        let mut widths = header.clone().map(|h| h.chars().count());
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&rows) {
            let [id, created, turns, model, workspace] = row;
            writeln!(
                out,
                "{id:w0$}  {created:w1$}  {turns:>w2$}  {model:w3$}  {workspace}",
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3],
            )?;
        }
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

/// The store, opened to read, and the session `id` names in it (an id or a
/// unique prefix).
pub(super) fn find(id: &str, db: Option<&Path>) -> anyhow::Result<(Store, SessionInfo)> {
    let Some(store) = open_existing(db)? else {
        bail!(
            "no session '{}': there is no store yet",
            text::escape_controls(id)
        );
    };
    let session = store
        .find_session(id)
        .context("`goat sessions list` shows the sessions")?;
    Ok((store, session))
}

/// The session `id` names (an id or a unique prefix) and its turns, read
/// without changing anything.
pub(super) fn load(id: &str, db: Option<&Path>) -> anyhow::Result<(SessionInfo, Vec<TurnRecord>)> {
    let (store, session) = find(id, db)?;
    let turns = store.turns(&session.id)?;
    Ok((session, turns))
}

/// A session and its turns as JSON, full texts included, each call with
/// the network decisions its command's proxy made (ADR-0082).
/// What a session's calls met beyond themselves: the proxy's decisions
/// and the hooks run, each with the row of its call.
pub(super) struct Around {
    pub(super) egress: Vec<goat_store::EgressRow>,
    pub(super) hooks: Vec<(i64, goat_store::HookRan)>,
    /// The hooks run once a turn, by turn.
    pub(super) turn_hooks: Vec<goat_store::TurnHooks>,
}

impl Around {
    /// Both, read from `store` for `session`.
    pub(super) fn read(store: &Store, session: &str) -> anyhow::Result<Self> {
        Ok(Self {
            egress: store.egress(session)?,
            hooks: store.hook_runs(session)?,
            turn_hooks: store.turn_hooks(session)?,
        })
    }
}

pub(super) fn write_json(
    out: &mut impl Write,
    session: &SessionInfo,
    turns: &[TurnRecord],
    around: &Around,
) -> anyhow::Result<()> {
    let value = json!({
        "session": session_json(session),
        "turns": turns.iter().map(|t| turn_json(t, around)).collect::<Vec<_>>(),
    });
    serde_json::to_writer_pretty(&mut *out, &value)?;
    writeln!(out)?;
    Ok(())
}

fn show(id: &str, db: Option<&Path>, json: bool) -> anyhow::Result<Outcome> {
    let (session, turns) = load(id, db)?;
    let mut out = io::stdout().lock();
    if json {
        let around = match open_existing(db)? {
            Some(store) => Around::read(&store, &session.id)?,
            None => Around {
                egress: Vec::new(),
                hooks: Vec::new(),
                turn_hooks: Vec::new(),
            },
        };
        write_json(&mut out, &session, &turns, &around)?;
    } else {
        // Where a summary begins (ADR-0074): the turns it covers stay here
        // whole; later prompts carried the summary instead of them.
        let (summaries, changes, egress, hooks, turn_hooks) = match open_existing(db)? {
            Some(store) => (
                store.summaries(&session.id)?,
                store.file_changes(&session.id)?,
                store.egress(&session.id)?,
                store.hook_runs(&session.id)?,
                store.turn_hooks(&session.id)?,
            ),
            None => Default::default(),
        };
        write_session(&mut out, &session, &turns, &summaries)?;
        write_unlanded(&mut out, &session, &changes)?;
        write_egress(&mut out, &egress)?;
        write_hooks(&mut out, &turns, &hooks)?;
        write_turn_hooks(&mut out, &turns, &turn_hooks)?;
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

fn write_session(
    out: &mut impl Write,
    session: &SessionInfo,
    turns: &[TurnRecord],
    summaries: &[Summary],
) -> io::Result<()> {
    writeln!(out, "session {}", text::escape_controls(&session.id))?;
    writeln!(
        out,
        "  workspace  {}",
        text::escape_controls(&session.workspace)
    )?;
    writeln!(
        out,
        "  engine     {}",
        text::escape_controls(&session.engine_url)
    )?;
    writeln!(
        out,
        "  model      {}",
        text::escape_controls(&session.model)
    )?;
    writeln!(out, "  created    {}", text::utc(session.created_at))?;
    for (n, turn) in (1..).zip(turns) {
        writeln!(out)?;
        write_turn(out, n, turn)?;
        for summary in summaries.iter().filter(|s| s.through_turn_id == turn.id) {
            // ADR-0083: a summary may end inside the turn; its request and
            // later rounds stayed in the prompts.
            let inside = summary
                .through_round_id
                .and_then(|r| turn.rounds.iter().position(|round| round.id == r))
                .map(|i| {
                    format!(
                        ", this one through its round {} (its request and later rounds kept)",
                        i + 1
                    )
                })
                .unwrap_or_default();
            writeln!(
                out,
                "\n-- summary #{} ({}): the turns up to here were compacted{inside}; later \
                 prompts carry this instead of them --\n  {}",
                summary.id,
                summary.reason.as_str(),
                text::snippet(&summary.content, EXCERPT_CHARS)
            )?;
        }
    }
    Ok(())
}

/// A command's change set GOAT stopped while landing (ADR-0077): each path
/// checked on disk, and which of its recorded states it holds.
fn write_unlanded(
    out: &mut impl Write,
    session: &SessionInfo,
    changes: &[goat_store::ChangeRecord],
) -> io::Result<()> {
    let unlanded: Vec<&goat_store::ChangeRecord> = changes.iter().filter(|c| !c.landed).collect();
    if unlanded.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nGOAT stopped while landing a command's changes; each path holds one of its two \
         states:"
    )?;
    for record in unlanded {
        let state =
            goat_router::checkpoint::landing_state(Path::new(&session.workspace), &record.change);
        writeln!(
            out,
            "  {}: {}",
            text::escape_controls(&record.change.path),
            state.as_str()
        )?;
    }
    Ok(())
}

/// The hooks run for the session's calls (issue 41), one line each: the
/// call, the hook, its event, its verdict and its reason (the hook's words,
/// escaped).
fn write_hooks(
    out: &mut impl Write,
    turns: &[TurnRecord],
    runs: &[(i64, goat_store::HookRan)],
) -> io::Result<()> {
    if runs.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nhooks run (the person's; an allow changes nothing):")?;
    for (row, ran) in runs {
        let tool = turns
            .iter()
            .flat_map(|t| t.rounds.iter().flat_map(|r| r.calls.iter()))
            .find(|c| c.id == *row)
            .map_or("?", |c| c.call.tool.as_str());
        let reason = if ran.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", text::snippet(&ran.reason, EXCERPT_CHARS))
        };
        writeln!(
            out,
            "  {} at {} of {} (call #{row}): {} ({} ms){reason}",
            text::escape_controls(&ran.hook),
            ran.event,
            text::escape_controls(tool),
            ran.verdict,
            ran.duration_ms
        )?;
    }
    Ok(())
}

/// The hooks run once a turn (issue 41), by turn: a prompt a hook
/// withheld, a turn a stop hook sent the model back to, and each run.
fn write_turn_hooks(
    out: &mut impl Write,
    all: &[TurnRecord],
    turns: &[goat_store::TurnHooks],
) -> io::Result<()> {
    if turns.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nhooks run at turns (the person's):")?;
    for turn in turns {
        // Named as the session's turns are: its number, then its row.
        let label = all.iter().position(|t| t.id == turn.turn_id).map_or_else(
            || format!("turn #{}", turn.turn_id),
            |n| format!("turn {} (#{})", n + 1, turn.turn_id),
        );
        if let Some(hook) = &turn.withheld_by {
            let by = if hook.is_empty() {
                "its hooks, which never let it through (cancelled, failed or cut off)".to_owned()
            } else {
                format!("the hook {}", text::escape_controls(hook))
            };
            writeln!(
                out,
                "  {label}: its prompt was withheld from the model by {by} (not kept)"
            )?;
        }
        if let Some(hook) = &turn.prompt_from_hook {
            writeln!(
                out,
                "  {label}: sent back by the stop hook {} (its words are the prompt)",
                text::escape_controls(hook)
            )?;
        }
        for ran in &turn.runs {
            let reason = if ran.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", text::snippet(&ran.reason, EXCERPT_CHARS))
            };
            writeln!(
                out,
                "  {} at {} of {label}: {} ({} ms){reason}",
                text::escape_controls(&ran.hook),
                ran.event,
                ran.verdict,
                ran.duration_ms
            )?;
        }
    }
    Ok(())
}

/// What commands' network proxy decided (ADR-0082), one line each.
fn write_egress(out: &mut impl Write, rows: &[goat_store::EgressRow]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nnetwork, through GOAT's proxy:")?;
    for row in rows {
        let r = &row.record;
        let what = if r.verdict.refused() {
            "refused"
        } else {
            r.verdict.as_str()
        };
        let mut line = format!(
            "  call #{} {} {} {}:{}",
            row.call_row,
            what,
            r.request.as_str(),
            r.host,
            r.port
        );
        if r.verdict.refused() {
            line.push_str(&format!(" ({}): {}", r.verdict.as_str(), r.detail));
        }
        match (&r.entry, r.verdict.refused()) {
            (Some(entry), false) => line.push_str(&format!(" by {entry}")),
            (Some(entry), true) => line.push_str(&format!("; \"{entry}\" would allow it")),
            (None, _) => {}
        }
        if let (Some(address), false) = (&r.address, r.verdict.refused()) {
            line.push_str(&format!(", at {address}"));
        }
        writeln!(out, "{}", text::snippet(&line, REASON_CHARS * 3))?;
    }
    Ok(())
}

fn write_turn(out: &mut impl Write, n: usize, turn: &TurnRecord) -> io::Result<()> {
    let recovery = if turn.recovery_used {
        ", recovery used"
    } else {
        ""
    };
    writeln!(
        out,
        "turn {n} (#{}): {}{recovery}",
        turn.id,
        turn.status.as_str()
    )?;
    writeln!(
        out,
        "  prompt: {}",
        text::snippet(&turn.prompt, EXCERPT_CHARS)
    )?;
    for (r, round) in (1..).zip(&turn.rounds) {
        write_round(out, r, round)?;
    }
    if let Some(error) = &turn.error {
        writeln!(out, "  error: {}", text::snippet(error, REASON_CHARS * 2))?;
    }
    Ok(())
}

fn write_round(out: &mut impl Write, n: usize, round: &RoundRecord) -> io::Result<()> {
    match &round.failure {
        Some(failure) => writeln!(
            out,
            "  round {n}: {}: {}",
            round.status.as_str(),
            text::snippet(failure, REASON_CHARS)
        )?,
        None => writeln!(out, "  round {n}: {}", round.status.as_str())?,
    }
    if !round.content.trim().is_empty() {
        writeln!(
            out,
            "    text: {}",
            text::snippet(&round.content, EXCERPT_CHARS)
        )?;
    }
    for call in &round.calls {
        writeln!(out, "    call {}", call_line(call))?;
    }
    Ok(())
}

/// `write_file(path="a") -> denied [deny: denied: writing 'a' ...]`, with the
/// result's first line for failures.
fn call_line(call: &CallRecord) -> String {
    let mut line = format!(
        "{} -> {}",
        text::call_summary(&call.call.tool, &call.call.arguments),
        call.status.as_str()
    );
    if let Some(decision) = &call.decision {
        let reason = call
            .decision_reason
            .as_deref()
            .map(|r| format!(": {}", text::first_line(r, REASON_CHARS)))
            .unwrap_or_default();
        line.push_str(&format!(" [{}{reason}]", decision.as_str()));
    }
    // A command's result opens with how it ended and how long it took.
    let command_ran =
        call.call.tool == goat_router::RUN_COMMAND && call.status == goat_store::CallStatus::Ok;
    let failed = command_ran
        || match call.status {
            goat_store::CallStatus::Error | goat_store::CallStatus::Interrupted => true,
            // A denial's result is its reason, already shown.
            goat_store::CallStatus::Ok
            | goat_store::CallStatus::Denied
            | goat_store::CallStatus::Pending => false,
        };
    if failed && let Some(result) = &call.result {
        line.push_str(&format!(": {}", text::first_line(result, REASON_CHARS)));
    }
    line
}

fn session_json(s: &SessionInfo) -> Value {
    json!({
        "id": s.id,
        "created_at": s.created_at,
        "workspace": s.workspace,
        "engine_url": s.engine_url,
        "model": s.model,
        "turns": s.turns,
    })
}

fn turn_json(t: &TurnRecord, around: &Around) -> Value {
    let egress = &around.egress;
    let hooked = around.turn_hooks.iter().find(|h| h.turn_id == t.id);
    json!({
        "id": t.id,
        "prompt": t.prompt,
        "status": t.status.as_str(),
        "error": t.error,
        "recovery_used": t.recovery_used,
        "withheld_by": hooked.and_then(|h| h.withheld_by.clone()),
        "prompt_from_hook": hooked.and_then(|h| h.prompt_from_hook.clone()),
        "hooks": hooked.map(|h| h.runs.iter().map(|r| json!({
            "hook": r.hook,
            "event": r.event,
            "verdict": r.verdict,
            "reason": r.reason,
            "duration_ms": r.duration_ms,
        })).collect::<Vec<_>>()).unwrap_or_default(),
        "rounds": t.rounds.iter().map(|r| json!({
            "id": r.id,
            "status": r.status.as_str(),
            "failure": r.failure,
            "failure_kind": r.failure_kind.map(|k| k.as_str()),
            "finish_reason": r.finish_reason,
            "content": r.content,
            "tool_calls": r.calls.iter().map(|c| json!({
                "id": c.id,
                "call_id": c.call.call_id,
                "tool": c.call.tool,
                "arguments": c.call.arguments,
                "status": c.status.as_str(),
                "decision": c.decision.map(|d| d.as_str()),
                "decision_reason": c.decision_reason,
                "result": c.result,
                "error_kind": c.error_kind.map(|k| k.as_str()),
                "duration_ms": c.duration_ms,
                "exit_code": c.exit_code,
                "network": egress.iter().filter(|e| e.call_row == c.id).map(|e| json!({
                    "at": e.record.at,
                    "request": e.record.request.as_str(),
                    "host": e.record.host,
                    "port": e.record.port,
                    "verdict": e.record.verdict.as_str(),
                    "detail": e.record.detail,
                    "entry": e.record.entry,
                    "address": e.record.address,
                })).collect::<Vec<_>>(),
                "hooks": around.hooks.iter().filter(|(row, _)| *row == c.id).map(|(_, h)| json!({
                    "hook": h.hook,
                    "event": h.event,
                    "verdict": h.verdict,
                    "reason": h.reason,
                    "duration_ms": h.duration_ms,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
