//! The one place the tools a model is offered are assembled.

use std::fmt;
use std::path::Path;

use goat_sandbox::{Sandbox, Tool};

use crate::naming::builtin_names;
use crate::registry::{Approval, Registry, read_declared, read_stored, stored_file};

/// Which tools besides the built-in Pen tools [`load_tools`] loads.
#[derive(Clone, Copy, Debug)]
pub enum PluginSource<'a> {
    /// The Pen tools alone (`goat probe`, the demo, and `goat plugins add`
    /// checking a new component).
    None,
    /// Also the approved plugins in this plugin directory.
    Approved(&'a Path),
}

/// A plugin left out of [`Loaded::tools`], and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadProblem {
    /// The registry itself could not be read: no plugin was loaded.
    Registry {
        /// Why.
        reason: String,
    },
    /// One plugin failed a check; the others are unaffected.
    Plugin {
        /// Its name.
        name: String,
        /// Its exposed tool name.
        tool: String,
        /// Why, and what to do.
        reason: String,
    },
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Registry { reason } => write!(f, "no plugins were loaded: {reason}"),
            Self::Plugin { name, tool, reason } => {
                write!(f, "plugin '{name}' ({tool}) was not loaded: {reason}")
            }
        }
    }
}

/// What [`load_tools`] found.
pub struct Loaded {
    /// Every tool that passed its checks: the Pen tools first, then the
    /// approved plugins by name.
    pub tools: Vec<Tool>,
    /// The plugins left out, each with why.
    pub problems: Vec<LoadProblem>,
}

/// The Pen file tools and, from `plugins`, the approved plugins that pass
/// every check.
///
/// # Security
///
/// A plugin is loaded only if its stored file's sha256 is the approved one
/// (recomputed now, from the bytes that are then compiled: there is no gap
/// between checking and loading), it loads as a plugin
/// ([`Sandbox::load_plugin`]), its spec declares the approved access and
/// name, and its exposed name is no built-in's. Anything else leaves it out
/// with a [`LoadProblem`]; the other tools are unaffected.
pub fn load_tools(
    sandbox: &Sandbox,
    plugins: PluginSource<'_>,
) -> Result<Loaded, goat_sandbox::SandboxError> {
    let mut tools = sandbox.load_pen_tools()?;
    let mut problems = Vec::new();
    if let PluginSource::Approved(dir) = plugins {
        // Read only: loading the tools (for a run, or to list them) never
        // creates, migrates or adopts the registry.
        let approvals = match Registry::open_read_only(dir).and_then(|r| match r {
            Some(r) => r.all(),
            None => Ok(Vec::new()),
        }) {
            Ok(approvals) => approvals,
            Err(e) => {
                problems.push(LoadProblem::Registry {
                    reason: e.to_string(),
                });
                Vec::new()
            }
        };
        let builtins = builtin_names();
        for approval in approvals {
            match load_one(sandbox, dir, &approval, &builtins) {
                Ok(tool) => tools.push(tool),
                Err(reason) => problems.push(LoadProblem::Plugin {
                    name: approval.name,
                    tool: approval.tool,
                    reason,
                }),
            }
        }
    }
    Ok(Loaded { tools, problems })
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
    let wasm = read_stored(dir, &approval.sha256).map_err(|e| format!("{e}; {readd}"))?;
    let found = goat_sandbox::sha256_hex(&wasm);
    if found != approval.sha256 {
        return Err(format!(
            "its file {} changed since it was approved: expected sha256 {}, found {found}; {readd}",
            stored_file(dir, &approval.sha256).display(),
            approval.sha256
        ));
    }
    // Offered from the spec recorded when it was added, compiled on its
    // first call; a plugin added before specs were recorded is compiled now
    // to read its spec.
    let tool = match read_declared(dir, &approval.sha256) {
        Some(declared) => sandbox.load_plugin_declared(&approval.name, wasm, declared),
        None => sandbox.load_plugin(&approval.name, &wasm),
    }
    .map_err(|e| format!("{e:#}"))?;
    if tool.spec().description != approval.description {
        return Err(format!("its description is not the one approved; {readd}"));
    }
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
    goat_egress::Allowlist::parse(&approval.grants.hosts)
        .map_err(|e| format!("its granted hosts are not usable ({e}); {readd}"))?;
    if builtins.contains(&approval.tool.as_str()) {
        return Err(format!("'{}' is a built-in tool's name", approval.tool));
    }
    tool.exposed_as(&approval.tool)
        .and_then(|tool| tool.with_grants(approval.grants.clone()))
        .map_err(|e| format!("{e:#}"))
}
