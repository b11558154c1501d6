//! The server-sent events of an OpenAI-compatible chat completion stream.

use serde_json::{Value, json};

/// `data: {chunk}\n\n` with one choice holding `delta`.
pub fn ev_delta(delta: Value) -> String {
    ev(
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
    )
}

pub fn ev_content(text: &str) -> String {
    ev_delta(json!({"content": text}))
}

pub fn ev_reasoning(field: &str, text: &str) -> String {
    ev_delta(json!({ field: text }))
}

/// A tool call fragment: any of id, name, arguments may be absent.
pub fn ev_tool_call(
    index: u64,
    id: Option<&str>,
    name: Option<&str>,
    arguments: Option<&str>,
) -> String {
    let mut call = json!({"index": index, "type": "function", "function": {}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    if let Some(args) = arguments {
        call["function"]["arguments"] = json!(args);
    }
    ev_delta(json!({"tool_calls": [call]}))
}

pub fn ev_finish(reason: &str) -> String {
    ev(json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

pub fn ev_usage(prompt: u64, completion: u64) -> String {
    ev(
        json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}),
    )
}

pub fn ev_done() -> String {
    "data: [DONE]\n\n".to_owned()
}

pub fn ev(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}
