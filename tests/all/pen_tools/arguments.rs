//! Argument parsing is shared by all the Pen tools.

use super::*;

/// Each tool, a valid call for it (on the files `workspace()` makes),
/// and the field list its unknown-argument error names.
fn tools() -> [(&'static str, Value, &'static str); 6] {
    [
        ("read_file", json!({"path": "a.txt"}), "path, offset, limit"),
        (
            "write_file",
            json!({"path": "b.txt", "content": "x"}),
            "path, content",
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "a", "new_string": "b"}),
            "path, old_string, new_string, replace_all",
        ),
        ("list_directory", json!({}), "path, depth"),
        ("find_files", json!({"pattern": "*"}), "pattern, path"),
        (
            "search_files",
            json!({"pattern": "a"}),
            "pattern, path, glob, context",
        ),
    ]
}

fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    ws
}

#[test]
fn every_tool_refuses_an_unknown_argument_naming_the_fields_it_takes() {
    let ws = workspace();
    for (name, mut args, allowed) in tools() {
        args["bogus"] = json!(1);
        expect_err(
            ws.write_call(name, args),
            ToolError::InvalidArguments,
            &[
                "unknown argument 'bogus'",
                &format!("this tool takes: {allowed}"),
            ],
        );
    }
    assert_eq!(ws.read("a.txt"), "a\n", "a refused edit changed the file");
    assert!(!ws.exists("b.txt"), "a refused write created the file");
}

#[test]
fn every_tool_refuses_arguments_that_are_not_a_json_object() {
    let ws = workspace();
    let pen = ws.pen(Access::ReadWrite);
    for (name, ..) in tools() {
        let call = |raw: &str| sandbox().call(tool(name), raw, &pen).unwrap();
        expect_err(
            call("{not json"),
            ToolError::InvalidArguments,
            &["not valid JSON"],
        );
        expect_err(
            call("[1]"),
            ToolError::InvalidArguments,
            &["must be a JSON object, got an array"],
        );
        expect_err(
            call("\"a.txt\""),
            ToolError::InvalidArguments,
            &["got a string"],
        );
    }
}

#[test]
fn every_tool_names_a_missing_required_argument() {
    let ws = workspace();
    let table = [
        ("read_file", json!({}), "path"),
        ("write_file", json!({"content": "x"}), "path"),
        ("write_file", json!({"path": "b.txt"}), "content"),
        (
            "edit_file",
            json!({"path": "a.txt", "new_string": "b"}),
            "old_string",
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "a"}),
            "new_string",
        ),
        ("find_files", json!({"path": "."}), "pattern"),
        ("search_files", json!({}), "pattern"),
    ];
    for (name, args, field) in table {
        expect_err(
            ws.write_call(name, args),
            ToolError::InvalidArguments,
            &[&format!("missing required argument '{field}'")],
        );
    }
    assert!(!ws.exists("b.txt"));
}

#[test]
fn wrong_argument_types_are_refused_naming_field_expected_and_given() {
    let ws = workspace();
    let table = [
        (
            "read_file",
            json!({"path": 5}),
            "argument 'path' must be a string, got a number 5",
        ),
        (
            "read_file",
            json!({"path": "a.txt", "offset": "5"}),
            "argument 'offset' must be a non-negative integer, got a string \"5\"",
        ),
        (
            "read_file",
            json!({"path": "a.txt", "limit": -1}),
            "argument 'limit' must be a non-negative integer, got a number -1",
        ),
        (
            "read_file",
            json!({"path": "a.txt", "limit": 2.5}),
            "argument 'limit' must be a non-negative integer, got a number 2.5",
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "true"}),
            "argument 'replace_all' must be true or false, got a string \"true\"",
        ),
        (
            "list_directory",
            json!({"depth": [2]}),
            "argument 'depth' must be a non-negative integer, got an array [2]",
        ),
        (
            "search_files",
            json!({"pattern": "a", "context": true}),
            "argument 'context' must be a non-negative integer, got a boolean true",
        ),
        (
            "find_files",
            json!({"pattern": {"a": 1}}),
            "argument 'pattern' must be a string, got an object",
        ),
    ];
    for (name, args, message) in table {
        expect_err(
            ws.write_call(name, args),
            ToolError::InvalidArguments,
            &[message],
        );
    }
    assert_eq!(ws.read("a.txt"), "a\n");
}

#[test]
fn null_optional_arguments_count_as_absent() {
    let ws = workspace();
    let text = ok(ws.read_call(
        "read_file",
        json!({"path": "a.txt", "offset": null, "limit": null}),
    ));
    assert_eq!(text, "     1\ta\n");
    let listing = ok(ws.read_call("list_directory", json!({"path": null, "depth": null})));
    assert_eq!(listing, "a.txt  (file, 2 bytes)\n");
}
