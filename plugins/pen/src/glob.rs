//! Glob patterns over workspace-relative paths.
//!
//! Supported: `*` (any run of characters within one path component), `?`
//! (one character), `[abc]`, `[a-z]`, `[!a]` / `[^a]` (one character from a
//! class), `{a,b}` (alternatives, expanded up front) and `**` as a whole
//! component (any number of components, including none). Matching works on
//! components, so `*` never crosses a `/`. Backtracking is bounded by the
//! pattern and path lengths (the classic two-pointer star match), so a
//! pattern cannot make a match take exponential time.

use crate::{ToolError, ToolResult};

/// Most alternatives `{…}` may expand to: enough for any sensible pattern,
/// small enough that `{a,b}{c,d}…` cannot blow up.
pub const MAX_ALTERNATIVES: usize = 64;

/// Longest pattern accepted.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// A compiled glob.
#[derive(Debug)]
pub struct Glob {
    alternatives: Vec<Vec<Segment>>,
}

#[derive(Debug)]
enum Segment {
    /// `**`: any number of components.
    AnyDepth,
    /// One component pattern.
    Part(Vec<Token>),
}

#[derive(Debug)]
enum Token {
    Literal(char),
    AnyChar,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    /// Compiles `pattern`, explaining what is wrong with a bad one.
    pub fn new(pattern: &str) -> ToolResult<Self> {
        if pattern.is_empty() {
            return Err(invalid(pattern, "the pattern is empty"));
        }
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(invalid(pattern, "the pattern is longer than 1024 bytes"));
        }
        if pattern.starts_with('/') {
            return Err(invalid(
                pattern,
                "patterns are relative to the search directory; drop the leading '/'",
            ));
        }
        let mut alternatives = Vec::new();
        for expanded in expand_braces(pattern)? {
            let segments = expanded
                .split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(|s| {
                    if s == "**" {
                        Ok(Segment::AnyDepth)
                    } else {
                        parse_part(s).map_err(|why| invalid(pattern, &why))
                    }
                })
                .collect::<ToolResult<Vec<_>>>()?;
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

    /// Whether `path` (components separated by `/`) matches.
    pub fn matches(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        self.alternatives
            .iter()
            .any(|segs| match_segments(segs, &parts))
    }
}

fn invalid(pattern: &str, why: &str) -> ToolError {
    ToolError::InvalidArguments(format!("invalid glob pattern '{pattern}': {why}"))
}

fn expand_braces(pattern: &str) -> ToolResult<Vec<String>> {
    let Some(open) = pattern.find('{') else {
        if pattern.contains('}') {
            return Err(invalid(pattern, "'}' without a matching '{'"));
        }
        return Ok(vec![pattern.to_owned()]);
    };
    let mut depth = 0usize;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, c) in pattern[open..].char_indices() {
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
    let close = close.ok_or_else(|| invalid(pattern, "'{' without a matching '}'"))?;
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
                return Err(invalid(pattern, "too many '{…}' alternatives (at most 64)"));
            }
        }
    }
    Ok(out)
}

fn parse_part(s: &str) -> Result<Segment, String> {
    let mut tokens = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if chars.peek() == Some(&'*') {
                    return Err(
                        "'**' must be a whole path component, as in 'src/**/*.rs'".to_owned()
                    );
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
                        return Err("'[' without a matching ']'".to_owned());
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
                            None => return Err("'[' without a matching ']'".to_owned()),
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

fn match_segments(segs: &[Segment], parts: &[&str]) -> bool {
    // Two-pointer match with one backtrack point for the last `**`, the same
    // shape as the star match below: linear in practice, never exponential.
    let (mut s, mut p) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    loop {
        if s < segs.len() {
            match &segs[s] {
                Segment::AnyDepth => {
                    back = Some((s, p));
                    s += 1;
                    continue;
                }
                Segment::Part(tokens) if p < parts.len() && match_part(tokens, parts[p]) => {
                    s += 1;
                    p += 1;
                    continue;
                }
                Segment::Part(_) => {}
            }
        } else if p == parts.len() {
            return true;
        }
        match back {
            Some((bs, bp)) if bp < parts.len() => {
                back = Some((bs, bp + 1));
                s = bs + 1;
                p = bp + 1;
            }
            _ => return false,
        }
    }
}

fn match_part(tokens: &[Token], name: &str) -> bool {
    let chars: Vec<char> = name.chars().collect();
    let (mut t, mut c) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    loop {
        if t < tokens.len() {
            let ok = match &tokens[t] {
                Token::Star => {
                    back = Some((t, c));
                    t += 1;
                    continue;
                }
                _ if c >= chars.len() => false,
                Token::AnyChar => true,
                Token::Literal(l) => *l == chars[c],
                Token::Class { negated, ranges } => {
                    ranges
                        .iter()
                        .any(|(lo, hi)| (*lo..=*hi).contains(&chars[c]))
                        != *negated
                }
            };
            if ok {
                t += 1;
                c += 1;
                continue;
            }
        } else if c == chars.len() {
            return true;
        }
        match back {
            Some((bt, bc)) if bc < chars.len() => {
                back = Some((bt, bc + 1));
                t = bt + 1;
                c = bc + 1;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str) -> bool {
        Glob::new(pattern).map(|g| g.matches(path)).unwrap_or(false)
    }

    #[test]
    fn glob_table() {
        let table = [
            ("*.rs", "main.rs", true),
            ("*.rs", "src/main.rs", false),
            ("**/*.rs", "main.rs", true),
            ("**/*.rs", "src/a/b/main.rs", true),
            ("src/**", "src/a/b", true),
            ("src/**/mod.rs", "src/mod.rs", true),
            ("src/**/mod.rs", "src/a/b/mod.rs", true),
            ("src/**/mod.rs", "tests/a/mod.rs", false),
            ("*.{rs,toml}", "Cargo.toml", true),
            ("*.{rs,toml}", "README.md", false),
            ("file?.txt", "file1.txt", true),
            ("file?.txt", "file10.txt", false),
            ("[a-c]*", "bar", true),
            ("[!a-c]*", "bar", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("**", "anything/at/all", true),
        ];
        for (pattern, path, want) in table {
            assert_eq!(m(pattern, path), want, "{pattern} ~ {path}");
        }
    }

    #[test]
    fn bad_patterns_say_why() {
        for bad in ["", "[abc", "{a,b", "a}", "/abs", "a**b"] {
            assert!(Glob::new(bad).is_err(), "{bad}");
        }
    }
}
