//! `goat run --attempts N` (issue 42, ADR-0099): N attempts at one prompt,
//! each a `goat run` of its own (a session of its own) started inside a
//! kept layer of the workspace, where everything it writes stays; each
//! checked with `--verify` in a throwaway layer stacked on its own; the
//! first in order that passed landed through the command landing, recorded
//! in the run's own session so `goat undo` takes it back.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use goat_command::attempt::{AttemptLayer, attempts_base};
use goat_session::{AttemptEnded, AttemptsEnded, Event, EventKind, Outcome as RunOutcome};
use goat_store::Store;
use serde_json::{Value, json};

pub(crate) mod args;
mod land;
mod pick;

pub(crate) use args::{Sub, child_args};
pub(super) use land::{NotLanded, land};
use pick::pick_at_terminal;

use super::run::{RunArgs, read_prompt};
use crate::{Outcome, text};

/// The most of a check's output kept and shown.
const CHECK_OUTPUT_CHARS: usize = 4000;

/// How long a check may run.
const CHECK_TIMEOUT_SECS: u64 = 600;

/// What one attempt came to.
struct Ran {
    number: u32,
    session: Option<String>,
    outcome: Option<RunOutcome>,
    check: Option<(i64, String)>,
    files: Vec<String>,
}

/// What every attempt shares.
struct Shared {
    run: i64,
    base: PathBuf,
    workspace: PathBuf,
    exe: PathBuf,
    args: Vec<OsString>,
    logs: Option<PathBuf>,
    prompt: String,
    verify: Option<String>,
    jsonl: bool,
    store: Arc<Mutex<Store>>,
    out: Mutex<Lines>,
    cancel: Option<goat_engine::CancellationToken>,
}

impl Shared {
    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(goat_engine::CancellationToken::is_cancelled)
    }
}

/// The run's own lines: numbered, written to stdout (JSON Lines) and to
/// `--logs-dir`'s events.jsonl.
struct Lines {
    seq: u64,
    session: String,
    log: Option<std::fs::File>,
}

impl Lines {
    fn write(&mut self, jsonl: bool, line: &Value) {
        let text = line.to_string();
        if jsonl {
            let mut out = io::stdout().lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        }
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{text}");
        }
    }

    fn event(&mut self, jsonl: bool, kind: EventKind) {
        let event = Event {
            seq: self.seq,
            session_id: Some(self.session.clone()),
            turn: None,
            attempt: None,
            kind,
        };
        self.seq += 1;
        if let Ok(line) = serde_json::to_value(&event) {
            self.write(jsonl, &line);
        }
    }
}

/// One run of attempts, as `goat run --attempts` or the chat's
/// `/attempts` asks for it.
pub(crate) struct Plan<'a> {
    /// The workspace, engine, store and permissions (the run's or the
    /// chat's own).
    pub turn: &'a crate::args::TurnOptions,
    /// How many.
    pub attempts: u32,
    /// How many at once (default: the engine's slots, else 1).
    pub parallel: Option<u32>,
    /// The check.
    pub verify: Option<String>,
    /// The task.
    pub prompt: String,
    /// Whose command line each attempt's `goat run` arguments are read
    /// from ([`args::child_args`]).
    pub sub: Sub,
    /// `--logs-dir`.
    pub logs_dir: Option<PathBuf>,
    /// JSON Lines out.
    pub jsonl: bool,
    /// The end as one JSON object (`--json`).
    pub json_end: bool,
    /// `--allow-denials`.
    pub allow_denials: bool,
    /// Cancelled (the chat's Ctrl-C): no attempt starts after, and no
    /// check runs (the running attempts are cancelled by the same Ctrl-C,
    /// which reaches them at the terminal).
    pub cancel: Option<goat_engine::CancellationToken>,
}

/// How the person picks the attempt that lands: `None` headless (the
/// first that passed lands); else, at a terminal, what reads their answer
/// to the question it is given (`None`: end of input or Ctrl-C).
pub(crate) type Picker<'a> = Option<&'a mut dyn FnMut(&str) -> Option<String>>;

/// `goat run --attempts`.
pub(super) fn run(args: &RunArgs, jsonl: bool) -> anyhow::Result<Outcome> {
    if args.turn.session.is_some() {
        bail!(
            "--attempts starts a session for each attempt; it does not carry one on (leave out \
             --session)"
        );
    }
    let prompt = read_prompt(&args.prompt)?;
    let plan = Plan {
        turn: &args.turn,
        attempts: args.attempts.unwrap_or(1),
        parallel: args.attempts_parallel,
        verify: args.verify.clone(),
        prompt,
        sub: Sub::Run,
        logs_dir: args.logs_dir.clone(),
        jsonl,
        json_end: args.json || args.output == super::run::OutputFormat::Json,
        allow_denials: args.allow_denials,
        cancel: None,
    };
    let mut first = true;
    let mut stdin_line = |question: &str| {
        // What was typed while the attempts ran is not an answer.
        if std::mem::take(&mut first) {
            let _ = rustix::termios::tcflush(io::stdin(), rustix::termios::QueueSelector::IFlush);
        }
        let mut err = io::stderr().lock();
        let _ = write!(err, "{question}");
        let _ = err.flush();
        let mut line = String::new();
        match io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    };
    let at_terminal = io::stdin().is_terminal() && io::stderr().is_terminal();
    let picker: Picker<'_> = if at_terminal {
        Some(&mut stdin_line)
    } else {
        None
    };
    Ok(Outcome::Code(run_plan(&plan, picker)?.exit_code))
}

/// Runs the attempts, checks them, lands the one picked (headless, the
/// first that passed), and says how the run ended.
pub(crate) fn run_plan(plan: &Plan<'_>, picker: Picker<'_>) -> anyhow::Result<AttemptsEnded> {
    let attempts = plan.attempts;
    // By default as many at once as the engine serves (llama-server says
    // its slots); one at a time where it does not say.
    let parallel = match plan.parallel {
        Some(k) => k,
        None => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(goat_session::engine_slots(&plan.turn.open_options()))
            .unwrap_or(1),
    }
    .clamp(1, attempts);
    let prompt = plan.prompt.clone();
    let prepared = goat_session::direct::prepare(
        &goat_session::direct::DirectOptions {
            workspace: plan.turn.workspace.clone(),
            db: plan.turn.store.db.clone(),
            permissions: plan.turn.permissions.permissions.clone(),
            tools: Some(Vec::new()),
            ..Default::default()
        },
        &crate::stderr_note,
    )?;
    let workspace = prepared.workspace().to_owned();
    let exe = own_binary(&workspace)?;
    let base = attempts_base(&prepared.command_containment()?)
        .map_err(|e| anyhow::anyhow!("{}", e))
        .context("finding where attempts' layers can be kept")?;
    private_dir(&base)?;
    can_make_layers(&base, &workspace)?;
    let session = prepared.open_for("attempts", "goat run --attempts", None)?;
    let permissions = match &plan.turn.permissions.permissions {
        Some(p) => Some(std::path::absolute(p)?.to_string_lossy().into_owned()),
        None => None,
    };
    let run = {
        let mut store = session.store.lock().unwrap_or_else(PoisonError::into_inner);
        store.start_attempt_run(
            &session.session_id,
            (&workspace.to_string_lossy(), permissions.as_deref()),
            &prompt,
            plan.verify.as_deref(),
        )?
    };
    // Named by the run's own session too: another store using the same
    // layers directory never meets these.
    let run_dir = base.join(format!("run-{run}-{}", session.session_id));
    rustix::fs::mkdir(&run_dir, rustix::fs::Mode::from_raw_mode(0o700))
        .with_context(|| format!("making {}", run_dir.display()))?;
    // Held for the whole run: `goat attempts land` and `discard` wait for
    // it to end.
    let _run_lock =
        lock_run(&run_dir)?.context("another process holds this run's lock, which it just made")?;
    let logs = match &plan.logs_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("making the logs directory {}", dir.display()))?;
            Some(std::path::absolute(dir)?)
        }
        None => None,
    };
    let log = match &logs {
        Some(dir) => Some(
            std::fs::File::create(dir.join("events.jsonl"))
                .with_context(|| format!("writing {}", dir.join("events.jsonl").display()))?,
        ),
        None => None,
    };
    let shared = Shared {
        run,
        base: run_dir,
        workspace: workspace.clone(),
        exe,
        args: child_args(plan.turn, &workspace, plan.sub)?,
        logs,
        prompt,
        verify: plan.verify.clone(),
        jsonl: plan.jsonl,
        store: session.store.clone(),
        out: Mutex::new(Lines {
            seq: 0,
            session: session.session_id.clone(),
            log,
        }),
        cancel: plan.cancel.clone(),
    };
    let next = AtomicU32::new(1);
    let results: Mutex<Vec<Ran>> = Mutex::new(Vec::new());
    let failures: Mutex<Vec<anyhow::Error>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..parallel {
            scope.spawn(|| {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n > attempts || shared.cancelled() {
                        break;
                    }
                    match attempt(&shared, n) {
                        Ok(ran) => results
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(ran),
                        Err(e) => failures
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(e.context(format!("attempt {n}"))),
                    }
                }
            });
        }
    });
    if let Some(e) = failures
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .next()
    {
        return Err(e);
    }
    let mut ran = results.into_inner().unwrap_or_else(PoisonError::into_inner);
    ran.sort_by_key(|r| r.number);
    let verified = shared.verify.is_some();
    let passed: Vec<&Ran> = ran.iter().filter(|r| passes(r, verified)).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut landed = None;
    let mut files_changed = Vec::new();
    let mut outcome = if shared.cancelled() {
        RunOutcome::Cancelled
    } else {
        RunOutcome::NoAttemptPassed
    };
    let mut half_landed = false;
    // At a terminal the person sees each attempt and picks; headless, the
    // first in order that passed and lands (one whose changes the rules
    // refuse is said, and the next is tried).
    let candidates: Vec<&Ran> = if shared.cancelled() {
        crate::note(
            "the attempts were cancelled, so none lands; goat attempts list shows each, and goat \
             attempts land N lands one",
        );
        Vec::new()
    } else if let Some(read_line) = picker {
        let default = passed.first().map(|r| r.number);
        match pick_at_terminal(&shared, &ran, default, read_line)? {
            Some(n) => ran.iter().filter(|r| r.number == n).collect(),
            None => {
                crate::note("no attempt lands, as you chose; goat attempts land N lands one later");
                if !passed.is_empty() {
                    outcome = RunOutcome::Completed;
                }
                Vec::new()
            }
        }
    } else {
        passed.clone()
    };
    for r in candidates {
        let n = r.number;
        let layer = AttemptLayer::open(&shared.base.join(n.to_string()))?;
        let call = match land(&runtime, &session.calls, (run, n), &layer, &workspace, None) {
            Ok(call) => call,
            // Nothing was tried (its layer could not be copied or read):
            // said, and the next that passed is tried.
            Err(e) if e.downcast_ref::<NotLanded>().is_some() => {
                crate::note(format!(
                    "attempt {n} passed, and did not land: {}",
                    text::escape_controls(&format!("{e:#}"))
                ));
                outcome = RunOutcome::CompletedWithDenials;
                continue;
            }
            Err(e) => return Err(e),
        };
        if call.status == goat_store::CallStatus::Ok {
            landed = Some(n);
            files_changed = call.changes.iter().map(|c| c.path.clone()).collect();
            outcome = r.outcome.unwrap_or(RunOutcome::Completed);
            break;
        }
        // A landing that failed part-way left the workspace changed: no
        // other lands on top of it.
        if call.status == goat_store::CallStatus::Error {
            crate::note(format!(
                "attempt {n} passed, and its landing failed part-way: {}",
                text::escape_controls(call.result.trim())
            ));
            outcome = RunOutcome::HostError;
            half_landed = true;
            break;
        }
        crate::note(format!(
            "attempt {n} passed, and did not land: {}",
            text::escape_controls(call.result.trim())
        ));
        outcome = RunOutcome::CompletedWithDenials;
    }
    // Passed, and none landed (but as the person chose): never a
    // success, whatever --allow-denials says of denials.
    let exit_code = match landed {
        None if !passed.is_empty()
            && !matches!(
                outcome,
                RunOutcome::Completed | RunOutcome::Cancelled | RunOutcome::HostError
            ) =>
        {
            RunOutcome::CompletedWithDenials.exit_code(false)
        }
        _ => outcome.exit_code(plan.allow_denials),
    };
    let ended = AttemptsEnded {
        run,
        outcome,
        exit_code,
        attempts: ran
            .iter()
            .map(|r| AttemptEnded {
                attempt: r.number,
                session_id: r.session.clone(),
                outcome: r.outcome,
                passed: r.check.as_ref().map(|c| c.0 == 0),
                files_changed: r.files.clone(),
            })
            .collect(),
        passed: u32::try_from(passed.len()).unwrap_or(u32::MAX),
        landed,
        files_changed,
    };
    say_end(&shared, &ended, plan.json_end, half_landed);
    shared
        .out
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .event(plan.jsonl, EventKind::AttemptsCompleted(ended.clone()));
    Ok(ended)
}

/// Whether `ran` is one that may land: its check passed, or without a
/// check, its turn completed.
fn passes(ran: &Ran, verified: bool) -> bool {
    // An attempt that never got to work (an engine failure, a crash) left
    // the workspace as it was: a check the workspace already passes says
    // nothing of it.
    let completed = matches!(
        ran.outcome,
        Some(RunOutcome::Completed | RunOutcome::CompletedWithDenials)
    );
    completed && (!verified || ran.check.as_ref().is_some_and(|c| c.0 == 0))
}

/// GOAT's own binary, which every attempt and check runs: refused when it
/// lies in the workspace, where an attempt could replace it in its layer
/// before its check runs it.
fn own_binary(workspace: &Path) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("finding GOAT's own binary")?;
    if exe.starts_with(workspace) {
        bail!(
            "GOAT's binary ({}) is inside the workspace, where an attempt could replace it \
             before its check runs it; run --attempts with a goat installed outside the \
             workspace",
            exe.display()
        );
    }
    Ok(exe)
}

/// Makes `dir` (mode 0700) if it is missing, and refuses one that is a
/// link, is not the user's own, or others may read or write: attempts'
/// layers are kept there.
fn private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    match rustix::fs::mkdir(dir, rustix::fs::Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(e).with_context(|| format!("making {}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir()
        || meta.uid() != rustix::process::geteuid().as_raw()
        || meta.mode() & 0o077 != 0
    {
        bail!(
            "{} is not a private directory of this user's (a link, another's, or open to \
             others); attempts' layers are kept there, so GOAT will not use it: remove it, or \
             set commands.layers_dir",
            dir.display()
        );
    }
    Ok(())
}

/// Takes run directory `dir`'s lock, if no other process holds it.
pub(super) fn lock_run(dir: &Path) -> anyhow::Result<Option<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("lock"))
        .with_context(|| format!("opening {}", dir.join("lock").display()))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(file)),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e).context("locking the run"),
    }
}

/// Refused, saying why, where no layer can be entered: attempts are never
/// run with less than their own view of the workspace.
fn can_make_layers(base: &Path, workspace: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(base).with_context(|| format!("making {}", base.display()))?;
    let probe = AttemptLayer::create(&base.join(format!("probe-{}", std::process::id())))?;
    let entered = probe
        .command(workspace, "/bin/true")
        .and_then(|mut c| c.stdout(Stdio::null()).stderr(Stdio::null()).status());
    let _ = probe.discard();
    match entered {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => bail!(
            "--attempts needs a view of the workspace of its own (a mount namespace with an \
             overlay), which cannot be made here ({status}); attempts are not run with Landlock \
             alone, which would let them write the real workspace"
        ),
        Err(e) => bail!(
            "--attempts needs a view of the workspace of its own (a mount namespace with an \
             overlay), which cannot be made here ({e}); attempts are not run with Landlock \
             alone, which would let them write the real workspace"
        ),
    }
}

/// One attempt: its layer made, its `goat run` started inside it, its
/// lines passed on with its number, its check run, its end recorded.
fn attempt(shared: &Shared, n: u32) -> anyhow::Result<Ran> {
    let layer = AttemptLayer::create(&shared.base.join(n.to_string()))
        .context("making the attempt's layer")?;
    shared
        .store
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .add_attempt(shared.run, n, &layer.dir().to_string_lossy())?;
    let mut args = shared.args.clone();
    if let Some(logs) = &shared.logs {
        args.extend([
            "--logs-dir".into(),
            logs.join(format!("attempt-{n}")).into_os_string(),
        ]);
    }
    let stderr = std::fs::File::create(layer.dir().join("stderr.log"))?;
    let mut child = layer
        .command(&shared.workspace, &shared.exe)?
        .args(&args)
        // A command's own view needs its change layer on the workspace's
        // mount; inside an attempt, the attempt's layer is that place.
        .env("GOAT_COMMANDS_CONTAINMENT", "landlock")
        .env(super::run::ATTEMPT_ENV, format!("{}:{n}", shared.run))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map(Reaped)
        .context("starting the attempt")?;
    let child = &mut child.0;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(shared.prompt.as_bytes())?;
    }
    let mut session = None;
    let mut last: Option<Value> = None;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let Ok(mut value) = serde_json::from_str::<Value>(&line?) else {
                continue;
            };
            if value["type"] == "session.started"
                && let Some(id) = value["session_id"].as_str()
            {
                session = Some(id.to_owned());
                shared
                    .store
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .attempt_session(shared.run, n, id)?;
            }
            if let Some(map) = value.as_object_mut() {
                map.insert("attempt".to_owned(), json!(n));
            }
            shared
                .out
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .write(shared.jsonl, &value);
            last = Some(value);
        }
    }
    let status = child.wait()?;
    let outcome = last
        .as_ref()
        .and_then(|l| serde_json::from_value::<RunOutcome>(l["outcome"].clone()).ok());
    let files: Vec<String> = layer
        .pending(&shared.workspace)
        .map(|p| p.set.changes.iter().map(|c| c.path.clone()).collect())
        .unwrap_or_default();
    let check = match &shared.verify {
        Some(cmd) if !shared.cancelled() => Some(check(shared, &layer, cmd)?),
        _ => None,
    };
    shared
        .store
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .end_attempt(
            shared.run,
            n,
            (
                outcome.map(RunOutcome::as_str),
                status.code().map(i64::from),
            ),
            check.as_ref().map(|(code, out)| (*code, out.as_str())),
        )?;
    if let Some((code, output)) = &check {
        shared
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .event(
                shared.jsonl,
                EventKind::AttemptChecked {
                    attempt: n,
                    passed: *code == 0,
                    exit_code: i32::try_from(*code).ok(),
                    output: output.clone(),
                },
            );
    }
    // An attempt that said no outcome failed before its turn: what it
    // said on stderr is why.
    let said = match outcome {
        Some(o) => o.as_str().to_owned(),
        None => {
            let stderr =
                std::fs::read_to_string(layer.dir().join("stderr.log")).unwrap_or_default();
            format!(
                "ended without an outcome ({}; its stderr is kept in {})",
                text::escape_controls(stderr.trim().lines().last().unwrap_or("nothing said")),
                layer.dir().join("stderr.log").display()
            )
        }
    };
    crate::note(format!(
        "attempt {n}: {said}; {}; {}",
        match &check {
            Some((0, _)) => "check passed".to_owned(),
            Some((code, _)) => format!("check failed (exit {code})"),
            None => "no check".to_owned(),
        },
        text::count(files.len(), "changed file")
    ));
    Ok(Ran {
        number: n,
        session,
        outcome,
        check,
        files,
    })
}

/// A child that is killed and waited for if it is left running (an error
/// on the way out of [`attempt`]).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Runs the check in a throwaway layer stacked on `layer`: its exit code
/// (-1 when it did not exit on its own) and the end of its output.
fn check(shared: &Shared, layer: &AttemptLayer, cmd: &str) -> anyhow::Result<(i64, String)> {
    let scratch = AttemptLayer::create(&layer.dir().join("check"))?;
    let out = scratch
        .command_over(layer, &shared.workspace, &shared.exe)?
        .args(["attempt-check", "--timeout"])
        .arg(CHECK_TIMEOUT_SECS.to_string())
        .arg("--")
        .arg(cmd)
        .stdin(Stdio::null())
        .output()
        .context("running the check");
    let _ = scratch.discard();
    let out = out?;
    let said: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let code = said["exit_code"].as_i64().unwrap_or(-1);
    let mut output = said["output"].as_str().map_or_else(
        || String::from_utf8_lossy(&out.stderr).into_owned(),
        str::to_owned,
    );
    if output.chars().count() > CHECK_OUTPUT_CHARS {
        let skip = output.chars().count() - CHECK_OUTPUT_CHARS;
        output = output.chars().skip(skip).collect();
    }
    Ok((code, output))
}

/// The end, as text or one JSON object (JSON Lines end with the event).
fn say_end(shared: &Shared, ended: &AttemptsEnded, json: bool, half_landed: bool) {
    if shared.jsonl {
        return;
    }
    let mut out = io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string(ended).unwrap_or_default());
        return;
    }
    match ended.landed {
        Some(n) => {
            let _ = writeln!(
                out,
                "attempt {n} of {} landed (run {}): {}; goat undo takes it back, goat attempts \
                 list shows the others",
                ended.attempts.len(),
                ended.run,
                if ended.files_changed.is_empty() {
                    "nothing changed".to_owned()
                } else {
                    text::escape_controls(&ended.files_changed.join(", "))
                }
            );
        }
        None if half_landed => {
            let _ = writeln!(
                out,
                "no attempt landed: a landing failed part-way and could not take all its steps \
                 back, so some paths hold what it left; goat sessions show {} lists which",
                shared
                    .out
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .session
            );
        }
        None => {
            let _ = writeln!(
                out,
                "no attempt landed ({} of {} completed its turn and passed); the workspace is \
                 as it was, goat attempts list shows every attempt's changes, and goat attempts \
                 land N lands one",
                ended.passed,
                ended.attempts.len()
            );
        }
    }
}
