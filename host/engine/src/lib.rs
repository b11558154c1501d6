//! A streaming client for OpenAI-compatible chat completion engines:
//! llama.cpp's llama-server, vLLM, Ollama (`/v1`), LM Studio and SGLang.
//!
//! The key decision: correctness against what real engines send, not a
//! tidy idealisation. The body is decoded as browsers decode server-sent
//! events and assembled by a pure, synchronous [`StreamAssembler`] that is
//! fed bytes as they arrive, so every dialect quirk (fragmented or whole
//! tool calls, missing or numeric ids, `finish_reason: "stop"` beside tool
//! calls, error events inside a 200 stream) is tested without a socket and
//! any re-chunking of a stream gives the same [`Response`]. A response is
//! only a success when the stream says it finished: a body that just stops
//! is [`EngineError::Truncated`], `finish_reason: "length"` is
//! [`EngineError::Length`], and any reason but `stop` or `tool_calls`
//! (`abort`, `error`, `content_filter`, unknown words) is
//! [`EngineError::Unfinished`]. Tool call arguments are parsed once, at the
//! end; bad ones are an [`ArgumentsError`] for the model, never executed.
//!
//! Time is bounded per phase, never by one total timeout over the body: a
//! connect timeout, a first-byte deadline (model load and prefill can take
//! minutes), an idle timeout reset by any bytes, and a total budget as a
//! backstop. This crate knows nothing of agents, tools or permissions.
//!
//! What the engine says about itself is asked, not assumed: its context
//! window ([`EngineClient::discover_window`]: llama.cpp `/props`, vLLM
//! `/v1/models`), a refusal for length ([`EngineError::ContextOverflow`]),
//! and its usage and timings on each [`Response`].

mod client;
mod error;
mod request;
mod response;
pub mod sse;
mod tls;
mod window;

pub use client::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_RETRIES,
    DEFAULT_TOTAL_TIMEOUT, EngineClient, EngineConfig, MODELS_TIMEOUT, RETRY_BACKOFF,
};
pub use error::EngineError;
pub use request::{ChatRequest, Message, OutputCapName, RequestToolCall, Sampling, ToolSchema};
pub use response::{
    ArgumentsError, Delta, FinishReason, MAX_RESPONSE_BYTES, Response, StreamAssembler, Timings,
    ToolCall, Usage, parse_arguments,
};
pub use tokio_util::sync::CancellationToken;
pub use window::{
    Overflow, PLAUSIBLE_WINDOW, TemplateTools, WindowProbe, WindowSource, lm_studio_window,
    models_window, ollama_window, overflow_in, props_say_llama_cpp, props_template_tools,
    props_window,
};
