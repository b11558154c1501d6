//! `goat sessions export --format atif`: a real session's trajectory, read
//! back by Harbor's own ATIF models (PyPI `harbor`, in the venv `.ci/run`
//! builds and names with `GOAT_HARBOR_PYTHON`). Without that interpreter
//! the Harbor check skips with a note, unless `GOAT_HARBOR_REQUIRED=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use goat_testkit::Reply;
use serde_json::{Value, json};

use crate::{GoatRun, call_reply, content_reply, json_out, malformed_write, text};

/// The interpreter with Harbor installed, or `None` with a note (a panic
/// when `.ci/run` said it is there).
pub(crate) fn harbor_python() -> Option<PathBuf> {
    match std::env::var_os("GOAT_HARBOR_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None if std::env::var_os("GOAT_HARBOR_REQUIRED").is_some_and(|v| v == "1") => {
            panic!("GOAT_HARBOR_REQUIRED=1 but GOAT_HARBOR_PYTHON is not set")
        }
        None => {
            eprintln!(
                "note: GOAT_HARBOR_PYTHON is not set (.ci/run sets it); skipping the check \
                 with Harbor's ATIF models"
            );
            None
        }
    }
}

/// Loads the trajectory at argv[1] with Harbor's `Trajectory` model and
/// its `TrajectoryValidator`, and prints what they read; any rejection
/// exits non-zero with Harbor's words.
const HARBOR_CHECK: &str = r#"
import json, sys
from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator

path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    data = json.load(f)
trajectory = Trajectory.model_validate(data)
validator = TrajectoryValidator()
if not validator.validate(path):
    sys.exit("TrajectoryValidator: " + "; ".join(validator.errors))
print(json.dumps({
    "schema_version": trajectory.schema_version,
    "agent": [trajectory.agent.name, trajectory.agent.version, trajectory.agent.model_name],
    "sources": [step.source for step in trajectory.steps],
    "tool_calls": [[call.function_name, call.arguments]
                   for step in trajectory.steps for call in step.tool_calls or []],
    "results": [result.source_call_id
                for step in trajectory.steps if step.observation
                for result in step.observation.results],
    "total_prompt_tokens": trajectory.final_metrics.total_prompt_tokens,
    "total_steps": trajectory.final_metrics.total_steps,
}))
"#;

/// What Harbor read from the trajectory at `path`, or its error.
pub(crate) fn harbor_reads(python: &Path, path: &Path) -> Result<Value, String> {
    let out = Command::new(python)
        .args(["-c", HARBOR_CHECK])
        .arg(path)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(text(&out.stderr))
    }
}

/// Two turns against a scripted engine: the first writes markup as text
/// (a failed round, recovered), then writes a file and reads it back with
/// structured calls, then answers; the second makes a call whose arguments
/// are not JSON, then answers. Usage is reported for some rounds only.
/// Between them, a summary of the first turn is stored as compaction
/// stores one (compaction itself has its own tests).
async fn exported() -> (GoatRun, Value, PathBuf) {
    let run = GoatRun::builder()
        .replies([
            malformed_write(),
            Reply::builder()
                .reasoning("reasoning_content", "The file does not exist yet.")
                .tool_call_with_id(
                    "call_w",
                    "write_file",
                    r#"{"path": "hello.txt", "content": "hello ✓\n"}"#,
                )
                .usage(120, 30)
                .build(),
            Reply::builder()
                .tool_call_with_id("call_r", "read_file", r#"{"path": "hello.txt"}"#)
                .usage(180, 12)
                .build(),
            Reply::builder()
                .text("Created hello.txt.")
                .usage(230, 5)
                .build(),
        ])
        .allow_writes()
        .json()
        .run("Create hello.txt saying hello ✓")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = run.summary()["session_id"].as_str().unwrap().to_owned();
    {
        let mut store = goat_store::Store::open(&run.env.db).unwrap();
        let turn = store.turns(&id).unwrap()[0].id;
        let summary = goat_store::NewSummary {
            through_turn_id: turn,
            through_round_id: None,
            content: "The person asked for hello.txt; it was written.".into(),
            reason: goat_store::CompactReason::Asked,
            prompt_tokens: Some(300),
            completion_tokens: Some(40),
        };
        store.add_summary(&id, &summary).unwrap();
    }
    let server = goat_testkit::ScriptedServer::start(vec![
        call_reply("call_bad", "read_file", "not json"),
        content_reply("That call was malformed."),
    ])
    .await;
    let again = run
        .env
        .resume(&server.base_url(), &id, "Read it again")
        .await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));

    let out = run
        .env
        .run(&["sessions", "export", &id[..6], "--format", "atif"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = run.env.root.join("trajectory.json");
    std::fs::write(&path, &out.stdout).unwrap();
    let trajectory = json_out(&out);
    (run, trajectory, path)
}

#[tokio::test(flavor = "multi_thread")]
async fn atif_export_maps_turns_rounds_calls_and_usage() {
    let (run, t, _) = exported().await;
    let id = run.summary()["session_id"].clone();
    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["session_id"], id);
    assert_eq!(
        t["agent"],
        json!({"name": "goat", "version": env!("CARGO_PKG_VERSION"), "model_name": "qwen"})
    );
    assert_eq!(t["extra"]["workspace"], run.env.ws_str());

    let steps = t["steps"].as_array().unwrap();
    let shape: Vec<(u64, &str, &str)> = steps
        .iter()
        .map(|s| {
            (
                s["step_id"].as_u64().unwrap(),
                s["source"].as_str().unwrap(),
                s["extra"]["status"]
                    .as_str()
                    .or(s["extra"]["turn_status"].as_str())
                    .or(s["extra"]["reason"].as_str())
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (1, "user", "completed"),
            (2, "agent", "failed"),
            (3, "agent", "ok"),
            (4, "agent", "ok"),
            (5, "agent", "ok"),
            (6, "system", "asked"),
            (7, "user", "completed"),
            (8, "agent", "ok"),
            (9, "agent", "ok"),
        ]
    );
    for step in steps {
        let stamp = step["timestamp"].as_str().unwrap();
        assert!(
            stamp.len() == 20 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
            "{stamp}"
        );
    }

    // The request, as typed (UTF-8 kept as it is).
    assert_eq!(steps[0]["message"], "Create hello.txt saying hello ✓");
    assert_eq!(steps[0]["extra"]["recovery_used"], true);

    // The markup round: what the model wrote, why it failed, no calls.
    let failed = &steps[1];
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("<function=write_file>"),
        "{failed}"
    );
    assert_eq!(failed["extra"]["failure_kind"], "markup");
    assert_eq!(failed["extra"]["markup_channel"], "content");
    assert!(failed.get("tool_calls").is_none(), "{failed}");
    assert!(failed.get("metrics").is_none(), "{failed}");

    // The write: reasoning, the call with parsed arguments, its result
    // with the gate's decision, the engine's usage.
    let write = &steps[2];
    assert_eq!(write["reasoning_content"], "The file does not exist yet.");
    assert_eq!(
        write["tool_calls"],
        json!([{
            "tool_call_id": "call_w",
            "function_name": "write_file",
            "arguments": {"path": "hello.txt", "content": "hello ✓\n"},
        }])
    );
    let result = &write["observation"]["results"][0];
    assert_eq!(result["source_call_id"], "call_w");
    assert_eq!(result["extra"]["status"], "ok");
    assert_eq!(result["extra"]["decision"], "allow");
    assert_eq!(
        write["metrics"],
        json!({"prompt_tokens": 120, "completion_tokens": 30})
    );
    assert_eq!(write["llm_call_count"], 1);

    // The read's result is the file, as the model was shown it.
    let read = &steps[3]["observation"]["results"][0];
    assert_eq!(read["source_call_id"], "call_r");
    assert!(
        read["content"].as_str().unwrap().contains("hello ✓"),
        "{read}"
    );
    assert_eq!(steps[4]["message"], "Created hello.txt.");

    // The summary, where later prompts began to carry it, marked as
    // Harbor's agents mark compaction.
    let summary = &steps[5];
    assert_eq!(
        summary["message"],
        "The person asked for hello.txt; it was written."
    );
    assert_eq!(
        summary["extra"]["context_management"],
        json!({"type": "compaction", "boundary": "replace"})
    );
    assert_eq!(summary["extra"]["prompt_tokens"], 300);

    // Arguments that are not an object: empty, and kept as written.
    let bad = &steps[7]["tool_calls"][0];
    assert_eq!(bad["arguments"], json!({}));
    assert_eq!(bad["extra"]["arguments_text"], "not json");
    assert_eq!(
        steps[7]["observation"]["results"][0]["extra"]["error_kind"],
        "invalid-arguments"
    );

    // Totals over the rounds that reported usage; the others counted, the
    // summary's tokens apart.
    assert_eq!(
        t["final_metrics"],
        json!({
            "total_prompt_tokens": 530,
            "total_completion_tokens": 47,
            "total_steps": 9,
            "extra": {
                "rounds_without_usage": 3,
                "summary_prompt_tokens": 300,
                "summary_completion_tokens": 40,
            },
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn harbors_trajectory_model_accepts_the_atif_export() {
    let Some(python) = harbor_python() else {
        return;
    };
    let (_run, trajectory, path) = exported().await;
    let read = harbor_reads(&python, &path).unwrap_or_else(|e| panic!("Harbor rejected it: {e}"));
    assert_eq!(read["schema_version"], "ATIF-v1.7");
    assert_eq!(
        read["agent"],
        json!(["goat", env!("CARGO_PKG_VERSION"), "qwen"])
    );
    assert_eq!(
        read["sources"],
        json!([
            "user", "agent", "agent", "agent", "agent", "system", "user", "agent", "agent"
        ])
    );
    assert_eq!(
        read["tool_calls"],
        json!([
            ["write_file", {"path": "hello.txt", "content": "hello ✓\n"}],
            ["read_file", {"path": "hello.txt"}],
            ["read_file", {}],
        ])
    );
    assert_eq!(read["results"], json!(["call_w", "call_r", "call_bad"]));
    assert_eq!(read["total_prompt_tokens"], 530);
    assert_eq!(read["total_steps"], 9);

    // The check can fail: Harbor refuses the same trajectory with a step
    // missing a required field, and with a result pointing at no call.
    let mut broken = trajectory.clone();
    broken["steps"][2]
        .as_object_mut()
        .unwrap()
        .remove("message");
    std::fs::write(&path, broken.to_string()).unwrap();
    let refused = harbor_reads(&python, &path).unwrap_err();
    assert!(refused.contains("message"), "{refused}");
    let mut broken = trajectory;
    broken["steps"][2]["observation"]["results"][0]["source_call_id"] = json!("call_nowhere");
    std::fs::write(&path, broken.to_string()).unwrap();
    let refused = harbor_reads(&python, &path).unwrap_err();
    assert!(refused.contains("call_nowhere"), "{refused}");
}
