//! Parallel calls told apart when an engine reuses an index, duplicate
//! ids made unique, and which finish reasons finish a response: each at
//! every split of the byte stream.

use goat_engine::{EngineError, FinishReason, Response, StreamAssembler};
use serde_json::json;

use goat_testkit::*;

/// The same bytes fed split at every byte boundary (two pieces), and in
/// every chunk size up to 97: all must give `whole`'s outcome.
fn at_every_split(body: &str) -> Result<Response, String> {
    let bytes = body.as_bytes();
    let feed = |chunks: &[&[u8]]| -> Result<Response, String> {
        let mut a = StreamAssembler::new();
        for c in chunks {
            a.feed(c, &mut |_| {}).map_err(|e| e.to_string())?;
        }
        a.finish().map_err(|e| e.to_string())
    };
    let whole = feed(&[bytes]);
    for i in 0..=bytes.len() {
        let (a, b) = bytes.split_at(i);
        assert_eq!(feed(&[a, b]), whole, "split at byte {i}");
    }
    for size in 1..=bytes.len().min(97) {
        let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
        assert_eq!(feed(&chunks), whole, "in {size}-byte chunks");
    }
    whole
}

fn calls(r: &Response) -> Vec<(&str, &str, serde_json::Value)> {
    r.tool_calls
        .iter()
        .map(|c| {
            (
                c.id.as_str(),
                c.name.as_str(),
                c.arguments.clone().unwrap_or_else(|e| json!(e.to_string())),
            )
        })
        .collect()
}

#[test]
fn a_reused_index_with_a_new_id_is_a_second_call_id_only_on_first_delta() {
    // Ollama's qwen3-coder parser (Sep 2025 to Feb 2026): the second
    // parallel call comes as index 0 again, with a new id; later pieces of
    // each call carry no id.
    let body = [
        ev_tool_call(0, Some("call_a"), Some("read_file"), Some("{\"path\":")),
        ev_tool_call(0, None, None, Some("\"README.md\"}")),
        ev_tool_call(0, Some("call_b"), Some("read_file"), Some("{\"path\":")),
        ev_tool_call(0, None, None, Some("\"src/main.rs\"}")),
        ev_finish("tool_calls"),
        ev_done(),
    ]
    .concat();
    let r = at_every_split(&body).unwrap();
    assert_eq!(
        calls(&r),
        [
            ("call_a", "read_file", json!({"path": "README.md"})),
            ("call_b", "read_file", json!({"path": "src/main.rs"})),
        ]
    );
}

#[test]
fn a_reused_index_with_a_new_id_is_a_second_call_id_on_every_delta() {
    let body = [
        ev_tool_call(0, Some("call_a"), Some("read_file"), Some("{\"path\":")),
        ev_tool_call(0, Some("call_a"), None, Some("\"README.md\"}")),
        ev_tool_call(0, Some("call_b"), Some("read_file"), Some("{\"path\":")),
        ev_tool_call(0, Some("call_b"), None, Some("\"src/main.rs\"}")),
        ev_finish("stop"),
        ev_done(),
    ]
    .concat();
    let r = at_every_split(&body).unwrap();
    assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        calls(&r),
        [
            ("call_a", "read_file", json!({"path": "README.md"})),
            ("call_b", "read_file", json!({"path": "src/main.rs"})),
        ]
    );
}

#[test]
fn whole_calls_all_at_index_zero_stay_apart() {
    let whole = |id: &str, path: &str| {
        ev_delta(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": "read_file", "arguments": json!({"path": path}).to_string()}}]}),
        )
    };
    let body = [
        whole("c1", "a"),
        whole("c2", "b"),
        whole("c3", "c"),
        ev_finish("tool_calls"),
        ev_done(),
    ]
    .concat();
    let r = at_every_split(&body).unwrap();
    let ids: Vec<_> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    assert!(r.tool_calls.iter().all(|c| c.arguments.is_ok()));
}

#[test]
fn duplicate_ids_in_one_response_are_made_unique_deterministically() {
    // Two calls under one id, and a third whose id is what the first
    // suffix would be: each ends with its own id.
    let body = [
        ev_tool_call(
            0,
            Some("call_1"),
            Some("read_file"),
            Some("{\"path\":\"a\"}"),
        ),
        ev_tool_call(
            1,
            Some("call_1"),
            Some("read_file"),
            Some("{\"path\":\"b\"}"),
        ),
        ev_tool_call(
            2,
            Some("call_1-2"),
            Some("read_file"),
            Some("{\"path\":\"c\"}"),
        ),
        ev_tool_call(
            3,
            Some("call_1"),
            Some("read_file"),
            Some("{\"path\":\"d\"}"),
        ),
        ev_finish("tool_calls"),
        ev_done(),
    ]
    .concat();
    let r = at_every_split(&body).unwrap();
    assert_eq!(
        calls(&r),
        [
            ("call_1", "read_file", json!({"path": "a"})),
            ("call_1-3", "read_file", json!({"path": "b"})),
            ("call_1-2", "read_file", json!({"path": "c"})),
            ("call_1-4", "read_file", json!({"path": "d"})),
        ]
    );
}

#[test]
fn only_stop_and_tool_calls_finish_a_response() {
    for finished in ["stop", "tool_calls", "function_call"] {
        let body = [ev_content("All done."), ev_finish(finished), ev_done()].concat();
        let r = at_every_split(&body).unwrap_or_else(|e| panic!("{finished}: {e}"));
        assert_eq!(r.content, "All done.", "{finished}");
    }
    for unfinished in ["abort", "error", "content_filter", "gremlins"] {
        let body = [
            ev_content("The answer is"),
            ev_finish(unfinished),
            ev_done(),
        ]
        .concat();
        let err = at_every_split(&body).unwrap_err();
        assert!(
            err.contains(&format!("finish_reason \"{unfinished}\"")),
            "{unfinished}: {err}"
        );
        let mut a = StreamAssembler::new();
        a.feed(body.as_bytes(), &mut |_| {}).unwrap();
        match a.finish() {
            Err(EngineError::Unfinished { reason }) => assert_eq!(reason, unfinished),
            other => panic!("{unfinished}: {other:?}"),
        }
    }
}

#[test]
fn an_abort_beside_tool_calls_is_not_a_response() {
    let body = [
        ev_tool_call(0, Some("c"), Some("write_file"), Some("{\"path\":\"x\"}")),
        ev_finish("abort"),
        ev_done(),
    ]
    .concat();
    assert!(at_every_split(&body).unwrap_err().contains("\"abort\""));
}
