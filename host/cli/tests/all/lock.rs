//! One process drives a session at a time: a second `goat run` on a
//! session another run is driving is refused at once, before it touches
//! the session; reading the session still works; a killed driver lets go.

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use goat_testkit::{Hold, Reply, ScriptedServer};
use serde_json::Value;

use crate::{Env, json_out, text};

/// How long a test waits for a run to reach its held engine reply.
const REACH_ENGINE: Duration = Duration::from_secs(60);

/// A refused run fails fast: no sandbox built, no engine asked. Generous,
/// for a loaded test machine; the held run it races waits for minutes.
const REFUSED_WITHIN: Duration = Duration::from_secs(20);

/// A session with one finished turn; its id.
async fn session(env: &Env, url: &str) -> String {
    let out = env
        .run_async(&["run", "--engine", url, "--model", "qwen", "--json", "Start"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    json_out(&out)["session_id"].as_str().unwrap().to_owned()
}

/// `goat run --session id PROMPT`, started and left running.
fn drive(env: &Env, url: &str, id: &str, prompt: &str) -> Child {
    env.cmd()
        .args([
            "run",
            "--engine",
            url,
            "--model",
            "qwen",
            "--json",
            "--session",
            id,
            prompt,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `goat sessions show id --json`: the turns' statuses and each turn's
/// round statuses.
fn statuses(env: &Env, id: &str) -> Vec<(String, Vec<String>)> {
    let out = env.run(&["sessions", "show", id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = json_out(&out);
    let as_text = |v: &Value| v.as_str().unwrap().to_owned();
    shown["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let rounds = t["rounds"].as_array().unwrap();
            (
                as_text(&t["status"]),
                rounds.iter().map(|r| as_text(&r["status"])).collect(),
            )
        })
        .collect()
}

fn owned(turns: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    turns
        .iter()
        .map(|(t, rs)| {
            (
                (*t).to_owned(),
                rs.iter().map(|r| (*r).to_owned()).collect(),
            )
        })
        .collect()
}

/// Waits for `child` off the async threads.
async fn finish(child: Child) -> Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_run_on_a_session_being_driven_is_refused_before_it_touches_it() {
    let env = Env::new();
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::text("Started."),
        Reply::text("Carried on.").held(&hold),
        // Only a run that got past the lock would ask for this.
        Reply::text("Meddled."),
    ])
    .await;
    let url = server.base_url();
    let id = session(&env, &url).await;

    let first = drive(&env, &url, &id, "Carry on");
    assert!(
        server.wait_for_requests(2, REACH_ENGINE).await,
        "the first run never reached the engine"
    );

    let started = Instant::now();
    let second = env.resume(&url, &id, "Meddle").await;
    let took = started.elapsed();
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "▌ goat: error: session {id} is in use: another GOAT process (pid {}) is running \
             turns in it. Wait for that process to finish (or stop it), or start a new session \
             by leaving out --session\n",
            first.id()
        )
    );
    assert!(took < REFUSED_WITHIN, "refused only after {took:?}");
    assert_eq!(
        server.requests().len(),
        2,
        "the refused run asked the engine"
    );

    // `goat chat` drives sessions the same way, and is refused the same way.
    let chat = env
        .run_async(&[
            "chat",
            "--engine",
            &url,
            "--model",
            "qwen",
            "--session",
            &id,
        ])
        .await;
    assert_eq!(chat.status.code(), Some(2), "{}", text(&chat.stderr));
    assert_eq!(text(&chat.stderr), stderr);

    // Reading needs no lock, and shows the first run's turn untouched:
    // still running, its round still streaming (not marked interrupted).
    assert_eq!(
        statuses(&env, &id),
        owned(&[("completed", &["ok"]), ("running", &["streaming"])])
    );
    let stats = env.run(&["stats"]);
    assert_eq!(stats.status.code(), Some(0), "{}", text(&stats.stderr));

    hold.release();
    let first = finish(first).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(json_out(&first)["status"], "completed");
    assert_eq!(
        statuses(&env, &id),
        owned(&[("completed", &["ok"]), ("completed", &["ok"])])
    );

    // Once the first run has ended, the session is free again.
    let third = env.resume(&url, &id, "Again").await;
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    assert_eq!(text(&third.stdout), "Meddled.\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_whose_driver_was_killed_can_be_resumed() {
    let env = Env::new();
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::text("Started."),
        Reply::text("Never sent.").held(&hold),
        Reply::text("Back again."),
    ])
    .await;
    let url = server.base_url();
    let id = session(&env, &url).await;

    let mut first = drive(&env, &url, &id, "Carry on");
    assert!(
        server.wait_for_requests(2, REACH_ENGINE).await,
        "the first run never reached the engine"
    );
    // SIGKILL: GOAT runs no code on the way out; only the kernel lets go.
    first.kill().unwrap();
    let killed = finish(first).await;
    assert_eq!(killed.status.code(), None, "{}", text(&killed.stderr));

    let out = env.resume(&url, &id, "Resume").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout), "Back again.\n");
    // The killed run's turn is what resuming marks interrupted.
    assert_eq!(
        statuses(&env, &id),
        owned(&[
            ("completed", &["ok"]),
            ("failed", &["failed"]),
            ("completed", &["ok"])
        ])
    );
    hold.release();
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_rm_removes_what_it_names_and_never_a_session_being_driven() {
    let env = Env::new();
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Carried on.").held(&hold),
    ])
    .await;
    let url = server.base_url();
    let gone = session(&env, &url).await;
    let busy = session(&env, &url).await;

    let driver = drive(&env, &url, &busy, "Carry on");
    assert!(
        server.wait_for_requests(3, REACH_ENGINE).await,
        "the driving run never reached the engine"
    );
    let out = env.run(&["sessions", "rm", &gone[..8], &busy, "feedbeef"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("removed session {gone} (1 turn)\n")
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("session '{busy}' was not removed"))
            && stderr.contains("is in use"),
        "{stderr}"
    );
    assert!(
        stderr.contains("session 'feedbeef' was not removed"),
        "{stderr}"
    );
    hold.release();
    let finished = finish(driver).await;
    assert_eq!(
        finished.status.code(),
        Some(0),
        "{}",
        text(&finished.stderr)
    );

    let listed = json_out(&env.run(&["sessions", "list", "--json"]));
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [busy.as_str()]);
    assert_eq!(
        statuses(&env, &busy),
        owned(&[("completed", &["ok"]), ("completed", &["ok"])])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hard_link_to_the_store_in_another_directory_meets_the_same_lock() {
    // Issue 22: the lock is the store file's, by device and inode, not its
    // path's. A symlink resolves to the same path; a hard link does not.
    let env = Env::new();
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::text("Started."),
        Reply::text("Carried on.").held(&hold),
        // Only a run that got past the lock would ask for this.
        Reply::text("Meddled."),
    ])
    .await;
    let url = server.base_url();
    let id = session(&env, &url).await;
    let elsewhere = env.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let hard = elsewhere.join("hard.db");
    std::fs::hard_link(&env.db, &hard).unwrap();

    let first = drive(&env, &url, &id, "Carry on");
    assert!(
        server.wait_for_requests(2, REACH_ENGINE).await,
        "the first run never reached the engine"
    );
    let second = env
        .run_async(&[
            "run",
            "--engine",
            &url,
            "--model",
            "qwen",
            "--db",
            hard.to_str().unwrap(),
            "--session",
            &id,
            "Meddle",
        ])
        .await;
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "session {id} is in use: another GOAT process (pid {}) is running turns in it",
            first.id()
        )),
        "{stderr}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the run through the hard link asked the engine"
    );
    // The first run's turn was left alone: still streaming, not
    // interrupted.
    assert_eq!(
        statuses(&env, &id),
        owned(&[("completed", &["ok"]), ("running", &["streaming"])])
    );

    hold.release();
    let first = finish(first).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(
        statuses(&env, &id),
        owned(&[("completed", &["ok"]), ("completed", &["ok"])])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_directory_others_may_write_is_refused_before_the_engine_is_asked() {
    // Another user could swap the lock files in a directory it may write;
    // GOAT says which directory and what to do, and runs nothing.
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let server = ScriptedServer::start(vec![Reply::text("Never sent.")]).await;
    let locks = env.root.join("xdg-run").join("goat-session-locks");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env
        .run_async(&[
            "run",
            "--engine",
            &server.base_url(),
            "--model",
            "qwen",
            "Hello",
        ])
        .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot lock the session with {}", locks.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("set XDG_RUNTIME_DIR to a private directory to use another"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "the engine was asked");
}
