//! What an engine's prefix cache must prefill for a sequence of chat
//! requests, and the least any fitting of the same conversation must send
//! (issue 25).
//!
//! llama.cpp (`cache_prompt`), vLLM (automatic prefix caching) and SGLang
//! (the radix cache) keep the longest common prefix of consecutive
//! requests and prefill only what follows the first changed byte. The
//! meter reads each request as a chat template lays it out (the system
//! message, then the tools, then the other messages in order; JSON key
//! order is serde's, stable) and counts, for each request, the bytes after
//! its longest common prefix with the request before it.
//!
//! The least is the first request whole, then each round's new messages
//! once, whole (a message is known by its role and call ids, or its text,
//! so a result later sent as a stub is not new). A request that is not a
//! round (a summary asked of the model) adds to what was prefilled and
//! nothing to the least.

use std::collections::HashSet;

use serde_json::Value;

/// Estimated tokens of `bytes` (3 bytes a token, the Shepherd's estimate
/// before an engine has counted a request).
pub fn estimated_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(3)
}

/// What a request is, for the meter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// A round of a turn: its new messages count in the least.
    Round,
    /// Anything else (a summary request): prefilled, never part of the
    /// least.
    Other,
}

/// The running count.
#[derive(Clone, Debug, Default)]
pub struct PrefillMeter {
    previous: Vec<u8>,
    seen: HashSet<String>,
    /// Requests metered.
    pub requests: u64,
    /// Requests that did not extend the one before (their common prefix
    /// was shorter than it): each rewrote something already sent.
    pub rewrites: u64,
    /// Bytes a prefix cache had to prefill, over every request.
    pub prefilled_bytes: u64,
    /// The least any fitting must send.
    pub least_bytes: u64,
    /// The largest request, in bytes as laid out.
    pub largest_bytes: u64,
}

impl PrefillMeter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Meters one request body (as sent to `/chat/completions`).
    pub fn request(&mut self, body: &Value, sent: Sent) {
        let laid = layout(body);
        let common = self
            .previous
            .iter()
            .zip(&laid)
            .take_while(|(a, b)| a == b)
            .count();
        if self.requests > 0 && common < self.previous.len() {
            self.rewrites += 1;
        }
        self.requests += 1;
        self.prefilled_bytes += (laid.len() - common) as u64;
        self.largest_bytes = self.largest_bytes.max(laid.len() as u64);
        if sent == Sent::Round {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let first = self.seen.is_empty();
            for (i, m) in messages.iter().enumerate() {
                let bytes = m.to_string().len() as u64;
                let key = key(m, i);
                // A stub of a result seen whole is not new; the first time
                // a result is seen it is counted at its size then.
                if self.seen.insert(key) && !first {
                    self.least_bytes += bytes;
                }
            }
            if first {
                self.least_bytes += laid.len() as u64;
            }
        }
        self.previous = laid;
    }

    /// Prefilled over the least: 1.0 when every request extended the last.
    pub fn amplification(&self) -> f64 {
        if self.least_bytes == 0 {
            return 1.0;
        }
        self.prefilled_bytes as f64 / self.least_bytes as f64
    }
}

/// A message's identity across requests: a result by its call, an answer
/// by its calls (or its text), the system message once.
fn key(m: &Value, index: usize) -> String {
    let role = m["role"].as_str().unwrap_or_default();
    match role {
        "system" if index == 0 => "system".to_owned(),
        "tool" => format!("tool:{}", m["tool_call_id"]),
        "assistant" => match m.get("tool_calls").and_then(Value::as_array) {
            Some(calls) if !calls.is_empty() => format!(
                "assistant:{}",
                calls
                    .iter()
                    .map(|c| c["id"].to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => format!("assistant:{}", m["content"]),
        },
        _ => format!("{role}:{}", m["content"]),
    }
}

/// The request as a chat template lays it out: the system message, the
/// tools, the rest of the messages, each as compact JSON.
fn layout(body: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut rest = messages.iter().peekable();
    if let Some(first) = rest.next_if(|m| m["role"] == "system") {
        out.extend(first.to_string().into_bytes());
    }
    if let Some(tools) = body.get("tools") {
        out.extend(tools.to_string().into_bytes());
    }
    for m in rest {
        out.extend(m.to_string().into_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(messages: Value) -> Value {
        json!({"messages": messages, "tools": [{"name": "t"}]})
    }

    #[test]
    fn an_append_only_conversation_prefills_each_byte_once() {
        let mut m = PrefillMeter::new();
        let sys = json!({"role": "system", "content": "s"});
        let user = json!({"role": "user", "content": "u"});
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "x".repeat(100)});
        m.request(&body(json!([sys, user])), Sent::Round);
        m.request(&body(json!([sys, user, call, result])), Sent::Round);
        assert_eq!(m.rewrites, 0);
        assert_eq!(m.prefilled_bytes, m.least_bytes);
        assert!((m.amplification() - 1.0).abs() < 1e-9);
        // The result becomes a stub: everything after it is prefilled
        // again, and nothing new is owed.
        let stub = json!({"role": "tool", "tool_call_id": "c1", "content": "[stub]"});
        let least = m.least_bytes;
        m.request(&body(json!([sys, user, call, stub])), Sent::Round);
        assert_eq!(m.rewrites, 1);
        assert_eq!(m.least_bytes, least);
        assert!(m.amplification() > 1.0);
        // A summary request shares nothing and owes nothing.
        m.request(
            &json!({"messages": [{"role": "system", "content": "sum"}]}),
            Sent::Other,
        );
        assert_eq!(m.least_bytes, least);
        assert_eq!(m.requests, 4);
    }
}
