//! Rule patterns, and the gate's words for paths it refuses.
//!
//! A call path is resolved by [`goat_workpath::resolve`], the very function
//! the Pen tools call: the gate must read a path exactly as the tool will, or
//! a rule could be judged against one file while the tool opens another.
//!
//! Rule patterns go through the same resolution and are then compiled with
//! the shared [`Glob`] into components: `**` (any number of components,
//! including none) or a component glob of literal characters, `*` (any run
//! within the component) and `?` (one character).
//!
//! # Key decision: rule patterns keep their narrower dialect
//!
//! The shared dialect also has `[abc]`, `{a,b}` and `\` escapes, but rules
//! stored before the gate used it were written when those characters were
//! literal, and the database keeps no dialect per rule. So in a rule pattern
//! every character but `*` and `?` is literal (the gate escapes it before
//! compiling): a stored `pages/[id].tsx` still means that one file, not
//! `pages/i.tsx`. Widening rules to classes and alternatives needs a schema
//! migration that escapes the stored patterns first. There is no escape
//! syntax: a pattern that names a file with a literal `*` matches more than
//! that file, which errs towards the rule applying. Matching cost is bounded
//! by the shared star match and the caps [`MAX_PATH_BYTES`] and
//! [`MAX_PATTERN_BYTES`].

use std::fmt;

use goat_workpath::{Glob, PathProblem, WorkspacePath, resolve};

pub use goat_workpath::MAX_PATH_BYTES;

/// Longest rule pattern accepted, in bytes.
///
/// A pattern longer than the longest path it could meaningfully match is a
/// mistake; the cap keeps matching cost (pattern length times path length)
/// small.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// Explains the refusal of a call path `shown` (already quoted for display).
pub(crate) fn explain(problem: PathProblem, shown: &str) -> String {
    match problem {
        PathProblem::TooLong { len } => format!(
            "the path is {len} bytes long, more than the {MAX_PATH_BYTES} bytes a path may have"
        ),
        PathProblem::Nul => format!("the path {shown} contains a NUL byte"),
        PathProblem::Absolute => format!(
            "the path {shown} is absolute; paths are relative to the workspace root \
             (for example 'src/main.rs')"
        ),
        PathProblem::Escapes => format!(
            "the path {shown} leaves the workspace; only paths inside the workspace root \
             can be used"
        ),
    }
}

/// A compiled rule pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    /// The canonical spelling, as stored: `**` for the whole workspace.
    text: String,
    glob: Glob,
    /// For a pattern without wildcards (see [`covers_below`]): the pattern
    /// with `/**` added, matching the path and everything under it.
    subtree: Option<Glob>,
}

/// Whether a deny rule with this (canonical) pattern also covers
/// everything below the path it names: a pattern without wildcards, such
/// as `secrets` or `config/prod`, as gitignore reads a name.
///
/// # Key decision: deny rules only
///
/// `goat permissions deny '*' secrets` used to be accepted and protect
/// nothing inside `secrets/`: a deny rule that quietly protects less than
/// it says is the worst kind. Deny rules therefore cover the subtree.
/// Allow rules keep their exact meaning: the router remembers a person's
/// "always" as the exact path they were asked about, and that path need
/// not be a file (a write naming a directory, or a file that was never
/// created because the write failed); widening it would let later writes
/// under that name through unasked. So both kinds of rule err towards
/// asking: `dir/**` allows a directory's contents.
pub(crate) fn covers_below(pattern: &str) -> bool {
    pattern != "**" && !pattern.contains(['*', '?'])
}

impl Pattern {
    /// Compiles a rule pattern, saying what is wrong with a bad one.
    ///
    /// Empty, `.`, and `**` all mean the whole workspace. A trailing `/` is
    /// refused rather than normalised away: `secrets/` reads as "the
    /// directory and its contents" but would lexically mean the directory
    /// entry alone, and a deny rule that silently protects nothing is worse
    /// than an error.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let too_long =
            |len| format!("it is {len} bytes long, more than the {MAX_PATTERN_BYTES} allowed");
        if raw.len() > MAX_PATTERN_BYTES {
            return Err(too_long(raw.len()));
        }
        let resolved = resolve(raw).map_err(|problem| match problem {
            PathProblem::TooLong { len } => too_long(len),
            PathProblem::Nul => "it contains a NUL byte".to_owned(),
            PathProblem::Absolute => {
                "it is absolute; patterns are relative to the workspace root".to_owned()
            }
            PathProblem::Escapes => "it leaves the workspace".to_owned(),
        })?;
        if !resolved.is_root() && raw.ends_with('/') {
            let dir = resolved.as_str();
            return Err(format!(
                "it ends in '/'; write '{dir}/**' for the directory and everything under it, \
                 or '{dir}' for the directory alone"
            ));
        }
        // `resolve` has already applied `..` lexically; a `..` that removed a
        // wildcard component would make the pattern mean something no reader
        // expects (`src/*/..` is `src`, `**/..` is nothing sensible).
        let mut stack: Vec<&str> = Vec::new();
        for part in raw.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if stack.pop().is_some_and(|prev| prev.contains(['*', '?'])) {
                        return Err("it has '..' after a wildcard component".to_owned());
                    }
                }
                other => stack.push(other),
            }
        }
        let mut canonical: Vec<&str> = Vec::new();
        let mut glob = String::with_capacity(raw.len());
        for part in resolved.components() {
            if part == "**" {
                // `**/**` means the same as `**`; one is the stored spelling.
                if canonical.last() == Some(&"**") {
                    continue;
                }
            } else if part.contains("**") {
                return Err(format!(
                    "'**' must be a whole path component, but '{part}' has more in it"
                ));
            }
            if !canonical.is_empty() {
                glob.push('/');
            }
            canonical.push(part);
            glob.push_str(&literal_but_wildcards(part));
        }
        if canonical.is_empty() {
            canonical.push("**");
            glob.push_str("**");
        }
        let text = canonical.join("/");
        let subtree = if covers_below(&text) {
            Some(Glob::new(&format!("{glob}/**")).map_err(|problem| problem.to_string())?)
        } else {
            None
        };
        let glob = Glob::new(&glob).map_err(|problem| problem.to_string())?;
        Ok(Self {
            text,
            glob,
            subtree,
        })
    }

    /// Whether `path` is what the pattern names: how allow rules match.
    pub(crate) fn matches(&self, path: &WorkspacePath) -> bool {
        self.glob.matches_path(path)
    }

    /// Whether `path` is what the pattern names or, for a pattern without
    /// wildcards, below it: how deny rules match (see [`covers_below`]).
    pub(crate) fn covers(&self, path: &WorkspacePath) -> bool {
        match &self.subtree {
            Some(subtree) => subtree.matches_path(path),
            None => self.matches(path),
        }
    }
}

/// One component of a rule pattern in the shared glob syntax: `*` and `?`
/// stay wildcards, every other character is escaped to mean itself.
fn literal_but_wildcards(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut buf = [0; 4];
    for c in part.chars() {
        if matches!(c, '*' | '?') {
            out.push(c);
        } else {
            out.push_str(&goat_workpath::escape(c.encode_utf8(&mut buf)));
        }
    }
    out
}

impl fmt::Display for Pattern {
    /// The canonical spelling, as stored: `**` for the whole workspace.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Quotes a path or pattern for a message read by the model or shown at a
/// terminal.
///
/// # Security
///
/// Paths come from the model. Anything Rust would not print as itself
/// (control characters, bidirectional overrides, quotes) turns the quoting
/// into an escaped string literal, so the message is unambiguous. This is
/// not the terminal's protection: the CLI escapes every message again, with
/// its one escaper, before it prints it.
/// `text` in single quotes, or as a Rust string literal (escaped) when it
/// holds a quote or a character that is not printable as it is.
pub fn quoted(text: &str) -> String {
    if text
        .chars()
        .any(|c| c == '\'' || c.escape_debug().len() > 1)
    {
        format!("{text:?}")
    } else {
        format!("'{text}'")
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    // How paths resolve and how `*`, `?` and `**` match is the shared
    // crate's, tested by its one table (host/workpath/tests/table.rs); here
    // only what the gate adds.

    fn matches(pattern: &str, raw: &str) -> bool {
        Pattern::parse(pattern)
            .unwrap()
            .matches(&resolve(raw).unwrap())
    }

    #[test]
    fn patterns_are_stored_in_one_spelling() {
        for (raw, canonical) in [
            ("", "**"),
            (".", "**"),
            ("**", "**"),
            ("./**/**", "**"),
            ("a/..", "**"),
            ("./src//main.rs", "src/main.rs"),
            ("x/../src/**", "src/**"),
            ("src/**/**/*.rs", "src/**/*.rs"),
            ("pages/[id].tsx", "pages/[id].tsx"),
            ("a\\b{c,d}", "a\\b{c,d}"),
        ] {
            assert_eq!(Pattern::parse(raw).unwrap().to_string(), canonical, "{raw}");
        }
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        for (raw, says) in [
            ("/etc/**", "absolute"),
            ("../x", "leaves the workspace"),
            ("a\0", "NUL"),
            ("src/", "'src/**'"),
            ("src/a**", "whole path component"),
            ("src/*/../x", "after a wildcard"),
            ("**/..", "after a wildcard"),
            ("a/*/./../b", "after a wildcard"),
            (&long, "more than the 4096 allowed"),
        ] {
            let why = Pattern::parse(raw).unwrap_err();
            assert!(why.contains(says), "{raw:?}: {why}");
        }
    }

    #[test]
    fn rule_patterns_match_through_the_shared_glob() {
        assert!(matches("dir/**", "dir"));
        assert!(matches("dir/**", "./dir/x/../y"));
        assert!(!matches("dir/**", "dir2/x"));
        assert!(matches("**", "."));
        assert!(!matches("*", "."));
        assert!(matches("src/*.rs", "src/main.rs"));
        assert!(matches("a?c", "abc"));
    }

    #[test]
    fn a_pattern_without_wildcards_covers_its_subtree_for_denying() {
        let covers = |pattern: &str, raw: &str| {
            Pattern::parse(pattern)
                .unwrap()
                .covers(&resolve(raw).unwrap())
        };
        assert!(covers("secrets", "secrets"));
        assert!(covers("secrets", "secrets/prod.env"));
        assert!(covers("secrets", "./secrets/a/b/../c"));
        assert!(covers("config/prod", "config/prod/db.toml"));
        assert!(!covers("secrets", "secrets2/x"));
        assert!(!covers("secrets", "secret"));
        assert!(!covers("secrets", "."));
        assert!(!covers("config/prod", "config"));
        // With a wildcard, a pattern means what it says, nothing below.
        assert!(covers("secrets/*", "secrets/a"));
        assert!(!covers("secrets/*", "secrets/a/b"));
        assert!(!covers("*.env", "a.env/inner"));
        assert!(covers("secrets/**", "secrets/a/b"));
        // `[`, `{` and `\` are literal, so such a pattern has no wildcard.
        assert!(covers("pages/[id]", "pages/[id]/x.tsx"));
        // Matching exactly (allow rules) is unchanged.
        assert!(!matches("secrets", "secrets/prod.env"));
        assert!(matches("secrets", "secrets"));
    }

    #[test]
    fn only_star_and_question_mark_are_wildcards_in_a_rule() {
        // Stored rules were written when these were literal; they still are.
        assert!(matches("pages/[id].tsx", "pages/[id].tsx"));
        assert!(!matches("pages/[id].tsx", "pages/i.tsx"));
        assert!(matches("*.{rs,toml}", "x.{rs,toml}"));
        assert!(!matches("*.{rs,toml}", "x.rs"));
        assert!(matches("a\\*", "a\\b"));
        assert!(!matches("a\\*", "a*"));
        assert!(matches("[!a]", "[!a]"));
        assert!(!matches("[!a]", "b"));
    }

    #[test]
    fn quoting_escapes_what_could_forge_a_prompt() {
        assert_eq!(quoted("src/main.rs"), "'src/main.rs'");
        assert_eq!(quoted("a\nAllow? y"), "\"a\\nAllow? y\"");
        assert_eq!(quoted("a\u{1b}[2Jb"), "\"a\\u{1b}[2Jb\"");
        assert_eq!(quoted("a\u{202e}b"), "\"a\\u{202e}b\"");
        assert_eq!(quoted("it's"), "\"it's\"");
    }
}
