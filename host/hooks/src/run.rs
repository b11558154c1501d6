//! Running the hooks of an event: each matching hook's pins checked, then
//! the hook run contained, given Claude Code's JSON on stdin, and its
//! answer read; the answers folded into one [`Verdict`] that can only
//! narrow.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goat_command::{CommandRequest, Containment, Interrupt, Network, WorkspaceRules};
use goat_sandbox::{HookComponent, HookVerdict, Sandbox};
use serde_json::{Value, json};

use crate::answer::{Answer, read_answer};
use crate::event::Event;
use crate::matcher::matches;
use crate::pin;
use crate::registry::HookEntry;

/// The hooks of one session, and how they are contained.
#[derive(Clone)]
pub struct Hooks {
    pub(crate) entries: Vec<HookEntry>,
    /// The session's command containment, with the network closed.
    pub(crate) containment: Containment,
    /// Where component hooks run: the session's sandbox.
    sandbox: Option<Arc<Sandbox>>,
    /// The PATH hooks get: GOAT's absolute entries outside the workspace.
    path: String,
    /// Component hooks compiled, by the sha256 of their bytes.
    compiled: Arc<Mutex<HashMap<String, HookComponent>>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

/// The most a component hook's file may hold.
const MAX_COMPONENT_BYTES: u64 = 64 * 1024 * 1024;

/// A call about to run, as `pre_tool_use` hooks are told of it.
#[derive(Clone, Copy)]
pub struct PreToolUse<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The tool, by GOAT's name.
    pub tool: &'a str,
    /// Its arguments, as checked against its schema.
    pub tool_input: &'a Value,
    /// The call's id.
    pub tool_use_id: &'a str,
    /// The approval mode, by GOAT's name.
    pub mode: &'a str,
    /// Another name the tool matches by (an MCP tool's Claude Code name,
    /// `mcp__SERVER__TOOL`).
    pub alias: Option<&'a str>,
    /// A Pen tool's workspace path, resolved and absolute: given as
    /// `file_path` (over anything of that name in the arguments).
    pub file_path: Option<&'a str>,
    /// The rules the call is held to: what they hide is hidden from the
    /// hook too (`None`: all of the workspace is).
    pub rules: Option<&'a dyn WorkspaceRules>,
}

/// A call that ran, as `post_tool_use` hooks are told of it.
#[derive(Clone, Copy)]
pub struct PostToolUse<'a> {
    /// The call, as before it ran.
    pub call: PreToolUse<'a>,
    /// What it came to: `{status, result, files_changed}`.
    pub tool_response: &'a Value,
}

/// One hook's run, for the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookRun {
    /// The hook.
    pub name: String,
    /// The event it ran at.
    pub event: Event,
    /// What it answered.
    pub answer: Answer,
    /// How long it took (zero when it did not run).
    pub duration: Duration,
    /// Whether it ran (a suspended hook does not).
    pub ran: bool,
}

/// The hooks' answers to one call, folded: the first deny (or failure)
/// wins, then the first ask; an allow is only recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No hook objected.
    Go,
    /// `hook` asks the person, because of `reason`.
    Ask {
        /// The hook.
        hook: String,
        /// Its reason.
        reason: String,
    },
    /// `hook` denied the call, because of `reason`.
    Deny {
        /// The hook.
        hook: String,
        /// Its reason (or why it failed).
        reason: String,
    },
}

impl Verdict {
    /// The verdict of `runs`, in order.
    pub fn of(runs: &[HookRun]) -> Self {
        if let Some(run) = runs.iter().find(|r| {
            matches!(
                r.answer,
                Answer::Deny(_) | Answer::Halt(_) | Answer::Failed(_)
            )
        }) {
            let reason = match &run.answer {
                Answer::Failed(why) => format!("the hook failed, which denies: {why}"),
                other => other.reason().to_owned(),
            };
            return Self::Deny {
                hook: run.name.clone(),
                reason,
            };
        }
        runs.iter()
            .find_map(|r| match &r.answer {
                Answer::Ask(reason) => Some(Self::Ask {
                    hook: r.name.clone(),
                    reason: reason.clone(),
                }),
                _ => None,
            })
            .unwrap_or(Self::Go)
    }
}

/// The workspace as a policy hook sees it: what the call's rules let it
/// see (nothing without them), never writable.
pub(crate) struct ReadOnly<'a>(pub(crate) Option<&'a dyn WorkspaceRules>);

impl WorkspaceRules for ReadOnly<'_> {
    fn visible(&self, path: &str) -> bool {
        self.0.is_some_and(|rules| rules.visible(path))
    }

    fn writable_why(&self, _: &str) -> Result<(), String> {
        Err("a policy hook does not change the workspace".to_owned())
    }

    fn hides_anything(&self) -> bool {
        self.0.is_none_or(WorkspaceRules::hides_anything)
    }

    fn governs_below(&self, dir: &str) -> bool {
        self.0.is_some_and(|rules| rules.governs_below(dir))
    }

    fn is_protected_name(&self, name: &str) -> bool {
        self.0.is_some_and(|rules| rules.is_protected_name(name))
    }
}

impl Hooks {
    /// `entries`, contained as `containment`
    /// says, with the network closed whatever commands get.
    pub fn new(entries: Vec<HookEntry>, containment: Containment) -> Self {
        let path = std::env::var_os("PATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .filter(|dir| {
                        dir.is_absolute()
                            && !dir.starts_with(&containment.workspace)
                            && !dir
                                .canonicalize()
                                .is_ok_and(|real| real.starts_with(&containment.workspace))
                    })
                    .filter_map(|dir| dir.to_str().map(str::to_owned))
                    .collect::<Vec<_>>()
                    .join(":")
            })
            .unwrap_or_default();
        Self {
            path,
            entries,
            containment: Containment {
                network: Network::Closed,
                ..containment
            },
            sandbox: None,
            compiled: Arc::default(),
        }
    }

    /// Runs component hooks in `sandbox` (without one, a component hook
    /// fails, which denies).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Whether no hook is fired.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Runs every `pre_tool_use` hook that matches `call`, in the order
    /// they were added, and says what each answered. A hook that denies
    /// ends the run: the later ones are not asked. The workspace is
    /// read-only to them: what one writes is dropped.
    pub fn pre_tool_use(
        &self,
        call: &PreToolUse<'_>,
        interrupt: Option<&Interrupt>,
    ) -> Vec<HookRun> {
        let stdin = self.input(Event::PreToolUse, call, None);
        let mut runs = Vec::new();
        for hook in self.matching(Event::PreToolUse, call) {
            let rules = ReadOnly(call.rules);
            let (run, changes) = self.run_one(hook, stdin.as_bytes(), &rules, interrupt);
            drop_changes(changes);
            let denies = matches!(
                run.answer,
                Answer::Deny(_) | Answer::Halt(_) | Answer::Failed(_)
            );
            runs.push(run);
            if denies {
                break;
            }
        }
        runs
    }

    /// Runs every `post_tool_use` hook that matches the call, in order,
    /// each with the workspace writable as `rules` let the call write it.
    /// What each changed is given back with its run, for the caller to
    /// inspect and land (or drop) before the next hook runs, through
    /// `settle`; the next hook sees the workspace as the last one left it.
    pub fn post_tool_use(
        &self,
        call: &PostToolUse<'_>,
        rules: &dyn WorkspaceRules,
        interrupt: Option<&Interrupt>,
        settle: &mut dyn FnMut(&HookRun, Option<goat_command::Changes>),
    ) {
        let stdin = self.input(
            Event::PostToolUse,
            &call.call,
            Some(("tool_response", call.tool_response.clone())),
        );
        for hook in self.matching(Event::PostToolUse, &call.call) {
            let (run, changes) = self.run_one(hook, stdin.as_bytes(), rules, interrupt);
            settle(&run, changes);
        }
    }

    /// The hooks at `event` that match the call's tool, in the order
    /// they were added.
    fn matching<'s>(
        &'s self,
        event: Event,
        call: &'s PreToolUse<'s>,
    ) -> impl Iterator<Item = &'s HookEntry> {
        self.entries.iter().filter(move |h| {
            h.event == event
                && (matches(h.matcher.as_deref(), call.tool)
                    || call
                        .alias
                        .is_some_and(|alias| matches(h.matcher.as_deref(), alias)))
        })
    }

    /// Claude Code's stdin for `event` about `call`, with `extra`.
    fn input(&self, event: Event, call: &PreToolUse<'_>, extra: Option<(&str, Value)>) -> String {
        let workspace = &self.containment.workspace;
        let mut input = call.tool_input.clone();
        // Claude Code's file tools take an absolute `file_path`; GOAT's
        // take a workspace `path`. Both are given, `file_path` as GOAT
        // resolved `path` (never as the arguments said it).
        if let (Some(map), Some(path)) = (input.as_object_mut(), call.file_path) {
            map.insert("file_path".to_owned(), Value::String(path.to_owned()));
        }
        let mut stdin = json!({
            "session_id": call.session_id,
            "transcript_path": "",
            "cwd": workspace.display().to_string(),
            "permission_mode": permission_mode(call.mode),
            "hook_event_name": event.claude_name(),
            "tool_name": call.tool,
            "tool_input": input,
            "tool_use_id": call.tool_use_id,
        });
        if let (Some(map), Some((key, value))) = (stdin.as_object_mut(), extra) {
            map.insert(key.to_owned(), value);
        }
        stdin.to_string()
    }

    /// One hook: its pins checked, then run contained, held to `rules`;
    /// its run and what it changed (nothing when it did not run).
    pub(crate) fn run_one(
        &self,
        hook: &HookEntry,
        stdin: &[u8],
        rules: &dyn WorkspaceRules,
        interrupt: Option<&Interrupt>,
    ) -> (HookRun, Option<goat_command::Changes>) {
        let not_run = |why: String| {
            let run = HookRun {
                name: hook.name.clone(),
                event: hook.event,
                answer: Answer::Failed(why),
                duration: Duration::ZERO,
                ran: false,
            };
            (run, None)
        };
        // Where it runs from first: nothing in the workspace is read, not
        // even to hash it.
        if let Some(inside) = reaches_workspace(hook, &self.containment.workspace) {
            return not_run(format!(
                "the hook runs {}, which is inside the workspace, where the agent writes; GOAT \
                 never runs a hook from there",
                inside.display()
            ));
        }
        let now = pin::take(
            hook.event,
            hook.matcher.as_deref(),
            hook.runs(),
            hook.timeout_secs,
        );
        if let Some(why) = pin::changed(&hook.pins, &now) {
            return not_run(format!(
                "the hook is suspended: {why} since it was trusted; nothing of it ran (the \
                 person can look and trust it again: goat hooks trust {})",
                hook.name
            ));
        }
        if let Some(path) = &hook.component {
            let started = Instant::now();
            let answer = self.decide(hook, path, stdin);
            let run = HookRun {
                name: hook.name.clone(),
                event: hook.event,
                answer,
                duration: started.elapsed(),
                ran: true,
            };
            return (run, None);
        }
        let mut containment = self.containment.clone();
        containment
            .read_paths
            .extend(hook.pins.files.iter().map(|f| f.path.clone()));
        // Nothing of the workspace on the way to the program: a PATH of
        // absolute directories outside it, the private temporary directory
        // as the working directory (the JSON's `cwd` names the workspace),
        // and Python never importing from where it runs.
        let command = format!(
            "export PATH={} PYTHONSAFEPATH=1; cd \"${{TMPDIR:-/tmp}}\" || exit 97; exec {}",
            shell_quote(&self.path),
            hook.argv
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let started = Instant::now();
        let ran = goat_command::run(
            &containment,
            rules,
            &CommandRequest {
                command: &command,
                cwd: None,
                timeout: Duration::from_secs(hook.timeout_secs),
                proxy: None,
                interrupt,
                stdin: Some(stdin),
                stdout_apart: true,
            },
        );
        let (answer, changes) = match ran {
            Ok(outcome) => {
                let stdout = outcome.stdout.unwrap_or_else(|| goat_command::Captured {
                    text: String::new(),
                    total_bytes: 0,
                    cut: false,
                });
                // Claude Code adds a `UserPromptSubmit` hook's plain
                // stdout to the prompt: context, not an answer. GOAT adds
                // no hook's text to a prompt, and reads it as no objection.
                let context = hook.event == Event::UserPromptSubmit
                    && outcome.exit == goat_command::Exit::Code(0)
                    && !stdout.cut
                    && !stdout.text.trim_start().starts_with('{');
                let answer = if context {
                    Answer::NoOpinion
                } else {
                    read_answer(
                        outcome.exit,
                        hook.timeout_secs,
                        (&stdout.text, stdout.cut),
                        &outcome.output.text,
                    )
                };
                (answer, Some(outcome.changes))
            }
            Err(e) => (
                Answer::Failed(format!("it could not be run contained: {e}")),
                None,
            ),
        };
        let run = HookRun {
            name: hook.name.clone(),
            event: hook.event,
            answer,
            duration: started.elapsed(),
            ran: true,
        };
        (run, changes)
    }

    /// A component hook's answer: its bytes read once, checked against
    /// the pin, compiled (once per session), asked in a fresh store.
    fn decide(&self, hook: &HookEntry, path: &Path, event: &[u8]) -> Answer {
        let Some(sandbox) = &self.sandbox else {
            return Answer::Failed(
                "there is no sandbox here to run a component hook in".to_owned(),
            );
        };
        let bytes = match read_capped(path) {
            Ok(bytes) => bytes,
            Err(why) => return Answer::Failed(why),
        };
        // The bytes compiled are the bytes checked: the file may change
        // after the pin was taken.
        let sha256 = pin::bytes_hash(&bytes);
        if hook.pins.files.first().is_none_or(|f| f.sha256 != sha256) {
            return Answer::Failed(format!(
                "the hook is suspended: {} changed since it was trusted; nothing of it ran",
                path.display()
            ));
        }
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let component = match compiled.get(&sha256) {
            Some(component) => component.clone(),
            None => match sandbox.load_hook(&hook.name, &bytes) {
                Ok(component) => {
                    compiled.insert(sha256, component.clone());
                    component
                }
                Err(e) => return Answer::Failed(format!("it could not be loaded: {e}")),
            },
        };
        drop(compiled);
        let event = String::from_utf8_lossy(event);
        match sandbox.decide(&component, &event, Duration::from_secs(hook.timeout_secs)) {
            Ok((verdict, reason)) => match verdict {
                HookVerdict::None => Answer::NoOpinion,
                HookVerdict::Allow => Answer::Allow(crate::answer::short(&reason)),
                HookVerdict::Ask => Answer::Ask(crate::answer::short(&reason)),
                HookVerdict::Deny if reason.trim().is_empty() => {
                    Answer::Deny("it answered deny".to_owned())
                }
                HookVerdict::Deny => Answer::Deny(crate::answer::short(reason.trim())),
            },
            Err(failure) => Answer::Failed(failure.to_string()),
        }
    }

    /// The hooks' files, for a check that none is inside `workspace`.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.entries
            .iter()
            .flat_map(|h| h.pins.files.iter().map(|f| f.path.as_path()))
    }
}

/// The first path `hook` runs or names that lies in `workspace` (where the
/// agent writes): a pinned file; any absolute path in its arguments (each
/// word of an argument, and after a `=`), or in a pinned script's `#!`
/// line; each as written, through each link on the way, resolved, and by
/// the directory holding it and that directory's parent (where Python
/// looks for a virtual environment's `pyvenv.cfg`).
fn reaches_workspace(hook: &HookEntry, workspace: &Path) -> Option<std::path::PathBuf> {
    let inside = |p: &Path| {
        p.starts_with(workspace)
            || p.canonicalize()
                .is_ok_and(|real| real.starts_with(workspace))
    };
    let near = |p: &Path| {
        inside(p)
            || p.parent()
                .is_some_and(|dir| inside(dir) || dir.parent().is_some_and(&inside))
    };
    if let Some(file) = hook.pins.files.iter().find(|f| inside(&f.path)) {
        return Some(file.path.clone());
    }
    let shebangs: Vec<String> = hook
        .pins
        .files
        .iter()
        .flat_map(|f| pin::shebang_words(&f.path))
        .collect();
    let named: Vec<&Path> = hook
        .argv
        .iter()
        .chain(&shebangs)
        .flat_map(|arg| arg.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"')))
        .flat_map(|word| [Some(word), word.rsplit_once('=').map(|(_, v)| v)])
        .flatten()
        .map(Path::new)
        .chain(hook.component.as_deref())
        .filter(|p| p.is_absolute())
        .collect();
    for path in named {
        let mut hop = path.to_path_buf();
        for _ in 0..40 {
            if near(&hop) {
                return Some(hop);
            }
            match std::fs::read_link(&hop) {
                Ok(next) if next.is_absolute() => hop = next,
                Ok(next) => hop = hop.parent().map(|d| d.join(&next)).unwrap_or(next),
                Err(_) => break,
            }
        }
    }
    None
}

/// The file at `path`, at most [`MAX_COMPONENT_BYTES`].
fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = goat_state::fs::open_regular(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(format!(
            "{} is larger than {MAX_COMPONENT_BYTES} bytes",
            path.display()
        ));
    }
    Ok(bytes)
}

/// Drops what a hook changed: a view's layer goes; Landlock let a policy
/// hook write nothing.
pub fn drop_changes(changes: Option<goat_command::Changes>) {
    if let Some(goat_command::Changes::Pending(pending)) = changes {
        pending.discard();
    }
}

/// Claude Code's `permission_mode` for GOAT's approval mode.
pub(crate) fn permission_mode(mode: &str) -> &'static str {
    match mode {
        "accept-edits" => "acceptEdits",
        "read-only" => "plan",
        _ => "default",
    }
}

/// `arg` quoted for `sh`, as one word whatever it holds.
fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, answer: Answer) -> HookRun {
        HookRun {
            name: name.to_owned(),
            event: Event::PreToolUse,
            answer,
            duration: Duration::ZERO,
            ran: true,
        }
    }

    #[test]
    fn a_deny_or_a_failure_wins_then_an_ask_and_an_allow_is_nothing() {
        assert_eq!(Verdict::of(&[]), Verdict::Go);
        assert_eq!(
            Verdict::of(&[run("a", Answer::Allow("ok".to_owned()))]),
            Verdict::Go
        );
        assert_eq!(
            Verdict::of(&[
                run("a", Answer::Allow("ok".to_owned())),
                run("b", Answer::Ask("sure?".to_owned())),
                run("c", Answer::Failed("crashed".to_owned())),
            ]),
            Verdict::Deny {
                hook: "c".to_owned(),
                reason: "the hook failed, which denies: crashed".to_owned()
            }
        );
        assert_eq!(
            Verdict::of(&[
                run("a", Answer::NoOpinion),
                run("b", Answer::Ask("sure?".to_owned())),
            ]),
            Verdict::Ask {
                hook: "b".to_owned(),
                reason: "sure?".to_owned()
            }
        );
    }

    #[test]
    fn an_argument_is_one_word_whatever_it_holds() {
        assert_eq!(shell_quote("it's $HOME"), r"'it'\''s $HOME'");
    }
}
