//! A session with no engine, for a front end whose caller names the calls
//! itself (`goat mcp serve`).
//!
//! [`prepare`] checks what [`crate::for_turn`] checks, with the same
//! code (the workspace; the store, permissions, plugins and config file
//! outside it; the mode) and loads the same tools, before anyone connects.
//! [`Prepared::open`] then makes the session once the caller has said who
//! it is, assembling the router the one way ([`crate::assemble`]) and
//! handing it to the Shepherd's [`DirectCalls`], which records each call
//! as a turn the way a chat's are recorded.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::bail;
use goat_gate::WritePolicy;
use goat_router::{ApprovalMode, Approver, DirectCalls, ModeSwitch, RUN_COMMAND};
use goat_sandbox::{Sandbox, Tool};
use goat_store::{SessionLock, Store};

use crate::assemble::{Checked, OpenOptions, RouterParts, checked, command_tool, router};
use crate::config::Writes;
use crate::{Notes, Plugins, paths, sandbox_and_tools, text};

/// What the session's row says its engine is: no engine, calls from a
/// client over MCP's stdio transport. Never a URL, so no command that
/// resumes a session can take it for one.
pub const DIRECT_ENGINE: &str = "mcp:stdio";

/// Most characters of a client's self-given name kept as the session's
/// model: room for any real name and version, not a payload.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;

/// What a direct session is asked for: where, under which permissions,
/// with which tools. Each `None` leaves the setting to the config file and
/// environment.
#[derive(Clone, Debug, Default)]
pub struct DirectOptions {
    /// The directory the tools may see (default: the current directory).
    pub workspace: Option<PathBuf>,
    /// The store (`--db`).
    pub db: Option<PathBuf>,
    /// The permission database (`--permissions`).
    pub permissions: Option<PathBuf>,
    /// `--allow-writes`.
    pub allow_writes: bool,
    /// `--allow-commands`.
    pub allow_commands: bool,
    /// The approval mode.
    pub mode: Option<ApprovalMode>,
    /// Only these tools (`--tools`); `None` is every tool on offer.
    pub tools: Option<Vec<String>>,
    /// `--offer-undo`: the client may undo the session's changes
    /// ([`crate::undo`]).
    pub offer_undo: bool,
}

/// Checked, with its tools loaded; no session yet.
pub struct Prepared {
    checked: Checked,
    sandbox: Sandbox,
    tools: Vec<Tool>,
    commands: Option<goat_router::CommandTool>,
    allow_commands: bool,
    offer_undo: bool,
    hooks: goat_hooks::Hooks,
}

/// A direct session, open and locked.
pub struct DirectSession {
    /// Runs and records the calls.
    pub calls: DirectCalls,
    /// Its id.
    pub session_id: String,
    /// Where the store is.
    pub store_path: PathBuf,
    /// The workspace, resolved.
    pub workspace: PathBuf,
    /// The approval mode.
    pub mode: ApprovalMode,
    /// This process drives the session while it holds this.
    pub lock: SessionLock,
    /// The store the calls are recorded in.
    pub store: Arc<Mutex<Store>>,
    /// Whether the client may undo the session's changes (`--offer-undo`).
    pub offer_undo: bool,
}

/// Checks everything [`crate::for_turn`] checks (exit 2 when something is
/// wrong), loads the Pen tools and the approved plugins, and keeps those
/// `opts.tools` names. Creates no session.
pub fn prepare(opts: &DirectOptions, notes: Notes<'_>) -> anyhow::Result<Prepared> {
    let open = OpenOptions {
        workspace: opts.workspace.clone(),
        db: opts.db.clone(),
        permissions: opts.permissions.clone(),
        allow_writes: opts.allow_writes,
        allow_commands: opts.allow_commands,
        mode: opts.mode,
        ..OpenOptions::default()
    };
    let checked = checked(&open)?;
    let db = opts.db.as_deref();
    let (sandbox, tools) = sandbox_and_tools(
        Plugins::Approved {
            db,
            workspace: Some(&checked.workspace),
        },
        &checked.settings.limits(),
        notes,
    )?;
    paths::ensure_cache_outside(&sandbox, &checked.workspace)?;
    paths::prepare_permissions(&checked.permissions_db)?;
    let commands = command_tool(
        &checked.settings,
        &checked.workspace,
        &[&checked.store_path, &checked.permissions_db],
        opts.allow_commands,
        notes,
    )?;
    let hooks = crate::assemble::hooks(
        &checked.settings,
        db,
        &checked.workspace,
        &[&checked.store_path, &checked.permissions_db],
    )?;
    let (tools, commands) = match &opts.tools {
        None => (tools, commands),
        Some(names) => only(names, tools, commands)?,
    };
    Ok(Prepared {
        checked,
        sandbox,
        tools,
        commands,
        allow_commands: opts.allow_commands,
        offer_undo: opts.offer_undo,
        hooks,
    })
}

/// The tools `names` lists, each of which must be on offer.
fn only(
    names: &[String],
    tools: Vec<Tool>,
    commands: Option<goat_router::CommandTool>,
) -> anyhow::Result<(Vec<Tool>, Option<goat_router::CommandTool>)> {
    let offered: Vec<&str> = tools
        .iter()
        .map(|t| t.spec().name.as_str())
        .chain(commands.is_some().then_some(RUN_COMMAND))
        .collect();
    if let Some(unknown) = names.iter().find(|n| !offered.contains(&n.as_str())) {
        bail!(
            "--tools names '{}', which is not on offer here; the tools are: {}",
            text::escape_controls(unknown),
            offered.join(", ")
        );
    }
    let wanted = |name: &str| names.iter().any(|n| n == name);
    let tools = tools
        .into_iter()
        .filter(|t| wanted(&t.spec().name))
        .collect();
    let commands = commands.filter(|_| wanted(RUN_COMMAND));
    Ok((tools, commands))
}

impl Prepared {
    /// Whether `run_command` can be offered at all here (the kernel can
    /// contain it, and `--tools` did not leave it out).
    pub fn can_offer_commands(&self) -> bool {
        self.commands.is_some()
    }

    /// The command containment the settings describe for the workspace
    /// (where commands' change layers, and attempts' layers, are kept).
    pub fn command_containment(&self) -> anyhow::Result<goat_command::Containment> {
        let c = &self.checked;
        c.settings
            .command_containment(&c.workspace, &[&c.store_path, &c.permissions_db])
    }

    /// The workspace, resolved.
    pub fn workspace(&self) -> &std::path::Path {
        &self.checked.workspace
    }

    /// Creates the session, recording `client` (the caller's own name,
    /// cut to [`MAX_CLIENT_NAME_CHARS`]) as its model and locking it, and
    /// assembles its router. With an `approver`, writes and commands no
    /// rule decides are asked of it; without one they are denied, saying
    /// which flag or rule would allow them. `run_command` is offered only
    /// where a command can be allowed: with `--allow-commands`, or with an
    /// approver to ask.
    pub fn open(
        self,
        client: &str,
        approver: Option<Box<dyn Approver>>,
    ) -> anyhow::Result<DirectSession> {
        self.open_for(DIRECT_ENGINE, client, approver)
    }

    /// [`Prepared::open`], with `engine` as what the session's row says
    /// its engine is (never a URL: nothing resumes such a session).
    pub fn open_for(
        self,
        engine: &str,
        client: &str,
        approver: Option<Box<dyn Approver>>,
    ) -> anyhow::Result<DirectSession> {
        let Prepared {
            checked,
            sandbox,
            tools,
            commands,
            allow_commands,
            offer_undo,
            hooks,
        } = self;
        let Checked {
            workspace,
            store_path,
            permissions_db,
            settings,
            mode,
        } = checked;
        let client: String = client.chars().take(MAX_CLIENT_NAME_CHARS).collect();
        let mut store = Store::open(&store_path)?;
        let session_id = store.create_session(&workspace, engine, &client)?;
        let lock = store.lock_session(&session_id)?;
        let store = Arc::new(Mutex::new(store));
        let commands = commands.filter(|_| allow_commands || approver.is_some());
        let router = router(
            RouterParts {
                sandbox,
                tools,
                workspace: workspace.clone(),
                permissions_db,
                writes: match settings.writes.value {
                    Some(Writes::Allow) => WritePolicy::AllowAll,
                    Some(Writes::Ask) | None => WritePolicy::Default,
                },
                commands,
                mode: ModeSwitch::new(mode),
                hooks: Some(hooks),
            },
            &session_id,
            approver,
        );
        Ok(DirectSession {
            calls: DirectCalls::new(router, store.clone(), session_id.clone()),
            store,
            offer_undo,
            session_id,
            store_path,
            workspace,
            mode,
            lock,
        })
    }
}
