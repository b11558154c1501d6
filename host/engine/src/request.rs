//! The chat completion request, in the OpenAI-compatible shape every
//! supported engine accepts.

use serde::Serialize;
use serde_json::{Value, json};

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// Instructions from the host.
    System {
        /// The text.
        content: String,
    },
    /// The person's request.
    User {
        /// The text.
        content: String,
    },
    /// An earlier answer of the model, with the structured calls it made.
    Assistant {
        /// What it said, if anything.
        content: Option<String>,
        /// The calls it made.
        tool_calls: Vec<RequestToolCall>,
    },
    /// The result of one tool call, answering `tool_call_id`.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The result text (or the error the model should see).
        content: String,
    },
}

/// A structured call as it goes back to the engine in history.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSchema {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: Value,
}

/// The generation settings sent with every request, each only when set
/// (an engine's own default, or the model's, applies otherwise).
///
/// `max_output_tokens` bounds one answer: without it a small model that
/// repeats itself generates until the context is full, minutes on a CPU,
/// and the idle timeout never fires while tokens arrive.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampling {
    /// Most tokens one answer may take: `max_tokens` on the wire, or
    /// `max_completion_tokens` for an engine that refuses the older name.
    pub max_output_tokens: Option<u64>,
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `top_k` (llama.cpp, vLLM, SGLang, Ollama).
    pub top_k: Option<u64>,
    /// `min_p` (llama.cpp, vLLM, SGLang, Ollama).
    pub min_p: Option<f64>,
    /// Sent as both `repeat_penalty` (llama.cpp, Ollama) and
    /// `repetition_penalty` (vLLM, SGLang); each ignores the other's name.
    pub repeat_penalty: Option<f64>,
    /// `presence_penalty`.
    pub presence_penalty: Option<f64>,
    /// `seed`: with `temperature` 0, the same request gives the same
    /// answer on the same engine build.
    pub seed: Option<u64>,
}

/// What an engine calls the output cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputCapName {
    /// `max_tokens`: llama.cpp, vLLM, SGLang, Ollama, LM Studio.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's newer name, which some hosted
    /// engines require.
    MaxCompletionTokens,
}

impl OutputCapName {
    /// The field's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

impl Sampling {
    /// Writes the settings that are set into a request `body`, the cap
    /// under `cap_name`.
    pub fn apply(&self, body: &mut Value, cap_name: OutputCapName) {
        let mut set = |key: &str, value: Value| body[key] = value;
        if let Some(n) = self.max_output_tokens {
            set(cap_name.as_str(), json!(n));
        }
        let floats = [
            ("temperature", self.temperature),
            ("top_p", self.top_p),
            ("min_p", self.min_p),
            ("repeat_penalty", self.repeat_penalty),
            ("repetition_penalty", self.repeat_penalty),
            ("presence_penalty", self.presence_penalty),
        ];
        for (key, value) in floats {
            if let Some(v) = value {
                set(key, json!(v));
            }
        }
        if let Some(k) = self.top_k {
            set("top_k", json!(k));
        }
        if let Some(seed) = self.seed {
            set("seed", json!(seed));
        }
    }
}

/// One streaming chat completion request.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered; empty offers none.
    pub tools: Vec<ToolSchema>,
}

impl Message {
    fn to_json(&self) -> Value {
        match self {
            Self::System { content } => json!({"role": "system", "content": content}),
            Self::User { content } => json!({"role": "user", "content": content}),
            Self::Assistant {
                content,
                tool_calls,
            } => {
                let mut m = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                // OpenAI's wire format carries arguments as
                                // a JSON string, not an object.
                                "function": {"name": c.name, "arguments": c.arguments.to_string()},
                            })
                        })
                        .collect();
                }
                m
            }
            Self::Tool {
                tool_call_id,
                content,
            } => {
                json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
            }
        }
    }
}

/// Bytes a JSON string of `len` bytes can take serialized: each byte at
/// most six (`\u00XX`), and the quotes.
fn string_bound(len: usize) -> usize {
    len.saturating_mul(6).saturating_add(2)
}

/// Bytes `value` can take serialized, never fewer than it does: strings as
/// [`string_bound`], a number at most 24 characters.
fn value_bound(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => string_bound(s.len()),
        Value::Array(items) => items
            .iter()
            .map(|v| value_bound(v).saturating_add(1))
            .fold(2, usize::saturating_add),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| {
                string_bound(k.len())
                    .saturating_add(value_bound(v))
                    .saturating_add(2)
            })
            .fold(2, usize::saturating_add),
    }
}

/// Bytes of a message's fixed parts (role, keys, braces, commas), more
/// than any message kind needs.
const MESSAGE_OVERHEAD_BOUND: usize = 96;

/// Bytes of one call's fixed parts in an assistant message, likewise.
const CALL_OVERHEAD_BOUND: usize = 96;

impl Message {
    /// At least [`Message::wire_bytes`], computed without serializing:
    /// cheap enough to ask every round, so the exact count is needed only
    /// when a request may be near its bound.
    pub fn wire_bytes_bound(&self) -> usize {
        let body = match self {
            Self::System { content } | Self::User { content } => string_bound(content.len()),
            Self::Assistant {
                content,
                tool_calls,
            } => tool_calls
                .iter()
                .map(|c| {
                    // The arguments travel as a JSON string of JSON text:
                    // escaped twice.
                    string_bound(c.id.len())
                        .saturating_add(string_bound(c.name.len()))
                        .saturating_add(value_bound(&c.arguments).saturating_mul(6))
                        .saturating_add(CALL_OVERHEAD_BOUND)
                })
                .fold(
                    content.as_ref().map_or(4, |c| string_bound(c.len())),
                    usize::saturating_add,
                ),
            Self::Tool {
                tool_call_id,
                content,
            } => string_bound(tool_call_id.len()).saturating_add(string_bound(content.len())),
        };
        body.saturating_add(MESSAGE_OVERHEAD_BOUND)
    }

    /// The bytes this message takes in a request body, exactly as
    /// [`ChatRequest::body`] serializes it.
    pub fn wire_bytes(&self) -> usize {
        json_bytes(&self.to_json())
    }
}

/// Bytes of `value` serialized compactly, counted without keeping them.
fn json_bytes(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a Value to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

impl ChatRequest {
    /// At least [`ChatRequest::body_bytes`], without serializing the
    /// messages (see [`Message::wire_bytes_bound`]).
    pub fn body_bytes_bound(&self, model: &str, include_usage: bool) -> usize {
        let envelope = json_bytes(&self.envelope(model, include_usage));
        self.messages
            .iter()
            .map(|m| m.wire_bytes_bound().saturating_add(1))
            .fold(envelope, usize::saturating_add)
    }

    /// The bytes of [`body`](Self::body) for `model`, counted without
    /// building it: the envelope with no messages, plus each message and
    /// the commas between them.
    pub fn body_bytes(&self, model: &str, include_usage: bool) -> usize {
        let envelope = json_bytes(&self.envelope(model, include_usage));
        let messages: usize = self.messages.iter().map(Message::wire_bytes).sum();
        envelope + messages + self.messages.len().saturating_sub(1)
    }

    /// The request body for `model`. `include_usage` asks for a final usage
    /// chunk (`stream_options`), which some engines reject.
    pub fn body(&self, model: &str, include_usage: bool) -> Value {
        let mut body = self.envelope(model, include_usage);
        body["messages"] = self.messages.iter().map(Message::to_json).collect();
        body
    }

    /// [`body`](Self::body) with an empty `messages` array: what the sizes
    /// are counted from, built without copying the messages.
    fn envelope(&self, model: &str, include_usage: bool) -> Value {
        let mut body = json!({
            "model": model,
            "stream": true,
            "messages": [],
        });
        if !self.tools.is_empty() {
            body["tools"] = self
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        },
                    })
                })
                .collect();
            body["tool_choice"] = json!("auto");
        }
        if include_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_bytes_counts_the_body_exactly() {
        let request = ChatRequest {
            messages: vec![
                Message::System {
                    content: "sys \"q\"\n\u{1}é".into(),
                },
                Message::User {
                    content: "hi".into(),
                },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![RequestToolCall {
                        id: "c".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "a\tb"}),
                    }],
                },
                Message::Tool {
                    tool_call_id: "c".into(),
                    content: "x".repeat(100),
                },
            ],
            tools: vec![ToolSchema {
                name: "read_file".into(),
                description: "reads".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        for usage in [true, false] {
            assert_eq!(
                request.body_bytes("qwen", usage),
                request.body("qwen", usage).to_string().len()
            );
        }
        let empty = ChatRequest {
            messages: vec![],
            tools: vec![],
        };
        assert_eq!(
            empty.body_bytes("m", true),
            empty.body("m", true).to_string().len()
        );
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    #[test]
    fn the_bound_is_never_below_the_exact_size() {
        let nasty = "\u{1}\"\\\n\u{7f}é😀".repeat(50);
        let request = ChatRequest {
            messages: vec![
                Message::System {
                    content: nasty.clone(),
                },
                Message::User {
                    content: String::new(),
                },
                Message::Assistant {
                    content: None,
                    tool_calls: vec![RequestToolCall {
                        id: nasty.clone(),
                        name: "t".into(),
                        arguments: json!({"a": [1, -2.5e300, null, true, nasty.clone()], "": {}}),
                    }],
                },
                Message::Assistant {
                    content: Some(nasty.clone()),
                    tool_calls: vec![],
                },
                Message::Tool {
                    tool_call_id: "\u{0}".into(),
                    content: nasty,
                },
            ],
            tools: vec![],
        };
        for m in &request.messages {
            assert!(m.wire_bytes_bound() >= m.wire_bytes(), "{m:?}");
        }
        for usage in [false, true] {
            let exact = request.body(&"m\u{1}".repeat(9), usage).to_string().len();
            assert_eq!(request.body_bytes(&"m\u{1}".repeat(9), usage), exact);
            assert!(request.body_bytes_bound(&"m\u{1}".repeat(9), usage) >= exact);
        }
    }
}
