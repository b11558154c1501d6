//! The approval question at the terminal: the call, what it would change,
//! and the answers: once, session, directory, always, deny (with a
//! sentence for the model), and view (the whole change, in a pager).
//!
//! Nothing here decides anything. The gate decides whether to ask; this
//! module asks, shows what the write would do ([`preview`]), and hands the
//! answer back to the router, which saves "session" and "always" answers
//! as rules.
//!
//! Everything shown that came from the model or the workspace is escaped:
//! a diff line cannot move the cursor or forge a prompt.

mod pager;

use std::io::Write;

use goat_router::{Approval, ApprovalRequest, Approver};

use goat_session::preview::{Extent, preview};
pub use pager::Pager;

use crate::style::{Style, clear_spinner_line};
use crate::terminal::Input;
use crate::text::{GOAT_LINE, GOAT_MORE, escape_controls};

/// Wrong answers to one approval question before it counts as "deny".
const ANSWER_ATTEMPTS: usize = 3;

/// Where answers come from.
pub trait Answers: Send {
    /// The next line, end of input, or an interrupt.
    fn next(&mut self) -> Input;

    /// Drops anything typed before the question was shown, so a stray `y`
    /// typed while the model was working cannot answer it.
    fn discard_typeahead(&mut self) {}
}

/// Columns the wrapped lines of a question are indented by, as its
/// other lines are.
const QUESTION_INDENT: &str = GOAT_MORE;

/// Views of the whole change one question allows, so a stuck key cannot
/// loop forever; each is also a chance to answer.
const MAX_VIEWS: usize = 20;

/// Asks about writes at the terminal: the tool, the resolved paths, what
/// would change, and the answers.
pub struct TerminalApprover<A, W> {
    pub answers: A,
    pub output: W,
    pub style: Style,
    /// Where `[v]iew` shows the whole change.
    pub pager: Pager,
    /// The terminal's width: GOAT's own lines of the question are wrapped
    /// at words to it (`None`: not wrapped).
    pub width: Option<usize>,
}

impl<A: Answers, W: Write + Send> Approver for TerminalApprover<A, W> {
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval {
        self.answers.discard_typeahead();
        let wrap = |text: String| match self.width {
            Some(width) => crate::screen::wrap_words(&text, width, QUESTION_INDENT),
            None => text,
        };
        let mut question = question(request, self.style, &wrap);
        question.push_str(&wrap(extras(request)));
        let menu = if request.can_remember {
            "allow? [o]nce, for this [s]ession, [a]lways in this workspace, [d]eny (default deny): "
        } else {
            "allow? [o]nce, [d]eny (default deny); this path cannot be saved as an exact rule: "
        };
        // The menu's own line ends open, at the answer.
        let menu = wrap(format!("{GOAT_LINE}{menu}"));
        let menu = menu.strip_prefix(GOAT_LINE).unwrap_or(&menu);
        clear_spinner_line(&mut self.output);
        crate::screen::end_open_line();
        if write!(self.output, "{question}{GOAT_LINE}{menu}")
            .and_then(|()| self.output.flush())
            .is_err()
        {
            return Approval::Deny;
        }
        let mut attempt = 1;
        let mut views = 0;
        while attempt <= ANSWER_ATTEMPTS {
            let line = match self.answers.next() {
                Input::Line(line) => line,
                Input::Eof | Input::Interrupt => {
                    let _ = writeln!(self.output);
                    return Approval::Deny;
                }
            };
            match parse_answer(&line, request) {
                Some(Parsed::Answer(answer)) => return answer,
                Some(Parsed::View) if views < MAX_VIEWS => {
                    views += 1;
                    let whole = preview(request, Extent::Full);
                    self.pager.show(&whole, &mut self.output);
                    if write!(self.output, "{GOAT_LINE}{menu}")
                        .and_then(|()| self.output.flush())
                        .is_err()
                    {
                        return Approval::Deny;
                    }
                    continue;
                }
                Some(Parsed::View) | None if attempt < ANSWER_ATTEMPTS => {
                    let hint = if request.can_remember {
                        "please answer o, s, a or d: "
                    } else {
                        "please answer o or d: "
                    };
                    if write!(self.output, "{GOAT_LINE}{hint}")
                        .and_then(|()| self.output.flush())
                        .is_err()
                    {
                        return Approval::Deny;
                    }
                }
                Some(Parsed::View) | None => {}
            }
            attempt += 1;
        }
        let _ = writeln!(self.output, "{GOAT_LINE}no clear answer; denied");
        Approval::Deny
    }
}

/// The line under the question naming the answers beyond the menu's:
/// view, directory (when offered), deny with a reason.
fn extras(request: &ApprovalRequest<'_>) -> String {
    let mut offers = Vec::new();
    // A command's question already shows the whole command line: there is
    // no change to view.
    // Its change set, put to the person after it ran, has one.
    if request.tool != goat_router::RUN_COMMAND || !request.details.is_empty() {
        offers.push("[v]iew the whole change".to_owned());
    }
    if request.can_remember && !request.directories.is_empty() {
        let dirs: Vec<String> = request
            .directories
            .iter()
            .map(|d| format!("'{}'", escape_controls(d)))
            .collect();
        offers.push(format!("[dir] for all of {} this session", dirs.join(", ")));
    }
    let deny = "d: <why> to deny and tell the model why";
    if offers.is_empty() {
        format!("{GOAT_MORE}also: {deny}\n")
    } else {
        format!("{GOAT_MORE}also: {}, or {deny}\n", offers.join(", "))
    }
}

/// An answer, or a request to see the whole change first.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Answer(Approval),
    View,
}

/// The answer typed, or `None` for something that is not one. An empty
/// line is the default, deny. `dir` is the directory (spelled out: a
/// single letter a slip of caps lock away from `d`, deny, must not grant
/// a directory); `d: why` denies with a sentence for the model.
fn parse_answer(line: &str, request: &ApprovalRequest<'_>) -> Option<Parsed> {
    let trimmed = line.trim();
    let lower = trimmed.to_ascii_lowercase();
    for prefix in ["d:", "deny:", "n:", "no:"] {
        if lower.starts_with(prefix) {
            let why = trimmed.get(prefix.len()..).unwrap_or("").trim();
            return Some(Parsed::Answer(if why.is_empty() {
                Approval::Deny
            } else {
                Approval::DenyWith(why.to_owned())
            }));
        }
    }
    let can_remember = request.can_remember;
    let directory = can_remember && !request.directories.is_empty();
    let answer = match lower.as_str() {
        "o" | "once" | "y" | "yes" => Approval::Once,
        "s" | "session" if can_remember => Approval::Session,
        "dir" | "directory" if directory => Approval::Directory,
        "a" | "always" if can_remember => Approval::Always,
        "" | "d" | "deny" | "n" | "no" => Approval::Deny,
        "v" | "view" => return Some(Parsed::View),
        _ => return None,
    };
    Some(Parsed::Answer(answer))
}

/// The question's lines, each ending in a newline: the gate's prompt, the
/// workspace, then what would change.
pub fn question(
    request: &ApprovalRequest<'_>,
    style: Style,
    wrap: &dyn Fn(String) -> String,
) -> String {
    // GOAT's own lines are wrapped; the preview's (a file's lines) never.
    let mut out = wrap(format!(
        "{GOAT_LINE}{}\n{GOAT_MORE}workspace: {}\n",
        escape_controls(request.prompt),
        escape_controls(&request.workspace.display().to_string())
    ));
    for line in preview(request, Extent::Short) {
        let painted = match line.as_bytes().first() {
            Some(b'+') => style.green(&line),
            Some(b'-') => style.red(&line),
            _ => line,
        };
        out.push_str(GOAT_MORE);
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Typed(Vec<Input>);

    impl Answers for Typed {
        fn next(&mut self) -> Input {
            if self.0.is_empty() {
                Input::Eof
            } else {
                self.0.remove(0)
            }
        }
    }

    fn ask(typed: &[&str], can_remember: bool) -> (Approval, String) {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let paths = ["notes/a.txt".to_owned()];
        let dirs = ["notes/**".to_owned()];
        let arguments = json!({"path": "notes/a.txt", "content": "hi\n"});
        let mut out = Vec::new();
        let mut approver = TerminalApprover {
            answers: Typed(typed.iter().map(|t| Input::Line((*t).to_owned())).collect()),
            output: &mut out,
            style: Style::new(false),
            pager: Pager::BuiltIn,
            width: None,
        };
        let answer = approver.approve(&ApprovalRequest {
            tool: "write_file",
            prompt: "write_file wants to write 'notes/a.txt'; allow it?",
            paths: &paths,
            arguments: &arguments,
            workspace: ws.path(),
            can_remember,
            directories: &dirs,
            details: &[],
        });
        (answer, String::from_utf8(out).unwrap_or_default())
    }

    fn asked(tool: &str, arguments: serde_json::Value, width: Option<usize>) -> String {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        let mut approver = TerminalApprover {
            answers: Typed(vec![Input::Line("d".to_owned())]),
            output: &mut out,
            style: Style::new(false),
            pager: Pager::BuiltIn,
            width,
        };
        approver.approve(&ApprovalRequest {
            tool,
            prompt: "run_command wants to run 'cargo test --workspace --locked --all-features'; allow it?",
            paths: &[],
            arguments: &arguments,
            workspace: ws.path(),
            can_remember: false,
            directories: &[],
            details: &[],
        });
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn a_command_is_offered_no_change_to_view() {
        let shown = asked(
            goat_router::RUN_COMMAND,
            json!({"command": "cargo test --workspace --locked --all-features"}),
            None,
        );
        assert!(!shown.contains("[v]iew"), "{shown}");
        assert!(
            shown.contains("       also: d: <why> to deny and tell the model why\n"),
            "{shown}"
        );
        let file = asked("write_file", json!({"path": "a.txt", "content": "x"}), None);
        assert!(
            file.contains("also: [v]iew the whole change, or d: <why>"),
            "{file}"
        );
    }

    #[test]
    fn the_question_is_wrapped_at_words_to_the_width() {
        let shown = asked(
            goat_router::RUN_COMMAND,
            json!({"command": "cargo test --workspace --locked --all-features"}),
            Some(40),
        );
        let first: Vec<&str> = shown.lines().take(2).collect();
        assert_eq!(
            first,
            [
                "▌ goat: run_command wants to run 'cargo",
                "▌       test --workspace --locked",
            ],
            "{shown}"
        );
        // GOAT's own lines; the preview (the command itself) is not
        // GOAT's to break.
        for line in shown.lines().filter(|l| !l.starts_with("▌       $ ")) {
            assert!(line.chars().count() <= 40, "{line:?}");
        }
    }

    #[test]
    fn each_answer_and_the_default() {
        for (typed, want) in [
            ("o", Approval::Once),
            ("yes", Approval::Once),
            ("s", Approval::Session),
            ("ALWAYS", Approval::Always),
            ("a", Approval::Always),
            ("d", Approval::Deny),
            ("", Approval::Deny),
            ("n", Approval::Deny),
            ("D", Approval::Deny),
            ("dir", Approval::Directory),
            ("d:", Approval::Deny),
            (
                "d: use the helper in util.rs",
                Approval::DenyWith("use the helper in util.rs".to_owned()),
            ),
            ("Deny: No", Approval::DenyWith("No".to_owned())),
        ] {
            assert_eq!(ask(&[typed], true).0, want, "{typed:?}");
        }
    }

    #[test]
    fn unclear_answers_are_asked_again_then_denied() {
        let (answer, shown) = ask(&["maybe", "s"], true);
        assert_eq!(answer, Approval::Session);
        assert!(shown.contains("please answer o, s, a or d"), "{shown}");
        let (answer, shown) = ask(&["x", "y?", "z"], true);
        assert_eq!(answer, Approval::Deny);
        assert!(
            shown.ends_with("▌ goat: no clear answer; denied\n"),
            "{shown}"
        );
        // End of input is a no.
        assert_eq!(ask(&[], true).0, Approval::Deny);
    }

    #[test]
    fn view_shows_the_whole_change_and_asks_again_without_using_an_attempt() {
        let (answer, shown) = ask(&["v", "v", "x", "y?", "o"], true);
        assert_eq!(answer, Approval::Once);
        assert_eq!(shown.matches("+ hi").count(), 3, "{shown}");
    }

    #[test]
    fn session_and_always_are_not_offered_when_they_cannot_be_saved() {
        let (answer, shown) = ask(&["s", "a", "always"], false);
        assert_eq!(answer, Approval::Deny);
        assert!(shown.contains("[o]nce, [d]eny"), "{shown}");
        assert_eq!(ask(&["o"], false).0, Approval::Once);
    }

    #[test]
    fn the_question_shows_the_tool_path_workspace_and_new_content() {
        let (_, shown) = ask(&["d"], true);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(
            lines[0],
            "▌ goat: write_file wants to write 'notes/a.txt'; allow it?"
        );
        assert!(lines[1].starts_with("▌       workspace: "), "{shown}");
        assert_eq!(lines[2], "▌       creates 'notes/a.txt': 1 line, 3 bytes");
        assert_eq!(lines[3], "▌       + hi");
        assert_eq!(
            lines[4],
            "▌       also: [v]iew the whole change, [dir] for all of 'notes/**' this session, or \
             d: <why> to deny and tell the model why"
        );
        assert!(!shown.contains('\x1b'), "no escape codes without colour");
    }
}
