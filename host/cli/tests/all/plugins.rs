//! `goat plugins` and plugin tools end to end: what `add` refuses and
//! copies, the registry it keeps, the hash check on every load, the
//! namespaced name the model, the gate and the store see, and the sandbox
//! holding a plugin to what it declared.

use std::path::{Path, PathBuf};

use goat_testkit::ScriptedServer;
use serde_json::{Value, json};

use crate::{Env, call_reply, content_reply, dist, json_out, text};

pub(crate) fn wc() -> PathBuf {
    dist("examples/wc.wasm")
}

pub(crate) fn sha256_of(path: &Path) -> String {
    goat_sandbox::sha256_hex(&std::fs::read(path).unwrap())
}

impl Env {
    /// The plugin directory beside the store.
    pub(crate) fn plugin_dir(&self) -> PathBuf {
        self.db.with_file_name("plugins")
    }

    /// `goat plugins add FILE --yes [extra]`, which must succeed.
    pub(crate) fn add_plugin(&self, file: &Path, extra: &[&str]) {
        let mut args = vec!["plugins", "add", file.to_str().unwrap(), "--yes"];
        args.extend_from_slice(extra);
        let out = self.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }

    /// The `.wasm` files in the plugin directory, if it exists.
    pub(crate) fn stored_plugins(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.plugin_dir()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".wasm"))
            .collect();
        names.sort();
        names
    }

    pub(crate) fn tool_names(&self) -> Vec<String> {
        let out = self.run(&["tools", "list", "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        json_out(&out)
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[test]
fn add_shows_the_plugin_copies_it_by_hash_and_records_the_approval() {
    let env = Env::new();
    let sha = sha256_of(&wc());
    let out = env.run(&["plugins", "add", wc().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for line in [
        "plugin       wc\n".to_owned(),
        "tool         wc__count (its own name: count)\n".to_owned(),
        "access       read (the workspace, read-only)\n".to_owned(),
        "path fields  path\n".to_owned(),
        "imports      wasi:clocks/wall-clock@0.2.12, wasi:filesystem/types@0.2.12, \
         wasi:filesystem/preopens@0.2.12\n"
            .to_owned(),
        format!("sha256       {sha}\n"),
    ] {
        assert!(shown.contains(&line), "missing {line:?} in:\n{shown}");
    }
    assert!(
        shown.contains("description  Count lines, words and bytes"),
        "{shown}"
    );
    assert!(
        shown.contains("the model can call it as wc__count"),
        "{shown}"
    );

    // Copied, byte for byte, under its hash, into a private directory.
    let stored = env.plugin_dir().join(format!("{sha}.wasm"));
    assert_eq!(
        std::fs::read(&stored).unwrap(),
        std::fs::read(wc()).unwrap()
    );
    assert_eq!(env.stored_plugins(), [format!("{sha}.wasm")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&env.plugin_dir()), 0o700);
        assert_eq!(mode(&stored), 0o600);
    }

    // The approval, as recorded.
    let listed = json_out(&env.run(&["plugins", "list", "--json"]));
    let approvals = listed.as_array().unwrap();
    assert_eq!(approvals.len(), 1);
    let a = &approvals[0];
    assert_eq!(a["name"], "wc");
    assert_eq!(a["tool"], "wc__count");
    assert_eq!(a["declared_name"], "count");
    assert_eq!(a["sha256"], sha.as_str());
    assert_eq!(a["access"], "read");
    assert_eq!(
        a["imports"],
        json!([
            "wasi:clocks/wall-clock@0.2.12",
            "wasi:filesystem/types@0.2.12",
            "wasi:filesystem/preopens@0.2.12"
        ])
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let added_at = a["added_at"].as_u64().unwrap();
    assert!(added_at <= now && now - added_at < 600, "{added_at}");

    let inspected = json_out(&env.run(&["plugins", "inspect", "wc", "--json"]));
    assert_eq!(inspected["file_state"], json!({"status": "ok"}));
    assert_eq!(inspected["file"], stored.to_str().unwrap());

    // Offered beside the built-ins, which are all still there.
    let listing = text(&env.run(&["tools", "list"]).stdout);
    let rows: Vec<(String, String)> = listing
        .lines()
        .map(|l| {
            let mut cols = l.split_whitespace();
            (
                cols.next().unwrap().to_owned(),
                cols.next().unwrap().to_owned(),
            )
        })
        .collect();
    // The eight Pen tools, the plugin's, and run_command.
    assert_eq!(rows.len(), 10, "{listing}");
    assert_eq!(rows[0], ("read_file".to_owned(), "read".to_owned()));
    assert_eq!(rows[8], ("wc__count".to_owned(), "read".to_owned()));
}

#[test]
fn add_without_a_terminal_or_yes_refuses_and_copies_nothing() {
    let env = Env::new();
    let out = env.run(&["plugins", "add", wc().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("plugin 'wc' was not added"), "{err}");
    assert!(err.contains("no terminal"), "{err}");
    assert!(err.contains("--yes"), "{err}");
    // It was shown what it would have approved...
    assert!(text(&out.stdout).contains("tool         wc__count"));
    // ...and nothing was copied or recorded.
    assert!(!env.plugin_dir().exists());
    assert!(!env.tool_names().contains(&"wc__count".to_owned()));
}

#[test]
fn a_plugin_importing_what_goat_never_offers_is_refused_naming_each_import() {
    let env = Env::new();
    // A plugin gets WASI 0.2 and outgoing `wasi:http` (ADR-0096,
    // ADR-0097), nothing else: both of its other imports are named, and
    // nothing is shown for approval.
    for (file, import) in [
        ("testing/wants_more.wasm", "evil:host/secrets@0.1.0"),
        ("testing/wants_more.wasm", "evil:host/launch@0.1.0"),
    ] {
        let out = env.run(&["plugins", "add", dist(file).to_str().unwrap(), "--yes"]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = text(&out.stderr);
        assert!(err.contains(import), "{file}: {err}");
        assert!(err.contains("it was not run"), "{file}: {err}");
        assert_eq!(
            text(&out.stdout),
            "",
            "{file}: nothing is shown for approval"
        );
    }
    assert!(!env.plugin_dir().exists());
}

#[test]
fn precompiled_code_and_core_modules_are_refused() {
    let env = Env::new();
    let cases: [(&str, &[u8], &str); 3] = [
        (
            "native.cwasm",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
            "precompiled",
        ),
        ("core.wasm", b"\0asm\x01\0\0\0", "core WebAssembly module"),
        ("text.wasm", b"(component)", "not WebAssembly"),
    ];
    for (name, bytes, why) in cases {
        let file = env.root.join(name);
        std::fs::write(&file, bytes).unwrap();
        let out = env.run(&[
            "plugins",
            "add",
            file.to_str().unwrap(),
            "--yes",
            "--name",
            "x",
        ]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains("is not a usable GOAT tool"), "{name}: {err}");
        assert!(err.contains(why), "{name}: {err}");
    }
    assert!(!env.plugin_dir().exists());
}

#[test]
fn a_name_that_would_shadow_a_built_in_or_another_plugin_is_refused() {
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    let hostile = dist("testing/hostile_plugin.wasm");
    let cases: [(&Path, &[&str], &str); 4] = [
        (&wc(), &[], "a plugin named 'wc' is already added"),
        (
            &hostile,
            &["--name", "wc"],
            "a plugin named 'wc' is already added",
        ),
        (
            &hostile,
            &["--name", "read_file"],
            "is the name of a built-in tool",
        ),
        (&hostile, &["--name", "a__b"], "not a usable plugin name"),
    ];
    for (file, extra, why) in cases {
        let mut args = vec!["plugins", "add", file.to_str().unwrap(), "--yes"];
        args.extend_from_slice(extra);
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = text(&out.stderr);
        assert!(err.contains(why), "{extra:?}: {err}");
    }
    // Only the first approval is there, and only its file.
    let listed = json_out(&env.run(&["plugins", "list", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(env.stored_plugins(), [format!("{}.wasm", sha256_of(&wc()))]);
    // The built-in is the built-in: read_file still reads.
    std::fs::write(env.ws.join("a.txt"), "alpha\n").unwrap();
    let out = env.run(&["tools", "call", "read_file", r#"{"path":"a.txt"}"#]);
    assert_eq!(text(&out.stdout), "     1\talpha\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_is_offered_the_namespaced_tool_and_gets_its_counts_back() {
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    std::fs::write(env.ws.join("a.txt"), "one two\nthree\n").unwrap();
    std::fs::create_dir(env.ws.join("docs")).unwrap();
    std::fs::write(env.ws.join("docs/b.md"), "hello  world\n\n").unwrap();
    std::fs::write(env.ws.join("docs/c.rs"), "fn main() {}\n").unwrap();

    let server = ScriptedServer::start(vec![
        call_reply("call_1", "wc__count", r#"{"path": "docs", "glob": "*.md"}"#),
        call_reply("call_2", "wc__count", r#"{}"#),
        content_reply("docs/b.md has 2 words."),
    ])
    .await;
    let url = server.base_url();
    let out = env
        .run_async(&[
            "run",
            "--engine",
            &url,
            "--model",
            "qwen",
            "--json",
            "How many words are in the markdown docs?",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = json_out(&out);
    assert_eq!(summary["status"], "completed");
    assert_eq!(
        summary["tool_calls"],
        json!([
            {"tool": "wc__count", "status": "ok", "decision": "allow"},
            {"tool": "wc__count", "status": "ok", "decision": "allow"}
        ])
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let offered: Vec<&Value> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["function"])
        .collect();
    let names: Vec<&str> = offered
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_directory",
            "find_files",
            "search_files",
            "write_file",
            "edit_file",
            "move_file",
            "delete_file",
            "wc__count",
            // The native command tool, offered where it can be contained.
            "run_command"
        ]
    );
    let wc_fn = offered[8];
    assert!(
        wc_fn["description"]
            .as_str()
            .unwrap()
            .starts_with("Count lines, words and bytes"),
        "{wc_fn}"
    );
    assert_eq!(wc_fn["parameters"]["properties"]["glob"]["type"], "string");

    let tool_result = |request: usize, id: &str| -> String {
        let messages = requests[request].body["messages"].as_array().unwrap();
        let m = messages
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id} in {messages:?}"));
        m["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        tool_result(1, "call_1"),
        "       2        2       14 docs/b.md\n       2        2       14 total (1 file)\n"
    );
    assert_eq!(
        tool_result(2, "call_2"),
        "       2        3       14 a.txt\n".to_owned()
            + "       2        2       14 docs/b.md\n"
            + "       1        3       13 docs/c.rs\n"
            + "       5        8       41 total (3 files)\n"
    );

    // The store recorded the call under the name the model used.
    let session = summary["session_id"].as_str().unwrap();
    let shown = json_out(&env.run(&["sessions", "show", session, "--json"])).to_string();
    assert!(shown.contains("\"wc__count\""), "{shown}");
}

#[test]
fn a_changed_plugin_file_is_not_loaded_and_the_person_is_told_why() {
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    let sha = sha256_of(&wc());
    let stored = env.plugin_dir().join(format!("{sha}.wasm"));
    let mut bytes = std::fs::read(&stored).unwrap();
    // Still a valid component: a custom section appended at the end.
    bytes.extend_from_slice(b"\0\x05\x04evil");
    std::fs::write(&stored, &bytes).unwrap();
    let found = goat_sandbox::sha256_hex(&bytes);

    let out = env.run(&["tools", "list"]);
    assert_eq!(out.status.code(), Some(0), "the other tools still load");
    let listing = text(&out.stdout);
    assert!(!listing.contains("wc__count"), "{listing}");
    assert!(listing.contains("read_file"), "{listing}");
    let err = text(&out.stderr);
    assert!(
        err.contains("▌ goat: plugin 'wc' (wc__count) was not loaded: its file"),
        "{err}"
    );
    assert!(
        err.contains(&format!("expected sha256 {sha}, found {found}")),
        "{err}"
    );
    assert!(err.contains("goat plugins remove wc"), "{err}");

    // Not callable by hand either; the built-ins are.
    std::fs::write(env.ws.join("a.txt"), "a\n").unwrap();
    let out = env.run(&["tools", "call", "wc__count", r#"{"path":"a.txt"}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no tool named 'wc__count'"));
    let out = env.run(&["tools", "call", "read_file", r#"{"path":"a.txt"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = env.run(&["plugins", "inspect", "wc"]);
    assert!(
        text(&out.stdout).contains(&format!("CHANGED (sha256 {found})")),
        "{}",
        text(&out.stdout)
    );

    // A missing file is the same: left out, with the reason.
    std::fs::remove_file(&stored).unwrap();
    let out = env.run(&["tools", "list"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("plugin 'wc' (wc__count) was not loaded: cannot read"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_plugin_that_asked_for_read_access_cannot_write() {
    let env = Env::new();
    env.add_plugin(&dist("testing/hostile_plugin.wasm"), &["--name", "evil"]);
    std::fs::write(env.ws.join("keep.txt"), "original\n").unwrap();
    let outside = env.root.join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    let before: Vec<_> = std::fs::read_dir(&env.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();

    for args in [
        json!({"action": "write", "path": "keep.txt"}),
        json!({"action": "write", "path": "new.txt"}),
        json!({"action": "write-through-read", "path": "keep.txt"}),
        json!({"action": "mkdir", "path": "d"}),
        json!({"action": "unlink", "path": "keep.txt"}),
        json!({"action": "rename", "path": "keep.txt", "to": "moved.txt"}),
        json!({"action": "symlink", "path": "link", "to": "keep.txt"}),
    ] {
        // Even with every write allowed by the gate, the preopen is
        // read-only: the plugin declared read.
        let out = env.run(&[
            "tools",
            "call",
            "evil__hostile",
            &args.to_string(),
            "--allow-writes",
        ]);
        assert_eq!(out.status.code(), Some(1), "{args}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(
            err.starts_with("evil__hostile failed: io error: wasi error: "),
            "{args}: {err}"
        );
    }
    // A path out of the workspace is stopped at the gate, before it runs.
    let out = env.run(&[
        "tools",
        "call",
        "evil__hostile",
        r#"{"action":"write","path":"../outside.txt"}"#,
        "--allow-writes",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("denied: "),
        "{}",
        text(&out.stderr)
    );

    assert_eq!(
        std::fs::read(env.ws.join("keep.txt")).unwrap(),
        b"original\n"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside\n");
    let after: Vec<_> = std::fs::read_dir(&env.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn the_hosts_memory_limit_holds_for_plugins() {
    let env = Env::new();
    env.add_plugin(&dist("testing/hostile_plugin.wasm"), &["--name", "evil"]);
    let out = env.run(&["tools", "call", "evil__hostile", r#"{"action":"alloc"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "evil__hostile failed: the tool tried to use more than 134217728 bytes of memory and \
         was stopped\n"
    );
}

#[test]
fn the_gate_judges_a_plugin_tool_by_its_exposed_name() {
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    std::fs::write(env.ws.join("secret/k.txt"), "k\n").unwrap();
    let out = env.run(&["permissions", "deny", "wc__count", "secret/**"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = env.run(&["tools", "call", "wc__count", r#"{"path":"secret/k.txt"}"#]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("denied: "), "{err}");
    assert!(err.contains("secret/k.txt"), "{err}");
    // A misspelt plugin tool is refused as any unknown tool is.
    let out = env.run(&["permissions", "deny", "wc__cnt", "secret/**"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("wc__count"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn nothing_in_the_workspace_is_loaded_as_a_plugin() {
    let env = Env::new();
    // A complete, valid plugin directory, made by GOAT itself elsewhere...
    env.add_plugin(&wc(), &[]);
    assert!(env.tool_names().contains(&"wc__count".to_owned()));
    // ...copied into the workspace, where GOAT never looks for plugins.
    for dir in ["plugins", ".goat/plugins", "state/plugins"] {
        let target = env.ws.join(dir);
        std::fs::create_dir_all(&target).unwrap();
        for entry in std::fs::read_dir(env.plugin_dir()).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), target.join(entry.file_name())).unwrap();
        }
    }
    std::fs::remove_dir_all(env.plugin_dir()).unwrap();
    assert!(!env.tool_names().contains(&"wc__count".to_owned()));

    // And a store placed in the workspace cannot bring its plugins along:
    // the plugin directory beside it is refused before any tool loads.
    let inside_db = env.ws.join("state/goat.db");
    let out = env.run(&[
        "tools",
        "call",
        "read_file",
        r#"{"path":"x"}"#,
        "--db",
        inside_db.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("the plugin directory"), "{err}");
    assert!(err.contains("is inside the workspace"), "{err}");
}

#[test]
fn remove_deletes_the_approval_and_the_file() {
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    let out = env.run(&["plugins", "remove", "wc"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "removed plugin 'wc' (tool wc__count)\n");
    assert_eq!(env.stored_plugins(), Vec::<String>::new());
    assert_eq!(
        std::fs::read_dir(env.plugin_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect::<Vec<_>>(),
        ["plugins.db"],
        "its recorded spec went with it"
    );
    assert_eq!(
        json_out(&env.run(&["plugins", "list", "--json"])),
        json!([])
    );
    assert!(!env.tool_names().contains(&"wc__count".to_owned()));
    let out = env.run(&["plugins", "remove", "wc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no plugin named 'wc'"));
    // Added again after removal, it is approved afresh.
    env.add_plugin(&wc(), &[]);
    assert!(env.tool_names().contains(&"wc__count".to_owned()));
}

#[test]
fn remove_names_the_rules_that_still_name_the_plugins_tool() {
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    let out = env.run(&["permissions", "allow", "wc__count", "src/**"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = env.run(&["plugins", "remove", "wc"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "rule #1: allow read 'src/**' for wc__count, persistent still names wc__count"
        ) && err.contains("goat permissions revoke 1"),
        "{err}"
    );
}

/// Runs `cmd` and kills it after `limit`: `None` if it had to be killed.
#[cfg(unix)]
fn output_within(
    mut cmd: std::process::Command,
    limit: std::time::Duration,
) -> Option<std::process::Output> {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

#[cfg(unix)]
#[test]
fn add_refuses_a_fifo_at_once() {
    let env = Env::new();
    let fifo = env.root.join("plugin.wasm");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let mut cmd = env.cmd();
    cmd.args(["plugins", "add", fifo.to_str().unwrap(), "--yes"]);
    let Some(out) = output_within(cmd, std::time::Duration::from_secs(10)) else {
        panic!("`goat plugins add FIFO` blocked (killed after 10 s)");
    };
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{} is not a regular file (it is a FIFO); give a component's .wasm file",
            fifo.display()
        )),
        "{err}"
    );
    assert!(!env.plugin_dir().exists());
}

#[cfg(unix)]
#[test]
fn a_plugin_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.add_plugin(&wc(), &[]);
    std::fs::set_permissions(env.plugin_dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let expected = format!(
        "{} can be written by its group and everyone (mode 777); they could plant what GOAT \
         trusts there. Run `chmod 700 {}`, or remove it",
        env.plugin_dir().display(),
        env.plugin_dir().display()
    );
    for args in [
        vec!["plugins", "list"],
        vec!["tools", "list"],
        vec![
            "plugins",
            "add",
            wc().to_str().unwrap(),
            "--yes",
            "--name",
            "again",
        ],
    ] {
        let out = env.run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("the plugin directory cannot be trusted"),
            "{args:?}: {err}"
        );
        assert!(err.contains(&expected), "{args:?}: {err}");
    }
    // A run is refused before anything is created.
    let out = env.run(&[
        "run",
        "--engine",
        "http://127.0.0.1:9/v1",
        "--model",
        "q",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&expected),
        "{}",
        text(&out.stderr)
    );
    assert!(!env.db.exists());

    std::fs::set_permissions(env.plugin_dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(env.tool_names().contains(&"wc__count".to_owned()));
}

#[cfg(unix)]
#[test]
fn a_cache_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let cache = env.root.join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env
        .cmd()
        .env("GOAT_CACHE_DIR", &cache)
        .args(["tools", "call", "read_file", r#"{"path":"a"}"#])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "cannot use the compiled-code cache at {}: {} can be written by its group and \
             everyone (mode 777)",
            cache.display(),
            cache.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("chmod 700 {}", cache.display())),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
}

/// A plugin built with a toolchain that imports the whole of WASI (as
/// componentize-py and componentize-js do) is added and called: what it
/// reads of the host is empty, and an exit is the call's failure.
#[test]
fn a_plugin_importing_the_wasi_world_is_added_and_gets_nothing_of_the_hosts() {
    let env = Env::new();
    env.add_plugin(&dist("testing/wants_env.wasm"), &["--name", "envy"]);
    let out = env.run(&["tools", "call", "envy__wants_env", "{}"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "env=[] args=[]");
    let out = env.run(&["tools", "call", "envy__wants_env", r#"{"exit": 7}"#]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("exited (code 7)"),
        "{}",
        text(&out.stderr)
    );
}
