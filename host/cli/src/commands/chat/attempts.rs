//! The chat's `/attempts N PROMPT` and `/verify [CMD]` (issue 42,
//! ADR-0099): several attempts at one task, each a `goat run` of its own in
//! its own layer of the workspace, run as `goat run --attempts` runs them,
//! with the chat's engine, store, permissions and approval mode as they are
//! now. Each attempt's outcome, check and diff are shown and the person
//! picks the one that lands (headless, the first that passed).

use std::io::{self, IsTerminal};

use goat_router::ApprovalMode;

use super::slash::{ChatState, Flow};
use crate::approval::Answers;
use crate::commands::run_attempts::{Plan, Sub, run_plan};
use crate::terminal::{ConsoleAnswers, Input};
use crate::text::{GOAT_LINE, escape_controls};

/// The most attempts one `/attempts` makes (as `--attempts`).
const MAX_ATTEMPTS: u32 = 16;

const USAGE: &str = "/attempts N PROMPT makes N attempts (1 to 16) at PROMPT, each in its own \
                     layer of the workspace; /verify CMD sets the check each must pass";

/// `/attempts N PROMPT`.
pub fn attempts(state: &mut ChatState<'_>, rest: &str) -> Flow {
    let (count, prompt) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let prompt = prompt.trim();
    let count = match count.parse::<u32>() {
        Ok(n) if (1..=MAX_ATTEMPTS).contains(&n) && !prompt.is_empty() => n,
        _ => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}'{}' is not a number of attempts and a prompt; {USAGE}",
                escape_controls(rest)
            );
            return Flow::Continue;
        }
    };
    let mode = state.opened.mode.get();
    match mode {
        ApprovalMode::Ask if !state.turn.allow_writes => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}attempts run on their own, so nothing is asked in them: a write no \
                 rule allows is refused (/mode accept-edits lets the file tools write in them)"
            );
        }
        ApprovalMode::ReadOnly => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}the chat is read-only, and so are its attempts: they can change \
                 nothing (/mode accept-edits lets the file tools write in them)"
            );
        }
        _ => {}
    }
    match &state.attempts.verify {
        Some(check) => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}{count} attempts, each checked with: {}",
                escape_controls(check)
            );
        }
        None => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}{count} attempts, with no check (/verify CMD sets one): the first \
                 that completes is offered first"
            );
        }
    }
    // Ctrl-C while they run cancels them, as it cancels a turn: the
    // running attempts' own turns (the terminal's Ctrl-C reaches them),
    // and no attempt or check starts after; a second quits, as in a turn.
    let cancel = goat_engine::CancellationToken::new();
    let plan = Plan {
        turn: state.turn,
        attempts: count,
        parallel: None,
        verify: state.attempts.verify.clone(),
        prompt: prompt.to_owned(),
        sub: Sub::Chat(mode),
        logs_dir: None,
        jsonl: false,
        json_end: false,
        allow_denials: false,
        cancel: Some(cancel.clone()),
    };
    let console = state.console;
    console.begin_turn(cancel);
    // The pick is asked as an approval is, within the turn: a Ctrl-C
    // answers it with none, and is not taken for leaving the chat.
    let mut answers = ConsoleAnswers(console.clone());
    let mut first = true;
    let mut ask = |question: &str| {
        // What was typed while the attempts ran is not an answer.
        if std::mem::take(&mut first) {
            answers.discard_typeahead();
        }
        eprint!("{question}");
        match answers.next() {
            Input::Line(line) => Some(line),
            Input::Eof | Input::Interrupt => None,
        }
    };
    let at_terminal = io::stdin().is_terminal() && io::stderr().is_terminal();
    let ended = run_plan(&plan, if at_terminal { Some(&mut ask) } else { None });
    console.end_turn();
    match ended {
        Ok(ended) => {
            if ended.landed.is_some() {
                let _ = writeln!(
                    state.out,
                    "{GOAT_LINE}the landing is a session of its own: goat undo (in a shell) \
                     takes it back, /undo here does not; goat attempts land N puts another in \
                     its place. The model here is not told what changed"
                );
            }
        }
        Err(e) => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}the attempts stopped: {}; goat attempts list shows what each did",
                escape_controls(&format!("{e:#}"))
            );
        }
    }
    Flow::Continue
}

/// What `/attempts` keeps across commands.
#[derive(Debug, Default)]
pub struct AttemptsSettings {
    /// The check each attempt must pass, as a shell command line.
    pub verify: Option<String>,
}

/// `/verify [CMD|none]`: show, set or clear the check.
pub fn verify(state: &mut ChatState<'_>, rest: &str) -> Flow {
    let said = match rest {
        "" => match &state.attempts.verify {
            Some(check) => format!("attempts are checked with: {}", escape_controls(check)),
            None => "attempts have no check; /verify CMD sets one".to_owned(),
        },
        "none" => {
            state.attempts.verify = None;
            "attempts have no check now".to_owned()
        }
        check => {
            state.attempts.verify = Some(check.to_owned());
            format!(
                "each attempt is checked with: {} (contained in its layer, network closed; exit \
                 0 passes)",
                escape_controls(check)
            )
        }
    };
    let _ = writeln!(state.out, "{GOAT_LINE}{said}");
    Flow::Continue
}
