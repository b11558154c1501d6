//! An attempt's kept layer (issue 42): what a process run inside it writes
//! stays in the layer, out of the workspace and of every other layer, until
//! the layer's change set lands.

use std::path::Path;

use goat_command::Node;
use goat_command::attempt::{AttemptLayer, Before};

use crate::Protected;

/// Whether an attempt's layer can be entered here; said when not.
fn can_enter(root: &Path) -> bool {
    let probe = AttemptLayer::create(&root.join("probe")).unwrap();
    let ws = root.join("probe-ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ok = probe
        .command(&ws, "true")
        .unwrap()
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: skipped: no mount namespace with an overlay here");
    }
    probe.discard().unwrap();
    ok
}

fn sh(layer: &AttemptLayer, ws: &Path, script: &str, user_ns: bool) -> String {
    let out = layer
        .command_as(ws, "sh", user_ns)
        .unwrap()
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn each_attempt_writes_its_own_layer_and_the_workspace_changes_only_when_one_lands() {
    let root = tempfile::tempdir().unwrap();
    if !can_enter(root.path()) {
        return;
    }
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join("c.txt"), "gone soon\n").unwrap();
    let ws = ws.canonicalize().unwrap();
    // Without a user namespace only root may make the mounts.
    let root_too = rustix::process::geteuid().is_root();
    for user_ns in [false, true].into_iter().filter(|u| *u || root_too) {
        let base = root.path().join(format!("attempts-{user_ns}"));
        let first = AttemptLayer::create(&base.join("1")).unwrap();
        let second = AttemptLayer::create(&base.join("2")).unwrap();
        // Run from the overlaid workspace: relative paths are the layer's.
        sh(
            &first,
            &ws,
            "echo new > b.txt && echo two > a.txt && rm c.txt && mkdir d && echo x > d/e",
            user_ns,
        );
        // The workspace is as it was.
        assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n");
        assert!(!ws.join("b.txt").exists() && ws.join("c.txt").exists());
        // Another attempt sees the workspace, never the first's files.
        let seen = sh(
            &second,
            &ws,
            "cat a.txt; test -e b.txt && echo SEEN; test -e c.txt && echo c-there",
            user_ns,
        );
        assert_eq!(seen, "one\nc-there\n", "user_ns {user_ns}");
        second.discard().unwrap();
        assert!(!base.join("2").exists());
        // What the first changed, as a command's change set.
        let mut pending = first.pending(&ws).unwrap();
        let changed: Vec<(&str, bool)> = pending
            .set
            .changes
            .iter()
            .map(|c| (c.path.as_str(), c.after.exists()))
            .collect();
        assert_eq!(
            changed,
            [
                ("a.txt", true),
                ("b.txt", true),
                ("c.txt", false),
                ("d", true),
                ("d/e", true)
            ],
            "user_ns {user_ns}"
        );
        let a = pending
            .set
            .changes
            .iter()
            .find(|c| c.path == "a.txt")
            .unwrap();
        assert!(
            matches!(&a.before, Node::File { len: 4, .. }),
            "{:?}",
            a.before
        );
        let inspection = pending.inspect(&Protected);
        assert!(inspection.refused.is_empty(), "{:?}", inspection.refused);
        if !user_ns {
            // Landed whole: the workspace now holds what the attempt left.
            pending.land().unwrap();
            assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "two\n");
            assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "new\n");
            assert_eq!(std::fs::read_to_string(ws.join("d/e")).unwrap(), "x\n");
            assert!(!ws.join("c.txt").exists());
            // The layer is kept until it is discarded.
            assert!(first.dir().is_dir());
            // Put the workspace back for the next round.
            std::fs::write(ws.join("a.txt"), "one\n").unwrap();
            std::fs::write(ws.join("c.txt"), "gone soon\n").unwrap();
            std::fs::remove_file(ws.join("b.txt")).unwrap();
            std::fs::remove_dir_all(ws.join("d")).unwrap();
        }
        first.discard().unwrap();
    }
}

#[test]
fn a_kept_layer_is_opened_again_and_a_directory_that_is_not_one_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let made = AttemptLayer::create(&root.path().join("a/1")).unwrap();
    assert_eq!(AttemptLayer::open(&root.path().join("a/1")).unwrap(), made);
    let err = AttemptLayer::open(root.path()).unwrap_err();
    assert!(err.to_string().contains("not an attempt's layer"), "{err}");
    // Made once: a second create of the same directory fails.
    assert!(AttemptLayer::create(&root.path().join("a/1")).is_err());
}

#[test]
fn a_copy_lands_while_the_layer_stays_and_a_stacked_layer_sees_without_changing_it() {
    let root = tempfile::tempdir().unwrap();
    if !can_enter(root.path()) {
        return;
    }
    let user_ns = !rustix::process::geteuid().is_root();
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("gone.txt"), "here\n").unwrap();
    let ws = ws.canonicalize().unwrap();
    let layer = AttemptLayer::create(&root.path().join("attempts/1")).unwrap();
    sh(
        &layer,
        &ws,
        "rm gone.txt && mkdir -p d && echo new > d/f && ln -s d/f link",
        user_ns,
    );
    // A check stacked on the layer sees its changes; what it writes stays
    // in its own layer.
    let check = AttemptLayer::create(&layer.dir().join("check")).unwrap();
    let out = check
        .command_over(&layer, &ws, "sh")
        .unwrap()
        .args([
            "-c",
            "cat d/f && test ! -e gone.txt && echo built > target.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "new\n");
    check.discard().unwrap();
    assert!(!layer.dir().join("upper/target.txt").exists());
    // The copy holds the same change set (the removal, the new directory,
    // the link), lands, and the layer is as it was.
    let copy = layer.copy_to(&root.path().join("attempts/1-copy")).unwrap();
    let pending = copy.pending(&ws).unwrap();
    let paths: Vec<&str> = pending
        .set
        .changes
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(paths, ["d", "d/f", "gone.txt", "link"]);
    pending.land().unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("d/f")).unwrap(), "new\n");
    assert!(!ws.join("gone.txt").exists());
    assert_eq!(
        std::fs::read_link(ws.join("link")).unwrap(),
        Path::new("d/f")
    );
    assert_eq!(
        std::fs::read_to_string(layer.dir().join("upper/d/f")).unwrap(),
        "new\n"
    );
}

/// Every file under `dir` (links as `-> target`, directories as `dir/`),
/// with its bytes, in path order.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let to = std::fs::read_link(&path).unwrap();
                out.push((rel, format!("-> {}", to.display())));
            } else if meta.is_dir() {
                use std::os::unix::fs::PermissionsExt;
                out.push((
                    format!("{rel}/"),
                    format!("{:o}", meta.permissions().mode() & 0o7777),
                ));
                stack.push(path);
            } else {
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Lands a copy of `layer` (made at `copy`) in `ws`; what each path held
/// before, as its journal would say.
fn land_copy(layer: &AttemptLayer, copy: &Path, ws: &Path) -> Vec<(String, Before)> {
    let pending = layer.copy_to(copy).unwrap().pending(ws).unwrap();
    let befores = pending
        .set
        .changes
        .iter()
        .map(|c| (c.path.clone(), Before::from_node(&c.before).unwrap()))
        .collect();
    pending.land().unwrap();
    befores
}

#[test]
fn a_landed_attempt_is_swapped_for_another_in_one_change_set_that_leaves_what_the_second_made() {
    let root = tempfile::tempdir().unwrap();
    if !can_enter(root.path()) {
        return;
    }
    let user_ns = !rustix::process::geteuid().is_root();
    let ws = root.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("old/deep")).unwrap();
    std::fs::write(ws.join("a.txt"), "base\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "base lib\n").unwrap();
    std::fs::write(ws.join("old/deep/x"), "kept\n").unwrap();
    std::fs::write(ws.join("gone.txt"), "here\n").unwrap();
    let ws = ws.canonicalize().unwrap();
    let base = tree(&ws);
    let second = AttemptLayer::create(&root.path().join("attempts/2")).unwrap();
    let third = AttemptLayer::create(&root.path().join("attempts/3")).unwrap();
    // Attempt 2: changes a file both touch, one only it touches, makes a
    // directory both make, one only it makes, removes a directory tree
    // and a file, and makes a link.
    sh(
        &second,
        &ws,
        "echo two > a.txt && echo two lib > src/lib.rs && mkdir both only2 && echo 2 > both/f \
         && echo 2 > only2/g && rm -r old && rm gone.txt && ln -s a.txt link2",
        user_ns,
    );
    // Attempt 3 (made over the same workspace): its own a.txt, its own
    // file in `both`, and a new file.
    sh(
        &third,
        &ws,
        "echo three > a.txt && mkdir both && echo 3 > both/h && echo 3 > m.txt",
        user_ns,
    );
    let expect_third = {
        let copy = root.path().join("expect");
        std::fs::create_dir(&copy).unwrap();
        for (rel, _) in &base {
            let (from, to) = (
                ws.join(rel.trim_end_matches('/')),
                copy.join(rel.trim_end_matches('/')),
            );
            if rel.ends_with('/') {
                std::fs::create_dir_all(&to).unwrap();
            } else {
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&from, &to).unwrap();
            }
        }
        std::fs::write(copy.join("a.txt"), "three\n").unwrap();
        std::fs::create_dir(copy.join("both")).unwrap();
        std::fs::write(copy.join("both/h"), "3\n").unwrap();
        std::fs::write(copy.join("m.txt"), "3\n").unwrap();
        tree(&copy)
    };
    // Attempt 2 lands.
    let landed = land_copy(&second, &root.path().join("attempts/2-copy"), &ws);
    assert_eq!(std::fs::read_to_string(ws.join("only2/g")).unwrap(), "2\n");
    // Attempt 3 in its place: its layer, with what attempt 2 replaced put
    // back wherever attempt 3 says nothing.
    let swap = third.copy_to(&root.path().join("attempts/3-swap")).unwrap();
    swap.put_back(&ws, &landed).unwrap();
    // Attempt 3's layer is as it was.
    assert!(!third.dir().join("upper/only2").exists());
    let mut pending = swap.pending(&ws).unwrap();
    assert!(pending.inspect(&Protected).refused.is_empty());
    pending.land().unwrap();
    assert_eq!(tree(&ws), expect_third, "user_ns {user_ns}");
}

#[test]
fn a_swap_never_removes_what_was_put_since_in_a_directory_the_landing_made() {
    let root = tempfile::tempdir().unwrap();
    if !can_enter(root.path()) {
        return;
    }
    let user_ns = !rustix::process::geteuid().is_root();
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let landed = AttemptLayer::create(&root.path().join("attempts/1")).unwrap();
    let other = AttemptLayer::create(&root.path().join("attempts/2")).unwrap();
    sh(&landed, &ws, "mkdir made && echo 1 > made/f", user_ns);
    sh(&other, &ws, "echo 2 > other.txt", user_ns);
    let befores = land_copy(&landed, &root.path().join("attempts/1-copy"), &ws);
    // The person's own file, in the directory the landing made.
    std::fs::write(ws.join("made/mine.txt"), "mine\n").unwrap();
    let swap = other.copy_to(&root.path().join("attempts/2-swap")).unwrap();
    let err = swap.put_back(&ws, &befores).unwrap_err();
    assert!(err.to_string().contains("'made/mine.txt'"), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("made/mine.txt")).unwrap(),
        "mine\n"
    );
    // Without it, the directory goes whole.
    std::fs::remove_file(ws.join("made/mine.txt")).unwrap();
    let swap = other
        .copy_to(&root.path().join("attempts/2-swap-again"))
        .unwrap();
    swap.put_back(&ws, &befores).unwrap();
    swap.pending(&ws).unwrap().land().unwrap();
    assert!(!ws.join("made").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("other.txt")).unwrap(),
        "2\n"
    );
}
