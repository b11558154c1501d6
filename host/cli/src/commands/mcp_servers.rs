//! `goat mcp add | list | show | trust | remove`: the MCP servers whose
//! tools the model may call (docs/mcp.md, ADR-0086).
//!
//! The list is one file in GOAT's host state beside the store
//! (`goat_mcp_client::Registry`), never in a workspace. A server added is
//! not offered until the person trusts it: `trust` starts it contained,
//! shows every tool it offers (escaped), and pins each definition by
//! hash. Everything a server says about itself is escaped before it is
//! printed.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use goat_gate as gate;
use goat_mcp_client::{PinnedTool, Registry, ServerEntry, Trusted, changed_tools, definition};
use serde_json::json;

use crate::args::{DbArg, PermissionsArg};
use crate::{Outcome, paths, text};

/// `goat mcp add`'s flags.
#[derive(clap::Args)]
pub struct AddArgs {
    /// The server's name: its tools are offered as NAME__TOOL. Lowercase
    /// letters, digits and single underscores, up to 24.
    name: String,
    /// Pass this variable of GOAT's environment to the server (its value
    /// is read when the server starts, never stored). Repeatable.
    #[arg(long = "env", value_name = "VAR")]
    env: Vec<String>,
    /// A host directory the server may read besides the system and
    /// toolchain directories (where its code is). Repeatable.
    #[arg(long = "read", value_name = "DIR")]
    read: Vec<PathBuf>,
    /// Let the server write the workspace (read-only without it). What it
    /// writes is recorded with each call and undone by goat undo.
    #[arg(long)]
    writes: bool,
    /// Give the server the network (none without it).
    #[arg(long, conflicts_with = "allow_host")]
    network: bool,
    /// Let the server reach this destination only, through GOAT's proxy,
    /// as commands.network's entries do (host, host:port, *.domain).
    /// Repeatable; every decision is recorded with the call.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_host: Vec<String>,
    /// Seconds the server may take to start, and to answer each call.
    #[arg(long, value_name = "SECS", default_value_t = goat_mcp_client::registry::DEFAULT_TIMEOUT_SECS)]
    timeout: u64,
    /// A Streamable HTTP server at this URL instead of a program: https,
    /// or http on this machine (127.0.0.1, ::1, localhost).
    #[arg(long, value_name = "URL", conflicts_with_all = ["command", "writes", "network", "allow_host", "env", "read"])]
    url: Option<String>,
    /// The variable of GOAT's environment that holds the HTTP server's
    /// bearer token (read when GOAT connects, never stored).
    #[arg(long, value_name = "VAR", requires = "url")]
    bearer_env: Option<String>,
    #[command(flatten)]
    store: DbArg,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required_unless_present = "url", value_name = "COMMAND")]
    command: Vec<String>,
}

/// Where a server is started to be looked at.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// The server's name.
    name: String,
    /// The workspace the server sees, read-only, while it is looked at
    /// (default: an empty directory of its own; never the home directory
    /// nor one holding GOAT's state).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    store: DbArg,
    #[command(flatten)]
    permissions: PermissionsArg,
}

/// `goat mcp trust`'s flags.
#[derive(clap::Args)]
pub struct TrustArgs {
    #[command(flatten)]
    probe: ProbeArgs,
    /// Trust without asking. Required when there is no terminal.
    #[arg(long)]
    yes: bool,
}

fn load(db: Option<&Path>) -> anyhow::Result<Registry> {
    let file = paths::mcp_file(db)?;
    Ok(Registry::load(&file)?)
}

/// Every trusted MCP tool, as the model is offered it: its name, its
/// server, its description (raw) and its arguments' schema. A list that
/// cannot be read gives none (the command that reads it says why).
pub fn trusted_tools(db: Option<&Path>) -> Vec<(String, String, String, serde_json::Value)> {
    let Ok(registry) = load(db) else {
        return Vec::new();
    };
    registry
        .servers
        .iter()
        .flat_map(|server| {
            server
                .trusted
                .iter()
                .flat_map(|t| t.tools.iter())
                .filter_map(|tool| {
                    goat_mcp_client::exposed_name(&server.name, &tool.name)
                        .ok()
                        .map(|name| {
                            (
                                name,
                                server.name.clone(),
                                tool.description.clone(),
                                tool.input_schema.clone(),
                            )
                        })
                })
        })
        .collect()
}

/// Whether an MCP server called `name` was added (a list that cannot be
/// read counts as none).
pub fn is_added(db: Option<&Path>, name: &str) -> bool {
    load(db).is_ok_and(|r| r.get(name).is_some())
}

/// `goat mcp add`.
pub fn add(args: AddArgs) -> anyhow::Result<Outcome> {
    goat_mcp_client::check_name(&args.name).map_err(anyhow::Error::msg)?;
    let mut registry = load(args.store.db.as_deref())?;
    if registry.get(&args.name).is_some() {
        bail!(
            "an MCP server is already called '{}'; remove it first (goat mcp remove {})",
            args.name,
            args.name
        );
    }
    let plugins = paths::plugin_dir(args.store.db.as_deref())?.into_resolved();
    if let Some(plugins) = goat_catalog::Registry::open_read_only(&plugins)?
        && plugins.get(&args.name)?.is_some()
    {
        bail!(
            "a plugin is already called '{}', and its tools are offered as {}__TOOL; give the \
             server another name",
            args.name,
            args.name
        );
    }
    for var in args.env.iter().chain(&args.bearer_env) {
        let ok = var.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            bail!(
                "--env '{}' is not the name of a variable (letters, digits and _; the value is \
                 read from GOAT's environment when the server starts)",
                text::escape_controls(var)
            );
        }
    }
    let mut read = Vec::new();
    for dir in &args.read {
        let real = dir
            .canonicalize()
            .with_context(|| format!("--read {}: no such directory", dir.display()))?;
        read.push(real);
    }
    let host_files = goat_session::host_files(args.store.db.as_deref())?;
    let host_files: Vec<&Path> = host_files.iter().map(PathBuf::as_path).collect();
    goat_session::server_reads(&args.name, &read, &host_files)?;
    if let Some(url) = &args.url {
        goat_mcp_client::registry::check_url(url).map_err(anyhow::Error::msg)?;
    } else if let Some(program) = args.command.first() {
        if which(program).is_none_or(|p| !p.is_absolute()) {
            bail!(
                "no program '{}': it is not a file and not found in PATH",
                text::escape_controls(program)
            );
        }
    } else {
        bail!("give the server's command after --, or its --url");
    }
    if !args.allow_host.is_empty() {
        goat_egress::Allowlist::parse(&args.allow_host)
            .map_err(|e| anyhow::anyhow!("--allow-host: {e}"))?;
    }
    if !(1..=goat_mcp_client::registry::MAX_TIMEOUT_SECS).contains(&args.timeout) {
        bail!(
            "--timeout {} is out of range: give 1 to {} seconds",
            args.timeout,
            goat_mcp_client::registry::MAX_TIMEOUT_SECS
        );
    }
    registry.servers.push(ServerEntry {
        name: args.name.clone(),
        command: absolute_command(&args.command),
        url: args.url.clone(),
        bearer_env: args.bearer_env.clone(),
        env: args.env,
        read,
        writes: args.writes,
        network: args.network,
        hosts: args.allow_host.clone(),
        timeout_secs: args.timeout,
        added_at: gate::now(),
        trusted: None,
    });
    registry.save()?;
    println!(
        "added MCP server '{}'; it is not offered until you trust its tools: goat mcp trust {}",
        args.name, args.name
    );
    Ok(Outcome::Ok)
}

/// How a server is reached, escaped: its URL, or its command line.
fn how(server: &ServerEntry) -> String {
    match &server.url {
        Some(url) => text::escape_controls(url),
        None => text::escape_controls(&server.command.join(" ")),
    }
}

/// A server's network, in words.
fn network(server: &ServerEntry) -> String {
    if server.network {
        "on".to_owned()
    } else if server.hosts.is_empty() {
        "off".to_owned()
    } else {
        format!(
            "only {} (through GOAT's proxy)",
            text::escape_controls(&server.hosts.join(", "))
        )
    }
}

/// The program a server runs, found as `exec` would.
/// Only absolute directories of `PATH` count: a relative one would find
/// the program in whatever directory GOAT runs in (a repository's
/// `node_modules/.bin`), and the result is made absolute.
fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        // Absolute, but links kept: a virtual environment's `bin/python`
        // is a link, and Python finds the environment by the name it ran by.
        let path = PathBuf::from(program);
        return path
            .is_file()
            .then(|| std::path::absolute(&path).ok())
            .flatten();
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// An argument that names an existing file or directory relative to where
/// `goat mcp add` runs, made absolute; any other argument as given. A
/// server started later in a repository must not run the repository's
/// `./server.py` in place of the one the person added.
fn absolute_argument(arg: &str) -> String {
    let path = Path::new(arg);
    let relative_path =
        !path.is_absolute() && (arg.starts_with("./") || arg.starts_with("../") || path.exists());
    match relative_path
        .then(|| std::path::absolute(path).ok())
        .flatten()
    {
        Some(real) => real.to_str().map_or_else(|| arg.to_owned(), str::to_owned),
        None => arg.to_owned(),
    }
}

/// The program (found in `PATH` now, absolute) and its arguments (a
/// relative path made absolute), so the server started later is the one
/// added here, whatever directory a session runs in.
pub(crate) fn absolute_command(command: &[String]) -> Vec<String> {
    let mut absolute: Vec<String> = Vec::with_capacity(command.len());
    if let Some((program, args)) = command.split_first() {
        absolute.push(
            which(program)
                .and_then(|p| p.to_str().map(str::to_owned))
                .unwrap_or_else(|| program.clone()),
        );
        absolute.extend(args.iter().map(|a| absolute_argument(a)));
    }
    absolute
}

/// `goat mcp list`.
pub fn list(json_out: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let registry = load(db)?;
    if json_out {
        let servers: Vec<serde_json::Value> = registry
            .servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "command": s.command,
                    "url": s.url,
                    "bearer_env": s.bearer_env,
                    "env": s.env,
                    "read": s.read,
                    "writes": s.writes,
                    "network": s.network,
                    "allow_hosts": s.hosts,
                    "timeout_secs": s.timeout_secs,
                    "trusted": s.trusted.is_some(),
                    "tools": s.trusted.as_ref().map_or(0, |t| t.tools.len()),
                    "schema_tokens": schema_tokens(s),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "servers": servers }))?
        );
        return Ok(Outcome::Ok);
    }
    if registry.servers.is_empty() {
        println!("no MCP servers; add one with goat mcp add NAME -- COMMAND [ARGS]...");
        return Ok(Outcome::Ok);
    }
    for s in &registry.servers {
        let state = match &s.trusted {
            Some(t) => format!(
                "{} tools trusted, about {} tokens of definitions",
                t.tools.len(),
                schema_tokens(s)
            ),
            None => format!("not trusted yet (goat mcp trust {})", s.name),
        };
        println!(
            "{}: {} [{}; network {}] {state}",
            s.name,
            how(s),
            if s.writes { "writes" } else { "read-only" },
            network(s),
        );
    }
    Ok(Outcome::Ok)
}

/// About how many tokens `server`'s trusted definitions take in a request.
pub fn schema_tokens(server: &ServerEntry) -> u64 {
    server.trusted.as_ref().map_or(0, |t| {
        t.tools
            .iter()
            .filter_map(|tool| {
                let name = goat_mcp_client::exposed_name(&server.name, &tool.name).ok()?;
                Some(goat_mcp_client::offer::tool_tokens(
                    &goat_router::ExternalTool {
                        name,
                        server: server.name.clone(),
                        description: goat_mcp_client::render::escape(&tool.description),
                        parameters: tool.input_schema.clone(),
                        writes: server.writes,
                        network: server.network || !server.hosts.is_empty(),
                    },
                ))
            })
            .sum()
    })
}

/// Starts `server` contained in `probe`'s workspace (read-only) and lists
/// what it offers now.
fn live_tools(
    server: &ServerEntry,
    probe: &ProbeArgs,
) -> anyhow::Result<Vec<goat_mcp_client::LiveTool>> {
    let settings = crate::config::Settings::load()?;
    // An empty directory of its own unless one is named: what a server
    // reads into its definitions is pinned, so it must not see where the
    // person happens to run this (their home, with ~/.ssh in it).
    let empty = tempfile::Builder::new()
        .prefix("goat-mcp-look-")
        .tempdir()
        .context("making an empty workspace to start the server in")?;
    let store = paths::store_path(probe.store.db.as_deref())?;
    let permissions = paths::permissions_path(
        probe.permissions.permissions.as_deref(),
        probe.store.db.as_deref(),
    )?;
    let workspace = match &probe.workspace {
        None => goat_session::paths::workspace(Some(empty.path()))?,
        Some(dir) => {
            let workspace = goat_session::paths::workspace(Some(dir))?;
            looked_at_workspace(&workspace, &store, &permissions, probe, &settings)?;
            workspace
        }
    };
    let (store, permissions) = (store.into_resolved(), permissions.into_resolved());
    let containment = settings.command_containment(&workspace, &[&store, &permissions])?;
    goat_command::server_support(&containment)?;
    let (_, boundary) =
        goat_gate::GateHandle::new(&permissions).decide_with_boundary(&goat_gate::GateRequest {
            session_id: "",
            workspace: workspace.to_str(),
            tool: "mcp",
            access: goat_gate::Access::Read,
            paths: &[],
            interactive: goat_gate::Interactive::No,
            writes: goat_gate::WritePolicy::Default,
            now: gate::now(),
        });
    let Some(boundary) = boundary else {
        bail!(
            "the permission rules could not be applied to {}",
            workspace.display()
        );
    };
    let rules = goat_router::BoundaryRules(boundary);
    let mut looked_at = server.clone();
    looked_at.writes = false;
    looked_at.trusted = None;
    goat_mcp_client::list_live(&looked_at, &containment, &rules).map_err(|why| {
        anyhow::anyhow!(
            "the MCP server '{}' could not be started or reached: {why}",
            server.name
        )
    })
}

/// Refuses a `--workspace` for looking at a server that a session would
/// refuse (it holds the store, the permission database, the plugins or the
/// config file), or that is the home directory or holds it (issue 39).
fn looked_at_workspace(
    workspace: &Path,
    store: &goat_state::paths::HostPath,
    permissions: &goat_state::paths::HostPath,
    probe: &ProbeArgs,
    settings: &crate::config::Settings,
) -> anyhow::Result<()> {
    paths::ensure_store_outside(store, workspace)?;
    paths::ensure_permissions_outside(permissions, workspace)?;
    paths::ensure_plugins_outside(&paths::plugin_dir(probe.store.db.as_deref())?, workspace)?;
    if let Some(config) = settings.file_in_use() {
        paths::ensure_config_outside(config, workspace)?;
    }
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from)
        && let Ok(home) = home.canonicalize()
        && home.starts_with(workspace)
    {
        bail!(
            "the workspace {} is or holds the home directory {}: the server would read your \
             files (~/.ssh and the like) while its tools are pinned. Leave out --workspace (the \
             server starts in an empty directory) or name a project's directory",
            workspace.display(),
            home.display()
        );
    }
    Ok(())
}

/// `goat mcp show`: the server, its trusted tools, and how what it offers
/// now differs.
pub fn show(probe: &ProbeArgs) -> anyhow::Result<Outcome> {
    let registry = load(probe.store.db.as_deref())?;
    let Some(server) = registry.get(&probe.name) else {
        bail!(
            "no MCP server is called '{}' (goat mcp list)",
            text::escape_controls(&probe.name)
        );
    };
    let mut out = io::stdout().lock();
    writeln!(out, "MCP server '{}'", server.name)?;
    if let Some(var) = &server.bearer_env {
        writeln!(out, "  bearer token from: ${var}")?;
    }
    writeln!(
        out,
        "  {}: {}",
        if server.url.is_some() {
            "url"
        } else {
            "command"
        },
        how(server)
    )?;
    writeln!(
        out,
        "  workspace: {}",
        if server.writes {
            "read-write"
        } else {
            "read-only"
        }
    )?;
    writeln!(out, "  network: {}", network(server))?;
    writeln!(
        out,
        "  variables: {}",
        if server.env.is_empty() {
            "none".to_owned()
        } else {
            server.env.join(", ")
        }
    )?;
    for dir in &server.read {
        writeln!(
            out,
            "  reads: {}",
            text::escape_controls(&dir.display().to_string())
        )?;
    }
    writeln!(out, "  timeout: {} s", server.timeout_secs)?;
    let Some(trusted) = &server.trusted else {
        writeln!(out, "  not trusted yet: goat mcp trust {}", server.name)?;
        return Ok(Outcome::Ok);
    };
    writeln!(
        out,
        "  trusted tools ({}, about {} tokens):",
        trusted.tools.len(),
        schema_tokens(server)
    )?;
    for tool in &trusted.tools {
        writeln!(
            out,
            "    {}: {}",
            text::escape_controls(&tool.name),
            text::escape_controls(&tool.description)
        )?;
    }
    drop(out);
    let live = match live_tools(server, probe) {
        Ok(live) => live,
        Err(e) => {
            println!(
                "  what it offers now is unknown: {}",
                text::escape_controls(&format!("{e:#}"))
            );
            return Ok(Outcome::Failed);
        }
    };
    let changed = changed_tools(server, &live);
    let new: Vec<&goat_mcp_client::LiveTool> = live
        .iter()
        .filter(|t| !trusted.tools.iter().any(|p| p.name == t.name))
        .collect();
    if changed.is_empty() && new.is_empty() {
        println!("  what it offers now matches what was trusted");
        return Ok(Outcome::Ok);
    }
    for (name, why) in &changed {
        println!(
            "  SUSPENDED {}: {}",
            text::escape_controls(name),
            text::escape_controls(why)
        );
        let before = trusted.tools.iter().find(|p| &p.name == name);
        let after = live.iter().find(|t| &t.name == name).map(definition);
        if let Some(before) = before {
            print_diff(before, after.as_ref());
        }
    }
    for tool in new {
        println!(
            "  new, not trusted: {}: {}",
            text::escape_controls(&tool.name),
            text::escape_controls(tool.description.as_deref().unwrap_or_default())
        );
    }
    Ok(Outcome::Ok)
}

/// How a pinned definition and the live one differ, line by line, escaped.
fn print_diff(
    before: &PinnedTool,
    after: Option<&(String, serde_json::Value, Option<serde_json::Value>)>,
) {
    let Some((description, input, output)) = after else {
        println!("    (no longer offered)");
        return;
    };
    let pairs = [
        (
            "description",
            before.description.clone(),
            description.clone(),
        ),
        ("arguments", pretty(&before.input_schema), pretty(input)),
        (
            "result",
            before
                .output_schema
                .as_ref()
                .map(pretty)
                .unwrap_or_default(),
            output.as_ref().map(pretty).unwrap_or_default(),
        ),
    ];
    for (what, old, new) in pairs {
        if old == new {
            continue;
        }
        println!("    {what} changed:");
        for change in similar::TextDiff::from_lines(&old, &new).iter_all_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => " ",
            };
            println!(
                "      {sign}{}",
                text::escape_controls(change.value().trim_end_matches('\n'))
            );
        }
    }
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(value)).unwrap_or_default();
    text.push('\n');
    text
}

/// `value` with object keys sorted at every depth, so key order never
/// shows as a change.
fn sorted(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            serde_json::Value::Object(
                keys.into_iter()
                    .filter_map(|k| map.get(k).map(|v| (k.clone(), sorted(v))))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(sorted).collect())
        }
        other => other.clone(),
    }
}

/// `goat mcp trust`: start it, show every tool, pin them on a yes.
pub fn trust(args: &TrustArgs) -> anyhow::Result<Outcome> {
    let probe = &args.probe;
    let mut registry = load(probe.store.db.as_deref())?;
    let Some(server) = registry.get(&probe.name).cloned() else {
        bail!(
            "no MCP server is called '{}' (goat mcp list)",
            text::escape_controls(&probe.name)
        );
    };
    let live = live_tools(&server, probe)?;
    let mut pins = Vec::new();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "MCP server '{}' ({}; workspace {}; network {}) offers {} tools:",
        server.name,
        how(&server),
        if server.writes {
            "read-write"
        } else {
            "read-only"
        },
        network(&server),
        live.len()
    )?;
    let mut shared = goat_mcp_client::shared_names(&live);
    for tool in &live {
        let (description, input, output) = definition(tool);
        if shared.contains_key(tool.name.as_ref()) {
            // Said once, at the first of them.
            let Some(count) = shared.insert(tool.name.to_string(), 0).filter(|c| *c > 0) else {
                continue;
            };
            writeln!(
                out,
                "  not offered: {}: {}",
                text::escape_controls(&tool.name),
                goat_mcp_client::shared_name(count)
            )?;
            continue;
        }
        match goat_mcp_client::exposed_name(&server.name, &tool.name) {
            Ok(name) => {
                writeln!(out, "  {name}: {}", text::escape_controls(&description))?;
                writeln!(
                    out,
                    "    arguments: {}",
                    text::escape_controls(&input.to_string())
                )?;
                pins.push(PinnedTool::new(&tool.name, &description, input, output));
            }
            Err(why) => writeln!(out, "  not offered: {}", text::escape_controls(&why))?,
        }
    }
    drop(out);
    if pins.is_empty() {
        bail!(
            "the MCP server '{}' offers no tool a model can call; nothing was trusted",
            server.name
        );
    }
    if !args.yes {
        let terminal = io::stdin().is_terminal() && io::stderr().is_terminal();
        if !terminal {
            bail!(
                "the MCP server '{}' was not trusted: there is no terminal to ask; read the above \
                 and run again with --yes to trust these {} tools",
                server.name,
                pins.len()
            );
        }
        let mut err = io::stderr().lock();
        write!(
            err,
            "Trust these {} tools of '{}'? [y/N] ",
            pins.len(),
            server.name
        )?;
        err.flush()?;
        let mut line = String::new();
        io::BufRead::read_line(&mut io::stdin().lock(), &mut line)?;
        if !matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            println!("not trusted");
            return Ok(Outcome::Failed);
        }
    }
    let count = pins.len();
    if let Some(entry) = registry.get_mut(&server.name) {
        entry.trusted = Some(Trusted {
            at: gate::now(),
            tools: pins,
        });
    }
    registry.save()?;
    println!(
        "trusted {count} tools of MCP server '{}'; they are offered as {}__TOOL from the next session",
        server.name, server.name
    );
    Ok(Outcome::Ok)
}

/// `goat mcp remove`.
pub fn remove(name: &str, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let mut registry = load(db)?;
    let before = registry.servers.len();
    registry.servers.retain(|s| s.name != name);
    if registry.servers.len() == before {
        bail!(
            "no MCP server is called '{}' (goat mcp list)",
            text::escape_controls(name)
        );
    }
    registry.save()?;
    println!("removed MCP server '{name}'; rules naming its tools stay until you remove them");
    Ok(Outcome::Ok)
}
