//! The policy at the filesystem boundary, through the real `goat` binary,
//! the real gate and the real components: deny rules hold on the file a
//! tool reaches (through symlinks, walks, and paths a plugin never
//! declares), version-control metadata is never written, hard links are
//! not written through, writes keep a file's permissions, and a FIFO cannot
//! hold a call.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use serde_json::json;

use crate::{Env, dist, text};

const SECRET: &str = "API_KEY=sk-live-0123456789";

/// A workspace with `secrets/prod.env` denied for reading, a link `pub`
/// to `secrets`, and an ordinary file.
fn with_secrets() -> Env {
    let env = Env::new();
    std::fs::create_dir(env.ws.join("secrets")).unwrap();
    std::fs::write(env.ws.join("secrets/prod.env"), format!("{SECRET}\n")).unwrap();
    std::fs::create_dir(env.ws.join("src")).unwrap();
    std::fs::write(
        env.ws.join("src/main.rs"),
        "fn main() {} // API_KEY is read at start\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("secrets", env.ws.join("pub")).unwrap();
    let out = env.run(&["permissions", "deny", "*", "secrets/**"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    env
}

fn call(env: &Env, tool: &str, args: serde_json::Value, extra: &[&str]) -> Output {
    let args = args.to_string();
    let mut argv = vec!["tools", "call", tool, args.as_str()];
    argv.extend_from_slice(extra);
    env.run(&argv)
}

/// Adds the hostile test plugin as `evil` (tool `evil__hostile`).
fn add_hostile_plugin(env: &Env) {
    let out = env.run(&[
        "plugins",
        "add",
        dist("testing/hostile_plugin.wasm").to_str().unwrap(),
        "--name",
        "evil",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
}

fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_denied_directory_is_invisible_to_every_walking_tool() {
    let env = with_secrets();
    for (tool, args) in [
        ("search_files", json!({"pattern": "API_KEY"})),
        (
            "search_files",
            json!({"pattern": "API_KEY", "glob": "secrets/*"}),
        ),
        ("search_files", json!({"pattern": "API_KEY", "path": "pub"})),
        ("find_files", json!({"pattern": "*.env"})),
        ("list_directory", json!({"path": ".", "depth": 3})),
        ("list_directory", json!({"path": "pub"})),
    ] {
        let out = call(&env, tool, args.clone(), &[]);
        let shown = all_output(&out);
        assert!(!shown.contains("sk-live"), "{tool} {args}: {shown}");
        assert!(!shown.contains("prod.env"), "{tool} {args}: {shown}");
    }
    // The rest of the workspace is still searched.
    let out = call(&env, "search_files", json!({"pattern": "API_KEY"}), &[]);
    assert!(
        text(&out.stdout).contains("src/main.rs"),
        "{}",
        all_output(&out)
    );
}

#[test]
fn a_symlink_does_not_reach_a_denied_file_for_reading_or_writing() {
    let env = with_secrets();
    let out = call(&env, "read_file", json!({"path": "pub/prod.env"}), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        !all_output(&out).contains("sk-live"),
        "{}",
        all_output(&out)
    );

    let out = call(
        &env,
        "write_file",
        json!({"path": "pub/prod.env", "content": "overwritten\n"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("secrets/prod.env")).unwrap(),
        format!("{SECRET}\n")
    );
    // A plugin opening the file through the link, with writes allowed, is
    // told which rule refused it.
    add_hostile_plugin(&env);
    let out = call(
        &env,
        "evil__hostile",
        json!({"action": "read-undeclared", "file": "pub/prod.env"}),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("no-entry"),
        "{}",
        all_output(&out)
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("secrets/prod.env")).unwrap(),
        format!("{SECRET}\n")
    );
}

#[test]
fn a_plugin_gets_no_more_than_the_policy_allows() {
    let env = with_secrets();
    add_hostile_plugin(&env);
    // A path in a field the gate never sees, and a raw walk of everything.
    for args in [
        json!({"action": "read-undeclared", "file": "secrets/prod.env"}),
        json!({"action": "read-undeclared", "file": "pub/prod.env"}),
        json!({"action": "walk"}),
    ] {
        let out = call(&env, "evil__hostile", args.clone(), &[]);
        let shown = all_output(&out);
        assert!(!shown.contains("sk-live"), "{args}: {shown}");
        assert!(!shown.contains("prod.env"), "{args}: {shown}");
    }
    // The walk still reaches what is allowed.
    let out = call(&env, "evil__hostile", json!({"action": "walk"}), &[]);
    assert!(
        text(&out.stdout).contains("src/main.rs: fn main()"),
        "{}",
        all_output(&out)
    );
}

#[test]
fn version_control_metadata_is_never_written_without_a_rule_naming_it() {
    let env = Env::new();
    std::fs::create_dir_all(env.ws.join(".git/hooks")).unwrap();
    let config = "[core]\n\tbare = false\n";
    std::fs::write(env.ws.join(".git/config"), config).unwrap();
    std::fs::write(env.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::os::unix::fs::symlink(".git/hooks/pre-commit", env.ws.join("NOTES.md")).unwrap();

    // Named directly: the gate refuses before anything runs.
    let out = call(
        &env,
        "edit_file",
        json!({"path": ".git/config", "old_string": "bare = false", "new_string": "fsmonitor = \"touch pwned\""}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("version-control metadata"),
        "{}",
        all_output(&out)
    );
    // Through a link: the sandbox refuses on the file reached.
    let out = call(
        &env,
        "write_file",
        json!({"path": "NOTES.md", "content": "#!/bin/sh\ntouch pwned\n"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("version-control metadata"),
        "{}",
        all_output(&out)
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join(".git/config")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    // Reading stays allowed.
    let out = call(&env, "read_file", json!({"path": ".git/config"}), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));

    // A rule naming the path lifts the protection for exactly it.
    let out = env.run(&[
        "permissions",
        "allow",
        "write_file",
        ".git/info/exclude",
        "--write",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    std::fs::create_dir_all(env.ws.join(".git/info")).unwrap();
    let out = call(
        &env,
        "write_file",
        json!({"path": ".git/info/exclude", "content": "target/\n"}),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert_eq!(
        std::fs::read_to_string(env.ws.join(".git/info/exclude")).unwrap(),
        "target/\n"
    );
}

const KEY: &str = "KEY=hard-linked-0123456789";

/// A workspace with `secret` denied for reading, `innocent.txt` a hard
/// link to `secret/key.txt`, and `a.txt`/`b.txt` two names of one file no
/// rule hides.
pub(crate) fn with_hard_linked_secret() -> Env {
    let env = Env::new();
    std::fs::create_dir(env.ws.join("secret")).unwrap();
    std::fs::write(env.ws.join("secret/key.txt"), format!("{KEY}\n")).unwrap();
    std::fs::hard_link(env.ws.join("secret/key.txt"), env.ws.join("innocent.txt")).unwrap();
    std::fs::write(env.ws.join("a.txt"), "KEY=shared-by-two-names\n").unwrap();
    std::fs::hard_link(env.ws.join("a.txt"), env.ws.join("b.txt")).unwrap();
    let out = env.run(&["permissions", "deny", "*", "secret"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    env
}

#[test]
fn a_hard_link_to_a_denied_file_is_denied_too() {
    let env = with_hard_linked_secret();
    add_hostile_plugin(&env);
    for (tool, args) in [
        ("read_file", json!({"path": "innocent.txt"})),
        ("search_files", json!({"pattern": "hard-linked"})),
        (
            "search_files",
            json!({"pattern": "KEY", "path": "innocent.txt"}),
        ),
        ("find_files", json!({"pattern": "*.txt"})),
        ("list_directory", json!({"path": "."})),
        (
            "evil__hostile",
            json!({"action": "read-undeclared", "file": "innocent.txt"}),
        ),
        ("evil__hostile", json!({"action": "walk"})),
    ] {
        let out = call(&env, tool, args.clone(), &[]);
        let shown = all_output(&out);
        assert!(!shown.contains("0123456789"), "{tool} {args}: {shown}");
        // Not listed or found either (a path the call named is echoed).
        if !args.to_string().contains("innocent") {
            assert!(!shown.contains("innocent"), "{tool} {args}: {shown}");
        }
    }
    // Two names of a file no rule hides are both still read and listed.
    for path in ["a.txt", "b.txt"] {
        let out = call(&env, "read_file", json!({"path": path}), &[]);
        assert!(
            text(&out.stdout).contains("shared-by-two-names"),
            "{path}: {}",
            all_output(&out)
        );
    }
    let out = call(&env, "search_files", json!({"pattern": "KEY"}), &[]);
    let shown = all_output(&out);
    assert!(
        shown.contains("a.txt") && shown.contains("b.txt"),
        "{shown}"
    );
}

#[test]
fn a_hard_link_to_a_file_outside_is_not_written_through() {
    let env = Env::new();
    let outside = env.root.join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::fs::hard_link(&outside, env.ws.join("link.txt")).unwrap();
    let out = call(
        &env,
        "write_file",
        json!({"path": "link.txt", "content": "pwned\n"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("hard links"),
        "{}",
        all_output(&out)
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
}

#[test]
fn a_write_keeps_the_files_permissions_and_leaves_no_temporary_file() {
    let env = Env::new();
    let script = env.ws.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho old\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let out = call(
        &env,
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    let names: Vec<_> = std::fs::read_dir(&env.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["run.sh"]);
}

#[test]
fn a_fifo_is_refused_at_once_not_waited_on() {
    let env = Env::new();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        env.ws.join("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    add_hostile_plugin(&env);
    // Before the fence, this open blocked the call's thread until a writer
    // came (none does), past every limit.
    let out = call(
        &env,
        "evil__hostile",
        json!({"action": "read", "path": "pipe"}),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("not a regular file or directory"),
        "{}",
        all_output(&out)
    );
}

#[test]
fn moving_and_deleting_hold_to_the_same_rules_as_writing() {
    let env = with_secrets();
    std::fs::create_dir_all(env.ws.join(".git/hooks")).unwrap();
    std::fs::write(env.ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(env.ws.join("evil.sh"), "#!/bin/sh\ntouch pwned\n").unwrap();
    let refusals = [
        (
            "delete_file",
            json!({"path": ".git/config"}),
            "version-control metadata",
        ),
        (
            "move_file",
            json!({"from": "evil.sh", "to": ".git/hooks/pre-commit"}),
            "version-control metadata",
        ),
        (
            "move_file",
            json!({"from": ".git/config", "to": "config.txt"}),
            "version-control metadata",
        ),
        (
            "move_file",
            json!({"from": "secrets/prod.env", "to": "public.env"}),
            "secrets/prod.env",
        ),
        (
            "delete_file",
            json!({"path": "secrets/prod.env"}),
            "secrets/prod.env",
        ),
        // Through the link to the denied directory: the sandbox decides on
        // the file reached, which it hides.
        (
            "delete_file",
            json!({"path": "pub/prod.env"}),
            "does not exist",
        ),
        // A directory with rules inside it is not moved out from under them.
        (
            "move_file",
            json!({"from": "secrets", "to": "open"}),
            "secrets",
        ),
    ];
    for (tool, args, says) in refusals {
        let out = call(&env, tool, args.clone(), &["--allow-writes"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{tool} {args}: {}",
            all_output(&out)
        );
        assert!(
            all_output(&out).contains(says),
            "{tool} {args}: {}",
            all_output(&out)
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!env.ws.join(".git/hooks/pre-commit").exists());
    assert!(env.ws.join("evil.sh").exists());
    assert_eq!(
        std::fs::read_to_string(env.ws.join("secrets/prod.env")).unwrap(),
        format!("{SECRET}\n")
    );
    assert!(!env.ws.join("public.env").exists() && !env.ws.join("open").exists());

    // Without --allow-writes and without a terminal, a move is a write
    // that nobody approved.
    let out = call(
        &env,
        "move_file",
        json!({"from": "src/main.rs", "to": "main.rs"}),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(env.ws.join("src/main.rs").exists());
    // With it, an ordinary move and delete happen.
    let out = call(
        &env,
        "move_file",
        json!({"from": "src/main.rs", "to": "lib/main.rs"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert!(env.ws.join("lib/main.rs").exists() && !env.ws.join("src/main.rs").exists());
    let out = call(
        &env,
        "delete_file",
        json!({"path": "evil.sh"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    assert!(!env.ws.join("evil.sh").exists());
}

#[test]
fn a_move_the_sandbox_refuses_leaves_no_directories_behind() {
    let env = Env::new();
    std::fs::create_dir_all(env.ws.join("src")).unwrap();
    std::fs::write(env.ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    // A rule that could apply inside any directory: no directory is
    // renamed (the fence's rule), though the gate allows both names.
    let out = env.run(&["permissions", "deny", "*", "**/*.env"]);
    assert_eq!(out.status.code(), Some(0), "{}", all_output(&out));
    let out = call(
        &env,
        "move_file",
        json!({"from": "src", "to": "new/place/src"}),
        &["--allow-writes"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    assert!(
        all_output(&out).contains("renaming the directory"),
        "{}",
        all_output(&out)
    );
    assert!(
        !env.ws.join("new").exists(),
        "the directories made for the move stayed"
    );
    assert!(env.ws.join("src/main.rs").exists());
}
