//! What the engine says about its context window, and how it says a
//! request did not fit.
//!
//! Asked, never assumed: llama-server's `/props` (`n_ctx`, at the top in
//! older builds, under `default_generation_settings` in newer ones),
//! vLLM's (and SGLang's) `/v1/models` (`max_model_len`), LM Studio's
//! `/api/v0/models` (`loaded_context_length`, else `max_context_length`)
//! and Ollama's `/api/show` (`num_ctx` in its `parameters`, else the
//! model's `*.context_length`). A probe that fails for any reason is "not
//! said", never a failed turn.

use serde_json::Value;

/// Where a context window came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WindowSource {
    /// The person's `context_tokens` setting.
    Setting,
    /// llama-server's `/props` (`n_ctx`).
    LlamaCppProps,
    /// The engine's `/models` listing (`max_model_len`: vLLM, SGLang).
    ModelsListing,
    /// LM Studio's `/api/v0/models` (`loaded_context_length` or
    /// `max_context_length`).
    LmStudioModels,
    /// Ollama's `/api/show` (`num_ctx`, or the model's `context_length`).
    OllamaShow,
    /// A context-overflow error that named the window.
    OverflowError,
    /// Nothing said it: GOAT's conservative default.
    Default,
}

impl WindowSource {
    /// A short name for status lines and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Setting => "setting",
            Self::LlamaCppProps => "llama.cpp /props",
            Self::ModelsListing => "/models max_model_len",
            Self::LmStudioModels => "LM Studio /api/v0/models",
            Self::OllamaShow => "Ollama /api/show",
            Self::OverflowError => "engine error",
            Self::Default => "default",
        }
    }
}

/// What asking the engine about its window found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowProbe {
    /// The engine said: `tokens`, from `source`.
    Found {
        /// The window, in tokens.
        tokens: u64,
        /// Which endpoint said it.
        source: WindowSource,
    },
    /// The engine answered, and said nothing about its window.
    NotSaid,
    /// The engine could not be asked (down, loading, timing out); asking
    /// again later may work.
    Unreachable,
}

/// The windows an engine is believed to have: below 1024 tokens no system
/// prompt and tool list fit (a window that small from an engine is a bug
/// or a lie, and believing it would compact the person's requests into
/// nothing), and above 100 million no model exists. The same bounds as
/// the `context_tokens` setting, which takes them from here. A figure
/// outside them counts as not said.
pub const PLAUSIBLE_WINDOW: std::ops::Range<u64> = 1024..100_000_001;

/// `n` when it is a [plausible window](PLAUSIBLE_WINDOW).
fn plausible(n: u64) -> Option<u64> {
    PLAUSIBLE_WINDOW.contains(&n).then_some(n)
}

/// The window in a llama-server `/props` body: `n_ctx` at the top
/// (older builds) or under `default_generation_settings` (newer ones).
pub fn props_window(body: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(body).ok()?;
    let settings = v.get("default_generation_settings");
    [
        settings.and_then(|s| s.get("n_ctx")),
        settings
            .and_then(|s| s.get("params"))
            .and_then(|p| p.get("n_ctx")),
        v.get("n_ctx"),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_u64)
    .and_then(plausible)
}

/// How many requests llama-server serves at once, as its `/props` says
/// (`total_slots`, from `-np`).
pub fn props_slots(body: &str) -> Option<u32> {
    serde_json::from_str::<Value>(body)
        .ok()?
        .get("total_slots")?
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0)
}

/// Whether a `/props` body is llama-server's: it takes `cache_prompt`
/// (issue 25). Its `/props` has always carried
/// `default_generation_settings`; newer builds add `build_info` and
/// `total_slots`.
pub fn props_say_llama_cpp(body: &str) -> bool {
    serde_json::from_str::<Value>(body).is_ok_and(|v| {
        ["default_generation_settings", "build_info", "total_slots"]
            .iter()
            .any(|k| v.get(k).is_some())
    })
}

/// Whether the engine's chat template shows the model the tools offered,
/// as llama-server's `/props` says (`chat_template_caps.supports_tools`).
/// A template without tools makes llama-server drop a request's `tools`
/// without a word: the model never sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateTools {
    /// The template renders tools.
    Shown,
    /// The template has no place for tools: they are dropped.
    Dropped,
    /// The engine does not say (not llama-server, or an older build).
    NotSaid,
}

/// What a llama-server `/props` body says of its template and tools.
pub fn props_template_tools(body: &str) -> TemplateTools {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return TemplateTools::NotSaid;
    };
    match v
        .get("chat_template_caps")
        .and_then(|c| c.get("supports_tools"))
        .and_then(Value::as_bool)
    {
        Some(true) => TemplateTools::Shown,
        Some(false) => TemplateTools::Dropped,
        None => TemplateTools::NotSaid,
    }
}

/// The window in a `/models` listing for `model`: its entry's
/// `max_model_len` (vLLM, SGLang), or the one entry's when the listing
/// holds one model (an engine serving one model under another name).
pub fn models_window(body: &str, model: &str) -> Option<u64> {
    listed_window(body, model, &["max_model_len"])
}

/// The window in LM Studio's `/api/v0/models` listing for `model`: the
/// context the loaded model was given (`loaded_context_length`), else the
/// most it takes (`max_context_length`); the one entry's when the listing
/// holds one model.
pub fn lm_studio_window(body: &str, model: &str) -> Option<u64> {
    listed_window(
        body,
        model,
        &["loaded_context_length", "max_context_length"],
    )
}

/// The first of `keys` that `model`'s entry of a `{"data": [...]}`
/// listing holds, or the only entry's when there is one, if plausible.
fn listed_window(body: &str, model: &str, keys: &[&str]) -> Option<u64> {
    let v: Value = serde_json::from_str(body).ok()?;
    let list = v.get("data")?.as_array()?;
    let len = |m: &Value| {
        keys.iter()
            .find_map(|k| m.get(*k).and_then(Value::as_u64))
            .and_then(plausible)
    };
    let named = list
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model));
    match (named, list.as_slice()) {
        (Some(m), _) => len(m),
        (None, [only]) => len(only),
        _ => None,
    }
}

/// The window in an Ollama `/api/show` body: `num_ctx` when the model's
/// parameters set it (what Ollama then serves), else the model's own
/// `<architecture>.context_length` from `model_info`.
///
/// Ollama serves a model with its own default `num_ctx` (set by
/// `OLLAMA_CONTEXT_LENGTH`, or chosen by memory) unless the model sets
/// one, and that default can be smaller than the model's length: a person
/// who runs Ollama that way should set `context_tokens`.
pub fn ollama_window(body: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(body).ok()?;
    let num_ctx = v.get("parameters").and_then(Value::as_str).and_then(|p| {
        p.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
        })
    });
    let info = v.get("model_info").and_then(Value::as_object);
    let architecture = info
        .and_then(|i| i.get("general.architecture"))
        .and_then(Value::as_str);
    let trained = info.and_then(|i| {
        architecture
            .and_then(|a| i.get(&format!("{a}.context_length")))
            .or_else(|| {
                i.iter()
                    .find(|(k, _)| k.ends_with(".context_length"))
                    .map(|(_, v)| v)
            })
            .and_then(Value::as_u64)
    });
    num_ctx.or(trained).and_then(plausible)
}

/// What an engine's refusal of a request as too long for its context
/// said, when it said numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overflow {
    /// The window, when named (llama.cpp `n_ctx`, vLLM "maximum context
    /// length is N tokens").
    pub window: Option<u64>,
    /// The request's size in the engine's tokens, when named.
    pub prompt_tokens: Option<u64>,
}

/// Whether an HTTP error body (or a mid-stream error) says the request
/// does not fit the context: llama.cpp's `exceed_context_size_error`
/// ("the request exceeds the available context size"), vLLM's "maximum
/// context length is", OpenAI's `context_length_exceeded`. The engines
/// give nothing better than their words, so their words are read; a
/// structured `type`/`code` is read first.
pub fn overflow_in(body: &str) -> Option<Overflow> {
    let json: Option<Value> = serde_json::from_str(body.trim()).ok();
    let error = json.as_ref().map(|v| v.get("error").unwrap_or(v));
    let field = |k: &str| error.and_then(|e| e.get(k));
    let word = |k: &str| field(k).and_then(Value::as_str).unwrap_or("");
    let message = match error {
        Some(e) => e
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| e.to_string(), str::to_owned),
        None => body.to_owned(),
    };
    let lower = message.to_ascii_lowercase();
    let typed = ["exceed_context_size_error", "context_length_exceeded"]
        .iter()
        .any(|t| word("type") == *t || word("code") == *t);
    let worded = [
        "exceeds the available context size",
        "maximum context length is",
        "context_length_exceeded",
        "context length exceeded",
    ]
    .iter()
    .any(|w| lower.contains(w));
    if !typed && !worded {
        return None;
    }
    let number = |k: &str| field(k).and_then(Value::as_u64);
    Some(Overflow {
        window: number("n_ctx")
            .or_else(|| number_after(&lower, "maximum context length is "))
            .and_then(plausible),
        prompt_tokens: number("n_prompt_tokens"),
    })
}

/// The whole number right after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn slots_are_read_from_llama_servers_props() {
        assert_eq!(super::props_slots(r#"{"total_slots": 4}"#), Some(4));
        assert_eq!(super::props_slots(r#"{"total_slots": 0}"#), None);
        assert_eq!(super::props_slots(r#"{"n_ctx": 4096}"#), None);
        assert_eq!(super::props_slots("not json"), None);
    }

    use super::*;

    #[test]
    fn props_in_both_shapes() {
        assert_eq!(props_window(r#"{"n_ctx": 4096}"#), Some(4096));
        assert_eq!(
            props_window(r#"{"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1}"#),
            Some(32768)
        );
        assert_eq!(props_window(r#"{"default_generation_settings": {}}"#), None);
        assert_eq!(props_window(r#"{"n_ctx": 0}"#), None);
        // A window no prompt fits, or none exists, is not believed.
        assert_eq!(props_window(r#"{"n_ctx": 50}"#), None);
        assert_eq!(props_window(r#"{"n_ctx": 18446744073709551615}"#), None);
        assert_eq!(
            models_window(r#"{"data": [{"id": "m", "max_model_len": 1}]}"#, "m"),
            None
        );
        assert_eq!(props_window("<html>"), None);
    }

    #[test]
    fn models_for_the_model_or_the_only_one() {
        let two = r#"{"data": [{"id": "a", "max_model_len": 8192}, {"id": "b", "max_model_len": 131072}]}"#;
        assert_eq!(models_window(two, "b"), Some(131_072));
        assert_eq!(models_window(two, "c"), None);
        let one = r#"{"data": [{"id": "served", "max_model_len": 16384}]}"#;
        assert_eq!(models_window(one, "alias"), Some(16384));
        assert_eq!(models_window(r#"{"data": [{"id": "x"}]}"#, "x"), None);
        assert_eq!(models_window("[]", "x"), None);
    }

    #[test]
    fn lm_studio_loaded_length_first_then_its_maximum() {
        let listing = r#"{"object":"list","data":[
            {"id":"qwen2.5-coder-7b-instruct","object":"model","type":"llm","state":"loaded","max_context_length":32768,"loaded_context_length":16384},
            {"id":"other","object":"model","type":"llm","state":"not-loaded","max_context_length":131072}]}"#;
        assert_eq!(
            lm_studio_window(listing, "qwen2.5-coder-7b-instruct"),
            Some(16384)
        );
        assert_eq!(lm_studio_window(listing, "other"), Some(131_072));
        assert_eq!(lm_studio_window(listing, "missing"), None);
        let one = r#"{"data":[{"id":"m","max_context_length":8192}]}"#;
        assert_eq!(lm_studio_window(one, "alias"), Some(8192));
        assert_eq!(lm_studio_window(r#"{"data":[{"id":"m"}]}"#, "m"), None);
    }

    #[test]
    fn ollama_num_ctx_first_then_the_models_length() {
        let show = r#"{"parameters":"stop \"<|im_end|>\"\nnum_ctx 16384\ntemperature 0.7","model_info":{"general.architecture":"qwen2","qwen2.context_length":32768}}"#;
        assert_eq!(ollama_window(show), Some(16384));
        let bare = r#"{"model_info":{"general.architecture":"qwen2","qwen2.context_length":32768,"qwen2.embedding_length":3584}}"#;
        assert_eq!(ollama_window(bare), Some(32768));
        let unnamed = r#"{"model_info":{"llama.context_length":131072}}"#;
        assert_eq!(ollama_window(unnamed), Some(131_072));
        assert_eq!(ollama_window(r#"{"parameters":"num_ctx lots"}"#), None);
        assert_eq!(
            ollama_window(r#"{"model_info":{"x.context_length":16}}"#),
            None
        );
        assert_eq!(ollama_window("{}"), None);
    }

    #[test]
    fn overflow_errors_by_engine() {
        let llama = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
        assert_eq!(
            overflow_in(llama),
            Some(Overflow {
                window: Some(4096),
                prompt_tokens: Some(4476)
            })
        );
        let old_llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"invalid_request_error"}}"#;
        assert_eq!(overflow_in(old_llama), Some(Overflow::default()));
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            overflow_in(vllm),
            Some(Overflow {
                window: Some(32768),
                prompt_tokens: None
            })
        );
        let openai = r#"{"error":{"message":"Your input is too long.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(overflow_in(openai), Some(Overflow::default()));
        assert_eq!(
            overflow_in(r#"{"error":{"message":"bad tool schema"}}"#),
            None
        );
        assert_eq!(overflow_in("Bad Request"), None);
        // A refusal naming a window no prompt fits is still an overflow,
        // but its window is not believed.
        let tiny = r#"{"error":{"type":"exceed_context_size_error","message":"x","n_ctx":8}}"#;
        assert_eq!(overflow_in(tiny), Some(Overflow::default()));
    }
}
