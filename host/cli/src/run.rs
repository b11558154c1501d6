//! `goat run`: one turn of the model, through the Shepherd.
//!
//! Everything that can be checked before the model is asked is checked
//! first, and is exit 2: the prompt, the workspace, where the store and the
//! permission database live (never inside the workspace), the engine
//! settings, the tools, the session to resume. Then the turn runs; from
//! there on the store records what happens, and a turn that fails or is
//! cancelled is exit 1.
//!
//! The answer streams to stdout as it arrives and tool activity goes to
//! stderr, one line per call, so `goat run ... > answer.md` keeps only the
//! answer. With `--json`, stdout is one JSON summary read back from the
//! store after the turn, and the answer is in it instead of streamed.

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use goat_engine::{CancellationToken, EngineClient, EngineConfig};
use goat_shepherd::gate::{Interactive, WritePolicy};
use goat_shepherd::{
    AppToolRouter, DEFAULT_MAX_ROUNDS, Routed, RouterConfig, Shepherd, TurnError, TurnEvent,
};
use goat_store::{CallStatus, RoundStatus, SessionInfo, Store, TurnRecord, TurnStatus};
use serde_json::{Value, json};

use crate::config::{Setting, Settings, Source, Writes};
use crate::console::{AtRest, Console, ConsoleAnswers, Spinner, Style, TerminalApprover};
use crate::{Outcome, note, paths, text, tools};

/// What GOAT says when ADR-0065's one recovery starts.
const RECOVERY_LINE: &str =
    "the model wrote a tool call as text; asking it once to use the structured format";

/// Longest tool result line shown on stderr, in characters: enough for a
/// denial's reason and its hint, short of a wall of text.
const RESULT_LINE_CHARS: usize = 300;

/// Exit status after a second Ctrl-C, the shell's convention for SIGINT.
const FORCED_QUIT_STATUS: i32 = 130;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The request for the model, or `-` to read it from stdin.
    #[arg(value_name = "PROMPT")]
    prompt: String,
    #[command(flatten)]
    turn: TurnOptions,
    /// Print a JSON summary of the turn to stdout afterwards, with the
    /// answer in it, instead of streaming the answer.
    #[arg(long)]
    json: bool,
}

/// What `goat run` and `goat chat` share: where, with which engine and
/// model, under which permissions, in which session.
#[derive(clap::Args)]
pub struct TurnOptions {
    /// The directory the tools may see (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The engine's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1
    /// (default: $GOAT_ENGINE_URL; when resuming, the session's engine;
    /// else `engine` in the config file).
    #[arg(long, value_name = "URL")]
    pub engine: Option<String>,
    /// The model name sent to the engine (default: $GOAT_MODEL; when
    /// resuming, the session's model; else `model` in the config file).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Read the engine's bearer key from this environment variable.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The store (default: $GOAT_DB, else $XDG_DATA_HOME/goat/goat.db or
    /// ~/.local/share/goat/goat.db).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// The permission database (default: permissions.db beside the store).
    #[arg(long, value_name = "FILE")]
    pub permissions: Option<PathBuf>,
    /// Let writing tools change files in the workspace where no deny rule
    /// forbids it (also GOAT_WRITES=allow, or writes = "allow" in the
    /// config file). Without it, a write is asked about at a terminal and
    /// otherwise needs an allow rule.
    #[arg(long)]
    pub allow_writes: bool,
    /// Most rounds (requests to the engine) a turn may take (default:
    /// $GOAT_MAX_ROUNDS, else the config file, else 24).
    #[arg(long, value_name = "N", value_parser = parse_max_rounds)]
    pub max_rounds: Option<usize>,
    /// Continue this session (its workspace must be this one) instead of
    /// starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

fn parse_max_rounds(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a turn needs at least 1 round".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A session ready for turns: its Shepherd, the store it records in.
pub(crate) struct Opened {
    pub shepherd: Shepherd,
    pub store: Arc<Mutex<Store>>,
    pub session_id: String,
    pub store_path: PathBuf,
    pub workspace: PathBuf,
    pub engine_url: String,
    pub model: String,
}

impl Opened {
    /// How many turns the session has recorded.
    pub(crate) fn turn_count(&self) -> anyhow::Result<i64> {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(store.session(&self.session_id)?.turns)
    }
}

/// Checks everything that can be checked before the model is asked (exit
/// 2 when something is wrong), then creates or resumes the session. With
/// an approver, writes no rule decides are asked of it; without one they
/// are denied.
pub(crate) fn open(
    opts: &TurnOptions,
    approver: Option<Box<dyn goat_shepherd::Approver>>,
) -> anyhow::Result<Opened> {
    let workspace = paths::workspace(opts.workspace.as_deref())?;
    let store_path = paths::store_path(opts.db.as_deref())?;
    paths::ensure_store_outside(&store_path, &workspace)?;
    let permissions_db = paths::permissions_path(opts.permissions.as_deref(), opts.db.as_deref())?;
    paths::ensure_permissions_outside(&permissions_db, &workspace)?;
    let settings = settings(opts)?;
    if let Some(config) = settings.file_in_use() {
        paths::ensure_config_outside(config, &workspace)?;
    }

    // A new session needs a usable engine now; say what is missing before
    // creating any file. A resumed one may take its settings from the
    // session, so that waits for the store.
    let fresh = match opts.session {
        None => Some(engine_with(&settings, None)?),
        Some(_) => None,
    };
    if let Some(id) = &opts.session
        && !store_path.exists()
    {
        bail!(
            "no session '{}': there is no store at {} yet",
            text::escape_controls(id),
            store_path.display()
        );
    }
    let mut store = Store::open(&store_path)?;
    let resumed = match &opts.session {
        Some(id) => Some(resumable(&store, id, &workspace)?),
        None => None,
    };
    let (engine, engine_url, model) = match fresh {
        Some(fresh) => fresh,
        None => engine_with(&settings, resumed.as_ref())?,
    };

    let (sandbox, tools) = tools::sandbox_and_tools(
        tools::Plugins::Approved {
            db: opts.db.as_deref(),
            workspace: Some(&workspace),
        },
        &settings.limits(),
    )?;
    paths::ensure_cache_outside(&sandbox, &workspace)?;
    paths::prepare_permissions(&permissions_db)?;

    let session_id = match resumed {
        Some(info) => {
            let interrupted = store.interrupt_pending(&info.id)?;
            note(format_args!(
                "resuming session {}; {interrupted} tool call(s) left pending by an earlier run \
                 marked interrupted",
                info.id
            ));
            info.id
        }
        None => {
            let id = store.create_session(&workspace, &engine_url, &model)?;
            note(format_args!(
                "session {id} (continue it with --session {id})"
            ));
            id
        }
    };
    let store = Arc::new(Mutex::new(store));

    // With a person at the terminal, a write no rule decides is asked of
    // them (once per call); without one it is denied. It never runs unasked.
    let router = AppToolRouter::new(
        Arc::new(sandbox),
        tools,
        RouterConfig {
            workspace: workspace.clone(),
            permissions_db,
            session_id: session_id.clone(),
            interactive: if approver.is_some() {
                Interactive::Yes
            } else {
                Interactive::No
            },
            writes: match settings.writes.value {
                Some(Writes::Allow) => WritePolicy::AllowAll,
                Some(Writes::Ask) | None => WritePolicy::Default,
            },
        },
    );
    let router = match approver {
        Some(approver) => router.with_approver(approver),
        None => router,
    };
    let shepherd = Shepherd::new(
        engine,
        router,
        store.clone(),
        session_id.clone(),
        system_prompt(&workspace),
        settings.max_rounds.value.unwrap_or(DEFAULT_MAX_ROUNDS),
    );
    Ok(Opened {
        shepherd,
        store,
        session_id,
        store_path,
        workspace,
        engine_url,
        model,
    })
}

pub fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let prompt = read_prompt(&args.prompt)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // At a terminal, one console reads the answers to approval questions
    // and Ctrl-C, so Ctrl-C during a question answers it with no.
    let console = if io::stdin().is_terminal() && io::stderr().is_terminal() {
        Some(Console::start(&runtime, AtRest::Exit)?)
    } else {
        None
    };
    let approver = console.as_ref().map(|console| {
        Box::new(TerminalApprover {
            answers: ConsoleAnswers(console.clone()),
            output: io::stderr(),
            style: Style::stderr(),
        }) as Box<dyn goat_shepherd::Approver>
    });
    let opened = open(&args.turn, approver)?;
    let turns_before = opened.turn_count()?;
    let Opened {
        shepherd,
        store,
        session_id,
        ..
    } = opened;

    let mut printer = Printer::new(!args.json);
    let result = match &console {
        Some(console) => turn_at_console(console, &runtime, &shepherd, &prompt, &mut printer),
        None => runtime.block_on(drive(&shepherd, &prompt, &mut printer)),
    };
    printer.finish(result.is_ok());

    // The store is the record: the summary is read back from it, and a turn
    // it never recorded did not start, which is a host problem (exit 2).
    let recorded = {
        let store = store.lock().unwrap_or_else(PoisonError::into_inner);
        store.turns(&session_id).map(|mut turns| {
            let new = usize::try_from(turns_before).map_or(0, |n| turns.len().saturating_sub(n));
            if new == 0 { None } else { turns.pop() }
        })
    };
    let result = match (result, &recorded) {
        (Err(e), Ok(None)) => {
            return Err(anyhow::Error::new(e).context("the turn could not start"));
        }
        (result, _) => result,
    };
    let outcome = match result {
        Ok(_) => Outcome::Ok,
        Err(TurnError::Cancelled) => {
            note(format_args!(
                "the turn was cancelled and is recorded as cancelled; continue with --session \
                 {session_id}"
            ));
            Outcome::Failed
        }
        Err(e) => {
            note(format_args!(
                "error: the turn failed: {:#}",
                anyhow::Error::new(e)
            ));
            Outcome::Failed
        }
    };
    if args.json {
        let turn = match recorded {
            Ok(Some(turn)) => turn,
            Ok(None) => bail!("the turn finished but the store has no record of it"),
            Err(e) => {
                return Err(anyhow::Error::new(e).context("reading the turn back from the store"));
            }
        };
        let summary = summary_json(&session_id, &turn);
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
    Ok(outcome)
}

/// Runs one turn with `console` watching Ctrl-C: the first cancels the
/// turn (and answers a waiting question with no), a second quits at once.
pub(crate) fn turn_at_console(
    console: &Console,
    runtime: &tokio::runtime::Runtime,
    shepherd: &Shepherd,
    prompt: &str,
    printer: &mut Printer,
) -> Result<goat_shepherd::TurnSummary, TurnError> {
    let cancel = CancellationToken::new();
    console.begin_turn(cancel.clone());
    let result = runtime.block_on(shepherd.run_turn(prompt, &cancel, &mut |event| {
        printer.event(event);
    }));
    console.end_turn();
    result
}

/// Runs the turn without a terminal (and in the demo); the first Ctrl-C
/// cancels it (the Shepherd stops after the step in progress and records
/// the turn as cancelled), a second quits at once.
pub(crate) async fn drive(
    shepherd: &Shepherd,
    prompt: &str,
    printer: &mut Printer,
) -> Result<goat_shepherd::TurnSummary, TurnError> {
    let cancel = CancellationToken::new();
    let mut on_event = |event| printer.event(event);
    let mut turn = pin!(shepherd.run_turn(prompt, &cancel, &mut on_event));
    // Polled before the turn (the select is biased), so the handler is in
    // place before the first request: a Ctrl-C is never the default
    // "kill now" once the turn has begun.
    let mut interrupt = pin!(tokio::signal::ctrl_c());
    let mut armed = true;
    let mut interrupts = 0u32;
    loop {
        tokio::select! {
            biased;
            signal = &mut interrupt, if armed => {
                if let Err(e) = signal {
                    note(format_args!("cannot catch Ctrl-C ({e}); it will end GOAT at once"));
                    armed = false;
                    continue;
                }
                interrupt.set(tokio::signal::ctrl_c());
                interrupts += 1;
                if interrupts == 1 {
                    note("cancelling: the turn stops after the step in progress (Ctrl-C again \
                          quits at once)");
                    cancel.cancel();
                } else {
                    // The store keeps the turn as running and any call as
                    // pending; resuming the session marks them interrupted.
                    note("quitting; resume the session to mark what was in progress as \
                          interrupted");
                    std::process::exit(FORCED_QUIT_STATUS);
                }
            }
            result = &mut turn => return result,
        }
    }
}

/// The prompt, from the argument or stdin for `-`; refusing an empty one.
fn read_prompt(arg: &str) -> anyhow::Result<String> {
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

/// The session to resume, if it exists and works in this workspace.
fn resumable(store: &Store, id: &str, workspace: &Path) -> anyhow::Result<SessionInfo> {
    let info = store.session(id).with_context(|| {
        format!(
            "cannot resume; `goat sessions list --db {}` shows the sessions",
            store.path().display()
        )
    })?;
    let stored = Path::new(&info.workspace);
    let same = stored == workspace || stored.canonicalize().is_ok_and(|c| c == workspace);
    if !same {
        bail!(
            "session {id} works in {}, not {}; run it there, or pass --workspace {}",
            text::escape_controls(&info.workspace),
            workspace.display(),
            text::escape_controls(&info.workspace)
        );
    }
    Ok(info)
}

/// The settings for a turn: the config file and environment, with this
/// command's flags on top.
fn settings(opts: &TurnOptions) -> anyhow::Result<Settings> {
    let mut settings = Settings::load()?;
    settings.apply_engine_flags(
        opts.engine.as_deref(),
        opts.model.as_deref(),
        opts.api_key_env.as_deref(),
    );
    settings.max_rounds.flag(opts.max_rounds, "--max-rounds");
    settings
        .writes
        .flag(opts.allow_writes.then_some(Writes::Allow), "--allow-writes");
    Ok(settings)
}

/// The engine client, its URL and the model. A flag or environment
/// variable wins; then, when resuming, what the session used; then the
/// config file. A missing one is named with every way to set it.
pub(crate) fn engine_with(
    settings: &Settings,
    resumed: Option<&SessionInfo>,
) -> anyhow::Result<(EngineClient, String, String)> {
    let pick = |setting: &Setting<String>, session: Option<&String>| {
        if setting.is_explicit() {
            setting.value.clone()
        } else {
            session.cloned().or_else(|| setting.value.clone())
        }
    };
    let url = pick(&settings.engine, resumed.map(|s| &s.engine_url)).context(
        "no engine URL: pass --engine URL, set GOAT_ENGINE_URL, or put engine = \"...\" in \
         the config file (e.g. http://127.0.0.1:8080/v1; `goat config show` says where it is)",
    )?;
    let model = pick(&settings.model, resumed.map(|s| &s.model)).context(
        "no model name: pass --model NAME, set GOAT_MODEL, or put model = \"...\" in the \
         config file",
    )?;
    let mut config = EngineConfig::new(url.clone(), model.clone());
    config.api_key = api_key(&settings.api_key_env)?;
    Ok((EngineClient::new(config)?, url, model))
}

/// The bearer key from the variable `api_key_env` names. The key itself
/// is never a flag or a config value: flags show up in `ps` and shell
/// history, and config files get shared.
fn api_key(var: &Setting<String>) -> anyhow::Result<Option<String>> {
    let Some(name) = var.value.as_deref() else {
        return Ok(None);
    };
    let from = match &var.source {
        Source::Flag(flag) => (*flag).to_owned(),
        other => format!("api_key_env ({other})"),
    };
    match std::env::var(name) {
        Ok(key) if !key.is_empty() => Ok(Some(key)),
        Ok(_) => bail!("{from} names {name}, but {name} is empty"),
        Err(std::env::VarError::NotPresent) => {
            bail!("{from} names {name}, but {name} is not set")
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            bail!("{from} names {name}, but {name} is not valid UTF-8")
        }
    }
}

/// Short and true: where the model is, how paths work, and that denials
/// and failures are real.
pub(crate) fn system_prompt(workspace: &Path) -> String {
    format!(
        "You are a coding assistant working in the workspace {}. Use the tools offered to read, \
         search and change files there. Every tool path is relative to the workspace root (for \
         example 'src/main.rs'); nothing outside the workspace can be reached. A call may be \
         denied by the user's permission settings or fail; its result says so, and then \
         nothing happened. Report what you did accurately, and never claim a change you did \
         not make.",
        workspace.display()
    )
}

/// Shows a turn as it happens.
pub(crate) struct Printer {
    /// Whether the answer goes to stdout (not with `--json`).
    stream_answer: bool,
    stdout_open: bool,
    stdout_tty: bool,
    /// Something of the answer was written, and whether it ended a line.
    wrote: bool,
    at_line_start: bool,
    /// A round began and has not written yet.
    new_round: bool,
    /// The arguments of the call in progress (calls run one at a time).
    arguments: Option<String>,
    /// Colour for GOAT's own lines on stderr; also whether a spinner may
    /// rewrite its line there.
    style: Style,
    /// Shown from the start of a round until the model's first text.
    spinner: Option<Spinner>,
    /// When stdout is not a terminal, the round's text so far: written
    /// once the round turns out to be an answer or comes with calls, and
    /// dropped when it was a tool call written as text, so a redirected
    /// answer never holds markup that did not run.
    pending: String,
}

impl Printer {
    pub(crate) fn new(stream_answer: bool) -> Self {
        Self {
            stream_answer,
            stdout_open: true,
            stdout_tty: io::stdout().is_terminal(),
            wrote: false,
            at_line_start: true,
            new_round: false,
            arguments: None,
            style: Style::stderr(),
            spinner: None,
            pending: String::new(),
        }
    }

    pub(crate) fn event(&mut self, event: TurnEvent) {
        match event {
            TurnEvent::RoundStarted { .. } => {
                self.flush_pending();
                self.new_round = true;
                self.stop_spinner();
                // Model load and prompt processing can take minutes; say
                // that GOAT is waiting, not stuck.
                if self.style.is_color() {
                    self.spinner = Some(Spinner::start("waiting for the model"));
                }
            }
            TurnEvent::Content(text) => {
                if !text.is_empty() {
                    self.stop_spinner();
                }
                self.answer(&text);
            }
            // Reasoning is the model's scratch work, not the answer; the
            // store keeps it.
            TurnEvent::Reasoning(_) => {
                if let Some(spinner) = &self.spinner {
                    spinner.relabel("the model is thinking");
                }
            }
            TurnEvent::CallStarted { arguments, .. } => {
                self.stop_spinner();
                self.flush_pending();
                self.arguments = Some(arguments);
            }
            TurnEvent::CallFinished { tool, routed } => {
                let arguments = self.arguments.take().unwrap_or_default();
                let line = call_line(&tool, &arguments, &routed);
                let line = match routed.status {
                    CallStatus::Ok | CallStatus::Pending => line,
                    CallStatus::Denied | CallStatus::Interrupted => self.style.yellow(&line),
                    CallStatus::Error => self.style.red(&line),
                };
                self.status(&line);
            }
            TurnEvent::Recovery { .. } => {
                self.stop_spinner();
                // On a terminal it was shown as it came; the recovery line
                // says what it was.
                self.pending.clear();
                let line = self.style.yellow(RECOVERY_LINE);
                self.status(&line);
            }
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.stop();
        }
    }

    fn answer(&mut self, text: &str) {
        if !self.stream_answer || !self.stdout_open || text.is_empty() {
            return;
        }
        if self.stdout_tty {
            self.emit(text);
        } else {
            self.pending.push_str(text);
        }
    }

    fn flush_pending(&mut self) {
        if !self.pending.is_empty() {
            let text = std::mem::take(&mut self.pending);
            self.emit(&text);
        }
    }

    fn emit(&mut self, text: &str) {
        let mut out = String::new();
        // Each round is a separate message; do not run them together.
        if self.new_round && self.wrote && !self.at_line_start {
            out.push('\n');
        }
        self.new_round = false;
        if self.stdout_tty {
            out.push_str(&text::escape_for_terminal(text));
        } else {
            // Redirected: the answer exactly as the model wrote it.
            out.push_str(text);
        }
        self.write_stdout(&out);
        self.wrote = true;
        self.at_line_start = text.ends_with('\n');
    }

    fn write_stdout(&mut self, text: &str) {
        let mut out = io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            // No one reads the answer any more. The turn goes on: stopping
            // halfway through the model's edits would be worse, and the
            // store keeps the answer.
            if e.kind() != io::ErrorKind::BrokenPipe {
                note(format_args!(
                    "cannot write the answer to stdout ({e}); the turn goes on and the store \
                     keeps it"
                ));
            }
            self.stdout_open = false;
        }
    }

    /// One line on stderr, starting on a fresh line when the answer shares
    /// the terminal.
    fn status(&mut self, line: &str) {
        if self.stdout_tty && self.stdout_open && self.wrote && !self.at_line_start {
            self.write_stdout("\n");
            self.at_line_start = true;
        }
        note(line);
    }

    /// Ends the answer with a newline. The last round's text is written
    /// only if the turn `completed`: a turn that failed (a second tool call
    /// written as text, a broken stream) or was cancelled has no answer to
    /// redirect; the store keeps what it said.
    pub(crate) fn finish(&mut self, completed: bool) {
        self.stop_spinner();
        if completed {
            self.flush_pending();
        } else {
            self.pending.clear();
        }
        if self.stdout_open && self.wrote && !self.at_line_start {
            self.write_stdout("\n");
            self.at_line_start = true;
        }
    }
}

/// `write_file(path="a.txt", content="hi") -> ok: Created 'a.txt' (2 bytes)`
fn call_line(tool: &str, arguments: &str, routed: &Routed) -> String {
    let result = match routed.status {
        // The result already says "denied: ...".
        CallStatus::Denied => routed
            .result
            .strip_prefix("denied: ")
            .unwrap_or(&routed.result),
        CallStatus::Ok | CallStatus::Error | CallStatus::Pending | CallStatus::Interrupted => {
            &routed.result
        }
    };
    let first = text::first_line(result, RESULT_LINE_CHARS);
    let status = routed.status.as_str();
    let summary = text::call_summary(tool, arguments);
    let mut line = if first.is_empty() {
        format!("{summary} -> {status}")
    } else {
        format!("{summary} -> {status}: {first}")
    };
    if routed.status == CallStatus::Ok
        && let Some(change) = change_summary(tool, arguments)
    {
        line.push_str(&format!(" [{change}]"));
    }
    line
}

/// What a successful write changed, in lines: `-2 +3 lines` for an edit,
/// `5 lines` for a whole file written.
fn change_summary(tool: &str, arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let lines = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(|t| t.lines().count())
    };
    match tool {
        "edit_file" => Some(format!(
            "-{} +{} lines",
            lines("old_string")?,
            lines("new_string")?
        )),
        "write_file" => Some(crate::console::count(lines("content")?, "line")),
        _ => None,
    }
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
                "decision": c.decision,
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
