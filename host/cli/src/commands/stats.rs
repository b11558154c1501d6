//! `goat stats`: per model and engine, how turns went and how often the
//! model wrote tool calls as text, so a persistent engine or chat-template
//! mismatch shows up as a number rather than a feeling; and how much of
//! the prompts the engine's prompt cache served (issue 25), so an engine
//! that prefills every request again shows up too.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::sessions::open_existing;
use crate::args::DbArg;
use crate::{Outcome, note, text};

#[derive(clap::Args)]
#[command(mut_arg("db", |a| a.help("The store (else GOAT_DB, else the default)")))]
pub struct StatsArgs {
    #[command(flatten)]
    store: DbArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Prints the statistics of the store at `--db` (as everywhere: `--db`,
/// `GOAT_DB`, the default).
pub fn stats(args: StatsArgs) -> anyhow::Result<Outcome> {
    let json = args.json;
    let rows = match open_existing(args.store.db.as_deref())? {
        Some(store) => store.stats()?,
        None => Vec::new(),
    };
    let mut out = io::stdout().lock();
    if json {
        let rows: Vec<Value> = rows
            .iter()
            .map(|s| {
                json!({
                    "model": s.model,
                    "engine_url": s.engine_url,
                    "sessions": s.sessions,
                    "turns": s.turns,
                    "rounds": s.rounds,
                    "tool_calls": s.tool_calls,
                    "markup_responses": s.markup_responses,
                    "markup_in_reasoning": s.markup_in_reasoning,
                    "recoveries": s.recoveries,
                    "recovered": s.recovered,
                    "failed_twice": s.failed_twice,
                    "prompt_tokens": s.prompt_tokens,
                    "cached_tokens": s.cached_tokens,
                    "cache_reported_prompt_tokens": s.cache_reported_prompt_tokens,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(Outcome::Ok);
    }
    if rows.is_empty() {
        note("no sessions yet");
        return Ok(Outcome::Ok);
    }
    for s in &rows {
        let n = |count: i64, noun: &str| text::count(usize::try_from(count).unwrap_or(0), noun);
        writeln!(
            out,
            "{} on {}\n  {}, {}, {}, {}\n  tool calls written as text: {}; one recovery used in \
             {}, which then completed in {}; written as text twice in {}",
            text::escape_controls(&s.model),
            text::escape_controls(&s.engine_url),
            n(s.sessions, "session"),
            n(s.turns, "turn"),
            n(s.rounds, "round"),
            n(s.tool_calls, "tool call"),
            n(s.markup_responses, "response"),
            n(s.recoveries, "turn"),
            s.recovered,
            n(s.failed_twice, "turn"),
        )?;
        if s.cache_reported_prompt_tokens > 0 {
            writeln!(
                out,
                "  prompt tokens: {}; of the {} whose engine said, {} served from its prompt \
                 cache ({:.0}%)",
                s.prompt_tokens,
                s.cache_reported_prompt_tokens,
                s.cached_tokens,
                s.cached_tokens as f64 * 100.0 / s.cache_reported_prompt_tokens as f64
            )?;
        } else if s.prompt_tokens > 0 {
            writeln!(
                out,
                "  prompt tokens: {}; the engine did not say how many its prompt cache served",
                s.prompt_tokens
            )?;
        }
        if s.markup_in_reasoning > 0 {
            writeln!(
                out,
                "  of those, {} in the reasoning channel: the engine's reasoning parser kept the \
                 call in the reasoning channel (check --reasoning-parser and the chat template)",
                n(s.markup_in_reasoning, "response"),
            )?;
        }
        if s.failed_twice > 0 || (s.turns > 0 && s.markup_responses * 4 >= s.turns) {
            writeln!(
                out,
                "  this model often writes tool calls as text on this engine: check the engine's \
                 tool-call parser and chat template (llama-server --jinja, vLLM \
                 --enable-auto-tool-choice --tool-call-parser)"
            )?;
        }
    }
    out.flush()?;
    Ok(Outcome::Ok)
}
