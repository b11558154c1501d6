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
use std::sync::PoisonError;

use anyhow::{Context, bail};
use goat_shepherd::TurnError;
use goat_store::{RoundStatus, TurnRecord, TurnStatus};
use serde_json::{Value, json};

use crate::approval::{Pager, TerminalApprover};
use crate::args::TurnOptions;
use crate::printer::Printer;
use crate::session::{self, Opened};
use crate::style::Style;
use crate::terminal::{AtRest, Console, ConsoleAnswers, run_turn};
use crate::{Outcome, note};

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

pub fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let prompt = read_prompt(&args.prompt)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // At a terminal, one console reads the answers to approval questions
    // and Ctrl-C, so Ctrl-C during a question answers it with no.
    let console = if io::stdin().is_terminal() && io::stderr().is_terminal() {
        Some(Console::start(&runtime, AtRest::Exit, None)?)
    } else {
        None
    };
    let approver = console.as_ref().map(|console| {
        Box::new(TerminalApprover {
            answers: ConsoleAnswers(console.clone()),
            output: io::stderr(),
            style: Style::stderr(),
            pager: Pager::from_env(),
            width: crate::screen::stderr_columns(),
        }) as Box<dyn goat_shepherd::Approver>
    });
    let opened = session::for_turn(&args.turn, approver)?;
    let turns_before = opened.turn_count()?;
    // `_lock` keeps the session ours until this function returns.
    let Opened {
        shepherd,
        store,
        session_id,
        lock: _lock,
        ..
    } = opened;

    let mut printer = Printer::new(!args.json);
    let result = run_turn(
        console.as_deref(),
        &runtime,
        &shepherd,
        &prompt,
        &mut printer,
    );
    printer.finish(result.is_ok());
    // A failed turn's rounds spent tokens too: its stats so far.
    let stats = Some(
        result
            .as_ref()
            .map_or_else(|_| shepherd.last_turn_stats(), |s| s.stats),
    );
    if let Some(line) = stats.as_ref().and_then(crate::turn_stats::stats_line) {
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
    let result = match (result, &recorded) {
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
            crate::error(format_args!(
                "the turn failed: {}",
                crate::text::turn_failure(e)
            ));
            if !kept {
                note(format_args!(
                    "the engine was never reached, so session {session_id} was not kept"
                ));
            }
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
        let mut summary = summary_json(&session_id, &turn);
        summary["session_kept"] = Value::Bool(kept);
        summary["stats"] = stats
            .as_ref()
            .map_or(Value::Null, crate::turn_stats::stats_json);
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
