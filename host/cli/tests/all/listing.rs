//! Listing commands (`goat tools list`, `goat config show`, `goat sessions
//! list`, `goat stats`, `goat plugins list`, plain and `--json`) create and
//! change nothing
//! (issue 12): no store, `-wal`, `-shm` or lock directory, no permission
//! database, no plugin directory, no compiled-code cache, no config
//! directory; and an existing one is left byte for byte, mtime for mtime.
//!
//! These tests give `goat` a HOME and XDG directories of its own (not
//! [`Env`](crate::Env)'s shared cache) and walk everything under them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::SystemTime;

use goat_testkit::ScriptedServer;

use crate::{content_reply, json_out, text};

/// Every listing command, as a person types it.
const LISTINGS: &[&[&str]] = &[
    &["tools", "list"],
    &["tools", "list", "--json"],
    &["config", "show"],
    &["config", "show", "--json"],
    &["sessions", "list"],
    &["sessions", "list", "--json"],
    &["stats"],
    &["stats", "--json"],
    &["plugins", "list"],
    &["plugins", "list", "--json"],
];

/// How `goat` is told where its state is.
#[derive(Clone, Copy, Debug)]
enum Where {
    /// HOME alone: `~/.local/share/goat`, `~/.cache/goat`, `~/.config/goat`.
    Home,
    /// The XDG variables, each its own directory.
    Xdg,
    /// GOAT_DB and GOAT_CACHE_DIR, beside HOME.
    Goat,
}

/// A root holding an empty HOME and an empty workspace; every other place
/// GOAT may keep state is named under HOME and does not exist yet.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("home")).unwrap();
        std::fs::create_dir(root.join("ws")).unwrap();
        Self { _dir: dir, root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn cmd(&self, place: Where) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_goat"));
        for (name, _) in std::env::vars_os().filter(|(n, _)| {
            let n = n.to_string_lossy();
            n.starts_with("GOAT_") || n.starts_with("XDG_")
        }) {
            cmd.env_remove(name);
        }
        let home = self.home();
        cmd.env("HOME", &home)
            .env_remove("NO_COLOR")
            .current_dir(self.root.join("ws"))
            .stdin(Stdio::null());
        match place {
            Where::Home => {}
            Where::Xdg => {
                cmd.env("XDG_DATA_HOME", home.join("data"))
                    .env("XDG_CONFIG_HOME", home.join("config"))
                    .env("XDG_CACHE_HOME", home.join("cache"))
                    .env("XDG_STATE_HOME", home.join("state"))
                    .env("XDG_RUNTIME_DIR", home.join("runtime"));
            }
            Where::Goat => {
                cmd.env("GOAT_DB", home.join("db").join("goat.db"))
                    .env("GOAT_CACHE_DIR", home.join("compiled"));
            }
        }
        cmd
    }

    fn run(&self, place: Where, args: &[&str]) -> Output {
        self.cmd(place).args(args).output().unwrap()
    }

    async fn run_async(&self, place: Where, args: &[&str]) -> Output {
        let mut cmd = self.cmd(place);
        cmd.args(args);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap()
    }
}

/// What is at one path: its kind, size, mtime and, for a file, its bytes.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    dir: bool,
    len: u64,
    modified: SystemTime,
    bytes: Option<Vec<u8>>,
}

/// Every path under `root` (not following symlinks), with what is there.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut all = BTreeMap::new();
    let mut todo = vec![root.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path.clone());
            }
            let bytes = meta.is_file().then(|| std::fs::read(&path).unwrap());
            all.insert(
                path.strip_prefix(root).unwrap().to_owned(),
                Entry {
                    dir: meta.is_dir(),
                    len: meta.len(),
                    modified: meta.modified().unwrap(),
                    bytes,
                },
            );
        }
    }
    all
}

/// The paths added, removed or changed between two snapshots.
fn changes(before: &BTreeMap<PathBuf, Entry>, after: &BTreeMap<PathBuf, Entry>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, entry) in after {
        match before.get(path) {
            None => out.push(format!("created {}", path.display())),
            Some(old) if old != entry => out.push(format!("changed {}", path.display())),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("removed {}", path.display()));
    }
    out
}

#[test]
fn listings_with_no_state_yet_create_nothing() {
    for place in [Where::Home, Where::Xdg, Where::Goat] {
        let world = World::new();
        let before = snapshot(&world.root);
        let names: Vec<&Path> = before.keys().map(PathBuf::as_path).collect();
        assert_eq!(names, [Path::new("home"), Path::new("ws")]);
        for args in LISTINGS {
            let out = world.run(place, args);
            assert!(
                out.status.success(),
                "{args:?} ({place:?}): {}",
                text(&out.stderr)
            );
            assert_eq!(
                changes(&before, &snapshot(&world.root)),
                Vec::<String>::new(),
                "{args:?} ({place:?}) wrote to disk"
            );
        }
        // Nothing yet is said, not made.
        let out = world.run(place, &["sessions", "list", "--json"]);
        assert_eq!(json_out(&out), serde_json::json!([]));
        let out = world.run(place, &["stats"]);
        assert!(text(&out.stderr).contains("no sessions yet"));
        let out = world.run(place, &["tools", "list", "--json"]);
        assert_eq!(json_out(&out).as_array().unwrap().len(), 9);
    }
}

/// A world with everything GOAT keeps: a store with one session (and its
/// lock directory), the permission database, a plugin and its registry,
/// the compiled-code cache, and a config file.
async fn lived_in(place: Where) -> World {
    let world = World::new();
    // GOAT_CONFIG is cleared: the config file is in its default place.
    let config = match place {
        Where::Xdg => world.home().join("config"),
        Where::Home | Where::Goat => world.home().join(".config"),
    };
    std::fs::create_dir_all(config.join("goat")).unwrap();
    std::fs::write(config.join("goat/config.toml"), "model = \"qwen\"\n").unwrap();

    let server = ScriptedServer::start(vec![content_reply("Hello.")]).await;
    let out = world
        .run_async(place, &["run", "--engine", &server.base_url(), "Say hello"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let wc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/dist/examples/wc.wasm");
    let out = world.run(place, &["plugins", "add", wc.to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    world
}

/// The store, wherever `place` puts it.
fn store_of(world: &World, place: Where) -> PathBuf {
    match place {
        Where::Home => world.home().join(".local/share/goat/goat.db"),
        Where::Xdg => world.home().join("data/goat/goat.db"),
        Where::Goat => world.home().join("db/goat.db"),
    }
}

/// The compiled-code cache, wherever `place` puts it.
fn cache_of(world: &World, place: Where) -> PathBuf {
    match place {
        Where::Home => world.home().join(".cache/goat/compiled"),
        Where::Xdg => world.home().join("cache/goat/compiled"),
        Where::Goat => world.home().join("compiled"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn listings_leave_an_existing_store_permissions_plugins_and_cache_as_they_were() {
    for place in [Where::Home, Where::Xdg, Where::Goat] {
        let world = lived_in(place).await;
        let store = store_of(&world, place);
        let state = store.parent().unwrap();
        for name in ["goat.db", "goat.db-locks", "permissions.db", "plugins"] {
            assert!(state.join(name).exists(), "{name} ({place:?})");
        }
        // As a finished run leaves it: no log beside the store.
        assert!(!state.join("goat.db-wal").exists());
        // A registry as GOATs before application ids left it: one that
        // opening to write would adopt (write its id into).
        rusqlite::Connection::open(state.join("plugins/plugins.db"))
            .unwrap()
            .pragma_update(None, "application_id", 0)
            .unwrap();
        // A cache holding some of the tools: the listing compiles the rest
        // in memory and adds nothing.
        let cache = cache_of(&world, place);
        let entry = std::fs::read_dir(&cache).unwrap().next().unwrap().unwrap();
        std::fs::remove_file(entry.path()).unwrap();
        let before = snapshot(&world.root);
        for args in LISTINGS {
            let out = world.run(place, args);
            assert!(
                out.status.success(),
                "{args:?} ({place:?}): {}",
                text(&out.stderr)
            );
            assert_eq!(
                changes(&before, &snapshot(&world.root)),
                Vec::<String>::new(),
                "{args:?} ({place:?}) wrote to disk"
            );
        }
        // And they read what is there.
        let out = world.run(place, &["sessions", "list", "--json"]);
        assert_eq!(json_out(&out).as_array().unwrap().len(), 1);
        let out = world.run(place, &["stats", "--json"]);
        assert_eq!(json_out(&out)[0]["turns"], 1);
        let out = world.run(place, &["tools", "list", "--json"]);
        let tools = json_out(&out);
        assert!(
            tools
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "wc__count"),
            "{tools}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_needs_migrating_is_reported_not_upgraded() {
    let place = Where::Goat;
    let world = lived_in(place).await;
    let store = store_of(&world, place);
    let conn = rusqlite::Connection::open(&store).unwrap();
    conn.pragma_update(None, "user_version", goat_store::SCHEMA_VERSION - 1)
        .unwrap();
    drop(conn);
    let before = snapshot(&world.root);
    for args in [&["sessions", "list"][..], &["stats", "--json"]] {
        let out = world.run(place, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("is older than this GOAT's")
                && err.contains("reading does not upgrade it")
                && err.contains("goat run"),
            "{args:?}: {err}"
        );
        assert_eq!(
            changes(&before, &snapshot(&world.root)),
            Vec::<String>::new(),
            "{args:?} wrote to disk"
        );
    }
}

/// A reader that stops early (`goat tools list --json | head -c0`) is no
/// error: no message, exit 0, also when the JSON writer met the closed
/// pipe.
#[test]
fn a_closed_stdout_is_not_an_error_for_json_listings() {
    let env = crate::Env::new();
    let mut child = env
        .cmd()
        .args(["tools", "list", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Closed before the child has started writing.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::text(&out.stderr));
    assert_eq!(crate::text(&out.stderr), "");
}
