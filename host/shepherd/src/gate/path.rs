//! Workspace paths and rule patterns, compared lexically and component-wise.
//!
//! A call path is resolved the way the Pen resolves it (`goat-pen`'s
//! `WorkPath`): `/` is the only separator, `.` and empty components vanish,
//! `..` removes the previous component, and anything that cannot name a place
//! inside the workspace (absolute, drive-prefixed, NUL, `..` past the root) is
//! refused. The gate must read a path exactly as the tool will, or a rule could
//! be judged against one file while the tool opens another; refusing at least
//! everything the Pen refuses keeps the two in step.
//!
//! Rule patterns go through the same resolution and are then compiled into
//! components: `**` (any number of components, including none) or a component
//! glob of literal characters, `*` (any run within the component) and `?`
//! (one character). There is no escape syntax and no character classes: a
//! pattern that names a file with a literal `*` matches more than that file,
//! which errs towards the rule applying.
//!
//! # Key decision: a two-level star match, no recursion
//!
//! Both levels (components against `**`, characters against `*`) use the
//! classic greedy two-pointer wildcard match, which only ever backtracks to
//! the most recent star. That is correct for any element-wise predicate and
//! bounded by the product of the lengths, so no pattern can make a decision
//! take exponential time; the lengths themselves are capped by
//! [`MAX_PATH_BYTES`] and [`MAX_PATTERN_BYTES`].

use std::fmt;

/// Longest call path the gate will judge, in bytes.
///
/// Linux's `PATH_MAX` is 4096, so a longer path cannot be opened anyway; the
/// cap also bounds the work of matching a model-supplied string.
pub const MAX_PATH_BYTES: usize = 4096;

/// Longest rule pattern accepted, in bytes.
///
/// A pattern longer than the longest path it could meaningfully match is a
/// mistake; the cap keeps matching cost (pattern length times path length)
/// small.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// Why a raw path cannot name a place inside the workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathProblem {
    TooLong { len: usize },
    Nul,
    Absolute,
    Escapes,
}

impl PathProblem {
    /// Explains the refusal of `shown` (already quoted for display).
    pub(crate) fn explain(self, shown: &str) -> String {
        match self {
            Self::TooLong { len } => format!(
                "the path is {len} bytes long, more than the {MAX_PATH_BYTES} bytes a path may have"
            ),
            Self::Nul => format!("the path {shown} contains a NUL byte"),
            Self::Absolute => format!(
                "the path {shown} is absolute; paths are relative to the workspace root \
                 (for example 'src/main.rs')"
            ),
            Self::Escapes => format!(
                "the path {shown} leaves the workspace; only paths inside the workspace root \
                 can be used"
            ),
        }
    }
}

/// Resolves `raw` into its components inside the workspace (empty for the
/// root).
fn resolve(raw: &str, limit: usize) -> Result<Vec<&str>, PathProblem> {
    if raw.len() > limit {
        return Err(PathProblem::TooLong { len: raw.len() });
    }
    if raw.contains('\0') {
        return Err(PathProblem::Nul);
    }
    if raw.starts_with('/') || raw.starts_with('\\') || has_drive_prefix(raw) {
        return Err(PathProblem::Absolute);
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathProblem::Escapes);
                }
            }
            other => parts.push(other),
        }
    }
    Ok(parts)
}

/// `C:...` is a drive path on Windows; the Pen refuses it, so must the gate.
fn has_drive_prefix(raw: &str) -> bool {
    let b = raw.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// A call path resolved inside the workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WorkspacePath {
    /// Canonical spelling: components joined by `/`, `.` for the root.
    text: String,
    /// Each component's characters, split once so matching does not.
    components: Vec<Vec<char>>,
}

impl WorkspacePath {
    /// Resolves a raw path value from a tool call.
    pub(crate) fn parse(raw: &str) -> Result<Self, PathProblem> {
        let parts = resolve(raw, MAX_PATH_BYTES)?;
        Ok(Self::from_parts(&parts))
    }

    /// The workspace root, which is what a call without path fields is
    /// judged as: only patterns covering the whole workspace match it.
    pub(crate) fn root() -> Self {
        Self::from_parts(&[])
    }

    fn from_parts(parts: &[&str]) -> Self {
        let text = if parts.is_empty() {
            ".".to_owned()
        } else {
            parts.join("/")
        };
        Self {
            text,
            components: parts.iter().map(|p| p.chars().collect()).collect(),
        }
    }

    /// The canonical spelling, `.` for the root.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The parent directory's canonical spelling, `None` at the top level.
    pub(crate) fn parent(&self) -> Option<&str> {
        self.text.rsplit_once('/').map(|(parent, _)| parent)
    }
}

/// A compiled rule pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// `**`: any number of components, including none.
    AnyDepth,
    /// One component's glob.
    Part(Vec<Token>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`
    AnyChar,
    /// `*`
    Star,
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
        let parts = resolve(raw, MAX_PATTERN_BYTES).map_err(|problem| match problem {
            PathProblem::TooLong { len } => {
                format!("it is {len} bytes long, more than the {MAX_PATTERN_BYTES} allowed")
            }
            PathProblem::Nul => "it contains a NUL byte".to_owned(),
            PathProblem::Absolute => {
                "it is absolute; patterns are relative to the workspace root".to_owned()
            }
            PathProblem::Escapes => "it leaves the workspace".to_owned(),
        })?;
        if !parts.is_empty() && raw.ends_with('/') {
            let dir = parts.join("/");
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
        let mut segments: Vec<Segment> = Vec::with_capacity(parts.len().max(1));
        for part in parts {
            if part == "**" {
                // `**/**` means the same as `**`; one keeps matching linear.
                if segments.last() != Some(&Segment::AnyDepth) {
                    segments.push(Segment::AnyDepth);
                }
            } else if part.contains("**") {
                return Err(format!(
                    "'**' must be a whole path component, but '{part}' has more in it"
                ));
            } else {
                segments.push(Segment::Part(
                    part.chars()
                        .map(|c| match c {
                            '*' => Token::Star,
                            '?' => Token::AnyChar,
                            other => Token::Literal(other),
                        })
                        .collect(),
                ));
            }
        }
        if segments.is_empty() {
            segments.push(Segment::AnyDepth);
        }
        Ok(Self { segments })
    }

    /// Whether `path` is covered by the pattern.
    pub(crate) fn matches(&self, path: &WorkspacePath) -> bool {
        star_match(
            &self.segments,
            &path.components,
            |s| matches!(s, Segment::AnyDepth),
            |s, component| match s {
                Segment::Part(tokens) => star_match(
                    tokens,
                    component,
                    |t| matches!(t, Token::Star),
                    |t, c| match t {
                        Token::AnyChar => true,
                        Token::Literal(l) => l == c,
                        Token::Star => false,
                    },
                ),
                Segment::AnyDepth => false,
            },
        )
    }
}

/// Greedy wildcard matching with one backtrack point, used at both levels:
/// `**` over path components, `*` over the characters of one. After a star
/// it remembers where the pattern resumes and which text item the star
/// would swallow next if the rest fails; linear in practice, never
/// exponential.
fn star_match<P, T>(
    pattern: &[P],
    text: &[T],
    is_star: impl Fn(&P) -> bool,
    one: impl Fn(&P, &T) -> bool,
) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(item) if is_star(item) => {
                star = Some((p + 1, t));
                p += 1;
            }
            Some(item) if one(item, &text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((resume, swallowed)) => {
                    star = Some((resume, swallowed + 1));
                    p = resume;
                    t = swallowed + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(is_star)
}

impl fmt::Display for Pattern {
    /// The canonical spelling, as stored: `**` for the whole workspace.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            match segment {
                Segment::AnyDepth => f.write_str("**")?,
                Segment::Part(tokens) => {
                    for token in tokens {
                        match token {
                            Token::Literal(c) => write!(f, "{c}")?,
                            Token::AnyChar => f.write_str("?")?,
                            Token::Star => f.write_str("*")?,
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Quotes a path or pattern for a message read by the model or shown at a
/// terminal.
///
/// # Security
///
/// Paths come from the model. Control characters are escaped so a path
/// cannot forge lines or terminal escape sequences in an approval prompt.
pub(crate) fn quoted(text: &str) -> String {
    if text.chars().any(|c| c.is_control() || c == '\'') {
        format!("{text:?}")
    } else {
        format!("'{text}'")
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn path(raw: &str) -> WorkspacePath {
        WorkspacePath::parse(raw).unwrap()
    }

    fn matches(pattern: &str, raw: &str) -> bool {
        Pattern::parse(pattern).unwrap().matches(&path(raw))
    }

    #[test]
    fn equivalent_spellings_resolve_to_one_path() {
        for raw in ["a", "./a", "a/", "sub/../a", "./sub/./../a//"] {
            assert_eq!(path(raw).as_str(), "a", "{raw}");
        }
        for raw in ["", ".", "./", "a/.."] {
            assert_eq!(path(raw), WorkspacePath::root(), "{raw}");
        }
    }

    #[test]
    fn paths_the_pen_refuses_are_refused() {
        for (raw, problem) in [
            ("..", PathProblem::Escapes),
            ("../x", PathProblem::Escapes),
            ("a/../../x", PathProblem::Escapes),
            ("/etc/passwd", PathProblem::Absolute),
            ("\\x", PathProblem::Absolute),
            ("C:x", PathProblem::Absolute),
            ("a\0b", PathProblem::Nul),
        ] {
            assert_eq!(WorkspacePath::parse(raw), Err(problem), "{raw:?}");
        }
        let long = "a/".repeat(MAX_PATH_BYTES);
        assert_eq!(
            WorkspacePath::parse(&long),
            Err(PathProblem::TooLong { len: long.len() })
        );
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
        ] {
            assert_eq!(Pattern::parse(raw).unwrap().to_string(), canonical, "{raw}");
        }
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        for (raw, says) in [
            ("/etc/**", "absolute"),
            ("../x", "leaves the workspace"),
            ("a\0", "NUL"),
            ("src/", "'src/**'"),
            ("src/a**", "whole path component"),
            ("src/*/../x", "after a wildcard"),
            ("**/..", "after a wildcard"),
            ("a/*/./../b", "after a wildcard"),
        ] {
            let why = Pattern::parse(raw).unwrap_err();
            assert!(why.contains(says), "{raw:?}: {why}");
        }
    }

    #[test]
    fn double_star_covers_the_directory_and_everything_under_it() {
        assert!(matches("dir/**", "dir"));
        assert!(matches("dir/**", "dir/x"));
        assert!(matches("dir/**", "dir/x/y/z"));
        assert!(!matches("dir/**", "dir2/x"));
        assert!(!matches("dir/**", "di"));
        assert!(!matches("dir/**", "."));
        assert!(matches("**", "."));
        assert!(matches("**", "a/b/c"));
        assert!(matches("**/x.rs", "x.rs"));
        assert!(matches("**/x.rs", "a/b/x.rs"));
        assert!(!matches("**/x.rs", "a/b/x.rsx"));
        assert!(matches("a/**/b/**/c", "a/b/c"));
        assert!(matches("a/**/b/**/c", "a/x/b/y/b/z/c"));
        assert!(!matches("a/**/b/**/c", "a/x/c"));
    }

    #[test]
    fn star_and_question_mark_stay_within_one_component() {
        assert!(matches("src/*.rs", "src/main.rs"));
        assert!(!matches("src/*.rs", "src/bin/main.rs"));
        assert!(!matches("*", "a/b"));
        assert!(matches("*", "a"));
        assert!(!matches("*", "."));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(!matches("a?c", "a/c"));
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(!matches("*a*b*", "xxbxxaxx"));
        assert!(matches(".*", ".env"));
        assert!(matches("é?", "éß"), "? is one character, not one byte");
    }

    #[test]
    fn adversarial_patterns_finish_quickly() {
        // Exponential backtracking would never finish these; the greedy match
        // is at worst the product of the lengths.
        let pattern = format!("{}b", "*a".repeat(500));
        let text = "a".repeat(2000);
        assert!(!matches(&pattern, &text));
        assert!(matches(&"*a".repeat(500), &text));
        let pattern = format!("{}x", "**/a/".repeat(200));
        let text = "a/".repeat(1000);
        assert!(!matches(&pattern, &text));
        assert!(matches(&pattern, &format!("{text}x")));
    }

    #[test]
    fn quoting_escapes_what_could_forge_a_prompt() {
        assert_eq!(quoted("src/main.rs"), "'src/main.rs'");
        assert_eq!(quoted("a\nAllow? y"), "\"a\\nAllow? y\"");
        assert_eq!(quoted("a\u{1b}[2Jb"), "\"a\\u{1b}[2Jb\"");
        assert_eq!(quoted("it's"), "\"it's\"");
    }
}
