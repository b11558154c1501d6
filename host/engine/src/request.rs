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

impl Message {
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
    /// The bytes of [`body`](Self::body) for `model`, counted without
    /// building it: the envelope with no messages, plus each message and
    /// the commas between them.
    pub fn body_bytes(&self, model: &str, include_usage: bool) -> usize {
        let empty = ChatRequest {
            messages: Vec::new(),
            tools: self.tools.clone(),
        };
        let envelope = json_bytes(&empty.body(model, include_usage));
        let messages: usize = self.messages.iter().map(Message::wire_bytes).sum();
        envelope + messages + self.messages.len().saturating_sub(1)
    }

    /// The request body for `model`. `include_usage` asks for a final usage
    /// chunk (`stream_options`), which some engines reject.
    pub fn body(&self, model: &str, include_usage: bool) -> Value {
        let mut body = json!({
            "model": model,
            "stream": true,
            "messages": self.messages.iter().map(Message::to_json).collect::<Vec<_>>(),
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
