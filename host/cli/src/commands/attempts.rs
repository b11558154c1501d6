//! `goat attempts`: the attempts `goat run --attempts` made (issue 42,
//! ADR-0099), each kept in its own layer until discarded: list them, show
//! one, land another (in place of the one landed, in one undoable step),
//! discard them. And the
//! hidden `goat attempt-check`, which runs an attempt's check inside the
//! layer it was started in.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use goat_command::attempt::AttemptLayer;
use goat_store::{AttemptRun, Store};
use serde_json::json;

use crate::args::DbArg;
use crate::{Outcome, paths, text};

#[derive(clap::Subcommand)]
pub enum AttemptsCommand {
    /// Every run of attempts, newest first, with how each attempt ended.
    List {
        /// One JSON array.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// One attempt: its session, its check, and what its layer changed.
    Show {
        /// The attempt (1-based).
        attempt: u32,
        /// The run (default: the newest).
        #[arg(long, value_name = "ID")]
        run: Option<i64>,
        #[command(flatten)]
        store: DbArg,
    },
    /// Land attempt N's changes in the workspace (inspected and recorded
    /// like a command's, undone with goat undo). Where another attempt of
    /// the run is in the workspace, attempt N takes its place in the same
    /// step, and one goat undo brings it back.
    Land {
        /// The attempt (1-based).
        attempt: u32,
        /// The run (default: the newest).
        #[arg(long, value_name = "ID")]
        run: Option<i64>,
        #[command(flatten)]
        store: DbArg,
    },
    /// Remove the run's attempts' layers (the record stays).
    Discard {
        /// The run (default: the newest).
        #[arg(long, value_name = "ID")]
        run: Option<i64>,
        #[command(flatten)]
        store: DbArg,
    },
}

/// `goat attempt-check`, run by `goat run --attempts` inside an attempt's
/// check layer: the check, held as a Landlock-contained command with the
/// network closed; one JSON line with its exit code and output.
#[derive(clap::Args)]
pub struct AttemptCheckArgs {
    /// Seconds it may run.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// The check, as a shell command line.
    command: String,
}

pub fn attempts(command: AttemptsCommand) -> anyhow::Result<Outcome> {
    match command {
        AttemptsCommand::List { json, store } => list(&open(&store)?, json),
        AttemptsCommand::Show {
            attempt,
            run,
            store,
        } => show(&open(&store)?, run, attempt),
        AttemptsCommand::Land {
            attempt,
            run,
            store,
        } => land(&store, run, attempt),
        AttemptsCommand::Discard { run, store } => discard(&mut open(&store)?, run),
    }
}

fn open(store: &DbArg) -> anyhow::Result<Store> {
    let path = paths::store_path(store.db.as_deref())?.into_resolved();
    if !path.exists() {
        bail!("no attempts yet: there is no store at {}", path.display());
    }
    Ok(Store::open(&path)?)
}

/// Run `run`, or the newest in the current directory's workspace.
fn pick(store: &Store, run: Option<i64>) -> anyhow::Result<AttemptRun> {
    if let Some(id) = run {
        return Ok(store.attempt_run(id)?);
    }
    let here = paths::workspace(None)?;
    store
        .attempt_runs()?
        .into_iter()
        .find(|r| {
            let at = std::path::Path::new(&r.workspace);
            at == here || at.canonicalize().is_ok_and(|c| c == here)
        })
        .with_context(|| {
            format!(
                "no attempts in {} yet: goat run --attempts N makes them (goat attempts list \
                 shows every workspace's; --run ID picks one)",
                text::escape_controls(&here.to_string_lossy())
            )
        })
}

/// The lock of the run whose attempts live beside `layer`: `None` while
/// the run is still going.
fn run_lock(layer: &str) -> anyhow::Result<Option<std::fs::File>> {
    let dir = std::path::Path::new(layer)
        .parent()
        .context("an attempt's layer has no run directory")?;
    super::run_attempts::lock_run(dir)
}

fn list(store: &Store, json: bool) -> anyhow::Result<Outcome> {
    let runs = store.attempt_runs()?;
    let mut out = io::stdout().lock();
    if json {
        let value: Vec<_> = runs.iter().map(run_json).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(Outcome::Ok);
    }
    if runs.is_empty() {
        writeln!(out, "no attempts yet: goat run --attempts N makes them")?;
    }
    for run in &runs {
        writeln!(
            out,
            "run {} ({}): {}{}",
            run.id,
            text::utc(run.created_at),
            text::snippet(&run.prompt, 80),
            run.landed
                .map_or_else(String::new, |n| format!("; attempt {n} landed"))
        )?;
        for a in &run.attempts {
            writeln!(
                out,
                "  attempt {}: {}; {}; {}",
                a.number,
                a.outcome.as_deref().unwrap_or("no outcome"),
                match a.passed() {
                    Some(true) => "check passed",
                    Some(false) => "check failed",
                    None => "no check",
                },
                a.status
            )?;
        }
    }
    Ok(Outcome::Ok)
}

fn run_json(run: &AttemptRun) -> serde_json::Value {
    json!({
        "run": run.id,
        "session_id": run.session_id,
        "workspace": run.workspace,
        "prompt": run.prompt,
        "verify": run.verify,
        "created_at": run.created_at,
        "landed": run.landed,
        "attempts": run.attempts.iter().map(|a| json!({
            "attempt": a.number,
            "session_id": a.session_id,
            "status": a.status,
            "outcome": a.outcome,
            "exit_code": a.exit_code,
            "passed": a.passed(),
            "check_output": a.check_output,
        })).collect::<Vec<_>>(),
    })
}

fn show(store: &Store, run: Option<i64>, number: u32) -> anyhow::Result<Outcome> {
    let run = pick(store, run)?;
    let a = run
        .attempts
        .iter()
        .find(|a| a.number == number)
        .with_context(|| format!("run {} has no attempt {number}", run.id))?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "attempt {number} of run {}: {}, {}",
        run.id,
        a.outcome.as_deref().unwrap_or("no outcome"),
        a.status
    )?;
    if let Some(session) = &a.session_id {
        writeln!(out, "session: {session} (goat sessions show {session})")?;
    }
    match (a.passed(), &a.check_output) {
        (Some(passed), Some(output)) => writeln!(
            out,
            "check {}:\n{}",
            if passed { "passed" } else { "failed" },
            text::escape_controls(output.trim_end())
        )?,
        _ => writeln!(out, "no check")?,
    }
    if a.status == "ended" {
        let layer = AttemptLayer::open(std::path::Path::new(&a.layer))?;
        let pending = layer.pending(std::path::Path::new(&run.workspace))?;
        writeln!(out, "changes ({}):", pending.set.changes.len())?;
        for change in &pending.set.changes {
            let what = match (change.before.exists(), change.after.exists()) {
                (false, true) => "created",
                (true, false) => "removed",
                _ => "changed",
            };
            writeln!(out, "  {what} {}", text::escape_controls(&change.path))?;
        }
    }
    Ok(Outcome::Ok)
}

fn land(store_arg: &DbArg, run: Option<i64>, number: u32) -> anyhow::Result<Outcome> {
    let store = open(store_arg)?;
    let run = pick(&store, run)?;
    let a = run
        .attempts
        .iter()
        .find(|a| a.number == number)
        .with_context(|| format!("run {} has no attempt {number}", run.id))?;
    // While the run goes on, it may land an attempt itself.
    let Some(_run_lock) = run_lock(&a.layer)? else {
        bail!(
            "run {} is still going; land an attempt once it ended",
            run.id
        );
    };
    match a.status.as_str() {
        "ended" => {}
        // Its run was stopped (killed, crashed) before it was recorded as
        // ended: it may land once no process drives its session.
        "running" => {
            let quiet = a
                .session_id
                .as_deref()
                .is_none_or(|s| store.lock_session(s).is_ok());
            if !quiet {
                bail!(
                    "attempt {number} of run {} is still running; land it once it ended",
                    run.id
                );
            }
        }
        other => bail!(
            "attempt {number} of run {} is {other}; it cannot land",
            run.id
        ),
    }
    // Another attempt in the workspace is swapped out in the same change
    // set: what was there before is put back wherever attempt N says
    // nothing. Nothing undoes the landings meanwhile.
    if let Some(session) = store.failed_landing(run.id)? {
        bail!(
            "a landing of run {} failed part-way and could not take all its steps back, so some \
             paths hold neither attempt's files: goat sessions show {session} lists which. Put \
             them right first (goat undo --session {session}); nothing landed",
            run.id
        );
    }
    let swap_out = match store.landing(run.id)? {
        Some(landing) => {
            let locks = landing
                .sessions
                .iter()
                .map(|s| store.lock_session(s))
                .collect::<Result<Vec<_>, _>>()?;
            // Read again under the locks: an undo just before them is seen.
            match store.landing(run.id)? {
                Some(landing) if landing.attempt == number => bail!(
                    "attempt {number} of run {} is already in the workspace (goat undo --session \
                     {} takes it back)",
                    run.id,
                    landing.session_id
                ),
                Some(again) if again.sessions == landing.sessions => {
                    Some(((again.attempt, again.changes), locks))
                }
                Some(_) => bail!(
                    "run {}'s landings changed while this one was being prepared; nothing landed, \
                     try again",
                    run.id
                ),
                None => None,
            }
        }
        None => None,
    };
    drop(store);
    let prepared = goat_session::direct::prepare(
        &goat_session::direct::DirectOptions {
            workspace: Some(PathBuf::from(&run.workspace)),
            db: store_arg.db.clone(),
            // The rules the run was given.
            permissions: run.permissions.as_ref().map(PathBuf::from),
            tools: Some(Vec::new()),
            ..Default::default()
        },
        &crate::stderr_note,
    )?;
    let session = prepared.open_for("attempts", "goat attempts land", None)?;
    let layer = AttemptLayer::open(std::path::Path::new(&a.layer))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let landed = super::run_attempts::land(
        &runtime,
        &session.calls,
        (run.id, number),
        &layer,
        &session.workspace,
        swap_out.as_ref().map(|(out, _lock)| out),
    );
    // Refused before a landing was tried, or refused whole by the rules:
    // the workspace is as it was, and the landing's session is not kept
    // (it would be the one goat undo picks next).
    let nothing = match &landed {
        Err(e) => e.downcast_ref::<super::run_attempts::NotLanded>().is_some(),
        Ok(call) => call.status == goat_store::CallStatus::Denied && call.changes.is_empty(),
    };
    if nothing
        && let Err(e) = session
            .store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove_session(&session.session_id)
    {
        crate::note(format!(
            "the landing's session {} was kept ({e}); goat undo may pick it: name another \
             with --session",
            session.session_id
        ));
    }
    let call = landed?;
    let mut out = io::stdout().lock();
    if call.status == goat_store::CallStatus::Ok {
        writeln!(
            out,
            "attempt {number} of run {} landed{}: {}; goat undo takes it back",
            run.id,
            swap_out
                .as_ref()
                .map_or_else(String::new, |((old, _), _)| format!(
                    " in place of attempt {old}"
                )),
            text::escape_controls(
                &call
                    .changes
                    .iter()
                    .map(|c| c.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        )?;
        Ok(Outcome::Ok)
    } else {
        writeln!(out, "{}", text::escape_controls(call.result.trim()))?;
        Ok(Outcome::Failed)
    }
}

fn discard(store: &mut Store, run: Option<i64>) -> anyhow::Result<Outcome> {
    let run = pick(store, run)?;
    let lock = match run.attempts.first() {
        Some(a) => run_lock(&a.layer)?,
        None => None,
    };
    if lock.is_none() && !run.attempts.is_empty() {
        bail!(
            "run {} is still going; discard its attempts once it ended",
            run.id
        );
    }
    let mut removed = 0;
    for a in &run.attempts {
        if a.status == "discarded" {
            continue;
        }
        if let Ok(layer) = AttemptLayer::open(std::path::Path::new(&a.layer)) {
            layer
                .discard()
                .with_context(|| format!("removing attempt {}'s layer", a.number))?;
        }
        store.discard_attempt(run.id, a.number)?;
        removed += 1;
    }
    println!(
        "run {}: {} discarded; the record stays (goat attempts list)",
        run.id,
        text::count(removed, "attempt")
    );
    Ok(Outcome::Ok)
}

/// Everything visible and writable but version-control metadata: the
/// check is the person's own command, held to the attempt's layer.
struct CheckRules;

impl goat_command::WorkspaceRules for CheckRules {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, name: &str) -> bool {
        goat_gate::PROTECTED_NAMES.contains(&name)
    }
}

pub fn attempt_check(args: AttemptCheckArgs) -> anyhow::Result<Outcome> {
    let workspace = std::env::current_dir().context("finding the attempt's workspace")?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut containment = goat_router::default_containment(&workspace, home.as_deref());
    containment.mode = goat_command::ContainmentMode::Landlock;
    let ran = goat_command::run(
        &containment,
        &CheckRules,
        &goat_command::CommandRequest {
            command: &args.command,
            cwd: None,
            timeout: Duration::from_secs(args.timeout),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "{}",
        json!({ "exit_code": ran.exit_code(), "output": ran.output.text })
    );
    Ok(Outcome::Ok)
}
