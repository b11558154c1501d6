//! `run_command` in a namespace view (ADR-0077), through the real binary:
//! fresh projects build, every attack of issue 21 fails or is refused with
//! the files outside compared on disk before and after (mode, owner,
//! times, extended attributes), a refused change set leaves the workspace
//! as it was, `goat undo` puts back what a command changed, a large
//! removal is asked about, and the Landlock-only mode shows the limits it
//! states.
//!
//! Each test skips, saying why, where no view can be made here (a
//! container without user namespaces): then the Landlock-only tests in
//! command.rs are what holds.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use goat_testkit::ScriptedServer;
use serde_json::json;

use crate::pty::Pty;
use crate::{Env, GoatRun, Nobody, call_reply, content_reply, have, json_out, shown, text};

/// Whether a view can be made here; the skip note says why not.
pub(crate) fn view_available(env: &Env) -> bool {
    let specs = json_out(&env.run(&["tools", "list", "--json"]));
    let spec = specs
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "run_command").cloned())
        .unwrap_or_default();
    if spec["containment"] == "namespace" {
        return true;
    }
    eprintln!(
        "skipped: run_command has no namespace view here ({}); the Landlock-only tests cover \
         this machine",
        spec["not_offered"].as_str().unwrap_or("Landlock only")
    );
    false
}

/// `goat tools call run_command ARGS --allow-commands`, in `ws`.
fn command_in(env: &Env, ws: &Path, args: &serde_json::Value, vars: &[(&str, &str)]) -> Output {
    let mut cmd = env.cmd();
    cmd.envs(vars.iter().copied())
        .current_dir(ws)
        .args([
            "tools",
            "call",
            "run_command",
            &args.to_string(),
            "--workspace",
        ])
        .arg(ws)
        .arg("--allow-commands");
    cmd.output().unwrap()
}

/// What a path is, by everything a command might change about it.
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    xattrs: Vec<String>,
    bytes: Option<Vec<u8>>,
}

fn meta(path: &Path) -> Meta {
    let m = fs::symlink_metadata(path).unwrap();
    let mut names = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(path, &mut names).unwrap_or(0);
    let xattrs = names[..n]
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    Meta {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
        xattrs,
        bytes: m.is_file().then(|| fs::read(path).unwrap()),
    }
}

/// Every path under `root` with its metadata.
fn tree(root: &Path) -> BTreeMap<PathBuf, Meta> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path.clone());
            }
            out.insert(path.clone(), meta(&path));
        }
    }
    out
}

#[test]
fn a_fresh_cargo_project_builds_and_passes_its_tests_through_run_command() {
    let env = Env::new();
    if !view_available(&env) || !have("cargo") {
        return;
    }
    // Made where no Cargo workspace lies above it, as a new user's would
    // be (the test's own directory is inside GOAT's checkout).
    let fresh = tempfile::Builder::new()
        .prefix("goat-fresh-")
        .tempdir_in("/tmp")
        .unwrap();
    let made = Command::new("cargo")
        .args(["new", "--vcs", "git", "--quiet", "proj"])
        .current_dir(fresh.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let proj = fresh.path().join("proj");
    fs::write(
        proj.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n#[test] fn adds() { assert_eq!(add(2, 2), 4); }\n",
    )
    .unwrap();
    let out = command_in(
        &env,
        &proj,
        &json!({"command": "cargo build && cargo test 2>&1 && echo made > NOTES.md", "timeout_secs": 300}),
        &[],
    );
    let result = shown(&out);
    assert!(result.starts_with("exit code 0;"), "{result}");
    assert!(result.contains("test result: ok. 1 passed"), "{result}");
    assert!(proj.join("target/debug/proj").is_file(), "{result}");
    // A file at the repository's root, beside .git.
    assert_eq!(fs::read_to_string(proj.join("NOTES.md")).unwrap(), "made\n");
    assert!(result.contains("landed in the workspace"), "{result}");
}

/// `cargo build` with a new dependency and `npm install` write to their
/// caches under the home directory: in a view each cache is writable (an
/// overlay), and the host's stays byte for byte as it was, so a command
/// can neither fail on it nor plant a package in it.
#[test]
fn package_caches_are_writable_in_a_view_and_unchanged_outside() {
    let env = Env::new();
    if !view_available(&env) {
        return;
    }
    let home = env.root.join("home");
    let caches = [".cargo/registry/cache", ".npm/_cacache", ".cache/pip"];
    for dir in caches {
        fs::create_dir_all(home.join(dir)).unwrap();
        fs::write(home.join(dir).join("cached"), "from the host\n").unwrap();
    }
    let before = tree(&home);
    let script = caches
        .iter()
        .map(|dir| {
            format!(
                "cat $HOME/{dir}/cached && echo planted > $HOME/{dir}/new && \
                 echo changed >> $HOME/{dir}/cached && cat $HOME/{dir}/new"
            )
        })
        .collect::<Vec<_>>()
        .join(" && ");
    let out = command_in(
        &env,
        &env.ws,
        &json!({ "command": format!("{script} && echo all-written") }),
        &[("HOME", home.to_str().unwrap())],
    );
    let result = shown(&out);
    assert!(result.contains("all-written"), "{result}");
    assert_eq!(result.matches("from the host").count(), 3, "{result}");
    assert_eq!(tree(&home), before, "{result}");
    assert_eq!(
        fs::read_to_string(home.join(".npm/_cacache/cached")).unwrap(),
        "from the host\n"
    );
    // Nothing of it is in the workspace's change set either.
    assert!(!result.contains("landed in the workspace"), "{result}");
}

#[test]
fn a_python_venv_and_files_at_a_repository_root_are_made() {
    let env = Env::new();
    if !view_available(&env) || !have("python3") {
        return;
    }
    fs::create_dir(env.ws.join(".git")).unwrap();
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": "python3 -m venv .venv && .venv/bin/python -c 'print(40 + 2)' && \
                              printf 'a\\nb\\n' > requirements.txt && mkdir -p build/x && touch build/x/y",
                "timeout_secs": 120}),
        &[],
    );
    let result = shown(&out);
    assert!(result.starts_with("exit code 0;"), "{result}");
    assert!(result.contains("42"), "{result}");
    assert!(env.ws.join(".venv/bin/python").exists(), "{result}");
    assert!(env.ws.join(".venv/pyvenv.cfg").is_file());
    assert_eq!(
        fs::read_to_string(env.ws.join("requirements.txt")).unwrap(),
        "a\nb\n"
    );
    assert!(env.ws.join("build/x/y").is_file());
}

/// Issue 21's attacks, each from inside a command: every file outside the
/// workspace is compared before and after, with everything a command might
/// change about it.
#[test]
fn attacks_from_a_command_change_nothing_outside_the_workspace() {
    let env = Env::new();
    if !view_available(&env) {
        return;
    }
    let home = env.root.join("home");
    for dir in [".ssh", ".cargo/bin", ".cargo/registry"] {
        fs::create_dir_all(home.join(dir)).unwrap();
    }
    fs::write(home.join(".ssh/id_rsa"), "PLANTED-PRIVATE-KEY\n").unwrap();
    fs::set_permissions(home.join(".ssh/id_rsa"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(home.join(".ssh"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(
        home.join(".cargo/credentials.toml"),
        "token = \"PLANTED-CARGO-TOKEN\"\n",
    )
    .unwrap();
    let outside = env.root.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("file"), "outside\n").unwrap();
    fs::set_permissions(outside.join("file"), fs::Permissions::from_mode(0o600)).unwrap();
    // A toolchain directory the command may read: bound in read-only, so
    // its files are there, and still unchangeable.
    let toolchain = env.root.join("toolchain");
    fs::create_dir(&toolchain).unwrap();
    fs::write(toolchain.join("tool"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(toolchain.join("tool"), fs::Permissions::from_mode(0o755)).unwrap();
    let before_toolchain = tree(&toolchain);
    // The store and the rules sit beside the workspace too: made by a
    // first, harmless call, then compared (less the layers directory,
    // where each command's scratch layer comes and goes).
    let first = command_in(&env, &env.ws, &json!({"command": "true"}), &[]);
    assert!(first.status.success(), "{}", shown(&first));
    let state = |env: &Env| {
        let mut t = tree(env.db.parent().unwrap());
        t.retain(|p, _| !p.components().any(|c| c.as_os_str() == "layers"));
        t
    };
    let before_home = tree(&home);
    let before_outside = tree(&outside);
    let before_null = meta(Path::new("/dev/null"));
    let before_state = state(&env);
    let o = outside.display();
    let h = home.display();
    let t = toolchain.display();
    let attack = format!(
        "chmod 600 /dev/null; echo devnull=$?; touch -d 2001-01-01 /dev/null; cat {t}/tool; chmod 777 {t}/tool; echo chmod-t=$?; chown 1234 {t}/tool; touch -d 2001-01-01 {t}/tool; \
         python3 -c \"import os; os.setxattr('{t}/tool', 'user.planted', b'1')\"; \
         echo x >> {t}/tool; rm {t}/tool; chmod 777 {h}/.ssh; chmod 666 {h}/.ssh/id_rsa; chmod 777 {o}/file; \
         chown 1234:1234 {o}/file; touch -d 2001-01-01 {o}/file; \
         python3 -c \"import os; os.setxattr('{o}/file', 'user.planted', b'1')\"; \
         cat {h}/.ssh/id_rsa; cat $HOME/.cargo/credentials.toml; cat {h}/.cargo/credentials.toml; \
         mknod blk b 7 0; echo mknod-b=$?; mknod chr c 1 3; echo mknod-c=$?; \
         grep CapEff /proc/self/status; date -s 2001-01-01 >/dev/null 2>&1; echo settime=$?; \
         dmesg >/dev/null 2>&1; echo syslog=$?; \
         python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); \
print('keyctl', l.syscall(250, 0, -3, 0), ctypes.get_errno())\"; \
         echo done"
    );
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": attack}),
        &[
            ("HOME", home.to_str().unwrap()),
            ("GOAT_COMMANDS_READ_PATHS", toolchain.to_str().unwrap()),
        ],
    );
    let result = shown(&out);
    assert!(result.contains("done"), "{result}");
    // The toolchain was readable, and nothing about it changed.
    assert!(result.contains("#!/bin/sh"), "{result}");
    assert!(result.contains("chmod-t=1"), "{result}");
    assert_eq!(tree(&toolchain), before_toolchain, "{result}");
    // The host's device nodes are bound in, never changed.
    assert!(!result.contains("devnull=0"), "{result}");
    assert_eq!(meta(Path::new("/dev/null")), before_null, "{result}");
    assert!(!result.contains("PLANTED-PRIVATE-KEY"), "{result}");
    assert!(!result.contains("PLANTED-CARGO-TOKEN"), "{result}");
    assert!(result.contains("CapEff:\t0000000000000000"), "{result}");
    assert!(
        !result.contains("mknod-b=0") && !result.contains("mknod-c=0"),
        "{result}"
    );
    assert!(!result.contains("settime=0"), "{result}");
    assert!(!result.contains("syslog=0"), "{result}");
    // keyctl(KEYCTL_GET_KEYRING_ID, session) is refused: -1, EPERM.
    assert!(result.contains("keyctl -1 1"), "{result}");
    assert!(!env.ws.join("blk").exists() && !env.ws.join("chr").exists());
    assert_eq!(tree(&home), before_home, "{result}");
    assert_eq!(tree(&outside), before_outside, "{result}");
    assert_eq!(state(&env), before_state);
}

/// A new `.git` anywhere (with `core.fsmonitor` set, which the person's
/// next `git status` there would run) refuses the whole change set: not
/// even the innocent file beside it lands.
#[test]
fn a_new_git_directory_at_any_depth_refuses_the_whole_change_set() {
    let env = Env::new();
    if !view_available(&env) || !have("git") {
        return;
    }
    fs::write(env.ws.join("kept.txt"), "as it was\n").unwrap();
    for (i, attack) in [
        "mkdir -p sub/deep && cd sub/deep && git init -q && git config core.fsmonitor 'touch /tmp/pwned'",
        "git init -q .",
        "mkdir -p a && printf 'gitdir: /tmp/elsewhere\\n' > a/.git",
        "mkdir -p x/.hg && echo '[hooks]' > x/.hg/hgrc",
        // A bare repository under another name: git runs its core.pager
        // when the person next runs `git log` in it.
        "mkdir -p sub/objects sub/refs && echo 'ref: refs/heads/main' > sub/HEAD && \
         printf '[core]\\n\\tpager = touch /tmp/pwned\\n' > sub/config",
    ]
    .into_iter()
    .enumerate()
    {
        let out = command_in(
            &env,
            &env.ws,
            &json!({"command": format!("echo new > innocent{i}.txt; rm kept.txt; {attack}")}),
            &[],
        );
        let result = shown(&out);
        assert!(
            result.contains("none of this command's changes to the workspace were kept"),
            "{attack}: {result}"
        );
        assert!(
            result.contains("version-control metadata") || result.contains("git repository's metadata"),
            "{attack}: {result}"
        );
        assert!(!env.ws.join(format!("innocent{i}.txt")).exists(), "{attack}");
        assert_eq!(fs::read_to_string(env.ws.join("kept.txt")).unwrap(), "as it was\n");
        for planted in ["sub", "a", "x", ".git"] {
            assert!(!env.ws.join(planted).exists(), "{attack}: {planted} landed");
        }
    }
}

/// The repository's own `.git` is read-only inside: a command sees it,
/// git reads it, nothing writes it.
#[test]
fn an_existing_git_directory_is_readable_and_never_written() {
    let env = Env::new();
    if !view_available(&env) || !have("git") {
        return;
    }
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.ws)
        .output()
        .unwrap();
    assert!(init.status.success());
    let before = tree(&env.ws.join(".git"));
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": "git status --short; echo '[core]' >> .git/config; echo w=$?; \
                              touch .git/hooks/post-merge; echo h=$?; echo ok > code.txt"}),
        &[],
    );
    let result = shown(&out);
    assert!(result.contains("w=1") || result.contains("w=2"), "{result}");
    assert!(!result.contains("h=0"), "{result}");
    assert_eq!(tree(&env.ws.join(".git")), before);
    assert_eq!(fs::read_to_string(env.ws.join("code.txt")).unwrap(), "ok\n");
}

/// `goat undo` after a command that creates, changes, chmods and deletes
/// files puts the workspace back byte for byte, modes included.
#[tokio::test(flavor = "multi_thread")]
async fn undo_after_a_command_restores_the_workspace_byte_for_byte() {
    let probe = Env::new();
    if !view_available(&probe) {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "run_command",
                r#"{"command": "echo changed >> keep.txt && chmod 755 script.sh && chmod 600 open.txt && rm gone.bin && rm -r olddir && mkdir -p new/deeper && echo fresh > new/deeper/made.txt && ln -s keep.txt link && printf '\\000\\001' > bin.dat"}"#,
            ),
            content_reply("Done."),
        ])
        .arg("--allow-commands");
    let ws = builder.env().ws.clone();
    fs::write(ws.join("keep.txt"), b"one\r\ntwo \xff").unwrap();
    fs::write(ws.join("script.sh"), "#!/bin/sh\n").unwrap();
    fs::write(ws.join("open.txt"), "open\n").unwrap();
    fs::set_permissions(ws.join("open.txt"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::write(ws.join("gone.bin"), b"\x00binary").unwrap();
    fs::set_permissions(ws.join("gone.bin"), fs::Permissions::from_mode(0o751)).unwrap();
    fs::create_dir_all(ws.join("olddir/inner")).unwrap();
    fs::write(ws.join("olddir/inner/f.txt"), "inner\n").unwrap();
    fs::set_permissions(ws.join("olddir/inner"), fs::Permissions::from_mode(0o750)).unwrap();
    let strip = |t: BTreeMap<PathBuf, Meta>| -> BTreeMap<PathBuf, (u32, Option<Vec<u8>>)> {
        t.into_iter().map(|(p, m)| (p, (m.mode, m.bytes))).collect()
    };
    let before = strip(tree(&ws));
    let run = builder.run("change things with a command").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(run.exists("new/deeper/made.txt") && !run.exists("gone.bin"));
    let out = run.env.run(&["undo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let after = strip(tree(&ws));
    for (path, was) in &before {
        assert_eq!(after.get(path), Some(was), "{}: {stdout}", path.display());
    }
    assert_eq!(
        after.len(),
        before.len(),
        "{:?}: {stdout}",
        after.keys().collect::<Vec<_>>()
    );
    // The diff of the session showed the command's changes before.
    let again = run.env.run(&["undo"]);
    assert!(
        text(&again.stdout).contains("nothing to undo"),
        "{}",
        text(&again.stdout)
    );
}

/// A command that deletes 1,000 files in ask mode is asked about before
/// its change set lands; "deny" keeps every file.
#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_deletions_are_asked_about_before_they_land() {
    let env = Env::new();
    if !view_available(&env) {
        return;
    }
    fs::create_dir(env.ws.join("many")).unwrap();
    for i in 0..1000 {
        fs::write(env.ws.join(format!("many/f{i}.txt")), format!("{i}\n")).unwrap();
    }
    let server = ScriptedServer::start(vec![
        call_reply("call_1", "run_command", r#"{"command": "rm -rf many"}"#),
        content_reply("Removed."),
    ])
    .await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("> ");
    pty.type_keys("clean up\r");
    pty.expect("goat: run_command wants to run 'rm -rf many'");
    pty.type_keys("o\r");
    pty.expect(
        "its changes would remove or replace existing files: 0 created, 0 changed, 1000 removed",
    );
    pty.expect("removed: 'many/f0.txt'");
    assert_eq!(
        fs::read_dir(env.ws.join("many")).unwrap().count(),
        1000,
        "nothing lands before the answer"
    );
    pty.type_keys("d\r");
    pty.expect("Removed.");
    pty.expect("> ");
    pty.type_keys("\x04");
    assert_eq!(fs::read_dir(env.ws.join("many")).unwrap().count(), 1000);
    let sent = server.requests();
    let last = sent.last().unwrap().body.to_string();
    assert!(
        last.contains("did not let this command's changes land"),
        "{last}"
    );
}

/// Forced Landlock-only containment states its limits and shows them:
/// the tool list says what it cannot enforce, and a mode change outside
/// the workspace is one of them (seen here, not hidden).
#[test]
fn landlock_only_containment_says_what_it_cannot_enforce_and_that_is_what_happens() {
    let env = Env::new();
    let vars = [("GOAT_COMMANDS_CONTAINMENT", "landlock")];
    let mut list = env.cmd();
    list.envs(vars).args(["tools", "list"]);
    let listing = text(&list.output().unwrap().stdout);
    assert!(listing.contains("Landlock-only containment"), "{listing}");
    assert!(listing.contains("permission bits, times"), "{listing}");
    let outside = env.root.join("outside-file");
    fs::write(&outside, "x").unwrap();
    fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
    fs::create_dir(env.ws.join(".git")).unwrap();
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": format!("cat {0}; chmod 644 {0}; echo x > at-root.txt", outside.display())}),
        &vars,
    );
    let result = shown(&out);
    assert!(result.contains("Permission denied"), "{result}");
    // The stated limits, as they are: the mode changed; nothing could be
    // made at the repository's root.
    assert_eq!(fs::metadata(&outside).unwrap().mode() & 0o777, 0o644);
    assert!(!env.ws.join("at-root.txt").exists());
    // A FIFO left in the workspace hangs neither this command's snapshot
    // nor the next one's; a new .git is reported, loudly.
    fs::create_dir(env.ws.join("sub")).unwrap();
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": "mkfifo sub/p && cd sub && git init -q . 2>/dev/null; mkdir -p .git; echo made"}),
        &vars,
    );
    let result = shown(&out);
    assert!(result.contains("made"), "{result}");
    assert!(
        result.contains("WARNING: Landlock-only containment could not stop"),
        "{result}"
    );
    let again = command_in(&env, &env.ws, &json!({"command": "echo again"}), &vars);
    assert!(shown(&again).contains("again"), "{}", shown(&again));
}

/// As an unprivileged user (made by the test; CI runs as root), a view is
/// made too: a file at the repository root lands, a mode change outside
/// does not.
#[test]
fn as_an_unprivileged_user_the_view_holds_too() {
    let Some(nobody) = Nobody::new("goat-nobody") else {
        return;
    };
    let ws = &nobody.ws;
    fs::create_dir(ws.join(".git")).unwrap();
    let outside = nobody.base.join("outside.txt");
    fs::write(&outside, "x").unwrap();
    for path in [&ws.join(".git"), &outside] {
        nobody.chown(path);
    }
    fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
    let out = nobody.run_command(
        &json!({"command": format!("chmod 666 {}; echo x > at-root.txt; grep CapEff /proc/self/status", outside.display())}),
        &[],
    );
    let result = shown(&out);
    let _cleanup = scopeguard(&nobody.base);
    if result.contains("Landlock-only") || result.contains("no namespace") {
        eprintln!("skipped: no view for an unprivileged user here: {result}");
        return;
    }
    assert!(result.contains("CapEff:\t0000000000000000"), "{result}");
    assert_eq!(
        fs::metadata(&outside).unwrap().mode() & 0o777,
        0o600,
        "{result}"
    );
    assert_eq!(
        fs::read_to_string(ws.join("at-root.txt")).unwrap(),
        "x\n",
        "{result}"
    );
    assert_eq!(fs::metadata(ws.join("at-root.txt")).unwrap().uid(), 65534);
}

/// Removes a directory when dropped.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn scopeguard(path: &Path) -> Cleanup {
    Cleanup(path.to_path_buf())
}

/// A command's change set written to the store but not marked landed (GOAT
/// stopped in between): `goat sessions show` says, per path, which of its
/// two states the disk holds.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_show_says_which_state_each_path_of_an_unlanded_set_holds() {
    let run = GoatRun::builder()
        .replies([
            call_reply("c1", "run_command", r#"{"command": "true"}"#),
            content_reply("Done."),
        ])
        .arg("--allow-commands")
        .run("run something")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let ws = &run.env.ws;
    let mut store = goat_store::Store::open(&run.env.db).unwrap();
    let session = store.list_sessions().unwrap().remove(0).id;
    let turns = store.turns(&session).unwrap();
    let row = turns[0].rounds[0].calls[0].id;
    let sha = |b: &[u8]| {
        use sha2::Digest;
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let change = |path: &str, before: Option<&[u8]>, after: Option<&[u8]>| goat_store::FileChange {
        path: path.to_owned(),
        before: before.map(<[u8]>::to_vec),
        before_mode: before.map(|_| 0o644),
        after_sha256: after.map(sha),
        after: after.map(<[u8]>::to_vec),
        ..goat_store::FileChange::default()
    };
    store
        .journal_changes(
            row,
            &[
                change("landed.txt", None, Some(b"new\n")),
                change("not-landed.txt", Some(b"old\n"), Some(b"new\n")),
                change("someone.txt", Some(b"old\n"), None),
            ],
        )
        .unwrap();
    drop(store);
    fs::write(ws.join("landed.txt"), "new\n").unwrap();
    fs::write(ws.join("not-landed.txt"), "old\n").unwrap();
    fs::write(ws.join("someone.txt"), "a person's edit\n").unwrap();
    let out = run.env.run(&["sessions", "show", &session]);
    let shown = text(&out.stdout);
    assert!(
        shown.contains("GOAT stopped while landing a command's changes"),
        "{shown}"
    );
    assert!(
        shown.contains("landed.txt: as the command left it (landed)"),
        "{shown}"
    );
    assert!(
        shown.contains("not-landed.txt: as before the command (not landed)"),
        "{shown}"
    );
    assert!(shown.contains("someone.txt: neither"), "{shown}");
}

/// A command that fails naming a path under the home directory that is not
/// granted gets one line naming the setting that grants it; one naming a
/// place that holds keys does not.
#[test]
fn a_failure_naming_an_ungranted_toolchain_says_which_setting_grants_it() {
    let env = Env::new();
    if !view_available(&env) {
        return;
    }
    let home = env.root.join("home");
    fs::create_dir_all(home.join(".mytool/lib")).unwrap();
    fs::write(home.join(".mytool/lib/core.py"), "x = 1\n").unwrap();
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": "cat $HOME/.mytool/lib/core.py"}),
        &[("HOME", home.to_str().unwrap())],
    );
    let result = shown(&out);
    assert!(!result.starts_with("exit code 0"), "{result}");
    assert!(
        result.contains("add \"~/.mytool\" to commands.read_paths"),
        "{result}"
    );
    let out = command_in(
        &env,
        &env.ws,
        &json!({"command": "cat $HOME/.ssh/id_ed25519"}),
        &[("HOME", home.to_str().unwrap())],
    );
    assert!(
        !shown(&out).contains("commands.read_paths"),
        "{}",
        shown(&out)
    );
}
