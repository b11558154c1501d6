//! `goat permissions`: the gate's rules, managed by the person.
//!
//! Rules are host state the model never reaches: this is the only way to
//! change them. A rule is printed as the gate shows it in its reasons, so
//! what `list` says is what a denial will quote.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use goat_gate::{self as gate, Access, Effect, NewRule, PermissionDb, Rule, Scope};
use goat_store::Store;
use serde_json::{Value, json};

use crate::args::{DbArg, PermissionsArg};
use crate::{Outcome, note, paths, text};

#[derive(Subcommand)]
pub enum PermissionsCommand {
    /// List the rules, in id order, expired ones marked.
    List {
        /// Print them as a JSON array.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        location: Location,
    },
    /// Allow TOOL to read (or with --write, write) paths matching PATTERN.
    Allow(RuleArgs),
    /// Forbid TOOL to read and write (or with --write, only write) paths
    /// matching PATTERN. A deny rule always wins over allow rules and
    /// --allow-writes.
    Deny(RuleArgs),
    /// Remove the rule with this id.
    Revoke {
        /// The rule's id, as `goat permissions list` shows it (#3 is 3).
        id: i64,
        #[command(flatten)]
        location: Location,
    },
}

/// Where the permission database is.
#[derive(Args)]
#[command(mut_arg("db", |a| a.help(
    "The store, whose directory holds the default permission database and whose sessions \
     --session names (default: $GOAT_DB, else $XDG_DATA_HOME/goat/goat.db or \
     ~/.local/share/goat/goat.db)"
)))]
pub struct Location {
    #[command(flatten)]
    permissions: PermissionsArg,
    #[command(flatten)]
    store: DbArg,
}

#[derive(Args)]
pub struct RuleArgs {
    /// A tool name, as `goat tools list` shows it, or `*` for all tools.
    tool: String,
    /// Workspace paths, relative to its root: `src/main.rs`, `src/**`
    /// (the directory and everything in it), `**/*.rs`, `**` (everything).
    /// Left out with --command.
    #[arg(required_unless_present = "command")]
    pattern: Option<String>,
    /// A rule about run_command's commands instead of paths: the command,
    /// or the prefix of commands, it allows or denies (`cargo test` also
    /// matches `cargo test --release`). A deny prefix is looked for in every
    /// part of a command line (`make && git push`); an allow prefix matches
    /// only a line without `;`, `&`, `|`, `$`, backquotes or redirections.
    #[arg(long, value_name = "PREFIX", conflicts_with_all = ["pattern", "write"])]
    command: Option<String>,
    /// The rule is about writing, not reading.
    #[arg(long)]
    write: bool,
    /// Only in this session (default: every session, until revoked).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Stop applying after this long: a number and s, m, h, d or w (30m, 2h, 7d).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    expires_in: Option<Duration>,
    /// Only in this workspace (default: in every workspace).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    location: Location,
}

pub fn permissions(command: PermissionsCommand) -> anyhow::Result<Outcome> {
    match command {
        PermissionsCommand::List { json, location } => list(&location, json),
        PermissionsCommand::Allow(args) => add(args, Effect::Allow),
        PermissionsCommand::Deny(args) => add(args, Effect::Deny),
        PermissionsCommand::Revoke { id, location } => revoke(&location, id),
    }
}

impl Location {
    fn path(&self) -> anyhow::Result<PathBuf> {
        Ok(paths::permissions_path(
            self.permissions.permissions.as_deref(),
            self.store.db.as_deref(),
        )?
        .into_resolved())
    }

    /// The database, created if absent.
    fn open(&self) -> anyhow::Result<PermissionDb> {
        paths::prepare_permissions(&self.path()?)
    }

    /// The database if it exists: reading must not create one.
    fn open_existing(&self) -> anyhow::Result<Option<PermissionDb>> {
        let path = self.path()?;
        if !path.exists() {
            return Ok(None);
        }
        Ok(Some(PermissionDb::open(&path)?))
    }
}

fn list(location: &Location, json: bool) -> anyhow::Result<Outcome> {
    let rules = match location.open_existing()? {
        Some(db) => db.list()?,
        None => Vec::new(),
    };
    let now = gate::now();
    let mut out = io::stdout().lock();
    if json {
        let rows: Vec<Value> = rules.iter().map(|r| rule_json(r, now)).collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else if rules.is_empty() {
        note("no permission rules: reads are allowed, writes need --allow-writes or a rule");
    } else {
        for rule in &rules {
            let expired = if rule.is_expired(now) {
                " [expired]"
            } else {
                ""
            };
            // A rule names tools, sessions and workspaces as given: escaped here.
            writeln!(out, "{}{expired}", text::escape_controls(&rule.to_string()))?;
        }
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

fn add(args: RuleArgs, effect: Effect) -> anyhow::Result<Outcome> {
    let tool = match args.tool.as_str() {
        "*" => None,
        name => {
            // A deny rule for a misspelt tool would protect nothing, silently.
            // Plugin tools go by their exposed names, as the gate sees them.
            let plugin_tools = super::plugins::approved_names(args.location.store.db.as_deref())?;
            let known: Vec<&str> = goat_sandbox::builtin::PEN_TOOLS
                .iter()
                .map(|b| b.name)
                .chain([gate::COMMAND_TOOL])
                .chain(plugin_tools.iter().map(String::as_str))
                .collect();
            // An MCP server's tools go by NAME__TOOL; one added but not
            // trusted yet may be named ahead of its tools.
            let mcp_server = name.split_once("__").is_some_and(|(server, tool)| {
                goat_mcp_client::exposed_name(server, tool).is_ok()
                    && super::mcp_servers::is_added(args.location.store.db.as_deref(), server)
            });
            if !known.contains(&name) && !mcp_server {
                bail!(
                    "no tool named '{}'; available: {}, or '*' for all tools",
                    text::escape_controls(name),
                    known.join(", ")
                );
            }
            Some(name.to_owned())
        }
    };
    let scope = match args.session {
        Some(id) => {
            // A rule for a session that does not exist would never apply.
            session_exists(args.location.store.db.as_deref(), &id)?;
            Scope::Session(id)
        }
        None => Scope::Persistent,
    };
    let created_at = gate::now();
    let expires_at = match args.expires_in {
        Some(after) => Some(
            i64::try_from(after.as_secs())
                .ok()
                .and_then(|secs| created_at.checked_add(secs))
                .context("--expires-in is too far in the future")?,
        ),
        None => None,
    };
    let workspace = match &args.workspace {
        Some(dir) => {
            let root = paths::workspace(Some(dir))?;
            let text = root.to_str().with_context(|| {
                format!(
                    "the workspace {} is not valid UTF-8, so a rule cannot name it",
                    root.display()
                )
            })?;
            Some(text.to_owned())
        }
        None => None,
    };
    if args.command.is_some() && tool.as_deref().is_some_and(|t| t != gate::COMMAND_TOOL) {
        bail!(
            "--command rules are about {}; give that tool (or *)",
            gate::COMMAND_TOOL
        );
    }
    let rule = NewRule {
        tool,
        pattern: args.pattern.unwrap_or_else(|| "**".to_owned()),
        workspace,
        access: if args.write || args.command.is_some() {
            Access::Write
        } else {
            Access::Read
        },
        effect,
        scope,
        created_at,
        expires_at,
        command: args.command,
    };
    let stored = args.location.open()?.add(rule)?;
    let mut out = io::stdout().lock();
    writeln!(out, "{stored}")?;
    out.flush()?;
    Ok(Outcome::Ok)
}

fn session_exists(db: Option<&Path>, id: &str) -> anyhow::Result<()> {
    let path = paths::store_path(db)?.into_resolved();
    let shown = text::escape_controls(id);
    if !path.exists() {
        bail!(
            "no session '{shown}': there is no store at {} yet",
            path.display()
        );
    }
    Store::open(&path)?
        .session(id)
        .context("`goat sessions list` shows the sessions")?;
    Ok(())
}

fn revoke(location: &Location, id: i64) -> anyhow::Result<Outcome> {
    let Some(mut db) = location.open_existing()? else {
        bail!("no rule #{id}: there are no permission rules");
    };
    let Some(rule) = db.list()?.into_iter().find(|r| r.id == id) else {
        bail!("no rule #{id}; `goat permissions list` shows the rules");
    };
    if !db.revoke(id)? {
        bail!("no rule #{id}: it was revoked meanwhile");
    }
    let mut out = io::stdout().lock();
    writeln!(out, "revoked {}", text::escape_controls(&rule.to_string()))?;
    out.flush()?;
    Ok(Outcome::Ok)
}

fn rule_json(rule: &Rule, now: i64) -> Value {
    let (scope, session) = match &rule.scope {
        Scope::Session(id) => ("session", Some(id.as_str())),
        Scope::Persistent => ("persistent", None),
        // A scope a newer gate added: say so rather than pass it off as
        // persistent.
    };
    json!({
        "id": rule.id,
        "tool": rule.tool,
        "pattern": rule.pattern,
        // Deny rules without wildcards also cover what is under the path.
        "covers_below": rule.covers_below(),
        "access": rule.access.as_str(),
        "effect": rule.effect.as_str(),
        "scope": scope,
        "session": session,
        "workspace": rule.workspace,
        "created_at": rule.created_at,
        "expires_at": rule.expires_at,
        "command": rule.command,
        "expired": rule.is_expired(now),
    })
}

/// `30m`, `2h`, `7d`: a positive whole number and one unit.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let hint = "use a whole number and a unit, e.g. 30m, 2h, 7d (units: s, m, h, d, w)";
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("'{text}' has no unit; {hint}"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' does not start with a number; {hint}"))?;
    let seconds_per = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(format!("'{text}' has an unknown unit '{unit}'; {hint}")),
    };
    if n == 0 {
        return Err(format!("'{text}' would expire at once; {hint}"));
    }
    n.checked_mul(seconds_per)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("'{text}' is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_one_unit() {
        let ok = [
            ("30m", 1800),
            ("2h", 7200),
            ("7d", 604_800),
            ("1w", 604_800),
            ("45s", 45),
        ];
        for (text, secs) in ok {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        for bad in [
            "",
            "30",
            "m",
            "0h",
            "2x",
            "1.5h",
            "-1h",
            "2h30m",
            "99999999999999999999w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
