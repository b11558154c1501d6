//! Typed engine errors that say what happened.

use std::time::Duration;

use crate::response::Response;
use crate::sse::SseError;

/// Why a chat completion did not produce a complete response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The engine URL is not usable.
    #[error("invalid engine URL '{url}': {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// Nothing accepted the connection.
    #[error(
        "cannot connect to the engine at {url}: {reason}; is the engine running, and is the URL right?"
    )]
    Connect {
        /// Where we tried.
        url: String,
        /// The system's reason.
        reason: String,
    },
    /// The TLS handshake failed on the engine's certificate: it is not
    /// signed by a trusted CA, names another host, or has expired.
    #[error("the engine's TLS certificate at {url} was not accepted: {reason}; {advice}")]
    Certificate {
        /// Where we tried.
        url: String,
        /// rustls's reason.
        reason: String,
        /// What to do about this reason.
        advice: &'static str,
    },
    /// The TLS handshake failed for a reason other than the certificate;
    /// most often the port serves plain http.
    #[error(
        "the TLS handshake with the engine at {url} failed: {reason}; if the engine serves plain http on that port, use an http:// URL"
    )]
    Tls {
        /// Where we tried.
        url: String,
        /// rustls's reason.
        reason: String,
    },
    /// A CA certificate file given to trust could not be used.
    #[error("cannot use the CA certificate file {path}: {reason}")]
    CaCert {
        /// The file, as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The engine answered 503 while loading its model for longer than
    /// the first-byte timeout allows.
    #[error(
        "the engine was still loading the model after {after:?} ({message}); wait for it to finish, or raise timeouts.first_byte_secs (GOAT_FIRST_BYTE_TIMEOUT_SECS)"
    )]
    StillLoading {
        /// How long GOAT waited.
        after: Duration,
        /// The engine's message.
        message: String,
    },
    /// Connecting took longer than the connect timeout.
    #[error("connecting to the engine at {url} timed out after {after:?}")]
    ConnectTimeout {
        /// Where we tried.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// The engine refused the request as longer than its context window
    /// (llama.cpp `exceed_context_size_error`, vLLM "maximum context
    /// length", OpenAI `context_length_exceeded`). Sending it again as it
    /// is cannot work; a shorter history can.
    #[error(
        "the request does not fit the engine's context window{}: {message}",
        window.map(|w| format!(" of {w} tokens")).unwrap_or_default()
    )]
    ContextOverflow {
        /// The engine's message.
        message: String,
        /// The window, when the engine named it.
        window: Option<u64>,
        /// The request's size in tokens, when the engine named it.
        prompt_tokens: Option<u64>,
    },
    /// The engine answered with an HTTP error status.
    #[error("the engine answered HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The message from the body (JSON error message, or an HTML page's title/text).
        message: String,
    },
    /// The engine answered with a redirect, which is never followed.
    ///
    /// # Security
    ///
    /// Following it would send the whole conversation (system prompt,
    /// workspace paths, file contents) to wherever `location` points, and
    /// take that server's answer, tool calls included, as the model's.
    #[error(
        "the engine at {url} answered HTTP {status}, a redirect to {}; GOAT never follows redirects (the conversation would go to another server): if that is the engine, point the engine URL at it",
        location.as_deref().unwrap_or("nowhere (no Location header)")
    )]
    Redirect {
        /// Where we asked.
        url: String,
        /// The 3xx status.
        status: u16,
        /// The Location header, if any.
        location: Option<String>,
    },
    /// A 404 at a base URL that does not end in `/v1`.
    #[error(
        "the engine answered HTTP 404 (not found) at {url}: {message}; OpenAI-compatible engines serve under /v1: try the engine URL {suggestion}"
    )]
    NotFoundTryV1 {
        /// Where we asked.
        url: String,
        /// The body's message.
        message: String,
        /// The base URL with `/v1`.
        suggestion: String,
    },
    /// A 404, and the engine's `/models` does not list the model asked for.
    #[error(
        "the engine has no model '{model}' (HTTP 404: {message}); it serves {}: use one of those as the model",
        if available.is_empty() { "no models".to_owned() } else { available.join(", ") }
    )]
    ModelNotFound {
        /// The model asked for.
        model: String,
        /// The body's message.
        message: String,
        /// What `/models` listed (cut short, see the client).
        available: Vec<String>,
    },
    /// No response byte arrived before the first-byte deadline.
    #[error(
        "the engine sent nothing for {after:?} after the request (model load and prompt processing count; the first-byte timeout allows for them)"
    )]
    FirstByteTimeout {
        /// The deadline.
        after: Duration,
    },
    /// The stream went silent for longer than the idle timeout.
    #[error("the engine's stream went silent for {after:?}")]
    IdleTimeout {
        /// The timeout.
        after: Duration,
    },
    /// The whole request took longer than its total budget.
    #[error("the request took longer than its total budget of {after:?}")]
    TotalTimeout {
        /// The budget.
        after: Duration,
    },
    /// The engine reported an error inside a 200 stream.
    #[error("the engine reported an error mid-stream: {message}")]
    StreamError {
        /// Its message.
        message: String,
    },
    /// The engine could not parse the model's output into its tool-call
    /// format and stopped: llama.cpp's `Failed to parse input at pos N:
    /// TEXT` (an HTTP 500 before any content, an `{"error": ...}` event, or
    /// the older `error:` field). `quoted` is the model's text from where
    /// parsing failed, as the engine quoted it: never parsed into a call,
    /// only shown to the recovery rule (ADR-0079).
    #[error("the engine could not parse the model's tool call: {message}")]
    ToolCallParse {
        /// The engine's whole message.
        message: String,
        /// The model's text the engine quoted.
        quoted: String,
    },
    /// The stream ended without a finish reason or `[DONE]`.
    #[error(
        "the engine's stream ended early, after {received_bytes} bytes, without a finish reason or [DONE]; the response is incomplete"
    )]
    Truncated {
        /// How much arrived.
        received_bytes: usize,
    },
    /// The model stopped at its output token limit.
    #[error(
        "the model hit its output length limit (finish_reason \"length\"); the response is cut off"
    )]
    Length {
        /// What arrived before the cut.
        partial: Box<Response>,
    },
    /// The response ended with a finish reason that does not mean it is
    /// complete (`abort`, `error`, `content_filter`, or one GOAT does not
    /// know); nothing in it may be taken as an answer.
    #[error(
        "the engine ended the response with finish_reason \"{reason}\" ({}); nothing in it was used",
        unfinished_hint(reason)
    )]
    Unfinished {
        /// The engine's word, as sent.
        reason: String,
    },
    /// The event stream could not be decoded.
    #[error("the engine's event stream is malformed: {0}")]
    Sse(#[from] SseError),
    /// A chunk was not the JSON the protocol calls for.
    #[error("the engine sent a chunk that is not valid JSON ({reason}): {snippet}")]
    InvalidChunk {
        /// The parse error.
        reason: String,
        /// The start of the chunk.
        snippet: String,
    },
    /// The response grew past the cap.
    #[error("the engine's response is larger than {limit} bytes")]
    ResponseTooLarge {
        /// The cap.
        limit: usize,
    },
    /// The request was cancelled.
    #[error("the request was cancelled")]
    Cancelled,
    /// Any other transport failure.
    #[error("transport error talking to the engine at {url}: {reason}")]
    Transport {
        /// Where.
        url: String,
        /// What.
        reason: String,
        /// It happened before any response byte arrived (the engine closed
        /// or reset the connection without answering).
        before_response: bool,
    },
}

impl EngineError {
    /// Whether the request never left this machine: the URL or the trust
    /// settings were unusable, or no connection (or no TLS session) was
    /// made. Nothing of the conversation reached any server.
    pub fn nothing_sent(&self) -> bool {
        matches!(
            self,
            Self::InvalidUrl { .. }
                | Self::Connect { .. }
                | Self::ConnectTimeout { .. }
                | Self::Certificate { .. }
                | Self::Tls { .. }
                | Self::CaCert { .. }
        )
    }

    /// Whether retrying the same request may succeed. Only failures that
    /// happen before any response byte is consumed qualify; the caller also
    /// bounds the attempts.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::ConnectTimeout { .. } => true,
            Self::Transport {
                before_response, ..
            } => *before_response,
            Self::InvalidUrl { .. }
            | Self::Certificate { .. }
            | Self::Tls { .. }
            | Self::CaCert { .. }
            | Self::StillLoading { .. }
            | Self::Http { .. }
            | Self::ContextOverflow { .. }
            | Self::Redirect { .. }
            | Self::NotFoundTryV1 { .. }
            | Self::ModelNotFound { .. }
            | Self::FirstByteTimeout { .. }
            | Self::IdleTimeout { .. }
            | Self::TotalTimeout { .. }
            | Self::StreamError { .. }
            | Self::ToolCallParse { .. }
            | Self::Truncated { .. }
            | Self::Length { .. }
            | Self::Unfinished { .. }
            | Self::Sse(_)
            | Self::InvalidChunk { .. }
            | Self::ResponseTooLarge { .. }
            | Self::Cancelled => false,
        }
    }
}

/// What an unfinished response's reason means, and what to do.
fn unfinished_hint(reason: &str) -> &'static str {
    match reason {
        "abort" => {
            "the engine aborted the request, as vLLM and SGLang do when shutting down, scaling \
             down or sleeping; check the engine and try again"
        }
        "error" => "the engine failed while generating; its log says why",
        "content_filter" => "the engine's content filter stopped the answer",
        _ => "a reason GOAT does not know, so the answer may be cut off; check the engine",
    }
}

/// The model's text quoted in an engine's message that it failed to parse
/// the model's output, or `None` for any other message. llama.cpp says
/// it two ways: `Failed to parse input at pos 668: <tool_call>...` (the
/// text from where parsing failed), and, in the build llama-cpp-python
/// 0.3.36 vendors, `The model produced output that does not match the
/// expected Hermes 2 Pro format`, which quotes nothing (the quote is
/// then empty).
pub fn parse_failure_quote(message: &str) -> Option<&str> {
    const AT_POS: &str = "Failed to parse input at pos ";
    const NO_MATCH: &str = "The model produced output that does not match the expected ";
    if let Some(at) = message.find(AT_POS) {
        let rest = &message[at + AT_POS.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let rest = rest[digits..].strip_prefix(':')?;
        return (digits > 0).then_some(rest.strip_prefix(' ').unwrap_or(rest));
    }
    message.contains(NO_MATCH).then_some("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quote_is_what_follows_the_position() {
        assert_eq!(
            parse_failure_quote("Failed to parse input at pos 668: <tool_call>\n<function=x>"),
            Some("<tool_call>\n<function=x>")
        );
        assert_eq!(
            parse_failure_quote("Failed to parse input at pos : x"),
            None
        );
        assert_eq!(parse_failure_quote("Failed to parse input"), None);
        assert_eq!(parse_failure_quote("out of memory"), None);
        assert_eq!(
            parse_failure_quote(
                "The model produced output that does not match the expected Hermes 2 Pro format"
            ),
            Some("")
        );
    }
}
