//! `goat probe`: does this engine give this model's tool calls back as
//! structured calls?
//!
//! Sends a few streaming requests that offer the Pen file tool schemas and
//! ask for something that needs one, and reports, for each, whether the
//! engine returned a valid structured call, tool-call markup as plain text
//! (the failure ADR-0065 recovers from), or neither, with the time to the
//! first token. It never runs a tool: the calls are only inspected.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use goat_engine::{
    CancellationToken, ChatRequest, Delta, Message, TemplateTools, ToolSchema, WindowProbe,
};
use goat_markup::{Detector, Verdict};

use crate::args::EngineArgs;
use crate::config::Settings;
use crate::session::engine_with;
use crate::{Outcome, session, text};

/// What each probe asks for: one file read, which every coder model
/// should answer with a `read_file` call.
const PROBE_PROMPT: &str = "Read the file README.md in the workspace and tell me its first line.";

/// Characters of a "neither" answer shown on its line.
const NEITHER_EXCERPT_CHARS: usize = 80;

/// How one probe came out.
enum Finding {
    Structured(String),
    InvalidCall(String),
    Markup(String),
    /// Markup in the reasoning channel, the content empty.
    ReasoningMarkup(String),
    /// A complete unwrapped Qwen3-Coder block the setting leaves as text.
    Unwrapped(String),
    /// No call: the answer's start, escaped.
    Neither(String),
    /// Cut off at the output cap before it finished.
    Length,
    Failed(String),
}

#[derive(clap::Args)]
#[command(
    mut_arg("engine", |a| a.help("The engine's base URL (else GOAT_ENGINE_URL)")),
    mut_arg("model", |a| a.help("The model name (else GOAT_MODEL)")),
    mut_arg("api_key_env", |a| a.help(
        "The variable holding a bearer key, if the engine needs one"
    )),
)]
pub struct ProbeArgs {
    #[command(flatten)]
    engine: EngineArgs,
    /// How many requests to send.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=100))]
    count: u16,
}

/// Runs `--count` probes against the engine.
pub fn probe(args: ProbeArgs) -> anyhow::Result<Outcome> {
    let count = usize::from(args.count);
    let mut settings = Settings::load()?;
    settings.apply_engine_flags(&args.engine.flags());
    let (client, url, model) = engine_with(&settings, None, &crate::stderr_note)?;
    let (_, tools) = session::sandbox_and_tools(
        session::Plugins::None,
        &settings.limits(),
        &crate::stderr_note,
    )?;
    let schemas: Vec<ToolSchema> = tools
        .iter()
        .map(|t| ToolSchema {
            name: t.spec().name.clone(),
            description: t.spec().description.clone(),
            parameters: t.spec().parameters.clone(),
        })
        .collect();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    let request = ChatRequest {
        messages: vec![
            Message::System {
                content: "You are a coding assistant. Use the tools offered to read files; paths \
                          are relative to the workspace root."
                    .to_owned(),
            },
            Message::User {
                content: PROBE_PROMPT.to_owned(),
            },
        ],
        tools: schemas.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "probing {} with model {} ({count} requests offering the Pen tools)",
        text::escape_controls(&url),
        text::escape_controls(&model)
    )?;
    // The engine may say outright that it drops the tools.
    let mut tools_hidden = runtime.block_on(client.template_tools()) == TemplateTools::Dropped;
    if tools_hidden {
        writeln!(
            out,
            "{}",
            text::tools_not_shown(goat_shepherd::ToolsNotShown::TemplateCaps)
        )?;
    }
    let mut findings = Vec::new();
    let mut told_loading = false;
    let mut interrupted = false;
    for i in 1..=count {
        let started = Instant::now();
        let mut first: Option<Duration> = None;
        let cancel = CancellationToken::new();
        let mut on_delta = |d: Delta<'_>| match d {
            // A loading engine has sent nothing of an answer yet.
            Delta::EngineLoading { .. } => {
                if !told_loading {
                    told_loading = true;
                    crate::note("the engine is loading the model; waiting");
                }
            }
            Delta::Content(_) | Delta::Reasoning(_) | Delta::ToolCallStarted { .. } => {
                if first.is_none() {
                    first = Some(started.elapsed());
                }
            }
        };
        let stream = client.stream_chat(&request, &cancel, &mut on_delta);
        // Ctrl-C ends the probe with the verdict on what came back so far.
        let result = runtime.block_on(async {
            tokio::select! {
                r = stream => Some(r),
                _ = tokio::signal::ctrl_c() => None,
            }
        });
        let Some(result) = result else {
            cancel.cancel();
            interrupted = true;
            writeln!(out, "  {i}. interrupted (Ctrl-C)")?;
            break;
        };
        let usage = match &result {
            Ok(r) => r.usage,
            Err(goat_engine::EngineError::Length { partial }) => partial.usage,
            Err(_) => None,
        };
        if let Some(why) = usage.and_then(|u| {
            goat_shepherd::prompt_without_tools(&schemas, u.prompt_tokens, u.cached_tokens)
        }) && !tools_hidden
        {
            tools_hidden = true;
            writeln!(out, "{}", text::tools_not_shown(why))?;
        }
        let finding = match result {
            Err(goat_engine::EngineError::Length { .. }) => Finding::Length,
            Err(e) => Finding::Failed(text::engine_failure(&e)),
            Ok(r) if !r.tool_calls.is_empty() => {
                let call = &r.tool_calls[0];
                let known = schemas.iter().find(|s| s.name == call.name);
                match (&call.arguments, known) {
                    (Ok(args), Some(schema)) => {
                        match goat_router::schema::validate(&schema.parameters, args) {
                            Ok(()) => Finding::Structured(format!("{}({})", call.name, args)),
                            Err(why) => Finding::InvalidCall(format!("{}: {why}", call.name)),
                        }
                    }
                    (Err(e), _) => Finding::InvalidCall(format!("{}: {e}", call.name)),
                    (Ok(_), None) => Finding::InvalidCall(format!("unknown tool '{}'", call.name)),
                }
            }
            Ok(r) => {
                let unwrapped_calls = settings.unwrapped_calls();
                let check = |text: &str| {
                    let mut d = Detector::new(&names).unwrapped_calls(unwrapped_calls);
                    d.feed(text.as_bytes());
                    d.finish()
                };
                let content = check(&r.content);
                let reasoning = r
                    .content
                    .trim()
                    .is_empty()
                    .then(|| check(&r.reasoning))
                    .filter(|v| v.unexecuted || v.unwrapped);
                match (content, reasoning) {
                    (v, _) if v.unexecuted => Finding::Markup(described(&v)),
                    (_, Some(v)) if v.unexecuted => Finding::ReasoningMarkup(described(&v)),
                    (v, _) if v.unwrapped => Finding::Unwrapped("in the content".to_owned()),
                    (_, Some(_)) => Finding::Unwrapped("in the reasoning channel".to_owned()),
                    _ => Finding::Neither(text::snippet(&r.content, NEITHER_EXCERPT_CHARS)),
                }
            }
        };
        let ttft = first.map_or_else(
            || "no token".to_owned(),
            |d| format!("first token after {:.2?}", d),
        );
        let line = match &finding {
            Finding::Structured(c) => format!("structured call: {c}"),
            Finding::InvalidCall(c) => format!("structured call with bad arguments: {c}"),
            Finding::Markup(m) => format!("UNEXECUTED MARKUP: {m}"),
            Finding::ReasoningMarkup(m) => format!(
                "UNEXECUTED MARKUP in the reasoning channel: {m}; the engine's reasoning parser \
                 kept the call in the reasoning channel"
            ),
            Finding::Unwrapped(at) => format!(
                "UNWRAPPED CALL {at}: a complete <function=...> block with no <tool_call>, \
                 left as text because markup.unwrapped_calls is off"
            ),
            Finding::Neither(said) if said.is_empty() => {
                "neither: answered without text and without calling a tool".to_owned()
            }
            Finding::Neither(said) => {
                format!("neither: answered in text without calling a tool: \"{said}\"")
            }
            Finding::Length => format!(
                "cut off: the answer reached the output cap (max_output_tokens {}) before it \
                 finished",
                settings
                    .max_output_tokens
                    .value
                    .map_or_else(|| "unset".to_owned(), |n| n.to_string())
            ),
            Finding::Failed(e) => format!("request failed: {e}"),
        };
        writeln!(out, "  {i}. {}; {ttft}", text::escape_controls(&line))?;
        findings.push(finding);
    }
    if interrupted {
        writeln!(
            out,
            "interrupted: the verdict covers the {} of {count} requests that came back",
            findings.len()
        )?;
        if findings.is_empty() {
            return Ok(Outcome::Failed);
        }
    }
    let outcome = verdict(&mut out, &findings, tools_hidden)?;
    let window = match settings.context_window() {
        goat_shepherd::WindowChoice::Setting(tokens) => format!(
            "context window: {tokens} tokens, as set ({})",
            settings.context_tokens.source
        ),
        goat_shepherd::WindowChoice::Ask { fallback } => match runtime
            .block_on(client.discover_window())
        {
            WindowProbe::Found { tokens, source } => {
                format!("context window: {tokens} tokens (from {})", source.as_str())
            }
            WindowProbe::NotSaid => format!("context window: {}", text::window_not_said(fallback)),
            WindowProbe::Unreachable => "context window: the engine could not be asked; a \
                                         session asks again at its first turn"
                .to_owned(),
        },
    };
    writeln!(out, "{window}")?;
    // An interrupted probe did not show that tool calling works.
    Ok(if interrupted {
        Outcome::Failed
    } else {
        outcome
    })
}

/// The verdict on the probes that came back.
fn verdict(
    out: &mut impl Write,
    findings: &[Finding],
    tools_hidden: bool,
) -> anyhow::Result<Outcome> {
    let n = findings.len();
    let structured = findings
        .iter()
        .filter(|f| matches!(f, Finding::Structured(_)))
        .count();
    let markup = findings
        .iter()
        .filter(|f| matches!(f, Finding::Markup(_) | Finding::ReasoningMarkup(_)))
        .count();
    let in_reasoning = findings
        .iter()
        .filter(|f| matches!(f, Finding::ReasoningMarkup(_)))
        .count();
    let unwrapped = findings
        .iter()
        .filter(|f| matches!(f, Finding::Unwrapped(_)))
        .count();
    let failed = findings
        .iter()
        .filter(|f| matches!(f, Finding::Failed(_)))
        .count();
    if structured == n {
        writeln!(
            out,
            "verdict: tool calling works: {n} of {n} requests came back as valid structured calls"
        )?;
        return Ok(Outcome::Ok);
    }
    if failed == n {
        writeln!(
            out,
            "verdict: the engine could not be probed: every request failed (see above)"
        )?;
    } else if markup > 0 {
        writeln!(
            out,
            "verdict: {markup} of {n} responses wrote the tool call as text, so nothing would run. \
             The likely cause is the engine's tool-call parser or chat template, not set up for this \
             model: llama-server needs --jinja (and a template with tool support for Qwen3-Coder, \
             e.g. --chat-template-file); vLLM needs --enable-auto-tool-choice and \
             --tool-call-parser qwen3_coder (hermes for Qwen2.5/Qwen3); Ollama needs a model whose \
             template declares tools. GOAT recovers once per turn, but a mismatch that keeps \
             coming must be fixed in the engine."
        )?;
        if in_reasoning > 0 {
            writeln!(
                out,
                "  {in_reasoning} of them in the reasoning channel: the engine's reasoning parser \
                 kept the call in the reasoning channel (vLLM --reasoning-parser: the model did \
                 not close its thinking before the call); check the reasoning parser and chat \
                 template for this model."
            )?;
        }
    }
    if unwrapped > 0 {
        writeln!(
            out,
            "advice: {unwrapped} of {n} responses wrote a complete Qwen3-Coder call with no \
             <tool_call> envelope, which vLLM's streaming qwen3_coder parser passes on as text. \
             GOAT leaves it as the answer unless you turn on markup.unwrapped_calls = true in \
             the config file (or GOAT_MARKUP_UNWRAPPED_CALLS=1); then it gets the one recovery \
             (ADR-0067)."
        )?;
    }
    if failed < n && markup == 0 && unwrapped == 0 {
        let count_of = |f: fn(&Finding) -> bool| findings.iter().filter(|x| f(x)).count();
        let parts = [
            (
                count_of(|f| matches!(f, Finding::Neither(_))),
                "answered in text without calling a tool",
            ),
            (
                count_of(|f| matches!(f, Finding::InvalidCall(_))),
                "called a tool with bad arguments",
            ),
            (
                count_of(|f| matches!(f, Finding::Length)),
                "were cut off at the output cap (max_output_tokens)",
            ),
            (failed, "failed"),
        ];
        let rest: Vec<String> = parts
            .iter()
            .filter(|(k, _)| *k > 0)
            .map(|(k, what)| format!("{k} {what}"))
            .collect();
        let why = if tools_hidden {
            "The engine is not showing the tools to the model (see the warning above): fix its \
             chat template first."
        } else {
            "The model may be too small or not tuned for tool use, or a looping answer needs \
             sampling settings (docs/engines.md)."
        };
        writeln!(
            out,
            "verdict: {structured} of {n} requests came back as valid structured calls; {}. {why}",
            rest.join(", ")
        )?;
    }
    Ok(Outcome::Failed)
}

/// A verdict's tool and markers, for a probe line.
fn described(v: &Verdict) -> String {
    let markers: Vec<&str> = v.markers.iter().map(|m| m.as_str()).collect();
    let how = if markers.is_empty() {
        "no <tool_call> envelope".to_owned()
    } else {
        markers.join(" ")
    };
    format!(
        "{} written as text ({how})",
        v.tool.as_deref().unwrap_or_default()
    )
}
