//! The plugin registry: approvals in SQLite, approved bytes beside it.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use goat_sandbox::{Grants, MAX_PLUGIN_BYTES, Sandbox, Tool, ToolSpec};
use goat_state::fs::{OpenRegularError, open_regular, write_private_atomic};
use goat_state::sqlite::{self, DbError, DbSpec, Journal, Migration};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::error::CatalogError;
use crate::naming::{ExposedName, PluginName, builtin_names, check_clash};

/// The registry's file name inside the plugin directory.
pub const REGISTRY_FILE: &str = "plugins.db";

/// How long to wait for another GOAT adding or removing a plugin: long
/// enough for one insert, short enough that a stuck lock is reported.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The registry's schema. Append only: a shipped migration is never edited.
const MIGRATIONS: &[Migration] = &[
    // 1: one row per approved plugin.
    Migration::sql(
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
    ),
    // 2: what the person granted each plugin beyond its access (ADR-0097),
    // as JSON; a plugin added before grants has none.
    Migration::sql("ALTER TABLE plugins ADD COLUMN grants TEXT NOT NULL DEFAULT '{}';"),
];

/// Every column of an approval, in the order `row_to_approval` reads them.
const COLUMNS: &str =
    "name, tool, declared_name, description, sha256, access, imports, added_at, grants";

/// The registry, for `goat_state::sqlite::open`, which checks it is a GOAT
/// plugin registry and migrates it. Registries made before databases
/// carried an application id (schema version 1, a `plugins` table) are
/// adopted.
const SPEC: DbSpec = DbSpec {
    name: "plugin registry",
    application_id: sqlite::ids::PLUGIN_REGISTRY,
    migrations: MIGRATIONS,
    busy_timeout: BUSY_TIMEOUT,
    journal: Journal::Rollback,
    legacy: Some(|conn| sqlite::has_tables(conn, &["plugins"])),
};

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
    /// What the person granted it beyond its access: environment keys,
    /// hosts, limits. Part of the approval: different grants are a new
    /// approval (remove, then add again).
    pub grants: Grants,
}

/// Where a plugin's approved bytes are kept.
pub fn stored_file(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(format!("{sha256}.wasm"))
}

/// Where the spec a plugin declared when it was added is kept, beside its
/// bytes and named by the same sha256: a session offers the plugin from it
/// without compiling the component (compiled on its first call, where its
/// spec is checked against this one).
pub fn spec_file(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(format!("{sha256}.spec.json"))
}

/// The largest recorded spec read back; a plugin's description and
/// parameters are far smaller.
const MAX_SPEC_FILE_BYTES: u64 = 1 << 20;

/// The spec recorded for the component whose sha256 is `sha256`, if there
/// is a readable one (a regular file, at most 1 MiB, a spec). A plugin
/// added before specs were recorded has none, and is compiled to read it.
pub(crate) fn read_declared(dir: &Path, sha256: &str) -> Option<ToolSpec> {
    let file = open_regular(&spec_file(dir, sha256)).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_SPEC_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Removes a plugin's stored bytes and its recorded spec (either may be
/// missing already).
pub fn forget_stored(dir: &Path, sha256: &str) -> Result<(), CatalogError> {
    for path in [stored_file(dir, sha256), spec_file(dir, sha256)] {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CatalogError::io("removing", &path)(e)),
        }
    }
    Ok(())
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
        let kind = if meta.file_type().is_symlink() {
            "a symlink"
        } else {
            "not a file"
        };
        return Err(CatalogError::NotRegular { path, kind });
    }
    read_capped(&path)
}

/// Reads at most one byte more than [`MAX_PLUGIN_BYTES`], so an enormous
/// file is refused without being read whole; the sandbox says it is too big.
///
/// # Security
///
/// Anything but a regular file is refused without blocking: a FIFO given
/// to `goat plugins add` (or swapped in for a stored plugin) would
/// otherwise wait for a writer forever (see [`open_regular`]).
pub fn read_capped(path: &Path) -> Result<Vec<u8>, CatalogError> {
    let file = open_regular(path).map_err(|e| match e {
        OpenRegularError::NotAFile { path, kind } => CatalogError::NotRegular { path, kind },
        OpenRegularError::Open { path, source } => CatalogError::Io {
            what: "cannot read",
            path,
            source,
        },
        other => CatalogError::Io {
            what: "cannot read",
            path: path.to_owned(),
            source: std::io::Error::other(other),
        },
    })?;
    let mut bytes = Vec::new();
    file.take(u64::try_from(MAX_PLUGIN_BYTES).unwrap_or(u64::MAX) + 1)
        .read_to_end(&mut bytes)
        .map_err(CatalogError::io("cannot read", path))?;
    Ok(bytes)
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
    /// Checks `wasm` as plugin `name`, granted `grants`, against the
    /// registry in `dir`. Nothing is written.
    pub fn check(
        sandbox: &Sandbox,
        dir: &Path,
        name: PluginName,
        wasm: &[u8],
        grants: Grants,
    ) -> Result<Self, CatalogError> {
        let refused = |why: String| CatalogError::Grants {
            name: name.to_string(),
            why,
        };
        grants.check().map_err(refused)?;
        goat_egress::Allowlist::parse(&grants.hosts)
            .map_err(|e| refused(format!("--allow-host: {e}")))?;
        let tool = sandbox.load_plugin(name.as_str(), wasm)?;
        // A grant the component cannot use is a mistake, said now.
        if !grants.hosts.is_empty() && !tool.imports_interface("wasi:http/outgoing-handler") {
            return Err(refused(
                "it does not import wasi:http/outgoing-handler, so it cannot use --allow-host; \
                 leave it out"
                    .to_owned(),
            ));
        }
        if !grants.env.is_empty() && !tool.imports_interface("wasi:cli/environment") {
            return Err(refused(
                "it does not import wasi:cli/environment, so it cannot use --env; leave it out"
                    .to_owned(),
            ));
        }
        let tool = tool.with_grants(grants)?;
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
    write_private_atomic(&stored, wasm).map_err(CatalogError::io("writing", &stored))?;
    let tool = &candidate.tool;
    let mut declared = tool.spec().clone();
    declared.name = tool.declared_name().to_owned();
    let spec = spec_file(dir, tool.sha256());
    let json = serde_json::to_vec_pretty(&declared)
        .map_err(|e| CatalogError::io("writing", &spec)(std::io::Error::other(e)))?;
    write_private_atomic(&spec, &json).map_err(CatalogError::io("writing", &spec))?;
    let approval = Approval {
        name: candidate.name.to_string(),
        tool: candidate.exposed.to_string(),
        declared_name: tool.declared_name().to_owned(),
        description: tool.spec().description.clone(),
        sha256: tool.sha256().to_owned(),
        access: tool.spec().access.as_str().to_owned(),
        imports: tool.imports().to_vec(),
        added_at,
        grants: tool.grants().clone(),
    };
    let mut registry = Registry::create(dir)?;
    if let Err(e) = registry.insert(&approval, &builtin_names()) {
        // Another GOAT may have added the same name meanwhile; leave its
        // file alone if it approved the same bytes.
        if !registry.references(&approval.sha256)? {
            let _ = forget_stored(dir, &approval.sha256);
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
    /// Opens the registry in `dir` if there is one. Never creates one.
    pub fn open_existing(dir: &Path) -> Result<Option<Self>, CatalogError> {
        let path = dir.join(REGISTRY_FILE);
        if fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        Self::create(dir).map(Some)
    }

    /// Opens the registry in `dir` to read it, if there is one, creating
    /// and changing nothing: a registry that needs migrating is an error,
    /// not upgraded (see `goat_state::sqlite::open_read_only`). Loading
    /// tools and listing them never write it.
    pub fn open_read_only(dir: &Path) -> Result<Option<Self>, CatalogError> {
        let path = dir.join(REGISTRY_FILE);
        Ok(sqlite::open_read_only(&path, &SPEC)?.map(|conn| Self { conn, path }))
    }

    /// Opens the registry in `dir`, creating it (and its table) if needed.
    /// Another `goat plugins add` may be writing: it waits for it, rather
    /// than leave every plugin out of this run.
    pub fn create(dir: &Path) -> Result<Self, CatalogError> {
        let path = dir.join(REGISTRY_FILE);
        let conn = sqlite::open(&path, &SPEC)?;
        Ok(Self { conn, path })
    }

    fn err(&self, source: rusqlite::Error) -> CatalogError {
        sql_error(&self.path)(source)
    }

    /// Every approval, by plugin name.
    pub fn all(&self) -> Result<Vec<Approval>, CatalogError> {
        self.all_rows().map_err(|e| self.err(e))
    }

    fn all_rows(&self) -> rusqlite::Result<Vec<Approval>> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {COLUMNS} FROM plugins ORDER BY name"))?;
        let rows = stmt.query_map([], row_to_approval)?;
        rows.collect()
    }

    /// The approval of plugin `name`, if there is one.
    pub fn get(&self, name: &str) -> Result<Option<Approval>, CatalogError> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM plugins WHERE name = ?1"),
                [name],
                row_to_approval,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Records `approval` in one transaction, checking for clashes again
    /// inside it.
    pub fn insert(&mut self, approval: &Approval, builtins: &[&str]) -> Result<(), CatalogError> {
        let sql = sql_error(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&sql)?;
        let existing = {
            let mut stmt = tx
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM plugins WHERE name = ?1 OR tool = ?2"
                ))
                .map_err(&sql)?;
            stmt.query_map(params![approval.name, approval.tool], row_to_approval)
                .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                .map_err(&sql)?
        };
        check_clash(&approval.name, &approval.tool, builtins, &existing)?;
        let json = |value: Result<String, serde_json::Error>| {
            value.map_err(|e| sql(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))
        };
        let imports = json(serde_json::to_string(&approval.imports))?;
        let grants = json(serde_json::to_string(&approval.grants))?;
        tx.execute(
            &format!("INSERT INTO plugins ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
            params![
                approval.name,
                approval.tool,
                approval.declared_name,
                approval.description,
                approval.sha256,
                approval.access,
                imports,
                approval.added_at,
                grants
            ],
        )
        .map_err(&sql)?;
        tx.commit().map_err(&sql)
    }

    /// Deletes `name`'s approval, returning it.
    pub fn remove(&mut self, name: &str) -> Result<Option<Approval>, CatalogError> {
        let sql = sql_error(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&sql)?;
        let approval = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM plugins WHERE name = ?1"),
                [name],
                row_to_approval,
            )
            .optional()
            .map_err(&sql)?;
        if approval.is_some() {
            tx.execute("DELETE FROM plugins WHERE name = ?1", [name])
                .map_err(&sql)?;
        }
        tx.commit().map_err(&sql)?;
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

/// How a SQLite failure on the registry at `path` is reported.
fn sql_error(path: &Path) -> impl Fn(rusqlite::Error) -> CatalogError + '_ {
    move |e| CatalogError::Registry(DbError::from_sqlite(SPEC.name, path, BUSY_TIMEOUT, &e))
}

fn row_to_approval(row: &rusqlite::Row<'_>) -> rusqlite::Result<Approval> {
    let json = |index: usize, text: String| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, text.into())
    };
    let imports: String = row.get(6)?;
    let grants: String = row.get(8)?;
    Ok(Approval {
        name: row.get(0)?,
        tool: row.get(1)?,
        declared_name: row.get(2)?,
        description: row.get(3)?,
        sha256: row.get(4)?,
        access: row.get(5)?,
        imports: serde_json::from_str(&imports).map_err(|e| json(6, e.to_string()))?,
        added_at: row.get(7)?,
        // Checked as when it was approved: a row edited past a ceiling is
        // not loaded as granted.
        grants: serde_json::from_str::<Grants>(&grants)
            .map_err(|e| e.to_string())
            .and_then(|g| g.check().map(|()| g))
            .map_err(|e| json(8, format!("its grants are not usable: {e}")))?,
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
        assert!(Registry::open_read_only(dir.path()).unwrap().is_none());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut r = Registry::create(dir.path()).unwrap();
        let mut a = approval("wc", "wc__count");
        a.imports = vec!["wasi:filesystem/types@0.2.12".to_owned()];
        a.grants = Grants {
            env: vec!["LANG".to_owned()],
            hosts: vec!["example.com:443".to_owned()],
            timeout_secs: Some(60),
            ..Grants::default()
        };
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

    #[test]
    fn a_grant_edited_past_its_ceiling_in_the_registry_is_not_read_as_granted() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Registry::create(dir.path()).unwrap();
        r.insert(&approval("wc", "wc__count"), &[]).unwrap();
        r.conn
            .execute("UPDATE plugins SET grants = '{\"memory_mib\": 999999}'", [])
            .unwrap();
        let err = r.all().unwrap_err().to_string();
        assert!(err.contains("grants are not usable"), "{err}");
        r.conn
            .execute("UPDATE plugins SET grants = '{\"sockets\": true}'", [])
            .unwrap();
        assert!(r.all().is_err(), "an unknown grant is not ignored");
    }

    fn application_id(dir: &Path) -> i32 {
        Connection::open(dir.join(REGISTRY_FILE))
            .unwrap()
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_registry_made_before_application_ids_is_adopted_with_its_plugins() {
        let dir = tempfile::tempdir().unwrap();
        Registry::create(dir.path())
            .unwrap()
            .insert(&approval("wc", "wc__count"), &[])
            .unwrap();
        assert_eq!(application_id(dir.path()), sqlite::ids::PLUGIN_REGISTRY);
        // As every earlier GOAT left it: schema version 1, no id.
        Connection::open(dir.path().join(REGISTRY_FILE))
            .unwrap()
            .pragma_update(None, "application_id", 0)
            .unwrap();
        let before = fs::read(dir.path().join(REGISTRY_FILE)).unwrap();
        let read = Registry::open_read_only(dir.path()).unwrap().unwrap();
        assert_eq!(read.all().unwrap(), vec![approval("wc", "wc__count")]);
        drop(read);
        assert_eq!(fs::read(dir.path().join(REGISTRY_FILE)).unwrap(), before);
        let again = Registry::open_existing(dir.path()).unwrap().unwrap();
        assert_eq!(again.all().unwrap(), vec![approval("wc", "wc__count")]);
        assert_eq!(application_id(dir.path()), sqlite::ids::PLUGIN_REGISTRY);
    }

    #[test]
    fn another_programs_database_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REGISTRY_FILE);
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        let before = fs::read(&path).unwrap();
        for result in [
            Registry::open_existing(dir.path()).map(|_| ()),
            Registry::create(dir.path()).map(|_| ()),
        ] {
            let err = result.err().unwrap();
            assert!(
                matches!(err, CatalogError::Registry(DbError::Foreign { .. })),
                "{err}"
            );
        }
        assert_eq!(fs::read(&path).unwrap(), before);
    }

    #[test]
    fn a_registry_from_a_newer_goat_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        drop(Registry::create(dir.path()).unwrap());
        Connection::open(dir.path().join(REGISTRY_FILE))
            .unwrap()
            .pragma_update(None, "user_version", 3)
            .unwrap();
        let err = Registry::open_existing(dir.path()).err().unwrap();
        assert!(
            matches!(
                err,
                CatalogError::Registry(DbError::NewerSchema { found: 3, .. })
            ),
            "{err}"
        );
    }
}
