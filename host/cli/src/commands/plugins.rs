//! `goat plugins`: adding, listing, inspecting and removing third-party
//! tools.
//!
//! What a plugin may be called, how approvals are kept and how approved
//! bytes are loaded is `goat-catalog`'s; this module asks the person,
//! prints (escaping everything a component says about itself) and wires
//! the catalog to GOAT's state directories.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use goat_catalog::{
    Candidate, FileState, PluginName, Registry, file_state, forget_stored, stored_file,
};
use goat_gate as gate;
use goat_sandbox::{Access, Tool};

use crate::args::DbArg;
use crate::{Outcome, note, paths, session, text};

/// The store, beside which the plugin directory lives.
const DB_HELP: &str = "The store, beside which the plugin directory lives (default: $GOAT_DB, \
     else $XDG_DATA_HOME/goat/goat.db or ~/.local/share/goat/goat.db)";

#[derive(Subcommand)]
pub enum PluginsCommand {
    /// Check a component, show what it is and asks for, and on approval add
    /// it: its tool is then offered to the model as NAME__TOOL.
    #[command(mut_arg("db", |a| a.help(DB_HELP)))]
    Add {
        /// The component (.wasm) to add. It is copied; the original is never
        /// read again.
        file: PathBuf,
        /// The plugin's name (default: the file name without .wasm):
        /// lowercase letters, digits and single underscores.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Approve without asking. Required when there is no terminal.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        grants: GrantArgs,
        #[command(flatten)]
        store: DbArg,
    },
    /// List the approved plugins.
    #[command(mut_arg("db", |a| a.help(DB_HELP)))]
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// Show one plugin's approval, and whether its stored file still matches.
    #[command(mut_arg("db", |a| a.help(DB_HELP)))]
    Inspect {
        /// The plugin's name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// Start a new plugin: a directory with GOAT's WIT, a minimal tool (a
    /// line counter) and the one command that builds it with the
    /// registries' tools alone (cargo with wit-bindgen, componentize-py,
    /// componentize-js).
    New {
        /// The plugin's name: lowercase letters, digits and single
        /// underscores.
        name: String,
        /// The language it is written in.
        #[arg(long, value_enum)]
        lang: super::plugin_new::Lang,
        /// Where to make it (default: ./NAME). It must not exist.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Remove a plugin: its approval and its stored file.
    #[command(mut_arg("db", |a| a.help(DB_HELP)))]
    Remove {
        /// The plugin's name.
        name: String,
        #[command(flatten)]
        store: DbArg,
    },
}

/// What the person grants a plugin beyond its declared access (ADR-0097).
/// Part of the approval: to change them, remove the plugin and add it
/// again.
#[derive(clap::Args)]
pub struct GrantArgs {
    /// An environment variable the plugin may read, by name (repeat for
    /// more); it sees GOAT's value at each call. Nothing else of the
    /// environment reaches it.
    #[arg(long = "env", value_name = "KEY")]
    env: Vec<String>,
    /// A destination its wasi:http requests may reach, as commands.network
    /// reads it: HOST, HOST:PORT, *.HOST or a named set (repeat for more).
    /// Every other request is refused by GOAT's network proxy and recorded.
    #[arg(long = "allow-host", value_name = "HOST")]
    hosts: Vec<String>,
    /// Wall time per call, in seconds (default 30, at most 600).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Linear memory per call, in MiB (default 128, at most 1024).
    #[arg(long, value_name = "MIB")]
    memory: Option<u64>,
    /// Core instances per call (default 32, at most 64).
    #[arg(long, value_name = "N")]
    instances: Option<u64>,
    /// The real wall clock (default: frozen at the Unix epoch, so the
    /// plugin cannot time anything with it).
    #[arg(long)]
    wall_clock: bool,
}

impl GrantArgs {
    fn grants(self) -> goat_sandbox::Grants {
        goat_sandbox::Grants {
            env: self.env,
            hosts: self.hosts,
            timeout_secs: self.timeout,
            memory_mib: self.memory,
            instances: self.instances,
            wall_clock: self.wall_clock,
        }
    }
}

pub fn plugins(command: PluginsCommand) -> anyhow::Result<Outcome> {
    match command {
        PluginsCommand::Add {
            file,
            name,
            yes,
            grants,
            store,
        } => add(
            &file,
            name.as_deref(),
            yes,
            grants.grants(),
            store.db.as_deref(),
        ),
        PluginsCommand::List { json, store } => list(json, store.db.as_deref()),
        PluginsCommand::Inspect { name, json, store } => inspect(&name, json, store.db.as_deref()),
        PluginsCommand::Remove { name, store } => remove(&name, store.db.as_deref()),
        PluginsCommand::New { name, lang, dir } => {
            super::plugin_new::new(&name, lang, dir.as_deref())
        }
    }
}

fn add(
    file: &Path,
    name: Option<&str>,
    yes: bool,
    grants: goat_sandbox::Grants,
    db: Option<&Path>,
) -> anyhow::Result<Outcome> {
    let dir = paths::plugin_dir(db)?.into_resolved();
    let wasm =
        goat_catalog::read_capped(file).with_context(|| format!("reading {}", file.display()))?;
    let name = match name {
        Some(name) => PluginName::new(name)?,
        None => {
            let stem = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            PluginName::new(stem).map_err(|_| {
                anyhow::anyhow!(
                    "cannot name the plugin after its file '{}'; give it a name with --name \
                     (lowercase letters, digits and single underscores)",
                    file.display()
                )
            })?
        }
    };

    // Everything is checked before the person is asked: a component that
    // cannot be loaded is refused here, and never copied.
    let sandbox = session::sandbox(&crate::config::Settings::load()?.limits())?;
    if super::mcp_servers::is_added(db, name.as_str()) {
        bail!(
            "an MCP server is already called '{}', and its tools are offered as {}__TOOL; give \
             the plugin another name with --name",
            name.as_str(),
            name.as_str()
        );
    }
    let candidate = Candidate::check(&sandbox, &dir, name, &wasm, grants)?;
    let (name, exposed) = (candidate.name.to_string(), candidate.exposed.to_string());

    show(
        &mut io::stdout().lock(),
        file,
        &wasm,
        &name,
        &candidate.tool,
    )?;
    if !yes {
        let terminal = io::stdin().is_terminal() && io::stderr().is_terminal();
        if !terminal {
            bail!(
                "plugin '{name}' was not added: there is no terminal to ask for approval; read the \
                 above and run again with --yes to approve it"
            );
        }
        let grants = candidate.tool.grants();
        let granted = if grants.is_empty() {
            String::new()
        } else {
            format!(", granted {}", text::escape_controls(&grants.describe()))
        };
        if !ask(&format!(
            "Add plugin '{name}' as tool {exposed}, with {} workspace access{granted}? [y/N] ",
            candidate.tool.spec().access,
        ))? {
            println!("not added");
            return Ok(Outcome::Failed);
        }
    }

    goat_state::fs::open_private_dir(&dir).context("the plugin directory cannot be used")?;
    let stored = goat_catalog::approve(&dir, &candidate, &wasm, gate::now())?;
    println!(
        "added plugin '{name}': the model can call it as {exposed} (stored as {})",
        stored.display()
    );
    Ok(Outcome::Ok)
}

/// What the person approves: every line of it from the component itself,
/// with control characters escaped so a description cannot redraw the
/// terminal.
fn show(out: &mut impl Write, file: &Path, wasm: &[u8], name: &str, tool: &Tool) -> io::Result<()> {
    let spec = tool.spec();
    let access = match spec.access {
        Access::None => "none (no filesystem at all)",
        Access::Read => "read (the workspace, read-only)",
        Access::ReadWrite => {
            "read-write (the workspace; each write still needs --allow-writes, a rule or your yes)"
        }
    };
    writeln!(out, "plugin       {name}")?;
    writeln!(
        out,
        "tool         {} (its own name: {})",
        spec.name,
        text::escape_controls(tool.declared_name())
    )?;
    writeln!(
        out,
        "description  {}",
        text::escape_controls(&spec.description)
    )?;
    writeln!(out, "access       {access}")?;
    writeln!(
        out,
        "grants       {}",
        text::escape_controls(&tool.grants().describe())
    )?;
    if tool.imports_interface("wasi:http/outgoing-handler") && tool.grants().hosts.is_empty() {
        writeln!(
            out,
            "network      none: it can send wasi:http requests, and GOAT refuses every one \
             (grant hosts with --allow-host)"
        )?;
    }
    writeln!(
        out,
        "path fields  {}",
        text::escape_controls(&spec.path_fields.join(", "))
    )?;
    writeln!(out, "imports      {}", tool.imports().join(", "))?;
    writeln!(out, "sha256       {}", tool.sha256())?;
    writeln!(
        out,
        "file         {} ({} bytes)",
        file.display(),
        wasm.len()
    )?;
    out.flush()
}

/// Asks `question` on stderr and reads one line of stdin: yes only for `y`
/// or `yes`.
fn ask(question: &str) -> anyhow::Result<bool> {
    let mut err = io::stderr().lock();
    write!(err, "{question}")?;
    err.flush()?;
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn list(json: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = paths::plugin_dir(db)?.into_resolved();
    let approvals = match Registry::open_read_only(&dir)? {
        Some(registry) => registry.all()?,
        None => Vec::new(),
    };
    let mut out = io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &approvals)?;
        writeln!(out)?;
    } else if approvals.is_empty() {
        writeln!(out, "no plugins (add one with goat plugins add FILE.wasm)")?;
    } else {
        let width = approvals.iter().map(|a| a.tool.len()).max().unwrap_or(0);
        for a in &approvals {
            let granted = if a.grants.is_empty() {
                String::new()
            } else {
                format!("  granted {}", text::escape_controls(&a.grants.describe()))
            };
            writeln!(
                out,
                "{:width$}  {:10}  {}  added {}{granted}",
                a.tool,
                a.access,
                &a.sha256[..a.sha256.len().min(12)],
                text::utc(a.added_at)
            )?;
        }
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

fn inspect(name: &str, json: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = paths::plugin_dir(db)?.into_resolved();
    let approval = Registry::open_read_only(&dir)?
        .map(|r| r.get(name))
        .transpose()?
        .flatten()
        .with_context(|| format!("no plugin named '{}'", text::escape_controls(name)))?;
    let file = stored_file(&dir, &approval.sha256);
    let state = file_state(&dir, &approval);
    let mut out = io::stdout().lock();
    if json {
        let mut v = serde_json::to_value(&approval)?;
        v["file"] = serde_json::Value::String(file.display().to_string());
        v["file_state"] = serde_json::to_value(&state)?;
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(out, "plugin       {}", approval.name)?;
        writeln!(
            out,
            "tool         {} (its own name: {})",
            approval.tool, approval.declared_name
        )?;
        writeln!(
            out,
            "description  {}",
            text::escape_controls(&approval.description)
        )?;
        writeln!(out, "access       {}", approval.access)?;
        writeln!(
            out,
            "grants       {}",
            text::escape_controls(&approval.grants.describe())
        )?;
        writeln!(out, "imports      {}", approval.imports.join(", "))?;
        writeln!(out, "sha256       {}", approval.sha256)?;
        writeln!(out, "added        {}", text::utc(approval.added_at))?;
        writeln!(out, "file         {}", file.display())?;
        let state = match &state {
            FileState::Ok => "matches the approved sha256".to_owned(),
            FileState::Changed { found_sha256 } => {
                format!("CHANGED (sha256 {found_sha256}); it will not be loaded")
            }
            FileState::Unreadable { reason } => {
                format!("UNREADABLE ({reason}); it will not be loaded")
            }
        };
        writeln!(out, "file state   {state}")?;
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

fn remove(name: &str, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = paths::plugin_dir(db)?.into_resolved();
    let Some(mut registry) = Registry::open_existing(&dir)? else {
        bail!("no plugin named '{}'", text::escape_controls(name));
    };
    let Some(approval) = registry.remove(name)? else {
        bail!("no plugin named '{}'", text::escape_controls(name));
    };
    if !registry.references(&approval.sha256)? {
        forget_stored(&dir, &approval.sha256)?;
    }
    println!("removed plugin '{name}' (tool {})", approval.tool);
    // Rules outlive the plugin; a plugin added later under the same name
    // would inherit them, so say which they are.
    let permissions = paths::permissions_path(None, db)?.into_resolved();
    if permissions.exists()
        && let Ok(rules) = gate::PermissionDb::open(&permissions).and_then(|p| p.list())
    {
        for rule in rules
            .iter()
            .filter(|r| r.tool.as_deref() == Some(approval.tool.as_str()))
        {
            note(format_args!(
                "rule {} still names {}; a plugin added later as '{name}' would get it. \
                 Remove it with `goat permissions revoke {}`",
                text::escape_controls(&rule.to_string()),
                approval.tool,
                rule.id
            ));
        }
    }
    Ok(Outcome::Ok)
}

/// The exposed tool names of the approved plugins beside the store (`db` as
/// `--db` gives it), whether or not their files still pass the hash check:
/// rules may name them.
pub fn approved_names(db: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let dir = paths::plugin_dir(db)?.into_resolved();
    Ok(match Registry::open_read_only(&dir)? {
        Some(registry) => registry.all()?.into_iter().map(|a| a.tool).collect(),
        None => Vec::new(),
    })
}
