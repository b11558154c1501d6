//! The arguments each attempt's own `goat run` gets.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, bail};
use clap::CommandFactory;

use crate::commands::run::RunArgs;

/// The child's arguments: this run's, with the prompt read from stdin,
/// JSON Lines out, paths made absolute (the child starts in the
/// workspace), and the attempts' own flags left out.
pub(super) fn child_args(args: &RunArgs, workspace: &Path) -> anyhow::Result<Vec<OsString>> {
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
    ];
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut at = argv
        .iter()
        .position(|a| a == "run")
        .context("goat run's arguments")?;
    at += 1;
    // GOAT's own flags first: after a `--` they would be read as words of
    // the prompt.
    let mut out: Vec<OsString> = vec!["run".into(), "--output".into(), "jsonl".into()];
    out.extend(["--workspace".into(), workspace.as_os_str().to_owned()]);
    let db = crate::paths::store_path(args.turn.store.db.as_deref())?;
    out.extend(["--db".into(), db.resolved().as_os_str().to_owned()]);
    if let Some(p) = &args.turn.permissions.permissions {
        out.extend([
            "--permissions".into(),
            std::path::absolute(p)?.into_os_string(),
        ]);
    }
    if let Some(p) = &args.turn.engine.ca_cert {
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
        bail!("goat run needs a prompt");
    }
    Ok(out)
}
