//! `--logs-dir` with attempts (issue 42): every line of the run in
//! `DIR/events.jsonl`, and each attempt's own events, trajectory (read by
//! Harbor's ATIF models where they are installed) and patch under
//! `DIR/attempt-N`.

use serde_json::Value;

use super::{InOrder, can_attempt, write};
use crate::jsonl::lines;
use crate::{GoatRun, content_reply};

#[tokio::test(flavor = "multi_thread")]
async fn each_attempt_keeps_its_own_events_trajectory_and_patch_and_the_run_keeps_every_line() {
    if !can_attempt() {
        return;
    }
    let logs = tempfile::tempdir().unwrap();
    let run = GoatRun::builder()
        .replies([
            write("a1", "value.txt", "fail\n"),
            content_reply("Done."),
            write("b1", "value.txt", "pass two\n"),
            content_reply("Done."),
        ])
        .allow_writes()
        .attempts_in_order(2)
        .arg("--verify")
        .arg("grep -q pass value.txt")
        .arg("--logs-dir")
        .arg(logs.path().to_str().unwrap())
        .run("Make the check pass")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    // The run's own file: every attempt's lines and the run's end.
    let all = lines(&std::fs::read(logs.path().join("events.jsonl")).unwrap());
    crate::jsonl::validate(&all);
    for n in 1..=2 {
        assert!(
            all.iter()
                .any(|l| l["attempt"] == n && l["type"] == "turn.completed"),
            "attempt {n}"
        );
    }
    assert_eq!(all.last().unwrap()["type"], "attempts.completed");
    for (n, written) in [(1, "+fail"), (2, "+pass two")] {
        let dir = logs.path().join(format!("attempt-{n}"));
        // Its own lines, and only its own.
        let own = lines(&std::fs::read(dir.join("events.jsonl")).unwrap());
        let sessions: Vec<&Value> = own.iter().map(|l| &l["session_id"]).collect();
        assert!(sessions.windows(2).all(|w| w[0] == w[1]), "{own:?}");
        assert!(own.iter().all(|l| l["type"] != "attempts.completed"));
        // Its patch: what it changed in its layer.
        let patch = std::fs::read_to_string(dir.join("changes.patch")).unwrap();
        assert!(
            patch.contains("value.txt") && patch.contains(written),
            "attempt {n}: {patch}"
        );
        // Its trajectory, as Harbor reads it.
        let trajectory = dir.join("trajectory.json");
        let parsed: Value = serde_json::from_slice(&std::fs::read(&trajectory).unwrap()).unwrap();
        assert!(parsed["steps"].as_array().is_some_and(|s| !s.is_empty()));
        if let Some(python) = crate::atif::harbor_python() {
            let read = crate::atif::harbor_reads(&python, &trajectory).unwrap();
            assert_eq!(read["tool_calls"][0][0], "write_file", "{read}");
        }
    }
}
