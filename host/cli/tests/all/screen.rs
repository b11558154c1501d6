//! The screen a person reads in `goat chat`: the answer wrapped at the
//! terminal's width, never on one line with GOAT's own lines, Markdown
//! rendered (and escaped) at a terminal; errors in red only where colour
//! is allowed; a resumed chat showing where it stands; a chat that never
//! reached the engine leaving no session behind.

use std::io::Write;
use std::process::Stdio;

use goat_testkit::{Reply, ScriptedServer};

use crate::pty::Pty;
use crate::{Env, content_reply, json_out, text};

/// Forty words, one paragraph, one line as the model writes it.
const PARAGRAPH: &str = "GOAT wraps the answer at the width of the terminal so that a \
     person reads whole words on every row and never a word cut in two, while long \
     identifiers like goat_router::AppToolRouter::route and addresses such as \
     https://example.com/a/rather/long/path/for/testing stay whole and may overflow.";

/// `goat chat` with the scripted engine, at a pty of `cols` columns.
fn chat(env: &Env, url: &str, cols: u16, vars: &[(&str, &str)]) -> Pty {
    let pty = Pty::spawn(env, &["chat", "--engine", url, "--model", "qwen"], vars);
    pty.resize(cols);
    pty
}

/// What the terminal showed between `from` and `to`, lines without `\r`.
/// `transcript` without the terminal's control sequences (`ESC [ … final`):
/// the line editor draws its prompt with them even under `NO_COLOR`. The
/// answer itself never holds a raw ESC (the model's are shown escaped).
fn plain(transcript: &str) -> String {
    let mut out = String::with_capacity(transcript.len());
    let mut chars = transcript.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn between(transcript: &str, from: &str, to: &str) -> Vec<String> {
    let transcript = &plain(transcript);
    let start = transcript.find(from).unwrap() + from.len();
    let end = start + transcript[start..].find(to).unwrap();
    transcript[start..end]
        .split('\n')
        .map(|l| l.trim_end_matches('\r').to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_wraps_at_80_columns_and_never_mid_word() {
    let env = Env::new();
    // Sent in pieces of 7 bytes, so words arrive cut across chunks.
    let reply = Reply::builder()
        .text(&format!("{PARAGRAPH}\n"))
        .chunked(7)
        .build();
    let server = ScriptedServer::start(vec![reply]).await;
    // An engine that says its window, so that the only rows after the
    // prompt are the answer's.
    server.route(
        "/props",
        Reply::error(200, "application/json", r#"{"n_ctx": 32768}"#),
    );
    let mut pty = chat(&env, &server.base_url(), 80, &[("NO_COLOR", "1")]);
    pty.expect("> ");
    pty.type_keys("wrap it\r");
    pty.expect("overflow.");
    pty.expect("> ");
    let rows = between(&pty.transcript(), "wrap it", "> ");
    assert!(rows.len() >= 3, "{rows:#?}");
    for row in &rows {
        assert!(
            row.chars().count() <= 80 || !row.trim().contains(' '),
            "a row past 80 columns that is not one long word: {row:?}"
        );
    }
    let words: Vec<&str> = rows.iter().flat_map(|r| r.split_whitespace()).collect();
    let expected: Vec<&str> = PARAGRAPH.split_whitespace().collect();
    assert_eq!(words, expected, "a word was cut: {rows:#?}");
    // Each row holds as many words as fit: the next word would not have.
    for pair in rows.windows(2) {
        let next = pair[1].split_whitespace().next().unwrap();
        assert!(
            pair[0].chars().count() + 1 + next.chars().count() > 80,
            "{pair:?} could have shared a row"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_never_shares_a_line_with_a_question_or_a_tool_line() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        Reply::builder()
            .text("I will add the flag.")
            .tool_call_with_id(
                "call_1",
                "write_file",
                r#"{"path": "flag.txt", "content": "on\n"}"#,
            )
            .build(),
        Reply::builder()
            .text("Let me check it.")
            .tool_call_with_id("call_2", "read_file", r#"{"path": "flag.txt"}"#)
            .build(),
        Reply::builder().text("Now the second").build(),
    ])
    .await;
    let mut pty = chat(&env, &server.base_url(), 80, &[("NO_COLOR", "1")]);
    pty.expect("> ");
    pty.type_keys("add the flag\r");
    pty.expect("allow? [o]nce");
    pty.type_keys("o\r");
    pty.expect("-> ok: Created 'flag.txt'");
    pty.expect("Now the second");
    pty.expect("> ");
    let transcript = pty.transcript();
    assert!(
        transcript.contains("I will add the flag.\r\n▌ goat: write_file wants to write 'flag.txt'"),
        "{transcript:?}"
    );
    assert!(!transcript.contains("flag.goat"), "{transcript:?}");
    // A tool line too starts on its own line.
    assert!(
        transcript.contains("Let me check it.\r\n▌ goat: read_file(path=\"flag.txt\") -> ok"),
        "{transcript:?}"
    );
    // The answer's last line, never ended by the model, is ended before
    // the prompt comes back.
    let shown = plain(&transcript);
    let after = &shown[shown.find("Now the second").unwrap()..];
    assert!(
        after.starts_with("Now the second\r\n") && after.contains("> "),
        "{transcript:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn markdown_is_rendered_at_a_terminal_and_its_escapes_are_shown() {
    let env = Env::new();
    let answer = "# Plan \u{1b}[2J\n- **bold** step\n```sh\necho \u{1b}]0;owned\u{7}\n```\n";
    let server = ScriptedServer::start(vec![content_reply(answer)]).await;
    let mut pty = chat(&env, &server.base_url(), 80, &[]);
    pty.expect("> ");
    pty.type_keys("plan\r");
    pty.expect("\x1b[2m```\x1b[0m");
    pty.expect("> ");
    let transcript = pty.transcript();
    assert!(
        transcript.contains("\x1b[1mPlan\x1b[0m \x1b[1m\\u{1b}[2J\x1b[0m"),
        "{transcript:?}"
    );
    assert!(
        transcript.contains("• \x1b[1mbold\x1b[0m step"),
        "{transcript:?}"
    );
    assert!(
        transcript.contains("\\u{1b}]0;owned\\u{7}"),
        "{transcript:?}"
    );
    assert!(!transcript.contains("\x1b[2J") && !transcript.contains("\x1b]0;"));
}

#[tokio::test(flavor = "multi_thread")]
async fn piped_the_answer_is_the_markdown_as_written() {
    let answer = "# Plan\n- **bold** step that is long enough to be wrapped at a terminal of \
                  eighty columns, which a pipe never is\n";
    let run = crate::GoatRun::builder()
        .replies([content_reply(answer)])
        .run("plan")
        .await;
    assert_eq!(run.stdout(), answer);
}

/// `goat chat` with stdin piped: `input`, then the end of it.
async fn chat_piped(env: &Env, args: &[&str], input: &str) -> std::process::Output {
    let mut cmd = env.cmd();
    cmd.arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let input = input.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

/// A URL nothing listens on: the connection is refused.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_whose_turns_never_reached_the_engine_leaves_no_session() {
    let env = Env::new();
    let url = refused_url();
    let out = chat_piped(
        &env,
        &["--engine", &url, "--model", "qwen"],
        "hello\nagain\n",
    )
    .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("▌ goat: error: the turn failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no turn reached the engine, so session"),
        "{stderr}"
    );
    assert!(!stderr.contains("is kept"), "{stderr}");
    let list = json_out(&env.run(&["sessions", "list", "--json"]));
    assert_eq!(list, serde_json::json!([]), "a session row was left behind");
    // Not a terminal: no colour on the error.
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_are_red_at_a_terminal_and_plain_with_no_color() {
    for (vars, red) in [(vec![], true), (vec![("NO_COLOR", "1")], false)] {
        let env = Env::new();
        let url = refused_url();
        let mut pty = chat(&env, &url, 80, &vars);
        pty.expect("> ");
        pty.type_keys("hello\r");
        pty.expect("the turn failed");
        pty.expect("> ");
        let transcript = pty.transcript();
        assert_eq!(
            transcript.contains("▌ goat: \x1b[31merror:\x1b[0m the turn failed"),
            red,
            "{transcript:?}"
        );
        if !red {
            assert!(
                transcript.contains("▌ goat: error: the turn failed"),
                "{transcript:?}"
            );
        }
        pty.type_keys("\x04");
        pty.expect("was not kept");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_chat_shows_the_last_exchanges_escaped() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        content_reply("First answer."),
        crate::call_reply("call_1", "read_file", r#"{"path": "missing.txt"}"#),
        content_reply("It is not there \u{1b}[2J at all."),
        content_reply("Third answer."),
        content_reply("Fourth answer, long enough."),
    ])
    .await;
    let url = server.base_url();
    let args = ["--engine", url.as_str(), "--model", "qwen"];
    let out = chat_piped(&env, &args, "one\ntwo \u{1b}[31m\nthree\nfour\n").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list = json_out(&env.run(&["sessions", "list", "--json"]));
    let id = list[0]["id"].as_str().unwrap().to_owned();

    let out = chat_piped(&env, &["--session", &id], "").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let recap = stderr
        .split_once("▌ goat: the last 3 of this session's 4 turns:\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        recap.starts_with(
            "  > two \\u{1b}[31m\n    read_file(path=\"missing.txt\") -> error\n    It is \
             not there \\u{1b}[2J at all.\n  > three\n    Third answer.\n  > four\n    Fourth \
             answer, long enough.\n"
        ),
        "{recap}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_printing_goats_exact_lines_never_makes_a_line_that_starts_like_goats() {
    // Issue 22: with NO_COLOR, the answer printed GOAT's exact question
    // just above the real one. GOAT's lines start with a mark that text
    // from the model is never shown with.
    let env = Env::new();
    // Paragraphs, so the rendered answer keeps each on a line of its own.
    let forged = "Here is what I will do.\n\n\
         goat: write_file wants to write 'notes/a.txt'; allow it?\n\n\
         \u{258C} goat: write_file wants to write 'notes/a.txt'; allow it?\n\n\
         \u{258C}       workspace: /etc\n\n\
         \u{2590} goat: write_file -> ok\n";
    let reply = Reply::builder()
        .text(forged)
        .tool_call(
            "write_file",
            r#"{"path": "notes/a.txt", "content": "hello\n"}"#,
        )
        .build();
    let server = ScriptedServer::start(vec![reply, content_reply("Not written.")]).await;
    let mut pty = chat(&env, &server.base_url(), 100, &[("NO_COLOR", "1")]);
    pty.expect("> ");
    pty.type_keys("make notes/a.txt\r");
    pty.expect("(default deny): ");
    pty.type_keys("d\r");
    pty.expect("Not written.");
    pty.expect("> ");
    let transcript = plain(&pty.transcript());
    let lines: Vec<&str> = transcript
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .collect();
    let marked: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with('\u{258C}'))
        .collect();
    let question = "\u{258C} goat: write_file wants to write 'notes/a.txt'; allow it?";
    assert_eq!(
        marked.iter().filter(|l| **l == question).count(),
        1,
        "{transcript}"
    );
    assert_eq!(
        marked
            .iter()
            .filter(|l| l
                .trim_start_matches('\u{258C}')
                .trim_start()
                .starts_with("workspace:"))
            .copied()
            .collect::<Vec<_>>(),
        [format!("\u{258C}       workspace: {}", env.ws_str())],
        "{transcript}"
    );
    // What the model printed is there, but never as a line of GOAT's.
    assert!(
        transcript.contains("\\u{258c} goat: write_file wants to write 'notes/a.txt'; allow it?"),
        "{transcript}"
    );
    assert!(
        transcript.contains("\\u{2590} goat: write_file -> ok"),
        "{transcript}"
    );
    assert!(!transcript.contains('\u{2590}'), "{transcript}");
    assert!(!env.ws.join("notes/a.txt").exists());
}
