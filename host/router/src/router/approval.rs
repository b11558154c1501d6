//! What the gate puts to a person, and their answer: the request, the
//! answers, and how a refusal is told to the model.

use std::path::Path;

use serde_json::Value;

use goat_store::{CallDecision, RefusedBy};

use super::{Routed, denied};
use goat_gate::{self as gate, Scope};

/// One call the gate wants a person to decide, with what they need to
/// decide it.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalRequest<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The gate's question, one line: the tool and the resolved paths,
    /// quoted and escaped.
    pub prompt: &'a str,
    /// The call's path values, as the gate resolved them (`.` is the
    /// workspace root); empty for a tool without path fields.
    pub paths: &'a [String],
    /// The validated arguments, to show what would change.
    pub arguments: &'a Value,
    /// The workspace the paths are in.
    pub workspace: &'a Path,
    /// Whether [`Approval::Session`] and [`Approval::Always`] can be saved
    /// as rules matching exactly these paths in this workspace. When not (a
    /// path contains a wildcard character or names the workspace root, or
    /// the workspace path is not UTF-8), they count as [`Approval::Once`].
    pub can_remember: bool,
    /// What [`Approval::Directory`] would allow for the session: one
    /// pattern per path (`dir/**`, its directory). Empty when it is not
    /// offered (a path at the workspace root, a command, or nothing can be
    /// remembered).
    pub directories: &'a [String],
    /// For a command's change set put to the person: one line per path it
    /// changes, for the whole view; empty otherwise.
    pub details: &'a [String],
}

/// A person's answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    Once,
    /// Run it, and allow the same tool on the same paths for the rest of
    /// this session (a session rule in the permission database).
    Session,
    /// Run it, and always allow the same tool on the same paths in this
    /// workspace (a persistent rule bound to the workspace, which `goat
    /// permissions revoke` removes).
    Always,
    /// Run it, and allow the same tool anywhere in the directories
    /// [`ApprovalRequest::directories`] names for the rest of this session.
    /// Counts as [`Approval::Session`] where none were offered.
    Directory,
    /// Do not run it.
    Deny,
    /// Do not run it, and tell the model this sentence (the person's own
    /// words: what to do instead). Capped at [`MAX_DENIAL_NOTE_CHARS`].
    DenyWith(String),
}

/// Most characters of a person's sentence passed on with a denial: room
/// for a few sentences of guidance, not a second prompt.
pub const MAX_DENIAL_NOTE_CHARS: usize = 500;

/// Who [`Approver::who`] is unless an approver says otherwise.
pub const AT_THE_TERMINAL: &str = "the person at the terminal";

/// What the model is told when `who` (an [`Approver::who`]) said no, with
/// their sentence if they gave one: one line, control characters made
/// spaces, capped at [`MAX_DENIAL_NOTE_CHARS`].
pub(crate) fn denial_reason(who: &str, question: &str, note: Option<&str>) -> String {
    let base = format!("denied: {who} did not allow it ({question})");
    let Some(note) = note else {
        return base;
    };
    let note: String = note
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_DENIAL_NOTE_CHARS)
        .collect();
    if note.is_empty() {
        base
    } else {
        format!("{base}; they said: \"{note}\"")
    }
}

/// The session pattern covering the directory `raw` is in (`dir/**`), or
/// `None` for a path at the workspace root or one whose directory has a
/// wildcard character (it could not be matched literally).
pub(crate) fn directory_pattern(raw: &str) -> Option<String> {
    let path = gate::canonical_path(raw).ok()?;
    let (dir, _) = path.rsplit_once('/')?;
    if dir.is_empty() || dir == "." || dir.contains(['*', '?']) {
        return None;
    }
    Some(format!("{dir}/**"))
}
/// Who answers the gate's questions.
pub trait Approver: Send {
    /// Shows `request` to the person and returns their answer.
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval;

    /// Who answers, as a denial tells the model ("denied: WHO did not
    /// allow it"): [`AT_THE_TERMINAL`] unless the person is elsewhere (an
    /// editor's, an MCP client's).
    fn who(&self) -> &str {
        AT_THE_TERMINAL
    }

    /// Whether the one who answers is the person GOAT works for (at the
    /// terminal, in their editor), not another program answering in
    /// their place (an MCP client of `goat mcp serve`). A hook's ask is
    /// put only to the person (issue 41).
    fn is_the_person(&self) -> bool {
        true
    }

    /// The interrupt of the call about to be routed (ADR-0087): an
    /// approver that waits on something the turn's own cancellation does
    /// not reach (an MCP client's answer) stops waiting, and denies, when
    /// it fires.
    fn interrupted_by(&mut self, interrupt: &goat_command::Interrupt) {
        let _ = interrupt;
    }
}

/// Ends when `interrupt` fires: for waits on a runtime (an MCP call, an
/// elicitation), which look at it every [`INTERRUPT_POLL`].
pub async fn interrupt_fired(interrupt: &goat_command::Interrupt) {
    while !interrupt.is_fired() {
        tokio::time::sleep(INTERRUPT_POLL).await;
    }
}

/// How often [`interrupt_fired`] looks.
const INTERRUPT_POLL: std::time::Duration = std::time::Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denial_note_is_one_capped_line_in_quotes() {
        assert_eq!(
            denial_reason(AT_THE_TERMINAL, "q?", None),
            "denied: the person at the terminal did not allow it (q?)"
        );
        assert_eq!(
            denial_reason(AT_THE_TERMINAL, "q?", Some("  \n ")),
            "denied: the person at the terminal did not allow it (q?)"
        );
        assert_eq!(
            denial_reason(AT_THE_TERMINAL, "q?", Some("use\nthe helper\x1b[2J")),
            "denied: the person at the terminal did not allow it (q?); they said: \"use the \
             helper [2J\""
        );
        let long = "x".repeat(MAX_DENIAL_NOTE_CHARS + 50);
        let reason = denial_reason(AT_THE_TERMINAL, "q?", Some(&long));
        assert_eq!(reason.matches('x').count(), MAX_DENIAL_NOTE_CHARS);
    }

    #[test]
    fn a_directory_pattern_is_the_files_directory_never_the_root() {
        assert_eq!(
            directory_pattern("notes/a.txt").as_deref(),
            Some("notes/**")
        );
        assert_eq!(directory_pattern("./a/b/../c.txt").as_deref(), Some("a/**"));
        assert_eq!(directory_pattern("a.txt"), None);
        assert_eq!(directory_pattern("we*ird/a.txt"), None);
        assert_eq!(directory_pattern("../outside/a.txt"), None);
    }
}

/// A person's yes, as every route keeps it: once, or saved as rules for
/// the session (for exactly what was asked, or its directories) or always.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Allowed {
    /// This call only.
    Once,
    /// Saved for the session; `directories` when the person chose them.
    Session {
        /// The asked paths' directories rather than the paths.
        directories: bool,
    },
    /// Saved for good.
    Always,
}

impl Allowed {
    /// `answer` as the road takes it: a no is the call's outcome (the
    /// person refused it, in their words); a yes that cannot be saved is
    /// once.
    pub(crate) fn from_answer(
        answer: Approval,
        who: &str,
        question: &str,
        can_remember: bool,
    ) -> Result<Self, Routed> {
        let allowed = match answer {
            Approval::Deny => {
                return Err(denied(
                    RefusedBy::Person,
                    CallDecision::AskDenied,
                    denial_reason(who, question, None),
                ));
            }
            Approval::DenyWith(note) => {
                return Err(denied(
                    RefusedBy::Person,
                    CallDecision::AskDenied,
                    denial_reason(who, question, Some(&note)),
                ));
            }
            Approval::Once => Self::Once,
            _ if !can_remember => Self::Once,
            Approval::Session => Self::Session { directories: false },
            Approval::Directory => Self::Session { directories: true },
            Approval::Always => Self::Always,
        };
        Ok(allowed)
    }

    /// The scope its rules are saved in; `None` for once.
    pub(crate) fn scope(&self, session_id: &str) -> Option<Scope> {
        match self {
            Self::Once => None,
            Self::Session { .. } => Some(Scope::Session(session_id.to_owned())),
            Self::Always => Some(Scope::Persistent),
        }
    }

    /// The decision and reason for the record, once `saved` (the rules'
    /// ids, or why they could not be saved) is known; `None` for once.
    pub(crate) fn granted(
        &self,
        saved: Option<Result<Vec<String>, gate::GateError>>,
    ) -> (CallDecision, String) {
        let decision = match self {
            Self::Once => CallDecision::AskAllowedOnce,
            Self::Session { .. } => CallDecision::AskAllowedSession,
            Self::Always => CallDecision::AskAllowedAlways,
        };
        let reason = match saved {
            None => "the person at the terminal allowed it once".to_owned(),
            Some(Ok(rules)) => format!(
                "the person at the terminal allowed it and saved rule {}",
                rules.join(", ")
            ),
            // They said yes to this call; only the memory of it failed, so
            // it runs and they will be asked again next time.
            Some(Err(e)) => format!(
                "the person at the terminal allowed it, but the rule could not be saved ({e}); \
                 it applies to this call only"
            ),
        };
        (decision, reason)
    }
}
