//! Where GOAT keeps its host state, and the checks that keep it out of the
//! workspace.
//!
//! Tools can write anywhere in the workspace. A store there could be
//! rewritten, and with it the history the model is shown; a permission
//! database there could grant the model whatever it likes; a compiled-code
//! cache there would run native code a tool planted. So every host path is
//! resolved to where it really is (symlinks included) before it is compared
//! with the workspace, and before anything is created.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context, bail};
use goat_sandbox::{Access, Pen, Sandbox};
use goat_shepherd::gate::PermissionDb;
use goat_store::{Store, StoreError};

/// The store's file, from `--db`, else `$GOAT_DB`, else the store's default
/// location, resolved.
pub fn store_path(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    let given = match flag {
        Some(path) => path.to_owned(),
        None => match std::env::var_os("GOAT_DB").filter(|v| !v.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => Store::default_path().context(
                "cannot find where to keep GOAT's store: pass --db FILE, or set GOAT_DB or HOME",
            )?,
        },
    };
    let path = resolve(&given)?;
    if path.file_name().is_none() {
        bail!("the store path {} does not name a file", given.display());
    }
    Ok(path)
}

/// The permission database, from `--permissions`, else `permissions.db`
/// beside the store, resolved.
pub fn permissions_path(flag: Option<&Path>, db_flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(given) => {
            let path = resolve(given)?;
            if path.file_name().is_none() {
                bail!(
                    "the permission database path {} does not name a file",
                    given.display()
                );
            }
            Ok(path)
        }
        None => Ok(store_path(db_flag)?.with_file_name("permissions.db")),
    }
}

/// The plugin directory: `plugins/` beside the store (`--db`, else
/// `$GOAT_DB`, else the default), resolved. Holds the approved components,
/// named by sha256, and the registry of approvals.
pub fn plugin_dir(db_flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    Ok(store_path(db_flag)?.with_file_name("plugins"))
}

/// Refuses a workspace that holds the plugin directory: a writing tool
/// could replace a plugin or its registry. (A replaced file would fail its
/// hash check; a rewritten registry would approve anything.)
pub fn ensure_plugins_outside(plugins: &Path, workspace: &Path) -> anyhow::Result<()> {
    if plugins.starts_with(workspace) {
        bail!(
            "the plugin directory {} is inside the workspace {}; tools could replace plugins or \
             their approvals. Use --db (the plugin directory sits beside the store) to put it \
             elsewhere",
            plugins.display(),
            workspace.display()
        );
    }
    Ok(())
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
pub fn ensure_store_outside(store: &Path, workspace: &Path) -> anyhow::Result<()> {
    Ok(Store::ensure_outside(store, workspace)?)
}

/// Refuses a config file inside the workspace: a writing tool could set
/// `writes = "allow"`, or point the engine at its own server and name any
/// secret variable as the API key.
pub fn ensure_config_outside(config: &Path, workspace: &Path) -> anyhow::Result<()> {
    let config = resolve(config)?;
    match Store::ensure_outside(&config, workspace) {
        Ok(()) => Ok(()),
        Err(StoreError::InsideWorkspace { db, workspace }) => bail!(
            "the config file {} is inside the workspace {}; tools could rewrite GOAT's \
             settings. Move it, or set GOAT_CONFIG to a file elsewhere",
            db.display(),
            workspace.display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// Refuses a permission database inside the workspace, with the store's
/// check but a message that names the right flag.
pub fn ensure_permissions_outside(permissions: &Path, workspace: &Path) -> anyhow::Result<()> {
    match Store::ensure_outside(permissions, workspace) {
        Ok(()) => Ok(()),
        Err(StoreError::InsideWorkspace { db, workspace }) => bail!(
            "the permission database {} is inside the workspace {}; tools could rewrite the \
             rules. Use --permissions (or --db, which it sits beside) to put it elsewhere",
            db.display(),
            workspace.display()
        ),
        Err(other) => Err(other.into()),
    }
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
        goat_store::create_private_dir(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(PermissionDb::open(path)?)
}

/// GOAT's compiled-code cache: `$GOAT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/goat/compiled`, else `~/.cache/goat/compiled`, resolved
/// (the sandbox compares it with canonical workspace roots).
pub fn cache_dir() -> anyhow::Result<PathBuf> {
    let given = if let Some(dir) = std::env::var_os("GOAT_CACHE_DIR").filter(|d| !d.is_empty()) {
        PathBuf::from(dir)
    } else if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(dir).join("goat").join("compiled")
    } else {
        match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
            Some(home) => PathBuf::from(home)
                .join(".cache")
                .join("goat")
                .join("compiled"),
            None => bail!("cannot find a cache directory: set GOAT_CACHE_DIR or HOME"),
        }
    };
    resolve(&given)
}

/// Where `path` really is: its longest existing prefix canonicalized, then
/// the components that do not exist yet.
///
/// # Security
///
/// A path that does not exist yet cannot be canonicalized, and comparing it
/// lexically would let `../ws/x` or a symlinked parent slip past the
/// workspace check. The missing tail cannot contain symlinks (none of it
/// exists), so appending it to the canonical prefix is exact; `..` in the
/// tail is refused rather than guessed at.
pub fn resolve(path: &Path) -> anyhow::Result<PathBuf> {
    let absolute = std::path::absolute(path)
        .with_context(|| format!("cannot make {} absolute", path.display()))?;
    let components: Vec<Component<'_>> = absolute.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let Ok(mut resolved) = prefix.canonicalize() else {
            continue;
        };
        for component in &components[split..] {
            match component {
                Component::Normal(name) => resolved.push(name),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => bail!(
                    "{} has '..' below a directory that does not exist yet; give a plain path",
                    path.display()
                ),
            }
        }
        return Ok(resolved);
    }
    bail!("cannot resolve {}", path.display())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn missing_tails_are_appended_to_the_canonical_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(
            resolve(&dir.path().join("a/./b/goat.db")).unwrap(),
            real.join("a/b/goat.db")
        );
        std::fs::create_dir(real.join("ws")).unwrap();
        assert_eq!(
            resolve(&dir.path().join("ws/../ws/x.db")).unwrap(),
            real.join("ws/x.db")
        );
        assert!(resolve(&dir.path().join("new/../ws/x.db")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_parent_resolves_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("ws")).unwrap();
        std::os::unix::fs::symlink(real.join("ws"), real.join("link")).unwrap();
        let resolved = resolve(&real.join("link/state/goat.db")).unwrap();
        assert_eq!(resolved, real.join("ws/state/goat.db"));
        assert!(ensure_store_outside(&resolved, &real.join("ws")).is_err());
    }
}
