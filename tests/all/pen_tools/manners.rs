//! ripgrep's manners in the walking tools: `.gitignore` (nested, with
//! negation), `.ignore`, `.git/info/exclude`, hidden entries, what the
//! result says it left out, and `include_ignored` to turn it all off.

use super::*;

fn search(ws: &Workspace, args: Value) -> String {
    ok(ws.read_call("search_files", args))
}

fn find(ws: &Workspace, args: Value) -> String {
    ok(ws.read_call("find_files", args))
}

fn list(ws: &Workspace, args: Value) -> String {
    ok(ws.read_call("list_directory", args))
}

/// The note a result ends with when the walk passed over `ignored`
/// ignored entries and `hidden` hidden ones (both non-zero).
fn note(ignored: usize, hidden: usize) -> String {
    format!(
        "[not shown: {ignored} entries ignored (.gitignore, .ignore, .git/info/exclude) and \
         {hidden} hidden (name starts with '.'); pass include_ignored: true to include them]\n"
    )
}

#[test]
fn nested_gitignore_applies_below_its_own_directory() {
    let ws = Workspace::new();
    ws.write("src/.gitignore", "generated.rs\n")
        .write("src/main.rs", "needle\n")
        .write("src/generated.rs", "needle\n")
        .write("src/deep/generated.rs", "needle\n")
        .write("generated.rs", "needle\n");
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        format!(
            "generated.rs:1:needle\nsrc/main.rs:1:needle\n\
             [2 matching lines in 2 files; 2 files searched]\n{}",
            note(2, 1)
        )
    );
}

#[test]
fn negation_keeps_a_file_an_earlier_pattern_ignored() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.log\n!keep.log\n")
        .write("debug.log", "needle\n")
        .write("keep.log", "needle\n");
    assert_eq!(
        find(&ws, json!({"pattern": "*.log"})),
        format!("keep.log\n{}", note(1, 1).replace("1 entries", "1 entry"))
    );
}

#[test]
fn dot_ignore_is_honoured_and_wins_over_gitignore() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.md\n")
        .write(".ignore", "!readme.md\nscratch/\n")
        .write("readme.md", "needle\n")
        .write("other.md", "needle\n")
        .write("scratch/x.txt", "needle\n");
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        format!(
            "readme.md:1:needle\n[1 matching line in 1 file; 1 file searched]\n{}",
            note(2, 2)
        )
    );
}

#[test]
fn git_info_exclude_is_honoured() {
    let ws = Workspace::new();
    ws.write(".git/info/exclude", "# local files\nlocal.txt\n")
        .write("local.txt", "needle\n")
        .write("shared.txt", "needle\n");
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        "shared.txt:1:needle\n[1 matching line in 1 file; 1 file searched]\n\
         [not shown: 1 entry ignored (.gitignore, .ignore, .git/info/exclude); pass \
         include_ignored: true to include them]\n"
    );
}

#[test]
fn hidden_entries_are_skipped_unless_the_pattern_names_them() {
    let ws = Workspace::new();
    ws.write(".env", "needle\n")
        .write(".github/ci.yml", "needle\n")
        .write("app.yml", "needle\n");
    let hidden_2 = "[not shown: 2 entries hidden (name starts with '.'); pass \
                    include_ignored: true to include them]\n";
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        format!("app.yml:1:needle\n[1 matching line in 1 file; 1 file searched]\n{hidden_2}")
    );
    assert_eq!(
        find(&ws, json!({"pattern": "**/*.yml"})),
        format!("app.yml\n{hidden_2}")
    );
    assert_eq!(
        find(&ws, json!({"pattern": ".github/**"})),
        ".github/ci.yml\n"
    );
    assert_eq!(
        search(&ws, json!({"pattern": "needle", "glob": ".github/*.yml"})),
        ".github/ci.yml:1:needle\n[1 matching line in 1 file; 1 file searched]\n"
    );
    // A hidden directory named as the path is searched: it was named.
    assert_eq!(
        search(&ws, json!({"pattern": "needle", "path": ".github"})),
        ".github/ci.yml:1:needle\n[1 matching line in 1 file; 1 file searched]\n"
    );
}

/// `.gitignore` naming `target/` and `*.log`, with `node_modules/` holding
/// many files, and one hidden file: a repository as a model meets it.
fn repository() -> Workspace {
    let ws = Workspace::new();
    ws.write(".gitignore", "target/\nnode_modules/\n*.log\n")
        .write(".env", "needle\n")
        .write("src/main.rs", "needle\n")
        .write("target/debug/out.rs", "needle\n")
        .write("build.log", "needle\n");
    for i in 0..20 {
        ws.write(&format!("node_modules/m{i}/index.js"), "needle\n");
    }
    ws
}

#[test]
fn an_ignored_directory_counts_once_and_is_searched_when_named() {
    let ws = repository();
    assert_eq!(
        search(&ws, json!({"pattern": "needle"})),
        format!(
            "src/main.rs:1:needle\n[1 matching line in 1 file; 1 file searched]\n{}",
            note(3, 2)
        )
    );
    assert_eq!(
        search(&ws, json!({"pattern": "needle", "path": "target"})),
        "target/debug/out.rs:1:needle\n[1 matching line in 1 file; 1 file searched]\n"
    );
}

#[test]
fn a_search_below_the_root_honours_the_gitignore_above_it() {
    let ws = Workspace::new();
    ws.write(".gitignore", "*.gen.rs\n")
        .write("src/a.rs", "needle\n")
        .write("src/b.gen.rs", "needle\n");
    assert_eq!(
        search(&ws, json!({"pattern": "needle", "path": "src"})),
        "src/a.rs:1:needle\n[1 matching line in 1 file; 1 file searched]\n\
         [not shown: 1 entry ignored (.gitignore, .ignore, .git/info/exclude); pass \
         include_ignored: true to include them]\n"
    );
}

#[test]
fn list_directory_and_find_files_say_what_they_left_out() {
    let ws = repository();
    assert_eq!(list(&ws, json!({})), format!("src/  (dir)\n{}", note(3, 2)));
    assert_eq!(
        find(&ws, json!({"pattern": "**/*.rs"})),
        format!("src/main.rs\n{}", note(3, 2))
    );
}

#[test]
fn include_ignored_walks_everything() {
    let ws = repository();
    let text = search(&ws, json!({"pattern": "needle", "include_ignored": true}));
    assert_contains(
        &text,
        "[24 matching lines in 24 files; 25 files searched]\n",
    );
    assert!(!text.contains("not shown"), "{text}");
    assert_contains(&text, ".env:1:needle\n");
    assert_contains(&text, "node_modules/m9/index.js:1:needle\n");
    assert_eq!(
        find(&ws, json!({"pattern": "**/*.rs", "include_ignored": true})),
        "src/main.rs\ntarget/debug/out.rs\n"
    );
    assert_eq!(
        list(&ws, json!({"include_ignored": true})),
        ".env  (file, 7 bytes)\n.gitignore  (file, 28 bytes)\nbuild.log  (file, 7 bytes)\n\
         node_modules/  (dir)\nsrc/  (dir)\ntarget/  (dir)\n"
    );
}
