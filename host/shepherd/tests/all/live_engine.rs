//! A live engine through the Shepherd, AppToolRouter, the permission gate
//! and the Pen file tools, in a disposable workspace with a disposable
//! store and permission database. Opt-in: it needs a running engine.
//!
//! ```sh
//! GOAT_TEST_ENGINE_URL=http://127.0.0.1:8080/v1 GOAT_TEST_MODEL=qwen3-coder \
//!     cargo test -p goat-shepherd --test all live_engine -- --ignored
//! ```
//!
//! Every request is at temperature 0 with a fixed seed (`GOAT_TEST_SEED`,
//! default 42), so on one engine build and model each run sends the same
//! requests and gets the same answers.
//!
//! Two tests: a coder model creates the file it is asked for; any model
//! that makes a structured call gets its read through the gate and the
//! Pen. `.ci/run` runs the second against the real llama-server with Gemma
//! 3 270M and the one-call Hermes template (docs/engines.md says why: at
//! temperature 0 neither registry model writes a file, and SmolLM2 makes
//! no call at all).

use std::path::Path;
use std::sync::{Arc, Mutex};

use goat_engine::{CancellationToken, EngineClient, EngineConfig, Sampling};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_sandbox::SandboxBuilder;
use goat_shepherd::{Shepherd, TurnError, TurnEvent, TurnSummary};
use goat_store::{CallDecision, Store, TurnRecord, TurnStatus};

struct Live {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    store: Arc<Mutex<Store>>,
    session: String,
    shepherd: Shepherd,
}

impl Live {
    fn start() -> Self {
        let (Ok(url), Ok(model)) = (
            std::env::var("GOAT_TEST_ENGINE_URL"),
            std::env::var("GOAT_TEST_MODEL"),
        ) else {
            panic!(
                "set GOAT_TEST_ENGINE_URL (e.g. http://127.0.0.1:8080/v1) and GOAT_TEST_MODEL to run this test"
            );
        };
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("README.md"), "A scratch project.\n").unwrap();
        std::fs::write(ws.join("notes.txt"), "first line of the notes\n").unwrap();
        let mut store = Store::open(&dir.path().join("state/goat.db")).unwrap();
        let session = store.create_session(&ws, &url, &model).unwrap();
        let store = Arc::new(Mutex::new(store));
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cache");
        let sandbox = SandboxBuilder::new().cache_dir(cache).build().unwrap();
        let tools = sandbox.load_pen_tools().unwrap();
        let router = AppToolRouter::new(
            Arc::new(sandbox),
            tools,
            RouterConfig {
                workspace: ws.clone(),
                permissions_db: dir.path().join("state/permissions.db"),
                session_id: session.clone(),
                interactive: Interactive::No,
                writes: WritePolicy::AllowAll,
            },
        );
        let seed = std::env::var("GOAT_TEST_SEED").map_or(42, |s| s.parse().unwrap());
        let mut config = EngineConfig::new(url, model);
        config.sampling = Sampling {
            temperature: Some(0.0),
            seed: Some(seed),
            max_output_tokens: Some(512),
            ..Sampling::default()
        };
        let shepherd = Shepherd::new(
            EngineClient::new(config).unwrap(),
            router,
            store.clone(),
            session.clone(),
            "You are a coding agent working in a workspace. Use the tools to act; paths are \
             relative to the workspace root."
                .to_owned(),
            8,
        );
        Self {
            _dir: dir,
            ws,
            store,
            session,
            shepherd,
        }
    }

    async fn run(&self, prompt: &str) -> (Result<TurnSummary, TurnError>, usize, Vec<TurnRecord>) {
        let mut recoveries = 0;
        let result = self
            .shepherd
            .run_turn(prompt, &CancellationToken::new(), &mut |e| {
                if let TurnEvent::Recovery { .. } = e {
                    recoveries += 1;
                }
            })
            .await;
        let turns = self.store.lock().unwrap().turns(&self.session).unwrap();
        (result, recoveries, turns)
    }
}

#[tokio::test]
#[ignore = "needs a live engine: set GOAT_TEST_ENGINE_URL and GOAT_TEST_MODEL, run with --ignored"]
async fn the_configured_model_creates_the_requested_file() {
    let live = Live::start();
    let (result, recoveries, turns) = live
        .run("Create a file named greeting.txt in the workspace containing exactly this text: hello from goat")
        .await;
    assert!(result.is_ok(), "{result:?}\n{turns:#?}");
    assert_eq!(turns[0].status, TurnStatus::Completed);
    let written = std::fs::read_to_string(live.ws.join("greeting.txt")).unwrap();
    assert_eq!(written.trim(), "hello from goat");
    assert!(recoveries <= 1);
}

#[tokio::test]
#[ignore = "needs a live engine: set GOAT_TEST_ENGINE_URL and GOAT_TEST_MODEL, run with --ignored"]
async fn the_models_structured_read_goes_through_the_gate_and_the_pen() {
    let live = Live::start();
    let (result, _, turns) = live.run("Read the file notes.txt.").await;
    // The engine's parser made a structured call of the first answer;
    // whether the model then finishes is the model's business.
    let first = &turns[0].rounds[0];
    assert_eq!(first.calls.len(), 1, "{result:?}\n{turns:#?}");
    let call = &first.calls[0];
    assert_eq!(call.call.tool, "read_file");
    // Which path the model names is its own choice (Gemma 3 270M at
    // temperature 0 names "path"); what GOAT does with it is not: the gate
    // allowed a read inside the workspace, and the Pen tool ran on that
    // path and answered, its answer stored with the call.
    let arguments: serde_json::Value = serde_json::from_str(&call.call.arguments).unwrap();
    let path = arguments["path"].as_str().unwrap();
    assert_eq!(call.decision, Some(CallDecision::Allow), "{call:#?}");
    let answer = call.result.as_deref().unwrap_or_default();
    if path == "notes.txt" {
        assert!(answer.contains("first line of the notes"), "{call:#?}");
    } else {
        assert!(
            answer.contains(&format!("'{path}' does not exist")),
            "{call:#?}"
        );
    }
    assert!(
        turns[0].status != TurnStatus::Cancelled,
        "{:?}",
        turns[0].status
    );
}
