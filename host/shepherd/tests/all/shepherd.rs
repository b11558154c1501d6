//! ADR-0065 regression tests through the real Shepherd, AppToolRouter,
//! permission gate, sandbox and store against a scripted engine. Each
//! asserts on the request bodies the engine received, the rows in the
//! store and the files in a disposable workspace.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use goat_engine::{CancellationToken, EngineClient, EngineConfig};
use goat_gate::{Interactive, WritePolicy};
use goat_router::{AppToolRouter, RouterConfig};
use goat_sandbox::{Sandbox, SandboxBuilder, Tool};
use goat_shepherd::{RECOVERY_INSTRUCTION, Shepherd, TurnError, TurnEvent, TurnSummary};
use goat_store::{
    CallStatus, MarkupChannel, RoundFailure, RoundStatus, Store, TurnRecord, TurnStatus,
};
use goat_testkit::*;
use serde_json::json;

/// The ADR's real case: Qwen3-Coder XML with a closing envelope and no
/// opening one, as plain content, naming an offered tool.
fn malformed_write() -> String {
    format!(
        "I'll create the file.\n{}",
        qwen_markup("write_file", &[("path", "hello.txt"), ("content", "hello")])
    )
}

pub(crate) fn shared_sandbox() -> (Arc<Sandbox>, Vec<Tool>) {
    static SHARED: OnceLock<(Arc<Sandbox>, Vec<Tool>)> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cache");
            let sandbox = SandboxBuilder::new().cache_dir(cache).build().unwrap();
            let tools = sandbox.load_pen_tools().unwrap();
            (Arc::new(sandbox), tools)
        })
        .clone()
}

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    store: Arc<Mutex<Store>>,
    session: String,
    pub(crate) server: ScriptedServer,
    shepherd: Shepherd,
}

pub(crate) async fn fixture(
    replies: Vec<Reply>,
    writes: WritePolicy,
    max_rounds: usize,
) -> Fixture {
    fixture_with(replies, writes, max_rounds, shared_sandbox()).await
}

async fn fixture_with(
    replies: Vec<Reply>,
    writes: WritePolicy,
    max_rounds: usize,
    (sandbox, tools): (Arc<Sandbox>, Vec<Tool>),
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let server = ScriptedServer::start(replies).await;
    let mut store = Store::open(&dir.path().join("state/goat.db")).unwrap();
    let session = store
        .create_session(&ws, &server.base_url(), "qwen")
        .unwrap();
    let store = Arc::new(Mutex::new(store));
    let router = AppToolRouter::new(
        sandbox,
        tools,
        RouterConfig {
            workspace: ws.clone(),
            permissions_db: dir.path().join("state/permissions.db"),
            session_id: session.clone(),
            interactive: Interactive::No,
            writes,
        },
    );
    let mut config = EngineConfig::new(server.base_url(), "qwen");
    config.retries = 0;
    let shepherd = Shepherd::new(
        EngineClient::new(config).unwrap(),
        router,
        store.clone(),
        session.clone(),
        "You are a coding agent.".to_owned(),
        max_rounds,
    );
    Fixture {
        _dir: dir,
        ws,
        store,
        session,
        server,
        shepherd,
    }
}

impl Fixture {
    /// A window far beyond any request here: what is tested is the byte
    /// cap, not the context (ADR-0074).
    pub(crate) fn huge_window(mut self) -> Self {
        self.shepherd = self
            .shepherd
            .with_context_window(goat_shepherd::WindowChoice::Setting(1 << 40));
        self
    }

    /// ADR-0067's setting on: unwrapped Qwen3-Coder blocks count.
    fn unwrapped_calls(mut self) -> Self {
        self.shepherd = self.shepherd.with_unwrapped_calls(true);
        self
    }

    pub(crate) async fn run(
        &self,
        prompt: &str,
    ) -> (Result<TurnSummary, TurnError>, Vec<TurnEvent>) {
        let mut events = Vec::new();
        let result = self
            .shepherd
            .run_turn(prompt, &CancellationToken::new(), &mut |e| events.push(e))
            .await;
        (result, events)
    }

    pub(crate) fn turns(&self) -> Vec<TurnRecord> {
        self.store.lock().unwrap().turns(&self.session).unwrap()
    }

    /// The text of every message the engine received in request `i`.
    pub(crate) fn request_text(&self, i: usize) -> String {
        self.server.requests()[i].body["messages"].to_string()
    }

    pub(crate) fn recovery_rows(&self) -> i64 {
        let path = self.store.lock().unwrap().path().to_owned();
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM recovery_events", [], |r| r.get(0))
            .unwrap()
    }
}

pub(crate) fn statuses(turn: &TurnRecord) -> Vec<RoundStatus> {
    turn.rounds.iter().map(|r| r.status).collect()
}

#[tokio::test]
async fn missing_opening_envelope_triggers_one_retry_and_the_corrected_call_runs_once() {
    let f = fixture(
        vec![
            Reply::text(&malformed_write()),
            Reply::tool_call(
                "write_file",
                json!({"path": "hello.txt", "content": "hello\n"}),
            ),
            Reply::text("Created hello.txt."),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    let (result, events) = f.run("Create hello.txt saying hello").await;
    let summary = result.unwrap();
    assert_eq!((summary.rounds, summary.recovery_used), (3, true));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert!(events.contains(&TurnEvent::Recovery {
        tool: "write_file".into(),
        in_reasoning: false,
    }));

    assert_eq!(f.server.requests().len(), 3);
    let (second, third) = (f.request_text(1), f.request_text(2));
    assert!(
        !second.contains("<function=write_file>"),
        "the malformed text was sent again"
    );
    assert!(
        second.contains(&json!(RECOVERY_INSTRUCTION).to_string()[1..40]),
        "{second}"
    );
    assert!(
        !third.contains("[GOAT host]"),
        "the instruction outlived its round"
    );
    assert!(!third.contains("<function=write_file>"));
    assert!(third.contains("Created 'hello.txt'"), "{third}");

    let turns = f.turns();
    assert_eq!(turns[0].status, TurnStatus::Completed);
    assert!(turns[0].recovery_used);
    assert_eq!(
        statuses(&turns[0]),
        [RoundStatus::Failed, RoundStatus::Ok, RoundStatus::Ok]
    );
    assert_eq!(turns[0].rounds[0].content, malformed_write());
    let calls: Vec<_> = turns[0].rounds.iter().flat_map(|r| &r.calls).collect();
    assert_eq!(calls.len(), 1, "exactly one call ran");
    assert_eq!(
        (calls[0].status, calls[0].decision),
        (CallStatus::Ok, Some(goat_store::CallDecision::Allow))
    );
    assert_eq!(f.recovery_rows(), 1);
}

#[tokio::test]
async fn fenced_example_is_ordinary_content_and_not_retried() {
    let text = format!(
        "Qwen writes calls like this:\n```xml\n{}\n```\nThat is all.",
        malformed_write()
    );
    let f = fixture(vec![Reply::text(&text)], WritePolicy::AllowAll, 8).await;
    let summary = f.run("How do tool calls look?").await.0.unwrap();
    assert_eq!(
        (
            summary.rounds,
            summary.recovery_used,
            summary.answer.as_str()
        ),
        (1, false, text.as_str())
    );
    assert_eq!(f.server.requests().len(), 1);
    assert!(!f.ws.join("hello.txt").exists());
    assert_eq!(f.recovery_rows(), 0);
}

#[tokio::test]
async fn second_malformed_response_stops_with_an_explicit_error_and_nothing_runs() {
    let f = fixture(
        vec![
            Reply::text(&malformed_write()),
            Reply::text(&malformed_write()),
            Reply::text("unused"),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    let result = f.run("Create hello.txt").await.0;
    assert!(
        matches!(&result, Err(TurnError::MarkupAgain { tool, in_reasoning: false }) if tool == "write_file"),
        "{result:?}"
    );
    assert_eq!(f.server.requests().len(), 2);
    assert!(!f.ws.join("hello.txt").exists());
    let turns = f.turns();
    assert_eq!(turns[0].status, TurnStatus::Failed);
    assert!(
        turns[0].error.as_deref().unwrap().contains("again"),
        "{:?}",
        turns[0].error
    );
    assert_eq!(
        statuses(&turns[0]),
        [RoundStatus::Failed, RoundStatus::Failed]
    );
}

#[tokio::test]
async fn no_retry_when_the_round_cap_has_no_room() {
    let f = fixture(
        vec![Reply::text(&malformed_write()), Reply::text("unused")],
        WritePolicy::AllowAll,
        1,
    )
    .await;
    let result = f.run("Create hello.txt").await.0;
    assert!(
        matches!(result, Err(TurnError::MarkupNoRoom { .. })),
        "{result:?}"
    );
    assert_eq!(f.server.requests().len(), 1);
    assert!(!f.turns()[0].recovery_used);
}

#[tokio::test]
async fn a_recovered_call_is_denied_at_the_normal_permission_gate() {
    // Not interactive, no --allow-writes: writes are denied by default,
    // recovery or not.
    let f = fixture(
        vec![
            Reply::text(&malformed_write()),
            Reply::tool_call(
                "write_file",
                json!({"path": "hello.txt", "content": "hello\n"}),
            ),
            Reply::text("I could not write it."),
        ],
        WritePolicy::Default,
        8,
    )
    .await;
    let summary = f.run("Create hello.txt").await.0.unwrap();
    assert!(summary.recovery_used);
    assert!(!f.ws.join("hello.txt").exists());
    let turns = f.turns();
    let call = &turns[0].rounds[1].calls[0];
    assert_eq!(
        (call.status, call.decision),
        (CallStatus::Denied, Some(goat_store::CallDecision::Deny))
    );
    assert!(
        f.request_text(2).contains("denied"),
        "{}",
        f.request_text(2)
    );
}

#[tokio::test]
async fn denials_and_tool_errors_do_not_trigger_recovery() {
    let f = fixture(
        vec![
            Reply::tool_call("write_file", json!({"path": "x.txt", "content": "x"})),
            Reply::tool_call("read_file", json!({"path": "missing.txt"})),
            Reply::text("Neither worked."),
        ],
        WritePolicy::Default,
        8,
    )
    .await;
    let summary = f.run("try things").await.0.unwrap();
    assert_eq!((summary.rounds, summary.recovery_used), (3, false));
    let turns = f.turns();
    assert_eq!(turns[0].rounds[0].calls[0].status, CallStatus::Denied);
    assert_eq!(turns[0].rounds[1].calls[0].status, CallStatus::Error);
    assert_eq!(
        turns[0].rounds[1].calls[0].error_kind,
        Some(goat_store::CallErrorKind::NotFound)
    );
    assert_eq!(f.recovery_rows(), 0);
}

#[tokio::test]
async fn a_response_with_structured_calls_and_markup_text_does_not_trigger() {
    let both = Reply::builder()
        .text(&malformed_write())
        .tool_call("write_file", json!({"path": "real.txt", "content": "real"}))
        .build();
    let f = fixture(vec![both, Reply::text("Done.")], WritePolicy::AllowAll, 8).await;
    let summary = f.run("write").await.0.unwrap();
    assert!(!summary.recovery_used);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("real.txt")).unwrap(),
        "real"
    );
    assert!(
        !f.ws.join("hello.txt").exists(),
        "markup text was never executed"
    );
}

#[tokio::test]
async fn a_store_write_failure_stops_recovery() {
    let f = fixture(
        vec![
            Reply::text(&malformed_write()),
            Reply::tool_call("write_file", json!({"path": "hello.txt", "content": "x"})),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    // Make the recovery write fail inside SQLite.
    let path = f.store.lock().unwrap().path().to_owned();
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER fail_recovery BEFORE INSERT ON recovery_events \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let result = f.run("Create hello.txt").await.0;
    assert!(matches!(result, Err(TurnError::Store(_))), "{result:?}");
    assert_eq!(
        f.server.requests().len(),
        1,
        "no retry after the failed write"
    );
    assert!(!f.ws.join("hello.txt").exists());
}

#[tokio::test]
async fn cancellation_stops_recovery() {
    let f = fixture(
        vec![
            Reply::text(&malformed_write()),
            Reply::tool_call("write_file", json!({"path": "hello.txt", "content": "x"})),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let result = f
        .shepherd
        .run_turn("Create hello.txt", &cancel, &mut |e| {
            if matches!(e, TurnEvent::Recovery { .. }) {
                trigger.cancel();
            }
        })
        .await;
    assert!(matches!(result, Err(TurnError::Cancelled)), "{result:?}");
    assert_eq!(f.server.requests().len(), 1);
    assert!(!f.ws.join("hello.txt").exists());
    assert_eq!(f.turns()[0].status, TurnStatus::Cancelled);
}

#[tokio::test]
async fn the_round_cap_is_an_explicit_error() {
    let f = fixture(
        vec![
            Reply::tool_call("list_directory", json!({})),
            Reply::tool_call("list_directory", json!({})),
            Reply::text("unused"),
        ],
        WritePolicy::Default,
        2,
    )
    .await;
    let result = f.run("loop").await.0;
    assert!(matches!(result, Err(TurnError::RoundCap(2))), "{result:?}");
    assert_eq!(f.turns()[0].status, TurnStatus::Failed);
}

#[tokio::test]
async fn a_tool_timeout_does_not_trigger_recovery() {
    // A sandbox with a short time limit, offering a guest that loops.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cache");
    let limits = goat_sandbox::Limits {
        timeout: std::time::Duration::from_millis(200),
        ..Default::default()
    };
    let sandbox = SandboxBuilder::new()
        .cache_dir(cache)
        .limits(limits)
        .build()
        .unwrap();
    let hostile = sandbox
        .load(
            "hostile",
            include_bytes!("../../../../plugins/dist/testing/hostile.wasm"),
        )
        .unwrap();
    let f = fixture_with(
        vec![
            Reply::tool_call("hostile", json!({"action": "loop"})),
            Reply::text("It timed out."),
        ],
        WritePolicy::Default,
        8,
        (Arc::new(sandbox), vec![hostile]),
    )
    .await;
    let summary = f.run("run it").await.0.unwrap();
    assert_eq!((summary.rounds, summary.recovery_used), (2, false));
    let turns = f.turns();
    let call = &turns[0].rounds[0].calls[0];
    assert_eq!(
        (call.status, call.error_kind),
        (CallStatus::Error, Some(goat_store::CallErrorKind::Timeout))
    );
    assert!(
        f.request_text(1).contains("longer than"),
        "{}",
        f.request_text(1)
    );
    assert_eq!(f.recovery_rows(), 0);
}

/// What vLLM's reasoning parser gives for Qwen3.5 when the model does not
/// close its thinking: the whole call in `reasoning_content`, no content.
fn reasoning_kept_call(path: &str) -> Reply {
    Reply::builder()
        .reasoning(
            "reasoning_content",
            &format!(
                "The user wants the first line. I'll read it.\n\n<tool_call>\n{}\n</tool_call>",
                qwen_unwrapped_markup("read_file", &[("path", path)])
            ),
        )
        .build()
}

fn markup_channels(turn: &TurnRecord) -> Vec<(Option<RoundFailure>, Option<MarkupChannel>)> {
    turn.rounds
        .iter()
        .map(|r| (r.failure_kind, r.markup_channel))
        .collect()
}

#[tokio::test]
async fn a_call_kept_in_the_reasoning_channel_gets_the_one_recovery() {
    let f = fixture(
        vec![
            reasoning_kept_call("notes.txt"),
            Reply::tool_call("read_file", json!({"path": "notes.txt"})),
            Reply::text("It says hi."),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    std::fs::write(f.ws.join("notes.txt"), "hi\n").unwrap();
    let (result, events) = f.run("What does notes.txt say?").await;
    let summary = result.unwrap();
    assert_eq!(
        (
            summary.rounds,
            summary.recovery_used,
            summary.answer.as_str()
        ),
        (3, true, "It says hi.")
    );
    assert!(events.contains(&TurnEvent::Recovery {
        tool: "read_file".into(),
        in_reasoning: true,
    }));

    assert_eq!(f.server.requests().len(), 3);
    let second = f.request_text(1);
    assert!(
        second.contains(&json!(RECOVERY_INSTRUCTION).to_string()[1..40]),
        "{second}"
    );
    assert!(!second.contains("<function=read_file>"), "{second}");
    assert!(!f.request_text(2).contains("[GOAT host]"));

    let turns = f.turns();
    assert_eq!(turns[0].status, TurnStatus::Completed);
    assert_eq!(
        statuses(&turns[0]),
        [RoundStatus::Failed, RoundStatus::Ok, RoundStatus::Ok]
    );
    assert_eq!(
        markup_channels(&turns[0]),
        [
            (Some(RoundFailure::Markup), Some(MarkupChannel::Reasoning)),
            (None, None),
            (None, None),
        ]
    );
    let failed = &turns[0].rounds[0];
    assert_eq!(failed.content, "");
    assert!(
        failed.reasoning.contains("<function=read_file>"),
        "{failed:?}"
    );
    assert!(
        failed
            .failure
            .as_deref()
            .unwrap()
            .contains("in the reasoning channel"),
        "{failed:?}"
    );
    let calls: Vec<_> = turns[0].rounds.iter().flat_map(|r| &r.calls).collect();
    assert_eq!(calls.len(), 1, "exactly one call ran: the structured one");
    assert_eq!(f.recovery_rows(), 1);
}

#[tokio::test]
async fn reasoning_is_not_read_when_the_answer_has_content() {
    let reply = Reply::builder()
        .reasoning(
            "reasoning_content",
            &format!(
                "I could call {}",
                qwen_markup("read_file", &[("path", "a")])
            ),
        )
        .text("The file is not needed: the answer is 42.")
        .build();
    let f = fixture(vec![reply, Reply::text("unused")], WritePolicy::AllowAll, 8).await;
    let summary = f.run("What is the answer?").await.0.unwrap();
    assert_eq!(
        (
            summary.rounds,
            summary.recovery_used,
            summary.answer.as_str()
        ),
        (1, false, "The file is not needed: the answer is 42.")
    );
    assert_eq!(f.server.requests().len(), 1);
    assert_eq!(f.recovery_rows(), 0);
}

#[tokio::test]
async fn a_second_call_in_the_reasoning_channel_stops_the_turn_naming_the_channel() {
    let f = fixture(
        vec![
            reasoning_kept_call("a"),
            reasoning_kept_call("a"),
            Reply::text("unused"),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    let result = f.run("Read a").await.0;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, TurnError::MarkupAgain { tool, in_reasoning: true } if tool == "read_file"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("the engine's reasoning parser kept the call in the reasoning channel"),
        "{err}"
    );
    assert_eq!(f.server.requests().len(), 2);
    let turns = f.turns();
    assert_eq!(turns[0].status, TurnStatus::Failed);
    assert_eq!(
        markup_channels(&turns[0]),
        [
            (Some(RoundFailure::Markup), Some(MarkupChannel::Reasoning)),
            (Some(RoundFailure::Markup), Some(MarkupChannel::Reasoning)),
        ]
    );
}

fn unwrapped_write() -> String {
    format!(
        "I'll create the file.\n{}\n",
        qwen_unwrapped_markup("write_file", &[("path", "hello.txt"), ("content", "hello")])
    )
}

#[tokio::test]
async fn an_unwrapped_call_completes_as_text_when_the_setting_is_off() {
    let f = fixture(
        vec![Reply::text(&unwrapped_write()), Reply::text("unused")],
        WritePolicy::AllowAll,
        8,
    )
    .await;
    let summary = f.run("Create hello.txt").await.0.unwrap();
    assert_eq!(
        (
            summary.rounds,
            summary.recovery_used,
            summary.answer.as_str()
        ),
        (1, false, unwrapped_write().as_str())
    );
    assert_eq!(f.server.requests().len(), 1);
    assert_eq!(statuses(&f.turns()[0]), [RoundStatus::Ok]);
    assert_eq!(f.recovery_rows(), 0);
    assert!(!f.ws.join("hello.txt").exists());
}

#[tokio::test]
async fn an_unwrapped_call_gets_the_one_recovery_when_the_setting_is_on() {
    let f = fixture(
        vec![
            Reply::text(&unwrapped_write()),
            Reply::tool_call(
                "write_file",
                json!({"path": "hello.txt", "content": "hello\n"}),
            ),
            Reply::text("Created hello.txt."),
        ],
        WritePolicy::AllowAll,
        8,
    )
    .await
    .unwrapped_calls();
    let (result, events) = f.run("Create hello.txt").await;
    let summary = result.unwrap();
    assert_eq!((summary.rounds, summary.recovery_used), (3, true));
    assert!(events.contains(&TurnEvent::Recovery {
        tool: "write_file".into(),
        in_reasoning: false,
    }));
    assert_eq!(f.server.requests().len(), 3);
    let second = f.request_text(1);
    assert!(
        second.contains(&json!(RECOVERY_INSTRUCTION).to_string()[1..40]),
        "{second}"
    );
    assert!(!second.contains("<function=write_file>"), "{second}");
    let turns = f.turns();
    assert_eq!(
        statuses(&turns[0]),
        [RoundStatus::Failed, RoundStatus::Ok, RoundStatus::Ok]
    );
    assert_eq!(
        markup_channels(&turns[0])[0],
        (Some(RoundFailure::Markup), Some(MarkupChannel::Content))
    );
    assert_eq!(turns[0].rounds[0].content, unwrapped_write());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("hello.txt")).unwrap(),
        "hello\n",
        "the structured call ran, once"
    );
    assert_eq!(f.recovery_rows(), 1);
}

#[tokio::test]
async fn fenced_and_inline_unwrapped_examples_never_trigger_even_with_the_setting_on() {
    let block = qwen_unwrapped_markup("write_file", &[("path", "a"), ("content", "b")]);
    let inline = "<function=write_file><parameter=path>a</parameter></function>";
    let text = format!(
        "Qwen3-Coder writes calls like this:\n```xml\n{block}\n```\nor inline: `{inline}`."
    );
    let f = fixture(
        vec![Reply::text(&text), Reply::text("unused")],
        WritePolicy::AllowAll,
        8,
    )
    .await
    .unwrapped_calls();
    let summary = f.run("How do tool calls look?").await.0.unwrap();
    assert_eq!(
        (
            summary.rounds,
            summary.recovery_used,
            summary.answer.as_str()
        ),
        (1, false, text.as_str())
    );
    assert_eq!(f.server.requests().len(), 1);
    assert_eq!(f.recovery_rows(), 0);
}
