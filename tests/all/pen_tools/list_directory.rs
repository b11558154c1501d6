//! `list_directory`: sorted entries with kinds and sizes, depth, symlinks,
//! and the entry cap.

use super::*;

fn list(ws: &Workspace, args: Value) -> String {
    ok(ws.read_call("list_directory", args))
}

#[test]
fn entries_are_sorted_with_kinds_and_sizes() {
    let ws = Workspace::new();
    ws.write("b.txt", "bbb")
        .write("a.txt", "a")
        .write("A.md", "AA")
        .write("c/inner.txt", "i");
    let expected =
        "A.md  (file, 2 bytes)\na.txt  (file, 1 byte)\nb.txt  (file, 3 bytes)\nc/  (dir)\n";
    assert_eq!(list(&ws, json!({})), expected);
    assert_eq!(list(&ws, json!({"path": "."})), expected);
}

#[test]
fn depth_two_shows_nested_paths_relative_to_the_workspace_root() {
    let ws = Workspace::new();
    ws.write("src/a.rs", "aa")
        .write("src/sub/b.rs", "b")
        .write("src/sub/deeper/c.rs", "c");
    assert_eq!(
        list(&ws, json!({"path": "src", "depth": 2})),
        "src/a.rs  (file, 2 bytes)\nsrc/sub/  (dir)\nsrc/sub/b.rs  (file, 1 byte)\nsrc/sub/deeper/  (dir)\n"
    );
}

#[test]
fn symlinks_are_shown_with_their_target_and_not_followed() {
    let ws = Workspace::new();
    ws.write("real/f.txt", "f");
    symlink(&ws, "real", "link");
    symlink(&ws, "../outside/secret.txt", "out");
    // The host does not read an absolute link's target: it is listed bare.
    symlink(&ws, ws.outside.join("secret.txt"), "zabs");
    assert_eq!(
        list(&ws, json!({"depth": 3})),
        "link  (symlink -> real)\nout  (symlink -> ../outside/secret.txt)\nreal/  (dir)\n\
         real/f.txt  (file, 1 byte)\nzabs  (symlink)\n"
    );
}

#[test]
fn symlink_to_a_directory_inside_can_be_listed() {
    let ws = Workspace::new();
    ws.write("real/f.txt", "f");
    symlink(&ws, "real", "link");
    assert_eq!(
        list(&ws, json!({"path": "link"})),
        "link/f.txt  (file, 1 byte)\n"
    );
}

#[test]
fn version_control_directories_are_listed_but_not_entered() {
    let ws = Workspace::new();
    ws.write(".git/config", "c").write("src/a.rs", "a");
    // Hidden by default, and not counted: it is never walked anyway.
    assert_eq!(
        list(&ws, json!({"depth": 2})),
        "src/  (dir)\nsrc/a.rs  (file, 1 byte)\n"
    );
    assert_eq!(
        list(&ws, json!({"depth": 2, "include_ignored": true})),
        ".git/  (dir)\nsrc/  (dir)\nsrc/a.rs  (file, 1 byte)\n"
    );
}

#[test]
fn empty_directory_says_it_is_empty() {
    let ws = Workspace::new();
    assert_eq!(list(&ws, json!({})), "'.' is empty.\n");
    fs::create_dir(ws.root.join("empty")).unwrap();
    assert_eq!(list(&ws, json!({"path": "empty"})), "'empty' is empty.\n");
}

#[test]
fn file_path_is_refused_as_a_conflict() {
    let ws = Workspace::new();
    ws.write("f.txt", "f");
    expect_err(
        ws.read_call("list_directory", json!({"path": "f.txt"})),
        ToolError::Conflict,
        &["'f.txt' is not a directory", "read_file"],
    );
}

#[test]
fn depth_outside_1_to_10_is_refused() {
    let ws = Workspace::new();
    for depth in [0, 11] {
        expect_err(
            ws.read_call("list_directory", json!({"depth": depth})),
            ToolError::InvalidArguments,
            &[&format!("depth must be between 1 and 10, got {depth}")],
        );
    }
    ok(ws.read_call("list_directory", json!({"depth": 10})));
}

#[test]
fn missing_directory_is_not_found() {
    let ws = Workspace::new();
    expect_err(
        ws.read_call("list_directory", json!({"path": "nope"})),
        ToolError::NotFound,
        &["'nope' does not exist"],
    );
}

#[test]
fn listing_stops_after_1000_entries_with_a_note() {
    let ws = Workspace::new();
    many_files(&ws, "many", 1001);
    let text = list(&ws, json!({"path": "many"}));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1001);
    assert_eq!(lines[999], "many/f0999.txt  (file, 0 bytes)");
    assert_eq!(
        lines[1000],
        "[listing stopped after 1000 entries; list a subdirectory or use a smaller depth]"
    );

    fs::remove_file(ws.root.join("many/f1000.txt")).unwrap();
    let text = list(&ws, json!({"path": "many"}));
    assert_eq!(text.lines().count(), 1000);
    assert!(!text.contains("stopped"), "exactly 1000 entries fit");
}

#[test]
fn undecodable_name_is_skipped_and_counted_not_failing_the_directory() {
    let ws = undecodable_name_between_siblings();
    assert_eq!(
        list(&ws, json!({})),
        "a.txt  (file, 7 bytes)\nz.txt  (file, 7 bytes)\n\
         [1 entry skipped: its name is not valid UTF-8]\n"
    );
    // Deeper down the skip is counted too, and the walk goes on.
    write_raw_name(&ws, "sub", b"x\xfe", "");
    write_raw_name(&ws, "sub", b"y\xfe", "");
    ws.write("sub/ok.txt", "");
    assert_eq!(
        list(&ws, json!({"depth": 2})),
        "a.txt  (file, 7 bytes)\nsub/  (dir)\nsub/ok.txt  (file, 0 bytes)\n\
         z.txt  (file, 7 bytes)\n[3 entries skipped: their names are not valid UTF-8]\n"
    );
}

#[test]
fn directory_holding_only_an_undecodable_name_is_not_called_empty() {
    let ws = Workspace::new();
    write_raw_name(&ws, "d", b"\xff", "");
    assert_eq!(
        list(&ws, json!({"path": "d"})),
        "[1 entry skipped: its name is not valid UTF-8]\n"
    );
}
