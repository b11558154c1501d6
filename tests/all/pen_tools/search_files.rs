//! `search_files`: regular expressions over files, context groups, globs,
//! skipped files, and the match cap.

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
fn binary_files_are_skipped_with_a_note() {
    let ws = Workspace::new();
    ws.write("blob.bin", b"needle\0needle\n")
        .write("text.txt", "needle\n");
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        "text.txt:1:needle\n[1 matching line in 1 file; 2 files searched]\n[skipped 1 file (binary)]\n"
    );
}

#[test]
fn a_nul_past_the_first_block_does_not_make_a_file_binary() {
    // The sniff looks at the first 8 KiB only, the one rule read_file and
    // the host's previews use too: the rest of the file is searched as text.
    let ws = Workspace::new();
    let mut text = "x\n".repeat(40_000).into_bytes();
    text.extend_from_slice(b"\0\nneedle\n");
    ws.write("late.txt", text);
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        "late.txt:40002:needle\n[1 matching line in 1 file; 1 file searched]\n"
    );
}

#[test]
fn search_and_read_file_agree_on_what_is_binary() {
    // A NUL 20,000 bytes in: past the 8 KiB probe, so read_file reads the
    // file as text, and search must search it rather than skip it.
    let ws = Workspace::new();
    let mut text = "x\n".repeat(10_000).into_bytes();
    text.extend_from_slice(b"\0\nneedle\n");
    ws.write("mid.txt", text);
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        "mid.txt:10002:needle\n[1 matching line in 1 file; 1 file searched]\n"
    );
    let read = ws
        .read_call(
            "read_file",
            json!({"path": "mid.txt", "offset": 10002, "limit": 1}),
        )
        .unwrap();
    assert!(read.contains("needle"), "{read}");
}

#[test]
fn lines_that_are_not_utf8_are_searched_as_bytes_and_shown_lossily() {
    let ws = Workspace::new();
    ws.write("latin1.txt", b"caf\xe9 needle\nplain\n");
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        "latin1.txt:1:caf\u{fffd} needle\n[1 matching line in 1 file; 1 file searched]\n"
    );
}

#[test]
fn a_match_never_spans_lines() {
    let ws = Workspace::new();
    ws.write("f.txt", "alpha\nbeta\nalpha beta\n");
    // \s and [^x] would cross the line break in a whole-buffer search.
    assert_eq!(
        search(&ws, json!({"pattern": r"alpha\s+beta"})),
        "f.txt:3:alpha beta\n[1 matching line in 1 file; 1 file searched]\n"
    );
    assert_eq!(
        search(&ws, json!({"pattern": r"a[^x]*b"})),
        "f.txt:3:alpha beta\n[1 matching line in 1 file; 1 file searched]\n"
    );
    expect_err(
        ws.read_call("search_files", json!({"pattern": "alpha\nbeta"})),
        ToolError::InvalidArguments,
        &["can only match a line break"],
    );
}

#[test]
fn a_regex_over_the_size_limit_is_refused_saying_why() {
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    expect_err(
        ws.read_call("search_files", json!({"pattern": r"\w{1000}"})),
        ToolError::InvalidArguments,
        &[
            r"regular expression '\w{1000}' is too large",
            "byte limit",
            "use a simpler pattern",
        ],
    );
    assert_contains(
        &search(&ws, json!({"pattern": r"[a-z]{1000}|a"})),
        "a.txt:1:a\n",
    );
}

#[test]
fn matches_past_the_128_kib_output_cap_are_said() {
    let ws = Workspace::new();
    // 100 lines of 2000 bytes: well under 500 matches, over 128 KiB.
    let line = format!("hit{}\n", "y".repeat(1997));
    ws.write("wide.txt", line.repeat(100));
    let text = search(&ws, json!({"pattern": "hit"}));
    let shown = text.lines().filter(|l| l.starts_with("wide.txt:")).count();
    assert!((60..100).contains(&shown), "{shown} lines shown");
    assert_contains(
        &text,
        "[stopped early: results are capped at 500 matches and 128 KiB",
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

#[test]
fn undecodable_name_is_skipped_and_counted_not_failing_the_directory() {
    let ws = undecodable_name_between_siblings();
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        "a.txt:1:needle\nz.txt:1:needle\n[2 matching lines in 2 files; 2 files searched]\n\
         [1 entry skipped: its name is not valid UTF-8]\n"
    );
}

#[test]
fn candidate_lines_found_by_an_inner_literal_are_checked_against_the_whole_pattern() {
    // `[a-z]+zzqq` is scanned for `zzqq` first; a line holding only the
    // literal is not a match.
    let ws = Workspace::new();
    ws.write("f.txt", "zzqq\nabczzqq\nx zzqq zzqq\nzz qq\nend fooZZQQ\n");
    assert_eq!(
        search(&ws, json!({"pattern": "[a-z]+zzqq"})),
        "f.txt:2:abczzqq\n[1 matching line in 1 file; 1 file searched]\n"
    );
    assert_eq!(
        search(&ws, json!({"pattern": "[a-z]+zzqq", "context": 1})),
        "f.txt-1-zzqq\nf.txt:2:abczzqq\nf.txt-3-x zzqq zzqq\n[1 matching line in 1 file; 1 file searched]\n"
    );
}
