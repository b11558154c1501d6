//! A hook's answer, read with Claude Code's contract, failing closed where
//! Claude Code fails open.
//!
//! Exit 2 blocks, with stderr as the reason. Exit 0 with nothing on stdout
//! has no opinion. Exit 0 with a JSON object answers: `hookSpecificOutput.
//! permissionDecision` (`allow`, `deny`, `ask`, `defer`) with its reason,
//! the older top-level `decision` (`approve`, `block`) with `reason`, and
//! `continue: false` with `stopReason`. Where Claude Code lets the call
//! through (any other exit code, a timeout, stdout that is not its JSON),
//! GOAT reads [`Answer::Failed`], which denies.

use goat_command::Exit;
use serde_json::Value;

/// The longest reason kept from a hook, in characters.
const MAX_REASON_CHARS: usize = 2000;

/// What a hook said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Nothing: the call goes on as the rules decided.
    NoOpinion,
    /// Allow: recorded, and changes nothing (a hook can only narrow).
    Allow(String),
    /// Ask the person (denied where no one can be asked).
    Ask(String),
    /// Deny, with the hook's reason.
    Deny(String),
    /// Stop (Claude Code's `continue: false`), with its `stopReason`: a
    /// deny at a call, and the turn's last word at `stop` (never a reason
    /// to send the model back to work).
    Halt(String),
    /// It did not answer as a hook must: denies, with what went wrong.
    Failed(String),
}

impl Answer {
    /// The word the record uses.
    pub fn verdict(&self) -> &'static str {
        match self {
            Self::NoOpinion => "none",
            Self::Allow(_) => "allow",
            Self::Ask(_) => "ask",
            // Recorded as a deny: the store's verdicts are Claude Code's.
            Self::Deny(_) | Self::Halt(_) => "deny",
            Self::Failed(_) => "failed",
        }
    }

    /// The reason given, if any.
    pub fn reason(&self) -> &str {
        match self {
            Self::NoOpinion => "",
            Self::Allow(r) | Self::Ask(r) | Self::Deny(r) | Self::Halt(r) | Self::Failed(r) => r,
        }
    }
}

/// Reads a hook's answer from how it ended, its stdout (and whether that
/// was cut at its cap) and its stderr.
pub fn read_answer(exit: Exit, timeout_secs: u64, stdout: (&str, bool), stderr: &str) -> Answer {
    let stderr = short(stderr.trim());
    match exit {
        Exit::TimedOut => Answer::Failed(format!("it did not answer within {timeout_secs} s")),
        Exit::Interrupted => Answer::Failed("it was stopped with the turn".to_owned()),
        Exit::Signal(signal) => Answer::Failed(format!("it was killed by signal {signal}")),
        Exit::Code(2) if stderr.is_empty() => {
            Answer::Deny("it exited 2 (block) and gave no reason".to_owned())
        }
        Exit::Code(2) => Answer::Deny(stderr),
        Exit::Code(0) => read_json(stdout),
        Exit::Code(code) => Answer::Failed(if stderr.is_empty() {
            format!("it exited {code}; a hook answers with exit 0 or 2")
        } else {
            format!("it exited {code} ({stderr}); a hook answers with exit 0 or 2")
        }),
        _ => Answer::Failed("it ended in a way GOAT does not know".to_owned()),
    }
}

fn read_json((stdout, cut): (&str, bool)) -> Answer {
    if cut {
        return Answer::Failed(format!(
            "it printed more than {} bytes on stdout, where a hook's answer is a small JSON object",
            goat_command::limits::STDOUT_APART_BYTES
        ));
    }
    let text = stdout.trim();
    if text.is_empty() {
        return Answer::NoOpinion;
    }
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(text) else {
        return Answer::Failed(format!(
            "it exited 0 and printed something that is not a JSON object: {}",
            short(text)
        ));
    };
    // Wrong types are nonsense, and nonsense denies.
    if let Some(wrong) = ["continue", "suppressOutput"]
        .into_iter()
        .find(|k| answer.get(*k).is_some_and(|v| !v.is_boolean()))
    {
        return Answer::Failed(format!("its {wrong} is not true or false"));
    }
    if answer
        .get("hookSpecificOutput")
        .is_some_and(|v| !v.is_object() && !v.is_null())
    {
        return Answer::Failed("its hookSpecificOutput is not an object".to_owned());
    }
    if answer.get("continue") == Some(&Value::Bool(false)) {
        let why = text_of(answer.get("stopReason"));
        return Answer::Halt(if why.is_empty() {
            "it answered continue: false".to_owned()
        } else {
            why
        });
    }
    if answer
        .get("hookSpecificOutput")
        .and_then(|o| o.get("updatedInput"))
        .is_some()
    {
        // Running the call as it was asked would not be what the hook
        // wanted; running it rewritten would need the schema, the rules
        // and the fence again (ADR-0098).
        return Answer::Failed(
            "it answered with updatedInput, which GOAT does not take: the call was not run"
                .to_owned(),
        );
    }
    let specific = answer.get("hookSpecificOutput");
    let both = specific.and_then(|o| o.get("permissionDecision")).is_some()
        && answer.get("decision").is_some_and(|d| !d.is_null());
    if both {
        return Answer::Failed(
            "it answered both permissionDecision and decision; GOAT does not guess which it \
             meant"
                .to_owned(),
        );
    }
    if let Some(decision) = specific.and_then(|o| o.get("permissionDecision")) {
        let reason = text_of(specific.and_then(|o| o.get("permissionDecisionReason")));
        return match decision.as_str() {
            Some("deny") => Answer::Deny(or_default(reason, "it answered deny")),
            Some("ask") => Answer::Ask(reason),
            Some("allow") => Answer::Allow(reason),
            Some("defer") => Answer::NoOpinion,
            _ => Answer::Failed(format!(
                "its permissionDecision {} is none of allow, deny, ask, defer",
                short(&decision.to_string())
            )),
        };
    }
    match answer.get("decision") {
        None | Some(Value::Null) => Answer::NoOpinion,
        Some(decision) => {
            let reason = text_of(answer.get("reason"));
            match decision.as_str() {
                Some("block") => Answer::Deny(or_default(reason, "it answered block")),
                Some("approve") => Answer::Allow(reason),
                _ => Answer::Failed(format!(
                    "its decision {} is neither approve nor block",
                    short(&decision.to_string())
                )),
            }
        }
    }
}

fn text_of(value: Option<&Value>) -> String {
    short(value.and_then(Value::as_str).unwrap_or("").trim())
}

fn or_default(reason: String, default: &str) -> String {
    if reason.is_empty() {
        default.to_owned()
    } else {
        reason
    }
}

/// At most [`MAX_REASON_CHARS`] characters of `text`, said when cut.
pub(crate) fn short(text: &str) -> String {
    match text.char_indices().nth(MAX_REASON_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}... (cut)", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(exit: Exit, stdout: &str, stderr: &str) -> Answer {
        read_answer(exit, 30, (stdout, false), stderr)
    }

    #[test]
    fn claude_codes_answers_are_read_and_everything_else_fails_closed() {
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Destructive command blocked by hook"}}"#;
        for (exit, stdout, stderr, want) in [
            (
                Exit::Code(0),
                deny,
                "",
                Answer::Deny("Destructive command blocked by hook".to_owned()),
            ),
            (Exit::Code(0), "", "", Answer::NoOpinion),
            (Exit::Code(0), " \n", "noise", Answer::NoOpinion),
            (
                Exit::Code(2),
                "{}",
                "BLOCKED: rm\n",
                Answer::Deny("BLOCKED: rm".to_owned()),
            ),
            (
                Exit::Code(0),
                r#"{"decision":"approve","reason":"fine"}"#,
                "",
                Answer::Allow("fine".to_owned()),
            ),
            (
                Exit::Code(0),
                r#"{"decision":"block","reason":"no"}"#,
                "",
                Answer::Deny("no".to_owned()),
            ),
            (
                Exit::Code(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#,
                "",
                Answer::Ask("sure?".to_owned()),
            ),
            (
                Exit::Code(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"defer"}}"#,
                "",
                Answer::NoOpinion,
            ),
            (
                Exit::Code(0),
                r#"{"continue":false,"stopReason":"halt"}"#,
                "",
                Answer::Halt("halt".to_owned()),
            ),
            (
                Exit::Code(0),
                r#"{"systemMessage":"hi"}"#,
                "",
                Answer::NoOpinion,
            ),
        ] {
            assert_eq!(read(exit, stdout, stderr), want, "{stdout} {stderr}");
        }
        for (exit, stdout, stderr, says) in [
            (Exit::Code(1), "", "bad json", "exited 1 (bad json)"),
            (
                Exit::Code(0),
                "ok, logged",
                "",
                "not a JSON object: ok, logged",
            ),
            (Exit::Code(0), "[1]", "", "not a JSON object"),
            (
                Exit::Code(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"yes"}}"#,
                "",
                "none of allow",
            ),
            (
                Exit::Code(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{}}}"#,
                "",
                "updatedInput",
            ),
            (Exit::TimedOut, "", "", "within 30 s"),
            (Exit::Signal(9), "", "", "signal 9"),
            (
                Exit::Code(0),
                r#"{"continue":"false"}"#,
                "",
                "not true or false",
            ),
            (
                Exit::Code(0),
                r#"{"hookSpecificOutput":"deny"}"#,
                "",
                "not an object",
            ),
            (
                Exit::Code(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"allow"},"decision":"block"}"#,
                "",
                "both",
            ),
        ] {
            match read(exit, stdout, stderr) {
                Answer::Failed(why) => assert!(why.contains(says), "{why}"),
                other => panic!("{stdout:?} {stderr:?} read as {other:?}"),
            }
        }
        assert!(matches!(
            read_answer(Exit::Code(0), 30, ("{}", true), ""),
            Answer::Failed(why) if why.contains("more than")
        ));
    }
}
