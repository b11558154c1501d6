//! `goat run`: one turn of the model, through the session core.
//!
//! Everything that can be checked before the model is asked is checked
//! first, and is exit 2: the prompt, the workspace, where the store and the
//! permission database live (never inside the workspace), the engine
//! settings, the tools, the session to resume. Then the turn runs; from
//! there on the store records what happens, and the turn's one outcome
//! decides the exit code (`goat_session::Outcome`: the same in every
//! output mode, the table in docs/harness.md).
//!
//! `--output text` (the default) streams the answer to stdout as it
//! arrives and tool activity to stderr, one line per call, so `goat run
//! ... > answer.md` keeps only the answer. `--output json` (or `--json`)
//! prints one summary read back from the store after the turn.
//! `--output jsonl` writes the session protocol's events to stdout, one
//! JSON object per line, as they happen (docs/schema/events.schema.json);
//! diagnostics stay on stderr. `--logs-dir` keeps the events, the
//! trajectory and the patch in a directory for a harness.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, bail};
use goat_session::drive::Events;
use goat_session::protocol::{Event, EventKind, Outcome as RunOutcome};
use goat_session::{Budget, Driver};
use goat_shepherd::TurnError;
use goat_store::{RoundStatus, TurnRecord, TurnStatus};
use serde_json::{Value, json};

use crate::approval::{Pager, TerminalApprover};
use crate::args::TurnOptions;
use crate::printer::Printer;
use crate::style::Style;
use crate::terminal::{AtRest, Console, ConsoleAnswers, EarlyStop, run_turn};
use crate::{Outcome, note, paths};

#[derive(clap::Args)]
pub struct RunArgs {
    /// The request for the model, or `-` to read it from stdin.
    #[arg(value_name = "PROMPT")]
    pub(super) prompt: String,
    #[command(flatten)]
    pub(super) turn: TurnOptions,
    /// Make N attempts at the prompt, each a session of its own in its own
    /// copy-on-write layer of the workspace; the first whose check passes
    /// (or, without --verify, that completes) lands (docs/attempts.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(super) attempts: Option<u32>,
    /// With --attempts: how many run at once (default: as many as the
    /// engine serves at once where it says, llama-server's slots; else 1,
    /// in order).
    #[arg(long, value_name = "K", requires = "attempts", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(super) attempts_parallel: Option<u32>,
    /// With --attempts: the project's check, run contained in each
    /// attempt's layer after it ends (its writes dropped); exit 0 passes.
    #[arg(long, value_name = "CMD", requires = "attempts")]
    pub(super) verify: Option<String>,
    /// What stdout gets: `text`, the answer as it streams; `json`, one
    /// summary afterwards; `jsonl`, every event as one JSON object per
    /// line, as it happens (docs/harness.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub(super) output: OutputFormat,
    /// The same as `--output json`.
    #[arg(long, conflicts_with = "output")]
    pub(super) json: bool,
    /// With `--output jsonl`: also the answer and reasoning as they stream
    /// (`message.delta`, `reasoning.delta`).
    #[arg(long)]
    pub(super) stream_deltas: bool,
    /// Exit 0 when the turn completed with calls denied (by a rule or a
    /// person), rather than 3.
    #[arg(long)]
    pub(super) allow_denials: bool,
    /// Keep the run's events (events.jsonl), its trajectory in Harbor's
    /// ATIF (trajectory.json) and the patch of what it changed
    /// (changes.patch) in this directory, outside the workspace.
    #[arg(long, value_name = "DIR")]
    pub(super) logs_dir: Option<PathBuf>,
    /// Stop the turn after this many seconds (outcome budget_exhausted).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    max_wall_secs: Option<u64>,
    /// Stop before another round once the run's prompt and completion
    /// tokens reach this (outcome budget_exhausted).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    max_total_tokens: Option<u64>,
}

/// What stdout gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum OutputFormat {
    /// The answer, streamed.
    Text,
    /// One summary at the end.
    Json,
    /// The events, one JSON object per line.
    Jsonl,
}

pub fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let output = if args.json {
        OutputFormat::Json
    } else {
        args.output
    };
    if args.stream_deltas && output != OutputFormat::Jsonl {
        bail!("--stream-deltas needs --output jsonl; the text output streams the answer anyway");
    }
    if args.attempts.is_some() {
        return super::run_attempts::run(&args, output == OutputFormat::Jsonl);
    }
    let lines = Lines::new(output == OutputFormat::Jsonl, args.stream_deltas);
    match run_with(&args, output, &lines) {
        Ok(outcome) => Ok(outcome),
        Err(e) => {
            // A program reading the stream hears of it there too; the
            // words go to stderr as for every command.
            lines.error(&e);
            Err(e)
        }
    }
}

fn run_with(args: &RunArgs, output: OutputFormat, lines: &Arc<Lines>) -> anyhow::Result<Outcome> {
    let prompt = read_prompt(&args.prompt)?;
    let logs = match &args.logs_dir {
        Some(dir) => Some(Logs::create(dir, &args.turn, args.stream_deltas)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // SIGTERM and SIGINT are caught from here on, before anything slow
    // (opening the store, loading the tools, asking the engine its
    // window): a run stopped before its turn still exits 130 and ends its
    // stream, and events.jsonl, with a last line.
    let early = {
        let lines = lines.clone();
        let log = logs.as_ref().map(|l| l.events.clone());
        EarlyStop::watch(
            &runtime,
            Box::new(move |signal: &str| {
                lines.ended(
                    format!(
                        "stopped by {signal} before the turn began; the model was not asked and \
                         no tool ran"
                    ),
                    RunOutcome::Cancelled,
                    log.as_deref(),
                );
            }),
        )
    };
    // At a terminal, one console reads the answers to approval questions
    // and Ctrl-C, so Ctrl-C during a question answers it with no.
    let console = if io::stdin().is_terminal() && io::stderr().is_terminal() {
        Some(Console::start(&runtime, AtRest::Exit, None)?)
    } else {
        None
    };
    // The answer streams only as text; the tool lines go to stderr in
    // every mode.
    let printer = Arc::new(Mutex::new(Printer::new(output == OutputFormat::Text)));
    let events = {
        let printer = printer.clone();
        let lines = lines.clone();
        let logs = logs.as_ref().map(|l| l.events.clone());
        Events::new(
            move |event| {
                printer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .event(event);
                lines.write(event);
                if let Some(file) = &logs {
                    file.write(event);
                }
            },
            args.stream_deltas,
        )
    };
    lines.attach(events.clone());
    let approver = console.as_ref().map(|console| {
        events.approver(Box::new(TerminalApprover {
            answers: ConsoleAnswers(console.clone()),
            output: io::stderr(),
            style: Style::stderr(),
            pager: Pager::from_env(),
            width: crate::screen::stderr_columns(),
        }))
    });
    let opened = goat_session::for_turn(&args.turn.open_options(), approver, &crate::stderr_note)?;
    mark_attempt(&opened, args.turn.session.is_some())?;
    let turns_before = opened.turn_count()?;
    let driver = Driver::new(
        opened,
        events,
        Budget {
            max_wall: args.max_wall_secs.map(Duration::from_secs),
            max_total_tokens: args.max_total_tokens,
        },
    );
    runtime.block_on(driver.start());

    let report = run_turn(
        console.as_deref(),
        &runtime,
        &driver,
        &prompt,
        args.allow_denials,
        Some(&early),
    );
    printer
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .finish(report.result.is_ok());
    let session_id = driver.opened.session_id.clone();
    let store = &driver.opened.store;
    // A failed turn's rounds spent tokens too: its stats so far.
    let stats = report
        .result
        .as_ref()
        .map_or_else(|_| driver.opened.shepherd.last_turn_stats(), |s| s.stats);
    if let Some(line) = crate::turn_stats::stats_line(&stats) {
        note(line);
    }

    // The store is the record: the summary is read back from it, and a turn
    // it never recorded did not start, which is a host problem (exit 2).
    let recorded = {
        let store = store.lock().unwrap_or_else(PoisonError::into_inner);
        store.turns(&session_id).map(|mut turns| {
            let new = usize::try_from(turns_before).map_or(0, |n| turns.len().saturating_sub(n));
            if new == 0 { None } else { turns.pop() }
        })
    };
    let result = match (report.result, &recorded) {
        (Err(e), Ok(None)) => {
            return Err(anyhow::Error::new(e).context("the turn could not start"));
        }
        (result, _) => result,
    };
    // A new session whose one turn never reached the engine (refused
    // connection, bad URL, untrusted certificate) recorded nothing worth
    // continuing: it is removed rather than left behind.
    let unreached = turns_before == 0
        && matches!(&result, Err(TurnError::Engine(e)) if e.nothing_sent())
        && matches!(&recorded, Ok(Some(turn))
            if turn.rounds.iter().all(|r| r.status != goat_store::RoundStatus::Ok));
    let kept = !unreached
        || !store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove_session(&session_id)?;
    let outcome = report.outcome;
    match result {
        Ok(_) => {
            if !report.ended.denials.is_empty() {
                let denials = report.ended.denials.len();
                note(format_args!(
                    "{} {} denied; outcome {}",
                    crate::text::count(denials, "call"),
                    if denials == 1 { "was" } else { "were" },
                    outcome.as_str()
                ));
            }
        }
        Err(TurnError::Cancelled) if outcome == RunOutcome::BudgetExhausted => {
            crate::error(format_args!(
                "{}; continue with --session {session_id}",
                crate::text::escape_controls(report.ended.error.as_deref().unwrap_or_default())
            ));
        }
        Err(TurnError::Cancelled) => {
            note(format_args!(
                "the turn was cancelled and is recorded as cancelled; continue with --session \
                 {session_id}"
            ));
        }
        Err(e) => {
            crate::error(format_args!(
                "the turn failed: {}",
                crate::text::turn_failure(e)
            ));
            if !kept {
                note(format_args!(
                    "the engine was never reached, so session {session_id} was not kept"
                ));
            }
        }
    }
    if let Some(logs) = &logs
        && kept
    {
        logs.finish(&driver.opened, &session_id);
    }
    if output == OutputFormat::Json {
        let turn = match recorded {
            Ok(Some(turn)) => turn,
            Ok(None) => bail!("the turn finished but the store has no record of it"),
            Err(e) => {
                return Err(anyhow::Error::new(e).context("reading the turn back from the store"));
            }
        };
        let mut summary = summary_json(&session_id, &turn);
        summary["session_kept"] = Value::Bool(kept);
        summary["outcome"] = Value::String(outcome.as_str().to_owned());
        summary["exit_code"] = Value::from(outcome.exit_code(args.allow_denials));
        summary["denials"] = serde_json::to_value(&report.ended.denials)?;
        summary["stats"] = crate::turn_stats::stats_json(&stats);
        let mut out = io::stdout().lock();
        let written = serde_json::to_writer_pretty(&mut out, &summary)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
            .and_then(|()| out.flush());
        // A closed stdout is no reason to change the turn's exit status.
        if let Err(e) = written
            && e.kind() != io::ErrorKind::BrokenPipe
        {
            return Err(anyhow::Error::new(e).context("writing the summary"));
        }
    } else if let Err(e) = recorded {
        note(format_args!(
            "cannot read the turn back from the store: {:#}",
            anyhow::Error::new(e)
        ));
    }
    Ok(Outcome::Code(outcome.exit_code(args.allow_denials)))
}

/// `--output jsonl` on stdout: each event as one line, written and flushed
/// as it happens. A closed stdout stops the lines, not the turn.
struct Lines {
    on: bool,
    deltas: bool,
    state: Mutex<LinesState>,
}

struct LinesState {
    open: bool,
    /// The session's events, once there are any: an error after that is
    /// numbered among them.
    events: Option<Arc<Events>>,
}

impl Lines {
    fn new(on: bool, deltas: bool) -> Arc<Self> {
        Arc::new(Self {
            on,
            deltas,
            state: Mutex::new(LinesState {
                open: true,
                events: None,
            }),
        })
    }

    fn attach(&self, events: Arc<Events>) {
        self.lock().events = Some(events);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LinesState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, event: &Event) {
        if !self.on || (!self.deltas && is_delta(event)) {
            return;
        }
        let mut state = self.lock();
        if !state.open {
            return;
        }
        let mut out = io::stdout().lock();
        let written = serde_json::to_writer(&mut out, event)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            state.open = false;
            if e.kind() != io::ErrorKind::BrokenPipe {
                note(format_args!(
                    "cannot write the events to stdout ({e}); the turn goes on and the store \
                     keeps it"
                ));
            }
        }
    }

    /// An `error` line ending the run with `outcome` outside a turn,
    /// numbered among the session's events once there are any, else the
    /// first line; also to `log` (events.jsonl) before the events are.
    fn ended(&self, message: String, outcome: RunOutcome, log: Option<&EventFile>) {
        let events = self.lock().events.clone();
        match events {
            // The session's sink writes the logs too.
            Some(events) => events.ended(message, outcome),
            None => {
                let event = Event {
                    seq: 0,
                    session_id: None,
                    turn: None,
                    attempt: None,
                    kind: EventKind::Error {
                        message,
                        outcome,
                        exit_code: outcome.exit_code(false),
                    },
                };
                self.write(&event);
                if let Some(log) = log {
                    log.write(&event);
                }
            }
        }
    }

    /// An `error` line for a failure that ends the run (exit 2).
    fn error(&self, e: &anyhow::Error) {
        if !self.on {
            return;
        }
        let message = crate::text::error_chain(e.chain());
        self.ended(message, RunOutcome::HostError, None);
    }
}

fn is_delta(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::MessageDelta { .. } | EventKind::ReasoningDelta { .. }
    )
}

/// `--logs-dir`: what a harness collects.
struct Logs {
    dir: PathBuf,
    events: Arc<EventFile>,
}

impl Logs {
    /// Makes the directory (outside the workspace) and starts
    /// `events.jsonl`, before anything else happens.
    fn create(dir: &Path, turn: &TurnOptions, deltas: bool) -> anyhow::Result<Self> {
        let workspace = paths::workspace(turn.workspace.as_deref())?;
        // Checked before anything is made, and again once it exists.
        paths::ensure_logs_outside(dir, &workspace)?;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the logs directory {}", dir.display()))?;
        paths::ensure_logs_outside(dir, &workspace)?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("resolving the logs directory {}", dir.display()))?;
        let path = dir.join("events.jsonl");
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Self {
            dir,
            events: Arc::new(EventFile {
                deltas,
                file: Mutex::new(Some(BufWriter::new(file))),
            }),
        })
    }

    /// Ends `events.jsonl` and writes the trajectory (`trajectory.json`,
    /// Harbor's ATIF) and the patch (`changes.patch`, what `goat sessions
    /// diff ID --format patch` writes: `git apply` takes it against the
    /// starting tree). Each file is written whole or not at
    /// all; a failure is said on stderr, and the turn's outcome stands.
    fn finish(&self, opened: &goat_session::Opened, session_id: &str) {
        self.events.close();
        let store = opened.store.lock().unwrap_or_else(PoisonError::into_inner);
        let trajectory = crate::commands::atif::trajectory(&store, session_id)
            .map_err(anyhow::Error::new)
            .and_then(|t| {
                let mut bytes = Vec::new();
                crate::commands::atif::write(&mut bytes, &t)?;
                Ok(bytes)
            });
        self.put("trajectory.json", trajectory);
        // A run that changed nothing leaves an empty patch: `git apply`
        // takes it, and "no changes" is not a missing file.
        let patch = store
            .find_session(session_id)
            .map_err(anyhow::Error::new)
            .and_then(|session| crate::commands::diff::patch::session_patch(&store, &session))
            .map(|patch| {
                for dir in &patch.dirs_left_out {
                    note(format_args!(
                        "not in changes.patch, which holds only files and links: {dir}"
                    ));
                }
                patch.bytes
            });
        self.put("changes.patch", patch);
    }

    /// Writes one file of the logs whole: a temporary file beside it,
    /// synced, renamed over it.
    fn put(&self, name: &str, bytes: anyhow::Result<Vec<u8>>) {
        let path = self.dir.join(name);
        let written = bytes.and_then(|bytes| {
            let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
            file.write_all(&bytes)?;
            file.as_file().sync_all()?;
            file.persist(&path)?;
            Ok(())
        });
        if let Err(e) = written {
            crate::error(format_args!(
                "cannot write {name} in the logs directory: {}",
                crate::text::escape_controls(&crate::text::error_chain(e.chain()))
            ));
        }
    }
}

/// `events.jsonl`, flushed line by line so a harness that kills GOAT keeps
/// what happened until then.
struct EventFile {
    deltas: bool,
    file: Mutex<Option<BufWriter<File>>>,
}

impl EventFile {
    fn write(&self, event: &Event) {
        if !self.deltas && is_delta(event) {
            return;
        }
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(out) = file.as_mut() else {
            return;
        };
        let written = serde_json::to_writer(&mut *out, event)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            note(format_args!(
                "cannot write events.jsonl in the logs directory ({e}); no more events go there"
            ));
            *file = None;
        }
    }

    fn close(&self) {
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(out) = file.take()
            && let Err(e) = out
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
        {
            note(format_args!(
                "cannot finish events.jsonl in the logs directory: {e}"
            ));
        }
    }
}

/// The prompt, from the argument or stdin for `-`; refusing an empty one.
/// The environment variable `goat run --attempts` gives each attempt's
/// own run: `RUN:N`.
pub(super) const ATTEMPT_ENV: &str = "GOAT_ATTEMPT";

/// Marks the session as attempt N of run RUN when this run is one (the
/// attempt marks itself, so a kill of the run between the session's start
/// and its first line cannot leave it unmarked); refuses to carry on an
/// attempt's session (`--session`): what it would change could never be
/// undone from the workspace.
fn mark_attempt(opened: &goat_session::Opened, resumed: bool) -> anyhow::Result<()> {
    let mut store = opened.store.lock().unwrap_or_else(PoisonError::into_inner);
    if resumed && let Some(run) = store.attempt_of(&opened.session_id)? {
        bail!(
            "session {} is an attempt of run {run}: it is not carried on; goat attempts show \
             and land work with it",
            opened.session_id
        );
    }
    let Some(value) = std::env::var_os(ATTEMPT_ENV) else {
        return Ok(());
    };
    let value = value.to_string_lossy();
    let (run, n) = value
        .split_once(':')
        .and_then(|(r, n)| Some((r.parse::<i64>().ok()?, n.parse::<u32>().ok()?)))
        .with_context(|| format!("{ATTEMPT_ENV} is not RUN:N"))?;
    store.attempt_session(run, n, &opened.session_id)?;
    Ok(())
}

pub(super) fn read_prompt(arg: &str) -> anyhow::Result<String> {
    let prompt = if arg == "-" {
        let mut s = String::new();
        io::stdin()
            .read_to_string(&mut s)
            .context("reading the prompt from stdin")?;
        s
    } else {
        arg.to_owned()
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty; say what the model should do");
    }
    Ok(prompt)
}

/// The `--json` summary, from the store's record of the turn.
fn summary_json(session_id: &str, turn: &TurnRecord) -> Value {
    let calls: Vec<Value> = turn
        .rounds
        .iter()
        .flat_map(|r| &r.calls)
        .map(|c| {
            json!({
                "tool": c.call.tool,
                "status": c.status.as_str(),
                "decision": c.decision.map(|d| d.as_str()),
            })
        })
        .collect();
    // The answer is the last round's text, and only when the turn completed:
    // a failed turn has no answer, whatever it streamed.
    let answer = match turn.status {
        TurnStatus::Completed => turn
            .rounds
            .iter()
            .rev()
            .find(|r| r.status == RoundStatus::Ok)
            .map(|r| r.content.clone()),
        TurnStatus::Running | TurnStatus::Failed | TurnStatus::Cancelled => None,
    };
    json!({
        "session_id": session_id,
        "turn_id": turn.id,
        "status": turn.status.as_str(),
        "rounds": turn.rounds.len(),
        "tool_calls": calls,
        "recovery_used": turn.recovery_used,
        "error": turn.error,
        "answer": answer,
    })
}
