//! Bounds on what one response may make the host do and what one request
//! may carry, each with a result the model can act on.
//!
//! - At most [`MAX_CALLS_PER_RESPONSE`] calls of one response run; the rest
//!   are stored and answered "not run" without reaching the router, and
//!   the history later requests are built from leaves them out, with one
//!   line saying how many (`goat_store::dropped_unrun_note`), so a flood
//!   of calls cannot outgrow the window.
//! - A request's body is kept under [`MAX_REQUEST_BYTES`] by eliding the
//!   oldest tool results and call arguments in the request only (the store
//!   keeps them whole); the system prompt and every request of the person
//!   are never elided. If it still does not fit, the turn fails before
//!   anything is sent.

use std::time::Duration;

use goat_engine::{ChatRequest, Message};
use goat_store::{CallErrorKind, CallOutcome, CallStatus};
use serde_json::json;

use super::TurnError;

/// Calls of one response that run. Real parallel calls number a handful
/// (reading a few files at once); dozens mean a model in a loop or a
/// hostile engine, and each call may ask the person a question or write
/// a file. 32 leaves room for any honest batch.
pub const MAX_CALLS_PER_RESPONSE: usize = 32;

/// Largest request body sent, in bytes. The largest context windows local
/// engines serve are about 1M tokens, some 4 MiB of text at ~4 bytes a
/// token; JSON escaping and the tool schemas add less than as much again.
/// A body over 8 MiB cannot fit any model's context: sending it only makes
/// the engine tokenize it to reject it or silently cut it, so the oldest
/// bulk is elided first.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// What a call over [`MAX_CALLS_PER_RESPONSE`] is answered with.
pub fn too_many_calls_result() -> String {
    format!(
        "not run: too many calls in one response (limit {MAX_CALLS_PER_RESPONSE}); make fewer \
         calls at a time"
    )
}

/// The stored outcome of a call over the cap: an error that never ran.
pub(super) fn too_many_calls_outcome() -> CallOutcome {
    CallOutcome {
        status: CallStatus::Error,
        result: too_many_calls_result(),
        error_kind: Some(CallErrorKind::TooManyCalls),
        decision: None,
        decision_reason: None,
        duration: Duration::ZERO,
        exit_code: None,
        changes: Vec::new(),
        changes_stored: goat_store::ChangesStored::WithOutcome,
        refusals: vec![goat_store::Refusal::new(
            goat_store::RefusedBy::Limit,
            None,
            too_many_calls_result(),
        )],
        hooks: Vec::new(),
    }
}

/// Keeps `request`'s body for `model` within `limit` bytes: the oldest tool
/// results and call arguments first are replaced by a note saying how many
/// bytes they held (the call and its result stay, so the model still sees
/// that it happened). System and user messages are never touched. Fails
/// with [`TurnError::RequestTooLarge`] when even that is not enough.
pub(super) fn fit_request(
    request: &mut ChatRequest,
    model: &str,
    limit: usize,
) -> Result<(), TurnError> {
    // With the usage option: the larger of the two bodies the engine
    // client may send. A bound computed without serializing settles the
    // common case, a request far below the limit, every round.
    if request.body_bytes_bound(model, true) <= limit {
        return Ok(());
    }
    let mut total = request.body_bytes(model, true);
    for message in &mut request.messages {
        if total <= limit {
            return Ok(());
        }
        let before = message.wire_bytes();
        match message {
            Message::Tool { content, .. } => {
                let note = format!("[result elided: {} bytes]", content.len());
                if note.len() < content.len() {
                    *content = note;
                }
            }
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    let size = call.arguments.to_string().len();
                    let note = json!({"_elided": format!("[arguments elided: {size} bytes]")});
                    if note.to_string().len() < size {
                        call.arguments = note;
                    }
                }
            }
            Message::System { .. } | Message::User { .. } => continue,
        }
        total = total - before + message.wire_bytes();
    }
    if total <= limit {
        return Ok(());
    }
    Err(TurnError::RequestTooLarge {
        bytes: total,
        limit,
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use goat_engine::RequestToolCall;

    use super::*;

    fn call(id: &str) -> Message {
        Message::Assistant {
            content: None,
            tool_calls: vec![RequestToolCall {
                id: id.to_owned(),
                name: "read_file".to_owned(),
                arguments: json!({"path": "a.txt"}),
            }],
        }
    }

    fn result(id: &str, text: &str) -> Message {
        Message::Tool {
            tool_call_id: id.to_owned(),
            content: text.to_owned(),
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![
                Message::System {
                    content: "s".repeat(1000),
                },
                Message::User {
                    content: "u".repeat(1000),
                },
                call("c1"),
                result("c1", &"1".repeat(5000)),
                call("c2"),
                result("c2", &"2".repeat(5000)),
                Message::User {
                    content: "latest".repeat(100),
                },
            ],
            tools: vec![],
        }
    }

    #[test]
    fn the_oldest_result_goes_first_and_the_call_stays() {
        let mut r = request();
        let limit = r.body_bytes("m", true) - 4000;
        fit_request(&mut r, "m", limit).unwrap();
        assert!(r.body_bytes("m", true) <= limit);
        assert_eq!(r.messages[3], result("c1", "[result elided: 5000 bytes]"));
        assert_eq!(r.messages[5], result("c2", &"2".repeat(5000)));
        assert_eq!(r.messages[2], call("c1"), "the call is kept");
        assert_eq!(r.messages[..2], request().messages[..2]);
        assert_eq!(r.messages[6], request().messages[6]);
    }

    #[test]
    fn a_request_under_the_limit_is_untouched() {
        let mut r = request();
        let limit = r.body_bytes("m", true);
        fit_request(&mut r, "m", limit).unwrap();
        assert_eq!(r, request());
    }

    #[test]
    fn what_cannot_be_elided_fails_instead_of_being_sent() {
        let mut r = request();
        match fit_request(&mut r, "m", 2000) {
            Err(TurnError::RequestTooLarge { bytes, limit }) => {
                assert_eq!(limit, 2000);
                assert_eq!(bytes, r.body_bytes("m", true));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.messages[0], request().messages[0]);
        assert_eq!(r.messages[1], request().messages[1]);
    }
}
