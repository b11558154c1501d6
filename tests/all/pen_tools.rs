//! The six Pen file tools, run as the real components through the real
//! sandbox against real files: every success path and every error the
//! tools can report, checked on the result text and on the disk.

use std::fs;

use goat_sandbox::{Access, CallResult, ToolError};
use serde_json::{Value, json};

use crate::support::*;

/// A `ToolError` variant, named by its constructor (`ToolError::Conflict`).
type Variant = fn(String) -> ToolError;

/// Asserts that `result` is a tool error of `variant` whose message
/// contains every one of `needles`, and returns the message.
#[track_caller]
fn expect_err(result: CallResult, variant: Variant, needles: &[&str]) -> String {
    let err = tool_err(result);
    assert_eq!(
        std::mem::discriminant(&err),
        std::mem::discriminant(&variant(String::new())),
        "wrong error variant: {err:?}"
    );
    let message = err.message().to_owned();
    for needle in needles {
        assert!(
            message.contains(needle),
            "error {err:?} does not mention {needle:?}"
        );
    }
    message
}

/// Asserts that `text` contains `needle`, showing `text` when it does not.
#[track_caller]
fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not found in:\n{text}");
}

/// Lines `1..=n` of the form `line 00001` padded to a fixed width, so that
/// a line's content says which line it is.
fn numbered_lines(n: usize, width: usize) -> String {
    (1..=n)
        .map(|i| format!("{:<width$}\n", format!("line {i:05}")))
        .collect()
}

/// `n` empty files `f0000.txt`... in directory `dir` of the workspace.
fn many_files(ws: &Workspace, dir: &str, n: usize) {
    let dir = ws.root.join(dir);
    fs::create_dir_all(&dir).unwrap();
    for i in 0..n {
        fs::write(dir.join(format!("f{i:04}.txt")), "").unwrap();
    }
}

/// Creates a symlink at `rel` inside the workspace pointing to `target`.
fn symlink(ws: &Workspace, target: impl AsRef<std::path::Path>, rel: &str) {
    std::os::unix::fs::symlink(target, ws.root.join(rel)).unwrap();
}

mod specs {
    use super::*;

    #[test]
    fn each_tool_declares_its_access_and_path_fields() {
        let table = [
            ("read_file", Access::Read, vec!["path"]),
            ("list_directory", Access::Read, vec!["path"]),
            ("find_files", Access::Read, vec!["path"]),
            ("search_files", Access::Read, vec!["path"]),
            ("write_file", Access::ReadWrite, vec!["path"]),
            ("edit_file", Access::ReadWrite, vec!["path"]),
        ];
        for (name, access, path_fields) in table {
            let spec = tool(name).spec();
            assert_eq!(spec.name, name);
            assert_eq!(spec.access, access, "{name}");
            assert_eq!(spec.path_fields, path_fields, "{name}");
            assert_eq!(
                spec.parameters["additionalProperties"],
                json!(false),
                "{name}"
            );
        }
    }
}

/// Argument parsing is shared by all six tools.
mod arguments {
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
}

mod read_file {
    use super::*;

    fn read(ws: &Workspace, args: Value) -> String {
        ok(ws.read_call("read_file", args))
    }

    #[test]
    fn lines_are_numbered_right_aligned_and_tab_separated() {
        let ws = Workspace::new();
        ws.write("a.txt", "alpha\n  beta\n\ngamma\n");
        assert_eq!(
            read(&ws, json!({"path": "a.txt"})),
            "     1\talpha\n     2\t  beta\n     3\t\n     4\tgamma\n"
        );
    }

    #[test]
    fn offset_and_limit_select_a_window_and_say_where_the_file_continues() {
        let ws = Workspace::new();
        ws.write("ten.txt", numbered_lines(10, 0));
        assert_eq!(
            read(&ws, json!({"path": "ten.txt", "offset": 3, "limit": 2})),
            "     3\tline 00003\n     4\tline 00004\n[showing lines 3-4; 'ten.txt' continues: call \
             read_file with offset=5 to read more]\n"
        );
    }

    #[test]
    fn window_reaching_the_end_has_no_continuation_note() {
        let ws = Workspace::new();
        ws.write("ten.txt", numbered_lines(10, 0));
        let text = read(&ws, json!({"path": "ten.txt", "offset": 9, "limit": 5}));
        assert_eq!(text, "     9\tline 00009\n    10\tline 00010\n");
        let exact = read(&ws, json!({"path": "ten.txt", "offset": 9, "limit": 2}));
        assert_eq!(
            exact, text,
            "a window ending on the last line must not say the file continues"
        );
    }

    #[test]
    fn last_line_without_trailing_newline_is_shown() {
        let ws = Workspace::new();
        ws.write("a.txt", "first\nlast");
        assert_eq!(
            read(&ws, json!({"path": "a.txt"})),
            "     1\tfirst\n     2\tlast\n"
        );
    }

    #[test]
    fn crlf_line_endings_are_shown_without_carriage_returns() {
        let ws = Workspace::new();
        ws.write("dos.txt", "one\r\ntwo\r\n");
        let text = read(&ws, json!({"path": "dos.txt"}));
        assert_eq!(text, "     1\tone\n     2\ttwo\n");
        assert!(!text.contains('\r'));
    }

    #[test]
    fn utf8_bom_is_stripped_from_the_first_line_only() {
        let ws = Workspace::new();
        ws.write("bom.txt", "\u{feff}first\n\u{feff}second\n");
        assert_eq!(
            read(&ws, json!({"path": "bom.txt"})),
            "     1\tfirst\n     2\t\u{feff}second\n"
        );
    }

    #[test]
    fn empty_file_says_it_is_empty() {
        let ws = Workspace::new();
        ws.write("empty.txt", "");
        assert_eq!(
            read(&ws, json!({"path": "empty.txt"})),
            "'empty.txt' is empty.\n"
        );
    }

    #[test]
    fn offset_past_the_end_is_refused_with_the_line_count() {
        let ws = Workspace::new();
        ws.write("three.txt", "a\nb\nc\n");
        expect_err(
            ws.read_call("read_file", json!({"path": "three.txt", "offset": 4})),
            ToolError::InvalidArguments,
            &["offset 4 is past the end of 'three.txt', which has 3 lines"],
        );
    }

    #[test]
    fn offset_zero_and_limit_zero_are_refused() {
        let ws = Workspace::new();
        ws.write("a.txt", "a\n");
        expect_err(
            ws.read_call("read_file", json!({"path": "a.txt", "offset": 0})),
            ToolError::InvalidArguments,
            &["offset is a 1-based line number", "offset=1"],
        );
        expect_err(
            ws.read_call("read_file", json!({"path": "a.txt", "limit": 0})),
            ToolError::InvalidArguments,
            &["limit must be at least 1"],
        );
    }

    #[test]
    fn file_with_a_nul_byte_is_refused_as_binary() {
        let ws = Workspace::new();
        ws.write("blob.bin", b"text\0more text\n");
        expect_err(
            ws.read_call("read_file", json!({"path": "blob.bin"})),
            ToolError::InvalidArguments,
            &["'blob.bin' is a binary file or not UTF-8 text"],
        );
    }

    #[test]
    fn non_utf8_text_is_refused() {
        let ws = Workspace::new();
        ws.write("latin1.txt", b"caf\xe9\n");
        expect_err(
            ws.read_call("read_file", json!({"path": "latin1.txt"})),
            ToolError::InvalidArguments,
            &["'latin1.txt' is a binary file or not UTF-8 text"],
        );
    }

    #[test]
    fn very_long_line_is_cut_with_a_note_saying_how_much() {
        let ws = Workspace::new();
        ws.write("long.txt", format!("{}\nnext\n", "x".repeat(5000)));
        let text = read(&ws, json!({"path": "long.txt"}));
        let expected = format!(
            "     1\t{}… [line cut: 3000 more bytes]\n     2\tnext\n",
            "x".repeat(2000)
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn line_longer_than_the_scan_buffer_is_cut_and_the_next_line_still_read() {
        // 100 000 bytes: longer than both the 64 KiB line buffer and one read chunk.
        let ws = Workspace::new();
        ws.write("huge.txt", format!("{}\nafter\n", "y".repeat(100_000)));
        let text = read(&ws, json!({"path": "huge.txt"}));
        let expected = format!(
            "     1\t{}… [line cut: 98000 more bytes]\n     2\tafter\n",
            "y".repeat(2000)
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn long_line_cut_inside_a_multibyte_character_keeps_whole_characters() {
        // 30 000 three-byte characters: the 65 536-byte line buffer ends
        // inside one, after 21 845 whole ones.
        let ws = Workspace::new();
        ws.write("euro.txt", format!("{}\n", "€".repeat(30_000)));
        let text = read(&ws, json!({"path": "euro.txt"}));
        let expected = format!(
            "     1\t{}… [line cut: 84000 more bytes]\n",
            "€".repeat(2000)
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn files_ending_at_or_just_past_a_read_chunk_are_read_whole() {
        // 8191 lines of 8 bytes, then a last line without a newline that ends
        // exactly at 64 KiB, or one byte past it.
        for last in ["12345678", "123456789"] {
            let ws = Workspace::new();
            ws.write("chunk.txt", format!("{}{last}", "abcdefg\n".repeat(8191)));
            assert_eq!(
                read(&ws, json!({"path": "chunk.txt", "offset": 8191})),
                format!("  8191\tabcdefg\n  8192\t{last}\n"),
                "{} bytes",
                65_528 + last.len()
            );
        }
    }

    #[test]
    fn directory_is_refused_as_a_conflict() {
        let ws = Workspace::new();
        fs::create_dir(ws.root.join("sub")).unwrap();
        expect_err(
            ws.read_call("read_file", json!({"path": "sub"})),
            ToolError::Conflict,
            &["'sub' is a directory"],
        );
    }

    #[test]
    fn path_through_a_file_is_a_conflict() {
        let ws = Workspace::new();
        ws.write("f.txt", "f\n");
        expect_err(
            ws.read_call("read_file", json!({"path": "f.txt/x"})),
            ToolError::Conflict,
            &["'f.txt/x' is not a directory, or a part of it is a file"],
        );
    }

    #[test]
    fn overlong_file_name_is_refused_as_invalid() {
        let ws = Workspace::new();
        let name = "n".repeat(300);
        expect_err(
            ws.read_call("read_file", json!({"path": name})),
            ToolError::InvalidArguments,
            &[&format!("path '{name}' is too long")],
        );
    }

    #[test]
    fn missing_file_is_not_found() {
        let ws = Workspace::new();
        expect_err(
            ws.read_call("read_file", json!({"path": "nope.txt"})),
            ToolError::NotFound,
            &["'nope.txt' does not exist"],
        );
        expect_err(
            ws.read_call("read_file", json!({"path": "no/such/dir.txt"})),
            ToolError::NotFound,
            &["'no/such/dir.txt' does not exist"],
        );
    }

    #[test]
    fn large_file_reads_2000_lines_by_default_and_later_windows_on_request() {
        // 5000 lines of 40 bytes: 200 KB, so windows span several read chunks.
        let ws = Workspace::new();
        ws.write("big.txt", numbered_lines(5000, 39));
        let first = read(&ws, json!({"path": "big.txt"}));
        let shown: Vec<&str> = first.lines().filter(|l| l.contains('\t')).collect();
        assert_eq!(shown.len(), 2000);
        assert_eq!(shown[0].trim_end(), "     1\tline 00001");
        assert_eq!(shown[1999].trim_end(), "  2000\tline 02000");
        assert!(first.ends_with(
            "[showing lines 1-2000; 'big.txt' continues: call read_file with offset=2001 to read more]\n"
        ));

        let deep = read(&ws, json!({"path": "big.txt", "offset": 3500, "limit": 2}));
        let pad = " ".repeat(29);
        assert_eq!(
            deep,
            format!(
                "  3500\tline 03500{pad}\n  3501\tline 03501{pad}\n[showing lines 3500-3501; \
                 'big.txt' continues: call read_file with offset=3502 to read more]\n"
            )
        );

        let tail = read(&ws, json!({"path": "big.txt", "offset": 4001}));
        assert_eq!(tail.lines().count(), 1000);
        assert!(
            tail.ends_with(&format!("  5000\tline 05000{pad}\n")),
            "no note after the last line"
        );
    }

    #[test]
    fn result_size_cap_stops_early_and_says_where_to_continue() {
        // 2000 lines of 100 bytes are more than the 128 KiB result cap.
        let ws = Workspace::new();
        ws.write("wide.txt", numbered_lines(2000, 99));
        let text = read(&ws, json!({"path": "wide.txt"}));
        let shown = text.lines().filter(|l| l.contains('\t')).count();
        assert!(shown > 1000 && shown < 2000, "{shown} lines shown");
        assert!(text.len() <= 128 * 1024 + 200, "{} bytes", text.len());
        assert!(text.ends_with(&format!(
            "[showing lines 1-{shown} (result size cap reached); 'wide.txt' continues: call \
             read_file with offset={} to read more]\n",
            shown + 1
        )));
    }
}

mod write_file {
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
}

mod edit_file {
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
    fn non_utf8_file_is_refused_and_unchanged() {
        let ws = Workspace::new();
        ws.write("latin1.txt", b"caf\xe9\n");
        expect_err(
            edit(&ws, "latin1.txt", "caf", "tea"),
            ToolError::InvalidArguments,
            &["'latin1.txt' is not UTF-8 text"],
        );
        assert_eq!(fs::read(ws.root.join("latin1.txt")).unwrap(), b"caf\xe9\n");
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
}

mod list_directory {
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
        assert_eq!(
            list(&ws, json!({"depth": 2})),
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
}

mod find_files {
    use super::*;

    /// main.rs, Cargo.toml, README.md, src/lib.rs, src/notes.txt, src/a/b/deep.rs
    fn project() -> Workspace {
        let ws = Workspace::new();
        ws.write("main.rs", "")
            .write("Cargo.toml", "")
            .write("README.md", "")
            .write("src/lib.rs", "")
            .write("src/notes.txt", "")
            .write("src/a/b/deep.rs", "");
        ws
    }

    fn find(ws: &Workspace, args: Value) -> String {
        ok(ws.read_call("find_files", args))
    }

    #[test]
    fn double_star_matches_at_any_depth() {
        let ws = project();
        assert_eq!(
            find(&ws, json!({"pattern": "**/*.rs"})),
            "main.rs\nsrc/a/b/deep.rs\nsrc/lib.rs\n"
        );
    }

    #[test]
    fn single_star_matches_only_the_top_level() {
        let ws = project();
        assert_eq!(find(&ws, json!({"pattern": "*.rs"})), "main.rs\n");
    }

    #[test]
    fn no_match_for_a_bare_name_pattern_hints_at_double_star() {
        let ws = project();
        assert_eq!(
            find(&ws, json!({"pattern": "*.txt"})),
            "No files match '*.txt'. ('*.txt' matches only directly; try '**/*.txt' for any depth)\n"
        );
        assert_eq!(
            find(&ws, json!({"pattern": "*.py", "path": "src"})),
            "No files match '*.py' under 'src'. ('*.py' matches only directly under 'src'; try \
             '**/*.py' for any depth)\n"
        );
    }

    #[test]
    fn no_match_for_a_path_pattern_has_no_hint() {
        let ws = project();
        assert_eq!(
            find(&ws, json!({"pattern": "lib/**/*.rs"})),
            "No files match 'lib/**/*.rs'.\n"
        );
        assert_eq!(
            find(&ws, json!({"pattern": "**/*.py"})),
            "No files match '**/*.py'.\n"
        );
    }

    #[test]
    fn braces_classes_and_question_marks_match() {
        let ws = project();
        ws.write("file1.txt", "")
            .write("file10.txt", "")
            .write("fileA.txt", "");
        let table = [
            ("*.{rs,toml}", "Cargo.toml\nmain.rs\n"),
            (
                "**/*.{md,txt}",
                "README.md\nfile1.txt\nfile10.txt\nfileA.txt\nsrc/notes.txt\n",
            ),
            ("file?.txt", "file1.txt\nfileA.txt\n"),
            ("file[0-9]*.txt", "file1.txt\nfile10.txt\n"),
            ("[!a-z]*", "Cargo.toml\nREADME.md\n"),
            ("src/**/deep.rs", "src/a/b/deep.rs\n"),
            ("src/**", "src/a/b/deep.rs\nsrc/lib.rs\nsrc/notes.txt\n"),
        ];
        for (pattern, expected) in table {
            assert_eq!(
                find(&ws, json!({"pattern": pattern})),
                expected,
                "{pattern}"
            );
        }
    }

    #[test]
    fn path_restricts_the_base_and_results_stay_relative_to_the_root() {
        let ws = project();
        assert_eq!(
            find(&ws, json!({"pattern": "*.rs", "path": "src"})),
            "src/lib.rs\n"
        );
        assert_eq!(
            find(&ws, json!({"pattern": "**/*.rs", "path": "src"})),
            "src/a/b/deep.rs\nsrc/lib.rs\n"
        );
        assert_eq!(
            find(&ws, json!({"pattern": "b/*.rs", "path": "./src/a/"})),
            "src/a/b/deep.rs\n"
        );
    }

    #[test]
    fn version_control_directories_are_skipped() {
        let ws = project();
        ws.write(".git/config", "")
            .write(".git/hooks/pre-commit.rs", "")
            .write("sub/.git/x.rs", "");
        assert_eq!(
            find(&ws, json!({"pattern": "**/*.rs"})),
            "main.rs\nsrc/a/b/deep.rs\nsrc/lib.rs\n"
        );
        assert_eq!(
            find(&ws, json!({"pattern": "**/config"})),
            "No files match '**/config'.\n"
        );
    }

    #[test]
    fn results_are_sorted_by_path_not_by_walk_order() {
        // The walk visits a/ before a.txt; sorted, "a.txt" < "a/z.txt".
        let ws = Workspace::new();
        ws.write("z.txt", "")
            .write("a/z.txt", "")
            .write("a.txt", "")
            .write("B.txt", "");
        assert_eq!(
            find(&ws, json!({"pattern": "**/*.txt"})),
            "B.txt\na.txt\na/z.txt\nz.txt\n"
        );
    }

    #[test]
    fn symlinks_are_found_but_not_followed() {
        let ws = project();
        symlink(&ws, "main.rs", "alias.rs");
        symlink(&ws, "src", "srclink");
        assert_eq!(
            find(&ws, json!({"pattern": "**/*.rs"})),
            "alias.rs\nmain.rs\nsrc/a/b/deep.rs\nsrc/lib.rs\n"
        );
    }

    #[test]
    fn invalid_patterns_are_refused_saying_why() {
        let ws = project();
        let table = [
            ("[abc", "'[' without a matching ']'"),
            ("{a,b", "invalid glob pattern '{a,b'"),
            ("a}", "'}' without a matching '{'"),
            ("", "the pattern is empty"),
            ("/abs/*.rs", "drop the leading '/'"),
            ("a**b", "'**' must be a whole path component"),
        ];
        for (pattern, why) in table {
            expect_err(
                ws.read_call("find_files", json!({"pattern": pattern})),
                ToolError::InvalidArguments,
                &[why],
            );
        }
    }

    #[test]
    fn base_that_is_a_file_or_missing_is_refused() {
        let ws = project();
        expect_err(
            ws.read_call("find_files", json!({"pattern": "*", "path": "main.rs"})),
            ToolError::Conflict,
            &["'main.rs' is not a directory to search"],
        );
        expect_err(
            ws.read_call("find_files", json!({"pattern": "*", "path": "nope"})),
            ToolError::NotFound,
            &["'nope' does not exist"],
        );
    }

    #[test]
    fn results_stop_at_1000_matches_with_a_note() {
        let ws = Workspace::new();
        many_files(&ws, "many", 1001);
        let text = find(&ws, json!({"pattern": "**/*.txt"}));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1001);
        assert_eq!(lines[999], "many/f0999.txt");
        assert_eq!(
            lines[1000],
            "[stopped at 1000 matches; use a narrower pattern or path]"
        );
    }
}

mod search_files {
    use super::*;

    fn search(ws: &Workspace, args: Value) -> String {
        ok(ws.read_call("search_files", args))
    }

    /// Lines 1-7 of `ctx.txt`: matches on 2 and 6, far enough apart for
    /// one line of context to leave a gap between them.
    const CONTEXT_FILE: &str = "a\nmatch one\nb\nc\nd\nmatch two\ne\n";

    #[test]
    fn matches_are_reported_as_path_line_text_with_a_summary() {
        let ws = Workspace::new();
        ws.write("src/a.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n")
            .write("b.txt", "nothing\n");
        assert_eq!(
            search(&ws, json!({"pattern": r"fn \w+"})),
            "src/a.rs:1:fn main() {}\nsrc/a.rs:3:fn helper() {}\n[2 matching lines in 1 file; 2 files searched]\n"
        );
    }

    #[test]
    fn context_lines_use_dashes_and_separate_distant_groups() {
        let ws = Workspace::new();
        ws.write("ctx.txt", CONTEXT_FILE);
        assert_eq!(
            search(&ws, json!({"pattern": "match", "context": 1})),
            "ctx.txt-1-a\nctx.txt:2:match one\nctx.txt-3-b\n--\nctx.txt-5-d\nctx.txt:6:match two\n\
             ctx.txt-7-e\n[2 matching lines in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn overlapping_context_merges_into_one_group() {
        let ws = Workspace::new();
        ws.write("ctx.txt", CONTEXT_FILE);
        assert_eq!(
            search(&ws, json!({"pattern": "match", "context": 2})),
            "ctx.txt-1-a\nctx.txt:2:match one\nctx.txt-3-b\nctx.txt-4-c\nctx.txt-5-d\n\
             ctx.txt:6:match two\nctx.txt-7-e\n[2 matching lines in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn groups_in_different_files_are_separated() {
        let ws = Workspace::new();
        ws.write("a.txt", "x\nhit\n").write("b.txt", "hit\ny\n");
        assert_eq!(
            search(&ws, json!({"pattern": "hit", "context": 1})),
            "a.txt-1-x\na.txt:2:hit\n--\nb.txt:1:hit\nb.txt-2-y\n[2 matching lines in 2 files; 2 files searched]\n"
        );
    }

    #[test]
    fn glob_without_a_slash_filters_file_names_at_any_depth() {
        let ws = Workspace::new();
        ws.write("top.rs", "needle\n")
            .write("src/deep/x.rs", "needle\n")
            .write("notes.txt", "needle\n");
        assert_eq!(
            search(&ws, json!({"pattern": "needle", "glob": "*.rs"})),
            "src/deep/x.rs:1:needle\ntop.rs:1:needle\n[2 matching lines in 2 files; 2 files searched]\n"
        );
    }

    #[test]
    fn glob_with_a_slash_matches_paths_relative_to_the_search_path() {
        let ws = Workspace::new();
        ws.write("src/a.rs", "needle\n")
            .write("src/deep/x.rs", "needle\n")
            .write("other/y.rs", "needle\n")
            .write("src/a.txt", "needle\n");
        assert_eq!(
            search(&ws, json!({"pattern": "needle", "glob": "src/**/*.rs"})),
            "src/a.rs:1:needle\nsrc/deep/x.rs:1:needle\n[2 matching lines in 2 files; 2 files searched]\n"
        );
        assert_eq!(
            search(
                &ws,
                json!({"pattern": "needle", "path": "src", "glob": "deep/*.rs"})
            ),
            "src/deep/x.rs:1:needle\n[1 matching line in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn inline_flag_makes_the_search_case_insensitive() {
        let ws = Workspace::new();
        ws.write("f.txt", "Hello\nHELLO\nhello\nbye\n");
        assert_eq!(
            search(&ws, json!({"pattern": "(?i)hello"})),
            "f.txt:1:Hello\nf.txt:2:HELLO\nf.txt:3:hello\n[3 matching lines in 1 file; 1 file searched]\n"
        );
        assert_eq!(
            search(&ws, json!({"pattern": "hello"})),
            "f.txt:3:hello\n[1 matching line in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn binary_and_non_utf8_files_are_skipped_with_a_note() {
        let ws = Workspace::new();
        ws.write("blob.bin", b"needle\0needle\n")
            .write("text.txt", "needle\n");
        assert_eq!(
            search(&ws, json!({"pattern": "needle"})),
            "text.txt:1:needle\n[1 matching line in 1 file; 2 files searched]\n[skipped 1 file (binary or not UTF-8)]\n"
        );
        ws.write("latin1.txt", b"needle caf\xe9\n");
        assert_contains(
            &search(&ws, json!({"pattern": "needle"})),
            "[skipped 2 files (binary or not UTF-8)]",
        );
    }

    #[test]
    fn files_over_4_mib_are_skipped_with_a_note() {
        let ws = Workspace::new();
        ws.write(
            "huge.log",
            format!("needle\n{}", "x".repeat(4 * 1024 * 1024)),
        );
        ws.write("small.txt", "needle\n");
        let expected = "small.txt:1:needle\n[1 matching line in 1 file; 2 files searched]\n\
                        [skipped 1 file (larger than 4 MiB)]\n";
        assert_eq!(search(&ws, json!({"pattern": "needle"})), expected);
        assert_eq!(
            search(&ws, json!({"pattern": "needle", "path": "huge.log"})),
            "No matches for 'needle' in 1 file searched.\n[skipped 1 file (larger than 4 MiB)]\n"
        );
    }

    #[test]
    fn crlf_lines_are_shown_without_carriage_returns() {
        let ws = Workspace::new();
        ws.write("dos.txt", "a\r\nneedle\r\n");
        assert_eq!(
            search(&ws, json!({"pattern": "needle$"})),
            "dos.txt:2:needle\n[1 matching line in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn no_match_says_how_many_files_were_searched() {
        let ws = Workspace::new();
        ws.write("a.txt", "a\n").write("b/c.txt", "c\n");
        assert_eq!(
            search(&ws, json!({"pattern": "zzz"})),
            "No matches for 'zzz' in 2 files searched.\n"
        );
    }

    #[test]
    fn path_to_a_single_file_searches_only_that_file() {
        let ws = Workspace::new();
        ws.write("one.txt", "needle\n").write("two.txt", "needle\n");
        assert_eq!(
            search(&ws, json!({"pattern": "needle", "path": "two.txt"})),
            "two.txt:1:needle\n[1 matching line in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn version_control_directories_are_not_searched() {
        let ws = Workspace::new();
        ws.write(".git/config", "needle\n")
            .write("src/.hg/x", "needle\n")
            .write("a.txt", "needle\n");
        assert_eq!(
            search(&ws, json!({"pattern": "needle"})),
            "a.txt:1:needle\n[1 matching line in 1 file; 1 file searched]\n"
        );
    }

    #[test]
    fn matches_stop_at_500_with_a_note() {
        let ws = Workspace::new();
        ws.write("many.txt", "hit\n".repeat(501));
        let text = search(&ws, json!({"pattern": "hit"}));
        assert_eq!(
            text.lines().filter(|l| l.starts_with("many.txt:")).count(),
            500
        );
        assert_contains(
            &text,
            "many.txt:500:hit\n[500 matching lines in 1 file; 1 file searched]\n",
        );
        assert_contains(&text, "[stopped early: results are capped at 500 matches");
    }

    #[test]
    fn invalid_regex_is_refused() {
        let ws = Workspace::new();
        expect_err(
            ws.read_call("search_files", json!({"pattern": "(unclosed"})),
            ToolError::InvalidArguments,
            &["invalid regular expression '(unclosed'"],
        );
    }

    #[test]
    fn invalid_glob_is_refused() {
        let ws = Workspace::new();
        expect_err(
            ws.read_call("search_files", json!({"pattern": "a", "glob": "[abc"})),
            ToolError::InvalidArguments,
            &["invalid glob pattern '[abc'"],
        );
    }

    #[test]
    fn context_over_10_is_refused() {
        let ws = Workspace::new();
        ws.write("a.txt", "a\n");
        expect_err(
            ws.read_call("search_files", json!({"pattern": "a", "context": 11})),
            ToolError::InvalidArguments,
            &["context must be between 0 and 10, got 11"],
        );
        assert_contains(
            &search(&ws, json!({"pattern": "a", "context": 10})),
            "a.txt:1:a\n",
        );
    }

    #[test]
    fn missing_path_is_not_found() {
        let ws = Workspace::new();
        expect_err(
            ws.read_call("search_files", json!({"pattern": "a", "path": "nope"})),
            ToolError::NotFound,
            &["'nope' does not exist"],
        );
    }
}

/// How paths given by the model are normalised, and that none leaves the
/// workspace.
mod paths {
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
}

/// Symbolic links inside the workspace: followed when they stay inside,
/// refused when they lead out.
mod symlinks {
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
}

/// Sockets and FIFOs are never opened (opening a FIFO blocks until a writer
/// appears, out of reach of the call's timeout): refused when named, passed
/// by when walking.
mod special_files {
    use super::*;

    /// A workspace with `fifo`, `sock` and `a.txt`; keep the listener alive.
    fn workspace() -> (Workspace, std::os::unix::net::UnixListener) {
        let ws = Workspace::new();
        ws.write("a.txt", "x\n");
        let status = std::process::Command::new("mkfifo")
            .arg(ws.root.join("fifo"))
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo failed");
        let listener = std::os::unix::net::UnixListener::bind(ws.root.join("sock")).unwrap();
        (ws, listener)
    }

    #[test]
    fn every_tool_refuses_a_special_file_named_as_its_path() {
        let (ws, _listener) = workspace();
        let not_opened = "is not a regular file (a device, pipe or socket); it was not opened";
        for path in ["fifo", "sock"] {
            let calls = [
                ("read_file", json!({"path": path}), not_opened),
                (
                    "edit_file",
                    json!({"path": path, "old_string": "x", "new_string": "y"}),
                    not_opened,
                ),
                (
                    "search_files",
                    json!({"pattern": "x", "path": path}),
                    not_opened,
                ),
                (
                    "write_file",
                    json!({"path": path, "content": "x"}),
                    "is not a regular file",
                ),
                (
                    "list_directory",
                    json!({"path": path}),
                    "is not a directory",
                ),
                (
                    "find_files",
                    json!({"pattern": "*", "path": path}),
                    "is not a directory to search",
                ),
            ];
            for (name, args, why) in calls {
                expect_err(
                    ws.write_call(name, args),
                    ToolError::Conflict,
                    &[&format!("'{path}' {why}")],
                );
            }
        }
    }

    #[test]
    fn walks_pass_special_files_by() {
        let (ws, _listener) = workspace();
        assert_eq!(
            ok(ws.read_call("list_directory", json!({}))),
            "a.txt  (file, 2 bytes)\nfifo  (special file)\nsock  (special file)\n"
        );
        assert_eq!(
            ok(ws.read_call("find_files", json!({"pattern": "*"}))),
            "a.txt\n"
        );
        assert_eq!(
            ok(ws.read_call("search_files", json!({"pattern": "x"}))),
            "a.txt:1:x\n[1 matching line in 1 file; 1 file searched]\n"
        );
    }
}
