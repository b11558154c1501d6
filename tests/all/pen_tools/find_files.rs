//! `find_files`: glob patterns under a base directory, sorted results,
//! symlinks, and the match cap.

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

#[test]
fn undecodable_name_is_skipped_and_counted_not_failing_the_directory() {
    let ws = undecodable_name_between_siblings();
    assert_eq!(
        find(&ws, json!({"pattern": "*.txt"})),
        "a.txt\nz.txt\n[1 entry skipped: its name is not valid UTF-8]\n"
    );
    // A directory whose own name cannot be decoded is skipped whole.
    write_raw_name(&ws, "src", b"b\xffd/inner.txt", "");
    ws.write("src/ok.txt", "");
    assert_eq!(
        find(&ws, json!({"pattern": "**/*.txt"})),
        "a.txt\nsrc/ok.txt\nz.txt\n[2 entries skipped: their names are not valid UTF-8]\n"
    );
}

#[test]
fn no_match_still_says_entries_were_skipped() {
    let ws = undecodable_name_between_siblings();
    assert_eq!(
        find(&ws, json!({"pattern": "**/*.rs"})),
        "No files match '**/*.rs'.\n[1 entry skipped: its name is not valid UTF-8]\n"
    );
}
