//! `move_file`: renaming within the workspace, never across its edge, never
//! replacing unless asked, checked on the disk.

use super::*;

#[test]
fn moves_a_file_creating_missing_parents() {
    let ws = Workspace::new();
    ws.write("old.txt", "content\n");
    let text = ok(ws.write_call("move_file", json!({"from": "old.txt", "to": "a/b/new.txt"})));
    assert_eq!(
        text,
        "Moved 'old.txt' to 'a/b/new.txt' (file, 8 bytes). Created directories: 'a', 'a/b'."
    );
    assert!(!ws.exists("old.txt"));
    assert_eq!(ws.read("a/b/new.txt"), "content\n");
}

#[test]
fn an_existing_destination_is_kept_unless_overwrite_is_given() {
    let ws = Workspace::new();
    ws.write("a.txt", "A\n").write("b.txt", "B\n");
    expect_err(
        ws.write_call("move_file", json!({"from": "a.txt", "to": "b.txt"})),
        ToolError::Conflict,
        &[
            "'b.txt' already exists",
            "nothing was moved",
            "overwrite: true",
        ],
    );
    assert_eq!(ws.read("a.txt"), "A\n");
    assert_eq!(ws.read("b.txt"), "B\n");
    let text = ok(ws.write_call(
        "move_file",
        json!({"from": "a.txt", "to": "b.txt", "overwrite": true}),
    ));
    assert_eq!(
        text,
        "Moved 'a.txt' to 'b.txt' (file, 2 bytes). It replaced the previous 'b.txt' (2 bytes)."
    );
    assert!(!ws.exists("a.txt"));
    assert_eq!(ws.read("b.txt"), "A\n");
}

#[test]
fn moves_a_directory_with_its_contents() {
    let ws = Workspace::new();
    ws.write("src/mod/a.rs", "a").write("src/mod/b.rs", "b");
    let text = ok(ws.write_call("move_file", json!({"from": "src/mod", "to": "src/renamed"})));
    assert_eq!(text, "Moved 'src/mod' to 'src/renamed' (directory).");
    assert!(!ws.exists("src/mod"));
    assert_eq!(ws.read("src/renamed/a.rs"), "a");
    assert_eq!(ws.read("src/renamed/b.rs"), "b");
}

#[test]
fn a_directory_is_never_replaced_nor_moved_into_itself() {
    let ws = Workspace::new();
    ws.write("a.txt", "A").write("dir/keep.txt", "K");
    expect_err(
        ws.write_call(
            "move_file",
            json!({"from": "a.txt", "to": "dir", "overwrite": true}),
        ),
        ToolError::Conflict,
        &["'dir' is an existing directory", "'dir/a.txt'"],
    );
    expect_err(
        ws.write_call("move_file", json!({"from": "dir", "to": "dir/sub"})),
        ToolError::InvalidArguments,
        &["into itself"],
    );
    assert_eq!(ws.read("a.txt"), "A");
    assert_eq!(ws.read("dir/keep.txt"), "K");
}

#[test]
fn paths_outside_the_workspace_are_refused_and_nothing_moves() {
    let ws = Workspace::new();
    ws.write("a.txt", "A");
    let before = ws.outside_snapshot();
    for (from, to) in [
        ("a.txt", "../outside/a.txt"),
        ("../outside/secret.txt", "stolen.txt"),
        ("a.txt", "/tmp/a.txt"),
    ] {
        let err = tool_err(ws.write_call("move_file", json!({"from": from, "to": to})));
        assert!(
            matches!(
                err,
                ToolError::PermissionDenied(_) | ToolError::InvalidArguments(_)
            ),
            "{from} -> {to}: {err:?}"
        );
    }
    assert_eq!(ws.outside_snapshot(), before);
    assert_eq!(ws.read("a.txt"), "A");
    assert!(!ws.exists("stolen.txt"));
}

#[test]
fn a_link_leading_outside_is_moved_as_the_link_and_its_target_untouched() {
    let ws = Workspace::new();
    symlink(&ws, ws.outside.join("secret.txt"), "link");
    let text = ok(ws.write_call("move_file", json!({"from": "link", "to": "moved"})));
    assert_eq!(text, "Moved 'link' to 'moved' (symbolic link).");
    assert!(
        fs::symlink_metadata(ws.root.join("moved"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read_to_string(ws.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

#[test]
fn missing_source_and_read_only_access_change_nothing() {
    let ws = Workspace::new();
    expect_err(
        ws.write_call("move_file", json!({"from": "nope.txt", "to": "x.txt"})),
        ToolError::NotFound,
        &["'nope.txt' does not exist"],
    );
    ws.write("a.txt", "A");
    expect_err(
        ws.read_call("move_file", json!({"from": "a.txt", "to": "b.txt"})),
        ToolError::PermissionDenied,
        &["read-only access", "nothing was changed"],
    );
    assert_eq!(ws.read("a.txt"), "A");
    assert!(!ws.exists("b.txt"));
}

/// The tool resolves `nowhere/../b.txt` lexically to `b.txt` and replaces
/// it, as the gate judged it (the approval preview resolves it the same
/// way, see host/cli approval::preview).
#[test]
fn a_dotdot_destination_replaces_the_file_it_names_lexically() {
    let ws = Workspace::new();
    ws.write("a.txt", "A\n").write("b.txt", "B\n");
    let text = ok(ws.write_call(
        "move_file",
        json!({"from": "a.txt", "to": "nowhere/../b.txt", "overwrite": true}),
    ));
    assert!(text.contains("It replaced the previous 'b.txt'"), "{text}");
    assert_eq!(ws.read("b.txt"), "A\n");
}
