//! `write_file`: creating, overwriting and refusing, checked on the disk.

use super::*;

#[test]
fn creates_a_new_file_reporting_bytes_and_lines() {
    let ws = Workspace::new();
    let text = ok(ws.write_call(
        "write_file",
        json!({"path": "notes.txt", "content": "hello\nwörld\n"}),
    ));
    assert_eq!(text, "Created 'notes.txt' (13 bytes, 2 lines).");
    assert_eq!(ws.read("notes.txt"), "hello\nwörld\n");
}

#[test]
fn empty_content_creates_an_empty_file() {
    let ws = Workspace::new();
    let text = ok(ws.write_call("write_file", json!({"path": "empty.txt", "content": ""})));
    assert_eq!(text, "Created 'empty.txt' (0 bytes, 0 lines).");
    assert_eq!(ws.read("empty.txt"), "");
}

#[test]
fn creates_missing_parent_directories_and_lists_them() {
    let ws = Workspace::new();
    let text = ok(ws.write_call("write_file", json!({"path": "a/b/c.txt", "content": "c\n"})));
    assert_contains(&text, "Created 'a/b/c.txt' (2 bytes, 1 line).");
    assert!(
        text.ends_with(" Created directories: 'a', 'a/b'."),
        "{text}"
    );
    assert!(ws.root.join("a").is_dir() && ws.root.join("a/b").is_dir());
    assert_eq!(ws.read("a/b/c.txt"), "c\n");
}

#[test]
fn existing_parent_directories_are_not_reported_as_created() {
    let ws = Workspace::new();
    ws.write("a/old.txt", "");
    let text = ok(ws.write_call("write_file", json!({"path": "a/b/new.txt", "content": "n"})));
    assert!(text.ends_with(" Created directories: 'a/b'."), "{text}");
    let text = ok(ws.write_call("write_file", json!({"path": "a/other.txt", "content": "o"})));
    assert!(!text.contains("directories"), "{text}");
}

#[test]
fn overwrites_an_existing_file_reporting_its_old_size_and_truncating_it() {
    let ws = Workspace::new();
    ws.write("f.txt", "a much longer old content\n");
    let text = ok(ws.write_call("write_file", json!({"path": "f.txt", "content": "new\n"})));
    assert_eq!(
        text,
        "Overwrote 'f.txt' (4 bytes, 1 line; it had 26 bytes)."
    );
    assert_eq!(ws.read("f.txt"), "new\n");
}

#[test]
fn directory_path_is_refused_as_a_conflict() {
    let ws = Workspace::new();
    ws.write("sub/keep.txt", "keep");
    expect_err(
        ws.write_call("write_file", json!({"path": "sub", "content": "x"})),
        ToolError::Conflict,
        &["'sub' is a directory"],
    );
    assert!(ws.root.join("sub").is_dir());
    assert_eq!(ws.read("sub/keep.txt"), "keep");
}

#[test]
fn parent_component_that_is_a_file_is_refused_as_a_conflict() {
    let ws = Workspace::new();
    ws.write("f.txt", "file");
    for path in ["f.txt/x.txt", "f.txt/d/x.txt"] {
        expect_err(
            ws.write_call("write_file", json!({"path": path, "content": "x"})),
            ToolError::Conflict,
            &["'f.txt", "not a directory"],
        );
    }
    assert_eq!(ws.read("f.txt"), "file");
}

#[test]
fn workspace_root_as_path_is_refused() {
    let ws = Workspace::new();
    for path in ["", ".", "./", "a/.."] {
        expect_err(
            ws.write_call("write_file", json!({"path": path, "content": "x"})),
            ToolError::Conflict,
            &["the workspace root is a directory"],
        );
    }
    assert!(
        fs::read_dir(&ws.root).unwrap().next().is_none(),
        "something was created"
    );
}

#[test]
fn content_over_4_mib_is_too_large_and_nothing_is_written() {
    let ws = Workspace::new();
    let content = "x".repeat(4 * 1024 * 1024 + 1);
    expect_err(
        ws.write_call(
            "write_file",
            json!({"path": "big/huge.txt", "content": content}),
        ),
        ToolError::TooLarge,
        &["content is 4194305 bytes", "at most 4194304 bytes"],
    );
    assert!(!ws.exists("big"));
}

#[test]
fn content_of_exactly_4_mib_is_written_whole() {
    let ws = Workspace::new();
    let content =
        "0123456789abcdef\n".repeat(4 * 1024 * 1024 / 17) + &"z".repeat(4 * 1024 * 1024 % 17);
    assert_eq!(content.len(), 4 * 1024 * 1024);
    let text = ok(ws.write_call("write_file", json!({"path": "max.txt", "content": content})));
    assert_contains(&text, "Created 'max.txt' (4194304 bytes");
    assert!(
        fs::read(ws.root.join("max.txt")).unwrap() == content.as_bytes(),
        "content differs"
    );
}

#[test]
fn read_only_access_refuses_writes_and_creates_nothing() {
    let ws = Workspace::new();
    ws.write("existing.txt", "old\n");
    for path in ["new.txt", "new/dir/f.txt", "existing.txt"] {
        expect_err(
            ws.read_call("write_file", json!({"path": path, "content": "x"})),
            ToolError::PermissionDenied,
            &[],
        );
    }
    assert!(!ws.exists("new.txt") && !ws.exists("new"));
    assert_eq!(ws.read("existing.txt"), "old\n");
}

#[test]
fn read_only_refusal_says_the_access_is_read_only() {
    let ws = Workspace::new();
    ws.write("existing.txt", "old\n");
    expect_err(
        ws.read_call(
            "write_file",
            json!({"path": "existing.txt", "content": "x"}),
        ),
        ToolError::PermissionDenied,
        &["read-only access"],
    );
}

/// A writing tool given read-only access says so (it asks the preopen's
/// flags only then) and changes nothing.
#[test]
fn writing_tools_with_read_only_access_say_so_and_change_nothing() {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");
    let calls = [
        ("write_file", json!({"path": "a.txt", "content": "y\n"})),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "x", "new_string": "y"}),
        ),
        ("delete_file", json!({"path": "a.txt"})),
        ("move_file", json!({"from": "a.txt", "to": "b.txt"})),
    ];
    for (name, args) in calls {
        expect_err(
            ws.read_call(name, args),
            ToolError::PermissionDenied,
            &["this tool was given read-only access to the workspace"],
        );
    }
    assert_eq!(ws.read("a.txt"), "x\n");
    assert!(!ws.root.join("b.txt").exists());
}
