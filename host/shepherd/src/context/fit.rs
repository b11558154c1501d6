//! Fitting one request into the window, without the engine: the history
//! as messages, then the oldest tool results replaced by one-line stubs
//! (the call and the fact that it happened stay), the newest kept whole.
//! Pure, so it is tested as a table of sizes.

use goat_engine::{ChatRequest, Message, RequestToolCall, ToolSchema};
use goat_store::{CallStatus, HistoryEntry};

use super::estimate;

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

/// The history as messages; for each tool result, what its stub is.
fn messages(system: String, entries: Vec<HistoryEntry>) -> (Vec<Message>, Vec<Option<String>>) {
    let mut messages = vec![Message::System { content: system }];
    let mut stubs = vec![None];
    for entry in entries {
        let stub = match &entry {
            HistoryEntry::ToolResult {
                tool,
                status,
                content,
                ..
            } => Some(stub(tool, *status, content.len())),
            _ => None,
        };
        stubs.push(stub);
        messages.push(to_message(entry));
    }
    (messages, stubs)
}

/// Builds the request and elides the oldest results, never the newest,
/// until its estimate is within `budget` tokens.
pub(crate) fn fit(
    system: String,
    entries: Vec<HistoryEntry>,
    instruction: Option<Message>,
    tools: &[ToolSchema],
    model: &str,
    bytes_per_token: f64,
    budget: u64,
) -> Fitted {
    let (mut messages, mut stubs) = messages(system, entries);
    if let Some(m) = instruction {
        messages.push(m);
        stubs.push(None);
    }
    let mut request = ChatRequest {
        messages,
        tools: tools.to_vec(),
    };
    let mut bytes = request.body_bytes(model, true);
    let newest = stubs.iter().rposition(Option::is_some);
    for (i, stub) in stubs.iter_mut().enumerate() {
        if estimate(bytes, bytes_per_token) <= budget {
            break;
        }
        if Some(i) == newest {
            break;
        }
        let Some(stub) = stub.take() else { continue };
        if let Message::Tool { content, .. } = &mut request.messages[i]
            && stub.len() < content.len()
        {
            let before = request.messages[i].wire_bytes();
            if let Message::Tool { content, .. } = &mut request.messages[i] {
                *content = stub;
            }
            bytes = bytes - before + request.messages[i].wire_bytes();
        }
    }
    let tokens = estimate(bytes, bytes_per_token);
    Fitted {
        request,
        bytes,
        tokens,
        fits: tokens <= budget,
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

    fn turn(n: usize, result_bytes: usize) -> Vec<HistoryEntry> {
        let id = format!("c{n}");
        vec![
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
        ]
    }

    fn history(turns: usize) -> Vec<HistoryEntry> {
        (0..turns).flat_map(|n| turn(n, 20_000)).collect()
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

    #[test]
    fn under_the_budget_nothing_changes() {
        let f = fit("s".into(), history(3), None, &[], "m", 3.0, 1_000_000);
        assert!(f.fits);
        assert!(tool_contents(&f).iter().all(|c| c.len() == 20_000));
    }

    #[test]
    fn the_oldest_results_become_stubs_and_the_newest_stays_whole() {
        // Room for about two whole results.
        let f = fit("s".into(), history(5), None, &[], "m", 3.0, 16_000);
        assert!(f.fits, "{}", f.tokens);
        let contents = tool_contents(&f);
        assert_eq!(contents.len(), 5, "every call keeps its result message");
        assert_eq!(
            contents[0],
            "[result elided to keep the conversation within the context window: this read_file \
             call succeeded, 20000 bytes; call it again if you still need it]"
        );
        assert_eq!(contents[4].len(), 20_000, "the newest is whole");
        assert_eq!(
            f.bytes,
            f.request.body_bytes("m", true),
            "the running count is exact"
        );
    }

    #[test]
    fn when_stubs_are_not_enough_it_says_so_and_the_cut_is_the_last_resort() {
        let mut f = fit("s".into(), history(2), None, &[], "m", 3.0, 2_000);
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
