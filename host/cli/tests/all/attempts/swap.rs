//! Swaps refused where they could not be undone or would lose work
//! (issue 42, ADR-0099): nothing moves, and the message says why.

use serde_json::json;

use super::{InOrder, can_attempt, write};
use crate::{GoatRun, call_reply, content_reply, json_out, text};

#[tokio::test(flavor = "multi_thread")]
async fn a_swap_that_would_replace_a_file_too_large_to_keep_is_refused_and_nothing_moves() {
    if !can_attempt() {
        return;
    }
    let run = GoatRun::builder()
        .replies([
            // Attempt 1 makes a file larger than GOAT keeps copies of.
            call_reply(
                "a1",
                "run_command",
                &json!({ "command": "head -c 9000000 /dev/zero > big.bin" }).to_string(),
            ),
            content_reply("Done."),
            // Attempt 2 makes none.
            write("b1", "small.txt", "small\n"),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--allow-commands")
        .attempts_in_order(2)
        .arg("--output")
        .arg("jsonl")
        .run("Try")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let env = &run.env;
    assert_eq!(
        std::fs::metadata(env.ws.join("big.bin")).unwrap().len(),
        9_000_000
    );
    // Swapping attempt 2 in would remove big.bin, whose bytes GOAT could
    // not keep: the swap could not be undone, so it is refused.
    let refused = env.run(&["attempts", "land", "2"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stdout));
    let said = text(&refused.stderr);
    assert!(
        said.contains("too large for GOAT to keep a copy of") && said.contains("nothing landed"),
        "{said}"
    );
    assert_eq!(
        std::fs::metadata(env.ws.join("big.bin")).unwrap().len(),
        9_000_000
    );
    assert!(!env.ws.join("small.txt").exists());
    assert_eq!(
        json_out(&env.run(&["attempts", "list", "--json"]))[0]["landed"],
        1
    );
    // In two steps it goes: the person undoes attempt 1, then lands 2.
    let undone = env.run(&["undo"]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert!(!env.ws.join("big.bin").exists(), "{}", text(&undone.stdout));
    let landed = env.run(&["attempts", "land", "2"]);
    assert!(landed.status.success(), "{}", text(&landed.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("small.txt")).unwrap(),
        "small\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_landing_undone_but_for_a_file_too_large_to_keep_is_no_longer_the_one_landed() {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            // Attempt 1 removes a file larger than GOAT keeps copies of.
            call_reply(
                "a1",
                "run_command",
                &json!({ "command": "rm big.bin && echo one > one.txt" }).to_string(),
            ),
            content_reply("Done."),
            write("b1", "two.txt", "two\n"),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--allow-commands")
        .attempts_in_order(2)
        .arg("--output")
        .arg("jsonl");
    std::fs::write(builder.env().ws.join("big.bin"), vec![b'x'; 9_000_000]).unwrap();
    let run = builder.run("Try").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let env = &run.env;
    assert!(!env.ws.join("big.bin").exists());
    // Undo takes back what it can: one.txt goes; big.bin's bytes were not
    // kept, and undo says so.
    let undone = env.run(&["undo"]);
    assert!(
        text(&undone.stdout).contains("NOT put back"),
        "{}",
        text(&undone.stdout)
    );
    assert!(!env.ws.join("one.txt").exists());
    // The landing is taken back: attempt 2 lands on its own, not as a swap
    // that could never put big.bin back.
    assert_eq!(
        json_out(&env.run(&["attempts", "list", "--json"]))[0]["landed"],
        serde_json::Value::Null
    );
    let landed = env.run(&["attempts", "land", "2"]);
    assert!(landed.status.success(), "{}", text(&landed.stderr));
    assert!(!text(&landed.stdout).contains("in place of"));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("two.txt")).unwrap(),
        "two\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_landing_the_rules_refuse_keeps_no_session_and_goat_undo_still_takes_back_what_landed() {
    if !can_attempt() {
        return;
    }
    let run = GoatRun::builder()
        .replies([
            write("a1", "one.txt", "one\n"),
            content_reply("Done."),
            write("b1", "secret.txt", "two\n"),
            content_reply("Done."),
        ])
        .allow_writes()
        .attempts_in_order(2)
        .arg("--output")
        .arg("jsonl")
        .run("Try")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let env = &run.env;
    let sessions = || {
        json_out(&env.run(&["sessions", "list", "--json"]))
            .as_array()
            .unwrap()
            .len()
    };
    let before = sessions();
    let denied = env.run(&[
        "permissions",
        "deny",
        "run_command",
        "secret.txt",
        "--write",
    ]);
    assert!(denied.status.success(), "{}", text(&denied.stderr));
    let refused = env.run(&["attempts", "land", "2"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stdout));
    assert!(
        text(&refused.stdout).contains("did not land; the workspace is as it was"),
        "{}",
        text(&refused.stdout)
    );
    assert!(!env.ws.join("secret.txt").exists());
    assert_eq!(
        sessions(),
        before,
        "{}",
        text(&env.run(&["sessions", "list"]).stdout)
    );
    // goat undo takes back attempt 1's landing, not an empty session.
    let undone = env.run(&["undo"]);
    assert!(undone.status.success(), "{}", text(&undone.stdout));
    assert!(!env.ws.join("one.txt").exists(), "{}", text(&undone.stdout));
}
