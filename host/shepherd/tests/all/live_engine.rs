//! The configured coder model, live, through the Shepherd, AppToolRouter
//! and the Pen file tools, in a disposable workspace with a disposable
//! store and permission database. Opt-in: it needs a running engine.
//!
//! ```sh
//! GOAT_TEST_ENGINE_URL=http://127.0.0.1:8080/v1 GOAT_TEST_MODEL=qwen3-coder \
//!     cargo test -p goat-shepherd --test all live_engine -- --ignored
//! ```

use std::path::Path;
use std::sync::{Arc, Mutex};

use goat_engine::{CancellationToken, EngineClient, EngineConfig};
use goat_sandbox::SandboxBuilder;
use goat_shepherd::gate::{Interactive, WritePolicy};
use goat_shepherd::{AppToolRouter, RouterConfig, Shepherd, TurnEvent};
use goat_store::{Store, TurnStatus};

#[tokio::test]
#[ignore = "needs a live engine: set GOAT_TEST_ENGINE_URL and GOAT_TEST_MODEL, run with --ignored"]
async fn the_configured_model_creates_the_requested_file() {
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
    let shepherd = Shepherd::new(
        EngineClient::new(EngineConfig::new(url, model)).unwrap(),
        router,
        store.clone(),
        session.clone(),
        "You are a coding agent working in a workspace. Use the tools to act; paths are \
         relative to the workspace root."
            .to_owned(),
        8,
    );
    let mut recoveries = 0;
    let result = shepherd
        .run_turn(
            "Create a file named greeting.txt in the workspace containing exactly this text: hello from goat",
            &CancellationToken::new(),
            &mut |e| {
                if let TurnEvent::Recovery { .. } = e {
                    recoveries += 1;
                }
            },
        )
        .await;
    let turns = store.lock().unwrap().turns(&session).unwrap();
    assert!(result.is_ok(), "{result:?}\n{turns:#?}");
    assert_eq!(turns[0].status, TurnStatus::Completed);
    let written = std::fs::read_to_string(ws.join("greeting.txt")).unwrap();
    assert_eq!(written.trim(), "hello from goat");
    assert!(recoveries <= 1);
}
