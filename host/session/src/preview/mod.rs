//! What a call would change, as lines for the approval question: a diff
//! against the file as it is now for `write_file` and `edit_file`, what is
//! lost for `delete_file` and for a `move_file` that replaces a file, the
//! arguments for any other tool.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use goat_router::ApprovalRequest;
use goat_state::fs::{OpenRegularError, open_regular};
use serde_json::Value;

mod diff;

use crate::text::{count, escape_controls, truncate};
pub use diff::Extent;
use diff::{PREVIEW_LINE_CHARS, diff, side};

/// Largest file read to show what a write would change; past this the
/// approval says how large it is instead.
const PREVIEW_FILE_BYTES: u64 = 1024 * 1024;

/// What the call would change, as lines to show (already escaped):
/// for `write_file` and `edit_file` a diff against the file as it is now,
/// for any other tool its arguments.
pub fn preview(request: &ApprovalRequest<'_>, extent: Extent) -> Vec<String> {
    let args = request.arguments;
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = request.paths.first().map(String::as_str);
    match (request.tool, path) {
        ("write_file", Some(path)) => match text("content") {
            Some(content) => write_preview(request.workspace, path, content, extent),
            None => arguments_preview(args),
        },
        ("edit_file", Some(path)) => match (text("old_string"), text("new_string")) {
            (Some(old), Some(new)) => {
                let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
                edit_preview(request.workspace, path, old, new, all, extent)
            }
            _ => arguments_preview(args),
        },
        // The paths as the tool will read them (`nowhere/../b.txt` is
        // `b.txt`), never as the kernel would: the question must show what
        // the tool replaces or deletes.
        ("move_file", _) => match (lexical(text("from")), lexical(text("to"))) {
            (Some(from), Some(to)) => {
                let overwrite = args.get("overwrite").and_then(Value::as_bool) == Some(true);
                move_preview(request.workspace, &from, &to, overwrite, extent)
            }
            _ => arguments_preview(args),
        },
        ("delete_file", _) => match lexical(text("path")) {
            Some(path) => delete_preview(request.workspace, &path, extent),
            None => arguments_preview(args),
        },
        ("run_command", _) if !request.details.is_empty() => {
            change_set_preview(request.details, extent)
        }
        ("run_command", _) => command_preview(args),
        _ => arguments_preview(args),
    }
}

/// What a workspace file holds now, read as the approval preview reads it
/// (no link out of the workspace followed, no FIFO opened, at most
/// [`PREVIEW_FILE_BYTES`], decoded as the tools decode it): `Ok(None)` when
/// there is no such file, `Err` with the reason when it cannot be shown.
/// For front ends that show an edit as a whole-file diff (ACP's `diff`).
pub fn current_text(workspace: &Path, path: &str) -> Result<Option<String>, String> {
    match existing(workspace, path) {
        Existing::Missing => Ok(None),
        Existing::Text(text) => Ok(Some(text)),
        Existing::Unshown(why) => Err(why),
    }
}

/// A workspace path as the tools resolve it (goat-workpath, lexically);
/// `None` for one they refuse.
fn lexical(raw: Option<&str>) -> Option<String> {
    goat_workpath::resolve(raw?)
        .ok()
        .map(|p| p.as_str().to_owned())
}

/// What moving `from` to `to` does: which entry moves, and what of `to`
/// is lost when it is replaced.
fn move_preview(
    workspace: &Path,
    from: &str,
    to: &str,
    overwrite: bool,
    extent: Extent,
) -> Vec<String> {
    let (from_shown, to_shown) = (escape_controls(from), escape_controls(to));
    let is_dir =
        |rel: &str| fs::symlink_metadata(workspace.join(rel)).is_ok_and(|m| m.file_type().is_dir());
    let what = if is_dir(from) {
        " (a directory, with everything in it)"
    } else {
        ""
    };
    let mut lines = vec![format!("moves '{from_shown}'{what} to '{to_shown}'")];
    if is_dir(to) {
        lines.push(format!(
            "'{to_shown}' is a directory; the tool will refuse to replace it"
        ));
        return lines;
    }
    match (existing(workspace, to), overwrite) {
        (Existing::Missing, _) => {}
        (_, false) => lines.push(format!(
            "'{to_shown}' exists; the tool will refuse unless overwrite is true"
        )),
        (Existing::Text(old), true) => {
            lines.push(format!(
                "replaces '{to_shown}' ({} lost):",
                count(old.lines().count(), "line")
            ));
            let removed: Vec<&str> = old.lines().collect();
            lines.extend(side('-', &removed, extent));
        }
        (Existing::Unshown(why), true) => lines.push(format!(
            "replaces '{to_shown}'; its content is not shown: {why}"
        )),
    }
    lines
}

/// What deleting `path` loses.
fn delete_preview(workspace: &Path, path: &str, extent: Extent) -> Vec<String> {
    let shown = escape_controls(path);
    // The tool deletes a link itself, never what it points to.
    if let Ok(target) = fs::read_link(workspace.join(path)) {
        return vec![format!(
            "deletes the link '{shown}' (to '{}'); what it points to is untouched",
            escape_controls(&target.to_string_lossy())
        )];
    }
    match existing(workspace, path) {
        Existing::Missing => vec![format!(
            "'{shown}' does not exist; the tool will say so and delete nothing"
        )],
        Existing::Text(old) => {
            let mut lines = vec![format!(
                "deletes '{shown}' ({}, {}):",
                count(old.lines().count(), "line"),
                count(old.len(), "byte")
            )];
            let removed: Vec<&str> = old.lines().collect();
            lines.extend(side('-', &removed, extent));
            lines
        }
        Existing::Unshown(why) => vec![format!(
            "deletes '{shown}'; its content is not shown: {why}"
        )],
    }
}

/// A command as the person reads it: the line itself, unquoted (escaped),
/// the directory and the time it may take.
fn command_preview(args: &Value) -> Vec<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let mut lines = vec![format!(
        "$ {}",
        truncate(
            &escape_controls(text("command").unwrap_or_default()),
            PREVIEW_LINE_CHARS * 4
        )
    )];
    lines.push(format!(
        "directory: {}",
        escape_controls(text("cwd").unwrap_or("."))
    ));
    if let Some(secs) = args.get("timeout_secs").and_then(Value::as_u64) {
        lines.push(format!("timeout: {secs} s"));
    }
    lines
}

/// Lines of a command's change set listed before it lands: the first
/// few in the question, all of them in the pager.
fn change_set_preview(details: &[String], extent: Extent) -> Vec<String> {
    let shown = match extent {
        Extent::Short => SHORT_CHANGE_SET_LINES,
        Extent::Full => details.len(),
    };
    let mut lines: Vec<String> = details
        .iter()
        .take(shown)
        .map(|line| truncate(&escape_controls(line), PREVIEW_LINE_CHARS * 2))
        .collect();
    if details.len() > shown {
        lines.push(format!(
            "... and {} more ([v]iew lists them all)",
            details.len() - shown
        ));
    }
    lines
}

/// Paths of a change set listed in the question itself.
const SHORT_CHANGE_SET_LINES: usize = 8;

fn arguments_preview(args: &Value) -> Vec<String> {
    vec![format!(
        "arguments: {}",
        truncate(&escape_controls(&args.to_string()), PREVIEW_LINE_CHARS * 2)
    )]
}

/// The file at `path` as it is now, for a preview.
enum Existing {
    Missing,
    Text(String),
    /// Cannot be shown; says why.
    Unshown(String),
}

fn existing(workspace: &Path, path: &str) -> Existing {
    let full = workspace.join(path);
    let meta = match fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Existing::Missing,
        Err(e) => return Existing::Unshown(format!("cannot read it to compare ({e})")),
    };
    // Only a preview, never the boundary (the sandbox is): still, a link
    // out of the workspace is not followed here either.
    match full.canonicalize() {
        Ok(real) if real.starts_with(workspace) => {}
        Ok(_) => {
            return Existing::Unshown(
                "it is a link leading outside the workspace; the tool will refuse it".to_owned(),
            );
        }
        Err(_) if meta.file_type().is_symlink() => {
            return Existing::Unshown("it is a dangling link".to_owned());
        }
        Err(e) => return Existing::Unshown(format!("cannot resolve it ({e})")),
    }
    // Opened without blocking and checked on the descriptor: a FIFO put
    // here (now, or between a check and the open) cannot hang the question.
    let file = match open_regular(&full) {
        Ok(file) => file,
        Err(OpenRegularError::NotAFile { kind, .. }) => {
            return Existing::Unshown(format!("it is {kind}, not a regular file"));
        }
        Err(e) => return Existing::Unshown(format!("cannot read it to compare ({e})")),
    };
    let len = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(e) => return Existing::Unshown(format!("cannot read it to compare ({e})")),
    };
    if len > PREVIEW_FILE_BYTES {
        return Existing::Unshown(format!("it is {len} bytes, too large to compare here"));
    }
    // Capped again while reading: the file may grow after the check.
    let mut bytes = Vec::new();
    if let Err(e) = file.take(PREVIEW_FILE_BYTES + 1).read_to_end(&mut bytes) {
        return Existing::Unshown(format!("cannot read it to compare ({e})"));
    }
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > PREVIEW_FILE_BYTES {
        return Existing::Unshown("it grew too large to compare here".to_owned());
    }
    // Read as the tools read it: UTF-8, or Windows-1252 for other text.
    match goat_workpath::encoding::decode(&bytes) {
        Some((text, _)) => Existing::Text(text),
        None => Existing::Unshown("it is a binary file".to_owned()),
    }
}

fn write_preview(workspace: &Path, path: &str, content: &str, extent: Extent) -> Vec<String> {
    let shown = escape_controls(path);
    match existing(workspace, path) {
        Existing::Missing => {
            let mut lines = vec![format!(
                "creates '{shown}': {}, {}",
                count(content.lines().count(), "line"),
                count(content.len(), "byte")
            )];
            let added: Vec<&str> = content.lines().collect();
            lines.extend(side('+', &added, extent));
            lines
        }
        Existing::Text(old) if old == content => {
            vec![format!("'{shown}' already has exactly this content")]
        }
        Existing::Text(old) => {
            let mut lines = vec![format!(
                "replaces '{shown}' ({} now, {} after):",
                count(old.lines().count(), "line"),
                count(content.lines().count(), "line")
            )];
            lines.extend(diff(&old, content, extent));
            lines
        }
        Existing::Unshown(why) => vec![format!(
            "writes '{shown}' ({}, {}); the current file is not shown: {why}",
            count(content.lines().count(), "line"),
            count(content.len(), "byte")
        )],
    }
}

fn edit_preview(
    workspace: &Path,
    path: &str,
    old: &str,
    new: &str,
    all: bool,
    extent: Extent,
) -> Vec<String> {
    let shown = escape_controls(path);
    let current = match existing(workspace, path) {
        Existing::Text(text) => text,
        Existing::Missing => {
            return vec![format!(
                "'{shown}' does not exist; the edit will fail and change nothing"
            )];
        }
        Existing::Unshown(why) => {
            let mut lines = vec![format!("edits '{shown}'; the file is not shown: {why}")];
            lines.extend(side('-', &old.lines().collect::<Vec<_>>(), extent));
            lines.extend(side('+', &new.lines().collect::<Vec<_>>(), extent));
            return lines;
        }
    };
    // Matched as edit_file will match it (a CRLF file in its own line
    // endings): one rule, shared with the tool.
    let (old, new) = goat_workpath::edit::in_file_convention(&current, old, new);
    let (old, new) = (old.as_str(), new.as_str());
    let found = if old.is_empty() {
        0
    } else {
        current.matches(old).count()
    };
    match found {
        0 => vec![format!(
            "the text to replace is not in '{shown}'; the edit will fail and change nothing"
        )],
        n if n > 1 && !all => vec![format!(
            "the text to replace is in '{shown}' {n} times; without replace_all the edit will \
             fail and change nothing"
        )],
        n => {
            let after = current.replace(old, new);
            let mut lines = vec![format!(
                "edits '{shown}' ({} replaced):",
                count(n, "occurrence")
            )];
            lines.extend(diff(&current, &after, extent));
            lines
        }
    }
}

#[cfg(test)]
mod tests {
    use super::diff::PREVIEW_LINES;
    use super::*;
    use serde_json::json;

    fn preview_in(files: &[(&str, &str)], tool: &str, arguments: Value) -> Vec<String> {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (name, content) in files {
            fs::write(ws.path().join(name), content).unwrap_or_else(|e| panic!("{e}"));
        }
        let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let path = arguments["path"].as_str().unwrap_or_default().to_owned();
        preview_of(&root, tool, &path, &arguments)
    }

    /// The short preview of a call of `tool` on the gate's resolved `path`
    /// in the workspace `root`, asked as the gate asks for a file tool.
    fn preview_of(root: &Path, tool: &str, path: &str, arguments: &Value) -> Vec<String> {
        preview(
            &ApprovalRequest {
                tool,
                prompt: "",
                paths: &[path.to_owned()],
                arguments,
                workspace: root,
                can_remember: true,
                directories: &[],
                details: &[],
            },
            Extent::Short,
        )
    }

    #[test]
    fn an_edit_of_a_crlf_file_is_previewed_as_the_tool_will_make_it() {
        let lines = preview_in(
            &[("w.txt", "one\r\ntwo\r\n")],
            "edit_file",
            json!({"path": "w.txt", "old_string": "one\ntwo", "new_string": "uno\ndos"}),
        );
        assert!(
            lines[0].starts_with("edits 'w.txt' (1 occurrence replaced)"),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("will fail")), "{lines:?}");
    }

    #[test]
    fn an_edit_shows_the_changed_lines_of_the_file() {
        let lines = preview_in(
            &[("a.rs", "fn a() {}\nfn b() {\n    1\n}\n")],
            "edit_file",
            json!({"path": "a.rs", "old_string": "    1\n", "new_string": "    2\n    3\n"}),
        );
        assert_eq!(
            lines,
            [
                "edits 'a.rs' (1 occurrence replaced):",
                "at line 3: -1 line +2 lines",
                "-     1",
                "+     2",
                "+     3",
            ]
        );
    }

    #[test]
    fn an_edit_that_will_fail_says_so() {
        let none = preview_in(
            &[("a.rs", "x\n")],
            "edit_file",
            json!({"path": "a.rs", "old_string": "y", "new_string": "z"}),
        );
        assert!(none[0].contains("not in 'a.rs'"), "{none:?}");
        let twice = preview_in(
            &[("a.rs", "x\nx\n")],
            "edit_file",
            json!({"path": "a.rs", "old_string": "x", "new_string": "z"}),
        );
        assert!(twice[0].contains("2 times"), "{twice:?}");
        let missing = preview_in(
            &[],
            "edit_file",
            json!({"path": "b.rs", "old_string": "x", "new_string": "z"}),
        );
        assert!(missing[0].contains("does not exist"), "{missing:?}");
    }

    #[test]
    fn an_overwrite_shows_the_diff_and_escapes_control_characters() {
        let lines = preview_in(
            &[("a.txt", "one\ntwo\nthree\n")],
            "write_file",
            json!({"path": "a.txt", "content": "one\n\u{1b}[2Jtwo\nthree\n"}),
        );
        assert_eq!(
            lines,
            [
                "replaces 'a.txt' (3 lines now, 3 lines after):",
                "at line 2: -1 line +1 line",
                "- two",
                "+ \\u{1b}[2Jtwo",
            ]
        );
        let same = preview_in(
            &[("a.txt", "x\n")],
            "write_file",
            json!({"path": "a.txt", "content": "x\n"}),
        );
        assert_eq!(same, ["'a.txt' already has exactly this content"]);
    }

    #[test]
    fn a_delete_shows_what_is_lost_and_a_move_what_it_replaces() {
        let lines = preview_in(
            &[("a.txt", "one\ntwo\n")],
            "delete_file",
            json!({"path": "a.txt"}),
        );
        assert_eq!(
            lines,
            ["deletes 'a.txt' (2 lines, 8 bytes):", "- one", "- two"]
        );
        let moved = preview_in(
            &[("a.txt", "new\n"), ("b.txt", "old\n")],
            "move_file",
            json!({"path": "", "from": "a.txt", "to": "b.txt", "overwrite": true}),
        );
        assert_eq!(
            moved,
            [
                "moves 'a.txt' to 'b.txt'",
                "replaces 'b.txt' (1 line lost):",
                "- old"
            ]
        );
        let refused = preview_in(
            &[("a.txt", "new\n"), ("b.txt", "old\n")],
            "move_file",
            json!({"path": "", "from": "a.txt", "to": "b.txt"}),
        );
        assert_eq!(
            refused[1],
            "'b.txt' exists; the tool will refuse unless overwrite is true"
        );
    }

    /// The gate and the tool resolve `..` lexically (`nowhere/../b.txt` is
    /// `b.txt`); the preview does too, or it would ask the kernel, find no
    /// `nowhere`, and say nothing is replaced while the tool loses `b.txt`.
    #[test]
    fn a_move_over_a_file_named_through_dotdot_shows_the_loss() {
        let moved = preview_in(
            &[("a.txt", "new\n"), ("b.txt", "old\n")],
            "move_file",
            json!({"path": "", "from": "a.txt", "to": "nowhere/../b.txt", "overwrite": true}),
        );
        assert!(
            moved.iter().any(|l| l.starts_with("replaces")),
            "the loss of b.txt is not shown: {moved:?}"
        );
    }

    #[test]
    fn deleting_a_link_is_shown_as_the_link_not_its_target() {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        fs::write(root.join("target.txt"), "kept\n").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("target.txt", root.join("link"))
            .unwrap_or_else(|e| panic!("{e}"));
        let arguments = json!({"path": "link"});
        let lines = preview_of(&root, "delete_file", "target.txt", &arguments);
        assert_eq!(
            lines,
            ["deletes the link 'link' (to 'target.txt'); what it points to is untouched"]
        );
    }

    #[test]
    fn a_long_change_is_cut() {
        let content: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let lines = preview_in(
            &[],
            "write_file",
            json!({"path": "new.txt", "content": content}),
        );
        assert_eq!(lines[0], "creates 'new.txt': 20 lines, 150 bytes");
        assert_eq!(lines.len(), 1 + PREVIEW_LINES + 1);
        assert_eq!(
            lines[PREVIEW_LINES + 1],
            "+ … 12 lines more ([v]iew shows them)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_not_read_for_the_preview_and_does_not_block() {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success());
        // In a thread, so a blocking open fails the test instead of hanging
        // it (the thread is left behind then; the process ends anyway).
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let write = existing(&root, "pipe");
            let edit = edit_preview(&root, "pipe", "a", "b", false, Extent::Short);
            let lines = match write {
                Existing::Unshown(why) => vec![why, edit.concat()],
                Existing::Missing => vec!["missing".to_owned()],
                Existing::Text(text) => vec![format!("read: {text}")],
            };
            let _ = sent.send(lines);
        });
        let lines = received
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("the preview blocked on a FIFO"));
        assert_eq!(lines[0], "it is a FIFO, not a regular file", "{lines:?}");
        assert!(
            lines[1].starts_with("edits 'pipe'; the file is not shown: it is a FIFO"),
            "{lines:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_workspace_is_not_read_for_the_preview() {
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        fs::write(outside.path().join("secret"), "top secret\n").unwrap_or_else(|e| panic!("{e}"));
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("s"))
            .unwrap_or_else(|e| panic!("{e}"));
        let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let arguments = json!({"path": "s", "content": "x"});
        let lines = preview_of(&root, "write_file", "s", &arguments);
        assert!(lines[0].contains("outside the workspace"), "{lines:?}");
        assert!(!lines.concat().contains("top secret"), "{lines:?}");
    }
}
