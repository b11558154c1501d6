//! The one glob dialect, over workspace-relative paths.
//!
//! Supported: `*` (any run of characters within one path component), `?`
//! (one character), `[abc]`, `[a-z]`, `[!a]` / `[^a]` (one character from a
//! class), `{a,b}` (alternatives, expanded up front), `\` (the next
//! character is literal, braces included) and `**` as a whole component (any
//! number of components, including none). Matching works on components, so
//! `*` never crosses a `/`; `.` and empty components in a pattern vanish.
//!
//! # Key decision: a two-level star match, no recursion
//!
//! Both levels (components against `**`, characters against `*`) use the
//! classic greedy two-pointer wildcard match, which only ever backtracks to
//! the most recent star. That is correct for any element-wise predicate and
//! bounded by the product of the lengths, so no pattern can make a match
//! take exponential time; alternatives are capped at [`MAX_ALTERNATIVES`].
//! Callers cap pattern length (the tools and the gate want different caps).

use std::fmt;

use crate::path::WorkspacePath;

/// Most alternatives `{…}` may expand to: enough for any sensible pattern,
/// small enough that `{a,b}{c,d}…` cannot blow up.
pub const MAX_ALTERNATIVES: usize = 64;

/// Why a pattern does not compile. The `Display` text is the explanation
/// shown to whoever wrote the pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobProblem {
    /// The pattern is empty.
    Empty,
    /// The pattern starts with `/`.
    Absolute,
    /// A `}` closes no `{`.
    UnopenedBrace,
    /// A `{` is never closed.
    UnclosedBrace,
    /// `{…}` expands to more than [`MAX_ALTERNATIVES`] patterns.
    TooManyAlternatives,
    /// `**` is part of a component rather than all of it.
    PartialDoubleStar,
    /// A `[` is never closed.
    UnclosedClass,
}

impl fmt::Display for GlobProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "the pattern is empty",
            Self::Absolute => "patterns are relative to the search directory; drop the leading '/'",
            Self::UnopenedBrace => "'}' without a matching '{'",
            Self::UnclosedBrace => "'{' without a matching '}'",
            Self::TooManyAlternatives => "too many '{…}' alternatives (at most 64)",
            Self::PartialDoubleStar => "'**' must be a whole path component, as in 'src/**/*.rs'",
            Self::UnclosedClass => "'[' without a matching ']'",
        })
    }
}

impl std::error::Error for GlobProblem {}

/// A compiled glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    alternatives: Vec<Vec<Segment>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// `**`: any number of components.
    AnyDepth,
    /// One component pattern.
    Part(Vec<Token>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`
    AnyChar,
    /// `*`
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    /// Compiles `pattern`, saying what is wrong with a bad one.
    pub fn new(pattern: &str) -> Result<Self, GlobProblem> {
        if pattern.is_empty() {
            return Err(GlobProblem::Empty);
        }
        if pattern.starts_with('/') {
            return Err(GlobProblem::Absolute);
        }
        let mut alternatives = Vec::new();
        for expanded in expand_braces(pattern)? {
            let mut segments = Vec::new();
            for part in expanded.split('/').filter(|s| !s.is_empty() && *s != ".") {
                let segment = if part == "**" {
                    Segment::AnyDepth
                } else {
                    parse_part(part)?
                };
                // `**/**` means the same as `**`; one keeps matching linear.
                if !(segment == Segment::AnyDepth && segments.last() == Some(&Segment::AnyDepth)) {
                    segments.push(segment);
                }
            }
            alternatives.push(segments);
        }
        Ok(Self { alternatives })
    }

    /// Whether the pattern has a `/`, i.e. is anchored to directories rather
    /// than a bare file-name pattern.
    pub fn has_separator(pattern: &str) -> bool {
        pattern.contains('/')
    }

    /// The deepest path (in components) this glob can match, or `None` when
    /// a `**` lets it match at any depth. Walks use it to stop early.
    pub fn max_depth(&self) -> Option<usize> {
        let mut deepest = 0;
        for segs in &self.alternatives {
            if segs.iter().any(|s| matches!(s, Segment::AnyDepth)) {
                return None;
            }
            deepest = deepest.max(segs.len());
        }
        Some(deepest)
    }

    /// Whether `path` (components separated by `/`; empty components are
    /// skipped) matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matches_components(path.split('/').filter(|s| !s.is_empty()))
    }

    /// Whether a resolved path matches; the root has no components, so only
    /// patterns that can match nothing at all (`**`) cover it.
    pub fn matches_path(&self, path: &WorkspacePath) -> bool {
        self.matches_components(path.components())
    }

    fn matches_components<'a>(&self, parts: impl Iterator<Item = &'a str>) -> bool {
        let parts: Vec<Vec<char>> = parts.map(|p| p.chars().collect()).collect();
        self.alternatives.iter().any(|segs| {
            star_match(
                segs,
                &parts,
                |s| matches!(s, Segment::AnyDepth),
                |s, component| match s {
                    Segment::Part(tokens) => star_match(
                        tokens,
                        component,
                        |t| matches!(t, Token::Star),
                        Token::matches,
                    ),
                    Segment::AnyDepth => false,
                },
            )
        })
    }
}

impl Token {
    /// Whether this (non-star) token matches the one character `c`.
    fn matches(&self, c: &char) -> bool {
        match self {
            Self::AnyChar => true,
            Self::Literal(l) => l == c,
            Self::Class { negated, ranges } => {
                ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(c)) != *negated
            }
            Self::Star => false,
        }
    }
}

/// `text` with every character that has a meaning in a pattern escaped, so
/// the result matches exactly the one path `text` spells.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']' | '{' | '}' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The characters of `pattern` that are syntax, with their byte offsets:
/// every character but a `\` and the one it escapes.
fn unescaped(pattern: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut escaped = false;
    pattern.char_indices().filter(move |&(_, c)| {
        if escaped {
            escaped = false;
            false
        } else if c == '\\' {
            escaped = true;
            false
        } else {
            true
        }
    })
}

fn expand_braces(pattern: &str) -> Result<Vec<String>, GlobProblem> {
    let Some((open, _)) = unescaped(pattern).find(|&(_, c)| c == '{') else {
        if unescaped(pattern).any(|(_, c)| c == '}') {
            return Err(GlobProblem::UnopenedBrace);
        }
        return Ok(vec![pattern.to_owned()]);
    };
    let mut depth = 0usize;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, c) in unescaped(&pattern[open..]) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + i),
            _ => {}
        }
    }
    let close = close.ok_or(GlobProblem::UnclosedBrace)?;
    let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
    let mut bounds = vec![open];
    bounds.extend(commas);
    bounds.push(close);
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let choice = &pattern[w[0] + 1..w[1]];
        for rest in expand_braces(&format!("{head}{choice}{tail}"))? {
            out.push(rest);
            if out.len() > MAX_ALTERNATIVES {
                return Err(GlobProblem::TooManyAlternatives);
            }
        }
    }
    Ok(out)
}

fn parse_part(s: &str) -> Result<Segment, GlobProblem> {
    let mut tokens = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if chars.peek() == Some(&'*') {
                    return Err(GlobProblem::PartialDoubleStar);
                }
                tokens.push(Token::Star);
            }
            '?' => tokens.push(Token::AnyChar),
            '[' => {
                let negated = matches!(chars.peek(), Some('!' | '^'));
                if negated {
                    chars.next();
                }
                let mut ranges = Vec::new();
                let mut first = true;
                loop {
                    let Some(c) = chars.next() else {
                        return Err(GlobProblem::UnclosedClass);
                    };
                    if c == ']' && !first {
                        break;
                    }
                    first = false;
                    let lo = if c == '\\' {
                        chars.next().unwrap_or('\\')
                    } else {
                        c
                    };
                    if chars.peek() == Some(&'-') {
                        chars.next();
                        match chars.next() {
                            Some(']') => {
                                ranges.push((lo, lo));
                                ranges.push(('-', '-'));
                                break;
                            }
                            Some(hi) => ranges.push((lo, hi)),
                            None => return Err(GlobProblem::UnclosedClass),
                        }
                    } else {
                        ranges.push((lo, lo));
                    }
                }
                tokens.push(Token::Class { negated, ranges });
            }
            '\\' => tokens.push(Token::Literal(chars.next().unwrap_or('\\'))),
            c => tokens.push(Token::Literal(c)),
        }
    }
    Ok(Segment::Part(tokens))
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
