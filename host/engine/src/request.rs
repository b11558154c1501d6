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

impl ChatRequest {
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
