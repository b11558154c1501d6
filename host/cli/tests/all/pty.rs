//! `goat chat` under a pseudo-terminal, read as a person reads it: the
//! approval question with the path and what would change, answered by
//! typing; Ctrl-C typed during a turn cancelling it and coming back to the
//! prompt; Ctrl-C at the prompt leaving; colour only when allowed.
//!
//! The pty is goat's controlling terminal (`setsid -c`), so a typed Ctrl-C
//! reaches it as SIGINT from the terminal's line discipline, exactly as at
//! a real terminal, not as a signal the test sends.

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goat_testkit::{Reply, ScriptedServer, Step, ev_content};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use serde_json::Value;

use crate::{Env, call_reply, content_reply, json_out, text};

/// How long to wait for something to appear before failing the test with
/// the transcript; generous, for a loaded machine, and never reached when
/// things work.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// `goat` running with a pty as its terminal, and everything it wrote.
pub(crate) struct Pty {
    child: Child,
    master: File,
    seen: Arc<Mutex<Vec<u8>>>,
    /// How far [`Pty::expect`] has read.
    cursor: usize,
}

impl Pty {
    pub(crate) fn spawn(env: &Env, args: &[&str], extra_env: &[(&str, &str)]) -> Self {
        let master =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();

        let mut cmd = Command::new("setsid");
        env.isolate(&mut cmd);
        cmd.args(["-w", "-c", env!("CARGO_BIN_EXE_goat")])
            .args(args)
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        for (key, value) in extra_env {
            cmd.env(key, value);
        }
        let child = cmd.spawn().unwrap();
        // The parent's copies of the terminal side must close, or reading
        // the master would never see the end.
        drop(cmd);

        let master = File::from(master);
        let mut reader = master.try_clone().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once goat has exited and closed the terminal.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            child,
            master,
            seen,
            cursor: 0,
        }
    }

    pub(crate) fn transcript(&self) -> String {
        text(&self.seen.lock().unwrap())
    }

    /// Waits until `needle` appears after what was already expected, and
    /// moves past it.
    pub(crate) fn expect(&mut self, needle: &str) {
        let started = Instant::now();
        loop {
            let all = self.transcript();
            if let Some(at) = all.get(self.cursor..).and_then(|rest| rest.find(needle)) {
                self.cursor += at + needle.len();
                return;
            }
            if started.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("never saw {needle:?}; the terminal showed:\n{all}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sizes the terminal, as a window of `cols` columns would.
    pub(crate) fn resize(&self, cols: u16) {
        let size = rustix::termios::Winsize {
            ws_row: 24,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&self.master, size).unwrap();
    }

    /// Types `keys` at the terminal.
    pub(crate) fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for goat to exit and returns its exit code.
    pub(crate) fn exit_code(&mut self) -> Option<i32> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if started.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!(
                    "goat did not exit; the terminal showed:\n{}",
                    self.transcript()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `text` holds a colour code (SGR: `ESC [`, digits and `;`, `m`).
pub(crate) fn has_colour(text: &str) -> bool {
    text.split("\x1b[").skip(1).any(|rest| {
        let params = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ';');
        params.starts_with('m')
    })
}

pub(crate) fn write_call() -> Reply {
    call_reply(
        "call_1",
        "write_file",
        r#"{"path": "notes/a.txt", "content": "hello\n"}"#,
    )
}

fn session_json(env: &Env) -> Value {
    let list = json_out(&env.run(&["sessions", "list", "--json"]));
    let id = list[0]["id"].as_str().unwrap().to_owned();
    json_out(&env.run(&["sessions", "show", &id, "--json"]))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_question_shows_the_change_and_always_is_saved_as_a_rule() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        write_call(),
        content_reply("Created notes/a.txt."),
        write_call(),
        content_reply("Wrote it again."),
    ])
    .await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("chatting with qwen");
    pty.expect("> ");
    pty.type_keys("make notes/a.txt\r");
    pty.expect("▌ goat: write_file wants to write 'notes/a.txt'; allow it?");
    pty.expect(&format!("workspace: {}", env.ws_str()));
    pty.expect("creates 'notes/a.txt': 1 line, 6 bytes");
    // Colour on a terminal without NO_COLOR: the new line is green.
    pty.expect("\x1b[32m+ hello\x1b[0m");
    pty.expect(
        "allow? [o]nce, for this [s]ession, [a]lways in this workspace, [d]eny (default deny): ",
    );
    assert!(
        !env.ws.join("notes/a.txt").exists(),
        "nothing is written before the answer"
    );
    pty.type_keys("a\r");
    pty.expect("-> ok: Created 'notes/a.txt'");
    pty.expect("Created notes/a.txt.");
    pty.expect("> ");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/a.txt")).unwrap(),
        "hello\n"
    );

    // The same write again is allowed by the saved rule: no question.
    pty.type_keys("again\r");
    pty.expect("Wrote it again.");
    pty.expect("> ");
    assert_eq!(
        pty.transcript().matches("allow? [o]nce").count(),
        1,
        "{}",
        pty.transcript()
    );
    pty.type_keys("\x04");
    pty.expect("continue it with goat chat --session");
    assert_eq!(pty.exit_code(), Some(0));

    let rules = json_out(&env.run(&["permissions", "list", "--json"]));
    let rules = rules.as_array().unwrap();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0]["effect"], "allow");
    assert_eq!(rules[0]["access"], "write");
    assert_eq!(rules[0]["pattern"], "notes/a.txt");
    assert_eq!(rules[0]["tool"], "write_file");
    assert_eq!(
        rules[0]["workspace"],
        env.ws_str(),
        "bound to this workspace"
    );

    let session = session_json(&env);
    let turns = session["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{session}");
    let decisions: Vec<&str> = turns
        .iter()
        .flat_map(|t| t["rounds"].as_array().unwrap())
        .flat_map(|r| r["tool_calls"].as_array().unwrap())
        .map(|c| c["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["ask-allowed-always", "allow"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_the_turn_and_returns_to_the_prompt_and_ctrl_c_there_leaves() {
    let env = Env::new();
    // The first answer starts, then the engine goes quiet for longer than
    // any test waits.
    let stalled = Reply::sse_steps(vec![
        Step::Bytes(ev_content("Let me think about").into_bytes()),
        Step::Sleep(Duration::from_secs(600)),
    ]);
    let server = ScriptedServer::start(vec![stalled, content_reply("Second answer.")]).await;
    let url = server.base_url();
    let mut pty = Pty::spawn(
        &env,
        &["chat", "--engine", &url, "--model", "qwen"],
        &[("NO_COLOR", "1")],
    );
    pty.expect("> ");
    pty.type_keys("first question\r");
    // The last word waits for the whitespace after it (it may go on).
    pty.expect("Let me think");
    pty.type_keys("\x03");
    pty.expect("▌ goat: cancelling");
    pty.expect("the turn was cancelled and is recorded as cancelled");
    pty.expect("> ");

    // Still in the same chat: the next turn runs.
    pty.type_keys("second question\r");
    pty.expect("Second answer.");
    pty.expect("> ");
    pty.type_keys("\x03");
    pty.expect("continue it with goat chat --session");
    assert_eq!(pty.exit_code(), Some(0));
    let transcript = pty.transcript();
    // The line editor moves the cursor; colour (SGR, `ESC [ … m`) and the
    // spinner never appear.
    assert!(
        !has_colour(&transcript) && !transcript.contains(['⠋', '⠙', '⠹']),
        "NO_COLOR: no colour codes, no spinner:\n{transcript:?}"
    );

    let session = session_json(&env);
    let statuses: Vec<&str> = session["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["cancelled", "completed"], "{session}");
    // The second request carries the second question, and the cancelled
    // turn's half answer is not presented as something the model said.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("second question"), "{second}");
    assert!(!second.contains("Let me think about"), "{second}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_approval_writes_nothing_and_the_model_is_told() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![write_call(), content_reply("Understood.")]).await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("> ");
    pty.type_keys("make notes/a.txt\r");
    pty.expect("(default deny): ");
    pty.type_keys("\r");
    pty.expect("-> denied");
    pty.expect("Understood.");
    pty.expect("> ");
    pty.type_keys("\x04");
    assert_eq!(pty.exit_code(), Some(0));
    assert!(!env.ws.join("notes").exists());
    let second = server.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("denied: the person at the terminal did not allow it"),
        "{second}"
    );
    let rules = json_out(&env.run(&["permissions", "list", "--json"]));
    assert_eq!(rules.as_array().unwrap().len(), 0, "{rules}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_without_a_terminal_reads_prompts_from_stdin_and_never_asks() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        content_reply("One."),
        write_call(),
        content_reply("Could not write."),
    ])
    .await;
    let url = server.base_url();
    let mut cmd = env.cmd();
    cmd.args(["chat", "--engine", &url, "--model", "qwen"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"first\n\nsecond\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "One.\nCould not write.\n");
    assert!(
        !stderr.lines().any(|l| l.starts_with('>')),
        "no prompt without a terminal: {stderr}"
    );
    assert!(!stderr.contains("allow?"), "{stderr}");
    assert!(
        stderr.contains("-> denied: writing 'notes/a.txt' with write_file needs approval"),
        "{stderr}"
    );
    assert!(!stdout.contains('\x1b') && !stderr.contains('\x1b'));
    assert!(!env.ws.join("notes").exists());
    assert_eq!(server.requests().len(), 3, "the empty line is not a turn");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spinner_waits_for_the_first_token_and_clears_its_line_for_the_answer() {
    let env = Env::new();
    let mut slow = content_reply("The answer.");
    // Model load and prefill: nothing comes back for a while.
    slow.delay_headers = Duration::from_millis(1500);
    let server = ScriptedServer::start(vec![slow]).await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("> ");
    pty.type_keys("question\r");
    pty.expect(" waiting for the model (0s)");
    // The spinner's line is cleared before the first text, so the answer
    // starts on a clean line.
    pty.expect("\r\x1b[2KThe answer.");
    pty.expect("> ");
    pty.type_keys("\x04");
    assert_eq!(pty.exit_code(), Some(0));
    let after = pty.transcript();
    let answer_at = after.find("The answer.").unwrap();
    assert!(
        !after[answer_at..].contains("waiting for the model"),
        "the spinner stopped at the first token: {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_an_approval_question_denies_the_write_and_cancels_the_turn() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![write_call(), content_reply("Next.")]).await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("> ");
    pty.type_keys("make notes/a.txt\r");
    pty.expect("(default deny): ");
    pty.type_keys("\x03");
    pty.expect("▌ goat: cancelling");
    pty.expect("the turn was cancelled and is recorded as cancelled");
    pty.expect("> ");
    assert!(!env.ws.join("notes").exists());
    // Back at the prompt, the chat goes on.
    pty.type_keys("next\r");
    pty.expect("Next.");
    pty.expect("> ");
    pty.type_keys("\x04");
    assert_eq!(pty.exit_code(), Some(0));

    let session = session_json(&env);
    let turns = session["turns"].as_array().unwrap();
    assert_eq!(turns[0]["status"], "cancelled", "{session}");
    let call = &turns[0]["rounds"][0]["tool_calls"][0];
    assert_eq!(call["status"], "denied", "{session}");
    assert_eq!(call["decision"], "ask-denied", "{session}");
    assert_eq!(turns[1]["status"], "completed", "{session}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_session_resumes_with_the_earlier_turns_in_the_history() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        content_reply("First answer."),
        content_reply("Again."),
    ])
    .await;
    let url = server.base_url();
    let chat = |args: Vec<String>, input: &'static [u8]| {
        let mut cmd = env.cmd();
        cmd.args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let base: Vec<String> = ["chat", "--engine", &url, "--model", "qwen"]
        .map(str::to_owned)
        .to_vec();
    let first = tokio::task::block_in_place(|| chat(base.clone(), b"remember the word plum\n"));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let list = json_out(&env.run(&["sessions", "list", "--json"]));
    let id = list[0]["id"].as_str().unwrap().to_owned();

    let mut resumed = base;
    resumed.extend(["--session".to_owned(), id.clone()]);
    let second = tokio::task::block_in_place(|| chat(resumed, b"which word?\n"));
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(
        text(&second.stderr).contains(&format!("resuming session {id}")),
        "{}",
        text(&second.stderr)
    );
    let messages = server.requests()[1].body["messages"].clone();
    let contents: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents[1..],
        ["remember the word plum", "First answer.", "which word?"],
        "{messages}"
    );
    assert_eq!(
        json_out(&env.run(&["sessions", "list", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn goat_run_at_a_terminal_asks_the_same_question_and_ctrl_c_there_denies() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        write_call(),
        content_reply("Done."),
        write_call(),
        content_reply("Never sent."),
    ])
    .await;
    let url = server.base_url();
    let run = [
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "make notes/a.txt",
    ];

    let mut pty = Pty::spawn(&env, &run, &[("NO_COLOR", "1")]);
    pty.expect("creates 'notes/a.txt': 1 line, 6 bytes");
    pty.expect("+ hello");
    pty.expect("(default deny): ");
    pty.type_keys("o\r");
    pty.expect("Done.");
    assert_eq!(pty.exit_code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/a.txt")).unwrap(),
        "hello\n"
    );
    std::fs::remove_file(env.ws.join("notes/a.txt")).unwrap();

    // "Once" saved nothing: the next run asks again, and Ctrl-C at the
    // question answers no and cancels the turn.
    let mut pty = Pty::spawn(&env, &run, &[("NO_COLOR", "1")]);
    pty.expect("(default deny): ");
    pty.type_keys("\x03");
    pty.expect("recorded as cancelled");
    assert_eq!(pty.exit_code(), Some(130));
    assert!(!env.ws.join("notes/a.txt").exists());
    assert_eq!(
        server.requests().len(),
        3,
        "the cancelled turn asked nothing more"
    );
}

#[test]
fn plugins_add_at_a_terminal_shows_what_is_asked_and_only_yes_adds() {
    let env = Env::new();
    let wc = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/dist/examples/wc.wasm")
        .canonicalize()
        .unwrap();
    let wc = wc.to_str().unwrap();

    let mut pty = Pty::spawn(&env, &["plugins", "add", wc], &[]);
    pty.expect("plugin       wc");
    pty.expect("tool         wc__count");
    pty.expect("access       read (the workspace, read-only)");
    pty.expect("grants       nothing");
    pty.expect("sha256       ");
    pty.expect("Add plugin 'wc' as tool wc__count, with read workspace access? [y/N] ");
    pty.type_keys("\r");
    pty.expect("not added");
    assert_eq!(pty.exit_code(), Some(1));
    let listed = json_out(&env.run(&["plugins", "list", "--json"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");

    let mut pty = Pty::spawn(&env, &["plugins", "add", wc], &[]);
    pty.expect("[y/N] ");
    pty.type_keys("y\r");
    pty.expect("added plugin 'wc': the model can call it as wc__count");
    assert_eq!(pty.exit_code(), Some(0));
    let listed = json_out(&env.run(&["plugins", "list", "--json"]));
    assert_eq!(listed[0]["name"], "wc", "{listed}");
    assert_eq!(listed[0]["tool"], "wc__count", "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_d_at_a_question_denies_that_call_and_the_terminal_still_answers_the_next() {
    let env = Env::new();
    let server = ScriptedServer::start(vec![
        write_call(),
        write_call(),
        content_reply("Written on the second try."),
    ])
    .await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("> ");
    pty.type_keys("make notes/a.txt\r");
    pty.expect("(default deny): ");
    pty.type_keys("\x04");
    pty.expect("-> denied");
    // The model tries again; the question is asked and answered.
    pty.expect("(default deny): ");
    pty.type_keys("o\r");
    pty.expect("-> ok: Created 'notes/a.txt'");
    pty.expect("Written on the second try.");
    pty.expect("> ");
    pty.type_keys("\x04");
    assert_eq!(pty.exit_code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes/a.txt")).unwrap(),
        "hello\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_question_shows_command_directory_and_network_and_always_saves_it() {
    let env = Env::new();
    let call = || {
        call_reply(
            "call_1",
            "run_command",
            r#"{"command": "echo hi > made.txt"}"#,
        )
    };
    let server = ScriptedServer::start(vec![
        call(),
        content_reply("Ran it."),
        call(),
        content_reply("Ran it again."),
    ])
    .await;
    let url = server.base_url();
    let mut pty = Pty::spawn(&env, &["chat", "--engine", &url, "--model", "qwen"], &[]);
    pty.expect("> ");
    pty.type_keys("run it\r");
    pty.expect(
        "▌ goat: run_command wants to run 'echo hi > made.txt' in '.' (network closed); allow it?",
    );
    pty.expect(&format!("workspace: {}", env.ws_str()));
    pty.expect("$ echo hi > made.txt");
    pty.expect("directory: .");
    pty.expect("[a]lways in this workspace");
    assert!(
        !env.ws.join("made.txt").exists(),
        "nothing runs before the answer"
    );
    pty.type_keys("a\r");
    pty.expect("Ran it.");
    pty.expect("> ");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("made.txt")).unwrap(),
        "hi\n"
    );
    pty.type_keys("again\r");
    pty.expect("Ran it again.");
    pty.expect("> ");
    assert_eq!(pty.transcript().matches("allow? [o]nce").count(), 1);
    pty.type_keys("\x04");
    assert_eq!(pty.exit_code(), Some(0));

    let rules = json_out(&env.run(&["permissions", "list", "--json"]));
    let rules = rules.as_array().unwrap();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0]["command"], "echo hi > made.txt");
    assert_eq!(rules[0]["effect"], "allow");
    assert_eq!(rules[0]["workspace"], env.ws_str());
}
