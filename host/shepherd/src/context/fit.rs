//! Fitting one request into the window, without the engine (ADR-0074,
//! with ADR-0083's hysteresis): the history as messages, results already
//! elided sent as their one-line stubs (the call and the fact that it
//! happened stay), and, only when the request is over the budget, one cut:
//! the oldest rounds' results become stubs until the request is down to
//! the low-water mark, the newest round always whole. Between cuts nothing
//! already sent changes, so each request extends the last one and an
//! engine's prefix cache prefills only what is new. Pure, so it is tested
//! as a table of sizes.

use goat_engine::{ChatRequest, Message, RequestToolCall, ToolSchema};
use goat_store::{CallStatus, HistoryEntry, HistoryTurn};

use super::{COMPACT_SHARE, LOW_WATER_SHARE, estimate};

/// A request fitted as far as eliding results goes.
#[derive(Debug)]
pub(crate) struct Fitted {
    pub(crate) request: ChatRequest,
    /// Its body's bytes (with the usage option, the larger body).
    pub(crate) bytes: usize,
    /// Its estimated tokens.
    pub(crate) tokens: u64,
    /// Whether `tokens` is within the budget.
    pub(crate) fits: bool,
    /// Whether the request was over the budget and cut (results elided
    /// down to the low-water mark): it rewrites what was sent before.
    pub(crate) cut: bool,
    /// Whether, cut, it is still over the compaction mark: eliding was not
    /// enough, and older turns and rounds should be summarised.
    pub(crate) compact: bool,
    /// The newest round in it, with its turn: what a summary asked as the
    /// continuation of this request covers.
    pub(crate) newest_round: Option<(i64, i64)>,
    /// The summary it carries (row id), set by the caller.
    pub(crate) summary_id: Option<i64>,
}

/// What an elided result says instead.
pub(crate) fn stub(tool: &str, status: CallStatus, bytes: usize) -> String {
    let outcome = match status {
        CallStatus::Ok => "succeeded",
        CallStatus::Error => "failed",
        CallStatus::Denied => "was denied",
        CallStatus::Pending | CallStatus::Interrupted => "was interrupted",
    };
    format!(
        "[result elided to keep the conversation within the context window: this {tool} call \
         {outcome}, {bytes} bytes; call it again if you still need it]"
    )
}

/// The history as messages, results of rounds up to `elided_through` as
/// stubs; for each message, its round and, for a result still whole, its
/// stub.
struct Laid {
    messages: Vec<Message>,
    rounds: Vec<Option<i64>>,
    stubs: Vec<Option<String>>,
}

fn lay(system: String, turns: &[HistoryTurn], elided_through: Option<i64>) -> Laid {
    let mut laid = Laid {
        messages: vec![Message::System { content: system }],
        rounds: vec![None],
        stubs: vec![None],
    };
    for turn in turns {
        for (i, entry) in turn.entries.iter().enumerate() {
            let round = turn.round_of(i);
            let mut stub = match entry {
                HistoryEntry::ToolResult {
                    tool,
                    status,
                    content,
                    ..
                } => Some(self::stub(tool, *status, content.len()))
                    .filter(|s| s.len() < content.len()),
                _ => None,
            };
            let mut message = to_message(entry.clone());
            if round.is_some()
                && round <= elided_through
                && let (Some(s), Message::Tool { content, .. }) = (stub.take(), &mut message)
            {
                *content = s;
            }
            laid.messages.push(message);
            laid.rounds.push(round);
            laid.stubs.push(stub);
        }
    }
    laid
}

/// Builds the request from the history after the summary, with the
/// results of rounds up to `elided_through` as stubs. Within `budget`
/// tokens it is sent as it is: it extends the last request. Over it, the
/// request is cut once: the oldest rounds' results become stubs, never
/// the newest round's, until it takes at most [`LOW_WATER_SHARE`] of the
/// budget, and `elided_through` moves on past them for every later
/// request.
#[expect(clippy::too_many_arguments, reason = "one pure step, its inputs named")]
pub(crate) fn fit(
    system: String,
    turns: &[HistoryTurn],
    instruction: Option<Message>,
    tools: &[ToolSchema],
    model: &str,
    bytes_per_token: f64,
    budget: u64,
    elided_through: &mut Option<i64>,
) -> Fitted {
    let Laid {
        mut messages,
        rounds,
        mut stubs,
    } = lay(system, turns, *elided_through);
    let newest_round = turns
        .iter()
        .rev()
        .find_map(|t| t.rounds.last().map(|(r, _)| (t.turn_id, *r)));
    if let Some(m) = instruction {
        messages.push(m);
        stubs.push(None);
    }
    let mut request = ChatRequest {
        messages,
        tools: tools.to_vec(),
    };
    let mut bytes = request.body_bytes(model, true);
    let cut = estimate(bytes, bytes_per_token) > budget;
    if cut {
        let low = (budget as f64 * LOW_WATER_SHARE) as u64;
        // The newest round with a result keeps its results whole.
        let newest = rounds
            .iter()
            .zip(&request.messages)
            .rev()
            .find_map(|(r, m)| matches!(m, Message::Tool { .. }).then_some(*r))
            .flatten();
        let mut i = 0;
        while i < rounds.len() && estimate(bytes, bytes_per_token) > low {
            let Some(round) = rounds[i] else {
                i += 1;
                continue;
            };
            if Some(round) >= newest {
                break;
            }
            // Every result of this round, at once: the watermark is a round.
            while i < rounds.len() && rounds[i] == Some(round) {
                if let Some(stub) = stubs[i].take() {
                    let before = request.messages[i].wire_bytes();
                    if let Message::Tool { content, .. } = &mut request.messages[i] {
                        *content = stub;
                    }
                    bytes = bytes - before + request.messages[i].wire_bytes();
                }
                i += 1;
            }
            *elided_through = (*elided_through).max(Some(round));
        }
    }
    let tokens = estimate(bytes, bytes_per_token);
    Fitted {
        request,
        bytes,
        tokens,
        fits: tokens <= budget,
        cut,
        compact: cut && tokens as f64 > budget as f64 * COMPACT_SHARE,
        newest_round,
        summary_id: None,
    }
}

/// The last resort when even the newest result cannot fit beside the
/// rest: it is cut to what fits, and says so. Whether it now fits.
pub(crate) fn cut_newest(
    fitted: &mut Fitted,
    model: &str,
    bytes_per_token: f64,
    budget: u64,
) -> bool {
    let Some(i) = fitted
        .request
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::Tool { .. }))
    else {
        return fitted.fits;
    };
    let over_tokens = fitted.tokens.saturating_sub(budget);
    // Bytes to drop, from the tokens over: generous, since a JSON string
    // escapes some bytes to two or six.
    let over_bytes = (over_tokens as f64 * bytes_per_token * 2.0).ceil() as usize + 256;
    if let Message::Tool { content, .. } = &mut fitted.request.messages[i] {
        let total = content.len();
        let keep = total.saturating_sub(over_bytes);
        let mut cut = keep;
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        content.truncate(cut);
        content.push_str(&format!(
            "\n[cut to fit the context window: {cut} of {total} bytes shown; read less at a time]"
        ));
    }
    fitted.bytes = fitted.request.body_bytes(model, true);
    fitted.tokens = estimate(fitted.bytes, bytes_per_token);
    fitted.fits = fitted.tokens <= budget;
    fitted.fits
}

pub(crate) fn to_message(entry: HistoryEntry) -> Message {
    match entry {
        HistoryEntry::User(content) => Message::User { content },
        HistoryEntry::Assistant { content, calls } => Message::Assistant {
            content: (!content.is_empty()).then_some(content),
            tool_calls: calls
                .into_iter()
                .map(|c| RequestToolCall {
                    id: c.call_id,
                    name: c.tool,
                    // Chat templates parse the arguments of earlier calls;
                    // one the model botched is sent back as `{}` (its result
                    // already says what was wrong).
                    arguments: goat_engine::parse_arguments(&c.arguments)
                        .unwrap_or_else(|_| serde_json::json!({})),
                })
                .collect(),
        },
        HistoryEntry::ToolResult {
            call_id, content, ..
        } => Message::Tool {
            tool_call_id: call_id,
            content,
        },
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use goat_store::NewCall;

    use super::*;

    /// Turn `n` of the history: a request, a round that reads a file of
    /// `result_bytes`, a round that answers. Round ids are `10n + 1` and
    /// `10n + 2`.
    fn turn(n: usize, result_bytes: usize) -> HistoryTurn {
        let id = format!("c{n}");
        let round = 10 * n as i64;
        HistoryTurn {
            turn_id: n as i64,
            entries: vec![
                HistoryEntry::User(format!("read file {n}")),
                HistoryEntry::Assistant {
                    content: String::new(),
                    calls: vec![NewCall {
                        call_id: id.clone(),
                        tool: "read_file".into(),
                        arguments: r#"{"path":"a.txt"}"#.into(),
                    }],
                },
                HistoryEntry::ToolResult {
                    call_id: id,
                    tool: "read_file".into(),
                    status: CallStatus::Ok,
                    content: "x".repeat(result_bytes),
                },
                HistoryEntry::Assistant {
                    content: "done".into(),
                    calls: vec![],
                },
            ],
            rounds: vec![(round + 1, 1), (round + 2, 3)],
        }
    }

    fn history(turns: usize) -> Vec<HistoryTurn> {
        (0..turns).map(|n| turn(n, 20_000)).collect()
    }

    fn tool_contents(f: &Fitted) -> Vec<&str> {
        f.request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect()
    }

    fn fit_at(turns: &[HistoryTurn], budget: u64, elided: &mut Option<i64>) -> Fitted {
        fit("s".into(), turns, None, &[], "m", 3.0, budget, elided)
    }

    #[test]
    fn under_the_budget_nothing_changes() {
        let mut elided = None;
        let f = fit_at(&history(3), 1_000_000, &mut elided);
        assert!(f.fits && !f.cut && !f.compact);
        assert!(tool_contents(&f).iter().all(|c| c.len() == 20_000));
        assert_eq!(elided, None);
        assert_eq!(f.newest_round, Some((2, 22)));
    }

    #[test]
    fn over_the_budget_the_oldest_become_stubs_down_to_the_low_water_mark() {
        // Room for about two whole results; the low-water mark is less
        // than one, so only the newest stays whole.
        let mut elided = None;
        let f = fit_at(&history(5), 16_000, &mut elided);
        assert!(f.fits && f.cut, "{}", f.tokens);
        let contents = tool_contents(&f);
        assert_eq!(contents.len(), 5, "every call keeps its result message");
        assert_eq!(
            contents[0],
            "[result elided to keep the conversation within the context window: this read_file \
             call succeeded, 20000 bytes; call it again if you still need it]"
        );
        assert_eq!(
            contents[3].len(),
            contents[0].len(),
            "cut well below the budget"
        );
        assert_eq!(contents[4].len(), 20_000, "the newest is whole");
        assert_eq!(elided, Some(32), "the watermark is the last round elided");
        assert_eq!(
            f.bytes,
            f.request.body_bytes("m", true),
            "the running count is exact"
        );
    }

    #[test]
    fn between_cuts_each_request_extends_the_last() {
        // The budget holds three whole results; a cut leaves one.
        let budget = 23_000;
        let mut elided = None;
        let mut turns = history(1);
        let mut sent: Vec<ChatRequest> = Vec::new();
        let mut cuts = 0;
        for n in 1..12 {
            turns.push(turn(n, 20_000));
            let f = fit_at(&turns, budget, &mut elided);
            assert!(f.fits, "turn {n}");
            if let Some(last) = sent.last() {
                let extends = f.request.messages.starts_with(&last.messages);
                assert_eq!(extends, !f.cut, "turn {n}: only a cut rewrites");
            }
            cuts += usize::from(f.cut);
            sent.push(f.request);
        }
        assert!((3..=5).contains(&cuts), "{cuts} cuts in 11 requests");
    }

    #[test]
    fn a_cut_that_eliding_cannot_bring_to_half_asks_for_compaction() {
        // Forty small rounds: their calls and stubs alone outgrow half.
        let mut elided = None;
        let turns: Vec<HistoryTurn> = (0..40).map(|n| turn(n, 600)).collect();
        let f = fit_at(&turns, 4_000, &mut elided);
        assert!(f.cut && f.compact, "{}", f.tokens);
    }

    #[test]
    fn results_already_elided_stay_stubs_in_every_later_request() {
        let mut elided = Some(21);
        let f = fit_at(&history(4), 1_000_000, &mut elided);
        assert!(!f.cut);
        let contents = tool_contents(&f);
        assert!(contents[0].starts_with("[result elided") && contents[2].starts_with("[result"));
        assert_eq!(contents[3].len(), 20_000);
    }

    #[test]
    fn when_stubs_are_not_enough_it_says_so_and_the_cut_is_the_last_resort() {
        let mut elided = None;
        let mut f = fit_at(&history(2), 2_000, &mut elided);
        assert!(!f.fits);
        assert_eq!(tool_contents(&f)[1].len(), 20_000);
        assert!(cut_newest(&mut f, "m", 3.0, 2_000));
        assert!(tool_contents(&f)[1].contains("[cut to fit the context window:"));
        assert!(f.tokens <= 2_000);
    }

    #[test]
    fn an_interrupted_or_denied_call_says_so_in_its_stub() {
        assert!(stub("write_file", CallStatus::Denied, 10).contains("write_file call was denied"));
        assert!(stub("x", CallStatus::Pending, 1).contains("was interrupted"));
        let _ = history(1).first().unwrap();
    }
}
