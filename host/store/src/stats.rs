//! Counts per model and engine, to make persistent engine or template
//! mismatches visible.

use rusqlite::params;

use crate::{MarkupChannel, RoundFailure, Store, StoreError};

/// How every round that failed because the model wrote a tool call as
/// text begins its failure text, recovered or not. `stats` counts such
/// rounds by their `failure_kind`; this text is for people, and for
/// classifying rounds stored before that column existed.
pub const MARKUP_FAILURE_PREFIX: &str = "unexecuted tool-call markup";

/// Counts for one model on one engine, to make persistent engine or
/// template mismatches visible.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// The model name.
    pub model: String,
    /// The engine URL.
    pub engine_url: String,
    /// Sessions.
    pub sessions: i64,
    /// Turns.
    pub turns: i64,
    /// Rounds, failed ones included.
    pub rounds: i64,
    /// Structured tool calls.
    pub tool_calls: i64,
    /// Responses that wrote a tool call as text (recovered or not).
    pub markup_responses: i64,
    /// Of those, responses whose call was in the reasoning channel, the
    /// content empty: the engine's reasoning parser kept the call there.
    pub markup_in_reasoning: i64,
    /// Turns that used their one recovery.
    pub recoveries: i64,
    /// Of those, turns that then completed: one recovery fixed it.
    pub recovered: i64,
    /// Turns where the model wrote a tool call as text twice.
    pub failed_twice: i64,
    /// Prompt tokens over every round, as the engine reported them.
    pub prompt_tokens: i64,
    /// Of those, tokens the engine said its prompt cache served, over the
    /// rounds where it said (issue 25).
    pub cached_tokens: i64,
    /// Prompt tokens of the rounds whose engine said how many were cached:
    /// what `cached_tokens` is a share of.
    pub cache_reported_prompt_tokens: i64,
}

impl Store {
    /// Counts per model and engine, most used first.
    pub fn stats(&self) -> Result<Vec<Stats>, StoreError> {
        let mut stmt = self.conn.prepare(
            "WITH markup AS (
                 SELECT r.turn_id, count(*) AS n,
                        count(CASE WHEN r.markup_channel = ?2 THEN 1 END) AS in_reasoning
                 FROM rounds r
                 WHERE r.failure_kind = ?1 GROUP BY r.turn_id
             ),
             tokens AS (
                 SELECT s2.model, s2.engine_url,
                        coalesce(sum(r.prompt_tokens), 0) AS prompt,
                        coalesce(sum(r.cached_tokens), 0) AS cached,
                        coalesce(sum(CASE WHEN r.cached_tokens IS NOT NULL
                                          THEN r.prompt_tokens END), 0) AS reported
                 FROM rounds r JOIN turns t2 ON r.turn_id = t2.id
                 JOIN sessions s2 ON t2.session_id = s2.id
                 GROUP BY s2.model, s2.engine_url
             )
             SELECT s.model, s.engine_url,
                    count(DISTINCT s.id),
                    count(DISTINCT t.id),
                    (SELECT count(*) FROM rounds r JOIN turns t2 ON r.turn_id = t2.id
                       JOIN sessions s2 ON t2.session_id = s2.id
                       WHERE s2.model = s.model AND s2.engine_url = s.engine_url),
                    (SELECT count(*) FROM tool_calls c JOIN rounds r ON c.round_id = r.id
                       JOIN turns t2 ON r.turn_id = t2.id JOIN sessions s2 ON t2.session_id = s2.id
                       WHERE s2.model = s.model AND s2.engine_url = s.engine_url),
                    coalesce(sum(m.n), 0),
                    coalesce(sum(m.in_reasoning), 0),
                    count(DISTINCT CASE WHEN t.recovery_used = 1 THEN t.id END),
                    count(DISTINCT CASE WHEN t.recovery_used = 1 AND t.status = 'completed' THEN t.id END),
                    count(DISTINCT CASE WHEN m.n >= 2 THEN t.id END),
                    coalesce((SELECT k.prompt FROM tokens k
                       WHERE k.model = s.model AND k.engine_url = s.engine_url), 0),
                    coalesce((SELECT k.cached FROM tokens k
                       WHERE k.model = s.model AND k.engine_url = s.engine_url), 0),
                    coalesce((SELECT k.reported FROM tokens k
                       WHERE k.model = s.model AND k.engine_url = s.engine_url), 0)
             FROM sessions s
             LEFT JOIN turns t ON t.session_id = s.id
             LEFT JOIN markup m ON m.turn_id = t.id
             GROUP BY s.model, s.engine_url
             ORDER BY count(DISTINCT t.id) DESC, s.model",
        )?;
        let rows = stmt
            .query_map(
                params![RoundFailure::Markup, MarkupChannel::Reasoning],
                |r| {
                    Ok(Stats {
                        model: r.get(0)?,
                        engine_url: r.get(1)?,
                        sessions: r.get(2)?,
                        turns: r.get(3)?,
                        rounds: r.get(4)?,
                        tool_calls: r.get(5)?,
                        markup_responses: r.get(6)?,
                        markup_in_reasoning: r.get(7)?,
                        recoveries: r.get(8)?,
                        recovered: r.get(9)?,
                        failed_twice: r.get(10)?,
                        prompt_tokens: r.get(11)?,
                        cached_tokens: r.get(12)?,
                        cache_reported_prompt_tokens: r.get(13)?,
                    })
                },
            )?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

/// The tokens one session's rounds used, as the engine reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionTokens {
    /// Prompt tokens over every round (each round sends the history again).
    pub prompt: u64,
    /// Completion tokens over every round.
    pub completion: u64,
    /// Rounds whose engine reported no usage, not counted above.
    pub unreported_rounds: u64,
    /// Of the prompt tokens, those the engine said its prompt cache
    /// served (issue 25), over the rounds where it said.
    pub cached: u64,
    /// Prompt tokens of the rounds whose engine said how many were cached:
    /// what `cached` is a share of; 0 when no engine said.
    pub cache_reported_prompt: u64,
}

impl Store {
    /// What session `id`'s rounds used, summed from `rounds.prompt_tokens`,
    /// `rounds.completion_tokens` and `rounds.cached_tokens`.
    pub fn session_tokens(&self, id: &str) -> Result<SessionTokens, StoreError> {
        let (prompt, completion, unreported, cached, reported): (i64, i64, i64, i64, i64) =
            self.conn.query_row(
                "SELECT coalesce(sum(r.prompt_tokens), 0), coalesce(sum(r.completion_tokens), 0),
                        count(CASE WHEN r.prompt_tokens IS NULL THEN 1 END),
                        coalesce(sum(r.cached_tokens), 0),
                        coalesce(sum(CASE WHEN r.cached_tokens IS NOT NULL
                                          THEN r.prompt_tokens END), 0)
                 FROM rounds r JOIN turns t ON r.turn_id = t.id
                 WHERE t.session_id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(SessionTokens {
            prompt: count(prompt),
            completion: count(completion),
            unreported_rounds: count(unreported),
            cached: count(cached),
            cache_reported_prompt: count(reported),
        })
    }
}
