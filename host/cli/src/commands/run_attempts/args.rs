//! The arguments each attempt's own `goat run` gets.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, bail};
use clap::CommandFactory;

use crate::args::TurnOptions;

/// Whose command line the attempts' arguments are read from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Sub {
    /// `goat run --attempts`: its flags, and its prompt (read from stdin).
    Run,
    /// The chat's `/attempts`: `goat chat`'s flags (all of them `goat
    /// run`'s too), no session carried on, and the chat's approval mode
    /// as it is now.
    Chat(goat_router::ApprovalMode),
}

/// The child's arguments: this run's (or this chat's), with the prompt
/// read from stdin, JSON Lines out, paths made absolute (the child starts
/// in the workspace), and the attempts' own flags left out.
pub(crate) fn child_args(
    turn: &TurnOptions,
    workspace: &Path,
    sub: Sub,
) -> anyhow::Result<Vec<OsString>> {
    let cli = crate::Cli::command();
    let run = cli
        .find_subcommand("run")
        .context("--attempts is a flag of goat run")?;
    // Which options take a value, by every name they are spelt with.
    let mut valued: Vec<String> = Vec::new();
    for arg in run
        .get_arguments()
        .filter(|a| a.get_action().takes_values())
    {
        valued.extend(
            arg.get_long_and_visible_aliases()
                .into_iter()
                .flatten()
                .map(|l| format!("--{l}")),
        );
        valued.extend(
            arg.get_short_and_visible_aliases()
                .into_iter()
                .flatten()
                .map(|c| format!("-{c}")),
        );
    }
    // Left out, the child gets its own: the attempts' flags, the output,
    // the logs, and the paths (made absolute below).
    let left_out = [
        "--attempts",
        "--attempts-parallel",
        "--verify",
        "--output",
        "--json",
        "--logs-dir",
        "--workspace",
        "--db",
        "--permissions",
        "--ca-cert",
        // Each attempt a session of its own, in the mode given below.
        "--session",
        "--mode",
    ];
    let name = match sub {
        Sub::Run => "run",
        Sub::Chat(_) => "chat",
    };
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut at = argv
        .iter()
        .position(|a| a == name)
        .with_context(|| format!("goat {name}'s arguments"))?;
    at += 1;
    // GOAT's own flags first: after a `--` they would be read as words of
    // the prompt.
    let mut out: Vec<OsString> = vec!["run".into(), "--output".into(), "jsonl".into()];
    out.extend(["--workspace".into(), workspace.as_os_str().to_owned()]);
    let db = crate::paths::store_path(turn.store.db.as_deref())?;
    out.extend(["--db".into(), db.resolved().as_os_str().to_owned()]);
    let mode = match sub {
        Sub::Run => turn.mode,
        Sub::Chat(mode) => Some(mode),
    };
    if let Some(mode) = mode {
        out.extend(["--mode".into(), mode.name().into()]);
    }
    if let Some(p) = &turn.permissions.permissions {
        out.extend([
            "--permissions".into(),
            std::path::absolute(p)?.into_os_string(),
        ]);
    }
    if let Some(p) = &turn.engine.ca_cert {
        out.extend(["--ca-cert".into(), std::path::absolute(p)?.into_os_string()]);
    }
    let mut prompt_seen = false;
    let mut rest_positional = false;
    while at < argv.len() {
        let arg = &argv[at];
        let word = arg.to_string_lossy();
        at += 1;
        let positional = rest_positional || word == "-" || !word.starts_with('-');
        if positional {
            if !prompt_seen {
                prompt_seen = true;
                out.push("-".into());
            } else {
                out.push(arg.clone());
            }
            continue;
        }
        if word == "--" {
            rest_positional = true;
            out.push(arg.clone());
            continue;
        }
        let (name, attached) = match word.split_once('=') {
            Some((name, _)) => (name.to_owned(), true),
            None => (word.clone().into_owned(), false),
        };
        let takes_value = valued.contains(&name) && !attached;
        let value = if takes_value {
            at += 1;
            argv.get(at - 1).cloned()
        } else {
            None
        };
        if left_out.contains(&name.as_str()) {
            continue;
        }
        out.push(arg.clone());
        out.extend(value);
    }
    if !prompt_seen {
        match sub {
            Sub::Run => bail!("goat run needs a prompt"),
            // The chat's command line has none: the prompt is typed.
            Sub::Chat(_) => out.push("-".into()),
        }
    }
    Ok(out)
}
