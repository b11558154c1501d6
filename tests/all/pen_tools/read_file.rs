//! `read_file`: numbered lines, windows with offset and limit, line and
//! size caps, and every refusal.

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
        &["'blob.bin' is a binary file (it has NUL bytes)"],
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
fn a_read_chunk_ending_inside_a_character_leaves_the_text_whole() {
    // Lines of 22 bytes: the 64 KiB read chunk ends inside the last `é`
    // of line 2979, so that chunk is not UTF-8 on its own; the lines on
    // both sides of the cut are still read as the UTF-8 they are.
    let line = format!("a{}", "é".repeat(10));
    let ws = Workspace::new();
    ws.write("accents.txt", format!("{line}\n").repeat(4000));
    let text = read(
        &ws,
        json!({"path": "accents.txt", "offset": 2978, "limit": 3}),
    );
    assert_eq!(
        text,
        format!(
            "  2978\t{line}\n  2979\t{line}\n  2980\t{line}\n[showing lines 2978-2980; \
             'accents.txt' continues: call read_file with offset=2981 to read more]\n"
        )
    );
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
