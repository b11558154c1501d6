//! `goat hooks add | list | show | trust | remove`: programs the person
//! runs at an event of every tool call (docs/hooks.md, ADR-0098).
//!
//! The list is one file beside the store (`goat_hooks::Registry`), never
//! in a workspace. Adding a hook pins it: the hash of its definition and
//! of every file it runs. A hook whose pins no longer hold is suspended,
//! and denies the calls it matches, until `trust` pins it again.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use goat_hooks::{Event, HookEntry, Registry, pin};
use serde_json::json;

use crate::args::DbArg;
use crate::{Outcome, text};

/// `goat hooks ...`.
#[derive(Subcommand)]
pub enum HooksCommand {
    /// Add a hook: the program after `--` (or a component) runs at EVENT,
    /// given Claude Code's JSON, contained: before a call with the
    /// workspace read-only, after one with what it changes landing as a
    /// change set. It is pinned to the bytes of every file it runs now.
    Add(AddArgs),
    /// The hooks, each with whether it is trusted or suspended.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// One hook: what it runs, its pins, and whether they hold.
    Show {
        /// The hook.
        name: String,
        #[command(flatten)]
        store: DbArg,
    },
    /// Pin a suspended hook again to what its files hold now, after
    /// showing what changed.
    Trust {
        /// The hook.
        name: String,
        /// Trust without asking. Required when there is no terminal.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// Show a Claude Code settings file's hooks (a repository's
    /// `.claude/settings.json`) without running any, and add the ones you
    /// pick with --take N.
    Import(super::hooks_import::ImportArgs),
    /// Remove a hook.
    Remove {
        /// The hook.
        name: String,
        #[command(flatten)]
        store: DbArg,
    },
}

/// `goat hooks add`'s flags.
#[derive(clap::Args)]
pub struct AddArgs {
    /// The hook's name: letters, digits, '-' and '_', up to 64.
    name: String,
    /// When it runs: pre_tool_use (or PreToolUse), before each call the
    /// rules let through; post_tool_use (PostToolUse), after each call
    /// that succeeded.
    #[arg(long = "on", value_name = "EVENT")]
    on: String,
    /// The tools it runs for: names joined by '|' (GOAT's, or Claude
    /// Code's: Bash, Write, Edit, Read), '*' for any run of characters.
    /// Every tool without it.
    #[arg(long = "match", value_name = "TOOLS")]
    matcher: Option<String>,
    /// Seconds it may take; past them it denies.
    #[arg(long, value_name = "SECS", default_value_t = goat_hooks::DEFAULT_TIMEOUT_SECS)]
    timeout: u64,
    /// A component hook instead of a program: a WASI component exporting
    /// goat:hook/hook and importing nothing (wit/hook/hook.wit).
    #[arg(long, value_name = "FILE.wasm", conflicts_with = "command")]
    component: Option<PathBuf>,
    #[command(flatten)]
    store: DbArg,
    /// The program and its arguments, after `--`.
    #[arg(
        last = true,
        required_unless_present = "component",
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// Runs one `goat hooks` command.
pub fn hooks(command: HooksCommand) -> anyhow::Result<Outcome> {
    match command {
        HooksCommand::Add(args) => add(args),
        HooksCommand::List { json, store } => list(json, store.db.as_deref()),
        HooksCommand::Show { name, store } => show(&name, store.db.as_deref()),
        HooksCommand::Trust { name, yes, store } => trust(&name, yes, store.db.as_deref()),
        HooksCommand::Remove { name, store } => remove(&name, store.db.as_deref()),
        HooksCommand::Import(args) => super::hooks_import::import(args),
    }
}

fn load(db: Option<&Path>) -> anyhow::Result<Registry> {
    let file = goat_state::paths::hooks_file(db)?;
    Ok(Registry::load(file.resolved())?)
}

fn add(args: AddArgs) -> anyhow::Result<Outcome> {
    goat_hooks::check_name(&args.name).map_err(anyhow::Error::msg)?;
    let event = Event::from_name(&args.on).with_context(|| {
        format!(
            "'{}' is not an event; use {}",
            text::escape_controls(&args.on),
            Event::ALL.map(Event::name).join(", ")
        )
    })?;
    if args.matcher.is_some() && !event.has_tool() {
        bail!(
            "{} hooks run once a turn, not for a tool, so there is nothing to --match; leave \
             it out",
            event.name()
        );
    }
    if let Some(matcher) = &args.matcher {
        goat_hooks::check_matcher(matcher)
            .map_err(|why| anyhow::anyhow!("--match {}", text::escape_controls(&why)))?;
    }
    if args.timeout == 0 || args.timeout > goat_hooks::MAX_TIMEOUT_SECS {
        bail!(
            "--timeout {} is outside 1 to {} seconds",
            args.timeout,
            goat_hooks::MAX_TIMEOUT_SECS
        );
    }
    let (argv, component) = match &args.component {
        Some(file) => (Vec::new(), Some(checked_component(&args.name, file)?)),
        None => (super::mcp_servers::absolute_command(&args.command), None),
    };
    for arg in argv.iter().skip(1) {
        if looks_like_a_script(arg) && !Path::new(arg).is_file() {
            bail!(
                "'{}' looks like a script, and no such file is here; give its path (it is \
                 pinned by its bytes, so it must exist now)",
                text::escape_controls(arg)
            );
        }
    }
    let runs = match &component {
        Some(path) => pin::Runs::Component(path),
        None => pin::Runs::Command(&argv),
    };
    let pins = pin::take(event, args.matcher.as_deref(), runs, args.timeout)
        .map_err(|why| anyhow::anyhow!("{}", text::escape_controls(&why)))?;
    let mut registry = load(args.store.db.as_deref())?;
    if registry.get(&args.name).is_some() {
        bail!(
            "a hook named '{}' exists; remove it first, or choose another name",
            args.name
        );
    }
    let entry = HookEntry {
        name: args.name,
        event,
        matcher: args.matcher,
        argv,
        component,
        timeout_secs: args.timeout,
        pins,
    };
    let mut out = io::stdout().lock();
    writeln!(out, "added hook {}:", entry.name)?;
    describe(&mut out, &entry, None)?;
    registry.hooks.push(entry);
    registry.save()?;
    Ok(Outcome::Ok)
}

/// A component hook's file, absolute, checked to be a hook component
/// that imports nothing.
fn checked_component(name: &str, file: &Path) -> anyhow::Result<PathBuf> {
    let path = file
        .canonicalize()
        .with_context(|| format!("--component {}", file.display()))?;
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let sandbox = goat_sandbox::SandboxBuilder::new().build()?;
    sandbox
        .load_hook(name, &bytes)
        .map_err(|e| anyhow::anyhow!("{}", text::escape_controls(&e.to_string())))?;
    Ok(path)
}

/// Whether an argument names a file the hook runs (a script), judged by
/// its form: a path, or a name with a script's extension.
fn looks_like_a_script(arg: &str) -> bool {
    !arg.starts_with('-')
        && !arg.contains(char::is_whitespace)
        && (arg.contains('/')
            || [".sh", ".py", ".js", ".mjs", ".ts", ".rb", ".pl", ".bash"]
                .iter()
                .any(|ext| arg.ends_with(ext)))
}

/// What `hook` runs, its pins, and (`status`) whether they hold now.
fn describe(out: &mut dyn Write, hook: &HookEntry, status: Option<&str>) -> io::Result<()> {
    writeln!(
        out,
        "  on {}, for {}",
        hook.event.name(),
        hook.matcher
            .as_deref()
            .map_or_else(|| "every tool".to_owned(), text::escape_controls)
    )?;
    match &hook.component {
        Some(path) => writeln!(
            out,
            "  runs: the component {}",
            text::escape_controls(&path.display().to_string())
        )?,
        None => writeln!(out, "  runs: {}", shown_argv(&hook.argv))?,
    }
    writeln!(out, "  timeout: {} s", hook.timeout_secs)?;
    writeln!(out, "  pinned: definition {}", short(&hook.pins.definition))?;
    for file in &hook.pins.files {
        writeln!(
            out,
            "          {} {}",
            short(&file.sha256),
            text::escape_controls(&file.path.display().to_string())
        )?;
    }
    if let Some(status) = status {
        writeln!(out, "  status: {status}")?;
    }
    Ok(())
}

/// A hook's program and arguments on one line, each escaped.
pub(super) fn shown_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|a| text::escape_controls(a))
        .collect::<Vec<_>>()
        .join(" ")
}

fn short(sha256: &str) -> &str {
    sha256.get(..16).unwrap_or(sha256)
}

/// Whether `hook`'s pins hold now, in words.
fn status(hook: &HookEntry) -> (bool, String) {
    let now = pin::take(
        hook.event,
        hook.matcher.as_deref(),
        hook.runs(),
        hook.timeout_secs,
    );
    match pin::changed(&hook.pins, &now) {
        None => (true, "trusted".to_owned()),
        Some(why) => (
            false,
            format!(
                "SUSPENDED: {}; it denies every call it matches until `goat hooks trust {}`",
                text::escape_controls(&why),
                hook.name
            ),
        ),
    }
}

fn list(json_out: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let registry = load(db)?;
    let mut out = io::stdout().lock();
    if json_out {
        let hooks: Vec<serde_json::Value> = registry
            .hooks
            .iter()
            .map(|h| {
                let (trusted, why) = status(h);
                json!({
                    "name": h.name,
                    "event": h.event.name(),
                    "matcher": h.matcher,
                    "argv": h.argv,
                    "component": h.component,
                    "timeout_secs": h.timeout_secs,
                    "trusted": trusted,
                    "status": why,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&hooks)?)?;
        return Ok(Outcome::Ok);
    }
    if registry.hooks.is_empty() {
        writeln!(
            out,
            "no hooks; add one with `goat hooks add NAME --on pre_tool_use -- PROGRAM ARGS...`"
        )?;
    }
    for hook in &registry.hooks {
        let (_, why) = status(hook);
        writeln!(
            out,
            "{}  {}  {}  {why}",
            hook.name,
            hook.event.name(),
            hook.matcher
                .as_deref()
                .map_or_else(|| "*".to_owned(), text::escape_controls)
        )?;
    }
    Ok(Outcome::Ok)
}

fn show(name: &str, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let registry = load(db)?;
    let hook = registry.get(name).with_context(|| no_hook(name))?;
    let (_, why) = status(hook);
    let mut out = io::stdout().lock();
    writeln!(out, "hook {}:", hook.name)?;
    describe(&mut out, hook, Some(&why))?;
    Ok(Outcome::Ok)
}

fn trust(name: &str, yes: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let mut registry = load(db)?;
    let hook = registry.get(name).with_context(|| no_hook(name))?;
    let now = pin::take(
        hook.event,
        hook.matcher.as_deref(),
        hook.runs(),
        hook.timeout_secs,
    )
    .map_err(|why| anyhow::anyhow!("{}", text::escape_controls(&why)))?;
    let mut out = io::stdout().lock();
    let Some(why) = pin::changed(&hook.pins, &Ok(now.clone())) else {
        writeln!(out, "hook {name} is trusted as it is; nothing changed")?;
        return Ok(Outcome::Ok);
    };
    writeln!(
        out,
        "hook {name}: {} since it was trusted; it would now be pinned to:",
        text::escape_controls(&why)
    )?;
    let updated = HookEntry {
        pins: now,
        ..hook.clone()
    };
    describe(&mut out, &updated, None)?;
    out.flush()?;
    if !yes {
        if !io::stdin().is_terminal() {
            bail!("there is no terminal to ask; look at the files above, then pass --yes");
        }
        write!(out, "trust it? [y/N] ")?;
        out.flush()?;
        let mut answer = String::new();
        io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            writeln!(out, "not trusted; it stays suspended")?;
            return Ok(Outcome::Ok);
        }
    }
    if let Some(entry) = registry.get_mut(name) {
        *entry = updated;
    }
    registry.save()?;
    writeln!(out, "hook {name} trusted")?;
    Ok(Outcome::Ok)
}

fn remove(name: &str, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let mut registry = load(db)?;
    if registry.get(name).is_none() {
        bail!("{}", no_hook(name));
    }
    registry.hooks.retain(|h| h.name != name);
    registry.save()?;
    writeln!(io::stdout().lock(), "removed hook {name}")?;
    Ok(Outcome::Ok)
}

fn no_hook(name: &str) -> String {
    format!(
        "no hook named '{}'; `goat hooks list` shows them",
        text::escape_controls(name)
    )
}

#[cfg(test)]
mod tests {
    use super::looks_like_a_script;

    #[test]
    fn a_script_is_told_by_its_form() {
        assert!(looks_like_a_script("hooks/guard"));
        assert!(looks_like_a_script("guard.py"));
        assert!(!looks_like_a_script("--strict"));
        assert!(!looks_like_a_script("rm"));
    }
}
