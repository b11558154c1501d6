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

/// The MCP servers the person added (ADR-0086), beside the store.
pub const MCP_FILE: &str = "mcp.json";

/// The hooks the person added (issue 41, ADR-0098), beside the store.
pub const HOOKS_FILE: &str = "hooks.json";

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
    /// The path has no root to resolve from.
    #[error("cannot resolve {}", path.display())]
    Unresolvable {
        /// The path as given.
        path: PathBuf,
    },
    /// More symlinks than [`MAX_SYMLINK_HOPS`]: a loop, most likely.
    #[error(
        "{} leads through more than {MAX_SYMLINK_HOPS} symlinks (a loop?); fix or remove the links",
        path.display()
    )]
    SymlinkLoop {
        /// The path as given.
        path: PathBuf,
    },
    /// A component could not be looked at (no permission to search its
    /// directory, say): where it leads is unknown, so it is not used.
    #[error("cannot look at {} to see where it leads", path.display())]
    Unreadable {
        /// The component that could not be read.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
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

/// Where session locks named by a store's identity live, one directory
/// for every store the user has: `$XDG_RUNTIME_DIR/goat-session-locks`
/// (the per-user directory for what lives only while processes do), else
/// `goat-session-locks-UID` in the temporary directory. Callers make it
/// private and refuse it when another user owns it or may write it.
#[cfg(unix)]
pub fn session_lock_root() -> PathBuf {
    match var("XDG_RUNTIME_DIR") {
        Some(dir) => PathBuf::from(dir).join("goat-session-locks"),
        None => std::env::temp_dir().join(format!(
            "goat-session-locks-{}",
            rustix::process::geteuid().as_raw()
        )),
    }
}

/// A host-state path: as GOAT named it (from a flag, a variable or the
/// default) and where it really is, every symlink followed.
///
/// # Security
///
/// Callers compare and open [`HostPath::resolved`]: the name may be a
/// symlink (even a dangling one) into a workspace, and a file created
/// through it would land there. The name is kept only to say, in an error,
/// which path led where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPath {
    named: PathBuf,
    resolved: PathBuf,
}

impl HostPath {
    /// Resolves `given` (see [`resolve`]).
    pub fn new(given: &Path) -> Result<Self, PathError> {
        let named = std::path::absolute(given).map_err(|source| PathError::NotAbsolute {
            path: given.to_owned(),
            source,
        })?;
        let resolved = resolve(&named)?;
        Ok(Self { named, resolved })
    }

    /// The path as named, made absolute.
    pub fn named(&self) -> &Path {
        &self.named
    }

    /// Where it really is: the path to compare and to open.
    pub fn resolved(&self) -> &Path {
        &self.resolved
    }

    /// [`HostPath::resolved`], owned.
    pub fn into_resolved(self) -> PathBuf {
        self.resolved
    }

    /// Whether it is (really) inside `workspace`, a canonical directory.
    pub fn is_inside(&self, workspace: &Path) -> bool {
        self.resolved.starts_with(workspace)
    }

    /// The path for a message: the resolved path, and the name that led
    /// there when that differs (`/a/goat.db (which resolves to /ws/x.db)`).
    pub fn describe(&self) -> String {
        if self.named == self.resolved {
            self.resolved.display().to_string()
        } else {
            format!(
                "{} (which resolves to {})",
                self.named.display(),
                self.resolved.display()
            )
        }
    }

    /// A path in this directory: `name` joined to the name, then resolved
    /// on its own (it may be a symlink itself).
    fn child(&self, name: &str) -> Result<Self, PathError> {
        let named = self.named.join(name);
        let resolved = resolve(&self.resolved.join(name))?;
        Ok(Self { named, resolved })
    }

    /// The directory holding this file: the resolved path's parent, named
    /// by the name's parent.
    fn sibling(&self, name: &str) -> Result<Self, PathError> {
        let dir = Self {
            named: self
                .named
                .parent()
                .map_or_else(|| self.named.clone(), Path::to_owned),
            resolved: self
                .resolved
                .parent()
                .map_or_else(|| self.resolved.clone(), Path::to_owned),
        };
        dir.child(name)
    }
}

/// The store's file, from `--db`, else `$GOAT_DB`, else
/// [`default_store_path`], resolved.
pub fn store_path(flag: Option<&Path>) -> Result<HostPath, PathError> {
    let given = match flag {
        Some(path) => path.to_owned(),
        None => match var("GOAT_DB") {
            Some(path) => PathBuf::from(path),
            None => default_store_path().ok_or(PathError::NoStoreHome)?,
        },
    };
    let path = HostPath::new(&given)?;
    if path.resolved.file_name().is_none() {
        return Err(PathError::NotAFile {
            what: "store",
            path: given,
        });
    }
    Ok(path)
}

/// The permission database, from `--permissions`, else `permissions.db`
/// beside the store, resolved (the default name too: it may be a symlink).
pub fn permissions_path(
    flag: Option<&Path>,
    db_flag: Option<&Path>,
) -> Result<HostPath, PathError> {
    match flag {
        Some(given) => {
            let path = HostPath::new(given)?;
            if path.resolved.file_name().is_none() {
                return Err(PathError::NotAFile {
                    what: "permission database",
                    path: given.to_owned(),
                });
            }
            Ok(path)
        }
        None => store_path(db_flag)?.sibling(PERMISSIONS_FILE),
    }
}

/// The plugin directory: `plugins/` beside the store (`--db`, else
/// `$GOAT_DB`, else the default), resolved (it may be a symlink). Holds the
/// approved components, named by sha256, and the registry of approvals
/// ([`PLUGIN_REGISTRY_FILE`]).
pub fn plugin_dir(db_flag: Option<&Path>) -> Result<HostPath, PathError> {
    store_path(db_flag)?.sibling(PLUGIN_DIR)
}

/// The MCP servers' file: [`MCP_FILE`] beside the store (`--db`, else
/// `$GOAT_DB`, else the default), resolved: which servers the person
/// added, how each starts, and the tool definitions they trusted.
pub fn mcp_file(db_flag: Option<&Path>) -> Result<HostPath, PathError> {
    store_path(db_flag)?.sibling(MCP_FILE)
}

/// The hooks' file: [`HOOKS_FILE`] beside the store, resolved: which
/// programs run at which events, and the bytes the person trusted.
pub fn hooks_file(db_flag: Option<&Path>) -> Result<HostPath, PathError> {
    store_path(db_flag)?.sibling(HOOKS_FILE)
}

/// GOAT's compiled-code cache: `$GOAT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/goat/compiled`, else `~/.cache/goat/compiled`, resolved
/// (the sandbox compares it with canonical workspace roots).
pub fn cache_dir() -> Result<HostPath, PathError> {
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
    HostPath::new(&given)
}

/// Symlinks [`resolve`] follows for one path before it gives up: Linux's
/// own limit (`MAXSYMLINKS`), so a path the kernel would open resolves,
/// and a loop ends.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// One step of a path being resolved.
enum Part {
    /// Start again at this root (`/`, or a Windows prefix and root).
    Root(PathBuf),
    /// `..`.
    Parent,
    /// A name.
    Name(OsString),
}

/// `path`'s steps, in order (`.` dropped).
fn parts(path: &Path) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut root = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => root.push(prefix.as_os_str()),
            Component::RootDir => {
                root.push(Component::RootDir.as_os_str());
                parts.push(Part::Root(std::mem::take(&mut root)));
            }
            Component::CurDir => {}
            Component::ParentDir => parts.push(Part::Parent),
            Component::Normal(name) => parts.push(Part::Name(name.to_owned())),
        }
    }
    parts
}

/// Where `path` really is: each existing component looked at in turn and
/// every symlink followed, a dangling one included (its text read and
/// resolved relative to its directory), then the components that do not
/// exist yet appended.
///
/// # Security
///
/// `canonicalize` fails on a path that does not exist yet, and a
/// dangling symlink does not exist: a `permissions.db` that is a symlink
/// to a file not yet created in the workspace would compare as outside it,
/// and then be created inside. So links are followed here by reading them,
/// at most [`MAX_SYMLINK_HOPS`] of them. The missing tail cannot contain
/// symlinks (none of it exists), so appending it is exact; `..` in the
/// tail is refused rather than guessed at.
pub fn resolve(path: &Path) -> Result<PathBuf, PathError> {
    let absolute = std::path::absolute(path).map_err(|source| PathError::NotAbsolute {
        path: path.to_owned(),
        source,
    })?;
    // A stack: the next step is at the end.
    let mut todo = parts(&absolute);
    todo.reverse();
    let mut resolved = PathBuf::new();
    let mut missing = false;
    let mut hops = 0;
    while let Some(part) = todo.pop() {
        match part {
            Part::Root(root) => resolved = root,
            Part::Parent if missing => {
                return Err(PathError::ParentInMissingTail {
                    path: path.to_owned(),
                });
            }
            // Everything so far exists and is resolved, so `..` is its
            // parent (at the root, the root).
            Part::Parent => {
                resolved.pop();
            }
            Part::Name(name) => {
                let next = resolved.join(&name);
                if missing {
                    resolved = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(PathError::SymlinkLoop {
                                path: path.to_owned(),
                            });
                        }
                        let target =
                            std::fs::read_link(&next).map_err(|source| PathError::Unreadable {
                                path: next.clone(),
                                source,
                            })?;
                        // Relative to the link's directory, which is
                        // `resolved` as it stands.
                        let mut steps = parts(&target);
                        steps.reverse();
                        todo.extend(steps);
                    }
                    Ok(_) => resolved = next,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                        ) =>
                    {
                        missing = true;
                        resolved = next;
                    }
                    Err(source) => return Err(PathError::Unreadable { path: next, source }),
                }
            }
        }
    }
    if resolved.as_os_str().is_empty() {
        return Err(PathError::Unresolvable {
            path: path.to_owned(),
        });
    }
    Ok(resolved)
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
        assert_eq!(
            store_path(Some(&db)).unwrap().resolved(),
            real.join("state/my.db")
        );
        assert_eq!(
            permissions_path(None, Some(&db)).unwrap().resolved(),
            real.join("state/permissions.db")
        );
        assert_eq!(
            permissions_path(Some(&dir.path().join("p.db")), Some(&db))
                .unwrap()
                .resolved(),
            real.join("p.db")
        );
        assert_eq!(
            plugin_dir(Some(&db)).unwrap().resolved(),
            real.join("state/plugins")
        );
        assert!(matches!(
            store_path(Some(Path::new("/"))),
            Err(PathError::NotAFile { what: "store", .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_symlink_resolves_to_where_it_would_create() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(real.join("ws")).unwrap();
        std::fs::create_dir_all(real.join("state")).unwrap();
        // Relative link text, resolved from the link's own directory.
        std::os::unix::fs::symlink("../ws/rules.db", real.join("state/permissions.db")).unwrap();
        assert_eq!(
            resolve(&real.join("state/permissions.db")).unwrap(),
            real.join("ws/rules.db")
        );
        // A default name beside the store is resolved too, and keeps the
        // name that led there for messages.
        let perms = permissions_path(None, Some(&real.join("state/goat.db"))).unwrap();
        assert_eq!(perms.resolved(), real.join("ws/rules.db"));
        assert_eq!(perms.named(), real.join("state/permissions.db"));
        assert!(perms.is_inside(&real.join("ws")));
        assert!(perms.describe().contains("which resolves to"));
        // A dangling link to a missing directory, then a name below it.
        std::os::unix::fs::symlink(real.join("ws/new"), real.join("state/plugins")).unwrap();
        assert_eq!(
            plugin_dir(Some(&real.join("state/goat.db")))
                .unwrap()
                .resolved(),
            real.join("ws/new")
        );
        assert_eq!(
            resolve(&real.join("state/plugins/plugins.db")).unwrap(),
            real.join("ws/new/plugins.db")
        );
        // A chain of links, the last one dangling.
        std::os::unix::fs::symlink("permissions.db", real.join("state/goat.db")).unwrap();
        assert_eq!(
            store_path(Some(&real.join("state/goat.db")))
                .unwrap()
                .resolved(),
            real.join("ws/rules.db")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("b", real.join("a")).unwrap();
        std::os::unix::fs::symlink("a", real.join("b")).unwrap();
        assert!(matches!(
            resolve(&real.join("a/x.db")),
            Err(PathError::SymlinkLoop { .. })
        ));
    }

    #[test]
    fn existing_paths_resolve_as_canonicalize_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let path = dir.path().join("a/./b/../b");
        assert_eq!(resolve(&path).unwrap(), path.canonicalize().unwrap());
        assert_eq!(resolve(Path::new("/")).unwrap(), Path::new("/"));
    }
}
