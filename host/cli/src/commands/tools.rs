//! `goat tools list` and `goat tools call`: the tools, by hand.
//!
//! A direct call takes the same road as a model's: the AppToolRouter checks
//! the arguments against the tool's schema, asks the permission gate, and
//! runs the tool in the sandbox with the access the gate allowed. So a rule
//! that stops the model stops this too, and `--allow-writes` means exactly
//! what it means for `goat run`.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Subcommand;
use goat_engine::ToolCall;
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_store::CallStatus;

use crate::args::{DbArg, PermissionsArg};
use crate::{Outcome, paths, session, text};

/// The session id direct calls are judged under: rules scoped to a real
/// session never apply to them.
const DIRECT_SESSION: &str = "cli";

#[derive(Subcommand)]
pub enum ToolsCommand {
    /// List the tools GOAT offers, with the workspace access each needs.
    #[command(mut_arg("db", |a| a.help(
        "The store, beside which the plugin directory lives (default: $GOAT_DB, else \
         $XDG_DATA_HOME/goat/goat.db or ~/.local/share/goat/goat.db)"
    )))]
    List {
        /// Print the full specs (name, description, JSON Schema, access, path fields) as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: DbArg,
    },
    /// Run one tool through the permission gate and the sandbox, and print
    /// its result.
    #[command(mut_arg("db", |a| a.help(
        "The store, whose directory holds the default permission database (default: $GOAT_DB, \
         else $XDG_DATA_HOME/goat/goat.db or ~/.local/share/goat/goat.db)"
    )))]
    Call {
        /// Tool name, as `goat tools list` shows it.
        name: String,
        /// Arguments as a JSON object, or `-` to read them from stdin.
        args_json: String,
        /// The workspace the tool may see (default: the current directory).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Let a writing tool (write_file, edit_file) change files in the
        /// workspace where no deny rule forbids it.
        #[arg(long)]
        allow_writes: bool,
        /// Let run_command run a command no rule decides (inside the command
        /// sandbox); deny rules still win.
        #[arg(long)]
        allow_commands: bool,
        #[command(flatten)]
        permissions: PermissionsArg,
        #[command(flatten)]
        store: DbArg,
    },
}

pub fn tools(command: ToolsCommand) -> anyhow::Result<Outcome> {
    match command {
        ToolsCommand::List { json, store } => list(json, store.db.as_deref()),
        ToolsCommand::Call {
            name,
            args_json,
            workspace,
            allow_writes,
            allow_commands,
            permissions,
            store,
        } => call(&Call {
            name,
            args_json,
            workspace,
            allow_writes,
            allow_commands,
            permissions: permissions.permissions,
            db: store.db,
        }),
    }
}

/// Lists the tools, creating and changing nothing: the compiled-code cache
/// is used if it is there and never written, the plugin registry only read.
fn list(json: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let settings = crate::config::Settings::load()?;
    let sandbox = session::read_only_sandbox(&settings.limits())?;
    // The workspace a command would run in here: the current directory.
    let workspace = paths::workspace(None).unwrap_or_else(|_| Path::new(".").to_path_buf());
    let containment = settings
        .command_containment(&workspace, &[])
        .unwrap_or_else(|_| goat_router::default_containment(&workspace, None));
    let contained = goat_router::command_containment(&containment);
    let tools = session::tools_in(
        &sandbox,
        session::Plugins::Approved {
            db,
            workspace: None,
        },
        &crate::stderr_note,
    )?;
    let mut out = io::stdout().lock();
    if json {
        // Each tool's kind, as session.started names it (one mapping).
        let kind = |kind: goat_router::ToolKind| {
            serde_json::to_value(goat_session::drive::tool_source(&kind))
        };
        let specs: Vec<serde_json::Value> = tools
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(t.spec())?;
                v["sha256"] = serde_json::Value::String(t.sha256().to_owned());
                v["kind"] = kind(match t.kind() {
                    goat_sandbox::ToolKind::Builtin => goat_router::ToolKind::Builtin,
                    _ => goat_router::ToolKind::Plugin,
                })?;
                if t.kind() == goat_sandbox::ToolKind::Plugin {
                    v["plugin"] = serde_json::Value::Bool(true);
                    v["declared_name"] = serde_json::Value::String(t.declared_name().to_owned());
                }
                Ok(v)
            })
            .collect::<serde_json::Result<_>>()?;
        let mut specs: Vec<serde_json::Value> = specs;
        let mcp = super::mcp_servers::trusted_tools(db);
        let mcp_kind = kind(goat_router::ToolKind::Mcp { server: None })?;
        let schema = goat_router::command_schema(&containment);
        specs.push(match &contained {
            Ok(used) => serde_json::json!({
                "name": schema.name,
                "description": schema.description,
                "parameters": schema.parameters,
                "access": "command",
                "kind": kind(goat_router::ToolKind::Command)?,
                "path_fields": [],
                "native": true,
                "containment": match used {
                    goat_command::Used::Namespace => "namespace",
                    goat_command::Used::Landlock => "landlock",
                },
                "limits": used.limits(),
                "no_view": goat_router::view_unavailable(&containment),
            }),
            Err(why) => serde_json::json!({
                "name": schema.name,
                "access": "command",
                "kind": kind(goat_router::ToolKind::Command)?,
                "native": true,
                "not_offered": why,
            }),
        });
        specs.extend(
            mcp.into_iter()
                .map(|(name, server, description, parameters)| {
                    serde_json::json!({
                        "name": name,
                        "description": description,
                        "parameters": parameters,
                        "access": "mcp",
                        "kind": mcp_kind.clone(),
                        "path_fields": [],
                        "mcp_server": server,
                    })
                }),
        );
        serde_json::to_writer_pretty(&mut out, &specs)?;
        writeln!(out)?;
    } else {
        let width = tools
            .iter()
            .map(|t| t.spec().name.len())
            .chain([goat_router::RUN_COMMAND.len()])
            .max()
            .unwrap_or(0);
        for t in &tools {
            let spec = t.spec();
            let summary = spec
                .description
                .split(". ")
                .next()
                .unwrap_or("")
                .trim_end_matches('.');
            // A plugin's description is a third party's text.
            writeln!(
                out,
                "{:width$}  {:10}  {}",
                spec.name,
                spec.access.as_str(),
                text::escape_controls(summary)
            )?;
        }
        // The native command tool, offered only where it can be contained.
        let command = goat_router::RUN_COMMAND;
        match &contained {
            Ok(goat_command::Used::Namespace) => writeln!(
                out,
                "{command:width$}  {:10}  Run a shell command line in the workspace, contained \
                 (a namespace view: its changes land only after GOAT inspected them; Landlock, \
                 seccomp, no capabilities, limits)",
                "command"
            )?,
            Ok(used @ goat_command::Used::Landlock) => writeln!(
                out,
                "{command:width$}  {:10}  Run a shell command line in the workspace, contained \
                 (Landlock, seccomp, limits); {}{}",
                "command",
                used.limits(),
                goat_router::view_unavailable(&containment)
                    .map(|why| format!(" ({})", text::escape_controls(&why)))
                    .unwrap_or_default()
            )?,
            Err(why) => writeln!(
                out,
                "{command:width$}  {:10}  not offered: {}",
                "command",
                text::escape_controls(why)
            )?,
        }
        // The trusted MCP servers' tools (ADR-0086), offered in sessions
        // where their servers can be contained.
        for (name, server, description, _) in super::mcp_servers::trusted_tools(db) {
            let summary = description
                .split(". ")
                .next()
                .unwrap_or("")
                .trim_end_matches('.');
            writeln!(
                out,
                "{name:width$}  {:10}  {} (MCP server '{server}')",
                "mcp",
                text::escape_controls(summary)
            )?;
        }
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

struct Call {
    name: String,
    args_json: String,
    workspace: Option<PathBuf>,
    allow_writes: bool,
    allow_commands: bool,
    permissions: Option<PathBuf>,
    db: Option<PathBuf>,
}

fn call(call: &Call) -> anyhow::Result<Outcome> {
    let args_text = if call.args_json == "-" {
        let mut s = String::new();
        io::stdin()
            .read_to_string(&mut s)
            .context("reading arguments from stdin")?;
        s
    } else {
        call.args_json.clone()
    };
    // Bad JSON here is the person's typo, not a call for the router to
    // report as a tool failure.
    match serde_json::from_str::<serde_json::Value>(&args_text) {
        Ok(serde_json::Value::Object(_)) => {}
        Ok(other) => bail!(
            "ARGS_JSON must be a JSON object such as '{{\"path\": \"README.md\"}}', got: {other}"
        ),
        Err(e) => bail!(
            "ARGS_JSON is not valid JSON ({e}); quote it for the shell, e.g. \
             '{{\"path\": \"README.md\"}}'"
        ),
    }

    let workspace = paths::workspace(call.workspace.as_deref())?;
    let settings = crate::config::Settings::load()?;
    if let Some(config) = settings.file_in_use() {
        paths::ensure_config_outside(config, &workspace)?;
    }
    let writes = if call.allow_writes || settings.writes.value == Some(crate::config::Writes::Allow)
    {
        WritePolicy::AllowAll
    } else {
        WritePolicy::Default
    };
    let (sandbox, tools) = session::sandbox_and_tools(
        session::Plugins::Approved {
            db: call.db.as_deref(),
            workspace: Some(&workspace),
        },
        &settings.limits(),
        &crate::stderr_note,
    )?;
    let is_command = call.name == goat_router::RUN_COMMAND;
    if is_command && let Err(why) = goat_router::command_support() {
        bail!("run_command is not offered here: {why}");
    }
    if !is_command && !tools.iter().any(|t| t.spec().name == call.name) {
        let mut names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        if goat_router::command_support().is_ok() {
            names.push(goat_router::RUN_COMMAND);
        }
        bail!(
            "no tool named '{}'; available: {}",
            call.name,
            names.join(", ")
        );
    }
    paths::ensure_cache_outside(&sandbox, &workspace)?;
    let permissions_db = paths::permissions_path(call.permissions.as_deref(), call.db.as_deref())?;
    paths::ensure_permissions_outside(&permissions_db, &workspace)?;
    let permissions_db = permissions_db.into_resolved();
    paths::prepare_permissions(&permissions_db)?;
    let permissions_for_commands = permissions_db.clone();
    let permissions_for_hooks = permissions_db.clone();

    let router = AppToolRouter::new(
        Arc::new(sandbox),
        tools,
        RouterConfig {
            workspace: workspace.clone(),
            permissions_db,
            session_id: DIRECT_SESSION.to_owned(),
            // No approval prompt for direct calls: the flags and rules are
            // the whole answer.
            interactive: Interactive::No,
            writes,
        },
    );
    let router = if is_command {
        let store_path = paths::store_path(call.db.as_deref())?.into_resolved();
        match session::command_tool(
            &settings,
            &workspace,
            &[&store_path, &permissions_for_commands],
            call.allow_commands,
            &crate::stderr_note,
        )? {
            Some(tool) => router.with_commands(tool),
            None => router,
        }
    } else {
        router
    };
    // The person's hooks run on a direct call too: nothing bypasses one.
    // The hooks file is beside the store: a store in the workspace would
    // let the model plant the hooks.
    let store_for_hooks = paths::store_path(call.db.as_deref())?;
    paths::ensure_store_outside(&store_for_hooks, &workspace)?;
    let store_for_hooks = store_for_hooks.into_resolved();
    let mut router = router.with_hooks(session::hooks(
        &settings,
        call.db.as_deref(),
        &workspace,
        &[&store_for_hooks, &permissions_for_hooks],
    )?);
    let routed = router.route(&ToolCall {
        index: 0,
        id: DIRECT_SESSION.to_owned(),
        id_generated: true,
        name: call.name.clone(),
        raw_arguments: args_text.clone(),
        arguments: goat_engine::parse_arguments(&args_text),
    })?;

    match routed.status {
        CallStatus::Ok => {
            let mut out = io::stdout().lock();
            out.write_all(routed.result.as_bytes())?;
            if !routed.result.ends_with('\n') {
                writeln!(out)?;
            }
            out.flush()?;
            Ok(Outcome::Ok)
        }
        CallStatus::Error | CallStatus::Denied | CallStatus::Pending | CallStatus::Interrupted => {
            // Printed exactly as the model would be shown it.
            let _ = writeln!(io::stderr().lock(), "{}", routed.result);
            Ok(Outcome::Failed)
        }
    }
}
