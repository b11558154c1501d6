//! The plugin registry: approvals in SQLite, approved bytes beside it.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use goat_sandbox::{MAX_PLUGIN_BYTES, Sandbox, Tool};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::error::CatalogError;
use crate::naming::{ExposedName, PluginName, builtin_names, check_clash};

/// The registry's file name inside the plugin directory.
pub const REGISTRY_FILE: &str = "plugins.db";

/// The registry schema this GOAT reads and writes.
const REGISTRY_VERSION: i64 = 1;

/// How long to wait for another GOAT adding or removing a plugin: long
/// enough for one insert, short enough that a stuck lock is reported.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Where a plugin's approved bytes are kept.
pub fn stored_file(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(format!("{sha256}.wasm"))
}

/// Whether a plugin's stored file is still the approved one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum FileState {
    /// The file's sha256 is the approved one.
    Ok,
    /// The file is there but its bytes changed.
    Changed {
        /// The sha256 of what is there now.
        found_sha256: String,
    },
    /// The file cannot be read.
    Unreadable {
        /// Why.
        reason: String,
    },
}

/// Whether `approval`'s file in `dir` still holds the approved bytes.
pub fn file_state(dir: &Path, approval: &Approval) -> FileState {
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
            reason: e.to_string(),
        },
    }
}

/// Reads a stored plugin file: a regular file, not a symlink, at most
/// [`MAX_PLUGIN_BYTES`].
pub(crate) fn read_stored(dir: &Path, sha256: &str) -> Result<Vec<u8>, CatalogError> {
    let path = stored_file(dir, sha256);
    let meta = fs::symlink_metadata(&path).map_err(CatalogError::io("cannot read", &path))?;
    if !meta.file_type().is_file() {
        return Err(CatalogError::NotRegular { path });
    }
    read_capped(&path)
}

/// Reads at most one byte more than [`MAX_PLUGIN_BYTES`], so an enormous
/// file is refused without being read whole; the sandbox says it is too big.
pub fn read_capped(path: &Path) -> Result<Vec<u8>, CatalogError> {
    let file = fs::File::open(path).map_err(CatalogError::io("cannot read", path))?;
    let meta = file
        .metadata()
        .map_err(CatalogError::io("cannot read", path))?;
    if !meta.is_file() {
        return Err(CatalogError::NotRegular {
            path: path.to_owned(),
        });
    }
    let mut bytes = Vec::new();
    file.take(u64::try_from(MAX_PLUGIN_BYTES).unwrap_or(u64::MAX) + 1)
        .read_to_end(&mut bytes)
        .map_err(CatalogError::io("cannot read", path))?;
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

/// A component checked as a plugin and ready to be approved: it loads in
/// the sandbox as a plugin, its exposed name fits, and it clashes with no
/// built-in and no plugin approved when it was checked.
pub struct Candidate {
    /// The plugin's name.
    pub name: PluginName,
    /// Its tool's exposed name.
    pub exposed: ExposedName,
    /// The tool, already named as exposed.
    pub tool: Tool,
}

impl Candidate {
    /// Checks `wasm` as plugin `name` against the registry in `dir`.
    /// Nothing is written.
    pub fn check(
        sandbox: &Sandbox,
        dir: &Path,
        name: PluginName,
        wasm: &[u8],
    ) -> Result<Self, CatalogError> {
        let tool = sandbox.load_plugin(name.as_str(), wasm)?;
        let exposed = ExposedName::new(&name, tool.spec().name.as_str());
        let tool =
            tool.exposed_as(exposed.as_str())
                .map_err(|source| CatalogError::ExposedName {
                    exposed: exposed.to_string(),
                    source,
                })?;
        let existing = match Registry::open_existing(dir)? {
            Some(registry) => registry.all()?,
            None => Vec::new(),
        };
        check_clash(name.as_str(), exposed.as_str(), &builtin_names(), &existing)?;
        Ok(Self {
            name,
            exposed,
            tool,
        })
    }
}

/// Stores `wasm` (the bytes `candidate` was checked from) in `dir` under its
/// sha256 and records the approval, checking for clashes again inside the
/// registry's transaction. Returns the stored file.
pub fn approve(
    dir: &Path,
    candidate: &Candidate,
    wasm: &[u8],
    added_at: i64,
) -> Result<PathBuf, CatalogError> {
    let stored = stored_file(dir, candidate.tool.sha256());
    write_private(dir, &stored, wasm).map_err(CatalogError::io("writing", &stored))?;
    let tool = &candidate.tool;
    let approval = Approval {
        name: candidate.name.to_string(),
        tool: candidate.exposed.to_string(),
        declared_name: tool.declared_name().to_owned(),
        description: tool.spec().description.clone(),
        sha256: tool.sha256().to_owned(),
        access: tool.spec().access.as_str().to_owned(),
        imports: tool.imports().to_vec(),
        added_at,
    };
    let mut registry = Registry::create(dir)?;
    if let Err(e) = registry.insert(&approval, &builtin_names()) {
        // Another GOAT may have added the same name meanwhile; leave its
        // file alone if it approved the same bytes.
        if !registry.references(&approval.sha256)? {
            let _ = fs::remove_file(&stored);
        }
        return Err(e);
    }
    Ok(stored)
}

/// The plugin registry: one row per approved plugin, in SQLite so that two
/// GOATs adding at once cannot lose one another's approval.
pub struct Registry {
    conn: Connection,
    path: PathBuf,
}

impl Registry {
    /// Opens the registry in `dir` if there is one. Never creates anything.
    pub fn open_existing(dir: &Path) -> Result<Option<Self>, CatalogError> {
        let path = dir.join(REGISTRY_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(
            |source| CatalogError::Registry {
                path: path.clone(),
                source,
            },
        )?;
        let registry = Self { conn, path };
        // Another `goat plugins add` may be writing: wait, rather than
        // leave every plugin out of this run.
        registry
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| registry.err(e))?;
        registry.check_version()?;
        Ok(Some(registry))
    }

    /// Opens the registry in `dir`, creating it (and its table) if needed.
    pub fn create(dir: &Path) -> Result<Self, CatalogError> {
        let path = dir.join(REGISTRY_FILE);
        let conn = Connection::open(&path).map_err(|source| CatalogError::Registry {
            path: path.clone(),
            source,
        })?;
        let mut registry = Self { conn, path };
        registry.create_schema().map_err(|e| registry.err(e))?;
        registry.check_version()?;
        Ok(registry)
    }

    fn create_schema(&mut self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        let tx = self
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
        tx.commit()
    }

    fn err(&self, source: rusqlite::Error) -> CatalogError {
        CatalogError::Registry {
            path: self.path.clone(),
            source,
        }
    }

    fn check_version(&self) -> Result<(), CatalogError> {
        let found: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if found != REGISTRY_VERSION {
            return Err(CatalogError::RegistryVersion {
                path: self.path.clone(),
                found,
                known: REGISTRY_VERSION,
            });
        }
        Ok(())
    }

    /// Every approval, by plugin name.
    pub fn all(&self) -> Result<Vec<Approval>, CatalogError> {
        self.all_rows().map_err(|e| self.err(e))
    }

    fn all_rows(&self) -> rusqlite::Result<Vec<Approval>> {
        let mut stmt = self.conn.prepare(
            "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
             FROM plugins ORDER BY name",
        )?;
        let rows = stmt.query_map([], row_to_approval)?;
        rows.collect()
    }

    /// The approval of plugin `name`, if there is one.
    pub fn get(&self, name: &str) -> Result<Option<Approval>, CatalogError> {
        self.conn
            .query_row(
                "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
                 FROM plugins WHERE name = ?1",
                [name],
                row_to_approval,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Records `approval` in one transaction, checking for clashes again
    /// inside it.
    pub fn insert(&mut self, approval: &Approval, builtins: &[&str]) -> Result<(), CatalogError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| CatalogError::Registry {
                path: self.path.clone(),
                source,
            })?;
        let sql = |source| CatalogError::Registry {
            path: self.path.clone(),
            source,
        };
        let existing = {
            let mut stmt = tx
                .prepare(
                    "SELECT name, tool, declared_name, description, sha256, access, imports, \
                     added_at FROM plugins WHERE name = ?1 OR tool = ?2",
                )
                .map_err(sql)?;
            stmt.query_map(params![approval.name, approval.tool], row_to_approval)
                .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                .map_err(sql)?
        };
        check_clash(&approval.name, &approval.tool, builtins, &existing)?;
        let imports = serde_json::to_string(&approval.imports)
            .map_err(|e| sql(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
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
                imports,
                approval.added_at
            ],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// Deletes `name`'s approval, returning it.
    pub fn remove(&mut self, name: &str) -> Result<Option<Approval>, CatalogError> {
        let path = self.path.clone();
        let sql = |source| CatalogError::Registry {
            path: path.clone(),
            source,
        };
        self.conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let approval = tx
            .query_row(
                "SELECT name, tool, declared_name, description, sha256, access, imports, added_at
                 FROM plugins WHERE name = ?1",
                [name],
                row_to_approval,
            )
            .optional()
            .map_err(sql)?;
        if approval.is_some() {
            tx.execute("DELETE FROM plugins WHERE name = ?1", [name])
                .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(approval)
    }

    /// Whether any approval still names the file with `sha256`.
    pub fn references(&self, sha256: &str) -> Result<bool, CatalogError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM plugins WHERE sha256 = ?1 LIMIT 1",
                [sha256],
                |_| Ok(()),
            )
            .optional()
            .map_err(|e| self.err(e))?
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
    use crate::naming::tests::approval;

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
