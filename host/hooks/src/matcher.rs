//! Which calls a hook is run for: Claude Code's matcher, read without a
//! regular-expression engine.
//!
//! Claude Code reads `*`, an empty matcher or none as every tool, a list
//! of names joined by `|` (`Edit|Write`) as those names exactly, and
//! anything else as a regular expression, of which hooks in the wild use
//! one form: a name ending in `.*` (`mcp__memory__.*`). GOAT reads the
//! same, with `*` or `.*` anywhere in an alternative standing for any run
//! of characters; any other pattern is refused when the hook is added,
//! with what to write instead, rather than read differently.
//!
//! For hooks written for Claude Code, GOAT's tools also match by the name
//! Claude Code gives the same tool ([`alias_of`]): `run_command` as
//! `Bash`, `write_file` (and `move_file`, which writes its destination)
//! as `Write`.

/// Claude Code's name for GOAT's tool `tool`, if it has one.
pub fn alias_of(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "run_command" => "Bash",
        "write_file" => "Write",
        "edit_file" => "Edit",
        "read_file" => "Read",
        "find_files" => "Glob",
        "search_files" => "Grep",
        "list_directory" => "LS",
        // It writes its destination: a guard on Write must see it.
        "move_file" => "Write",
        _ => return None,
    })
}

/// Why `matcher` cannot be read, if it cannot.
pub fn check_matcher(matcher: &str) -> Result<(), String> {
    if matcher.len() > 1024 {
        return Err("the matcher is longer than 1024 bytes".to_owned());
    }
    for alternative in matcher.split('|') {
        let plain = alternative.replace(".*", "").replace('*', "");
        if let Some(c) = plain
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            return Err(format!(
                "'{alternative}' holds '{}', which GOAT does not read in a matcher: write tool \
                 names (GOAT's, or Claude Code's such as Bash and Write) joined by '|', with '*' \
                 for any run of characters (mcp__memory__*)",
                c.escape_default()
            ));
        }
    }
    Ok(())
}

/// Whether a hook with `matcher` runs for a call of `tool`.
pub fn matches(matcher: Option<&str>, tool: &str) -> bool {
    let matcher = matcher.unwrap_or("").trim();
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    let names = std::iter::once(tool).chain(alias_of(tool));
    let names: Vec<&str> = names.collect();
    matcher
        .split('|')
        .any(|alternative| names.iter().any(|name| wildcard(alternative, name)))
}

/// Whether `name` is `pattern`, where `*` and `.*` stand for any run of
/// characters and everything else for itself.
fn wildcard(pattern: &str, name: &str) -> bool {
    let pattern = pattern.replace(".*", "*");
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_matchers_read_as_claude_code_reads_them() {
        for (matcher, tool, want) in [
            (None, "run_command", true),
            (Some(""), "write_file", true),
            (Some("*"), "anything", true),
            (Some("Bash"), "run_command", true),
            (Some("run_command"), "run_command", true),
            (Some("Bash"), "write_file", false),
            (Some("Edit|Write"), "write_file", true),
            (Some("Edit|Write"), "edit_file", true),
            (Some("Edit|Write"), "read_file", false),
            // Exact, not a substring: BashOutput is not Bash.
            (Some("Bash"), "BashOutput", false),
            (Some("mcp__memory__.*"), "mcp__memory__create", true),
            (Some("mcp__memory__*"), "mcp__other__create", false),
            (Some("*__write*"), "fs__write_text", true),
            (Some("a*b*c"), "abc", true),
            (Some("a*b*c"), "acb", false),
            (Some("ab*ba"), "aba", false),
        ] {
            assert_eq!(matches(matcher, tool), want, "{matcher:?} against {tool}");
        }
    }

    #[test]
    fn a_regex_goat_does_not_read_is_refused_with_what_to_write() {
        assert!(check_matcher("Edit|Write|mcp__x__.*|run_command").is_ok());
        let Err(why) = check_matcher("^Bash$") else {
            panic!("an anchored regex was taken");
        };
        assert!(
            why.contains("'^'") && why.contains("joined by '|'"),
            "{why}"
        );
        assert!(check_matcher("Notebook(Edit)?").is_err());
    }
}
