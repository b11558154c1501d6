//! Where GOAT keeps its host state: the store, the permission database, the
//! plugin directory and the compiled-code cache.
//!
//! Every path is resolved to where it really is (symlinks included) before
//! anyone compares it with a workspace or creates anything: tools can write
//! anywhere in the workspace, so host state found there could be rewritten
//! by the model. The comparisons themselves live with the callers, which
//! know what to say about each file.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The store's file name in its default directory.
pub const STORE_FILE: &str = "goat.db";

/// The permission database's file name, beside the store.
pub const PERMISSIONS_FILE: &str = "permissions.db";

/// The plugin directory's name, beside the store.
pub const PLUGIN_DIR: &str = "plugins";

/// The plugin registry's file name inside the plugin directory.
pub const PLUGIN_REGISTRY_FILE: &str = "plugins.db";

/// Why a host-state path could not be found or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// No flag, variable or home directory says where the store goes.
    #[error("cannot find where to keep GOAT's store: pass --db FILE, or set GOAT_DB or HOME")]
    NoStoreHome,
    /// No variable or home directory says where the cache goes.
    #[error("cannot find a cache directory: set GOAT_CACHE_DIR or HOME")]
    NoCacheHome,
    /// A path that must name a file names a directory (`/`, `..`).
    #[error("the {what} path {} does not name a file", path.display())]
    NotAFile {
        /// Which file: "store", "permission database".
        what: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// The current directory could not be read to make a path absolute.
    #[error("cannot make {} absolute", path.display())]
    NotAbsolute {
        /// The path as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `..` below a directory that does not exist yet.
    #[error(
        "{} has '..' below a directory that does not exist yet; give a plain path",
        path.display()
    )]
    ParentInMissingTail {
        /// The path as given.
        path: PathBuf,
    },
    /// No prefix of the path exists (not even the root).
    #[error("cannot resolve {}", path.display())]
    Unresolvable {
        /// The path as given.
        path: PathBuf,
    },
}

/// A non-empty environment variable.
fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The store's default location: `$XDG_DATA_HOME/goat/goat.db`, else
/// `~/.local/share/goat/goat.db`; `None` with neither variable set.
pub fn default_store_path() -> Option<PathBuf> {
    let base = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("goat").join(STORE_FILE))
}

/// The store's file, from `--db`, else `$GOAT_DB`, else
/// [`default_store_path`], resolved.
pub fn store_path(flag: Option<&Path>) -> Result<PathBuf, PathError> {
    let given = match flag {
        Some(path) => path.to_owned(),
        None => match var("GOAT_DB") {
            Some(path) => PathBuf::from(path),
            None => default_store_path().ok_or(PathError::NoStoreHome)?,
        },
    };
    let path = resolve(&given)?;
    if path.file_name().is_none() {
        return Err(PathError::NotAFile {
            what: "store",
            path: given,
        });
    }
    Ok(path)
}

/// The permission database, from `--permissions`, else `permissions.db`
/// beside the store, resolved.
pub fn permissions_path(flag: Option<&Path>, db_flag: Option<&Path>) -> Result<PathBuf, PathError> {
    match flag {
        Some(given) => {
            let path = resolve(given)?;
            if path.file_name().is_none() {
                return Err(PathError::NotAFile {
                    what: "permission database",
                    path: given.to_owned(),
                });
            }
            Ok(path)
        }
        None => Ok(store_path(db_flag)?.with_file_name(PERMISSIONS_FILE)),
    }
}

/// The plugin directory: `plugins/` beside the store (`--db`, else
/// `$GOAT_DB`, else the default), resolved. Holds the approved components,
/// named by sha256, and the registry of approvals
/// ([`PLUGIN_REGISTRY_FILE`]).
pub fn plugin_dir(db_flag: Option<&Path>) -> Result<PathBuf, PathError> {
    Ok(store_path(db_flag)?.with_file_name(PLUGIN_DIR))
}

/// GOAT's compiled-code cache: `$GOAT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/goat/compiled`, else `~/.cache/goat/compiled`, resolved
/// (the sandbox compares it with canonical workspace roots).
pub fn cache_dir() -> Result<PathBuf, PathError> {
    let given = if let Some(dir) = var("GOAT_CACHE_DIR") {
        PathBuf::from(dir)
    } else if let Some(dir) = var("XDG_CACHE_HOME") {
        PathBuf::from(dir).join("goat").join("compiled")
    } else {
        match var("HOME") {
            Some(home) => PathBuf::from(home)
                .join(".cache")
                .join("goat")
                .join("compiled"),
            None => return Err(PathError::NoCacheHome),
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
pub fn resolve(path: &Path) -> Result<PathBuf, PathError> {
    let absolute = std::path::absolute(path).map_err(|source| PathError::NotAbsolute {
        path: path.to_owned(),
        source,
    })?;
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
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::ParentInMissingTail {
                        path: path.to_owned(),
                    });
                }
            }
        }
        return Ok(resolved);
    }
    Err(PathError::Unresolvable {
        path: path.to_owned(),
    })
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
        assert!(matches!(
            resolve(&dir.path().join("new/../ws/x.db")),
            Err(PathError::ParentInMissingTail { .. })
        ));
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
    }

    #[test]
    fn the_rules_and_plugins_sit_beside_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let db = dir.path().join("state/my.db");
        assert_eq!(store_path(Some(&db)).unwrap(), real.join("state/my.db"));
        assert_eq!(
            permissions_path(None, Some(&db)).unwrap(),
            real.join("state/permissions.db")
        );
        assert_eq!(
            permissions_path(Some(&dir.path().join("p.db")), Some(&db)).unwrap(),
            real.join("p.db")
        );
        assert_eq!(plugin_dir(Some(&db)).unwrap(), real.join("state/plugins"));
        assert!(matches!(
            store_path(Some(Path::new("/"))),
            Err(PathError::NotAFile { what: "store", .. })
        ));
    }
}
