//! Where GOAT keeps its host state, and the checks that keep it out of the
//! workspace.
//!
//! Tools can write anywhere in the workspace. A store there could be
//! rewritten, and with it the history the model is shown; a permission
//! database there could grant the model whatever it likes; a compiled-code
//! cache there would run native code a tool planted. So every host path is
//! resolved to where it really is (symlinks included) before it is compared
//! with the workspace, and before anything is created. Where each file is
//! comes from `goat_state::paths`; the checks, which know what to say about
//! each file, are here.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use goat_gate::PermissionDb;
use goat_sandbox::{Access, Pen, Sandbox};
use goat_state::paths::{self as state, HostPath};

/// The store's file: see [`goat_state::paths::store_path`].
pub fn store_path(flag: Option<&Path>) -> anyhow::Result<HostPath> {
    Ok(state::store_path(flag)?)
}

/// The permission database: see [`goat_state::paths::permissions_path`].
pub fn permissions_path(flag: Option<&Path>, db_flag: Option<&Path>) -> anyhow::Result<HostPath> {
    Ok(state::permissions_path(flag, db_flag)?)
}

/// The plugin directory: see [`goat_state::paths::plugin_dir`]. One that
/// exists must be private (see [`goat_state::fs::check_private_dir`]).
///
/// # Security
///
/// Its registry says which components the model may call: a directory
/// another user owns or may write is refused before anything in it is read.
pub fn plugin_dir(db_flag: Option<&Path>) -> anyhow::Result<HostPath> {
    let dir = state::plugin_dir(db_flag)?;
    goat_state::fs::check_private_dir(dir.resolved())
        .context("the plugin directory cannot be trusted")?;
    Ok(dir)
}

/// The MCP servers' file: see [`goat_state::paths::mcp_file`]. Beside
/// the store, so outside every workspace the store is; its privacy is
/// checked when it is read ([`goat_mcp_client::Registry::load`]).
///
/// The directory is resolved, the file's own name is not: a link there is
/// refused when read, never followed to write somewhere else.
pub fn mcp_file(db_flag: Option<&Path>) -> anyhow::Result<std::path::PathBuf> {
    let file = state::mcp_file(db_flag)?;
    let named = file.named();
    let dir = named
        .parent()
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf()))
        .unwrap_or_default();
    Ok(dir.join(
        named
            .file_name()
            .unwrap_or(std::ffi::OsStr::new(state::MCP_FILE)),
    ))
}

/// The compiled-code cache: see [`goat_state::paths::cache_dir`].
pub fn cache_dir() -> anyhow::Result<HostPath> {
    Ok(state::cache_dir()?)
}

/// Refuses a workspace that holds the plugin directory: a writing tool
/// could replace a plugin or its registry. (A replaced file would fail its
/// hash check; a rewritten registry would approve anything.)
pub fn ensure_plugins_outside(plugins: &HostPath, workspace: &Path) -> anyhow::Result<()> {
    if plugins.is_inside(workspace) {
        bail!(
            "the plugin directory {} is inside the workspace {}; tools could replace plugins or \
             their approvals. {}",
            plugins.describe(),
            workspace.display(),
            what_to_do(
                plugins,
                "use --db (the plugin directory sits beside the store) to put it elsewhere"
            ),
        );
    }
    Ok(())
}

/// What to do about host state found inside the workspace: `otherwise`
/// (a sentence without its capital), after removing the symlink that led
/// there when one did.
fn what_to_do(path: &HostPath, otherwise: &str) -> String {
    if path.named() == path.resolved() {
        let mut chars = otherwise.chars();
        chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().chain(chars).collect()
        })
    } else {
        format!(
            "Remove the symlink {} or point it outside the workspace, or {otherwise}",
            path.named().display()
        )
    }
}

/// The workspace, from `--workspace` or the current directory: an existing
/// directory, canonical, so stored sessions and rules compare equal however
/// it was spelled.
pub fn workspace(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    let given = match flag {
        Some(dir) => dir.to_owned(),
        None => std::env::current_dir().context("finding the current directory")?,
    };
    Ok(Pen::new(&given, Access::Read)?.root().to_owned())
}

/// Refuses a store inside the workspace.
///
/// # Security
///
/// Tools can write anywhere in the workspace; a store there could be
/// rewritten by a tool, and with it the history the model is shown. The
/// store is compared where it really is, so a symlink (even a dangling
/// one) cannot lead it inside.
pub fn ensure_store_outside(store: &HostPath, workspace: &Path) -> anyhow::Result<()> {
    if store.is_inside(workspace) {
        bail!(
            "the store {} is inside the workspace {}; tools could rewrite the history the model \
             is shown. {}",
            store.describe(),
            workspace.display(),
            what_to_do(store, "use --db (or GOAT_DB) to put it elsewhere"),
        );
    }
    Ok(())
}

/// Refuses a logs directory (`goat run --logs-dir`) inside the workspace:
/// the model's tools could plant a link there and have GOAT write its
/// logs wherever it points, or rewrite the record a harness reads.
pub fn ensure_logs_outside(logs: &Path, workspace: &Path) -> anyhow::Result<()> {
    let logs = HostPath::new(logs)?;
    if logs.is_inside(workspace) {
        bail!(
            "the logs directory {} is inside the workspace {}; the model's tools could rewrite              the logs or redirect them. Pass a --logs-dir outside it",
            logs.describe(),
            workspace.display(),
        );
    }
    Ok(())
}

/// Refuses a config file inside the workspace: a writing tool could set
/// `writes = "allow"`, or point the engine at its own server and name any
/// secret variable as the API key.
pub fn ensure_config_outside(config: &Path, workspace: &Path) -> anyhow::Result<()> {
    let config = HostPath::new(config)?;
    if config.is_inside(workspace) {
        bail!(
            "the config file {} is inside the workspace {}; tools could rewrite GOAT's \
             settings. {}",
            config.describe(),
            workspace.display(),
            what_to_do(&config, "move it, or set GOAT_CONFIG to a file elsewhere"),
        );
    }
    Ok(())
}

/// Refuses a permission database inside the workspace, where it really is.
pub fn ensure_permissions_outside(permissions: &HostPath, workspace: &Path) -> anyhow::Result<()> {
    if permissions.is_inside(workspace) {
        bail!(
            "the permission database {} is inside the workspace {}; tools could rewrite the \
             rules. {}",
            permissions.describe(),
            workspace.display(),
            what_to_do(
                permissions,
                "use --permissions (or --db, which it sits beside) to put it elsewhere"
            ),
        );
    }
    Ok(())
}

/// Refuses a workspace that holds the compiled-code cache before the turn
/// starts, rather than at the first tool call (the sandbox checks again).
pub fn ensure_cache_outside(sandbox: &Sandbox, workspace: &Path) -> anyhow::Result<()> {
    if let Some(cache) = sandbox.cache_dir()
        && cache.starts_with(workspace)
    {
        bail!(
            "the workspace {} contains GOAT's compiled-code cache {}; a writing tool could plant \
             native code there. Choose another workspace, or set GOAT_CACHE_DIR elsewhere",
            workspace.display(),
            cache.display()
        );
    }
    Ok(())
}

/// Creates the permission database's private directory and opens the
/// database once, so a broken or foreign file is reported before any call
/// (the gate would deny every call, failing closed, but not say why up
/// front).
pub fn prepare_permissions(path: &Path) -> anyhow::Result<PermissionDb> {
    if let Some(dir) = path.parent() {
        goat_state::fs::create_private_dir(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(PermissionDb::open(path)?)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_store_behind_a_symlinked_parent_is_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("ws")).unwrap();
        std::os::unix::fs::symlink(real.join("ws"), real.join("link")).unwrap();
        let store = HostPath::new(&real.join("link/state/goat.db")).unwrap();
        assert_eq!(store.resolved(), real.join("ws/state/goat.db"));
        let err = ensure_store_outside(&store, &real.join("ws")).unwrap_err();
        assert!(format!("{err:#}").contains("which resolves to"), "{err:#}");
    }
}
