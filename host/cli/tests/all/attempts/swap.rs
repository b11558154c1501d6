//! Swaps refused where they could not be undone or would lose work
//! (issue 42, ADR-0099): nothing moves, and the message says why.

use serde_json::json;

use super::{can_attempt, write};
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
        .arg("--attempts")
        .arg("2")
        .arg("--attempts-parallel")
        .arg("1")
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
