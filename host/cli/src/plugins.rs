//! `goat plugins`: third-party tools the person adds, and how they are
//! loaded.
//!
//! A plugin is a WASI 0.2 component exporting `goat:tool/tool@0.1.0`, like
//! the Pen tools. `goat plugins add FILE` checks it in the sandbox (a
//! component, importing only [`goat_sandbox::PLUGIN_IMPORTS`], with a usable
//! spec), shows the person what it is and what it asks for, and on approval
//! copies it into the plugin directory beside the store, named by its
//! sha256, and records the approval in a small SQLite registry there.
//!
//! The key decisions:
//!
//! - Names. A plugin's tool is offered as `PLUGIN__TOOL` (the plugin's name,
//!   two underscores, the name its spec gives). OpenAI-compatible function
//!   names allow only `[a-zA-Z0-9_-]{1,64}`, so no dots; plugin names may
//!   not contain `__` or end in `_`, and tool names start with a letter, so
//!   the first `__` always splits an exposed name into the plugin and its
//!   tool, and no built-in tool (none contains `__`) can be named. Two
//!   underscores are also how MCP tools are commonly namespaced, which
//!   models have seen. The exposed name is the one the model calls, the gate
//!   judges and the store records.
//! - Hash-bound approval. The approval is of the exact bytes: every load
//!   reads the stored file, recomputes its sha256 and compares it with the
//!   approved one; a mismatch, a missing file or any other problem leaves
//!   that plugin out with a note saying why and how to re-add it, and every
//!   other tool still loads.
//! - Host state. The plugin directory is `plugins/` beside the store
//!   (`--db`, `GOAT_DB`), created private (0700); nothing is ever read from
//!   a workspace, and a workspace containing the plugin directory is
//!   refused, since a writing tool could otherwise replace a plugin (the
//!   hash check would catch it, but refusing is plainer).

use std::fs;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use goat_sandbox::{Access, MAX_PLUGIN_BYTES, Sandbox, Tool};
use goat_shepherd::gate;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::{Outcome, note, paths, text, tools};

/// Between a plugin's name and its tool's name in the exposed name. See the
/// module docs for why two underscores.
pub const SEPARATOR: &str = "__";

/// Longest plugin name. With the separator this leaves a tool name at least
/// 30 bytes inside the 64 that function names may have.
pub const MAX_PLUGIN_NAME_BYTES: usize = 32;

/// The registry's file name inside the plugin directory.
const REGISTRY_FILE: &str = "plugins.db";

/// The registry schema this GOAT reads and writes (SQLite `user_version`).
const REGISTRY_VERSION: i64 = 1;

/// How long a registry write waits for another GOAT holding the lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Subcommand)]
pub enum PluginsCommand {
    /// Check a component, show what it is and asks for, and on approval add
    /// it: its tool is then offered to the model as NAME__TOOL.
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
        /// The store, beside which the plugin directory lives (default:
        /// $GOAT_DB, else $XDG_DATA_HOME/goat/goat.db or
        /// ~/.local/share/goat/goat.db).
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// List the approved plugins.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The store, beside which the plugin directory lives.
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// Show one plugin's approval, and whether its stored file still matches.
    Inspect {
        /// The plugin's name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The store, beside which the plugin directory lives.
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// Remove a plugin: its approval and its stored file.
    Remove {
        /// The plugin's name.
        name: String,
        /// The store, beside which the plugin directory lives.
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
}

pub fn plugins(command: PluginsCommand) -> anyhow::Result<Outcome> {
    match command {
        PluginsCommand::Add {
            file,
            name,
            yes,
            db,
        } => add(&file, name.as_deref(), yes, db.as_deref()),
        PluginsCommand::List { json, db } => list(json, db.as_deref()),
        PluginsCommand::Inspect { name, json, db } => inspect(&name, json, db.as_deref()),
        PluginsCommand::Remove { name, db } => remove(&name, db.as_deref()),
    }
}

/// One approved plugin, as the registry keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Approval {
    /// The plugin's name, chosen when it was added.
    pub name: String,
    /// The tool's name as the model sees it: `name__declared_name`.
    pub tool: String,
    /// The tool's name as its own spec gives it.
    pub declared_name: String,
    /// The spec's description, as approved.
    pub description: String,
    /// sha256 of the approved component, lowercase hex.
    pub sha256: String,
    /// The workspace access the person granted: what the spec declared.
    pub access: String,
    /// The interfaces the component imports.
    pub imports: Vec<String>,
    /// When it was added, Unix seconds.
    pub added_at: i64,
}

/// The exposed name of `tool` in plugin `plugin`.
pub fn exposed_name(plugin: &str, tool: &str) -> String {
    format!("{plugin}{SEPARATOR}{tool}")
}

/// Why `name` cannot be a plugin's name, if it cannot.
fn check_plugin_name(name: &str) -> Result<(), String> {
    let shape = !name.is_empty()
        && name.len() <= MAX_PLUGIN_NAME_BYTES
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.contains(SEPARATOR)
        && !name.ends_with('_');
    if !shape {
        return Err(format!(
            "'{}' is not a usable plugin name: use lowercase letters, digits and single \
             underscores, starting with a letter, not ending in '_', at most \
             {MAX_PLUGIN_NAME_BYTES} bytes (e.g. --name my_tool)",
            text::escape_controls(name)
        ));
    }
    Ok(())
}

/// Why a plugin `name` exposing `exposed` cannot be added next to the
/// built-in tools and the plugins already approved, if it cannot.
fn check_clash(
    name: &str,
    exposed: &str,
    builtins: &[&str],
    existing: &[Approval],
) -> Result<(), String> {
    if builtins.contains(&name) {
        return Err(format!(
            "'{name}' is the name of a built-in tool; choose another plugin name with --name"
        ));
    }
    if builtins.contains(&exposed) {
        return Err(format!(
            "its tool would be named '{exposed}', which is a built-in tool; plugins cannot \
             shadow built-in tools"
        ));
    }
    if let Some(other) = existing.iter().find(|a| a.name == name) {
        return Err(format!(
            "a plugin named '{name}' is already added (tool {}, sha256 {}); remove it first \
             (goat plugins remove {name}) or choose another name with --name",
            other.tool, other.sha256
        ));
    }
    if let Some(other) = existing.iter().find(|a| a.tool == exposed) {
        return Err(format!(
            "its tool would be named '{exposed}', which plugin '{}' already offers; choose \
             another name with --name",
            other.name
        ));
    }
    Ok(())
}

/// The Pen tools' names: what no plugin may take.
fn builtin_names() -> Vec<&'static str> {
    goat_sandbox::builtin::PEN_TOOLS
        .iter()
        .map(|b| b.name)
        .collect()
}

/// Where a plugin's approved bytes are kept.
fn stored_file(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(format!("{sha256}.wasm"))
}

fn add(file: &Path, name: Option<&str>, yes: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = paths::plugin_dir(db)?;
    let wasm = read_capped(file).with_context(|| format!("reading {}", file.display()))?;
    let name = match name {
        Some(name) => name.to_owned(),
        None => {
            let stem = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            if check_plugin_name(stem).is_err() {
                bail!(
                    "cannot name the plugin after its file '{}'; give it a name with --name \
                     (lowercase letters, digits and single underscores)",
                    file.display()
                );
            }
            stem.to_owned()
        }
    };
    check_plugin_name(&name).map_err(anyhow::Error::msg)?;

    // Everything is checked before the person is asked: a component that
    // cannot be loaded is refused here, and never copied.
    let sandbox = tools::sandbox(&crate::config::Settings::load()?.limits())?;
    let tool = sandbox.load_plugin(&name, &wasm)?;
    let exposed = exposed_name(&name, tool.spec().name.as_str());
    let tool = tool.exposed_as(&exposed).with_context(|| {
        format!(
            "the exposed name '{exposed}' is not a usable tool name (at most 64 bytes); choose a \
             shorter plugin name with --name"
        )
    })?;
    let existing = match Registry::open_existing(&dir)? {
        Some(registry) => registry.all()?,
        None => Vec::new(),
    };
    check_clash(&name, &exposed, &builtin_names(), &existing)
        .map_err(|why| anyhow::anyhow!("plugin '{name}' was not added: {why}"))?;

    show(&mut io::stdout().lock(), file, &wasm, &name, &tool)?;
    if !yes {
        let terminal = io::stdin().is_terminal() && io::stderr().is_terminal();
        if !terminal {
            bail!(
                "plugin '{name}' was not added: there is no terminal to ask for approval; read the \
                 above and run again with --yes to approve it"
            );
        }
        if !ask(&format!(
            "Add plugin '{name}' as tool {exposed}, with {} workspace access? [y/N] ",
            tool.spec().access
        ))? {
            println!("not added");
            return Ok(Outcome::Failed);
        }
    }

    goat_store::create_private_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let stored = stored_file(&dir, tool.sha256());
    write_private(&dir, &stored, &wasm).with_context(|| format!("writing {}", stored.display()))?;
    let approval = Approval {
        name: name.clone(),
        tool: exposed.clone(),
        declared_name: tool.declared_name().to_owned(),
        description: tool.spec().description.clone(),
        sha256: tool.sha256().to_owned(),
        access: tool.spec().access.as_str().to_owned(),
        imports: tool.imports().to_vec(),
        added_at: goat_shepherd::gate::now(),
    };
    let mut registry = Registry::create(&dir)?;
    if let Err(e) = registry.insert(&approval, &builtin_names()) {
        // Another GOAT may have added the same name meanwhile; leave its
        // file alone if it approved the same bytes.
        if !registry.references(&approval.sha256)? {
            let _ = fs::remove_file(&stored);
        }
        return Err(e);
    }
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
    let dir = paths::plugin_dir(db)?;
    let approvals = match Registry::open_existing(&dir)? {
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
            writeln!(
                out,
                "{:width$}  {:10}  {}  added {}",
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

/// Whether a plugin's stored file is still the approved one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
enum FileState {
    /// The file's sha256 is the approved one.
    Ok,
    /// The file is there but its bytes changed.
    Changed { found_sha256: String },
    /// The file cannot be read.
    Unreadable { reason: String },
}

fn file_state(dir: &Path, approval: &Approval) -> FileState {
    match read_stored(dir, &approval.sha256) {
        Ok(bytes) => {
            let found = goat_sandbox::sha256_hex(&bytes);
            if found == approval.sha256 {
                FileState::Ok
            } else {
                FileState::Changed {
                    found_sha256: found,
                }
            }
        }
        Err(e) => FileState::Unreadable {
            reason: format!("{e:#}"),
        },
    }
}

fn inspect(name: &str, json: bool, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let dir = paths::plugin_dir(db)?;
    let approval = Registry::open_existing(&dir)?
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
    let dir = paths::plugin_dir(db)?;
    let Some(mut registry) = Registry::open_existing(&dir)? else {
        bail!("no plugin named '{}'", text::escape_controls(name));
    };
    let Some(approval) = registry.remove(name)? else {
        bail!("no plugin named '{}'", text::escape_controls(name));
    };
    if !registry.references(&approval.sha256)? {
        let file = stored_file(&dir, &approval.sha256);
        match fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", file.display())),
        }
    }
    println!("removed plugin '{name}' (tool {})", approval.tool);
    // Rules outlive the plugin; a plugin added later under the same name
    // would inherit them, so say which they are.
    let permissions = paths::permissions_path(None, db)?;
    if permissions.exists()
        && let Ok(rules) = gate::PermissionDb::open(&permissions).and_then(|p| p.list())
    {
        for rule in rules
            .iter()
            .filter(|r| r.tool.as_deref() == Some(approval.tool.as_str()))
        {
            note(format_args!(
                "rule {rule} still names {}; a plugin added later as '{name}' would get it. \
                 Remove it with `goat permissions revoke {}`",
                approval.tool, rule.id
            ));
        }
    }
    Ok(Outcome::Ok)
}

/// The exposed tool names of the approved plugins beside the store (`db` as
/// `--db` gives it), whether or not their files still pass the hash check:
/// rules may name them.
pub fn approved_names(db: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let dir = paths::plugin_dir(db)?;
    Ok(match Registry::open_existing(&dir)? {
        Some(registry) => registry.all()?.into_iter().map(|a| a.tool).collect(),
        None => Vec::new(),
    })
}

/// The approved plugins in `dir` that pass every check, as tools named as
/// approved; and, for each one left out, a line saying which and why.
///
/// # Security
///
/// A plugin is loaded only if its stored file's sha256 is the approved one
/// (recomputed now, from the bytes that are then compiled: there is no gap
/// between checking and loading), it loads as a plugin
/// ([`Sandbox::load_plugin`]), and its spec declares the approved access and
/// name. Anything else leaves it out; the other tools are unaffected.
pub fn approved_tools(sandbox: &Sandbox, dir: &Path) -> (Vec<Tool>, Vec<String>) {
    let approvals = match Registry::open_existing(dir).and_then(|r| match r {
        Some(r) => r.all(),
        None => Ok(Vec::new()),
    }) {
        Ok(approvals) => approvals,
        Err(e) => return (Vec::new(), vec![format!("no plugins were loaded: {e:#}")]),
    };
    let builtins = builtin_names();
    let mut tools = Vec::new();
    let mut problems = Vec::new();
    for approval in approvals {
        match load_one(sandbox, dir, &approval, &builtins) {
            Ok(tool) => tools.push(tool),
            Err(why) => problems.push(format!(
                "plugin '{}' ({}) was not loaded: {why}",
                approval.name, approval.tool
            )),
        }
    }
    (tools, problems)
}

fn load_one(
    sandbox: &Sandbox,
    dir: &Path,
    approval: &Approval,
    builtins: &[&str],
) -> Result<Tool, String> {
    let readd = format!(
        "if you trust the new file, run goat plugins remove {0} and goat plugins add FILE --name \
         {0} to approve it again",
        approval.name
    );
    let wasm = read_stored(dir, &approval.sha256).map_err(|e| format!("{e:#}; {readd}"))?;
    let found = goat_sandbox::sha256_hex(&wasm);
    if found != approval.sha256 {
        return Err(format!(
            "its file {} changed since it was approved: expected sha256 {}, found {found}; {readd}",
            stored_file(dir, &approval.sha256).display(),
            approval.sha256
        ));
    }
    let tool = sandbox
        .load_plugin(&approval.name, &wasm)
        .map_err(|e| format!("{e:#}"))?;
    if tool.spec().access.as_str() != approval.access || tool.spec().name != approval.declared_name
    {
        return Err(format!(
            "its spec (tool '{}', {} access) is not what was approved (tool '{}', {} access)",
            tool.spec().name,
            tool.spec().access,
            approval.declared_name,
            approval.access
        ));
    }
    if builtins.contains(&approval.tool.as_str()) {
        return Err(format!("'{}' is a built-in tool's name", approval.tool));
    }
    tool.exposed_as(&approval.tool)
        .map_err(|e| format!("{e:#}"))
}

/// Reads a stored plugin file: a regular file, not a symlink, at most
/// [`MAX_PLUGIN_BYTES`].
fn read_stored(dir: &Path, sha256: &str) -> anyhow::Result<Vec<u8>> {
    let path = stored_file(dir, sha256);
    let meta =
        fs::symlink_metadata(&path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.file_type().is_file() {
        bail!("{} is not a regular file", path.display());
    }
    read_capped(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads at most one byte more than [`MAX_PLUGIN_BYTES`], so an enormous
/// file is refused without being read whole; the sandbox says it is too big.
fn read_capped(path: &Path) -> anyhow::Result<Vec<u8>> {
    let file = fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        bail!("not a regular file");
    }
    let mut bytes = Vec::new();
    file.take(u64::try_from(MAX_PLUGIN_BYTES).unwrap_or(u64::MAX) + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `bytes` to `path` (mode 0600) through a temporary file and a
/// rename, so a reader never sees half a plugin.
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!(".tmp-{}.wasm", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// The plugin registry: one row per approved plugin, in SQLite so that two
/// GOATs adding at once cannot lose one another's approval.
struct Registry {
    conn: Connection,
    path: PathBuf,
}

impl Registry {
    /// Opens the registry in `dir` if there is one. Never creates anything.
    fn open_existing(dir: &Path) -> anyhow::Result<Option<Self>> {
        let path = dir.join(REGISTRY_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .with_context(|| format!("cannot open the plugin registry {}", path.display()))?;
        // Another `goat plugins add` may be writing: wait, rather than
        // leave every plugin out of this run.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let registry = Self { conn, path };
        registry.check_version()?;
        Ok(Some(registry))
    }

    /// Opens the registry in `dir`, creating it (and its table) if needed.
    fn create(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(REGISTRY_FILE);
        let conn = Connection::open(&path)
            .with_context(|| format!("cannot open the plugin registry {}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mut registry = Self { conn, path };
        let tx = registry
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == 0 {
            tx.execute_batch(
                "CREATE TABLE plugins (
                     name TEXT PRIMARY KEY NOT NULL,
                     tool TEXT NOT NULL UNIQUE,
                     declared_name TEXT NOT NULL,
                     description TEXT NOT NULL,
                     sha256 TEXT NOT NULL,
                     access TEXT NOT NULL,
                     imports TEXT NOT NULL,
                     added_at INTEGER NOT NULL
                 );",
            )?;
            tx.pragma_update(None, "user_version", REGISTRY_VERSION)?;
        }
        tx.commit()?;
        registry.check_version()?;
        Ok(registry)
    }

    fn check_version(&self) -> anyhow::Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .with_context(|| format!("cannot read the plugin registry {}", self.path.display()))?;
        if version != REGISTRY_VERSION {
            bail!(
                "the plugin registry {} has schema version {version}; this GOAT reads version \
                 {REGISTRY_VERSION}",
                self.path.display()
            );
        }
        Ok(())
    }

    fn all(&self) -> anyhow::Result<Vec<Approval>> {
        let mut stmt = self.conn.prepare(
            "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
             FROM plugins ORDER BY name",
        )?;
        let rows = stmt.query_map([], row_to_approval)?;
        rows.collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("cannot read the plugin registry {}", self.path.display()))
    }

    fn get(&self, name: &str) -> anyhow::Result<Option<Approval>> {
        Ok(self
            .conn
            .query_row(
                "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
                 FROM plugins WHERE name = ?1",
                [name],
                row_to_approval,
            )
            .optional()?)
    }

    /// Records `approval` in one transaction, checking for clashes again
    /// inside it.
    fn insert(&mut self, approval: &Approval, builtins: &[&str]) -> anyhow::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = {
            let mut stmt = tx.prepare(
                "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
                 FROM plugins WHERE name = ?1 OR tool = ?2",
            )?;
            stmt.query_map(params![approval.name, approval.tool], row_to_approval)?
                .collect::<Result<Vec<_>, _>>()?
        };
        check_clash(&approval.name, &approval.tool, builtins, &existing)
            .map_err(|why| anyhow::anyhow!("plugin '{}' was not added: {why}", approval.name))?;
        tx.execute(
            "INSERT INTO plugins
                 (name, tool, declared_name, description, sha256, access, imports, added_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                approval.name,
                approval.tool,
                approval.declared_name,
                approval.description,
                approval.sha256,
                approval.access,
                serde_json::to_string(&approval.imports)?,
                approval.added_at
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Deletes `name`'s approval, returning it.
    fn remove(&mut self, name: &str) -> anyhow::Result<Option<Approval>> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let approval = tx
            .query_row(
                "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
                 FROM plugins WHERE name = ?1",
                [name],
                row_to_approval,
            )
            .optional()?;
        if approval.is_some() {
            tx.execute("DELETE FROM plugins WHERE name = ?1", [name])?;
        }
        tx.commit()?;
        Ok(approval)
    }

    /// Whether any approval still names the file with `sha256`.
    fn references(&self, sha256: &str) -> anyhow::Result<bool> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM plugins WHERE sha256 = ?1 LIMIT 1",
                [sha256],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }
}

fn row_to_approval(row: &rusqlite::Row<'_>) -> rusqlite::Result<Approval> {
    let imports: String = row.get(6)?;
    Ok(Approval {
        name: row.get(0)?,
        tool: row.get(1)?,
        declared_name: row.get(2)?,
        description: row.get(3)?,
        sha256: row.get(4)?,
        access: row.get(5)?,
        imports: serde_json::from_str(&imports).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e))
        })?,
        added_at: row.get(7)?,
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_cannot_hide_the_separator() {
        for ok in ["wc", "my_tool", "a1", "x_y_z"] {
            assert_eq!(check_plugin_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "Wc",
            "1wc",
            "a__b",
            "wc_",
            "_wc",
            "w-c",
            "w.c",
            "wc\n",
            "ü",
            "a_very_long_plugin_name_that_is_over_32",
        ] {
            assert!(check_plugin_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_first_separator_splits_an_exposed_name_exactly() {
        // Plugin names have no `__` and do not end in `_`; tool names start
        // with a letter. So the first `__` is the separator.
        for (plugin, tool) in [("wc", "count"), ("a_b", "c__d"), ("x", "y_")] {
            let exposed = exposed_name(plugin, tool);
            let (p, t) = exposed.split_once(SEPARATOR).unwrap();
            assert_eq!((p, t), (plugin, tool));
        }
    }

    fn approval(name: &str, tool: &str) -> Approval {
        Approval {
            name: name.to_owned(),
            tool: tool.to_owned(),
            declared_name: String::new(),
            description: String::new(),
            sha256: "00".to_owned(),
            access: "read".to_owned(),
            imports: Vec::new(),
            added_at: 0,
        }
    }

    #[test]
    fn clashes_are_refused_as_a_table() {
        let builtins = ["read_file", "write_file"];
        let existing = [approval("wc", "wc__count")];
        let table: [(&str, &str, Option<&str>); 5] = [
            ("lines", "lines__count", None),
            ("read_file", "read_file__x", Some("built-in tool")),
            ("write", "write_file", Some("cannot shadow built-in")),
            ("wc", "wc__other", Some("already added")),
            ("other", "wc__count", Some("plugin 'wc' already offers")),
        ];
        for (name, exposed, want) in table {
            match (check_clash(name, exposed, &builtins, &existing), want) {
                (Ok(()), None) => {}
                (Err(why), Some(want)) => assert!(why.contains(want), "{name}: {why}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn registry_round_trips_and_refuses_a_clash_inside_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Registry::open_existing(dir.path()).unwrap().is_none());
        let mut r = Registry::create(dir.path()).unwrap();
        let mut a = approval("wc", "wc__count");
        a.imports = vec!["wasi:filesystem/types@0.2.12".to_owned()];
        r.insert(&a, &[]).unwrap();
        assert!(r.insert(&approval("wc", "wc__x"), &[]).is_err());
        assert!(r.insert(&approval("w", "wc__count"), &[]).is_err());
        let again = Registry::open_existing(dir.path()).unwrap().unwrap();
        assert_eq!(again.all().unwrap(), vec![a.clone()]);
        assert!(again.references("00").unwrap());
        let mut again = again;
        assert_eq!(again.remove("wc").unwrap(), Some(a));
        assert!(!again.references("00").unwrap());
        assert_eq!(again.remove("wc").unwrap(), None);
    }
}
