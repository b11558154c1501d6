//! The runner and its containment, called directly (the hostile cases run
//! through the `goat` binary in host/cli/tests/all/command.rs).

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::time::Duration;

use goat_command::{
    Changes, CommandRequest, Containment, ContainmentMode, Exit, Network, WorkspaceRules,
};

/// Only the version-control directories protected, as with no rules.
struct Protected;

impl WorkspaceRules for Protected {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, path: &str) -> Result<(), String> {
        if path.split('/').any(|c| c == ".git") {
            Err(format!("{path} is version-control metadata"))
        } else {
            Ok(())
        }
    }
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, name: &str) -> bool {
        name == ".git"
    }
}

fn containment(workspace: &Path, mode: ContainmentMode) -> Containment {
    Containment {
        workspace: workspace.canonicalize().unwrap(),
        read_paths: Vec::new(),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: goat_command::PidsCgroup::WhereAvailable,
        mode,
        home: None,
        layers_dir: None,
    }
}

/// Runs in a view and lands what the inspection lets through.
fn run_landed(workspace: &Path, command: &str) -> goat_command::CommandOutcome {
    let mut out = goat_command::run(
        &containment(workspace, ContainmentMode::Namespace),
        &Protected,
        &CommandRequest {
            command,
            cwd: None,
            timeout: Duration::from_secs(20),
        },
    )
    .unwrap();
    if let Changes::Pending(pending) =
        std::mem::replace(&mut out.changes, Changes::Unreadable(String::new()))
    {
        let mut pending = pending;
        let found = pending.inspect(&Protected);
        if found.refused.is_empty() {
            pending.land().unwrap();
        }
    }
    out
}

#[test]
fn a_fresh_repository_root_takes_new_files_in_a_view() {
    if goat_command::namespace_support().is_err() {
        eprintln!(
            "skipped: no namespace view here: {}",
            goat_command::namespace_support().unwrap_err()
        );
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.path().join("old.txt"), "old").unwrap();
    let out = run_landed(
        ws.path(),
        "mkdir -p target/debug && echo built > target/debug/app && echo new > root.txt && rm old.txt && \
         cat /proc/self/status | grep CapEff; echo x >> .git/config; echo $?",
    );
    assert_eq!(out.exit, Exit::Code(0), "{}", out.render());
    assert!(
        out.output.text.contains("CapEff:\t0000000000000000"),
        "{}",
        out.render()
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("root.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("target/debug/app")).unwrap(),
        "built\n"
    );
    assert!(!ws.path().join("old.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
}

fn run(workspace: &Path, command: &str) -> goat_command::CommandOutcome {
    goat_command::run(
        &containment(workspace, ContainmentMode::Landlock),
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

/// Someone edits a file while the change set waits (the person being
/// asked): landing refuses, every step is taken back, their edit stands.
#[test]
fn a_file_changed_after_the_command_is_never_replaced_by_its_landing() {
    if goat_command::namespace_support().is_err() {
        eprintln!("skipped: no namespace view here");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "old").unwrap();
    std::fs::write(ws.path().join("b.txt"), "old").unwrap();
    let out = goat_command::run(
        &containment(ws.path(), ContainmentMode::Namespace),
        &Protected,
        &CommandRequest {
            command: "echo cmd > a.txt; echo cmd > b.txt; echo new > c.txt",
            cwd: None,
            timeout: Duration::from_secs(20),
        },
    )
    .unwrap();
    let Changes::Pending(mut pending) = out.changes else {
        panic!("no change set");
    };
    assert!(pending.inspect(&Protected).refused.is_empty());
    // The person's editor saves b.txt meanwhile (a new inode, as editors do).
    std::fs::write(ws.path().join("b.tmp"), "the person's").unwrap();
    std::fs::rename(ws.path().join("b.tmp"), ws.path().join("b.txt")).unwrap();
    let err = pending.land().unwrap_err();
    assert!(err.taken_back, "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("b.txt")).unwrap(),
        "the person's"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "old"
    );
    assert!(!ws.path().join("c.txt").exists());
}
