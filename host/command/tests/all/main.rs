//! The runner and its containment, called directly (the hostile cases run
//! through the `goat` binary in host/cli/tests/all/command.rs).

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::time::Duration;

use goat_command::{CommandRequest, Containment, Exit, Network, WorkspaceRules};

/// Only the version-control directories protected, as with no rules.
struct Protected;

impl WorkspaceRules for Protected {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable(&self, path: &str) -> bool {
        !path.split('/').any(|c| c == ".git")
    }
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, name: &str) -> bool {
        name == ".git"
    }
}

fn run(workspace: &Path, command: &str) -> goat_command::CommandOutcome {
    goat_command::run(
        &Containment {
            workspace: workspace.canonicalize().unwrap(),
            read_paths: Vec::new(),
            network: Network::Closed,
            env: Vec::new(),
            pids_cgroup: goat_command::PidsCgroup::WhereAvailable,
        },
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            timeout: Duration::from_secs(10),
        },
    )
    .unwrap()
}

#[test]
fn a_command_runs_in_the_workspace_and_writes_there() {
    let ws = tempfile::tempdir().unwrap();
    let out = run(
        ws.path(),
        "echo hi > made.txt && cat made.txt && mkdir d && echo x > d/y",
    );
    assert_eq!(out.exit, Exit::Code(0), "{}", out.render());
    assert_eq!(out.output.text, "hi\n");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("d/y")).unwrap(),
        "x\n"
    );
}

#[test]
fn git_metadata_stays_read_only_but_readable() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    let out = run(
        ws.path(),
        "cat .git/config; echo evil >> .git/config; echo $?; echo ok > src/a; touch .git/hooks-x; \
         echo $?",
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.path().join(".git/hooks-x").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/a")).unwrap(),
        "ok\n"
    );
    assert!(out.output.text.starts_with("[core]\n"), "{}", out.render());
}
