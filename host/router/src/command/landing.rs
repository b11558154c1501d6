//! A command's change set after a view: inspected, put to the person when
//! it removes or replaces much, written to the store, then landed whole
//! or not at all (ADR-0077).

use serde_json::Value;

use super::{
    AppToolRouter, Approval, ApprovalRequest, BoundaryRules, ChangesStored, FileChange, Guard,
    Journal, MAX_LISTED, Node, PathChange, Pending, RUN_COMMAND, Refusal, RefusedBy, file_change,
};

impl AppToolRouter {
    /// A view's change set: inspected, put to the person when it removes
    /// or replaces much, written to the store, then landed (all or none).
    pub(crate) fn settle(
        &mut self,
        mut pending: Pending,
        command: &str,
        args: &Value,
        rules: &BoundaryRules,
    ) -> Settled {
        if pending.set.is_empty() {
            return Settled::default();
        }
        let found = pending.inspect(rules);
        if !found.refused.is_empty() {
            let list: Vec<String> = found
                .refused
                .iter()
                .take(MAX_LISTED)
                .map(|(path, why)| format!("  {}: {why}", goat_gate::quoted(path)))
                .collect();
            let more = found.refused.len().saturating_sub(MAX_LISTED);
            pending.discard();
            // Each refused path, named at its source: the whole set is
            // refused for any of them.
            let refusals = found
                .refused
                .iter()
                .map(|(path, why)| Refusal::new(RefusedBy::ChangeSet, Some(path.clone()), why))
                .collect();
            return Settled {
                refusals,
                note: format!(
                    "\n[goat: none of this command's changes to the workspace were kept: GOAT \
                     refuses the whole set when any part of it is refused, so nothing is half \
                     applied. Refused:\n{}{}\nThe workspace is as it was before the command; \
                     run it again without those changes.]\n",
                    list.join("\n"),
                    if more > 0 {
                        format!("\n  ... and {more} more")
                    } else {
                        String::new()
                    }
                ),
                refused: true,
                changes: Vec::new(),
                stored: ChangesStored::WithOutcome,
                half_landed: false,
            };
        }
        let mut note = String::new();
        if !found.left_out.is_empty() {
            let list: Vec<String> = found
                .left_out
                .iter()
                .take(MAX_LISTED)
                .map(|(path, what)| format!("{} ({what})", goat_gate::quoted(path)))
                .collect();
            note.push_str(&format!(
                "\n[goat: left out, not landed: {}]",
                list.join(", ")
            ));
        }
        let tracked = goat_command::gitindex::tracked(&self.config().workspace);
        let guard = Guard::weigh(&pending.set, &|p| tracked.contains(p));
        if guard.needs_asking() {
            match self.ask_change_set(command, args, &guard, &pending.set.changes) {
                Some(true) => {}
                Some(false) => {
                    pending.discard();
                    return Settled {
                        refusals: vec![Refusal::new(
                            RefusedBy::Person,
                            None,
                            format!(
                                "the person did not let this command's changes land ({})",
                                guard.summary()
                            ),
                        )],
                        note: format!(
                            "\n[goat: the person did not let this command's changes land ({}); \
                             the workspace is as it was before the command.]\n",
                            guard.summary()
                        ),
                        refused: true,
                        changes: Vec::new(),
                        stored: ChangesStored::WithOutcome,
                        half_landed: false,
                    };
                }
                None => note.push_str(&format!(
                    "\n[goat: landed without asking, as no one is there to ask: {}]",
                    guard.summary()
                )),
            }
        }
        let changes: Vec<FileChange> = pending.set.changes.iter().filter_map(file_change).collect();
        let unkept = pending.set.unkept;
        // Written first, so a crash while landing is on record; a set that
        // cannot be recorded does not land.
        let journaled = match self.journal(&changes) {
            Journal::Written => true,
            Journal::None => false,
            Journal::Failed(e) => {
                pending.discard();
                return Settled {
                    refusals: vec![Refusal::new(
                        RefusedBy::ChangeSet,
                        None,
                        format!("GOAT could not record the changes before landing them ({e})"),
                    )],
                    note: format!(
                        "\n[goat: none of this command's changes to the workspace were kept: \
                         GOAT could not record them before landing ({e}), and lands nothing it \
                         cannot undo. The workspace is as it was before the command.]\n"
                    ),
                    refused: true,
                    changes: Vec::new(),
                    stored: ChangesStored::WithOutcome,
                    half_landed: false,
                };
            }
        };
        match pending.land() {
            Ok(_) => {
                if journaled {
                    self.mark_landed();
                }
                note.push_str(&format!(
                    "\n[goat: landed in the workspace: {}",
                    guard.summary()
                ));
                if unkept > 0 {
                    note.push_str(&format!(
                        "; {unkept} changed or removed files were too large to keep a copy of, \
                         so goat undo cannot bring them back"
                    ));
                }
                note.push_str("]\n");
                Settled {
                    note,
                    refused: false,
                    changes,
                    // Written before landing, and marked landed: listed
                    // with the outcome (files changed), not written again.
                    stored: if journaled {
                        ChangesStored::BeforeLanding
                    } else {
                        ChangesStored::WithOutcome
                    },
                    refusals: Vec::new(),
                    half_landed: false,
                }
            }
            Err(e) => {
                // Taken back: the record goes. Not taken back: it stays,
                // so `goat sessions show` says which paths hold what.
                if journaled && e.taken_back {
                    self.unjournal();
                }
                Settled {
                    note: format!("\n[goat: this command's changes did not land: {e}]\n"),
                    refused: true,
                    changes: Vec::new(),
                    stored: ChangesStored::WithOutcome,
                    refusals: vec![Refusal::new(
                        RefusedBy::ChangeSet,
                        None,
                        format!("this command's changes did not land: {e}"),
                    )],
                    half_landed: !e.taken_back,
                }
            }
        }
    }

    /// Puts a change set that removes or replaces much to the person.
    /// `None`: no one is there to ask.
    fn ask_change_set(
        &mut self,
        command: &str,
        args: &Value,
        guard: &Guard,
        changes: &[PathChange],
    ) -> Option<bool> {
        let question = format!(
            "{RUN_COMMAND} '{command}' ended; its changes would remove or replace existing \
             files: {}; let them land in the workspace?",
            guard.summary()
        );
        let details: Vec<String> = changes.iter().map(describe).collect();
        let workspace = self.config().workspace.clone();
        let answer = self.approve_with(&ApprovalRequest {
            tool: RUN_COMMAND,
            prompt: &question,
            paths: &[],
            arguments: args,
            workspace: &workspace,
            can_remember: false,
            directories: &[],
            details: &details,
        })?;
        Some(!matches!(answer, Approval::Deny | Approval::DenyWith(_)))
    }
}

/// What settling a change set came to.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// Lines for the result.
    pub(crate) note: String,
    /// Whether nothing landed because something was refused (or the
    /// person said no, or the landing failed).
    pub(crate) refused: bool,
    /// The changes that landed, for the call's outcome.
    pub(crate) changes: Vec<FileChange>,
    /// Whether they were written before landing.
    pub(crate) stored: ChangesStored,
    /// What refused the set (empty when it landed).
    pub(crate) refusals: Vec<Refusal>,
    /// The landing failed part-way and its steps could not be taken back:
    /// some paths hold what the set left, the journal says which.
    pub(crate) half_landed: bool,
}

/// One line of the change-set listing the person can view.
fn describe(change: &PathChange) -> String {
    let what = match (&change.before, &change.after) {
        (Node::Absent, Node::Dir(_)) => "new directory",
        (Node::Absent, _) => "created",
        (Node::Dir(_), Node::Absent) => "directory removed",
        (_, Node::Absent) => "removed",
        (Node::Dir(_), Node::Dir(_)) => "permissions changed",
        _ => "changed",
    };
    let size = match &change.before {
        Node::File { len, .. } => format!(" ({})", goat_command::inspect::human_bytes(*len)),
        _ => String::new(),
    };
    format!("{what}: {}{size}", goat_gate::quoted(&change.path))
}
