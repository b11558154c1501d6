//! Harbor runs GOAT as it runs any installed agent (issue 40): `harbor run`
//! with its Docker environment over the task set in `tests/harbor/tasks`,
//! four trials at once, GOAT installed by `integrations/harbor`
//! (`goat_harbor:Goat`), a scripted engine on the host that the containers
//! reach through Docker's bridge, and Harbor's own verifier scoring each
//! trial. Harbor's job result is read back, and each trajectory is loaded
//! by Harbor's `Trajectory` model.
//!
//! Needs a Docker daemon, `docker compose` and the base image that
//! `tests/harbor/setup.sh` makes from Debian's packages; `.ci/run` runs it
//! and sets `GOAT_HARBOR_DOCKER=1` when all are there (and then the test is
//! required). Without them it skips with a note.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use goat_testkit::{
    Recorded, Reply, ScriptedServer, ev, ev_content, ev_done, ev_finish, ev_tool_call,
};
use serde_json::{Value, json};

use crate::text;

/// Harbor's interpreter, when `.ci/run` found Docker, compose and the base
/// image; `None` with a note otherwise (a panic when it said they are there).
fn harbor_with_docker() -> Option<PathBuf> {
    let required = std::env::var_os("GOAT_HARBOR_DOCKER_REQUIRED").is_some_and(|v| v == "1");
    let python = std::env::var_os("GOAT_HARBOR_PYTHON").map(PathBuf::from);
    match (std::env::var_os("GOAT_HARBOR_DOCKER"), python) {
        (Some(on), Some(python)) if on == "1" => Some(python),
        _ if required => panic!(
            "GOAT_HARBOR_DOCKER_REQUIRED=1 but GOAT_HARBOR_DOCKER=1 and GOAT_HARBOR_PYTHON are \
             not both set"
        ),
        _ => {
            eprintln!(
                "note: GOAT_HARBOR_DOCKER is not set (.ci/run sets it where a Docker daemon, \
                 docker compose and the base image are there: tests/harbor/setup.sh); skipping \
                 harbor run with GOAT in Docker"
            );
            None
        }
    }
}

/// The address the containers reach the host at: the default bridge's
/// gateway, which Docker names, or else (as Docker 20.10 leaves it out)
/// the first address of its subnet, which is what Docker gives the bridge.
fn bridge_gateway() -> IpAddr {
    let out = Command::new("docker")
        .args([
            "network",
            "inspect",
            "bridge",
            "--format",
            "{{json .IPAM.Config}}",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &config[0];
    if let Some(gateway) = first["Gateway"].as_str().filter(|g| !g.is_empty()) {
        return gateway.parse().unwrap();
    }
    let subnet = first["Subnet"].as_str().unwrap();
    let network: std::net::Ipv4Addr = subnet.split('/').next().unwrap().parse().unwrap();
    std::net::Ipv4Addr::from(u32::from(network) + 1).into()
}

/// Each round's usage: 100 prompt tokens, 60 of them from the engine's
/// cache, 10 completion tokens; Harbor's context must add them up.
fn usage() -> String {
    ev(json!({"id": "c1", "choices": [], "usage": {
        "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
        "prompt_tokens_details": {"cached_tokens": 60}
    }}))
}

fn call(name: &str, args: &Value) -> Reply {
    Reply::sse(
        [
            ev_tool_call(0, Some("call_1"), Some(name), Some(&args.to_string())),
            ev_finish("tool_calls"),
            usage(),
            ev_done(),
        ]
        .concat(),
    )
}

fn answer(text: &str) -> Reply {
    Reply::sse([ev_content(text), ev_finish("stop"), usage(), ev_done()].concat())
}

/// The model for every task: which one is asked is in the instruction, and
/// how far it got is the number of tool results it has seen.
fn scripted(request: &Recorded) -> Reply {
    let body = request.body.to_string();
    let results = request.body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    if body.contains("TASK engine-down") {
        return Reply::error(
            500,
            "application/json",
            r#"{"error":{"message":"scripted failure"}}"#,
        );
    }
    if results > 0 {
        return answer("done");
    }
    if body.contains("TASK create-file") {
        call(
            "write_file",
            &json!({"path": "hello.txt", "content": "hello from goat\n"}),
        )
    } else if body.contains("TASK fix-test") {
        call(
            "run_command",
            &json!({"command": "sed -i 's/ + 1//' calc.sh && sh check.sh"}),
        )
    } else if body.contains("TASK protected-hook") {
        call(
            "write_file",
            &json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nmake lint\n"}),
        )
    } else {
        answer("no task named")
    }
}

/// Loads `path` with Harbor's `Trajectory` model; its step count.
fn harbor_steps(python: &Path, path: &Path) -> u64 {
    let out = Command::new(python)
        .args([
            "-c",
            "import json, sys\n\
             from harbor.models.trajectories import Trajectory\n\
             t = Trajectory.model_validate(json.load(open(sys.argv[1])))\n\
             print(len(t.steps))",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "Harbor refused {}: {}",
        path.display(),
        text(&out.stderr)
    );
    text(&out.stdout).trim().parse().unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread")]
async fn harbor_runs_goat_in_docker_four_at_once_and_its_verifier_scores_each_trial() {
    let Some(python) = harbor_with_docker() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let server = ScriptedServer::start_with_on(bridge_gateway(), scripted).await;
    let jobs = tempfile::tempdir().unwrap();
    let harbor = python.with_file_name("harbor");
    let mut cmd = Command::new(&harbor);
    cmd.arg("run")
        .arg("-p")
        .arg(repo.join("tests/harbor/tasks"))
        .args([
            "-a",
            "goat_harbor:Goat",
            "-n",
            "4",
            "--job-name",
            "goat",
            "-y",
        ])
        .arg("--ae")
        .arg(format!("GOAT_ENGINE_URL={}", server.base_url()))
        .args(["--ae", "GOAT_MODEL=scripted"])
        .arg("-o")
        .arg(jobs.path())
        .env("PYTHONPATH", repo.join("integrations/harbor"))
        .env("GOAT_BINARY", env!("CARGO_BIN_EXE_goat"));
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let said = format!(
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let job = jobs.path().join("goat");
    assert!(job.join("result.json").is_file(), "no job result: {said}");

    // Harbor's own account of the job.
    let result = read_json(&job.join("result.json"));
    assert_eq!(result["n_total_trials"], 4, "{said}");
    assert_eq!(result["stats"]["n_completed_trials"], 4, "{result}");
    assert_eq!(result["stats"]["n_errored_trials"], 1, "{result}");

    // Each trial, by task.
    let mut trials: BTreeMap<String, (PathBuf, Value)> = BTreeMap::new();
    for entry in std::fs::read_dir(&job).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("result.json").is_file() {
            let trial = read_json(&dir.join("result.json"));
            let task = trial["task_name"].as_str().unwrap().to_owned();
            trials.insert(task, (dir, trial));
        }
    }
    let names: Vec<&str> = trials.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["create-file", "engine-down", "fix-test", "protected-hook"],
        "{result}"
    );
    let reward = |task: &str| trials[task].1["verifier_result"]["rewards"]["reward"].as_f64();
    let meta = |task: &str| trials[task].1["agent_result"]["metadata"].clone();

    // The three GOAT can finish are solved and scored 1 by the verifier:
    // the file is there, the project's check passes, and the hooks
    // directory is as the image made it.
    for task in ["create-file", "fix-test", "protected-hook"] {
        let (dir, trial) = &trials[task];
        assert_eq!(reward(task), Some(1.0), "{task}: {trial}");
        assert!(trial["exception_info"].is_null(), "{task}: {trial}");
        // Harbor's context, filled from GOAT's trajectory: two rounds.
        let agent = &trial["agent_result"];
        assert_eq!(agent["n_input_tokens"], 200, "{task}: {agent}");
        assert_eq!(agent["n_cache_tokens"], 120, "{task}: {agent}");
        assert_eq!(agent["n_output_tokens"], 20, "{task}: {agent}");
        // GOAT's trajectory says what the engine served from its cache.
        let trajectory = read_json(&dir.join("agent/trajectory.json"));
        assert_eq!(
            trajectory["final_metrics"]["total_cached_tokens"], 120,
            "{task}"
        );
        assert_eq!(
            trajectory["steps"][1]["metrics"]["cached_tokens"], 60,
            "{task}"
        );
        // The trajectory, as Harbor's model reads it: the person's step
        // and the two rounds.
        assert_eq!(
            harbor_steps(&python, &dir.join("agent/trajectory.json")),
            3,
            "{task}"
        );
        // The agent said which containment run_command got there.
        let tools = std::fs::read_to_string(dir.join("agent/goat-tools.txt")).unwrap();
        assert!(tools.contains("run_command"), "{task}: {tools}");
    }
    assert_eq!(meta("create-file")["goat_outcome"], "completed");
    assert_eq!(meta("fix-test")["goat_outcome"], "completed");
    // The denied write was refused by the protection of .git, counted as a
    // denial, and (with --allow-denials) left the scoring to the verifier.
    assert_eq!(
        meta("protected-hook")["goat_outcome"],
        "completed_with_denials"
    );
    assert_eq!(meta("protected-hook")["goat_exit_code"], 0);
    let events =
        std::fs::read_to_string(trials["protected-hook"].0.join("agent/events.jsonl")).unwrap();
    let last: Value = serde_json::from_str(events.lines().last().unwrap()).unwrap();
    assert_eq!(last["denials"][0]["source"], "protected", "{last}");
    assert_eq!(
        last["denials"][0]["targets"][0], ".git/hooks/pre-commit",
        "{last}"
    );
    // fix-test's command ran and its change landed in the workspace.
    let patch = std::fs::read_to_string(trials["fix-test"].0.join("agent/changes.patch")).unwrap();
    assert!(
        patch.contains("-echo $((2 + 2 + 1))") && patch.contains("+echo $((2 + 2))"),
        "{patch}"
    );

    // The engine that failed is an agent error in Harbor, with GOAT's exit
    // code, never a success.
    let (_, down) = &trials["engine-down"];
    assert_eq!(
        down["exception_info"]["exception_type"], "NonZeroAgentExitCodeError",
        "{down}"
    );
    let message = down["exception_info"]["exception_message"]
        .as_str()
        .unwrap();
    assert!(message.contains("(exit 7)"), "{message}");
    assert_eq!(meta("engine-down")["goat_outcome"], "engine_failed");
    assert_ne!(reward("engine-down"), Some(1.0));
    // Its record is whole too: the person's step and the failed round.
    let down_trajectory = trials["engine-down"].0.join("agent/trajectory.json");
    assert_eq!(harbor_steps(&python, &down_trajectory), 2);

    // Every task reached the engine, from the containers.
    let asked: std::collections::BTreeSet<String> = server
        .requests()
        .iter()
        .filter_map(|r| {
            let body = r.body.to_string();
            ["create-file", "engine-down", "fix-test", "protected-hook"]
                .into_iter()
                .find(|t| body.contains(&format!("TASK {t}")))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(asked.len(), 4, "{asked:?}");
}
