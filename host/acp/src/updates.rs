//! The session core's events as `session/update` notifications.
//!
//! Answer and reasoning deltas become agent message and thought chunks; a
//! call becomes a `tool_call` when it reaches the router (pending, with its
//! kind, the workspace paths it names, and for an edit the whole file
//! before and after) and a `tool_call_update` when it finished (completed
//! or failed, with what the model was shown and a command's exit code).
//! The rest of the protocol (round, usage, compaction) has no ACP v1 form
//! and is not sent; the store keeps it.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use goat_session::protocol::{CallStatus, ToolCallCompleted};
use goat_session::{Event, EventKind};
use serde_json::{Value, json};

/// Which call is which: the `toolCallId` of each.
#[derive(Debug, Default)]
pub struct Calls {
    turn: u64,
    call: u32,
}

impl Calls {
    /// The id of the call in progress (or the last one).
    pub fn current_id(&self) -> String {
        call_id(self.turn, self.call)
    }
}

/// A call's `toolCallId`: unique in the session, the same when the session
/// is loaded again (turn and call number as the store counts them).
pub fn call_id(turn: u64, call: u32) -> String {
    format!("goat-{turn}-{call}")
}

/// The ACP kind of a GOAT tool.
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "list_directory" => ToolKind::Read,
        "search_files" | "find_files" => ToolKind::Search,
        "write_file" | "edit_file" => ToolKind::Edit,
        "delete_file" => ToolKind::Delete,
        "move_file" => ToolKind::Move,
        "run_command" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// The workspace paths a built-in tool's arguments name, absolute.
fn locations(workspace: &Path, args: &Value) -> Vec<ToolCallLocation> {
    ["path", "from", "to"]
        .iter()
        .filter_map(|key| args.get(key).and_then(Value::as_str))
        .filter_map(resolve)
        .map(|path| ToolCallLocation::new(workspace.join(path)))
        .collect()
}

/// A path as the tools resolve it (goat-workpath, lexically); `None` for
/// one they refuse, which is then not shown as a location.
fn resolve(raw: &str) -> Option<String> {
    goat_workpath::resolve(raw)
        .ok()
        .map(|p| p.as_str().to_owned())
}

/// For `write_file` and `edit_file`: the whole file before and after, as
/// ACP's `diff` wants it; `None` when the file cannot be read as text or
/// the edit would not apply (the call then fails on its own).
fn diff_of(workspace: &Path, tool: &str, args: &Value) -> Option<Diff> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = resolve(text("path")?)?;
    let now = goat_session::preview::current_text(workspace, &path).ok()?;
    let after = match tool {
        "write_file" => text("content")?.to_owned(),
        "edit_file" => {
            let current = now.as_deref()?;
            let (old, new) = (text("old_string")?, text("new_string")?);
            let (old, new) = goat_workpath::edit::in_file_convention(current, old, new);
            if old.is_empty() || !current.contains(&old) {
                return None;
            }
            if args.get("replace_all").and_then(Value::as_bool) == Some(true) {
                current.replace(&old, &new)
            } else {
                current.replacen(&old, &new, 1)
            }
        }
        _ => return None,
    };
    Some(Diff::new(workspace.join(&path), after).old_text(now))
}

/// What `tool_call` says when a call reaches the router.
fn started(workspace: &Path, id: String, tool: &str, arguments: &str) -> ToolCall {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let locations = locations(workspace, &args);
    let title = match (tool, args.get("command").and_then(Value::as_str)) {
        ("run_command", Some(command)) => format!("run_command: {command}"),
        _ => match locations.first() {
            Some(l) => format!("{tool} {}", l.path.display()),
            None => tool.to_owned(),
        },
    };
    let content = diff_of(workspace, tool, &args)
        .map(|d| vec![ToolCallContent::Diff(d)])
        .unwrap_or_default();
    ToolCall::new(id, title)
        .kind(kind_of(tool))
        .status(ToolCallStatus::Pending)
        .locations(locations)
        .content(content)
        .raw_input(args)
}

/// What `tool_call_update` says when a call finished.
pub fn finished(id: String, done: &ToolCallCompleted) -> ToolCallUpdate {
    // A call something refused did not do all it was asked, whatever its
    // own status: the editor sees it failed, with what refused it first.
    let status = match done.status {
        CallStatus::Ok if done.refused.is_empty() => ToolCallStatus::Completed,
        CallStatus::Ok | CallStatus::Error | CallStatus::Denied | CallStatus::Interrupted => {
            ToolCallStatus::Failed
        }
    };
    let mut shown = String::new();
    for refused in &done.refused {
        shown.push_str(&format!(
            "refused ({}): {}\n",
            serde_json::to_value(refused.source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            refused.reason
        ));
    }
    // The person's hooks that ran for it, whatever each answered (issue
    // 41): the editor shows what they said as theirs.
    for hook in &done.hooks {
        // The hook's words on one line: no line of them can pass for one
        // of GOAT's ("refused ...", "exit code ...").
        shown.push_str(&format!(
            "hook {} ({}): {}{}\n",
            goat_session::text::escape_controls(&hook.hook),
            hook.event,
            hook.verdict,
            if hook.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", goat_session::text::escape_controls(&hook.reason))
            }
        ));
    }
    if let Some(code) = done.exit_code {
        shown.push_str(&format!("exit code {code}\n"));
    }
    shown.push_str(&done.result_excerpt);
    let output = json!({
        "status": done.status,
        "decision": done.decision,
        "rule": done.rule,
        "error_kind": done.error_kind,
        "exit_code": done.exit_code,
        "output": done.result_excerpt,
        "output_bytes": done.result_bytes,
        "files_changed": done.files_changed,
        "refused": done.refused,
        "hooks": done.hooks,
    });
    ToolCallUpdate::new(
        id,
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![text_content(shown)])
            .raw_output(output),
    )
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::Content(agent_client_protocol::v1::schema::Content::new(
        ContentBlock::Text(TextContent::new(text)),
    ))
}

/// A text chunk.
pub fn chunk(text: String) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// The update an event makes, if any; `calls` follows which call is which.
pub fn update(workspace: &Path, calls: &mut Calls, event: &Event) -> Option<SessionUpdate> {
    if let Some(turn) = event.turn {
        calls.turn = turn;
    }
    match &event.kind {
        EventKind::TurnStarted { .. } => {
            calls.call = 0;
            None
        }
        EventKind::MessageDelta { text, .. } => {
            Some(SessionUpdate::AgentMessageChunk(chunk(text.clone())))
        }
        EventKind::ReasoningDelta { text, .. } => {
            Some(SessionUpdate::AgentThoughtChunk(chunk(text.clone())))
        }
        EventKind::ToolCallStarted {
            call,
            tool,
            arguments,
            ..
        } => {
            calls.call = *call;
            let id = calls.current_id();
            Some(SessionUpdate::ToolCall(started(
                workspace, id, tool, arguments,
            )))
        }
        EventKind::ToolCallCompleted(done) => Some(SessionUpdate::ToolCallUpdate(finished(
            call_id(calls.turn, done.call),
            done,
        ))),
        // A hook that objected at the turn's event (the prompt withheld,
        // or the model sent back to work) is said in the conversation, as
        // GOAT's words quoting the hook's (escaped there).
        EventKind::HooksRan {
            objection: Some(said),
            went_on,
            ..
        } => Some(SessionUpdate::AgentMessageChunk(chunk(format!(
            "\n[goat: {said}{}]\n",
            if *went_on { "; the model goes on" } else { "" }
        )))),
        _ => None,
    }
}

/// A stored call as `tool_call`, for `session/load`'s replay.
pub fn replayed_call(
    workspace: &Path,
    id: String,
    tool: &str,
    arguments: &str,
    ok: bool,
    result: Option<&str>,
) -> ToolCall {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let locations = locations(workspace, &args);
    ToolCall::new(id, tool.to_owned())
        .kind(kind_of(tool))
        .status(if ok {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        })
        .locations(locations)
        .content(
            result
                .map(|r| vec![text_content(r.to_owned())])
                .unwrap_or_default(),
        )
        .raw_input(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_absolute_in_the_workspace() {
        let ws = Path::new("/w");
        let args = json!({"path": "./a//b.rs", "to": "/etc/passwd"});
        let paths: Vec<_> = locations(ws, &args).into_iter().map(|l| l.path).collect();
        assert_eq!(paths, [Path::new("/w/a/b.rs")]);
    }

    #[test]
    fn kinds() {
        assert_eq!(kind_of("read_file"), ToolKind::Read);
        assert_eq!(kind_of("edit_file"), ToolKind::Edit);
        assert_eq!(kind_of("run_command"), ToolKind::Execute);
        assert_eq!(kind_of("search_files"), ToolKind::Search);
        assert_eq!(kind_of("wc__count"), ToolKind::Other);
    }
}
