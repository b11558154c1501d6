//! A session as an ATIF trajectory: Harbor's Agent Trajectory Interchange
//! Format (RFC 0001), which Harbor's own pydantic models
//! (`harbor.models.trajectories`) read and validate.
//!
//! The mapping follows GOAT's record, not the model's conversation as
//! sent: each turn's request is a `user` step, and each round (one request
//! to the engine) an `agent` step with its text, reasoning, structured
//! calls, their results as the observation, and the tokens the engine
//! reported. Rounds that failed (an engine error, a cancel, markup written
//! as text) are steps too, with how they ended in `extra`: the record is
//! only useful whole. A summary that later prompts carried instead of
//! older turns is a `system` step marked `context_management`, as Harbor's
//! own agents mark theirs. Nothing the store does not hold is made up:
//! no system prompt or tool definitions (neither is stored), no cached
//! tokens where the engine did not say, and no metrics for a round whose
//! engine reported no usage.
//!
//! The structs below are the subset of ATIF that GOAT writes, so a field
//! cannot be misspelled; Harbor's models forbid unknown fields.

use std::io::{self, Write};

use goat_store::{CallRecord, RoundRecord, SessionInfo, Store, StoreError, Summary, TurnRecord};
use serde::Serialize;
use serde_json::Value;

use crate::text::iso8601;

/// The ATIF version written: the oldest that has every field GOAT uses
/// (`extra` on tool calls and observation results, `llm_call_count`), so
/// readers that know no later version still take it. Harbor reads v1.0 to
/// v1.8.
pub(crate) const SCHEMA_VERSION: &str = "ATIF-v1.7";

/// The agent's name in a trajectory.
const AGENT_NAME: &str = "goat";

/// How GOAT's record maps onto ATIF, said once in each trajectory so a
/// reader need not know GOAT.
const NOTES: &str = "Exported from GOAT's store. One user step per turn (its request) and one \
agent step per round (one request to the engine), failed rounds included: extra.status says how \
each round ended, and GOAT never sent a failed round back to the model. A system step marked \
context_management is a summary that later prompts carried instead of the turns before it. Token \
counts are the engine's as GOAT stored them, cached tokens where the engine said; the system \
prompt and the tool definitions are not stored, so they are not here.";

/// A trajectory (ATIF `Trajectory`).
#[derive(Debug, Serialize)]
pub(crate) struct Trajectory {
    schema_version: &'static str,
    session_id: String,
    agent: Agent,
    steps: Vec<Step>,
    notes: &'static str,
    final_metrics: FinalMetrics,
    extra: SessionExtra,
}

#[derive(Debug, Serialize)]
struct Agent {
    name: &'static str,
    version: &'static str,
    model_name: String,
}

#[derive(Debug, Serialize)]
struct SessionExtra {
    workspace: String,
    engine_url: String,
    created_at: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Source {
    System,
    User,
    Agent,
}

#[derive(Debug, Serialize)]
struct Step {
    step_id: usize,
    timestamp: String,
    source: Source,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_call_count: Option<u32>,
    extra: StepExtra,
}

/// What GOAT knows of a step that ATIF has no field for.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum StepExtra {
    Turn(TurnExtra),
    Round(RoundExtra),
    Summary(SummaryExtra),
}

#[derive(Debug, Serialize)]
struct TurnExtra {
    turn_id: i64,
    /// How the turn ended: completed, failed, cancelled, running.
    turn_status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_error: Option<String>,
    recovery_used: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_ended_at: Option<String>,
}

#[derive(Debug, Serialize)]
struct RoundExtra {
    round_id: i64,
    turn_id: i64,
    /// ok, failed, cancelled, or streaming (GOAT stopped meanwhile).
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    markup_channel: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<String>,
}

#[derive(Debug, Serialize)]
struct SummaryExtra {
    context_management: ContextManagement,
    summary_id: i64,
    /// Why it was written: window, overflow, asked.
    reason: &'static str,
    /// The last turn it covers: every turn of the session up to this one.
    through_turn_id: i64,
    /// Made inside that turn: its rounds up to this one are covered (the
    /// turn's request is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    through_round_id: Option<i64>,
    /// The summarising request's tokens (a system step has no metrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens: Option<u64>,
}

/// Harbor's convention for a step that changed what the model sees:
/// compaction, the turns before it replaced.
#[derive(Debug, Serialize)]
struct ContextManagement {
    r#type: &'static str,
    boundary: &'static str,
}

#[derive(Debug, Serialize)]
struct ToolCall {
    tool_call_id: String,
    function_name: String,
    arguments: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<ToolCallExtra>,
}

/// Arguments that were not a JSON object, as the model wrote them (the
/// `arguments` field is then empty).
#[derive(Debug, Serialize)]
struct ToolCallExtra {
    arguments_text: String,
}

#[derive(Debug, Serialize)]
struct Observation {
    results: Vec<ObservationResult>,
}

#[derive(Debug, Serialize)]
struct ObservationResult {
    source_call_id: String,
    /// What the model was shown; none for a call that never ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    extra: CallExtra,
}

#[derive(Debug, Serialize)]
struct CallExtra {
    /// ok, error, denied, pending, interrupted.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i64>,
}

#[derive(Debug, Serialize)]
struct Metrics {
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens: Option<u64>,
    /// Of the prompt tokens, those the engine said it served from its cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Serialize)]
struct FinalMetrics {
    /// Over the rounds that reported usage; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_completion_tokens: Option<u64>,
    /// Over the rounds whose engine said how many it served from its cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_cached_tokens: Option<u64>,
    total_steps: usize,
    extra: FinalExtra,
}

#[derive(Debug, Serialize)]
struct FinalExtra {
    /// Rounds whose engine reported no usage: not in the totals.
    rounds_without_usage: usize,
    /// The summarising requests' tokens, which no step's metrics hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_completion_tokens: Option<u64>,
}

/// Session `session_id` (a full id) as a trajectory, read from `store`.
pub(crate) fn trajectory(store: &Store, session_id: &str) -> Result<Trajectory, StoreError> {
    let session = store.session(session_id)?;
    let turns = store.turns(session_id)?;
    let summaries = store.summaries(session_id)?;
    Ok(from_records(&session, &turns, &summaries))
}

/// Writes `trajectory` as JSON (pretty, one trailing newline).
pub(crate) fn write(out: &mut impl Write, trajectory: &Trajectory) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, trajectory)?;
    writeln!(out)
}

/// The trajectory of what the store holds of one session: its turns in
/// order, each summary right after what it covers: the last round it
/// covers when it was made inside a turn (ADR-0083), else the last turn
/// (where `goat sessions show` puts it too).
fn from_records(session: &SessionInfo, turns: &[TurnRecord], summaries: &[Summary]) -> Trajectory {
    let mut steps = Vec::new();
    let mut usage = Usage::default();
    for turn in turns {
        steps.push(turn_step(turn));
        let rounds: Vec<i64> = turn.rounds.iter().map(|r| r.id).collect();
        // A summary whose round is not among the turn's (none should be)
        // still appears, after the turn.
        let after_turn = |s: &&Summary| {
            s.through_turn_id == turn.id && s.through_round_id.is_none_or(|r| !rounds.contains(&r))
        };
        for round in &turn.rounds {
            usage.add(round);
            steps.push(round_step(turn.id, round));
            for summary in summaries
                .iter()
                .filter(|s| s.through_turn_id == turn.id && s.through_round_id == Some(round.id))
            {
                steps.push(summary_step(summary));
            }
        }
        for summary in summaries.iter().filter(after_turn) {
            steps.push(summary_step(summary));
        }
    }
    for (n, step) in (1..).zip(&mut steps) {
        step.step_id = n;
    }
    let sum =
        |f: fn(&Summary) -> Option<u64>| summaries.iter().filter_map(f).reduce(u64::saturating_add);
    Trajectory {
        schema_version: SCHEMA_VERSION,
        session_id: session.id.clone(),
        agent: Agent {
            name: AGENT_NAME,
            version: env!("CARGO_PKG_VERSION"),
            model_name: session.model.clone(),
        },
        final_metrics: FinalMetrics {
            total_prompt_tokens: usage.prompt,
            total_completion_tokens: usage.completion,
            total_cached_tokens: usage.cached,
            total_steps: steps.len(),
            extra: FinalExtra {
                rounds_without_usage: usage.unreported,
                summary_prompt_tokens: sum(|s| s.prompt_tokens),
                summary_completion_tokens: sum(|s| s.completion_tokens),
            },
        },
        steps,
        notes: NOTES,
        extra: SessionExtra {
            workspace: session.workspace.clone(),
            engine_url: session.engine_url.clone(),
            created_at: iso8601(session.created_at),
        },
    }
}

/// Token totals over the rounds that reported them.
#[derive(Default)]
struct Usage {
    prompt: Option<u64>,
    completion: Option<u64>,
    cached: Option<u64>,
    unreported: usize,
}

impl Usage {
    fn add(&mut self, round: &RoundRecord) {
        let add = |total: &mut Option<u64>, n: Option<u64>| {
            if let Some(n) = n {
                *total = Some(total.unwrap_or(0).saturating_add(n));
            }
        };
        add(&mut self.prompt, round.prompt_tokens);
        add(&mut self.completion, round.completion_tokens);
        add(&mut self.cached, round.cached_tokens);
        if round.prompt_tokens.is_none() && round.completion_tokens.is_none() {
            self.unreported += 1;
        }
    }
}

/// What a withheld prompt is shown as: it was never kept.
const WITHHELD: &str =
    "[a user_prompt_submit hook withheld this prompt from the model; it is not kept]";

fn turn_step(turn: &TurnRecord) -> Step {
    Step {
        step_id: 0,
        timestamp: iso8601(turn.started_at),
        // A stop hook's words are GOAT's message to the model, not the
        // person's; a withheld prompt was never the model's to read.
        source: if turn.prompt_from_hook.is_some() {
            Source::System
        } else {
            Source::User
        },
        message: match &turn.withheld_by {
            Some(_) => WITHHELD.to_owned(),
            None => turn.prompt.clone(),
        },
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        llm_call_count: None,
        extra: StepExtra::Turn(TurnExtra {
            turn_id: turn.id,
            turn_status: turn.status.as_str(),
            turn_error: turn.error.clone(),
            recovery_used: turn.recovery_used,
            turn_ended_at: turn.ended_at.map(iso8601),
        }),
    }
}

fn round_step(turn_id: i64, round: &RoundRecord) -> Step {
    let calls = (!round.calls.is_empty()).then_some(&round.calls);
    let metrics =
        (round.prompt_tokens.is_some() || round.completion_tokens.is_some()).then_some(Metrics {
            prompt_tokens: round.prompt_tokens,
            completion_tokens: round.completion_tokens,
            cached_tokens: round.cached_tokens,
        });
    Step {
        step_id: 0,
        timestamp: iso8601(round.started_at),
        source: Source::Agent,
        message: round.content.clone(),
        reasoning_content: (!round.reasoning.is_empty()).then(|| round.reasoning.clone()),
        tool_calls: calls.map(|calls| calls.iter().map(tool_call).collect()),
        observation: calls.map(|calls| Observation {
            results: calls.iter().map(observation_result).collect(),
        }),
        metrics,
        // A round is one request to the engine, whatever came of it.
        llm_call_count: Some(1),
        extra: StepExtra::Round(RoundExtra {
            round_id: round.id,
            turn_id,
            status: round.status.as_str(),
            finish_reason: round.finish_reason.clone(),
            failure_kind: round.failure_kind.map(|k| k.as_str()),
            failure: round.failure.clone(),
            markup_channel: round.markup_channel.map(|c| c.as_str()),
            ended_at: round.ended_at.map(iso8601),
        }),
    }
}

/// A call as the model made it. ATIF's arguments are an object; arguments
/// that were not one (GOAT refused such a call as invalid) are kept as
/// written in `extra`.
fn tool_call(call: &CallRecord) -> ToolCall {
    let parsed = serde_json::from_str::<Value>(&call.call.arguments);
    let (arguments, extra) = match parsed {
        Ok(Value::Object(map)) => (map, None),
        _ => (
            serde_json::Map::new(),
            Some(ToolCallExtra {
                arguments_text: call.call.arguments.clone(),
            }),
        ),
    };
    ToolCall {
        tool_call_id: call.call.call_id.clone(),
        function_name: call.call.tool.clone(),
        arguments,
        extra,
    }
}

fn observation_result(call: &CallRecord) -> ObservationResult {
    ObservationResult {
        source_call_id: call.call.call_id.clone(),
        content: call.result.clone(),
        extra: CallExtra {
            status: call.status.as_str(),
            decision: call.decision.map(|d| d.as_str()),
            decision_reason: call.decision_reason.clone(),
            error_kind: call.error_kind.map(|k| k.as_str()),
            duration_ms: call.duration_ms,
            exit_code: call.exit_code,
        },
    }
}

fn summary_step(summary: &Summary) -> Step {
    Step {
        step_id: 0,
        timestamp: iso8601(summary.created_at),
        source: Source::System,
        message: summary.content.clone(),
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        llm_call_count: None,
        extra: StepExtra::Summary(SummaryExtra {
            context_management: ContextManagement {
                r#type: "compaction",
                boundary: "replace",
            },
            summary_id: summary.id,
            reason: summary.reason.as_str(),
            through_turn_id: summary.through_turn_id,
            through_round_id: summary.through_round_id,
            prompt_tokens: summary.prompt_tokens,
            completion_tokens: summary.completion_tokens,
        }),
    }
}

#[cfg(test)]
mod tests {
    use goat_store::{
        CallRecord, CallStatus, NewCall, RoundFailure, RoundRecord, RoundStatus, SessionInfo,
        TurnRecord, TurnStatus,
    };
    use serde_json::json;

    use super::from_records;

    fn round(id: i64, status: RoundStatus, calls: Vec<CallRecord>) -> RoundRecord {
        RoundRecord {
            id,
            status,
            content: String::new(),
            reasoning: String::new(),
            finish_reason: None,
            failure_kind: None,
            failure: None,
            markup_channel: None,
            prompt_tokens: None,
            completion_tokens: None,
            cached_tokens: None,
            started_at: 60,
            ended_at: None,
            calls,
        }
    }

    /// GOAT stopped mid-turn: a call never ran, and the next round was
    /// still streaming. Nothing is made up for either.
    #[test]
    fn what_never_finished_is_exported_as_recorded() {
        let pending = CallRecord {
            id: 1,
            call: NewCall {
                call_id: "c1".into(),
                tool: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
            },
            status: CallStatus::Interrupted,
            decision: None,
            decision_reason: None,
            result: None,
            error_kind: None,
            duration_ms: None,
            exit_code: None,
            started_at: None,
            ended_at: None,
        };
        let mut cancelled = round(2, RoundStatus::Cancelled, Vec::new());
        cancelled.failure_kind = Some(RoundFailure::Cancelled);
        let turn = TurnRecord {
            id: 7,
            prompt: "p".into(),
            status: TurnStatus::Failed,
            error: Some("interrupted".into()),
            recovery_used: false,
            started_at: 0,
            ended_at: None,
            rounds: vec![round(1, RoundStatus::Ok, vec![pending]), cancelled],
            withheld_by: None,
            prompt_from_hook: None,
        };
        let session = SessionInfo {
            id: "s".into(),
            workspace: "/w".into(),
            engine_url: "http://e".into(),
            model: "m".into(),
            created_at: 0,
            turns: 1,
        };
        let t = serde_json::to_value(from_records(&session, &[turn], &[]))
            .unwrap_or_else(|e| panic!("{e}"));
        let steps = t["steps"].as_array().cloned().unwrap_or_default();
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0]["timestamp"], "1970-01-01T00:00:00Z");
        assert_eq!(
            steps[0]["extra"],
            json!({"turn_id": 7, "turn_status": "failed", "turn_error": "interrupted",
                   "recovery_used": false})
        );
        assert_eq!(
            steps[1]["observation"]["results"][0],
            json!({"source_call_id": "c1", "extra": {"status": "interrupted"}})
        );
        assert_eq!(steps[1]["timestamp"], "1970-01-01T00:01:00Z");
        assert_eq!(steps[1].get("metrics"), None);
        assert_eq!(
            steps[2]["extra"],
            json!({"round_id": 2, "turn_id": 7, "status": "cancelled",
                   "failure_kind": "cancelled"})
        );
        assert_eq!(steps[2].get("tool_calls"), None);
        assert_eq!(steps[2].get("observation"), None);
        // No round reported usage: no totals, rather than totals of zero.
        assert_eq!(
            t["final_metrics"],
            json!({"total_steps": 3, "extra": {"rounds_without_usage": 2}})
        );
    }

    /// A summary made inside a turn (ADR-0083) stands after the round it
    /// covers up to, not after the whole turn.
    #[test]
    fn an_in_turn_summary_follows_its_round() {
        let turn = TurnRecord {
            id: 3,
            prompt: "p".into(),
            status: TurnStatus::Completed,
            error: None,
            recovery_used: false,
            started_at: 0,
            ended_at: None,
            rounds: vec![
                round(10, RoundStatus::Ok, Vec::new()),
                round(11, RoundStatus::Ok, Vec::new()),
                round(12, RoundStatus::Ok, Vec::new()),
            ],
            withheld_by: None,
            prompt_from_hook: None,
        };
        let summary = |id: i64, through_round_id: Option<i64>| goat_store::Summary {
            id,
            through_turn_id: 3,
            through_round_id,
            content: format!("summary {id}"),
            reason: goat_store::CompactReason::Window,
            prompt_tokens: None,
            completion_tokens: None,
            created_at: 0,
        };
        let session = SessionInfo {
            id: "s".into(),
            workspace: "/w".into(),
            engine_url: "http://e".into(),
            model: "m".into(),
            created_at: 0,
            turns: 1,
        };
        let t = serde_json::to_value(from_records(
            &session,
            &[turn],
            &[summary(1, Some(11)), summary(2, None)],
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let order: Vec<String> = t["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|s| {
                s["extra"]["round_id"].as_i64().map_or_else(
                    || {
                        s["extra"]["summary_id"]
                            .as_i64()
                            .map_or_else(|| "turn".to_owned(), |id| format!("summary {id}"))
                    },
                    |id| format!("round {id}"),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                "turn",
                "round 10",
                "round 11",
                "summary 1",
                "round 12",
                "summary 2"
            ]
        );
        assert_eq!(t["steps"][3]["extra"]["through_round_id"], 11);
        assert_eq!(t["steps"][5]["extra"].get("through_round_id"), None);
    }
}
