//! The one short line of tokens and speed after a turn, and the same
//! figures for `--json` (issue 15).

use goat_shepherd::TurnStats;
use serde_json::{Value, json};

/// `12.3k prompt + 456 completion tokens · context 12800 of 32768 ·
/// first token 0.81 s · 42.1 tokens/s`, or `None` when the engine
/// reported neither usage nor timings (nothing worth a line). When the
/// engine said how much of the prompt its cache served (issue 25), the
/// tokens read `12.3k prompt tokens, 11.6k from cache · 456 completion
/// tokens`.
pub(crate) fn stats_line(stats: &TurnStats) -> Option<String> {
    if stats.prompt_tokens == 0 && stats.tokens_per_second.is_none() {
        return None;
    }
    let mut parts = match stats.cached_tokens {
        Some(cached) => vec![
            format!(
                "{} prompt tokens, {} from cache",
                short(stats.prompt_tokens),
                short(cached)
            ),
            format!("{} completion tokens", short(stats.completion_tokens)),
        ],
        None => vec![format!(
            "{} prompt + {} completion tokens",
            short(stats.prompt_tokens),
            short(stats.completion_tokens)
        )],
    };
    if let Some(used) = stats.context_tokens {
        // Exact, as `/status` says them.
        parts.push(format!("context {used} of {}", stats.window));
    }
    if let Some(t) = stats.first_token_after {
        parts.push(format!("first token {:.2} s", t.as_secs_f64()));
    }
    if let Some(speed) = stats.tokens_per_second {
        parts.push(format!("{speed:.1} tokens/s"));
    }
    if stats.compactions > 0 {
        parts.push(format!("{} summary(ies) written", stats.compactions));
    }
    Some(parts.join(" · "))
}

/// The figures as JSON, for `goat run --json`.
pub(crate) fn stats_json(stats: &TurnStats) -> Value {
    json!({
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "cached_tokens": stats.cached_tokens,
        "context_tokens": stats.context_tokens,
        "window_tokens": stats.window,
        "first_token_ms": stats.first_token_after.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        "tokens_per_second": stats.tokens_per_second,
        "compactions": stats.compactions,
    })
}

/// A count as people read it: `950`, `12.3k`, `1.2M`.
fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn one_short_line_or_none() {
        assert_eq!(stats_line(&TurnStats::default()), None);
        let stats = TurnStats {
            prompt_tokens: 12_345,
            completion_tokens: 456,
            cached_tokens: None,
            context_tokens: Some(12_800),
            window: 32_768,
            first_token_after: Some(Duration::from_millis(810)),
            tokens_per_second: Some(42.14),
            compactions: 0,
        };
        assert_eq!(
            stats_line(&stats).unwrap(),
            "12.3k prompt + 456 completion tokens · context 12800 of 32768 · first token 0.81 s \
             · 42.1 tokens/s"
        );
        assert_eq!(stats_json(&stats)["first_token_ms"], 810);
        assert_eq!(stats_json(&stats)["cached_tokens"], Value::Null);
        let cached = TurnStats {
            prompt_tokens: 12_100,
            cached_tokens: Some(11_600),
            ..stats
        };
        assert_eq!(
            stats_line(&cached).unwrap(),
            "12.1k prompt tokens, 11.6k from cache · 456 completion tokens · context 12800 of \
             32768 · first token 0.81 s · 42.1 tokens/s"
        );
        assert_eq!(stats_json(&cached)["cached_tokens"], 11_600);
    }
}
