//! `goat sessions diff ID --format patch` through the real binary: a
//! session changes a git repository with the Pen tools and a command
//! (text, binary, executable bits, a link, names git quotes, a missing
//! final newline, a change then undone); the patch, applied with `git
//! apply` (or `patch -p1`, text only) to a copy of the tree the session
//! started from, makes it what the session left, byte for byte and mode
//! for mode. A file whose bytes were not kept makes it fail with nothing
//! on stdout, and it is never printed to a terminal.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use goat_testkit::ScriptedServer;
use serde_json::json;

use crate::pty::Pty;
use crate::{Env, GoatRun, call_reply, content_reply, json_out, text};

/// Runs git in `dir`, away from the person's and the system's settings.
fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args([
            "-c",
            "user.name=GOAT tests",
            "-c",
            "user.email=goat@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Makes the workspace a git repository with everything in it committed,
/// and copies it whole, `.git` included, to `start`: the tree the session
/// starts from.
fn commit_and_copy(env: &Env, start: &Path) {
    ok(&git(&env.ws, &["init", "-q"]));
    ok(&git(&env.ws, &["add", "-A"]));
    ok(&git(&env.ws, &["commit", "-q", "-m", "start"]));
    ok(&Command::new("cp")
        .arg("-a")
        .arg(&env.ws)
        .arg(start)
        .output()
        .unwrap());
}

/// What a tree holds as git sees it, `.git` left out: each file with its
/// bytes and whether it is executable (all git keeps of a mode), each
/// link with its target. Directories show through their files: a patch
/// holds no directory.
fn tree(root: &Path) -> BTreeMap<String, (&'static str, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (&'static str, Vec<u8>)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if rel == ".git" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(rel, ("link", target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                walk(root, &path, out);
            } else {
                let kind = if meta.permissions().mode() & 0o100 != 0 {
                    "100755"
                } else {
                    "100644"
                };
                out.insert(rel, (kind, fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Asserts two trees are the same, naming the paths that differ.
fn assert_same_tree(left: &Path, right: &Path) {
    let (l, r) = (tree(left), tree(right));
    let differ: std::collections::BTreeSet<&String> = l
        .keys()
        .chain(r.keys())
        .filter(|k| l.get(*k) != r.get(*k))
        .collect();
    assert!(
        differ.is_empty(),
        "{} and {} differ at {differ:?}",
        left.display(),
        right.display()
    );
}

/// Whether `run_command` gets a namespace view here; says why not.
fn view_available(env: &Env) -> bool {
    let specs = json_out(&env.run(&["tools", "list", "--json"]));
    let containment = specs
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "run_command"))
        .map(|s| s["containment"].clone());
    if containment == Some(json!("namespace")) {
        return true;
    }
    eprintln!("skipped: run_command has no namespace view here");
    false
}

/// Bytes with NULs: a binary file to git.
fn binary(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let x = (i as u32).wrapping_add(seed).wrapping_mul(2_654_435_761);
            if i % 7 == 0 { 0 } else { (x >> 11) as u8 }
        })
        .collect()
}

fn session_id(env: &Env) -> String {
    let listed = json_out(&env.run(&["sessions", "list", "--json"]));
    listed[0]["id"].as_str().unwrap().to_owned()
}

/// The whole round trip: two turns of Pen tools and a command, the second
/// undone, then the patch applied to the starting tree with `git apply`.
#[tokio::test(flavor = "multi_thread")]
async fn git_apply_of_the_patch_makes_the_starting_tree_what_the_session_left() {
    let env = Env::new();
    if !view_available(&env) {
        return;
    }
    let ws = &env.ws;
    fs::write(ws.join("README.md"), "# Demo\n\nSome text.\n").unwrap();
    fs::write(ws.join("notes.txt"), "no newline at the end").unwrap();
    fs::write(ws.join("my café.txt"), "hello\n").unwrap();
    fs::write(ws.join("logo.png"), binary(1, 3000)).unwrap();
    fs::write(ws.join("data.bin"), binary(2, 500)).unwrap();
    fs::write(ws.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(ws.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(ws.join("plain.sh"), "#!/bin/sh\necho plain\n").unwrap();
    fs::create_dir(ws.join("src")).unwrap();
    fs::write(ws.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    let start = env.root.join("start");
    commit_and_copy(&env, &start);

    let server = ScriptedServer::start(vec![
        // Turn 1.
        call_reply(
            "c1",
            "write_file",
            r#"{"path": "src/new.rs", "content": "fn main() {}\n"}"#,
        ),
        call_reply(
            "c2",
            "edit_file",
            r#"{"path": "README.md", "old_string": "Some text.", "new_string": "Other text.\nMore."}"#,
        ),
        call_reply(
            "c3",
            "edit_file",
            r#"{"path": "notes.txt", "old_string": "no newline", "new_string": "still no newline"}"#,
        ),
        call_reply(
            "c4",
            "write_file",
            r#"{"path": "my café.txt", "content": "hello\nworld"}"#,
        ),
        call_reply(
            "c5",
            "write_file",
            r#"{"path": "new.bin", "content": "\u0000\u0001binary\u0000"}"#,
        ),
        call_reply("c6", "delete_file", r#"{"path": "logo.png"}"#),
        call_reply("c7", "delete_file", r#"{"path": "src/lib.rs"}"#),
        call_reply(
            "c8",
            "move_file",
            r#"{"from": "run.sh", "to": "bin/run.sh"}"#,
        ),
        call_reply(
            "c9",
            "run_command",
            r#"{"command": "printf '\\000\\377more' >> data.bin && chmod +x plain.sh && ln -s README.md link.md && mkdir empty && printf 'a\\r\\nb\\r\\n' > crlf.txt && printf 'caf\\351 \\033[1m\\377' > latin1.txt"}"#,
        ),
        content_reply("Done."),
        // Turn 2, undone.
        call_reply(
            "d1",
            "write_file",
            r#"{"path": "scratch.txt", "content": "scratch\n"}"#,
        ),
        call_reply(
            "d2",
            "edit_file",
            r#"{"path": "README.md", "old_string": "More.", "new_string": "Undone."}"#,
        ),
        content_reply("Done again."),
    ])
    .await;
    let url = server.base_url();
    let run = |session: Option<String>| {
        let mut args = vec![
            "run".to_owned(),
            "--engine".to_owned(),
            url.clone(),
            "--model".to_owned(),
            "qwen".to_owned(),
            "--allow-writes".to_owned(),
            "--allow-commands".to_owned(),
        ];
        if let Some(id) = session {
            args.extend(["--session".to_owned(), id]);
        }
        args.push("change files".to_owned());
        args
    };
    let first = run(None);
    let out = env
        .run_async(&first.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    ok(&out);
    let id = session_id(&env);
    let second = run(Some(id.clone()));
    let out = env
        .run_async(&second.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    ok(&out);
    assert_eq!(
        fs::read_to_string(ws.join("scratch.txt")).unwrap(),
        "scratch\n"
    );
    ok(&env.run(&["undo"]));
    assert!(!ws.join("scratch.txt").exists());
    // What the session left, checked on disk first, so the comparison
    // below compares something.
    assert!(
        fs::symlink_metadata(ws.join("link.md"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        fs::metadata(ws.join("plain.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0o111
    );
    assert_ne!(tree(ws), tree(&start));

    let out = env.run(&["sessions", "diff", &id[..8], "--format", "patch"]);
    ok(&out);
    let patch = &out.stdout;
    let shown = String::from_utf8_lossy(patch);
    assert!(shown.contains("GIT binary patch"), "{shown}");
    // Text that is not UTF-8, and an escape sequence, go out as they are.
    assert!(
        patch.windows(8).any(|w| w == b"+caf\xe9 \x1b[".as_slice()),
        "{shown}"
    );
    assert!(
        shown.contains("diff --git \"a/my caf\\303\\251.txt\""),
        "{shown}"
    );
    assert!(
        !shown.contains("scratch"),
        "an undone change is in the patch:\n{shown}"
    );
    // A patch holds no directory: the empty one is named on stderr.
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the empty directory empty/ it made"),
        "{stderr}"
    );
    let file = env.root.join("session.patch");
    fs::write(&file, patch).unwrap();

    // Silently too: on a corrupt binary hunk git 2.47 says so, applies
    // the files before it and exits 0. (The CRs are content, not a
    // whitespace mistake to warn of.)
    for args in [&["--check"][..], &[]] {
        let out = git(
            &start,
            &[
                &["apply", "--whitespace=nowarn"],
                args,
                &[file.to_str().unwrap()],
            ]
            .concat(),
        );
        ok(&out);
        assert_eq!(text(&out.stderr), "", "git apply {args:?}");
    }
    assert_same_tree(ws, &start);
    // And back: the reverse hunks (binary ones included) make it the
    // commit the session started from again. Modes left out: `git apply
    // -R` makes a file a patch deleted without its executable bit, for a
    // patch git itself wrote too (git 2.47).
    ok(&git(&start, &["apply", "-R", file.to_str().unwrap()]));
    let status = git(
        &start,
        &[
            "-c",
            "core.fileMode=false",
            "status",
            "--porcelain",
            "--untracked-files=all",
        ],
    );
    ok(&status);
    assert_eq!(text(&status.stdout), "", "the patch:\n{shown}");
}

/// A session of text edits only: `patch -p1` (GNU patch) takes its patch
/// too, names git quotes included.
#[tokio::test(flavor = "multi_thread")]
async fn patch_p1_applies_a_text_only_patch() {
    if Command::new("patch").arg("--version").output().is_err() {
        eprintln!("skipped: no patch program here");
        return;
    }
    let run = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                r##"{"path": "docs/new file.md", "content": "# New\n"}"##,
            ),
            call_reply(
                "c2",
                "edit_file",
                r#"{"path": "notes.txt", "old_string": "end", "new_string": "end, still"}"#,
            ),
            call_reply("c3", "delete_file", r#"{"path": "naïve.txt"}"#),
            content_reply("Done."),
        ])
        .allow_writes();
    let ws = &run.env().ws;
    fs::write(ws.join("notes.txt"), "first\nno newline at the end").unwrap();
    fs::write(ws.join("naïve.txt"), "gone\n").unwrap();
    let start = run.env().root.join("start");
    ok(&Command::new("cp")
        .arg("-a")
        .arg(ws)
        .arg(&start)
        .output()
        .unwrap());
    let run = run.run("edit").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = session_id(&run.env);
    let out = run.env.run(&["sessions", "diff", &id, "--format", "patch"]);
    ok(&out);
    let file = run.env.root.join("session.patch");
    fs::write(&file, &out.stdout).unwrap();
    ok(&Command::new("patch")
        .args(["-p1", "--batch", "--silent", "-i"])
        .arg(&file)
        .current_dir(&start)
        .output()
        .unwrap());
    assert_same_tree(&run.env.ws, &start);
}

/// A file over the checkpoint cap is kept as a hash only: no patch can
/// hold it, so the command fails naming it, with nothing on stdout.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_whose_bytes_were_not_kept_fails_the_patch_and_writes_nothing() {
    let run = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                r#"{"path": "small.txt", "content": "small\n"}"#,
            ),
            call_reply(
                "c2",
                "run_command",
                r#"{"command": "printf 'made by a command\\n' > cmd.txt && head -c 9000000 /dev/zero > big.bin"}"#,
            ),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--allow-commands");
    if !view_available(run.env()) {
        return;
    }
    let run = run.run("make a big file").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(
        fs::metadata(run.env.ws.join("big.bin")).unwrap().len(),
        9_000_000
    );
    let id = session_id(&run.env);
    let out = run.env.run(&["sessions", "diff", &id, "--format", "patch"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no patch written"), "{stderr}");
    assert!(
        stderr.contains("big.bin (as the session left it: "),
        "{stderr}"
    );
    assert!(!stderr.contains("small.txt"), "{stderr}");
    assert!(!stderr.contains("cmd.txt"), "{stderr}");
    // The text form shows what it can: what the command wrote, read back
    // from the workspace, too.
    let out = run.env.run(&["sessions", "diff", &id]);
    assert_eq!(out.status.code(), Some(0));
    let shown = text(&out.stdout);
    assert!(shown.contains("+small"), "{shown}");
    assert!(shown.contains("+made by a command"), "{shown}");
    assert!(
        shown.contains("big.bin: changed; not shown: GOAT has only a hash of it"),
        "{shown}"
    );
    // Changed since the command wrote it: no longer what was recorded.
    fs::write(run.env.ws.join("cmd.txt"), "someone's edit\n").unwrap();
    let shown = text(&run.env.run(&["sessions", "diff", &id]).stdout);
    assert!(!shown.contains("someone's edit"), "{shown}");
    assert!(shown.contains("cmd.txt: changed; not shown"), "{shown}");
}

/// The patch holds what the model wrote, escape sequences included: at a
/// terminal it is refused, and none of it reaches the screen.
#[tokio::test(flavor = "multi_thread")]
async fn a_patch_is_never_printed_to_a_terminal() {
    let run = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                r#"{"path": "evil.txt", "content": "\u001b]0;owned\u0007\u001b[31mred\n"}"#,
            ),
            content_reply("Done."),
        ])
        .allow_writes()
        .run("write")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = session_id(&run.env);
    let mut pty = Pty::spawn(
        &run.env,
        &["sessions", "diff", &id, "--format", "patch"],
        &[],
    );
    assert_eq!(pty.exit_code(), Some(2), "{}", pty.transcript());
    pty.expect("not printed to a terminal");
    let shown = pty.transcript();
    assert!(!shown.contains("\u{1b}]0;owned"), "{shown:?}");
    assert!(!shown.contains("\u{1b}[31mred"), "{shown:?}");
    assert!(!shown.contains("evil.txt"), "{shown}");
    // Through a pipe it is the raw bytes.
    let out = run.env.run(&["sessions", "diff", &id, "--format", "patch"]);
    ok(&out);
    assert!(
        out.stdout.windows(6).any(|w| w == b"\x1b[31mr".as_slice()),
        "{}",
        text(&out.stdout)
    );
}
