//! `edit_file`: exact, unique replacements and every way an edit is
//! refused.

use super::*;

fn edit(ws: &Workspace, path: &str, old: &str, new: &str) -> CallResult {
    ws.write_call(
        "edit_file",
        json!({"path": path, "old_string": old, "new_string": new}),
    )
}

#[test]
fn single_match_is_replaced_exactly() {
    let ws = Workspace::new();
    ws.write("lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let text = ok(edit(&ws, "lib.rs", "fn b() {}", "fn b() {\n    todo()\n}"));
    assert_eq!(
        text,
        "Edited 'lib.rs': replaced 1 occurrence at line 2 (each: -1 +3 lines). The file now has 5 lines."
    );
    assert_eq!(
        ws.read("lib.rs"),
        "fn a() {}\nfn b() {\n    todo()\n}\nfn c() {}\n"
    );
}

#[test]
fn zero_matches_is_a_conflict_and_the_file_is_unchanged() {
    let ws = Workspace::new();
    ws.write("f.txt", "hello world\n");
    expect_err(
        edit(&ws, "f.txt", "Hello", "Bye"),
        ToolError::Conflict,
        &["old_string was not found in 'f.txt' (0 matches)"],
    );
    assert_eq!(ws.read("f.txt"), "hello world\n");
}

#[test]
fn two_matches_without_replace_all_are_refused_and_the_file_is_unchanged() {
    let ws = Workspace::new();
    ws.write("f.txt", "x = 1\ny = 2\nx = 1\n");
    expect_err(
        edit(&ws, "f.txt", "x = 1", "x = 3"),
        ToolError::Conflict,
        &[
            "old_string matches 2 times in 'f.txt' (at lines 1, 3)",
            "replace_all",
        ],
    );
    assert_eq!(ws.read("f.txt"), "x = 1\ny = 2\nx = 1\n");
}

#[test]
fn many_matches_list_ten_lines_and_count_the_rest() {
    let ws = Workspace::new();
    let content = "dup\n".repeat(12);
    ws.write("f.txt", &content);
    expect_err(
        edit(&ws, "f.txt", "dup", "one"),
        ToolError::Conflict,
        &[
            "matches 12 times",
            "(at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, and 2 more)",
        ],
    );
    assert_eq!(ws.read("f.txt"), content);
}

#[test]
fn replace_all_replaces_every_match() {
    let ws = Workspace::new();
    ws.write("f.txt", "foo\nbar\nfoo\nbaz foo\n");
    let text = ok(ws.write_call(
        "edit_file",
        json!({"path": "f.txt", "old_string": "foo", "new_string": "qux", "replace_all": true}),
    ));
    assert_contains(&text, "replaced 3 occurrences at lines 1, 3, 4");
    assert_eq!(ws.read("f.txt"), "qux\nbar\nqux\nbaz qux\n");
}

#[test]
fn replace_all_false_behaves_like_the_default() {
    let ws = Workspace::new();
    ws.write("f.txt", "a\na\n");
    let result = ws.write_call(
        "edit_file",
        json!({"path": "f.txt", "old_string": "a", "new_string": "b", "replace_all": false}),
    );
    expect_err(result, ToolError::Conflict, &["matches 2 times"]);
    assert_eq!(ws.read("f.txt"), "a\na\n");
}

#[test]
fn empty_old_string_and_identical_strings_are_refused() {
    let ws = Workspace::new();
    ws.write("f.txt", "same\n");
    expect_err(
        edit(&ws, "f.txt", "", "x"),
        ToolError::InvalidArguments,
        &["old_string is empty"],
    );
    expect_err(
        edit(&ws, "f.txt", "same", "same"),
        ToolError::InvalidArguments,
        &["old_string and new_string are the same"],
    );
    assert_eq!(ws.read("f.txt"), "same\n");
}

#[test]
fn crlf_file_edited_with_lf_old_string_keeps_crlf() {
    let ws = Workspace::new();
    ws.write("dos.txt", "one\r\ntwo\r\nthree\r\n");
    let text = ok(edit(&ws, "dos.txt", "one\ntwo\n", "uno\ndos\n"));
    assert_contains(&text, "replaced 1 occurrence at line 1");
    assert_eq!(ws.read("dos.txt"), "uno\r\ndos\r\nthree\r\n");
}

#[test]
fn crlf_file_keeps_crlf_when_new_string_adds_lines_to_a_single_line_match() {
    let ws = Workspace::new();
    ws.write("dos.txt", "one\r\ntwo\r\n");
    ok(edit(&ws, "dos.txt", "one", "uno\neins"));
    assert_eq!(ws.read("dos.txt"), "uno\r\neins\r\ntwo\r\n");
}

#[test]
fn crlf_file_edited_with_crlf_new_string_gets_no_doubled_carriage_returns() {
    let ws = Workspace::new();
    ws.write("dos.txt", "one\r\ntwo\r\n");
    ok(edit(&ws, "dos.txt", "one\ntwo", "uno\r\ndos"));
    assert_eq!(ws.read("dos.txt"), "uno\r\ndos\r\n");
}

#[test]
fn file_over_4_mib_is_too_large_and_unchanged() {
    let ws = Workspace::new();
    let content = "a".repeat(4 * 1024 * 1024 + 1);
    ws.write("big.txt", &content);
    expect_err(
        edit(&ws, "big.txt", "a", "b"),
        ToolError::TooLarge,
        &["'big.txt' is 4194305 bytes"],
    );
    assert!(ws.read("big.txt") == content, "file changed");
}

#[test]
fn missing_file_is_not_found_and_not_created() {
    let ws = Workspace::new();
    expect_err(
        edit(&ws, "nope.txt", "a", "b"),
        ToolError::NotFound,
        &["'nope.txt' does not exist"],
    );
    assert!(!ws.exists("nope.txt"));
}

#[test]
fn directory_is_refused_as_a_conflict() {
    let ws = Workspace::new();
    fs::create_dir(ws.root.join("sub")).unwrap();
    expect_err(
        edit(&ws, "sub", "a", "b"),
        ToolError::Conflict,
        &["'sub' is a directory"],
    );
}

#[test]
fn read_only_access_is_refused_and_the_file_is_unchanged() {
    let ws = Workspace::new();
    ws.write("f.txt", "before\n");
    expect_err(
        ws.read_call(
            "edit_file",
            json!({"path": "f.txt", "old_string": "before", "new_string": "after"}),
        ),
        ToolError::PermissionDenied,
        &["'f.txt'"],
    );
    assert_eq!(ws.read("f.txt"), "before\n");
}
