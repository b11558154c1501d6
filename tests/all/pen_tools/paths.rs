//! How paths given by the model are normalised, and that none leaves the
//! workspace.

use super::*;

#[test]
fn equivalent_spellings_name_the_same_file() {
    let ws = Workspace::new();
    ws.write("a.txt", "same\n");
    for path in ["a.txt", "./a.txt", "sub/../a.txt", "./x/./../a.txt//"] {
        assert_eq!(
            ok(ws.read_call("read_file", json!({"path": path}))),
            "     1\tsame\n",
            "{path}"
        );
    }
    let text = ok(ws.write_call(
        "write_file",
        json!({"path": "./d/../b.txt", "content": "b"}),
    ));
    assert_eq!(text, "Created 'b.txt' (1 byte, 1 line).");
    assert_eq!(ws.read("b.txt"), "b");
    assert!(!ws.exists("d"), "a lexically removed component was created");
}

#[test]
fn escaping_paths_are_refused_by_every_tool_and_outside_is_untouched() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let before = ws.outside_snapshot();
    let escapes = [
        ("../x", "leaves the workspace"),
        ("a/../../x", "leaves the workspace"),
        ("..", "leaves the workspace"),
        ("../outside/secret.txt", "leaves the workspace"),
        ("/etc/passwd", "absolute path '/etc/passwd' is not allowed"),
        ("\\server\\share", "absolute path"),
        ("C:/Windows", "absolute path 'C:/Windows' is not allowed"),
    ];
    let secret = ws.outside.join("secret.txt").display().to_string();
    let absolute = [(secret.as_str(), "absolute path")];
    for (path, why) in escapes.iter().chain(&absolute) {
        let calls = [
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": "pwned"})),
            (
                "edit_file",
                json!({"path": path, "old_string": "outside", "new_string": "pwned"}),
            ),
            ("list_directory", json!({"path": path})),
            ("find_files", json!({"pattern": "*", "path": path})),
            ("search_files", json!({"pattern": "secret", "path": path})),
        ];
        for (name, args) in calls {
            let message = expect_err(
                ws.write_call(name, args),
                ToolError::PermissionDenied,
                &[why],
            );
            assert!(!message.contains(SECRET.trim()), "{name} {path}: {message}");
        }
    }
    assert_eq!(ws.outside_snapshot(), before);
}

#[test]
fn path_with_a_nul_byte_is_refused() {
    let ws = Workspace::new();
    for name in ["read_file", "list_directory"] {
        expect_err(
            ws.read_call(name, json!({"path": "a\u{0}b"})),
            ToolError::InvalidArguments,
            &["NUL byte"],
        );
    }
    expect_err(
        ws.write_call("write_file", json!({"path": "a\u{0}b", "content": "x"})),
        ToolError::InvalidArguments,
        &["NUL byte"],
    );
    assert!(
        fs::read_dir(&ws.root).unwrap().next().is_none(),
        "something was created"
    );
}
