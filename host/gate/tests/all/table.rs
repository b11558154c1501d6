//! The policy as a table: (rules, call) -> decision, checked on the kind of
//! decision and on what its reason or prompt says.

use goat_gate::{
    Access, Decision, Effect, GateRequest, Interactive, Rule, Scope, WritePolicy, decide_with_rules,
};

const NOW: i64 = 1_000;

fn rule(id: i64, tool: Option<&str>, pattern: &str, access: Access, effect: Effect) -> Rule {
    Rule {
        id,
        tool: tool.map(str::to_owned),
        pattern: pattern.to_owned(),
        access,
        effect,
        scope: Scope::Persistent,
        workspace: None,
        created_at: 0,
        expires_at: None,
        command: None,
    }
}

fn allow_write(id: i64, tool: Option<&str>, pattern: &str) -> Rule {
    rule(id, tool, pattern, Access::Write, Effect::Allow)
}

fn deny_write(id: i64, tool: Option<&str>, pattern: &str) -> Rule {
    rule(id, tool, pattern, Access::Write, Effect::Deny)
}

fn allow_read(id: i64, tool: Option<&str>, pattern: &str) -> Rule {
    rule(id, tool, pattern, Access::Read, Effect::Allow)
}

fn deny_read(id: i64, tool: Option<&str>, pattern: &str) -> Rule {
    rule(id, tool, pattern, Access::Read, Effect::Deny)
}

fn in_session(session: &str, rule: Rule) -> Rule {
    Rule {
        scope: Scope::Session(session.to_owned()),
        ..rule
    }
}

fn expiring(at: i64, rule: Rule) -> Rule {
    Rule {
        expires_at: Some(at),
        command: None,
        ..rule
    }
}

/// A call, owning what `GateRequest` borrows.
#[derive(Clone)]
struct Call {
    session: &'static str,
    tool: &'static str,
    access: Access,
    paths: Vec<&'static str>,
    interactive: Interactive,
    writes: WritePolicy,
    now: i64,
}

fn read(tool: &'static str, paths: &[&'static str]) -> Call {
    Call {
        session: "s1",
        tool,
        access: Access::Read,
        paths: paths.to_vec(),
        interactive: Interactive::No,
        writes: WritePolicy::Default,
        now: NOW,
    }
}

fn write(tool: &'static str, paths: &[&'static str]) -> Call {
    Call {
        access: Access::Write,
        ..read(tool, paths)
    }
}

impl Call {
    fn interactive(self) -> Self {
        Self {
            interactive: Interactive::Yes,
            ..self
        }
    }

    fn allow_writes(self) -> Self {
        Self {
            writes: WritePolicy::AllowAll,
            ..self
        }
    }

    fn session(self, session: &'static str) -> Self {
        Self { session, ..self }
    }

    fn at(self, now: i64) -> Self {
        Self { now, ..self }
    }
}

/// What a case expects: the kind of decision and text its message must hold.
enum Expect {
    Allow(&'static [&'static str]),
    Deny(&'static [&'static str]),
    /// Prompt fragments.
    Ask(&'static [&'static str]),
}

struct Case {
    name: &'static str,
    rules: Vec<Rule>,
    call: Call,
    expect: Expect,
}

fn case(name: &'static str, rules: Vec<Rule>, call: Call, expect: Expect) -> Case {
    Case {
        name,
        rules,
        call,
        expect,
    }
}

fn check(case: &Case) -> Result<(), String> {
    let request = GateRequest {
        session_id: case.call.session,
        workspace: Some("/ws"),
        tool: case.call.tool,
        access: case.call.access,
        paths: &case.call.paths,
        interactive: case.call.interactive,
        writes: case.call.writes,
        now: case.call.now,
    };
    let decision = decide_with_rules(&case.rules, &request);
    let message = decision.reason();
    let (ok, fragments) = match (&case.expect, &decision.decision) {
        (Expect::Allow(want), Decision::Allow { .. }) => (message.starts_with("allowed: "), want),
        (Expect::Deny(want), Decision::Deny(_)) => (message.starts_with("denied: "), want),
        (Expect::Ask(want), Decision::Ask { .. }) => (message.ends_with("; allow it?"), want),
        _ => (false, &(&[] as &[&str])),
    };
    let missing: Vec<&&str> = fragments
        .iter()
        .filter(|f| !message.contains(**f))
        .collect();
    if ok && missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: got {decision:?}; missing {missing:?}",
            case.name
        ))
    }
}

fn run(cases: &[Case]) {
    let failures: Vec<String> = cases.iter().filter_map(|c| check(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn defaults_when_no_rule_matches() {
    run(&[
        case(
            "a read is allowed by default",
            vec![],
            read("read_file", &["src/main.rs"]),
            Expect::Allow(&["reading 'src/main.rs' with read_file (reads are allowed by default)"]),
        ),
        case(
            "a tool without path fields that only reads is allowed",
            vec![],
            read("clock", &[]),
            Expect::Allow(&["calling clock (reads are allowed by default)"]),
        ),
        case(
            "a write asks the person at the terminal",
            vec![],
            write("write_file", &["src/main.rs"]).interactive(),
            Expect::Ask(&["write_file wants to write 'src/main.rs'; allow it?"]),
        ),
        case(
            "a write with no one at the terminal is denied, saying how to allow it",
            vec![],
            write("write_file", &["src/main.rs"]),
            Expect::Deny(&[
                "denied: writing 'src/main.rs' with write_file needs approval and no one is at a \
                 terminal to give it; the user can allow it with \
                 `goat permissions allow write_file 'src/**' --write` or run with --allow-writes",
            ]),
        ),
        case(
            "a write at the top level suggests the file itself",
            vec![],
            write("write_file", &["notes.txt"]),
            Expect::Deny(&["`goat permissions allow write_file 'notes.txt' --write`"]),
        ),
        case(
            "--allow-writes allows a write",
            vec![],
            write("write_file", &["src/main.rs"]).allow_writes(),
            Expect::Allow(&[
                "writing 'src/main.rs' with write_file (writes are allowed: --allow-writes)",
            ]),
        ),
        case(
            "--allow-writes allows a write without asking when interactive",
            vec![],
            write("write_file", &["src/main.rs"])
                .allow_writes()
                .interactive(),
            Expect::Allow(&["--allow-writes"]),
        ),
        case(
            "a writing tool without path fields asks",
            vec![],
            write("format_all", &[]).interactive(),
            Expect::Ask(&["format_all wants write access to the workspace"]),
        ),
        case(
            "a writing tool without path fields is denied with no one at the terminal",
            vec![],
            write("format_all", &[]),
            Expect::Deny(&[
                "calling format_all needs approval",
                "`goat permissions allow format_all '**' --write`",
            ]),
        ),
    ]);
}

#[test]
fn explicit_rules_and_deny_over_allow() {
    run(&[
        case(
            "an allow rule lets a write through with no one at the terminal",
            vec![allow_write(1, Some("write_file"), "src/**")],
            write("write_file", &["src/main.rs"]),
            Expect::Allow(&[
                "writing 'src/main.rs' with write_file by permission rule #1: allow write \
                 'src/**' for write_file, persistent",
            ]),
        ),
        case(
            "an allow rule allows without asking when interactive",
            vec![allow_write(1, None, "src/**")],
            write("write_file", &["src/main.rs"]).interactive(),
            Expect::Allow(&["rule #1"]),
        ),
        case(
            "an allow rule for another tool does not apply",
            vec![allow_write(1, Some("edit_file"), "src/**")],
            write("write_file", &["src/main.rs"]),
            Expect::Deny(&["needs approval"]),
        ),
        case(
            "an allow-read rule does not allow a write",
            vec![allow_read(1, None, "**")],
            write("write_file", &["src/main.rs"]),
            Expect::Deny(&["needs approval"]),
        ),
        case(
            "an allow-read rule is cited for reads",
            vec![allow_read(1, Some("read_file"), "docs/**")],
            read("read_file", &["docs/a.md"]),
            Expect::Allow(&["by permission rule #1"]),
        ),
        case(
            "deny wins over allow on the same path",
            vec![
                allow_write(1, None, "src/main.rs"),
                deny_write(2, None, "src/main.rs"),
            ],
            write("write_file", &["src/main.rs"]).allow_writes(),
            Expect::Deny(&[
                "denied: writing 'src/main.rs' with write_file is forbidden by permission rule \
                 #2: deny write 'src/main.rs' and everything under it for all tools, persistent",
            ]),
        ),
        case(
            "a narrower deny inside a broader allow denies",
            vec![
                allow_write(1, None, "src/**"),
                deny_write(2, None, "src/generated/**"),
            ],
            write("write_file", &["src/generated/x.rs"]),
            Expect::Deny(&["rule #2"]),
        ),
        case(
            "the broader allow still covers the rest",
            vec![
                allow_write(1, None, "src/**"),
                deny_write(2, None, "src/generated/**"),
            ],
            write("write_file", &["src/lib.rs"]),
            Expect::Allow(&["rule #1"]),
        ),
        case(
            "a narrower allow inside a broader deny does not allow: no specificity",
            vec![
                deny_write(1, None, "src/**"),
                allow_write(2, Some("write_file"), "src/main.rs"),
            ],
            write("write_file", &["src/main.rs"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "a tool-specific deny beats an all-tools allow",
            vec![
                allow_write(1, None, "**"),
                deny_write(2, Some("write_file"), "src/**"),
            ],
            write("write_file", &["src/x.rs"]),
            Expect::Deny(&["rule #2", "for write_file"]),
        ),
        case(
            "the tool-specific deny leaves other tools to the all-tools allow",
            vec![
                allow_write(1, None, "**"),
                deny_write(2, Some("write_file"), "src/**"),
            ],
            write("edit_file", &["src/x.rs"]),
            Expect::Allow(&["rule #1"]),
        ),
        case(
            "an all-tools deny beats a tool-specific allow",
            vec![
                deny_write(1, None, "src/**"),
                allow_write(2, Some("write_file"), "src/**"),
            ],
            write("write_file", &["src/x.rs"]),
            Expect::Deny(&["rule #1", "for all tools"]),
        ),
        case(
            "--allow-writes does not override a deny",
            vec![deny_write(1, None, "**")],
            write("write_file", &["a"]).allow_writes().interactive(),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "a deny-read rule denies reading",
            vec![deny_read(1, None, "**/.env")],
            read("read_file", &["config/.env"]),
            Expect::Deny(&[
                "reading 'config/.env' with read_file is forbidden",
                "rule #1",
            ]),
        ),
        case(
            "a deny-read rule also denies writing tools, which can read what they write",
            vec![deny_read(1, None, "**/.env"), allow_write(2, None, "**")],
            write("edit_file", &[".env"]).allow_writes(),
            Expect::Deny(&["writing '.env' with edit_file is forbidden", "rule #1"]),
        ),
        case(
            "a deny-write rule leaves reads alone",
            vec![deny_write(1, None, "**")],
            read("read_file", &["a"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "of several matching denies the oldest is named",
            vec![deny_read(5, None, "a"), deny_read(3, None, "*")],
            read("read_file", &["a"]),
            Expect::Deny(&["rule #3"]),
        ),
    ]);
}

#[test]
fn paths_are_compared_after_resolution() {
    let deny_a = || vec![deny_read(1, None, "a")];
    let mut cases: Vec<Case> = ["a", "./a", "a/", "sub/../a", "./sub/./../a//"]
        .into_iter()
        .map(|spelling| {
            case(
                spelling,
                deny_a(),
                read("read_file", &[spelling]),
                Expect::Deny(&["reading 'a' with read_file", "rule #1"]),
            )
        })
        .collect();
    cases.extend([
        case(
            "a rule written in a roundabout spelling matches too",
            vec![deny_read(1, None, "./sub/../a")],
            read("read_file", &["a"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "dir/** covers the directory itself",
            vec![deny_read(1, None, "dir/**")],
            read("list_directory", &["dir"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "dir/** covers what is deep under it",
            vec![deny_read(1, None, "dir/**")],
            read("read_file", &["dir/x/y/z"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "dir/** does not cover a sibling that shares its prefix",
            vec![deny_read(1, None, "dir/**")],
            read("read_file", &["dir2/x"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "* stays within one component",
            vec![deny_read(1, None, "src/*.rs")],
            read("read_file", &["src/bin/main.rs"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "* matches within its component",
            vec![deny_read(1, None, "src/*.rs")],
            read("read_file", &["src/main.rs"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "? is one character",
            vec![deny_read(1, None, "v?")],
            read("read_file", &["v10"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "[ ] in a rule are literal, as when the rule was stored",
            vec![deny_read(1, None, "pages/[id].tsx")],
            read("read_file", &["pages/[id].tsx"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "[ ] in a rule are not a character class",
            vec![deny_read(1, None, "pages/[id].tsx")],
            read("read_file", &["pages/i.tsx"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "{ } in a rule are not alternatives",
            vec![deny_read(1, None, "*.{rs,toml}")],
            read("read_file", &["Cargo.toml"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "a backslash in a rule is a literal character, not an escape",
            vec![deny_read(1, None, "a\\*")],
            read("read_file", &["a\\b"]),
            Expect::Deny(&["rule #1"]),
        ),
        case(
            "a deny pattern without wildcards covers what is under it (issue 11)",
            vec![deny_read(1, None, "secrets")],
            read("read_file", &["secrets/prod.env"]),
            Expect::Deny(&[
                "denied: reading 'secrets/prod.env' with read_file is forbidden by permission \
                 rule #1: deny read 'secrets' and everything under it for all tools, persistent",
            ]),
        ),
        case(
            "... at any depth, and the path itself",
            vec![deny_read(1, None, "config/prod")],
            read(
                "search_files",
                &["config/prod/db/../keys/a.pem", "config/prod"],
            ),
            Expect::Deny(&["'config/prod/keys/a.pem'", "rule #1"]),
        ),
        case(
            "... and its deny-read keeps writes out too",
            vec![deny_read(1, None, "secrets")],
            write("write_file", &["secrets/new.env"]).allow_writes(),
            Expect::Deny(&["writing 'secrets/new.env'", "rule #1"]),
        ),
        case(
            "... and a deny-write one keeps writes out below it, reads allowed",
            vec![deny_write(1, None, "secrets")],
            write("edit_file", &["secrets/a/b.env"]).allow_writes(),
            Expect::Deny(&["rule #1: deny write 'secrets' and everything under it"]),
        ),
        case(
            "... but not a sibling that shares its prefix",
            vec![deny_read(1, None, "secrets")],
            read("read_file", &["secrets2/key", "secrets.md"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "... nor the directory above it",
            vec![deny_read(1, None, "config/prod")],
            read("list_directory", &["config"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "a wildcard pattern still means only what it matches: secrets/* is one level",
            vec![deny_read(1, None, "secrets/*")],
            read("read_file", &["secrets/a/b.env"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "secrets/** keeps meaning the directory and everything under it",
            vec![deny_read(1, None, "secrets/**")],
            read("read_file", &["secrets", "secrets/a/b.env"]),
            Expect::Deny(&["'secrets'", "rule #1: deny read 'secrets/**' for all tools"]),
        ),
        case(
            "an allow pattern without wildcards grants exactly that path, nothing under it \
             (an approval of a directory or of a never-created file must not widen)",
            vec![allow_write(1, Some("write_file"), "notes")],
            write("write_file", &["notes/run.sh"]).interactive(),
            Expect::Ask(&["write_file wants to write 'notes/run.sh'"]),
        ),
        case(
            "... and without a terminal the write under it is denied, not allowed",
            vec![allow_write(1, Some("write_file"), "notes")],
            write("write_file", &["notes/run.sh"]),
            Expect::Deny(&["needs approval"]),
        ),
        case(
            "... while the path itself is allowed by it",
            vec![allow_write(1, Some("write_file"), "notes")],
            write("write_file", &["./notes"]),
            Expect::Allow(&["by permission rule #1: allow write 'notes' for write_file"]),
        ),
        case(
            "an active rule whose pattern does not compile denies: it might be a deny",
            vec![allow_read(4, None, "../x")],
            read("read_file", &["a"]),
            Expect::Deny(&["permission rule #4 has an invalid pattern '../x'"]),
        ),
        case(
            "a bad pattern on a rule for another tool is not consulted",
            vec![allow_read(4, Some("other"), "../x")],
            read("read_file", &["a"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
    ]);
    run(&cases);
}

#[test]
fn escapes_are_denied_whatever_the_rules_say() {
    let allow_everything = || {
        vec![
            allow_read(1, None, "**"),
            allow_write(2, None, "**"),
            allow_read(3, None, "*"),
        ]
    };
    let mut cases = Vec::new();
    for (path, says) in [
        ("../x", "the path '../x' leaves the workspace"),
        ("..", "leaves the workspace"),
        ("a/../../x", "the path 'a/../../x' leaves the workspace"),
        ("/etc/passwd", "the path '/etc/passwd' is absolute"),
        ("\\x", "is absolute"),
        ("C:x", "is absolute"),
        ("a\0b", "the path \"a\\0b\" contains a NUL byte"),
    ] {
        cases.push(case(
            path,
            allow_everything(),
            read("read_file", &[path]),
            Expect::Deny(vec!["denied: read_file was not run because", says].leak()),
        ));
        cases.push(case(
            path,
            allow_everything(),
            write("write_file", &[path]).allow_writes().interactive(),
            Expect::Deny(vec!["denied: write_file was not run because", says].leak()),
        ));
    }
    let long: &'static str = "a/".repeat(3000).leak();
    cases.push(case(
        "an overlong path",
        allow_everything(),
        read("read_file", &[long]),
        Expect::Deny(&["6000 bytes long, more than the 4096 bytes a path may have"]),
    ));
    run(&cases);
}

#[test]
fn expiry_and_session_scope() {
    run(&[
        case(
            "a deny is in force until its expiry",
            vec![expiring(NOW + 1, deny_read(1, None, "a"))],
            read("read_file", &["a"]),
            Expect::Deny(&["rule #1", "expires at 1001 (unix)"]),
        ),
        case(
            "a deny is ignored from its expiry on",
            vec![expiring(NOW, deny_read(1, None, "a"))],
            read("read_file", &["a"]),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "an expired allow falls back to the default",
            vec![expiring(NOW - 1, allow_write(1, None, "**"))],
            write("write_file", &["a"]).at(NOW),
            Expect::Deny(&["needs approval"]),
        ),
        case(
            "a session allow applies to its session",
            vec![in_session("s1", allow_write(1, None, "**"))],
            write("write_file", &["a"]).session("s1"),
            Expect::Allow(&["rule #1: allow write '**' for all tools, session s1"]),
        ),
        case(
            "a session allow does not apply to another session",
            vec![in_session("s1", allow_write(1, None, "**"))],
            write("write_file", &["a"]).session("s2"),
            Expect::Deny(&["needs approval"]),
        ),
        case(
            "a session deny does not apply to another session",
            vec![in_session("s1", deny_read(1, None, "**"))],
            read("read_file", &["a"]).session("s2"),
            Expect::Allow(&["reads are allowed by default"]),
        ),
        case(
            "a session deny applies to its session",
            vec![in_session("s1", deny_read(1, None, "**"))],
            read("read_file", &["a"]).session("s1"),
            Expect::Deny(&["rule #1"]),
        ),
    ]);
}

#[test]
fn calls_with_several_paths_or_none() {
    run(&[
        case(
            "every path allowed allows, citing each",
            vec![
                allow_write(1, None, "src/**"),
                allow_write(2, None, "docs/**"),
            ],
            write("move_file", &["src/a", "docs/b"]),
            Expect::Allow(&[
                "writing 'src/a' with move_file by permission rule #1",
                "; writing 'docs/b' with move_file by permission rule #2",
            ]),
        ),
        case(
            "one path without approval denies the call and is named",
            vec![allow_write(1, None, "src/**")],
            write("move_file", &["src/a", "docs/b"]),
            Expect::Deny(&["writing 'docs/b' with move_file needs approval"]),
        ),
        case(
            "one denied path denies the call and is named",
            vec![deny_read(1, None, "secrets/**")],
            read("diff_files", &["notes.txt", "secrets/key"]),
            Expect::Deny(&[
                "reading 'secrets/key' with diff_files is forbidden",
                "rule #1",
            ]),
        ),
        case(
            "a deny on a later path wins over asking about an earlier one",
            vec![deny_write(1, None, "b")],
            write("move_file", &["a", "b"]).interactive(),
            Expect::Deny(&["writing 'b'", "rule #1"]),
        ),
        case(
            "an escape on a later path denies even if the first is allowed",
            vec![allow_write(1, None, "**")],
            write("move_file", &["a", "../b"]),
            Expect::Deny(&["the path '../b' leaves the workspace"]),
        ),
        case(
            "only the paths that need approval are asked about",
            vec![allow_write(1, None, "src/**")],
            write("move_file", &["src/a", "./docs/b"]).interactive(),
            Expect::Ask(&["move_file wants to write 'docs/b'; allow it?"]),
        ),
        case(
            "every path that needs approval is in one question",
            vec![],
            write("move_file", &["a", "sub/../b"]).interactive(),
            Expect::Ask(&["move_file wants to write 'a', 'b'; allow it?"]),
        ),
        case(
            "a call without path fields is judged by whole-workspace rules",
            vec![deny_read(1, Some("clock"), "**")],
            read("clock", &[]),
            Expect::Deny(&["calling clock is forbidden by permission rule #1"]),
        ),
        case(
            "a call without path fields ignores narrower rules",
            vec![deny_read(1, None, "src/**"), deny_read(2, None, "*")],
            read("clock", &[]),
            Expect::Allow(&["calling clock (reads are allowed by default)"]),
        ),
        case(
            "a whole-workspace allow lets a path-less writing tool through",
            vec![allow_write(1, Some("format_all"), "")],
            write("format_all", &[]),
            Expect::Allow(&["calling format_all by permission rule #1"]),
        ),
    ]);
}

#[test]
fn what_the_model_writes_cannot_forge_a_prompt() {
    run(&[case(
        "control characters in a path are escaped in the prompt",
        vec![],
        write("write_file", &["a\nAllow all? [y]\u{1b}[2K"]).interactive(),
        Expect::Ask(&["write_file wants to write \"a\\nAllow all? [y]\\u{1b}[2K\"; allow it?"]),
    )]);
}

/// Rules bound to a workspace apply only there; where the workspace cannot
/// be named (not UTF-8), bound allow rules do not apply and bound deny
/// rules still do.
#[test]
fn workspace_bound_rules_apply_only_in_their_workspace() {
    let bound = |effect, workspace: &str| Rule {
        workspace: Some(workspace.to_owned()),
        ..rule(1, Some("write_file"), "a.txt", Access::Write, effect)
    };
    let decide = |rules: &[Rule], workspace: Option<&str>| {
        decide_with_rules(
            rules,
            &GateRequest {
                session_id: "s1",
                workspace,
                tool: "write_file",
                access: Access::Write,
                paths: &["a.txt"],
                interactive: Interactive::No,
                writes: WritePolicy::Default,
                now: 1_000,
            },
        )
    };
    assert!(decide(&[bound(Effect::Allow, "/ws")], Some("/ws")).is_allow());
    assert!(decide(&[bound(Effect::Allow, "/ws")], Some("/other")).is_deny());
    assert!(decide(&[bound(Effect::Allow, "/ws")], Some("/ws/sub")).is_deny());
    assert!(decide(&[bound(Effect::Allow, "/ws")], None).is_deny());
    let allow_all = rule(2, None, "**", Access::Write, Effect::Allow);
    assert!(
        decide(
            &[allow_all.clone(), bound(Effect::Deny, "/ws")],
            Some("/ws")
        )
        .is_deny()
    );
    assert!(
        decide(
            &[allow_all.clone(), bound(Effect::Deny, "/ws")],
            Some("/other")
        )
        .is_allow()
    );
    assert!(
        decide(&[allow_all, bound(Effect::Deny, "/ws")], None).is_deny(),
        "a bound deny applies where the workspace cannot be named"
    );
}
