//! `run_command` where GOAT runs inside a container, reproduced without
//! one (docs/harness.md measured Docker itself): mounts inside `/etc`, a
//! workspace on a bind mount or on overlayfs, an unprivileged user with
//! Landlock only. Each situation is made in a private mount namespace
//! (`unshare --mount`, as root) around the real binary; a test skips,
//! saying why, where that cannot be done.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::{Env, Nobody, have, shown};

/// Whether these tests can make their mount namespaces; says why not.
fn can_unshare() -> bool {
    if !rustix::process::geteuid().is_root() || !have("unshare") {
        eprintln!("skipped: needs root and unshare(1) to make the mounts a container has");
        return false;
    }
    let ok = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: unshare --mount does not work here");
    }
    ok
}

/// `goat ARGS` in a new private mount namespace after `setup` (a shell
/// script) ran there, isolated as every test's goat is.
fn goat_after(env: &Env, setup: &str, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("unshare");
    env.isolate(&mut cmd);
    cmd.envs(vars.iter().copied())
        .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg(format!("set -e; {setup}; exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_goat"))
        .args(args);
    cmd.output().unwrap()
}

/// `run_command`'s entry of `goat tools list --json` run in `ws`.
fn listed(out: &Output) -> Value {
    let specs: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", shown(out)));
    specs
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "run_command").cloned())
        .unwrap_or_default()
}

fn call_args(ws: &Path, command: &str) -> Vec<String> {
    vec![
        "tools".into(),
        "call".into(),
        "run_command".into(),
        json!({ "command": command }).to_string(),
        "--workspace".into(),
        ws.display().to_string(),
        "--allow-commands".into(),
    ]
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Docker mounts `/etc/hosts`, `/etc/hostname` and `/etc/resolv.conf` in
/// every container. The kernel refuses to bind `/etc` alone in a user
/// namespace then (it would show what they cover); GOAT binds it with
/// them, and they are read-only in the view too.
#[test]
fn a_mount_inside_etc_is_bound_with_it_and_read_only() {
    if !can_unshare() || !Path::new("/etc/hostname").exists() {
        return;
    }
    let env = Env::new();
    let mine = env.root.join("hostname");
    fs::write(&mine, "goat-container-host\n").unwrap();
    let plain = listed(&goat_after(&env, "true", &["tools", "list", "--json"], &[]));
    if plain["containment"] != "namespace" {
        eprintln!("skipped: no view here at all: {plain}");
        return;
    }
    let setup = format!("mount --bind '{}' /etc/hostname", mine.display());
    let spec = listed(&goat_after(&env, &setup, &["tools", "list", "--json"], &[]));
    assert_eq!(spec["containment"], "namespace", "{spec}");
    let out = goat_after(
        &env,
        &setup,
        &strs(&call_args(
            &env.ws,
            "cat /etc/hostname; (echo changed > /etc/hostname) 2>&1 || echo refused; echo ok > made.txt",
        )),
        &[],
    );
    let result = shown(&out);
    assert_eq!(out.status.code(), Some(0), "{result}");
    assert!(result.contains("goat-container-host"), "{result}");
    assert!(result.contains("refused"), "{result}");
    assert_eq!(fs::read_to_string(&mine).unwrap(), "goat-container-host\n");
    assert_eq!(fs::read_to_string(env.ws.join("made.txt")).unwrap(), "ok\n");
}

/// A workspace on a bind mount (a Docker volume or bind): a layer on
/// another mount of the same filesystem cannot land by rename, so without
/// a layers directory on that mount there is no view, the listing says
/// why, and commands run under Landlock; with one, a view.
#[test]
fn a_workspace_on_its_own_mount_gets_a_view_only_with_a_layer_on_that_mount() {
    if !can_unshare() {
        return;
    }
    let env = Env::new();
    let real = env.root.join("real");
    fs::create_dir_all(real.join("ws")).unwrap();
    fs::create_dir_all(real.join("layers")).unwrap();
    let mnt = env.root.join("mnt");
    fs::create_dir(&mnt).unwrap();
    let ws = mnt.join("ws");
    let setup = format!(
        "mount --bind '{}' '{}'; cd '{}'",
        real.display(),
        mnt.display(),
        ws.display()
    );
    let spec = listed(&goat_after(&env, &setup, &["tools", "list", "--json"], &[]));
    if spec["containment"] == Value::Null {
        eprintln!("skipped: run_command is not offered here: {spec}");
        return;
    }
    assert_eq!(spec["containment"], "landlock", "{spec}");
    assert!(
        spec["no_view"]
            .as_str()
            .unwrap_or_default()
            .contains("mount"),
        "{spec}"
    );
    let out = goat_after(
        &env,
        &setup,
        &strs(&call_args(&ws, "mkdir -p src && echo ok > src/made.txt")),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    assert_eq!(
        fs::read_to_string(real.join("ws/src/made.txt")).unwrap(),
        "ok\n"
    );

    // A layers directory on the workspace's own mount gives the view back,
    // and its changes land.
    let layers = mnt.join("layers");
    let vars = [("GOAT_COMMANDS_LAYERS_DIR", layers.to_str().unwrap())];
    let spec = listed(&goat_after(
        &env,
        &setup,
        &["tools", "list", "--json"],
        &vars,
    ));
    if spec["containment"] != "namespace" {
        eprintln!("skipped the second half: no view here at all: {spec}");
        return;
    }
    let out = goat_after(
        &env,
        &setup,
        &strs(&call_args(&ws, "echo again > at-root.txt")),
        &vars,
    );
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    assert_eq!(
        fs::read_to_string(real.join("ws/at-root.txt")).unwrap(),
        "again\n"
    );
}

/// A workspace in the container's own image (overlayfs): a view's upper
/// layer cannot be on overlayfs, so `auto` takes Landlock for it, and its
/// commands run; a forced view says why not.
#[test]
fn a_workspace_on_overlayfs_runs_commands_under_landlock() {
    if !can_unshare() {
        return;
    }
    let env = Env::new();
    let parts = env.root.join("image");
    for dir in ["lower", "upper", "work"] {
        fs::create_dir_all(parts.join(dir)).unwrap();
    }
    fs::write(parts.join("lower/kept.txt"), "from the image\n").unwrap();
    let setup = format!(
        "mount -t overlay overlay -o lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work '{1}'",
        parts.display(),
        env.ws.display()
    );
    // The layers directory, on the workspace's mount, as in a container
    // whose state directory is in the image too.
    let layers = env.ws.join(".goat-layers");
    let vars = [("GOAT_COMMANDS_LAYERS_DIR", layers.to_str().unwrap())];
    let listing = goat_after(&env, &setup, &["tools", "list", "--json"], &vars);
    let spec = listed(&listing);
    if spec["containment"] == Value::Null {
        eprintln!("skipped: run_command is not offered here: {spec}");
        return;
    }
    assert_eq!(spec["containment"], "landlock", "{spec}");
    let out = goat_after(
        &env,
        &setup,
        &strs(&call_args(
            &env.ws,
            "mkdir -p src && cat kept.txt > src/copy.txt",
        )),
        &vars,
    );
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    assert_eq!(
        fs::read_to_string(parts.join("upper/src/copy.txt")).unwrap(),
        "from the image\n"
    );
    let forced = goat_after(
        &env,
        &setup,
        &strs(&call_args(&env.ws, "true")),
        &[vars[0], ("GOAT_COMMANDS_CONTAINMENT", "namespace")],
    );
    assert_ne!(forced.status.code(), Some(0), "{}", shown(&forced));
    assert!(
        shown(&forced).contains("no namespace view"),
        "{}",
        shown(&forced)
    );
    // The step the kernel refused is named, not only its errno.
    assert!(
        shown(&forced).contains("the kernel refused the view's step: the overlay at "),
        "{}",
        shown(&forced)
    );
}

/// A user without capabilities (not root, or root in a container that
/// dropped them) cannot empty the capability bounding set; Landlock-only
/// containment still runs its commands, with none.
#[test]
fn landlock_only_runs_commands_for_an_unprivileged_user() {
    let Some(nobody) = Nobody::new("goat-nobody-ll") else {
        return;
    };
    let ws = &nobody.ws;
    fs::create_dir(ws.join("src")).unwrap();
    nobody.chown(&ws.join("src"));
    let out = nobody.run_command(
        &json!({"command": "echo ok > src/made.txt; grep CapEff /proc/self/status || true"}),
        &[("GOAT_COMMANDS_CONTAINMENT", "landlock")],
    );
    let result = shown(&out);
    let made = fs::read_to_string(ws.join("src/made.txt"));
    let _ = fs::remove_dir_all(&nobody.base);
    assert_eq!(out.status.code(), Some(0), "{result}");
    assert_eq!(made.unwrap(), "ok\n", "{result}");
    assert!(!result.contains("could not be started"), "{result}");
}
