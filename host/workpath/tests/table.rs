//! The one table of paths and patterns. The permission gate and the Pen
//! tools both call [`resolve`] and [`Glob`] as they are (the gate adds only
//! its own length cap and messages, the Pen its messages), so this table
//! guards what both of them read a path and a pattern as.

#![expect(clippy::unwrap_used, reason = "tests")]

use goat_workpath::{
    Glob, GlobProblem, MAX_ALTERNATIVES, MAX_PATH_BYTES, PathProblem, WorkspacePath, escape,
    resolve,
};

fn path(raw: &str) -> WorkspacePath {
    resolve(raw).unwrap()
}

/// A pattern against a resolved path, as the gate matches.
fn covers(pattern: &str, raw: &str) -> bool {
    Glob::new(pattern).unwrap().matches_path(&path(raw))
}

/// A pattern against a relative path text, as the Pen's walks match.
fn m(pattern: &str, path: &str) -> bool {
    Glob::new(pattern).map(|g| g.matches(path)).unwrap_or(false)
}

#[test]
fn equivalent_spellings_resolve_to_one_path() {
    for raw in ["a", "./a", "a/", "sub/../a", "./sub/./../a//"] {
        assert_eq!(path(raw).as_str(), "a", "{raw}");
    }
    for raw in ["a/b", "./a/./b", "a//b/", "a/x/../b", "x/../a/b"] {
        assert_eq!(path(raw).as_str(), "a/b", "{raw}");
    }
    for raw in ["", ".", "./", "a/..", "a/b/../.."] {
        assert_eq!(path(raw), WorkspacePath::root(), "{raw}");
        assert!(path(raw).is_root(), "{raw}");
        assert_eq!(path(raw).as_str(), ".", "{raw}");
    }
}

#[test]
fn paths_that_cannot_name_a_place_inside_the_workspace_are_refused() {
    for (raw, problem) in [
        ("..", PathProblem::Escapes),
        ("../x", PathProblem::Escapes),
        ("a/../../x", PathProblem::Escapes),
        ("./..", PathProblem::Escapes),
        ("/etc/passwd", PathProblem::Absolute),
        ("/", PathProblem::Absolute),
        ("\\x", PathProblem::Absolute),
        ("C:x", PathProblem::Absolute),
        ("c:/x", PathProblem::Absolute),
        ("a\0b", PathProblem::Nul),
        // NUL is found before the absolute prefix, length before both.
        ("/a\0", PathProblem::Nul),
    ] {
        assert_eq!(resolve(raw), Err(problem), "{raw:?}");
    }
    let long = "a/".repeat(MAX_PATH_BYTES);
    assert_eq!(
        resolve(&long),
        Err(PathProblem::TooLong { len: long.len() })
    );
    let longest = "a".repeat(MAX_PATH_BYTES);
    assert!(resolve(&longest).is_ok());
    // A name that merely contains a colon or a backslash is a plain name.
    assert_eq!(path("ab:c").as_str(), "ab:c");
    assert_eq!(path("a\\b").as_str(), "a\\b");
}

#[test]
fn resolved_paths_walk_and_split() {
    let root = WorkspacePath::root();
    assert_eq!(root.join("a").as_str(), "a");
    assert_eq!(path("a").join("b").as_str(), "a/b");
    assert_eq!(root.split_last(), None);
    assert_eq!(path("a").split_last(), Some((root.clone(), "a")));
    assert_eq!(path("a/b/c").split_last(), Some((path("a/b"), "c")));
    assert_eq!(path("a/b/c").parent(), Some("a/b"));
    assert_eq!(path("a").parent(), None);
    assert_eq!(root.parent(), None);
    assert_eq!(path("a/b").strip_prefix(&root), Some("a/b"));
    assert_eq!(path("a/b").strip_prefix(&path("a")), Some("b"));
    assert_eq!(path("ab/c").strip_prefix(&path("a")), None);
    assert_eq!(root.components().count(), 0);
    assert_eq!(path("a/b").components().collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn double_star_covers_the_directory_and_everything_under_it() {
    for (pattern, raw, want) in [
        ("dir/**", "dir", true),
        ("dir/**", "dir/x", true),
        ("dir/**", "dir/x/y/z", true),
        ("dir/**", "dir2/x", false),
        ("dir/**", "di", false),
        ("dir/**", ".", false),
        ("**", ".", true),
        ("**", "a/b/c", true),
        ("**/**", "a", true),
        ("**/x.rs", "x.rs", true),
        ("**/x.rs", "a/b/x.rs", true),
        ("**/x.rs", "a/b/x.rsx", false),
        ("a/**/b/**/c", "a/b/c", true),
        ("a/**/b/**/c", "a/x/b/y/b/z/c", true),
        ("a/**/b/**/c", "a/x/c", false),
        ("secrets", "secrets/key", false),
    ] {
        assert_eq!(covers(pattern, raw), want, "{pattern} ~ {raw}");
    }
}

#[test]
fn star_and_question_mark_stay_within_one_component() {
    for (pattern, raw, want) in [
        ("src/*.rs", "src/main.rs", true),
        ("src/*.rs", "src/bin/main.rs", false),
        ("*", "a/b", false),
        ("*", "a", true),
        ("*", ".", false),
        ("a?c", "abc", true),
        ("a?c", "ac", false),
        ("a?c", "a/c", false),
        ("v?", "v10", false),
        ("*a*b*", "xxaxxbxx", true),
        ("*a*b*", "xxbxxaxx", false),
        (".*", ".env", true),
        // `?` is one character, not one byte.
        ("é?", "éß", true),
    ] {
        assert_eq!(covers(pattern, raw), want, "{pattern} ~ {raw}");
    }
}

#[test]
fn classes_alternatives_and_escapes() {
    let table = [
        ("*.rs", "main.rs", true),
        ("*.rs", "src/main.rs", false),
        ("**/*.rs", "main.rs", true),
        ("**/*.rs", "src/a/b/main.rs", true),
        ("src/**", "src/a/b", true),
        ("src/**/mod.rs", "src/mod.rs", true),
        ("src/**/mod.rs", "src/a/b/mod.rs", true),
        ("src/**/mod.rs", "tests/a/mod.rs", false),
        ("./src/*.rs", "src/a.rs", true),
        ("*.{rs,toml}", "Cargo.toml", true),
        ("*.{rs,toml}", "README.md", false),
        ("{src,tests}/**/*.rs", "tests/all/main.rs", true),
        ("{a,{b,c}}x", "cx", true),
        ("file?.txt", "file1.txt", true),
        ("file?.txt", "file10.txt", false),
        ("[a-c]*", "bar", true),
        ("[!a-c]*", "bar", false),
        ("[^a-c]*", "dar", true),
        ("[]]", "]", true),
        ("[a-]", "-", true),
        ("a*b*c", "aXbYbZc", true),
        ("a*b*c", "aXbYbZ", false),
        ("**", "anything/at/all", true),
        ("pages/\\[id].tsx", "pages/[id].tsx", true),
        ("pages/\\[id].tsx", "pages/i.tsx", false),
        ("\\{a,b\\}", "{a,b}", true),
        ("\\{a,b\\}", "a", false),
        ("a\\*", "a*", true),
        ("a\\*", "ab", false),
    ];
    for (pattern, path, want) in table {
        assert_eq!(m(pattern, path), want, "{pattern} ~ {path}");
    }
}

#[test]
fn escaping_a_path_gives_a_pattern_of_exactly_that_path() {
    for name in [
        "pages/[id].tsx",
        "a{b,c}",
        "x*y?z",
        "back\\slash",
        "plain.rs",
    ] {
        let glob = Glob::new(&escape(name)).unwrap();
        assert!(glob.matches(name), "{name}");
    }
    assert!(!Glob::new(&escape("x*")).unwrap().matches("xy"));
    assert!(!Glob::new(&escape("[ab]")).unwrap().matches("a"));
}

#[test]
fn bad_patterns_say_why() {
    for (bad, problem) in [
        ("", GlobProblem::Empty),
        ("[abc", GlobProblem::UnclosedClass),
        ("{a,b", GlobProblem::UnclosedBrace),
        ("a}", GlobProblem::UnopenedBrace),
        ("/abs", GlobProblem::Absolute),
        ("a**b", GlobProblem::PartialDoubleStar),
        ("src/a**", GlobProblem::PartialDoubleStar),
    ] {
        assert_eq!(Glob::new(bad), Err(problem), "{bad}");
    }
    let many = "{a,b}".repeat(7);
    assert!(2usize.pow(7) > MAX_ALTERNATIVES);
    assert_eq!(Glob::new(&many), Err(GlobProblem::TooManyAlternatives));
}

#[test]
fn depth_bounds_walks() {
    assert_eq!(Glob::new("*.rs").unwrap().max_depth(), Some(1));
    assert_eq!(Glob::new("{a,b/c}").unwrap().max_depth(), Some(2));
    assert_eq!(Glob::new("src/**").unwrap().max_depth(), None);
    assert!(Glob::has_separator("src/*.rs"));
    assert!(!Glob::has_separator("*.rs"));
}

#[test]
fn adversarial_patterns_finish_quickly() {
    // Exponential backtracking would never finish these; the greedy match
    // is at worst the product of the lengths.
    let pattern = format!("{}b", "*a".repeat(500));
    let text = "a".repeat(2000);
    assert!(!covers(&pattern, &text));
    assert!(covers(&"*a".repeat(500), &text));
    let pattern = format!("{}x", "**/a/".repeat(200));
    let text = "a/".repeat(1000);
    assert!(!covers(&pattern, &text));
    assert!(covers(&pattern, &format!("{text}x")));
}

#[test]
fn windows_1252_is_decoded_as_the_whatwg_standard_says_for_every_byte() {
    for byte in 0..=255u8 {
        let one = [byte];
        let (expected, _, had_errors) = encoding_rs::WINDOWS_1252.decode(&one);
        assert!(!had_errors, "{byte:#x}");
        assert_eq!(
            goat_workpath::encoding::decode_windows_1252(&[byte]),
            expected,
            "byte {byte:#x}"
        );
    }
}
