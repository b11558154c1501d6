//! Slash commands: lines the chat handles itself, never sent to the model.
//!
//! # Which lines are commands
//!
//! A one-line prompt whose first word is `/` followed by a letter and then
//! only letters, digits, `-` or `_` (`/help`, `/mode read-only`). Every
//! other line is a prompt for the model, so `/usr/bin/env is missing` and
//! `/ 2` are sent as typed, and so is a pasted block of several lines. A
//! line beginning `//` is sent without its first `/` (`//help` sends
//! `/help`). An unknown `/word` prints the help and is not sent.
//!
//! # Adding a command
//!
//! One entry in [`COMMANDS`]: its name, what it takes, one line of help,
//! and its handler, a `fn(&mut ChatState<'_>, &str) -> Flow` given the
//! rest of the line. `/help` and Tab completion list it from there.

use std::io::Write;

use goat_gate::{self as gate, PermissionDb, Scope};
use goat_router::ApprovalMode;

use crate::session::Opened;
use crate::text::{GOAT_LINE, escape_controls};

/// What the chat does after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Back to the prompt.
    Continue,
    /// Leave the chat.
    Leave,
}

/// What a command may read and change: the session, where it prints, and
/// what runs a request to the engine (`/compact`) with Ctrl-C watched.
pub struct ChatState<'a> {
    pub opened: &'a Opened,
    pub out: &'a mut dyn Write,
    pub runtime: &'a tokio::runtime::Runtime,
    pub console: &'a std::sync::Arc<crate::terminal::Console>,
    /// The chat's own options, which `/attempts` gives each attempt.
    pub turn: &'a crate::args::TurnOptions,
    /// What `/verify` set.
    pub attempts: &'a mut super::attempts::AttemptsSettings,
}

/// One slash command.
pub struct SlashCommand {
    /// Its name, without the `/`.
    pub name: &'static str,
    /// What it takes after its name, for the help (empty for nothing).
    pub args: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Runs it with the rest of the line, trimmed.
    pub run: fn(&mut ChatState<'_>, &str) -> Flow,
}

/// Every slash command, in the order `/help` lists them.
pub const COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "help",
        args: "",
        help: "what you can type and the keys",
        run: help,
    },
    SlashCommand {
        name: "status",
        args: "",
        help: "model, engine, session, tokens, mode and the permission rules in force",
        run: status,
    },
    SlashCommand {
        name: "mode",
        args: "[ask|accept-edits|read-only]",
        help: "show or switch the approval mode",
        run: mode,
    },
    SlashCommand {
        name: "compact",
        args: "",
        help: "have the model summarise the conversation so far, to free the context window",
        run: compact,
    },
    SlashCommand {
        name: "diff",
        args: "",
        help: "what this session changed in the workspace, as a unified diff",
        run: diff,
    },
    SlashCommand {
        name: "undo",
        args: "[TURN]",
        help: "put back the files the last turn (or turn TURN) changed",
        run: undo,
    },
    SlashCommand {
        name: "attempts",
        args: "N PROMPT",
        help: "N attempts at PROMPT, each in its own layer; you pick the one that lands",
        run: super::attempts::attempts,
    },
    SlashCommand {
        name: "verify",
        args: "[CMD|none]",
        help: "show or set the check each attempt must pass (e.g. cargo test)",
        run: super::attempts::verify,
    },
    SlashCommand {
        name: "exit",
        args: "",
        help: "leave (as Ctrl-D does)",
        run: leave,
    },
    SlashCommand {
        name: "quit",
        args: "",
        help: "leave",
        run: leave,
    },
];

/// Each command's `/name`, for completion.
pub fn names() -> Vec<String> {
    COMMANDS.iter().map(|c| format!("/{}", c.name)).collect()
}

/// A line as the chat reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A slash command, known or not, with the rest of the line.
    Command { name: &'a str, rest: &'a str },
    /// A prompt for the model.
    Prompt(&'a str),
}

/// Whether `line` (already trimmed) is a command or a prompt; see the
/// module docs for the rule.
pub fn classify(line: &str) -> Line<'_> {
    if let Some(escaped) = line.strip_prefix("//") {
        return Line::Prompt(line.get(1..).map_or(escaped, |l| l));
    }
    let Some(after) = line.strip_prefix('/') else {
        return Line::Prompt(line);
    };
    if line.contains('\n') || !after.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Line::Prompt(line);
    }
    let end = after.find(char::is_whitespace).unwrap_or(after.len());
    let (name, rest) = after.split_at(end);
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Line::Command {
            name,
            rest: rest.trim(),
        }
    } else {
        Line::Prompt(line)
    }
}

/// Runs the command `name`, or says it is unknown and prints the help.
pub fn dispatch(state: &mut ChatState<'_>, name: &str, rest: &str) -> Flow {
    match COMMANDS.iter().find(|c| c.name == name) {
        Some(command) => (command.run)(state, rest),
        None => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}unknown command /{}; nothing was sent to the model (to send a line \
                 beginning with '/', begin it with '//')",
                escape_controls(name)
            );
            help(state, "")
        }
    }
}

/// The help text: commands, keys, the line rule.
pub fn help_text() -> String {
    let mut out = String::from("commands (never sent to the model):\n");
    for command in COMMANDS {
        let call = if command.args.is_empty() {
            format!("/{}", command.name)
        } else {
            format!("/{} {}", command.name, command.args)
        };
        out.push_str(&format!("  {call:<36} {}\n", command.help));
    }
    out.push_str(
        "keys:\n  Enter sends; Alt-Enter starts a new line in the same prompt; a paste is one \
         prompt\n  Up/Down recall earlier prompts; Tab completes a command\n  Ctrl-C cancels a \
         turn (twice quits); Ctrl-C or Ctrl-D at the prompt leaves\nlines: a line beginning \
         '//' is sent with one '/'; '/word' is a command; other lines go to the model\n",
    );
    out
}

fn help(state: &mut ChatState<'_>, _rest: &str) -> Flow {
    let _ = write!(state.out, "{}", help_text());
    Flow::Continue
}

fn leave(_state: &mut ChatState<'_>, _rest: &str) -> Flow {
    Flow::Leave
}

const ASK_MEANING: &str = "writes and commands no rule decides are asked about";

/// What each mode means, one line.
pub fn mode_meaning(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::AcceptEdits => {
            "the file tools' writes inside the workspace are allowed without asking; plugin writes and \
             commands are asked about; \
             deny rules and protected paths still win"
        }
        ApprovalMode::ReadOnly => "no writes and no commands; the model is told why",
        ApprovalMode::Ask => ASK_MEANING,
    }
}

fn mode(state: &mut ChatState<'_>, rest: &str) -> Flow {
    let switch = &state.opened.mode;
    if rest.is_empty() {
        let now = switch.get();
        let _ = writeln!(
            state.out,
            "{GOAT_LINE}mode {} ({}); switch with /mode ask, /mode accept-edits or /mode read-only",
            now.name(),
            mode_meaning(now)
        );
        return Flow::Continue;
    }
    match ApprovalMode::from_name(rest) {
        Some(mode) => {
            switch.set(mode);
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}mode {}: {}",
                mode.name(),
                mode_meaning(mode)
            );
        }
        None => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}'{}' is not a mode; use ask, accept-edits or read-only",
                escape_controls(rest)
            );
        }
    }
    Flow::Continue
}

fn compact(state: &mut ChatState<'_>, _rest: &str) -> Flow {
    let cancel = goat_engine::CancellationToken::new();
    // Ctrl-C cancels the summary as it cancels a turn.
    state.console.begin_turn(cancel.clone());
    let result = state
        .runtime
        .block_on(state.opened.shepherd.compact(&cancel));
    state.console.end_turn();
    let _ = match result {
        Ok(done) if done.summaries == 0 => writeln!(
            state.out,
            "{GOAT_LINE}nothing to compact: no turn since the last summary"
        ),
        Ok(done) => writeln!(
            state.out,
            "{GOAT_LINE}compacted {} into a summary the next requests carry instead; the turns stay \
             in the store (goat sessions show)",
            crate::text::count(done.turns, "turn")
        ),
        Err(goat_shepherd::TurnError::Cancelled) => {
            writeln!(
                state.out,
                "{GOAT_LINE}compacting was cancelled; nothing changed"
            )
        }
        Err(e) => writeln!(
            state.out,
            "{GOAT_LINE}error: could not compact, nothing changed: {}",
            crate::text::turn_failure(e)
        ),
    };
    Flow::Continue
}

fn diff(state: &mut ChatState<'_>, _rest: &str) -> Flow {
    let opened = state.opened;
    let shown = {
        let store = opened
            .store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        crate::commands::diff::session_diff(&store, &opened.session_id)
    };
    match shown {
        Ok(text) if text.is_empty() => {
            let _ = writeln!(state.out, "{GOAT_LINE}this session has changed no file");
        }
        Ok(text) => {
            let _ = write!(state.out, "{text}");
        }
        Err(e) => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}error: cannot show the session's changes: {}",
                escape_controls(&format!("{e:#}"))
            );
        }
    }
    Flow::Continue
}

fn undo(state: &mut ChatState<'_>, rest: &str) -> Flow {
    let turn = match goat_session::undo::parse_turn(rest) {
        Ok(turn) => turn,
        Err(why) => {
            let _ = writeln!(state.out, "{GOAT_LINE}{why}");
            return Flow::Continue;
        }
    };
    let opened = state.opened;
    // The chat holds the session's lock: nothing else drives it meanwhile.
    match goat_session::undo::undo_driven(&opened.store, &opened.session_id, turn) {
        Ok(report) => {
            let _ = write!(state.out, "{GOAT_LINE}{report}");
        }
        Err(e) => {
            let _ = writeln!(
                state.out,
                "{GOAT_LINE}error: nothing was undone: {}",
                escape_controls(&format!("{e:#}"))
            );
        }
    }
    Flow::Continue
}

fn status(state: &mut ChatState<'_>, _rest: &str) -> Flow {
    let text = status_text(state.opened);
    let _ = write!(state.out, "{text}");
    Flow::Continue
}

/// The `/status` lines.
pub fn status_text(opened: &Opened) -> String {
    let (turns, tokens) = {
        let store = opened
            .store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (
            store.session(&opened.session_id).map(|s| s.turns),
            store.session_tokens(&opened.session_id),
        )
    };
    let mode = opened.mode.get();
    let mut out = String::new();
    let mut line = |key: &str, value: &str| out.push_str(&format!("  {key:<10} {value}\n"));
    line("model", &escape_controls(&opened.model));
    line("engine", &escape_controls(&opened.engine_url));
    line("session", &opened.session_id);
    line("workspace", &opened.workspace.display().to_string());
    line(
        "turns",
        &turns.map_or_else(|e| format!("unknown ({e})"), |n| n.to_string()),
    );
    let tokens_read = tokens;
    let tokens = match &tokens_read {
        Ok(t) if t.unreported_rounds > 0 => format!(
            "{} prompt + {} completion ({} without usage from the engine)",
            t.prompt,
            t.completion,
            crate::text::count(
                usize::try_from(t.unreported_rounds).unwrap_or(usize::MAX),
                "round"
            )
        ),
        Ok(t) => format!("{} prompt + {} completion", t.prompt, t.completion),
        Err(e) => format!("unknown ({e})"),
    };
    line("tokens", &tokens);
    if let Ok(t) = &tokens_read
        && t.cache_reported_prompt > 0
    {
        // Issue 25: how much of the prompts the engine's cache served, of
        // the rounds where it said.
        line(
            "cache",
            &format!(
                "{} of {} prompt tokens served from the engine's prompt cache ({:.0}%)",
                t.cached,
                t.cache_reported_prompt,
                t.cached as f64 * 100.0 / t.cache_reported_prompt as f64
            ),
        );
    }
    let context = opened.shepherd.context_status();
    line(
        "context",
        &match (context.window, context.source) {
            (Some(window), source) => format!(
                "{} of {window} tokens used by the last request (window from {}){}",
                // The engine's count, as the turn's stats line says it;
                // the estimate only when the engine reported no usage.
                context.last_request_tokens.map_or_else(
                    || format!("about {} (estimated)", context.next_request_tokens),
                    |n| format!("{n} (as the engine counted them)"),
                ),
                source.map_or("unknown", |s| s.as_str()),
                context_notes(&context),
            ),
            (None, _) => "window not known yet (asked of the engine at the first turn)".to_owned(),
        },
    );
    line("mode", &format!("{} ({})", mode.name(), mode_meaning(mode)));
    let servers = opened.shepherd.mcp_status();
    if servers.is_empty() {
        line("MCP", "no servers trusted (goat mcp add, goat mcp trust)");
    }
    for (i, server) in servers.iter().enumerate() {
        line(if i == 0 { "MCP" } else { "" }, server);
    }
    let files = opened.instruction_files();
    if files.is_empty() {
        line("AGENTS.md", "none read");
    } else {
        for (i, file) in files.iter().enumerate() {
            let cut = if (file.used as u64) < file.bytes {
                format!(", {} used (cut at the cap)", file.used)
            } else {
                String::new()
            };
            line(
                if i == 0 { "AGENTS.md" } else { "" },
                &format!(
                    "{} ({} bytes{cut})",
                    escape_controls(&file.path.to_string_lossy()),
                    file.bytes
                ),
            );
        }
    }
    out.push_str(&rules_text(opened));
    out
}

/// What fitting did in this process, after the context line: requests cut
/// (older results elided down to the low-water mark, ADR-0083), and
/// summaries written.
fn context_notes(context: &goat_shepherd::ContextStatus) -> String {
    let count = |n: u64, noun| crate::text::count(usize::try_from(n).unwrap_or(usize::MAX), noun);
    let mut notes = String::new();
    if context.cuts > 0 {
        notes.push_str(&format!(
            "; {} cut to fit (older results elided)",
            count(context.cuts, "request")
        ));
    }
    match context.compactions {
        0 => {}
        1 => notes.push_str("; 1 summary written"),
        n => notes.push_str(&format!("; {n} summaries written")),
    }
    notes
}

/// The permission rules that apply in this session and workspace now.
fn rules_text(opened: &Opened) -> String {
    let rules = if opened.permissions_db.exists() {
        PermissionDb::open(&opened.permissions_db).and_then(|db| db.list())
    } else {
        Ok(Vec::new())
    };
    let rules = match rules {
        Ok(rules) => rules,
        Err(e) => return format!("  rules      cannot be read ({e})\n"),
    };
    let now = gate::now();
    let workspace = opened.workspace.to_str();
    let in_force: Vec<String> = rules
        .iter()
        .filter(|r| !r.is_expired(now))
        .filter(|r| r.workspace.is_none() || r.workspace.as_deref() == workspace)
        .filter(|r| match &r.scope {
            Scope::Persistent => true,
            Scope::Session(id) => *id == opened.session_id,
        })
        .map(|r| format!("    {}\n", escape_controls(&r.to_string())))
        .collect();
    if in_force.is_empty() {
        return "  rules      none (goat permissions list shows every rule)\n".to_owned();
    }
    format!(
        "  rules      {} in force (goat permissions list shows every rule):\n{}",
        in_force.len(),
        in_force.concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_lines_are_commands() {
        let command = |name, rest| Line::Command { name, rest };
        for (line, want) in [
            ("/help", command("help", "")),
            ("/mode read-only", command("mode", "read-only")),
            ("/frobnicate now", command("frobnicate", "now")),
            (
                "/usr/bin/env is missing",
                Line::Prompt("/usr/bin/env is missing"),
            ),
            ("/ 2 is a fraction", Line::Prompt("/ 2 is a fraction")),
            ("//help", Line::Prompt("/help")),
            ("//", Line::Prompt("/")),
            ("/help\nmore", Line::Prompt("/help\nmore")),
            ("/9lives", Line::Prompt("/9lives")),
            ("hello /help", Line::Prompt("hello /help")),
        ] {
            assert_eq!(classify(line), want, "{line:?}");
        }
    }

    #[test]
    fn every_command_is_in_the_help_and_completion() {
        let help = help_text();
        for command in COMMANDS {
            assert!(help.contains(&format!("/{}", command.name)), "{help}");
        }
        assert_eq!(names().len(), COMMANDS.len());
        assert!(help.contains("Alt-Enter"), "{help}");
    }
}
