//! Snapshots of what a person or a script reads when stdout and stderr are
//! not terminals: `goat run` (text and `--json`), `goat sessions list` and
//! `show` (text and `--json`), `sessions diff`, `goat probe` and `goat
//! stats` (text and `--json`). Each snapshot holds the exit status and both streams exactly
//! as printed, so a change of wording, order, status or layout fails here
//! and is reviewed as a diff of the `.snap` file.
//!
//! What changes from run to run is replaced by [`Scrub`], and only that:
//! the temporary directory, the scripted engine's port, session ids,
//! dates, creation times and durations. Each replacement matches a known
//! literal or an exact shape (`2024-05-01 12:00:00 UTC`, `1.23ms`, a JSON
//! `"duration_ms": 12`); anything else stays as printed, so an unexpected
//! value shows up in the diff instead of being hidden.
//!
//! To accept an intended change: `INSTA_UPDATE=always cargo test -p
//! goat-cli --test all snapshot`, then read every changed `.snap` file.
//! With `CI` set (or `INSTA_UPDATE=no`), a mismatch or a missing snapshot
//! fails and nothing is written.

use std::process::Output;

use goat_testkit::{Reply, ScriptedServer, ev_content, ev_done, ev_finish, ev_tool_call};

use crate::{Env, call_reply, content_reply, json_out, malformed_write, text};

/// The workspace's README, which the scripted model reads.
const README: &str = "# Demo project\n\nA tiny project for GOAT's snapshot tests.\n";

/// The prompt of the scripted turn.
const PROMPT: &str = "Read README.md, then create hello.txt saying hello";

/// The scripted turn of most snapshots, four rounds: a structured
/// `read_file` after some text; `write_file` written as Qwen3-Coder markup
/// in plain text (ADR-0065's case, so GOAT asks once for a structured
/// call); the structured `write_file`, which the gate denies (no
/// `--allow-writes`, no terminal to ask at); and the answer.
fn scripted_turn() -> Vec<Reply> {
    vec![
        Reply::sse(
            [
                ev_content("Let me read the README first."),
                ev_tool_call(0, Some("call_1"), Some("read_file"), None),
                ev_tool_call(0, None, None, Some(r#"{"path": "README.md"}"#)),
                ev_finish("tool_calls"),
                ev_done(),
            ]
            .concat(),
        ),
        malformed_write(),
        call_reply(
            "call_2",
            "write_file",
            r#"{"path": "hello.txt", "content": "hello\n"}"#,
        ),
        content_reply(
            "README.md starts with \"# Demo project\". I could not create hello.txt: \
             the write was denied.",
        ),
    ]
}

/// A turn with one structured read and an answer, nothing written as text.
fn clean_turn() -> Vec<Reply> {
    vec![
        call_reply("call_1", "read_file", r#"{"path": "README.md"}"#),
        content_reply("The first line is \"# Demo project\"."),
    ]
}

/// A fresh world with the README in the workspace.
fn world() -> Env {
    let env = Env::new();
    std::fs::write(env.ws.join("README.md"), README).unwrap();
    env
}

/// Runs `goat run` against `server` with `extra` flags and the prompt.
async fn goat_run(env: &Env, server: &ScriptedServer, model: &str, extra: &[&str]) -> Output {
    let url = server.base_url();
    let mut args = vec!["run", "--engine", &url, "--model", model];
    args.extend(extra);
    args.push(PROMPT);
    env.run_async(&args).await
}

/// The session ids in the store, newest first (as `sessions list` orders
/// them).
fn session_ids(env: &Env) -> Vec<String> {
    let listed = json_out(&env.run(&["sessions", "list", "--json"]));
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Replaces what differs between runs with a placeholder, and nothing
/// else. Literal values (paths, ports, ids) are replaced wherever they
/// appear; shapes (dates, durations, JSON numbers under a named key) only
/// where they match exactly.
struct Scrub {
    /// (what was printed, what the snapshot shows), applied in order.
    literals: Vec<(String, String)>,
}

impl Scrub {
    /// The test's directories: the workspace (`[WORKSPACE]`) before the
    /// directory holding it and the host state (`[ROOT]`).
    fn new(env: &Env) -> Self {
        Self {
            literals: vec![
                (env.ws_str().to_owned(), "[WORKSPACE]".to_owned()),
                (env.root.to_str().unwrap().to_owned(), "[ROOT]".to_owned()),
            ],
        }
    }

    /// The engine's loopback address: `127.0.0.1:[PORT-n]`, numbered so
    /// that two engines in one output stay apart.
    fn engine(mut self, server: &ScriptedServer, n: usize) -> Self {
        self.literals.push((
            server.addr.to_string(),
            format!("{}:[PORT-{n}]", server.addr.ip()),
        ));
        self
    }

    /// A session id, as `[SESSION-n]` padded with dots to the id's width
    /// (16 characters), so the columns of `sessions list` keep their
    /// alignment in the snapshot and a change of it still shows.
    fn session(mut self, id: &str, n: usize) -> Self {
        assert!(
            id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "not a session id: {id:?}"
        );
        let label = format!("SESSION-{n}");
        self.literals
            .push((id.to_owned(), format!("[{label:.<14}]")));
        self
    }

    fn apply(&self, printed: &str) -> String {
        let mut s = printed.to_owned();
        for (from, to) in &self.literals {
            s = s.replace(from.as_str(), to);
        }
        let s = utc_dates(&s);
        let s = probe_durations(&s);
        let s = json_number(&s, "created_at", "[UNIX-SECONDS]");
        json_number(&s, "duration_ms", "[MS]")
    }

    /// The exit status and both streams, scrubbed.
    fn transcript(&self, out: &Output) -> String {
        let status = match out.status.code() {
            Some(code) => code.to_string(),
            None => format!("{:?}", out.status),
        };
        format!(
            "exit: {status}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.apply(&text(&out.stdout)),
            self.apply(&text(&out.stderr)),
        )
    }

    /// As [`Self::transcript`], for output that must be JSON.
    fn json_transcript(&self, out: &Output) -> String {
        json_out(out);
        self.transcript(out)
    }
}

/// `2024-05-01 12:00:00 UTC` as `YYYY-MM-DD hh:mm:ss UTC` (same width).
fn utc_dates(s: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-dd dd:dd:dd UTC";
    const SHOWN: &str = "YYYY-MM-DD hh:mm:ss UTC";
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        let fits = bytes.get(i..i + SHAPE.len()).is_some_and(|window| {
            window.iter().zip(SHAPE).all(|(&b, &want)| match want {
                b'd' => b.is_ascii_digit(),
                other => b == other,
            })
        });
        if fits {
            out.push_str(SHOWN);
            i += SHAPE.len();
        } else {
            // Copy one whole character (the text is UTF-8).
            let len = s[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&s[i..i + len]);
            i += len;
        }
    }
    out
}

/// `first token after 1.23ms` as `first token after [DURATION]`: the
/// `{:.2?}` form of a `Duration` (digits, a point, two digits, a unit).
fn probe_durations(s: &str) -> String {
    const LEAD: &str = "first token after ";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(LEAD) {
        let (before, after) = rest.split_at(at + LEAD.len());
        out.push_str(before);
        let token_len = after
            .find(|c: char| c == ';' || c.is_whitespace())
            .unwrap_or(after.len());
        let token = &after[..token_len];
        if is_debug_duration(token) {
            out.push_str("[DURATION]");
            rest = &after[token_len..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn is_debug_duration(token: &str) -> bool {
    let Some(number) = ["ns", "µs", "ms", "s"]
        .iter()
        .find_map(|unit| token.strip_suffix(unit))
    else {
        return false;
    };
    let Some((whole, fraction)) = number.split_once('.') else {
        return false;
    };
    !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.len() == 2
        && fraction.bytes().all(|b| b.is_ascii_digit())
}

/// In pretty-printed JSON, `"key": 123` (an unsigned integer) as
/// `"key": PLACEHOLDER`; `null` or any other value stays.
fn json_number(s: &str, key: &str, placeholder: &str) -> String {
    let lead = format!("\"{key}\": ");
    s.split_inclusive('\n')
        .map(|line| {
            let Some(at) = line.find(&lead) else {
                return line.to_owned();
            };
            let value_at = at + lead.len();
            let digits = line[value_at..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let tail = &line[value_at + digits..];
            if digits > 0 && matches!(tail.trim_end(), "" | ",") {
                format!("{}{placeholder}{tail}", &line[..value_at])
            } else {
                line.to_owned()
            }
        })
        .collect()
}

/// Asserts `value` matches the stored snapshot `name`; `what` (the command)
/// heads the `.snap` file for its reader.
fn snapshot(name: &str, what: &str, value: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_description(what);
    settings.set_omit_expression(true);
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, value));
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshot_run_streams_the_answer_and_one_line_per_call() {
    let env = world();
    let server = ScriptedServer::start(scripted_turn()).await;
    let out = goat_run(&env, &server, "qwen3-coder", &[]).await;
    let [id] = session_ids(&env).try_into().unwrap();
    let scrub = Scrub::new(&env).engine(&server, 1).session(&id, 1);
    snapshot(
        "run",
        "goat run (read, markup as text, recovery, denied write, answer)",
        &scrub.transcript(&out),
    );
    assert!(!env.ws.join("hello.txt").exists(), "the denied write ran");
}

/// The time to the first token, which no two runs share, as `[MS]`.
fn scrub_first_token(text: &str) -> String {
    const KEY: &str = "\"first_token_ms\": ";
    let Some(at) = text.find(KEY) else {
        return text.to_owned();
    };
    let start = at + KEY.len();
    let end = start
        + text[start..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(0);
    format!("{}\"[MS]\"{}", &text[..start], &text[end..])
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshot_run_json_summary() {
    let env = world();
    let server = ScriptedServer::start(scripted_turn()).await;
    let out = goat_run(&env, &server, "qwen3-coder", &["--json"]).await;
    let [id] = session_ids(&env).try_into().unwrap();
    let scrub = Scrub::new(&env).engine(&server, 1).session(&id, 1);
    snapshot(
        "run_json",
        "goat run --json (read, markup as text, recovery, denied write, answer)",
        &scrub_first_token(&scrub.json_transcript(&out)),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshot_sessions_show_text_and_json() {
    let env = world();
    let server = ScriptedServer::start(scripted_turn()).await;
    let out = goat_run(&env, &server, "qwen3-coder", &["--json"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let [id] = session_ids(&env).try_into().unwrap();
    let scrub = Scrub::new(&env).engine(&server, 1).session(&id, 1);
    snapshot(
        "sessions_show",
        "goat sessions show ID (after the scripted turn)",
        &scrub.transcript(&env.run(&["sessions", "show", &id])),
    );
    snapshot(
        "sessions_show_json",
        "goat sessions show ID --json (after the scripted turn)",
        &scrub.json_transcript(&env.run(&["sessions", "show", &id, "--json"])),
    );
    snapshot(
        "sessions_export_md",
        "goat sessions export ID (after the scripted turn)",
        &scrub.transcript(&env.run(&["sessions", "export", &id[..6]])),
    );
    // The JSON export is what show --json prints.
    let exported = env.run(&["sessions", "export", &id, "--format", "json"]);
    assert_eq!(
        exported.status.code(),
        Some(0),
        "{}",
        text(&exported.stderr)
    );
    assert_eq!(
        exported.stdout,
        env.run(&["sessions", "show", &id, "--json"]).stdout
    );
}

/// Three sessions on two engines: the scripted turn and a turn that writes
/// markup twice (both qwen3-coder on engine 1), and a clean turn
/// (qwen2.5-coder on engine 2). `stats` orders by turns, then model, and
/// `sessions list` newest first, so the order is fixed.
#[tokio::test(flavor = "multi_thread")]
async fn snapshot_sessions_list_and_stats() {
    let env = world();
    let empty = Scrub::new(&env);
    snapshot(
        "stats_empty",
        "goat stats (no store yet)",
        &empty.transcript(&env.run(&["stats"])),
    );

    let mut replies = scripted_turn();
    replies.extend([malformed_write(), malformed_write()]);
    let first = ScriptedServer::start(replies).await;
    let second = ScriptedServer::start(clean_turn()).await;
    let out = goat_run(&env, &first, "qwen3-coder", &["--json"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let out = goat_run(&env, &first, "qwen3-coder", &["--json"]).await;
    assert_eq!(out.status.code(), Some(8), "{}", text(&out.stderr));
    let out = goat_run(&env, &second, "qwen2.5-coder", &["--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let [newest, middle, oldest] = session_ids(&env).try_into().unwrap();
    let scrub = Scrub::new(&env)
        .engine(&first, 1)
        .engine(&second, 2)
        .session(&oldest, 1)
        .session(&middle, 2)
        .session(&newest, 3);
    snapshot(
        "sessions_list",
        "goat sessions list (three sessions, newest first)",
        &scrub.transcript(&env.run(&["sessions", "list"])),
    );
    snapshot(
        "sessions_list_json",
        "goat sessions list --json (three sessions, newest first)",
        &scrub.json_transcript(&env.run(&["sessions", "list", "--json"])),
    );
    snapshot(
        "stats",
        "goat stats (qwen3-coder: a recovery and a turn that failed twice; qwen2.5-coder: clean)",
        &scrub.transcript(&env.run(&["stats"])),
    );
    snapshot(
        "stats_json",
        "goat stats --json (as `stats`)",
        &scrub.json_transcript(&env.run(&["stats", "--json"])),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshot_probe_of_an_engine_that_returns_structured_calls() {
    let env = world();
    let replies = (1..=3)
        .map(|i| call_reply(&format!("c{i}"), "read_file", r#"{"path": "README.md"}"#))
        .collect();
    let server = ScriptedServer::start(replies).await;
    let url = server.base_url();
    let out = env
        .run_async(&["probe", "--engine", &url, "--model", "qwen3-coder"])
        .await;
    let scrub = Scrub::new(&env).engine(&server, 1);
    snapshot(
        "probe_structured",
        "goat probe (default count; every response a structured read_file call)",
        &scrub.transcript(&out),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshot_probe_of_an_engine_that_returns_markup_every_time() {
    let env = world();
    let server = ScriptedServer::start(vec![malformed_write(); 3]).await;
    let url = server.base_url();
    let out = env
        .run_async(&["probe", "--engine", &url, "--model", "qwen3-coder"])
        .await;
    let scrub = Scrub::new(&env).engine(&server, 1);
    snapshot(
        "probe_markup",
        "goat probe (default count; every response Qwen3-Coder markup as text)",
        &scrub.transcript(&out),
    );
}

/// The scrubbers replace exactly their shapes, and leave near misses as
/// printed, so they cannot hide a real change.
#[test]
fn scrubbers_replace_only_their_exact_shapes() {
    assert_eq!(
        utc_dates("at 2024-05-01 12:00:00 UTC, not 2024-05-01 12:00 UTC"),
        "at YYYY-MM-DD hh:mm:ss UTC, not 2024-05-01 12:00 UTC"
    );
    assert_eq!(
        probe_durations("first token after 812.35µs; first token after 1.2ms; x"),
        "first token after [DURATION]; first token after 1.2ms; x"
    );
    assert_eq!(
        probe_durations("first token after 1.00s\n  2. first token after soon"),
        "first token after [DURATION]\n  2. first token after soon"
    );
    assert_eq!(
        json_number(
            "  \"duration_ms\": 12,\n  \"duration_ms\": null,\n  \"duration_ms\": 1.5\n",
            "duration_ms",
            "[MS]"
        ),
        "  \"duration_ms\": [MS],\n  \"duration_ms\": null,\n  \"duration_ms\": 1.5\n"
    );
}

/// A turn that changes files: creates one, edits the README twice (so the
/// diff is the net change), deletes a binary file; then `sessions diff`.
#[tokio::test(flavor = "multi_thread")]
async fn snapshot_sessions_diff() {
    let env = world();
    std::fs::write(env.ws.join("logo.png"), b"\x89PNG\r\n\x1a\n\x00\x00").unwrap();
    let server = ScriptedServer::start(vec![
        call_reply(
            "c1",
            "write_file",
            r#"{"path": "src/hello.txt", "content": "hello\nworld\n"}"#,
        ),
        call_reply(
            "c2",
            "edit_file",
            r##"{"path": "README.md", "old_string": "# Demo project", "new_string": "# Demo"}"##,
        ),
        call_reply(
            "c3",
            "edit_file",
            r#"{"path": "README.md", "old_string": "tiny", "new_string": "small\u001b[31m"}"#,
        ),
        call_reply("c4", "delete_file", r#"{"path": "logo.png"}"#),
        content_reply("Done."),
    ])
    .await;
    let url = server.base_url();
    let out = env
        .run_async(&[
            "run",
            "--engine",
            &url,
            "--model",
            "qwen",
            "--allow-writes",
            "change files",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let [id] = session_ids(&env).try_into().unwrap();
    let scrub = Scrub::new(&env).engine(&server, 1).session(&id, 1);
    snapshot(
        "sessions_diff",
        "goat sessions diff ID (a turn that created, edited twice and deleted files)",
        &scrub.transcript(&env.run(&["sessions", "diff", &id[..6]])),
    );
}
