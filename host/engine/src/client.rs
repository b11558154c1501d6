//! The HTTP side: one streaming request, its timeouts, retries and
//! cancellation.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::EngineError;
use crate::request::{ChatRequest, OutputCapName, Sampling};
use crate::response::{Delta, Response, StreamAssembler, error_message, snippet_long};
use crate::tls::{certificate_advice, extra_roots, tls_failure};
use crate::window::{self, TemplateTools};

mod probe;
use probe::named;

/// Time allowed to establish the TCP connection. A local engine answers in
/// milliseconds; seconds mean the host or port is wrong.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Time allowed from sending the request to the first byte of the body.
/// Loading a model and processing a long prompt on a CPU can take minutes.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(600);

/// Longest silence tolerated once the stream has started. Any bytes reset
/// it, keep-alive comments included.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Budget for one whole request, start to end: a backstop against a stream
/// that trickles forever, never the only timeout.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Attempts after the first for failures before any response byte.
pub const DEFAULT_RETRIES: u32 = 2;

/// First backoff; doubled for each further retry.
pub const RETRY_BACKOFF: Duration = Duration::from_millis(250);

/// First wait before asking again an engine that answered 503 "Loading
/// model" (llama-server while it reads the weights); doubled each time.
pub const LOADING_BACKOFF: Duration = Duration::from_millis(500);

/// Longest wait between two requests to a loading engine: loading takes
/// seconds to minutes, and the person should not wait long past its end.
pub const LOADING_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Bytes of an HTTP error body read for its message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Bytes of a `/models` answer read. A local engine lists a handful of
/// models in a few KiB; a hosted one may list hundreds.
const MAX_MODELS_BODY_BYTES: usize = 1024 * 1024;

/// Time allowed for the whole `/models` request: it is a small listing,
/// asked for only to explain a failure or to pick the one model served.
pub const MODELS_TIMEOUT: Duration = Duration::from_secs(10);

/// Most model names quoted in an error; the rest are counted.
const MAX_MODELS_NAMED: usize = 20;

/// How to reach an engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080/v1`; `/chat/completions` is
    /// appended.
    pub base_url: String,
    /// Model name sent with each request.
    pub model: String,
    /// Bearer key, if the engine wants one.
    pub api_key: Option<String>,
    /// See [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// See [`DEFAULT_FIRST_BYTE_TIMEOUT`].
    pub first_byte_timeout: Duration,
    /// See [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// See [`DEFAULT_TOTAL_TIMEOUT`].
    pub total_timeout: Duration,
    /// See [`DEFAULT_RETRIES`].
    pub retries: u32,
    /// A PEM file of CA certificates trusted for an `https` engine besides
    /// the system's roots (a private CA, a self-signed engine).
    pub ca_cert: Option<PathBuf>,
    /// The output cap and sampling settings sent with every request, each
    /// only when set.
    pub sampling: Sampling,
    /// Whether llama-server may be sent `cache_prompt: true` ([`CachePrompt`]);
    /// off, the field is never sent and the server's own setting holds.
    pub cache_prompt: bool,
}

impl EngineConfig {
    /// A config for `base_url` and `model` with the default timeouts.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            retries: DEFAULT_RETRIES,
            ca_cert: None,
            sampling: Sampling::default(),
            cache_prompt: true,
        }
    }
}

/// Whether a request carries `cache_prompt: true` (issue 25): llama-server
/// then keeps the longest common prefix of a slot's last prompt and
/// prefills only the rest. Builds since late 2024 do so by default; older
/// ones only when asked. It is sent only to an engine whose `/props` says
/// it is llama-server: vLLM ignores unknown fields with a warning in its
/// log for every request, and OpenAI refuses them. (It also overrides a
/// server started with `--no-cache-prompt`; `/props` does not say that
/// setting, and an agent's rounds without the cache cost seconds each.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum CachePrompt {
    /// `/props` has not said the engine is llama-server.
    Unknown,
    /// It did: send it.
    Send,
    /// The engine refused it: never again.
    Refused,
}

/// A client for one engine.
#[derive(Debug)]
pub struct EngineClient {
    config: EngineConfig,
    url: String,
    http: reqwest::Client,
    /// Cleared once the engine rejected `stream_options`; later requests
    /// leave it out.
    include_usage: AtomicBool,
    /// Set once the engine refused `max_tokens` and named
    /// `max_completion_tokens`; later requests use that name.
    completion_cap_name: AtomicBool,
    /// Whether requests carry `cache_prompt: true` ([`CachePrompt`]).
    cache_prompt: std::sync::atomic::AtomicU8,
    /// What `/props` said of the template's tools, kept from whichever
    /// asked first ([`EngineClient::discover_window`] or
    /// [`EngineClient::template_tools`]), so the session asks once.
    template_tools: std::sync::Mutex<Option<TemplateTools>>,
}

impl EngineClient {
    /// Checks the URL and builds the HTTP client.
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let base = config.base_url.trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let parsed = reqwest::Url::parse(&url).map_err(|e| EngineError::InvalidUrl {
            url: config.base_url.clone(),
            reason: e.to_string(),
        })?;
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(EngineError::InvalidUrl {
                    url: config.base_url.clone(),
                    reason: format!(
                        "scheme '{other}' is not supported; use http:// (a local engine, e.g. \
                         http://127.0.0.1:8080/v1) or https://"
                    ),
                });
            }
        };
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                EngineError::InvalidUrl {
                    url: config.base_url.clone(),
                    reason: "the API key contains characters not allowed in a header".to_owned(),
                }
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let mut builder = reqwest::Client::builder()
            // The system's roots only where they are used: reading them
            // costs milliseconds an http engine need not pay.
            .tls_built_in_root_certs(https);
        if https {
            for cert in extra_roots(config.ca_cert.as_deref())? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
            .connect_timeout(config.connect_timeout)
            .default_headers(headers)
            // Never follow a redirect: a 307/308 would re-send the whole
            // conversation (system prompt, file contents) to wherever the
            // Location points, and its answer would be taken as the model's.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| EngineError::Transport {
                url: url.clone(),
                reason: e.to_string(),
                before_response: true,
            })?;
        let cache_prompt = if config.cache_prompt {
            CachePrompt::Unknown
        } else {
            // Turned off, it is as if the engine had refused it.
            CachePrompt::Refused
        };
        Ok(Self {
            config,
            url,
            http,
            include_usage: AtomicBool::new(true),
            completion_cap_name: AtomicBool::new(false),
            cache_prompt: std::sync::atomic::AtomicU8::new(cache_prompt as u8),
            template_tools: std::sync::Mutex::new(None),
        })
    }

    /// The chat completions URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Streams one chat completion, calling `on_delta` as text arrives.
    ///
    /// Cancelling `cancel` (or dropping the future) closes the connection at
    /// once. Failures before any response byte are retried up to
    /// `retries` times with backoff; nothing after that is retried.
    pub async fn stream_chat(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Response, EngineError> {
        let started = Instant::now();
        let deadline = started + self.config.total_timeout;
        // One first-byte deadline for the whole request: waiting for a
        // loading engine, and retries after it, all count against it.
        let first_byte_by = deadline.min(started + self.config.first_byte_timeout);
        let mut attempt = 0u32;
        let mut loading_backoff = LOADING_BACKOFF;
        let mut first_token: Option<Instant> = None;
        let on_delta = &mut |d: Delta<'_>| {
            if first_token.is_none()
                && matches!(
                    d,
                    Delta::Content(_) | Delta::Reasoning(_) | Delta::ToolCallStarted { .. }
                )
            {
                first_token = Some(Instant::now());
            }
            on_delta(d);
        };
        loop {
            let include_usage = self.include_usage.load(Ordering::Relaxed);
            let cap_name = if self.completion_cap_name.load(Ordering::Relaxed) {
                OutputCapName::MaxCompletionTokens
            } else {
                OutputCapName::MaxTokens
            };
            let mut body = request.body(&self.config.model, include_usage);
            self.config.sampling.apply(&mut body, cap_name);
            let cache_prompt = self.cache_prompt.load(Ordering::Relaxed) == CachePrompt::Send as u8;
            if cache_prompt {
                body["cache_prompt"] = serde_json::Value::Bool(true);
            }
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(EngineError::Cancelled),
                r = tokio::time::timeout_at(deadline, self.attempt(&body, deadline, first_byte_by, on_delta)) => {
                    r.unwrap_or(Err(EngineError::TotalTimeout { after: self.config.total_timeout }))
                }
            };
            match outcome {
                Err(EngineError::Http {
                    status: 400,
                    message,
                }) if include_usage && message.contains("stream_options") => {
                    // This engine does not take stream_options: leave it out
                    // from now on. Nothing was streamed, so this is not a retry.
                    self.include_usage.store(false, Ordering::Relaxed);
                    let _ = message;
                }
                Err(EngineError::Http {
                    status: 400,
                    message,
                }) if cache_prompt && message.contains("cache_prompt") => {
                    // Something that answered /props as llama-server does
                    // but refuses the field: leave it out from now on.
                    // Nothing was streamed, so this is not a retry.
                    self.cache_prompt
                        .store(CachePrompt::Refused as u8, Ordering::Relaxed);
                    let _ = message;
                }
                Err(EngineError::Http {
                    status: 400,
                    message,
                }) if cap_name == OutputCapName::MaxTokens
                    && self.config.sampling.max_output_tokens.is_some()
                    && message.contains("max_completion_tokens") =>
                {
                    // OpenAI's newer models refuse `max_tokens` and name
                    // the field they take. Nothing was streamed.
                    self.completion_cap_name.store(true, Ordering::Relaxed);
                    let _ = message;
                }
                Err(EngineError::Http {
                    status: 503,
                    message,
                }) if is_loading(&message) => {
                    // llama-server answers 503 "Loading model" until its
                    // weights are in memory. Loading is what the
                    // first-byte timeout allows for, so wait within it.
                    let now = Instant::now();
                    let Some(left) = first_byte_by
                        .checked_duration_since(now)
                        .filter(|l| !l.is_zero())
                    else {
                        return Err(EngineError::StillLoading {
                            after: started.elapsed(),
                            message,
                        });
                    };
                    on_delta(Delta::EngineLoading {
                        message: &message,
                        waited: started.elapsed(),
                    });
                    let pause = loading_backoff.min(left);
                    loading_backoff = (loading_backoff * 2).min(LOADING_BACKOFF_MAX);
                    tokio::select! {
                        () = cancel.cancelled() => return Err(EngineError::Cancelled),
                        () = tokio::time::sleep_until((now + pause).min(deadline)) => {}
                    }
                    if Instant::now() >= first_byte_by {
                        return Err(EngineError::StillLoading {
                            after: started.elapsed(),
                            message,
                        });
                    }
                    if Instant::now() >= deadline {
                        return Err(EngineError::TotalTimeout {
                            after: self.config.total_timeout,
                        });
                    }
                }
                Err(e) if e.is_retryable() && attempt < self.config.retries => {
                    let backoff = RETRY_BACKOFF * 2u32.saturating_pow(attempt);
                    attempt += 1;
                    tokio::select! {
                        () = cancel.cancelled() => return Err(EngineError::Cancelled),
                        () = tokio::time::sleep(backoff) => {}
                    }
                    if Instant::now() >= deadline {
                        return Err(e);
                    }
                }
                Err(EngineError::Http {
                    status: 404,
                    message,
                }) => return Err(self.explain_not_found(message).await),
                // An error event inside a 200 stream can say the same.
                Err(EngineError::StreamError { message }) => {
                    return Err(match window::overflow_in(&message) {
                        Some(o) => EngineError::ContextOverflow {
                            message,
                            window: o.window,
                            prompt_tokens: o.prompt_tokens,
                        },
                        None => parse_failure_or(message, |message| EngineError::StreamError {
                            message,
                        }),
                    });
                }
                // llama.cpp answers 500 when its tool-call parser fails on
                // the first piece of output, before any content is sent.
                Err(EngineError::Http {
                    status: 500,
                    message,
                }) => {
                    return Err(parse_failure_or(message, |message| EngineError::Http {
                        status: 500,
                        message,
                    }));
                }
                Ok(mut response) => {
                    response.elapsed = started.elapsed();
                    response.first_token_after =
                        first_token.map(|t| t.saturating_duration_since(started));
                    return Ok(response);
                }
                other => return other,
            }
        }
    }

    /// A 404 from chat completions, with what to do: a base URL without
    /// `/v1` is the usual mistake; otherwise the model may not exist, and
    /// the engine's own list says which do.
    async fn explain_not_found(&self, message: String) -> EngineError {
        let base = self.config.base_url.trim_end_matches('/');
        let path_ends_v1 = reqwest::Url::parse(base)
            .is_ok_and(|u| u.path().trim_end_matches('/').ends_with("/v1"));
        if !path_ends_v1 {
            return EngineError::NotFoundTryV1 {
                url: self.url.clone(),
                message,
                suggestion: format!("{base}/v1"),
            };
        }
        match self.list_models().await {
            Ok(available) if !available.contains(&self.config.model) => {
                EngineError::ModelNotFound {
                    model: self.config.model.clone(),
                    message,
                    available: named(&available),
                }
            }
            _ => EngineError::Http {
                status: 404,
                message,
            },
        }
    }

    async fn attempt(
        &self,
        body: &serde_json::Value,
        deadline: Instant,
        first_byte_by: Instant,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Response, EngineError> {
        let first_byte_timeout = EngineError::FirstByteTimeout {
            after: self.config.first_byte_timeout,
        };
        let send = self.http.post(&self.url).body(body.to_string()).send();
        let mut response = match tokio::time::timeout_at(first_byte_by, send).await {
            Err(_) => return Err(first_byte_timeout),
            Ok(Err(e)) => return Err(self.transport_error(e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            return Err(EngineError::Redirect {
                url: self.url.clone(),
                status: status.as_u16(),
                location,
            });
        }
        if !status.is_success() {
            let body = read_body(&mut response, MAX_ERROR_BODY_BYTES).await;
            if matches!(status.as_u16(), 400 | 413)
                && let Some(o) = window::overflow_in(&body)
            {
                return Err(EngineError::ContextOverflow {
                    message: error_body_message(&body),
                    window: o.window,
                    prompt_tokens: o.prompt_tokens,
                });
            }
            return Err(EngineError::Http {
                status: status.as_u16(),
                message: error_body_message(&body),
            });
        }

        let mut assembler = StreamAssembler::new();
        let mut first = true;
        loop {
            let by = if first {
                first_byte_by
            } else {
                deadline.min(Instant::now() + self.config.idle_timeout)
            };
            let chunk = match tokio::time::timeout_at(by, response.chunk()).await {
                Err(_) if first => return Err(first_byte_timeout),
                Err(_) if by == deadline => {
                    return Err(EngineError::TotalTimeout {
                        after: self.config.total_timeout,
                    });
                }
                Err(_) => {
                    return Err(EngineError::IdleTimeout {
                        after: self.config.idle_timeout,
                    });
                }
                // The connection broke mid-body: unless the response had
                // already finished, what arrived is incomplete.
                Ok(Err(_)) => return assembler.finish(),
                Ok(Ok(None)) => return assembler.finish(),
                Ok(Ok(Some(bytes))) => bytes,
            };
            first = false;
            assembler.feed(&chunk, on_delta)?;
            if assembler.is_done() {
                // Anything after [DONE] is ignored; closing now frees the
                // engine's slot sooner.
                return assembler.finish();
            }
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> EngineError {
        let reason = root_cause(&e);
        if let Some(tls) = tls_failure(&e) {
            let url = self.url.clone();
            let reason = tls.to_string();
            return match tls {
                rustls::Error::InvalidCertificate(why) => EngineError::Certificate {
                    url,
                    reason,
                    advice: certificate_advice(why),
                },
                _ => EngineError::Tls { url, reason },
            };
        }
        if e.is_connect() {
            if e.is_timeout() {
                return EngineError::ConnectTimeout {
                    url: self.url.clone(),
                    after: self.config.connect_timeout,
                };
            }
            return EngineError::Connect {
                url: self.url.clone(),
                reason,
            };
        }
        // Only called for failures of `send`, which ends when the response
        // head arrives: nothing of a response was consumed.
        EngineError::Transport {
            url: self.url.clone(),
            reason,
            before_response: true,
        }
    }
}

/// [`EngineError::ToolCallParse`] when `message` is the engine's failure
/// to parse the model's output, else `otherwise(message)`.
fn parse_failure_or(message: String, otherwise: fn(String) -> EngineError) -> EngineError {
    match crate::error::parse_failure_quote(&message) {
        Some(quoted) => EngineError::ToolCallParse {
            quoted: quoted.to_owned(),
            message,
        },
        None => otherwise(message),
    }
}

/// Whether a 503's message says the engine is loading its model
/// (llama-server: "Loading model").
fn is_loading(message: &str) -> bool {
    message.to_ascii_lowercase().contains("loading")
}

/// The innermost cause of `e` (`Connection refused (os error 111)`),
/// which is the part that says what went wrong; reqwest's and hyper's
/// wrappers above it only repeat the URL and the layer.
pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// The body as text, at most `limit` bytes of it.
async fn read_body(response: &mut reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            body.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The message of an HTTP error body: a JSON error's message, an HTML
/// page's title or text, or the text itself.
async fn read_error_body(response: &mut reqwest::Response) -> String {
    error_body_message(&read_body(response, MAX_ERROR_BODY_BYTES).await)
}

/// See [`read_error_body`].
pub(crate) fn error_body_message(text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_owned();
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
        // {"error": {"message": ...}}, {"error": "..."}, FastAPI's
        // {"detail": ...}, vLLM's {"object": "error", "message": ...}.
        let inner = v.get("error").or_else(|| v.get("detail")).unwrap_or(&v);
        return error_message(inner);
    }
    if trimmed.starts_with('<') {
        return html_text(trimmed);
    }
    snippet_long(trimmed)
}

fn html_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    if let (Some(a), Some(b)) = (lower.find("<title>"), lower.find("</title>"))
        && a + 7 <= b
        && !html[a + 7..b].trim().is_empty()
    {
        return snippet_long(html[a + 7..b].trim());
    }
    // Tags stripped, whitespace folded.
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    snippet_long(&out.split_whitespace().collect::<Vec<_>>().join(" "))
}
