//! `goat hooks import FILE`: a Claude Code settings file's hooks, shown as
//! data, and added only as the person picks them (`--take N`).
//!
//! A repository's `.claude/settings.json` is the repository's: hostile
//! until shown otherwise. Nothing in it is run, or added, by reading it;
//! every string from it is escaped before it is printed. What GOAT cannot
//! run as the file meant is said and never taken: an event GOAT does not
//! have, a hook that is not a command, a matcher GOAT does not read, and a
//! command that runs a file of the repository (where the agent writes).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use goat_hooks::{Event, HookEntry, pin};
use serde_json::Value;

use crate::args::DbArg;
use crate::{Outcome, text};

/// The most a settings file may hold.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// `goat hooks import`'s flags.
#[derive(clap::Args)]
pub struct ImportArgs {
    /// A Claude Code settings file (`.claude/settings.json`).
    file: PathBuf,
    /// Add the hook listed as N. Repeatable; without it, nothing is added.
    #[arg(long = "take", value_name = "N")]
    take: Vec<usize>,
    /// The name a taken hook gets: PREFIX-N.
    #[arg(long, value_name = "PREFIX", default_value = "imported")]
    prefix: String,
    #[command(flatten)]
    store: DbArg,
}

/// One hook of the file, as GOAT reads it.
struct Found {
    event: String,
    matcher: Option<String>,
    command: String,
    timeout: Option<u64>,
    /// Why GOAT would not take it, if it would not.
    refused: Option<String>,
    /// What GOAT would run, where it would.
    argv: Vec<String>,
}

pub fn import(args: ImportArgs) -> anyhow::Result<Outcome> {
    let bytes = read(&args.file)?;
    let settings: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not JSON", args.file.display()))?;
    let base = args
        .file
        .canonicalize()
        .ok()
        .and_then(|f| f.parent().and_then(Path::parent).map(Path::to_path_buf));
    let found = hooks_of(&settings, base.as_deref());
    let mut out = io::stdout().lock();
    if found.is_empty() {
        writeln!(out, "no hooks in {}", args.file.display())?;
    }
    writeln!(
        out,
        "hooks in {} (shown, not run; nothing is added without --take N):",
        text::escape_controls(&args.file.display().to_string())
    )?;
    for (n, hook) in (1..).zip(&found) {
        writeln!(
            out,
            "{n}. {} {}: {}{}",
            text::escape_controls(&hook.event),
            hook.matcher
                .as_deref()
                .map_or_else(|| "*".to_owned(), text::escape_controls),
            text::escape_controls(&hook.command),
            hook.timeout
                .map(|t| format!(" ({t} s)"))
                .unwrap_or_default()
        )?;
        match &hook.refused {
            Some(why) => writeln!(out, "   not taken: {why}")?,
            None => writeln!(
                out,
                "   GOAT would run: {}",
                super::hooks::shown_argv(&hook.argv)
            )?,
        }
    }
    if args.take.is_empty() {
        return Ok(Outcome::Ok);
    }
    let mut taken = args.take.clone();
    taken.sort_unstable();
    taken.dedup();
    let mut entries = Vec::new();
    for n in &taken {
        goat_hooks::check_name(&format!("{}-{n}", args.prefix)).map_err(anyhow::Error::msg)?;
        let Some(hook) = n.checked_sub(1).and_then(|i| found.get(i)) else {
            bail!("--take {n}: the file lists {} hooks", found.len());
        };
        if let Some(why) = &hook.refused {
            bail!("--take {n}: {why}; nothing was added");
        }
        let event = Event::from_name(&hook.event).context("an event GOAT does not know")?;
        let timeout = hook.timeout.unwrap_or(goat_hooks::DEFAULT_TIMEOUT_SECS);
        let pins = pin::take(
            event,
            hook.matcher.as_deref(),
            pin::Runs::Command(&hook.argv),
            timeout,
        )
        .map_err(|why| anyhow::anyhow!("--take {n}: {}", text::escape_controls(&why)))?;
        entries.push(HookEntry {
            name: format!("{}-{n}", args.prefix),
            event,
            matcher: hook.matcher.clone(),
            argv: hook.argv.clone(),
            component: None,
            timeout_secs: timeout,
            pins,
        });
    }
    let file = goat_state::paths::hooks_file(args.store.db.as_deref())?;
    let mut registry = goat_hooks::Registry::load(file.resolved())?;
    if let Some(clash) = entries.iter().find(|e| registry.get(&e.name).is_some()) {
        bail!(
            "a hook named '{}' exists; remove it, or pass another --prefix",
            clash.name
        );
    }
    for entry in entries {
        writeln!(out, "added hook {} (pinned as it is now)", entry.name)?;
        registry.hooks.push(entry);
    }
    registry.save()?;
    Ok(Outcome::Ok)
}

fn read(file: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let opened = goat_state::fs::open_regular(file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut bytes = Vec::new();
    opened
        .take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", file.display()))?;
    if bytes.len() as u64 > MAX_SETTINGS_BYTES {
        bail!(
            "{} is larger than {MAX_SETTINGS_BYTES} bytes",
            file.display()
        );
    }
    Ok(bytes)
}

/// Every hook in Claude Code's `{"hooks": {EVENT: [{matcher, hooks: [...]}]}}`,
/// in order, each read as GOAT would take it. `project` is the directory
/// the file's `.claude/` is in, where `$CLAUDE_PROJECT_DIR` points.
fn hooks_of(settings: &Value, project: Option<&Path>) -> Vec<Found> {
    let mut found = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            // Claude Code ignores a matcher on an event with no tool
            // (UserPromptSubmit, Stop); so does GOAT.
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty() && *m != "*")
                .filter(|_| Event::from_name(event).is_none_or(Event::has_tool))
                .map(str::to_owned);
            for hook in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = hook.get("type").and_then(Value::as_str).unwrap_or("");
                let command = hook
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let timeout = hook.get("timeout").and_then(Value::as_u64);
                let mut item = Found {
                    event: event.clone(),
                    matcher: matcher.clone(),
                    command,
                    timeout,
                    refused: None,
                    argv: Vec::new(),
                };
                item.refused = refusal(&item, kind, project);
                if item.refused.is_none() {
                    item.argv = argv_of(&item.command);
                }
                found.push(item);
            }
        }
    }
    found
}

/// Why GOAT would not take `hook`, if it would not.
fn refusal(hook: &Found, kind: &str, project: Option<&Path>) -> Option<String> {
    if Event::from_name(&hook.event).is_none() {
        return Some("GOAT has no such event".to_owned());
    }
    if kind != "command" {
        return Some(format!(
            "a '{}' hook; GOAT runs command hooks (and components)",
            text::escape_controls(kind)
        ));
    }
    if let Some(matcher) = &hook.matcher
        && let Err(why) = goat_hooks::check_matcher(matcher)
    {
        return Some(text::escape_controls(&why));
    }
    if hook
        .timeout
        .is_some_and(|t| t == 0 || t > goat_hooks::MAX_TIMEOUT_SECS)
    {
        return Some(format!(
            "a timeout outside 1 to {} seconds",
            goat_hooks::MAX_TIMEOUT_SECS
        ));
    }
    if hook.command.trim().is_empty() {
        return Some("it runs nothing".to_owned());
    }
    // A shell line can reach the repository at run time in ways no reading
    // of it can rule out (`cd "$(jq -r .cwd)"`, `python3 -c ...`): not
    // taken. The person can put it in a script outside the workspace.
    if is_shell(&hook.command) {
        return Some(
            "it is shell syntax, which could run the repository's files in ways GOAT cannot \
             check; put it in a script outside the workspace, read it, and add it with `goat \
             hooks add`"
                .to_owned(),
        );
    }
    let in_project = |word: &str| {
        word.contains("CLAUDE_PROJECT_DIR")
            || (!word.starts_with('/') && (word.contains('/') || Path::new(word).exists()))
            || project.is_some_and(|p| Path::new(word).starts_with(p))
    };
    if hook.command.split_whitespace().any(in_project) {
        return Some(
            "it runs a file of the repository, where the agent writes; copy the file out of the \
             workspace, read it, and add it with `goat hooks add`"
                .to_owned(),
        );
    }
    None
}

/// What GOAT runs for a command line: its words, each a program or a
/// file, found and pinned (only a plain list of words is ever taken).
fn argv_of(command: &str) -> Vec<String> {
    super::mcp_servers::absolute_command(
        &command
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>(),
    )
}

/// Whether a command line is shell syntax rather than a plain list of
/// words.
fn is_shell(command: &str) -> bool {
    command
        .chars()
        .any(|c| "|&;<>()$`\"'\\*?[]#~{}=!\n".contains(c))
}
