//! One session, ready for turns: the store, the permission gate, the
//! router and the Shepherd, assembled by [`open`] for `goat run`, `goat
//! chat` and `goat demo` alike.
//!
//! [`for_turn`] is how `run` and `chat` get there: everything that can be
//! checked before the model is asked is checked first, and is exit 2 (the
//! workspace, where the store, the permission database and the config file
//! live, never inside the workspace; the engine settings; the session to
//! resume). The demo decides its own parts (a throwaway workspace, a
//! replayed engine) and hands them to [`open`] too.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use goat_catalog::{Loaded, PluginSource};
use goat_engine::{EngineClient, EngineConfig};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, ApprovalMode, Approver, ModeSwitch, RouterConfig};
use goat_sandbox::{Limits, Sandbox, SandboxBuilder, Tool};
use goat_shepherd::{DEFAULT_MAX_ROUNDS, Shepherd};
use goat_store::{SessionInfo, SessionLock, Store};

use crate::config::{EngineFlags, Setting, Settings, Source, Writes};
use crate::instructions::ProjectInstructions;
use crate::{Notes, paths, text};

mod mcp;

pub use mcp::{host_files, mcp_servers, server_reads};

/// What a front end asks of a session that runs turns: where, with which
/// engine and model, under which permissions, in which session. Each
/// `None` leaves the setting to the config file and environment.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The directory the tools may see (default: the current directory).
    pub workspace: Option<PathBuf>,
    /// The engine flags.
    pub engine: EngineFlags,
    /// The store (`--db`).
    pub db: Option<PathBuf>,
    /// The permission database (`--permissions`).
    pub permissions: Option<PathBuf>,
    /// `--allow-writes`.
    pub allow_writes: bool,
    /// `--allow-commands`.
    pub allow_commands: bool,
    /// The approval mode to start in.
    pub mode: Option<ApprovalMode>,
    /// Most rounds a turn may take.
    pub max_rounds: Option<usize>,
    /// The engine's context window in tokens.
    pub context_tokens: Option<u64>,
    /// The session to continue.
    pub session: Option<String>,
}

/// A session ready for turns: its Shepherd, the store it records in.
pub struct Opened {
    /// Runs its turns.
    pub shepherd: Shepherd,
    /// The store it records in.
    pub store: Arc<Mutex<Store>>,
    /// Its id.
    pub session_id: String,
    /// Where the store is.
    pub store_path: PathBuf,
    /// The workspace, resolved.
    pub workspace: PathBuf,
    /// The engine, as recorded.
    pub engine_url: String,
    /// The model.
    pub model: String,
    /// The approval mode the router reads at every call; `/mode` sets it.
    pub mode: ModeSwitch,
    /// The permission database, for `/status`.
    pub permissions_db: PathBuf,
    /// This process drives the session while it holds this; dropping it
    /// (or the process ending, however it ends) lets another take over.
    pub lock: SessionLock,
    /// The project instructions (`AGENTS.md`) in the system prompt.
    pub instructions: ProjectInstructions,
    /// Most rounds a turn may take.
    pub max_rounds: usize,
    /// Whether the session was carried on rather than new.
    pub resumed: bool,
}

impl Opened {
    /// Which `AGENTS.md` files reached the system prompt, and their sizes.
    pub fn instruction_files(&self) -> &[crate::instructions::InstructionFile] {
        self.instructions.files()
    }

    /// How many turns the session has recorded.
    pub fn turn_count(&self) -> anyhow::Result<i64> {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(store.session(&self.session_id)?.turns)
    }
}

/// Whether the session is new or carried on.
pub enum Start {
    /// A new session; `announce` says its id and how to continue it.
    New {
        /// Say the new id on the notes.
        announce: bool,
    },
    /// An existing one, checked by the caller to work in this workspace.
    Resume(SessionInfo),
}

/// What a session is assembled from. Each command decides these; [`open`]
/// puts them together the one way.
pub struct Parts<'a> {
    /// Where what assembly has to say goes.
    pub notes: Notes<'a>,
    /// The workspace, resolved.
    pub workspace: PathBuf,
    /// Where the store is.
    pub store_path: PathBuf,
    /// The store, open.
    pub store: Store,
    /// The permission database.
    pub permissions_db: PathBuf,
    /// The engine client.
    pub engine: EngineClient,
    /// The engine as the session records it, and the model.
    pub engine_url: String,
    /// The model.
    pub model: String,
    /// New or carried on.
    pub start: Start,
    /// Which plugin tools join the Pen's.
    pub plugins: Plugins<'a>,
    /// The sandbox's limits.
    pub limits: Limits,
    /// `--allow-writes` or not.
    pub writes: WritePolicy,
    /// With an approver, writes no rule decides are asked of it; without
    /// one they are denied.
    pub approver: Option<Box<dyn Approver>>,
    /// Most rounds a turn may take.
    pub max_rounds: usize,
    /// The command tool, when offered.
    pub commands: Option<goat_router::CommandTool>,
    /// ADR-0067: unwrapped Qwen3-Coder calls count as unexecuted markup.
    pub unwrapped_calls: bool,
    /// The approval mode to start in.
    pub mode: ApprovalMode,
    /// ADR-0074: how the context window is chosen.
    pub context: goat_shepherd::WindowChoice,
    /// ADR-0086: the trusted MCP servers' tools, if any.
    pub external: Option<Arc<dyn goat_router::ExternalTools>>,
    /// Issue 41: the person's hooks ([`hooks`]), fired on every call.
    pub hooks: Option<goat_hooks::Hooks>,
}

/// Builds the sandbox and tools, creates or resumes the session in the
/// store, and puts the router (with its gate) and the Shepherd together.
///
/// # Security
///
/// A resumed session is locked first, before anything touches it: while
/// another live process drives it, this fails at once (saying which
/// process) rather than marking that process's live calls interrupted or
/// adding a turn beside its turn. A new session is locked as soon as it
/// exists, before its id is shown to anyone.
pub fn open(parts: Parts<'_>) -> anyhow::Result<Opened> {
    let Parts {
        notes,
        workspace,
        store_path,
        mut store,
        permissions_db,
        engine,
        engine_url,
        model,
        start,
        plugins,
        limits,
        writes,
        approver,
        max_rounds,
        commands,
        unwrapped_calls,
        mode,
        context,
        external,
        hooks,
    } = parts;
    let (resume, announce) = match start {
        Start::Resume(info) => (Some((store.lock_session(&info.id)?, info)), false),
        Start::New { announce } => (None, announce),
    };
    let (sandbox, tools) = sandbox_and_tools(plugins, &limits, notes)?;
    paths::ensure_cache_outside(&sandbox, &workspace)?;
    paths::prepare_permissions(&permissions_db)?;

    let resumed = resume.is_some();
    let (session_id, lock) = match resume {
        Some((lock, info)) => {
            // Ours alone now: what is pending was left by a run that ended.
            let interrupted = store.interrupt_pending(&info.id)?;
            notes(&format!(
                "resuming session {}; {interrupted} tool call(s) left pending by an earlier run \
                 marked interrupted",
                info.id
            ));
            (info.id, lock)
        }
        None => {
            let id = store.create_session(&workspace, &engine_url, &model)?;
            let lock = store.lock_session(&id)?;
            if announce {
                notes(&format!("session {id} (continue it with --session {id})"));
            }
            (id, lock)
        }
    };
    let store = Arc::new(Mutex::new(store));

    let mode = ModeSwitch::new(mode);
    let router = router(
        RouterParts {
            sandbox,
            tools,
            workspace: workspace.clone(),
            permissions_db: permissions_db.clone(),
            writes,
            commands,
            mode: mode.clone(),
            hooks,
        },
        &session_id,
        approver,
    );
    let router = match external {
        Some(tools) => router.with_external(tools),
        None => router,
    };
    let instructions = crate::instructions::load(&workspace);
    // The repository speaks to the model: say so, so it is never unseen.
    for file in instructions.files() {
        let cut = if u64::try_from(file.used).is_ok_and(|used| used < file.bytes) {
            format!(", cut to {} bytes", file.used)
        } else {
            String::new()
        };
        notes(&format!(
            "project instructions from {} ({} bytes{cut}) are in the system prompt",
            text::escape_controls(&file.path.display().to_string()),
            file.bytes
        ));
    }
    for (path, why) in instructions.skipped() {
        notes(&format!(
            "project instructions {} were not read: {why}",
            text::escape_controls(&path.display().to_string())
        ));
    }
    let shepherd = Shepherd::new(
        engine,
        router,
        store.clone(),
        session_id.clone(),
        system_prompt(&workspace),
        max_rounds,
    )
    .with_project_prompt(Arc::new(instructions.clone()))
    .with_unwrapped_calls(unwrapped_calls)
    .with_context_window(context);
    Ok(Opened {
        shepherd,
        store,
        session_id,
        store_path,
        workspace,
        engine_url,
        model,
        mode,
        permissions_db,
        lock,
        instructions,
        max_rounds,
        resumed,
    })
}

/// What a session's router is made of, before the session exists.
pub(crate) struct RouterParts {
    /// Runs the tools.
    pub(crate) sandbox: Sandbox,
    /// The tools on offer (besides `run_command`).
    pub(crate) tools: Vec<Tool>,
    /// The workspace, resolved.
    pub(crate) workspace: PathBuf,
    /// The permission database.
    pub(crate) permissions_db: PathBuf,
    /// `--allow-writes` or not.
    pub(crate) writes: WritePolicy,
    /// The command tool, when offered.
    pub(crate) commands: Option<goat_router::CommandTool>,
    /// The approval mode, read at every call.
    pub(crate) mode: ModeSwitch,
    /// The person's hooks, if any.
    pub(crate) hooks: Option<goat_hooks::Hooks>,
}

/// The one way a session's router is put together, for a chat's Shepherd
/// and for direct calls alike.
pub(crate) fn router(
    parts: RouterParts,
    session_id: &str,
    approver: Option<Box<dyn Approver>>,
) -> AppToolRouter {
    let RouterParts {
        sandbox,
        tools,
        workspace,
        permissions_db,
        writes,
        commands,
        mode,
        hooks,
    } = parts;
    // With someone to ask, a write no rule decides is asked of them (once
    // per call); without one it is denied. It never runs unasked.
    let router = AppToolRouter::new(
        Arc::new(sandbox),
        tools,
        RouterConfig {
            workspace,
            permissions_db,
            session_id: session_id.to_owned(),
            interactive: if approver.is_some() {
                Interactive::Yes
            } else {
                Interactive::No
            },
            writes,
        },
    )
    .with_mode(mode);
    let router = match approver {
        Some(approver) => router.with_approver(approver),
        None => router,
    };
    let router = match hooks {
        Some(hooks) => router.with_hooks(hooks),
        None => router,
    };
    match commands {
        Some(tool) => router.with_commands(tool),
        None => router,
    }
}

/// For `goat run` and `goat chat`: checks everything that can be checked
/// before the model is asked (exit 2 when something is wrong), then
/// creates or resumes the session. With an approver, writes no rule
/// decides are asked of it; without one they are denied.
pub fn for_turn(
    opts: &OpenOptions,
    approver: Option<Box<dyn Approver>>,
    notes: Notes<'_>,
) -> anyhow::Result<Opened> {
    let db = opts.db.as_deref();
    let Checked {
        workspace,
        store_path,
        permissions_db,
        settings,
        mode,
    } = checked(opts)?;

    // A new session needs a usable engine now; say what is missing before
    // creating any file. A resumed one may take its settings from the
    // session, so that waits for the store.
    let fresh = match opts.session {
        None => Some(engine_with(&settings, None, notes)?),
        Some(_) => None,
    };
    if let Some(id) = &opts.session
        && !store_path.exists()
    {
        bail!(
            "no session '{}': there is no store at {} yet",
            text::escape_controls(id),
            store_path.display()
        );
    }
    let store = Store::open(&store_path)?;
    let resumed = match &opts.session {
        Some(id) => Some(resumable(&store, id, &workspace)?),
        None => None,
    };
    let (engine, engine_url, model) = match fresh {
        Some(fresh) => fresh,
        None => engine_with(&settings, resumed.as_ref(), notes)?,
    };
    let store_path_for_commands = store_path.clone();
    let permissions_for_commands = permissions_db.clone();
    open(Parts {
        notes,
        plugins: Plugins::Approved {
            db,
            workspace: Some(&workspace),
        },
        workspace: workspace.clone(),
        store_path,
        store,
        permissions_db,
        engine,
        engine_url,
        model,
        start: match resumed {
            Some(info) => Start::Resume(info),
            None => Start::New { announce: true },
        },
        limits: settings.limits(),
        writes: match settings.writes.value {
            Some(Writes::Allow) => WritePolicy::AllowAll,
            Some(Writes::Ask) | None => WritePolicy::Default,
        },
        approver,
        max_rounds: settings.max_rounds.value.map_or(DEFAULT_MAX_ROUNDS, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        }),
        commands: command_tool(
            &settings,
            &workspace,
            &[&store_path_for_commands, &permissions_for_commands],
            opts.allow_commands,
            notes,
        )?,
        unwrapped_calls: settings.unwrapped_calls(),
        mode,
        context: settings.context_window(),
        external: mcp_servers(
            &settings,
            &workspace,
            &[&store_path_for_commands, &permissions_for_commands],
            db,
            notes,
        )?,
        hooks: Some(hooks(
            &settings,
            db,
            &workspace,
            &[&store_path_for_commands, &permissions_for_commands],
        )?),
    })
}

/// The person's hooks (issue 41): read from the hooks file beside the
/// store, never from a workspace, contained as commands are here but with
/// the network closed. A hooks file that cannot be read stops the session:
/// it never runs without the hooks the person added.
pub fn hooks(
    settings: &Settings,
    db: Option<&Path>,
    workspace: &Path,
    host_files: &[&Path],
) -> anyhow::Result<goat_hooks::Hooks> {
    let file = goat_state::paths::hooks_file(db)?;
    let registry = goat_hooks::Registry::load(file.resolved())?;
    let containment = settings.command_containment(workspace, host_files)?;
    Ok(goat_hooks::Hooks::new(registry.hooks, containment))
}

/// Where a session works and keeps its record, checked: everything
/// [`for_turn`] and [`crate::direct::prepare`] refuse before any file is
/// made.
pub(crate) struct Checked {
    /// The workspace, resolved.
    pub(crate) workspace: PathBuf,
    /// The store, outside the workspace.
    pub(crate) store_path: PathBuf,
    /// The permission database, outside the workspace.
    pub(crate) permissions_db: PathBuf,
    /// The settings with the command's flags on top.
    pub(crate) settings: Settings,
    /// The approval mode to start in.
    pub(crate) mode: ApprovalMode,
}

/// Checks the workspace and where the store, the permission database,
/// the plugins and the config file live (never inside the workspace), and
/// reads the settings and the mode. Creates nothing.
pub(crate) fn checked(opts: &OpenOptions) -> anyhow::Result<Checked> {
    let db = opts.db.as_deref();
    let workspace = paths::workspace(opts.workspace.as_deref())?;
    let store_path = paths::store_path(db)?;
    paths::ensure_store_outside(&store_path, &workspace)?;
    let store_path = store_path.into_resolved();
    let permissions_db = paths::permissions_path(opts.permissions.as_deref(), db)?;
    paths::ensure_permissions_outside(&permissions_db, &workspace)?;
    let permissions_db = permissions_db.into_resolved();
    // Checked again when the plugins load; here so that nothing (not even
    // the store) is created before a refusal.
    paths::ensure_plugins_outside(&paths::plugin_dir(db)?, &workspace)?;
    let settings = settings(opts)?;
    let mode = match &settings.mode.value {
        None => ApprovalMode::Ask,
        Some(name) => ApprovalMode::from_name(name).with_context(|| {
            format!(
                "{}: '{}' is not a mode; use ask, accept-edits or read-only",
                settings.mode.source,
                text::escape_controls(name)
            )
        })?,
    };
    if let Some(config) = settings.file_in_use() {
        paths::ensure_config_outside(config, &workspace)?;
    }
    Ok(Checked {
        workspace,
        store_path,
        permissions_db,
        settings,
        mode,
    })
}

/// The command tool for this workspace, or `None` (with a note saying
/// why) where the kernel cannot contain a command.
pub fn command_tool(
    settings: &Settings,
    workspace: &Path,
    host_files: &[&Path],
    allow_commands: bool,
    notes: Notes<'_>,
) -> anyhow::Result<Option<goat_router::CommandTool>> {
    let containment = settings.command_containment(workspace, host_files)?;
    if let Err(why) = goat_router::command_containment(&containment) {
        notes(&format!("run_command is not offered: {why}"));
        return Ok(None);
    }
    Ok(Some(goat_router::CommandTool {
        containment,
        policy: if allow_commands {
            goat_gate::CommandPolicy::AllowAll
        } else {
            goat_gate::CommandPolicy::Default
        },
        egress: settings.command_egress()?,
    }))
}

/// The session to resume, if it exists and works in this workspace.
fn resumable(store: &Store, id: &str, workspace: &Path) -> anyhow::Result<SessionInfo> {
    let info = store.find_session(id).with_context(|| {
        format!(
            "cannot resume; `goat sessions list --db {}` shows the sessions",
            store.path().display()
        )
    })?;
    let stored = Path::new(&info.workspace);
    let same = stored == workspace || stored.canonicalize().is_ok_and(|c| c == workspace);
    if !same {
        bail!(
            "session {} works in {}, not {}; run it there, or pass --workspace {}",
            info.id,
            text::escape_controls(&info.workspace),
            workspace.display(),
            text::escape_controls(&info.workspace)
        );
    }
    Ok(info)
}

/// The settings for a turn: the config file and environment, with this
/// command's flags on top.
fn settings(opts: &OpenOptions) -> anyhow::Result<Settings> {
    let mut settings = Settings::load()?;
    settings.apply_engine_flags(&opts.engine);
    settings
        .mode
        .flag(opts.mode.map(|m| m.name().to_owned()), "--mode");
    settings.max_rounds.flag(
        opts.max_rounds
            .map(|n| u64::try_from(n).unwrap_or(u64::MAX)),
        "--max-rounds",
    );
    settings
        .context_tokens
        .flag(opts.context_tokens, "--context-tokens");
    settings
        .writes
        .flag(opts.allow_writes.then_some(Writes::Allow), "--allow-writes");
    Ok(settings)
}

/// How many requests the engine `opts` name serves at once, where it says
/// (llama-server's `total_slots`); `None` otherwise.
pub async fn engine_slots(opts: &OpenOptions) -> Option<u32> {
    let checked = checked(opts).ok()?;
    let (engine, _, _) = engine_with(&checked.settings, None, &|_| {}).ok()?;
    engine.slots().await
}

/// The engine client, its URL and the model. A flag or environment
/// variable wins; then, when resuming, what the session used; then the
/// config file. A missing one is named with every way to set it.
pub fn engine_with(
    settings: &Settings,
    resumed: Option<&SessionInfo>,
    notes: Notes<'_>,
) -> anyhow::Result<(EngineClient, String, String)> {
    let pick = |setting: &Setting<String>, session: Option<&String>| {
        if setting.is_explicit() {
            setting.value.clone()
        } else {
            session.cloned().or_else(|| setting.value.clone())
        }
    };
    let url = pick(&settings.engine, resumed.map(|s| &s.engine_url)).context(
        "no engine URL: pass --engine URL, set GOAT_ENGINE_URL, or put engine = \"...\" in \
         the config file (e.g. http://127.0.0.1:8080/v1; `goat config show` says where it is)",
    )?;
    let model = pick(&settings.model, resumed.map(|s| &s.model));
    let mut config = EngineConfig::new(url.clone(), model.clone().unwrap_or_default());
    config.api_key = api_key(&settings.api_key_env)?;
    config.ca_cert = settings.ca_cert.value.as_ref().map(PathBuf::from);
    settings.apply_timeouts(&mut config);
    config.sampling = settings.sampling();
    config.cache_prompt = !settings.no_cache_prompt.value.unwrap_or(false);
    let model = match model {
        Some(model) => model,
        None => only_model(&config, notes)?,
    };
    config.model = model.clone();
    Ok((EngineClient::new(config)?, url, model))
}

/// With no model named: the engine's one model, when `/models` lists
/// exactly one (llama-server serves the one it loaded); said on stderr.
/// Otherwise what to pass, with the models it lists.
fn only_model(config: &EngineConfig, notes: Notes<'_>) -> anyhow::Result<String> {
    const MISSING: &str = "no model name: pass --model NAME, set GOAT_MODEL, or put model = \
                           \"...\" in the config file";
    let client = EngineClient::new(config.clone())?;
    let listed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(client.list_models());
    match listed {
        Ok(models) => match models.as_slice() {
            [one] => {
                notes(&format!(
                    "no model named; the engine serves one, {}, so using it",
                    text::escape_controls(one)
                ));
                Ok(one.clone())
            }
            [] => bail!("{MISSING} (the engine lists no models at its /models)"),
            many => bail!(
                "{MISSING}; the engine serves {}",
                text::escape_controls(&many.join(", "))
            ),
        },
        Err(e) => bail!(
            "{MISSING} (asking the engine which models it serves failed: {})",
            text::engine_failure(&e)
        ),
    }
}

/// The bearer key from the variable `api_key_env` names. The key itself
/// is never a flag or a config value: flags show up in `ps` and shell
/// history, and config files get shared.
fn api_key(var: &Setting<String>) -> anyhow::Result<Option<String>> {
    let Some(name) = var.value.as_deref() else {
        return Ok(None);
    };
    let from = match &var.source {
        Source::Flag(flag) => (*flag).to_owned(),
        other => format!("api_key_env ({other})"),
    };
    match std::env::var(name) {
        Ok(key) if !key.is_empty() => Ok(Some(key)),
        Ok(_) => bail!("{from} names {name}, but {name} is empty"),
        Err(std::env::VarError::NotPresent) => {
            bail!("{from} names {name}, but {name} is not set")
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            bail!("{from} names {name}, but {name} is not valid UTF-8")
        }
    }
}

/// Short and true: where the model is, how paths work, and that denials
/// and failures are real.
pub fn system_prompt(workspace: &Path) -> String {
    format!(
        "You are a coding assistant working in the workspace {}. Use the tools offered to read, \
         search and change files there. Every tool path is relative to the workspace root (for \
         example 'src/main.rs'); nothing outside the workspace can be reached. A call may be \
         denied by the user's permission settings or fail; its result says so, and then \
         nothing happened. Report what you did accurately, and never claim a change you did \
         not make.",
        workspace.display()
    )
}

/// Which tools besides the built-in Pen tools [`sandbox_and_tools`] loads.
#[derive(Clone, Copy, Debug)]
pub enum Plugins<'a> {
    /// The Pen tools alone (`goat probe`, and `goat plugins add` checking
    /// a new component).
    None,
    /// Also the approved plugins in the plugin directory beside the store
    /// (`db` as `--db` gives it). With a `workspace`, a plugin directory
    /// inside it is refused.
    Approved {
        /// `--db`, beside which the plugin directory is.
        db: Option<&'a Path>,
        /// The workspace the plugin directory must be outside of.
        workspace: Option<&'a Path>,
    },
}

/// A sandbox with GOAT's compiled-code cache, running calls under `limits`.
pub fn sandbox(limits: &Limits) -> anyhow::Result<Sandbox> {
    Ok(SandboxBuilder::new()
        .cache_dir(paths::cache_dir()?.into_resolved())
        .limits(limits.clone())
        .build()?)
}

/// A sandbox that uses GOAT's compiled-code cache if it exists and never
/// creates or writes it: for listing the tools, which changes nothing on
/// disk. Compiling the Pen tools in memory takes well under a second.
pub fn read_only_sandbox(limits: &Limits) -> anyhow::Result<Sandbox> {
    Ok(SandboxBuilder::new()
        .read_only_cache_dir(paths::cache_dir()?.into_resolved())
        .limits(limits.clone())
        .build()?)
}

/// The [`sandbox`], the Pen file tools and, when asked, the approved
/// plugins: the one place tools are loaded.
///
/// A plugin that fails its checks (its file changed since it was approved,
/// it no longer loads) is left out with a note on stderr saying why; the
/// other tools load as usual.
pub fn sandbox_and_tools(
    plugins: Plugins<'_>,
    limits: &Limits,
    notes: Notes<'_>,
) -> anyhow::Result<(Sandbox, Vec<Tool>)> {
    let sandbox = sandbox(limits)?;
    let tools = tools_in(&sandbox, plugins, notes)?;
    Ok((sandbox, tools))
}

/// The Pen file tools and, when asked, the approved plugins, loaded in
/// `sandbox` (see [`sandbox_and_tools`]). Reads the plugin directory and
/// its registry, and writes neither.
pub fn tools_in(
    sandbox: &Sandbox,
    plugins: Plugins<'_>,
    notes: Notes<'_>,
) -> anyhow::Result<Vec<Tool>> {
    let dir = match plugins {
        Plugins::None => None,
        Plugins::Approved { db, workspace } => {
            let dir = paths::plugin_dir(db)?;
            if let Some(workspace) = workspace {
                paths::ensure_plugins_outside(&dir, workspace)?;
            }
            Some(dir.into_resolved())
        }
    };
    let source = match &dir {
        Some(dir) => PluginSource::Approved(dir),
        None => PluginSource::None,
    };
    let Loaded { tools, problems } = goat_catalog::load_tools(sandbox, source)?;
    for problem in problems {
        notes(&problem.to_string());
    }
    Ok(tools)
}
