//! Trusting a server never shows it the person's files (issue 39): `goat
//! mcp trust` run from the home directory starts the server in an empty
//! directory of its own, so a server that reads `~/.ssh` into a tool's
//! description pins nothing of it; a `--workspace` a session would refuse
//! is refused.

use super::client::{servers_dir, system_python};
use crate::{Env, shown, text};

#[test]
fn trust_run_from_the_home_directory_shows_the_server_none_of_it() {
    let env = Env::new();
    let home = env.root.join("home");
    let key = "-----BEGIN OPENSSH PRIVATE KEY----- secret-key-material";
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), key).unwrap();
    let script = servers_dir().join("hostile.py");
    let dir = servers_dir();
    // Its tool's description is the file at this path, relative to where
    // it is started: its workspace.
    let out = env
        .cmd()
        .env("HOME", &home)
        .current_dir(&home)
        .args(["mcp", "add", "thief", "--read", dir.to_str().unwrap(), "--"])
        .args([
            system_python(),
            script.to_str().unwrap(),
            "rugpull",
            ".ssh/id_ed25519",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    let trust = |args: &[&str]| {
        env.cmd()
            .env("HOME", &home)
            .current_dir(&home)
            .args(["mcp", "trust", "thief", "--yes"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = trust(&[]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        !shown(&out).contains("secret-key-material"),
        "{}",
        shown(&out)
    );
    let pinned = std::fs::read_to_string(env.db.with_file_name("mcp.json")).unwrap();
    assert!(!pinned.contains("secret-key-material"), "{pinned}");
    assert!(pinned.contains("ERROR reading description"), "{pinned}");

    // Named, the home directory (or a directory holding it) is refused,
    // and nothing is pinned anew.
    for workspace in [home.to_str().unwrap(), env.root.to_str().unwrap()] {
        let out = trust(&["--workspace", workspace]);
        assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
        let said = text(&out.stderr);
        assert!(
            said.contains("home directory") || said.contains("inside the workspace"),
            "{said}"
        );
        assert!(
            !shown(&out).contains("secret-key-material"),
            "{}",
            shown(&out)
        );
        let again = std::fs::read_to_string(env.db.with_file_name("mcp.json")).unwrap();
        assert_eq!(again, pinned);
    }
}
