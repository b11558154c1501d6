//! Assembling streamed chunks into one response.
//!
//! Pure and synchronous: [`StreamAssembler`] is fed the raw bytes of the
//! body as they arrive and yields the finished [`Response`] (or the typed
//! error) at the end, so every dialect quirk is testable without a socket
//! and any re-chunking of the same bytes gives the same result.
//!
//! Dialects handled: content and reasoning (`reasoning_content` or
//! `reasoning`) deltas; tool calls keyed by `index` whose id and name come in
//! the first fragment only and whose arguments arrive in fragments or whole
//! (as a string, or as an object some engines send); interleaved calls;
//! missing ids (one is made) and numeric ids; Ollama's whole calls without
//! an index and its `finish_reason: "stop"` beside tool calls; an index
//! reused for a second parallel call with a new id (Ollama's qwen3-coder
//! parser), told apart by id; vLLM's empty `tool_calls: []` beside content;
//! a usage chunk with no choices. Duplicate ids within one response are
//! made unique. Only `stop` and `tool_calls` (`function_call`) finish a
//! response: `length` is [`EngineError::Length`], anything else
//! [`EngineError::Unfinished`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::error::EngineError;
use crate::sse::{SseDecoder, SseEvent};

/// Largest response body accepted, all bytes counted. A model's answer is
/// KiB; tens of MiB means a runaway generation or a broken engine.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of an unparseable chunk quoted in the error.
const SNIPPET_BYTES: usize = 200;

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// A natural end.
    Stop,
    /// It made tool calls.
    ToolCalls,
    /// Its output token limit: the response is cut off
    /// ([`EngineError::Length`]).
    Length,
    /// The engine's content filter: the response is unusable
    /// ([`EngineError::Unfinished`]).
    ContentFilter,
    /// Anything else the engine said (`abort`, `error`, unknown words):
    /// the response is unusable ([`EngineError::Unfinished`]).
    Other(String),
}

impl FinishReason {
    fn parse(s: &str) -> Self {
        match s {
            // `eos` and `end_turn` are other engines' words for a natural end.
            "stop" | "eos" | "end_turn" => Self::Stop,
            "tool_calls" | "function_call" => Self::ToolCalls,
            "length" => Self::Length,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The engine's word for it, as the OpenAI API spells it (`stop`,
    /// `tool_calls`, `length`, `content_filter`), or what the engine sent.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool_calls",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::Other(other) => other,
        }
    }
}

/// Token counts, when the engine reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// Prompt tokens served from the engine's prompt cache, where it says:
    /// `usage.prompt_tokens_details.cached_tokens` (OpenAI, vLLM, SGLang)
    /// or llama-server's `timings.cache_n`.
    pub cached_tokens: Option<u64>,
}

/// llama-server's `timings` (sent with the last chunk), where sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// Prompt tokens served from the slot's prompt cache (`cache_n`), where
    /// sent: with `prompt_n`, how much of the request the server reused.
    pub cache_n: Option<u64>,
    /// Prompt tokens processed (those not already cached).
    pub prompt_n: u64,
    /// Time processing them, in milliseconds.
    pub prompt_ms: f64,
    /// Tokens generated.
    pub predicted_n: u64,
    /// Time generating them, in milliseconds.
    pub predicted_ms: f64,
    /// Generation speed, tokens per second.
    pub predicted_per_second: f64,
}

/// Why a tool call's arguments cannot be used. The Shepherd reports it to
/// the model; the call is never executed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentsError {
    /// No arguments at all.
    #[error("the call has no arguments; send a JSON object (\"{{}}\" for none)")]
    Empty,
    /// Not JSON.
    #[error("the arguments are not valid JSON ({reason})")]
    InvalidJson {
        /// The parse error.
        reason: String,
    },
    /// JSON, but not an object.
    #[error("the arguments must be a JSON object")]
    NotAnObject,
}

/// One structured tool call, assembled from its fragments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The engine's index for the call. Two calls share one when the
    /// engine reused it for a call with a new id.
    pub index: u64,
    /// The call's id (the engine's, or one GOAT made when it sent none).
    pub id: String,
    /// Whether GOAT made the id.
    pub id_generated: bool,
    /// The tool's name, as the model wrote it.
    pub name: String,
    /// The raw arguments text, as streamed.
    pub raw_arguments: String,
    /// The arguments, parsed once at the end.
    pub arguments: Result<Value, ArgumentsError>,
}

/// A complete streamed response.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    /// The visible answer.
    pub content: String,
    /// Reasoning the engine sent separately.
    pub reasoning: String,
    /// Structured tool calls, in the order they began, each id unique.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped. `Stop` beside tool calls (Ollama) is reported as
    /// `ToolCalls`.
    pub finish_reason: Option<FinishReason>,
    /// Token counts, if sent.
    pub usage: Option<Usage>,
    /// llama-server's timings, if sent.
    pub timings: Option<Timings>,
    /// From sending the request to the first token (text, reasoning or a
    /// call), as the client measured it; `None` when nothing came.
    pub first_token_after: Option<Duration>,
    /// From sending the request to the end of the response.
    pub elapsed: Duration,
    /// Response body bytes received.
    pub received_bytes: usize,
}

impl Response {
    /// Generation speed: the engine's own figure where it sends one
    /// (llama-server), else completion tokens over the time from the first
    /// token to the end. `None` without usage or time to measure.
    pub fn tokens_per_second(&self) -> Option<f64> {
        if let Some(t) = self.timings.filter(|t| t.predicted_per_second > 0.0) {
            return Some(t.predicted_per_second);
        }
        let tokens = self.usage?.completion_tokens;
        let generating = self.elapsed.checked_sub(self.first_token_after?)?;
        (tokens > 1 && !generating.is_zero())
            .then(|| (tokens - 1) as f64 / generating.as_secs_f64())
    }
}

/// A piece of the response as it streams, for showing it live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Visible text.
    Content(&'a str),
    /// Reasoning text.
    Reasoning(&'a str),
    /// The engine answered 503 while loading its model; GOAT waits and
    /// asks again (within the first-byte timeout). Nothing was streamed.
    EngineLoading {
        /// The engine's message ("Loading model").
        message: &'a str,
        /// How long GOAT has waited so far.
        waited: Duration,
    },
    /// A tool call began (its name is known).
    ToolCallStarted {
        /// Its index.
        index: u64,
        /// Its name.
        name: &'a str,
    },
}

#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
    announced: bool,
}

/// Turns the bytes of one streamed body into a [`Response`].
#[derive(Debug)]
pub struct StreamAssembler {
    decoder: SseDecoder,
    events: Vec<SseEvent>,
    response: Response,
    /// Calls in the order they began.
    calls: Vec<PartialCall>,
    /// For each engine index, the position in `calls` of the call that
    /// index currently continues (an index reused with a new id moves on).
    by_index: HashMap<u64, usize>,
    done: bool,
}

impl Default for StreamAssembler {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamAssembler {
    /// An assembler at the start of a body.
    pub fn new() -> Self {
        Self {
            decoder: SseDecoder::new(),
            events: Vec::new(),
            response: Response::default(),
            calls: Vec::new(),
            by_index: HashMap::new(),
            done: false,
        }
    }

    /// Whether `[DONE]` was seen: nothing after it matters.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds body bytes, reporting deltas as they complete.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), EngineError> {
        self.response.received_bytes += bytes.len();
        if self.response.received_bytes > MAX_RESPONSE_BYTES {
            return Err(EngineError::ResponseTooLarge {
                limit: MAX_RESPONSE_BYTES,
            });
        }
        if self.done {
            return Ok(());
        }
        self.decoder.feed(bytes, &mut self.events)?;
        let events = std::mem::take(&mut self.events);
        for event in events {
            if self.done {
                break;
            }
            self.event(event, on_delta)?;
        }
        Ok(())
    }

    fn event(
        &mut self,
        event: SseEvent,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), EngineError> {
        if let Some(error) = event.error {
            return Err(EngineError::StreamError {
                message: error_message_text(&error),
            });
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| EngineError::InvalidChunk {
            reason: e.to_string(),
            snippet: snippet(data),
        })?;
        if event.event.as_deref() == Some("error")
            || chunk.get("error").is_some_and(|e| !e.is_null())
        {
            let err = chunk.get("error").unwrap_or(&chunk);
            return Err(EngineError::StreamError {
                message: error_message(err),
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.response.usage = Some(Usage {
                prompt_tokens: n("prompt_tokens"),
                completion_tokens: n("completion_tokens"),
                total_tokens: n("total_tokens"),
                cached_tokens: usage
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64),
            });
        }
        if let Some(t) = chunk.get("timings").filter(|t| t.is_object()) {
            let n = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
            let f = |k: &str| t.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            self.response.timings = Some(Timings {
                cache_n: t.get("cache_n").and_then(Value::as_u64),
                prompt_n: n("prompt_n"),
                prompt_ms: f("prompt_ms"),
                predicted_n: n("predicted_n"),
                predicted_ms: f("predicted_ms"),
                predicted_per_second: f("predicted_per_second"),
            });
            // llama-server says how much of the prompt its cache held
            // here rather than in `usage`.
            if let (Some(usage), Some(cached)) = (
                self.response.usage.as_mut(),
                t.get("cache_n").and_then(Value::as_u64),
            ) && usage.cached_tokens.is_none()
            {
                usage.cached_tokens = Some(cached);
            }
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        for choice in choices {
            // A few servers put the last piece in `message` instead of `delta`.
            let delta = choice.get("delta").or_else(|| choice.get("message"));
            if let Some(delta) = delta {
                self.delta(delta, on_delta);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.response.finish_reason = Some(FinishReason::parse(reason));
            }
        }
        Ok(())
    }

    fn delta(&mut self, delta: &Value, on_delta: &mut dyn FnMut(Delta<'_>)) {
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.response.content.push_str(text);
            on_delta(Delta::Content(text));
        }
        let reasoning = delta
            .get("reasoning_content")
            .or_else(|| delta.get("reasoning"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        if let Some(text) = reasoning {
            self.response.reasoning.push_str(text);
            on_delta(Delta::Reasoning(text));
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return;
        };
        for call in calls {
            let id = call.get("id").and_then(|v| match v {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            });
            let pos = self.call_position(call.get("index").and_then(Value::as_u64), id.as_deref());
            let entry = &mut self.calls[pos];
            if entry.id.is_none() {
                entry.id = id;
            }
            let index = entry.index;
            let function = call.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
                && entry.name.is_empty()
            {
                entry.name = name.to_owned();
            }
            match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => entry.arguments.push_str(s),
                // Some engines send the arguments as an object, whole.
                Some(v @ Value::Object(_)) => entry.arguments = v.to_string(),
                _ => {}
            }
            if !entry.announced && !entry.name.is_empty() {
                entry.announced = true;
                on_delta(Delta::ToolCallStarted {
                    index,
                    name: &entry.name,
                });
            }
        }
    }

    /// Which call a tool-call delta continues, beginning a new one when
    /// it starts one. By index; but an index reused with a different id
    /// is a different call (Ollama's qwen3-coder parser sent every
    /// parallel call as index 0), so ids tell those apart, and later
    /// deltas without an id continue the newest call at that index. With
    /// no index (Ollama's whole calls): the call with this id, else a new
    /// one after the last.
    fn call_position(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let same_id = |c: &PartialCall| id.is_some() && c.id.as_deref() == id;
        let Some(index) = index else {
            if let Some(pos) = self.calls.iter().rposition(same_id) {
                return pos;
            }
            let index = self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0);
            return self.begin_call(index);
        };
        let Some(&current) = self.by_index.get(&index) else {
            return self.begin_call(index);
        };
        match (self.calls[current].id.as_deref(), id) {
            (Some(old), Some(new)) if old != new => {
                // Back to an earlier call at this index, or a new one.
                match self
                    .calls
                    .iter()
                    .rposition(|c| c.index == index && same_id(c))
                {
                    Some(pos) => {
                        self.by_index.insert(index, pos);
                        pos
                    }
                    None => self.begin_call(index),
                }
            }
            _ => current,
        }
    }

    fn begin_call(&mut self, index: u64) -> usize {
        self.calls.push(PartialCall {
            index,
            ..PartialCall::default()
        });
        let pos = self.calls.len() - 1;
        self.by_index.insert(index, pos);
        pos
    }

    /// Ends the body. A body that ended without `[DONE]` or a finish reason
    /// is truncated, which is an error, never a success.
    pub fn finish(mut self) -> Result<Response, EngineError> {
        let finished = self.done || self.response.finish_reason.is_some();
        if !finished || (!self.done && self.decoder.is_mid_event()) {
            return Err(EngineError::Truncated {
                received_bytes: self.response.received_bytes,
            });
        }
        self.response.tool_calls = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|c| {
                let index = c.index;
                let (id, id_generated) = match c.id {
                    Some(id) => (id, false),
                    None => (generated_id(index), true),
                };
                ToolCall {
                    index,
                    id,
                    id_generated,
                    name: c.name,
                    arguments: parse_arguments(&c.arguments),
                    raw_arguments: c.arguments,
                }
            })
            .collect();
        unique_ids(&mut self.response.tool_calls);
        if !self.response.tool_calls.is_empty()
            && self.response.finish_reason == Some(FinishReason::Stop)
        {
            self.response.finish_reason = Some(FinishReason::ToolCalls);
        }
        match &self.response.finish_reason {
            Some(FinishReason::Length) => Err(EngineError::Length {
                partial: Box::new(self.response),
            }),
            // Only a natural end or calls finish a response: anything else
            // (vLLM's and SGLang's `abort`, `error`, a content filter, a
            // word GOAT does not know) may have cut it off, so it is never
            // taken as an answer.
            Some(reason @ (FinishReason::ContentFilter | FinishReason::Other(_))) => {
                Err(EngineError::Unfinished {
                    reason: reason.as_str().to_owned(),
                })
            }
            Some(FinishReason::Stop | FinishReason::ToolCalls) | None => Ok(self.response),
        }
    }
}

/// Makes the ids of one response's calls unique, so each tool result in the
/// next request answers exactly one call: the first call keeps its id, a
/// later one with the same id gets `-2`, `-3`, ... (the first suffix no
/// other call has). Deterministic, so every re-chunking agrees.
fn unique_ids(calls: &mut [ToolCall]) {
    let mut taken: HashSet<String> = HashSet::with_capacity(calls.len());
    let all: HashSet<String> = calls.iter().map(|c| c.id.clone()).collect();
    if all.len() == calls.len() {
        return;
    }
    for call in calls.iter_mut() {
        if taken.insert(call.id.clone()) {
            continue;
        }
        let mut n = 2u64;
        let id = loop {
            let candidate = format!("{}-{n}", call.id);
            if !all.contains(&candidate) && !taken.contains(&candidate) {
                break candidate;
            }
            n += 1;
        };
        taken.insert(id.clone());
        call.id = id;
    }
}

/// Parses a call's arguments once, at the end.
pub fn parse_arguments(raw: &str) -> Result<Value, ArgumentsError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(ArgumentsError::Empty);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(ArgumentsError::NotAnObject),
        Err(e) => Err(ArgumentsError::InvalidJson {
            reason: e.to_string(),
        }),
    }
}

/// An id for a call the engine sent without one: unique in this process,
/// so results in history always answer the right call.
fn generated_id(index: u64) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("call_goat_{}_{n}_{index}", std::process::id())
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
fn prefix(s: &str, max: usize) -> &str {
    let cut = (0..=s.len().min(max))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    &s[..cut]
}

fn snippet(s: &str) -> String {
    prefix(s, SNIPPET_BYTES).to_owned()
}

/// The human message in an error value: `{"message": ...}`, a string, or
/// the JSON itself.
pub(crate) fn error_message(err: &Value) -> String {
    let msg = err
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| err.as_str().map(str::to_owned))
        .unwrap_or_else(|| err.to_string());
    snippet_long(&msg)
}

/// An `error:` field's text: JSON with a message, or the text itself.
fn error_message_text(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => error_message(v.get("error").unwrap_or(&v)),
        Err(_) => snippet_long(text.trim()),
    }
}

/// Error messages are kept to a readable length.
pub(crate) fn snippet_long(s: &str) -> String {
    /// Longest error message kept.
    const MAX: usize = 1000;
    let kept = prefix(s, MAX);
    if kept.len() < s.len() {
        format!("{kept}…")
    } else {
        kept.to_owned()
    }
}
