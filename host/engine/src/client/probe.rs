//! What the engine says about itself: its models, its window, its chat
//! template's tools, and whether it is llama-server (which then gets
//! `cache_prompt`). Small `GET`s, each bounded.

use std::sync::atomic::Ordering;

use super::{
    CachePrompt, EngineClient, MAX_MODELS_BODY_BYTES, MAX_MODELS_NAMED, MODELS_TIMEOUT, read_body,
    read_error_body,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use crate::error::EngineError;
use crate::window::{self, TemplateTools, WindowProbe, WindowSource};

impl EngineClient {
    /// The models the engine lists at `{base}/models`, in its order.
    pub async fn list_models(&self) -> Result<Vec<String>, EngineError> {
        Ok(model_ids(&self.get_small(&self.models_url()).await?))
    }

    /// How many requests the engine serves at once, where it says
    /// (llama-server's `/props`, `total_slots`); `None` where it does not,
    /// or cannot be asked.
    pub async fn slots(&self) -> Option<u32> {
        let body = self
            .fetch_small(self.http.get(self.props_url()))
            .await
            .ok()?;
        window::props_slots(&body)
    }

    /// Asks the engine its context window: llama-server's `/props` (beside
    /// `/v1`, at the server's root), then `/models` (`max_model_len`,
    /// vLLM and SGLang), then LM Studio's `/api/v0/models` and Ollama's
    /// `/api/show` (both at the root), stopping at the first that says.
    /// Each request is a small `GET` bounded by
    /// [`MODELS_TIMEOUT`], over the same client (and TLS trust) as the
    /// chat. Nothing here fails a turn: an engine that cannot be asked is
    /// [`WindowProbe::Unreachable`], one that does not say is
    /// [`WindowProbe::NotSaid`].
    pub async fn discover_window(&self) -> WindowProbe {
        let mut unreachable = false;
        let mut ask = async |request: reqwest::RequestBuilder| match self.fetch_small(request).await
        {
            Ok(body) => Some(body),
            Err(e) => {
                // A 4xx is an engine without the endpoint; anything else
                // (refused, timed out, 5xx while loading) may pass.
                unreachable |=
                    !matches!(e, EngineError::Http { status, .. } if (400..500).contains(&status));
                None
            }
        };
        let props = ask(self.http.get(self.props_url())).await;
        if let Some(body) = &props {
            self.keep_props(body);
        }
        if let Some(tokens) = props.as_deref().and_then(window::props_window) {
            return WindowProbe::Found {
                tokens,
                source: WindowSource::LlamaCppProps,
            };
        }
        let models = ask(self.http.get(self.models_url())).await;
        if let Some(tokens) = models
            .as_deref()
            .and_then(|b| window::models_window(b, &self.config.model))
        {
            return WindowProbe::Found {
                tokens,
                source: WindowSource::ModelsListing,
            };
        }
        let lm_studio = ask(self.http.get(self.root_url("/api/v0/models"))).await;
        if let Some(tokens) = lm_studio
            .as_deref()
            .and_then(|b| window::lm_studio_window(b, &self.config.model))
        {
            return WindowProbe::Found {
                tokens,
                source: WindowSource::LmStudioModels,
            };
        }
        let show = self
            .http
            .post(self.root_url("/api/show"))
            .header(CONTENT_TYPE, "application/json")
            .body(serde_json::json!({ "model": self.config.model }).to_string());
        if let Some(tokens) = ask(show).await.as_deref().and_then(window::ollama_window) {
            return WindowProbe::Found {
                tokens,
                source: WindowSource::OllamaShow,
            };
        }
        if unreachable {
            WindowProbe::Unreachable
        } else {
            WindowProbe::NotSaid
        }
    }

    /// Asks llama-server's `/props` whether its chat template shows the
    /// model the tools (see [`TemplateTools`]); any failure to ask is
    /// [`TemplateTools::NotSaid`], never an error.
    pub async fn template_tools(&self) -> TemplateTools {
        let kept = *self
            .template_tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(said) = kept {
            return said;
        }
        match self.get_small(&self.props_url()).await {
            Ok(body) => {
                self.keep_props(&body);
                window::props_template_tools(&body)
            }
            Err(_) => TemplateTools::NotSaid,
        }
    }

    /// Keeps what a `/props` body said: the template's tools, and whether
    /// the engine is llama-server, which then gets `cache_prompt: true`.
    fn keep_props(&self, body: &str) {
        *self
            .template_tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(window::props_template_tools(body));
        if window::props_say_llama_cpp(body) {
            let _ = self.cache_prompt.compare_exchange(
                CachePrompt::Unknown as u8,
                CachePrompt::Send as u8,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Whether requests now carry `cache_prompt: true`: the engine's
    /// `/props` said it is llama-server, and it has not refused the field.
    pub fn sends_cache_prompt(&self) -> bool {
        self.cache_prompt.load(Ordering::Relaxed) == CachePrompt::Send as u8
    }

    /// A small JSON `GET`: at most [`MAX_MODELS_BODY_BYTES`] read, the
    /// whole request within [`MODELS_TIMEOUT`].
    async fn get_small(&self, url: &str) -> Result<String, EngineError> {
        self.fetch_small(self.http.get(url)).await
    }

    /// [`EngineClient::get_small`] for any request: Ollama's `/api/show`
    /// is a `POST`.
    async fn fetch_small(&self, request: reqwest::RequestBuilder) -> Result<String, EngineError> {
        let fetch = async {
            let mut response = request
                .header(ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| self.transport_error(e))?;
            let status = response.status();
            if !status.is_success() {
                return Err(EngineError::Http {
                    status: status.as_u16(),
                    message: read_error_body(&mut response).await,
                });
            }
            Ok(read_body(&mut response, MAX_MODELS_BODY_BYTES).await)
        };
        tokio::time::timeout(MODELS_TIMEOUT, fetch)
            .await
            .unwrap_or(Err(EngineError::TotalTimeout {
                after: MODELS_TIMEOUT,
            }))
    }

    fn models_url(&self) -> String {
        format!("{}/models", self.config.base_url.trim_end_matches('/'))
    }

    /// llama-server serves `/props` at its root, not under `/v1`.
    fn props_url(&self) -> String {
        self.root_url("/props")
    }

    /// `path` at the server's root, beside `/v1` (llama-server's
    /// `/props`, LM Studio's `/api/v0`, Ollama's `/api`).
    fn root_url(&self, path: &str) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        format!("{}{path}", base.strip_suffix("/v1").unwrap_or(base))
    }
}

/// At most [`MAX_MODELS_NAMED`] names, then how many more.
pub(super) fn named(models: &[String]) -> Vec<String> {
    let mut out: Vec<String> = models.iter().take(MAX_MODELS_NAMED).cloned().collect();
    if models.len() > MAX_MODELS_NAMED {
        out.push(format!("and {} more", models.len() - MAX_MODELS_NAMED));
    }
    out
}

/// The ids in an OpenAI `/models` listing (`{"data": [{"id": ...}]}`);
/// Ollama's `{"models": [{"name": ...}]}` too.
fn model_ids(body: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let (list, key) = match (v.get("data"), v.get("models")) {
        (Some(d), _) => (d, "id"),
        (None, Some(m)) => (m, "name"),
        (None, None) => return Vec::new(),
    };
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(key).and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect()
}
