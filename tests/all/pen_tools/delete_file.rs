//! `delete_file`: one file at a time, never a directory, checked on the
//! disk.

use super::*;

#[test]
fn deletes_a_file_and_says_how_large_it_was() {
    let ws = Workspace::new();
    ws.write("dir/old.txt", "12345").write("dir/keep.txt", "k");
    let text = ok(ws.write_call("delete_file", json!({"path": "dir/old.txt"})));
    assert_eq!(text, "Deleted 'dir/old.txt' (5 bytes).");
    assert!(!ws.exists("dir/old.txt"));
    assert_eq!(ws.read("dir/keep.txt"), "k");
}

#[test]
fn a_directory_is_never_deleted() {
    let ws = Workspace::new();
    ws.write("dir/a.txt", "a");
    expect_err(
        ws.write_call("delete_file", json!({"path": "dir"})),
        ToolError::Conflict,
        &["'dir' is a directory", "files only", "nothing was deleted"],
    );
    expect_err(
        ws.write_call("delete_file", json!({"path": "."})),
        ToolError::Conflict,
        &["is a directory"],
    );
    assert_eq!(ws.read("dir/a.txt"), "a");
}

#[test]
fn a_link_is_deleted_as_the_link_and_its_target_untouched() {
    let ws = Workspace::new();
    symlink(&ws, ws.outside.join("secret.txt"), "link");
    let text = ok(ws.write_call("delete_file", json!({"path": "link"})));
    assert_eq!(
        text,
        "Deleted 'link' (a symbolic link; what it pointed to is untouched)."
    );
    assert!(!ws.exists("link"));
    assert_eq!(
        fs::read_to_string(ws.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

#[test]
fn outside_paths_missing_files_and_read_only_access_delete_nothing() {
    let ws = Workspace::new();
    ws.write("a.txt", "A");
    let before = ws.outside_snapshot();
    for path in ["../outside/secret.txt", "/etc/hostname"] {
        let err = tool_err(ws.write_call("delete_file", json!({"path": path})));
        assert!(
            matches!(
                err,
                ToolError::PermissionDenied(_) | ToolError::InvalidArguments(_)
            ),
            "{path}: {err:?}"
        );
    }
    assert_eq!(ws.outside_snapshot(), before);
    expect_err(
        ws.write_call("delete_file", json!({"path": "nope.txt"})),
        ToolError::NotFound,
        &["'nope.txt' does not exist", "nothing was deleted"],
    );
    expect_err(
        ws.read_call("delete_file", json!({"path": "a.txt"})),
        ToolError::PermissionDenied,
        &["read-only access"],
    );
    assert_eq!(ws.read("a.txt"), "A");
}
