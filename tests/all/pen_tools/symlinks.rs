//! Symbolic links inside the workspace: followed when they stay inside,
//! refused when they lead out.

use super::*;

/// A workspace with links to the outside secret: `rel` (relative),
/// `abs` (absolute), `outdir` (the outside directory) and `dangling`
/// (a file outside that does not exist yet).
fn escaping_links() -> Workspace {
    let ws = Workspace::new();
    symlink(&ws, "../outside/secret.txt", "rel");
    symlink(&ws, ws.outside.join("secret.txt"), "abs");
    symlink(&ws, "../outside", "outdir");
    symlink(&ws, ws.outside.join("created.txt"), "dangling");
    ws
}

/// Asserts that `result` is refused as leaving the workspace, naming
/// `path` and never showing the secret.
#[track_caller]
fn denied(result: CallResult, path: &str) {
    let message = expect_err(
        result,
        ToolError::PermissionDenied,
        &[&format!("'{path}'"), "outside the workspace"],
    );
    assert!(!message.contains(SECRET.trim()), "{message}");
}

#[test]
fn links_that_stay_inside_are_followed_by_read_file() {
    let ws = Workspace::new();
    ws.write("real/f.txt", "inside\n");
    symlink(&ws, "real/f.txt", "file_link");
    symlink(&ws, "real", "dir_link");
    symlink(&ws, "../real/f.txt", "real/up_link");
    for path in ["file_link", "dir_link/f.txt", "real/up_link"] {
        assert_eq!(
            ok(ws.read_call("read_file", json!({"path": path}))),
            "     1\tinside\n",
            "{path}"
        );
    }
}

#[test]
fn symlink_loops_are_refused() {
    let ws = Workspace::new();
    symlink(&ws, "loop", "loop");
    let calls = [
        ("read_file", json!({"path": "loop"})),
        ("write_file", json!({"path": "loop", "content": "x"})),
        ("list_directory", json!({"path": "loop"})),
        ("find_files", json!({"pattern": "*", "path": "loop"})),
    ];
    for (name, args) in calls {
        expect_err(
            ws.write_call(name, args),
            ToolError::PermissionDenied,
            &["too many levels of symbolic links"],
        );
    }
}

#[test]
fn write_through_a_link_inside_changes_the_target() {
    let ws = Workspace::new();
    ws.write("real.txt", "old\n");
    symlink(&ws, "real.txt", "link.txt");
    ok(ws.write_call(
        "write_file",
        json!({"path": "link.txt", "content": "new\n"}),
    ));
    assert_eq!(ws.read("real.txt"), "new\n");
}

#[test]
fn read_file_refuses_links_that_lead_outside() {
    let ws = escaping_links();
    for path in ["rel", "abs", "outdir/secret.txt"] {
        denied(ws.read_call("read_file", json!({"path": path})), path);
    }
}

#[test]
fn write_file_refuses_links_that_lead_outside_and_changes_nothing_there() {
    let ws = escaping_links();
    let before = ws.outside_snapshot();
    for path in [
        "rel",
        "abs",
        "outdir/secret.txt",
        "outdir/new.txt",
        "dangling",
    ] {
        let args = json!({"path": path, "content": "pwned"});
        denied(ws.write_call("write_file", args), path);
    }
    assert_eq!(ws.outside_snapshot(), before);
}

#[test]
fn edit_file_refuses_links_that_lead_outside() {
    let ws = escaping_links();
    let before = ws.outside_snapshot();
    for path in ["rel", "abs", "outdir/secret.txt"] {
        let args = json!({"path": path, "old_string": "outside", "new_string": "pwned"});
        denied(ws.write_call("edit_file", args), path);
    }
    assert_eq!(ws.outside_snapshot(), before);
}

#[test]
fn directory_tools_refuse_a_linked_directory_outside() {
    let ws = escaping_links();
    let calls = [
        ("list_directory", json!({"path": "outdir"}), "outdir"),
        (
            "find_files",
            json!({"pattern": "*", "path": "outdir"}),
            "outdir",
        ),
        (
            "search_files",
            json!({"pattern": "secret", "path": "outdir"}),
            "outdir",
        ),
        (
            "search_files",
            json!({"pattern": "secret", "path": "rel"}),
            "rel",
        ),
    ];
    for (name, args, path) in calls {
        denied(ws.read_call(name, args), path);
    }
}

#[test]
fn walks_list_links_without_following_them_out() {
    let ws = escaping_links();
    assert_eq!(
        ok(ws.read_call("find_files", json!({"pattern": "**/*"}))),
        "abs\ndangling\noutdir\nrel\n"
    );
    assert_eq!(
        ok(ws.read_call("search_files", json!({"pattern": "secret"}))),
        "No matches for 'secret' in 0 files searched.\n"
    );
    let listing = ok(ws.read_call("list_directory", json!({"depth": 3})));
    assert!(!listing.contains("outdir/"), "{listing}");
}
