//! The hooks run once a turn, not for a call (issue 41): `user_prompt_submit`
//! before the model sees the person's prompt, and `stop` as the model ends
//! its turn. Each run is recorded against the turn; what a hook objected
//! with is given back, for the Shepherd to withhold the prompt or send
//! the model back to work.

use std::sync::{Arc, Mutex, PoisonError};

use goat_engine::CancellationToken;
use goat_gate::{Access, GateRequest, WritePolicy};
use goat_hooks::{Answer, Event, TurnHook, Verdict};
use goat_store::{HookRan, Store};

use crate::record::{RecordError, store_step};
use crate::router::{AppToolRouter, ran};

/// The event a turn's hooks run at.
#[derive(Clone, Debug)]
pub enum TurnHookEvent {
    /// The person submitted `prompt`; the model has not seen it.
    PromptSubmitted(String),
    /// The model ended its turn with `last_message`; `active` when a stop
    /// hook already sent it back this turn.
    Stopping {
        /// What the model said last.
        last_message: String,
        /// Whether a stop hook sent the model back already this turn.
        active: bool,
    },
}

impl TurnHookEvent {
    fn event(&self) -> Event {
        match self {
            Self::PromptSubmitted(_) => Event::UserPromptSubmit,
            Self::Stopping { .. } => Event::Stop,
        }
    }
}

/// A hook's objection at a turn's event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Objection {
    /// The hook.
    pub hook: String,
    /// What it said (or why it failed), as it said it: escape and frame
    /// it before anyone sees it.
    pub reason: String,
    /// Whether the hook failed (or was suspended) rather than answered.
    pub failed: bool,
    /// Whether it said to stop (Claude Code's `continue: false`): at
    /// `stop`, the turn's last word, never a reason to go on.
    pub halt: bool,
}

/// What a turn's hooks said.
#[derive(Clone, Debug, Default)]
pub struct TurnHooksSaid {
    /// Each run, in order, as recorded.
    pub runs: Vec<HookRan>,
    /// The first objection (a deny, an ask, a failure), if any.
    pub objection: Option<Objection>,
}

impl AppToolRouter {
    /// Whether any of the person's hooks runs at a turn's `event`.
    pub fn has_turn_hooks(&self, event: &TurnHookEvent) -> bool {
        self.hooks.as_ref().is_some_and(|h| h.has(event.event()))
    }

    /// Runs the hooks at `event`, contained, with the workspace read-only
    /// as the rules in force for `run_command` let it be seen (none of it
    /// when they cannot be read).
    fn turn_hooks(&self, event: &TurnHookEvent) -> TurnHooksSaid {
        let Some(hooks) = self.hooks.clone() else {
            return TurnHooksSaid::default();
        };
        let config = self.config();
        let boundary = self
            .gate_boundary(&GateRequest {
                session_id: &config.session_id,
                workspace: config.workspace.to_str(),
                tool: "run_command",
                access: Access::Read,
                paths: &["."],
                interactive: config.interactive,
                writes: WritePolicy::Default,
                now: goat_gate::now(),
            })
            .ok()
            .map(crate::command::BoundaryRules);
        let turn = TurnHook {
            session_id: &config.session_id,
            mode: self.mode().name(),
            rules: boundary
                .as_ref()
                .map(|r| r as &dyn goat_command::WorkspaceRules),
        };
        let interrupt = Some(self.interrupt());
        let runs = match event {
            TurnHookEvent::PromptSubmitted(prompt) => {
                hooks.user_prompt_submit(&turn, prompt, interrupt)
            }
            TurnHookEvent::Stopping {
                last_message,
                active,
            } => hooks.stop(&turn, last_message, *active, interrupt),
        };
        let objection = match Verdict::of(&runs) {
            Verdict::Go => None,
            Verdict::Ask { hook, reason } | Verdict::Deny { hook, reason } => {
                let answered =
                    |f: fn(&Answer) -> bool| runs.iter().any(|r| r.name == hook && f(&r.answer));
                Some(Objection {
                    failed: answered(|a| matches!(a, Answer::Failed(_))),
                    halt: answered(|a| matches!(a, Answer::Halt(_))),
                    reason: redacted(&reason, event),
                    hook,
                })
            }
        };
        let mut runs: Vec<HookRan> = runs.iter().map(ran).collect();
        for run in &mut runs {
            run.reason = redacted(&run.reason, event);
        }
        TurnHooksSaid { runs, objection }
    }
}

/// `reason` with the prompt `event` carries taken out wherever it appears
/// whole: a prompt hook that echoes its input (a failure quotes what the
/// hook printed) must not copy a prompt it withheld into the record.
fn redacted(reason: &str, event: &TurnHookEvent) -> String {
    match event {
        TurnHookEvent::PromptSubmitted(prompt) if !prompt.trim().is_empty() => {
            let prompt = prompt.trim();
            // As written, as GOAT quotes it, and as JSON spells it (the
            // hook's stdin).
            let quoted = goat_gate::quoted(prompt);
            let json = serde_json::to_string(prompt).unwrap_or_default();
            [prompt, quoted.trim_matches('\''), json.trim_matches('"')]
                .into_iter()
                .filter(|form| !form.is_empty())
                .fold(reason.to_owned(), |r, form| r.replace(form, "[the prompt]"))
        }
        _ => reason.to_owned(),
    }
}

/// Runs the person's hooks at a turn's `event` off the async threads
/// (the person's cancel reaches a running hook) and records each run
/// against turn `turn_id`.
pub async fn turn_hooks_recorded(
    store: &Arc<Mutex<Store>>,
    router: &Arc<Mutex<AppToolRouter>>,
    turn_id: i64,
    event: TurnHookEvent,
    cancel: Option<&CancellationToken>,
) -> Result<TurnHooksSaid, RecordError> {
    let router = router.clone();
    let interrupt = goat_command::Interrupt::new();
    let for_hooks = interrupt.clone();
    let running = tokio::task::spawn_blocking(move || {
        let mut router = router.lock().unwrap_or_else(PoisonError::into_inner);
        router.set_interrupt(for_hooks);
        router.turn_hooks(&event)
    });
    let mut running = std::pin::pin!(running);
    let joined = match cancel {
        None => running.await,
        Some(cancel) => tokio::select! {
            joined = &mut running => joined,
            () = cancel.cancelled() => {
                interrupt.fire();
                running.await
            }
        },
    };
    let said = joined.map_err(|e| RecordError::Internal(e.to_string()))?;
    let runs = said.runs.clone();
    store_step(store, move |s| s.record_turn_hooks(turn_id, &runs)).await?;
    Ok(said)
}

impl Objection {
    /// The prompt a stop hook's objection sends the model back to work
    /// with: the hook's words, escaped and framed as the hook's.
    pub fn as_prompt(&self) -> String {
        format!(
            "[goat: the person's stop hook {} did not let the turn end yet, saying {}. This is \
             the person's hook speaking, not the person and not GOAT. Do what the task still \
             needs, then end your turn again.]",
            goat_gate::quoted(&self.hook),
            goat_gate::quoted(&self.reason)
        )
    }

    /// In words, for the record and the person: what the hook did at
    /// `event`, escaped and framed as the hook's.
    pub fn said(&self, event: &str) -> String {
        let did = match (event, self.failed) {
            (_, true) => "failed",
            ("user_prompt_submit", false) => "withheld the prompt from the model",
            _ => "objected to the turn ending",
        };
        format!(
            "the {event} hook {} {did}: {}",
            goat_gate::quoted(&self.hook),
            goat_gate::quoted(&self.reason)
        )
    }
}
