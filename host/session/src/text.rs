//! Text for people: short one-line summaries of what the model and the
//! tools said, and dates.
//!
//! Everything shown here comes from the model, a tool or a workspace file,
//! so control characters are escaped before they reach a terminal: an
//! escape sequence in a file the model read must not be able to rewrite
//! what the person sees. So is [`MARK`], the character that starts GOAT's
//! own lines, and what could pass for it: text from outside can print
//! `goat: edit_file wants to write 'notes.txt'; allow it?`, but never at
//! the start of a line that begins with the mark.

use serde_json::Value;

/// What every line GOAT itself writes for a person starts with: a left
/// half block, drawn with or without colour (`NO_COLOR` included). Text
/// from outside never shows it: [`escape_controls`] and
/// [`escape_for_terminal`] write it, and every character that could pass
/// for it ([`is_reserved`]), as an escape.
///
/// # Security
///
/// Colour and the order of lines are not enough to tell GOAT's lines from
/// the model's: the answer can print GOAT's exact words just above a real
/// question. The mark is what model text cannot produce.
pub const MARK: char = '\u{258C}';

/// The start of a line from GOAT: [`MARK`], then `goat: `.
pub const GOAT_LINE: &str = "\u{258C} goat: ";

/// The start of a further line of something GOAT says in more than one
/// (the approval question's workspace, preview and answers): [`MARK`],
/// aligned under the text after [`GOAT_LINE`].
pub const GOAT_MORE: &str = "\u{258C}       ";

/// Longest argument value shown in a call summary, in characters.
const ARG_VALUE_CHARS: usize = 40;

/// Longest argument summary, in characters.
const ARGS_CHARS: usize = 160;

/// Whether `c` can change how the terminal shows what follows: control
/// characters, and the Unicode bidirectional overrides and isolates, which
/// can make a line read differently from what it is; and the reserved
/// [`MARK`] with its lookalikes, which would make a line read as GOAT's.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        || is_invisible(c)
        || is_reserved(c)
}

/// Characters that show as nothing and can carry text a person never
/// sees (an instruction spelt in Unicode tag characters, ADR-0086): the
/// soft hyphen, zero-width spaces and joiners, the direction marks, line
/// and paragraph separators, word joiners and invisible operators, the
/// byte-order mark, interlinear annotations, and the tag characters.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{2029}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// [`MARK`] and what a person could take for it: the block elements
/// (U+2580 to U+259F: half, quarter and eighth blocks, shades), the black
/// vertical rectangle and the heavy vertical bars.
pub fn is_reserved(c: char) -> bool {
    c == MARK
        || matches!(
            c,
            '\u{2580}'..='\u{259F}' | '\u{25AE}' | '\u{2759}' | '\u{275A}'
        )
}

/// Every control character escaped (`\n`, `\u{1b}`), so the text stays on
/// one line and cannot drive the terminal; bidirectional overrides too.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Control characters escaped except newlines and tabs, for the model's
/// answer streamed to a terminal: it keeps its layout but cannot move the
/// cursor, change colours or overwrite earlier lines (`\r` included).
pub fn escape_for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) && c != '\n' && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// An error and its causes as one text, `a: b: c`, leaving out each
/// cause the text before it already says: an error that shows its source
/// in its own message (thiserror's `#[error("{0}")]` over a `#[from]`)
/// would otherwise print it twice. Not escaped; the caller escapes it for
/// where it goes.
pub fn error_chain<'a>(
    chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> String {
    let mut out = String::new();
    for cause in chain {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// A failed turn's error, escaped, on one line: what `goat run` and `goat
/// chat` print once for it. The engine's own words are in it, and they
/// must not drive the terminal.
pub fn turn_failure(error: goat_shepherd::TurnError) -> String {
    match &error {
        goat_shepherd::TurnError::Engine(e) => escape_controls(&engine_failure(e)),
        _ => escape_controls(&error_chain(anyhow::Error::new(error).chain())),
    }
}

/// An engine failure as a person reads it: the error, and for a timeout
/// the setting that sets it. Not escaped.
pub fn engine_failure(error: &goat_engine::EngineError) -> String {
    let said = error_chain([error as &(dyn std::error::Error + 'static)]);
    if let goat_engine::EngineError::Length { partial } = error {
        let after = partial
            .usage
            .map(|u| format!(" after {}", count(u.completion_tokens as usize, "token")))
            .unwrap_or_default();
        return format!(
            "{said}{after}. If the answer needs more, raise max_output_tokens (the config \
             file, GOAT_MAX_OUTPUT_TOKENS or --max-output-tokens; default {}); if the model \
             was repeating itself, try sampling.repeat_penalty or a lower temperature \
             (docs/engines.md), or a larger model",
            goat_shepherd::DEFAULT_MAX_OUTPUT_TOKENS
        );
    }
    match crate::config::timeout_setting(error) {
        Some(def) => format!(
            "{said}; that limit is {} in the config file or {} (seconds): raise it if the \
             engine is only slow",
            def.key, def.env
        ),
        None => said,
    }
}

/// What GOAT says when the engine is not showing the model the tools,
/// at the first turn of a session and in `goat probe`: how it knows, and
/// what to do.
///
/// Direct evidence (llama-server's own `/props` saying its template has no
/// place for tools) is stated as a fact. A prompt count smaller than the
/// tool descriptions is indirect: an engine or gateway that leaves cached
/// tokens out of its count, or counts loosely, reports one while showing
/// the tools, so it is worded as a possibility, with how to check.
pub fn tools_not_shown(why: goat_shepherd::ToolsNotShown) -> String {
    const FIX: &str = "start llama-server with --jinja and a chat template that renders tools \
                       (--chat-template-file FILE); see docs/engines.md";
    match why {
        goat_shepherd::ToolsNotShown::TemplateCaps => format!(
            "warning: the engine is not showing the tools to the model: its chat template has \
             no place for tools (llama-server /props: chat_template_caps.supports_tools is \
             false), so the model can only answer in text and any action it describes did not \
             happen. To fix it, {FIX}"
        ),
        goat_shepherd::ToolsNotShown::PromptSize {
            prompt_tokens,
            tools_at_least,
        } => format!(
            "warning: the engine may not be showing the tools to the model: the engine counted \
             {prompt_tokens} prompt tokens, fewer than the tool descriptions alone take (at \
             least {tools_at_least}). An engine or gateway that leaves cached tokens out of its \
             count does this too, with the tools shown. To check, run goat probe: it offers the \
             tools and says whether the model's answers call them. If they never do, {FIX}"
        ),
    }
}

/// What GOAT says, once in a session, when the engine did not say its
/// context window and the person set none.
pub fn window_not_said(assumed: u64) -> String {
    format!(
        "the engine did not say its context window (asked: llama-server /props, /v1/models, \
         LM Studio /api/v0/models, Ollama /api/show); GOAT assumes {assumed} tokens. Set \
         context_tokens (or --context-tokens) to the window the engine serves"
    )
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The first line of `text` that has something on it, trimmed, tabs as
/// spaces, escaped and cut to `max` characters.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    truncate(&escape_controls(&line.replace('\t', " ")), max)
}

/// `text` on one line (runs of whitespace become one space), escaped and
/// cut to `max` characters.
pub fn snippet(text: &str, max: usize) -> String {
    let flat: Vec<&str> = text.split_whitespace().collect();
    truncate(&escape_controls(&flat.join(" ")), max)
}

/// `tool(key="value", n=3)`: a call as a person reads it, each value and
/// the whole cut short. Arguments that are not a JSON object are shown raw.
pub fn call_summary(tool: &str, raw_arguments: &str) -> String {
    let args = match serde_json::from_str::<InOrder>(raw_arguments) {
        Ok(InOrder(fields)) => fields
            .iter()
            .map(|(key, value)| {
                let shown = match value {
                    // Cut before quoting, so the quotes survive the cut.
                    Value::String(s) => Value::from(truncate(s, ARG_VALUE_CHARS)).to_string(),
                    other => truncate(&other.to_string(), ARG_VALUE_CHARS),
                };
                format!("{key}={shown}")
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => raw_arguments.trim().to_owned(),
    };
    format!(
        "{}({})",
        escape_controls(tool),
        truncate(&escape_controls(&args), ARGS_CHARS)
    )
}

/// A JSON object's fields in the order the model wrote them (`Value`
/// sorts them), so `path` still comes before `content`.
struct InOrder(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for InOrder {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = InOrder;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<InOrder, A::Error> {
                let mut fields = Vec::new();
                while let Some(field) = map.next_entry::<String, Value>()? {
                    fields.push(field);
                }
                Ok(InOrder(fields))
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// Unix seconds as `2024-01-01 00:00:00 UTC`.
pub fn utc(unix_seconds: i64) -> String {
    let (year, month, day, time) = civil(unix_seconds);
    format!("{year:04}-{month:02}-{day:02} {time} UTC")
}

/// Unix seconds as ISO 8601 (RFC 3339) in UTC, `2024-01-01T00:00:00Z`: the
/// form other programs parse (ATIF's step timestamps).
pub fn iso8601(unix_seconds: i64) -> String {
    let (year, month, day, time) = civil(unix_seconds);
    format!("{year:04}-{month:02}-{day:02}T{time}Z")
}

/// The UTC date of `unix_seconds`, and its time of day as `HH:MM:SS`.
fn civil(unix_seconds: i64) -> (i64, i64, i64, String) {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days: proleptic Gregorian, any year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let time = format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    );
    (year, month, day, time)
}

/// `1 line`, `3 lines`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 38: llama-server's own word is a fact; a small prompt count
    /// is a possibility, with how to check.
    #[test]
    fn tools_not_shown_states_only_direct_evidence_as_fact() {
        let fact = tools_not_shown(goat_shepherd::ToolsNotShown::TemplateCaps);
        assert!(fact.starts_with("warning: the engine is not showing the tools to the model: "));
        assert!(fact.contains("supports_tools is false") && fact.contains("--chat-template-file"));
        let sign = tools_not_shown(goat_shepherd::ToolsNotShown::PromptSize {
            prompt_tokens: 53,
            tools_at_least: 900,
        });
        assert!(
            sign.starts_with("warning: the engine may not be showing the tools to the model: ")
        );
        assert!(!sign.contains("is not showing"), "{sign}");
        assert!(
            sign.contains("counted 53 prompt tokens")
                && sign.contains("cached tokens")
                && sign.contains("run goat probe"),
            "{sign}"
        );
    }

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_704_067_199), "2023-12-31 23:59:59 UTC");
        assert_eq!(utc(-1), "1969-12-31 23:59:59 UTC");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_704_067_199), "2023-12-31T23:59:59Z");
    }

    #[test]
    fn call_summaries_are_short_and_inert() {
        assert_eq!(
            call_summary("write_file", r#"{"path":"a.txt","content":"hi\n"}"#),
            r#"write_file(path="a.txt", content="hi\n")"#
        );
        let long = format!(r#"{{"content":"{}"}}"#, "x".repeat(100));
        assert_eq!(
            call_summary("write_file", &long),
            format!(r#"write_file(content="{}…")"#, "x".repeat(40))
        );
        assert_eq!(
            call_summary("t", "not json\u{1b}[2J"),
            "t(not json\\u{1b}[2J)"
        );
        assert_eq!(
            call_summary("t", "{\"p\":\"\u{9b}31m\"}"),
            "t(p=\"\\u{9b}31m\")"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("boom")]
        struct Inner;
        #[derive(Debug, thiserror::Error)]
        #[error("{0}")]
        struct Echo(#[from] Inner);
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] Inner);
        let echo = anyhow::Error::new(Echo(Inner)).context("the turn failed");
        assert_eq!(error_chain(echo.chain()), "the turn failed: boom");
        assert_eq!(
            error_chain(anyhow::Error::new(Outer(Inner)).chain()),
            "outer: boom"
        );
    }

    #[test]
    fn lines_are_cut_and_escaped() {
        assert_eq!(first_line("one\ntwo", 10), "one");
        assert_eq!(first_line("\n     1\talpha\n", 10), "1 alpha");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("\u{1b}[31mred", 20), "\\u{1b}[31mred");
        assert_eq!(snippet("a\n\n b\tc", 20), "a b c");
        assert_eq!(escape_for_terminal("a\tb\nc\rd\u{7}"), "a\tb\nc\\rd\\u{7}");
        // A right-to-left override would show `exe.txt` as `txt.exe`.
        assert_eq!(escape_controls("a\u{202E}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(escape_for_terminal("x\u{2066}y\n"), "x\\u{2066}y\n");
    }
}
