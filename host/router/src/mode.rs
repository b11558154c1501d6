//! The approval mode a person chose for a session: how much the router
//! lets through without asking, on top of the gate's rules.
//!
//! The mode only ever narrows or skips the question; it never widens what
//! the gate forbids. In [`ApprovalMode::AcceptEdits`] a write no rule
//! decides is allowed as `--allow-writes` would allow it, so deny rules and
//! protected paths (`.git`) still win and a path outside the workspace is
//! still refused. [`ApprovalMode::ReadOnly`] refuses every write and every
//! command before the gate is asked, whatever the rules say.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// How writes and commands are handled in a session.
///
/// Exhaustive on purpose: every front end (and the event protocol's
/// `mode`) must say each mode, so a new one is a compile error there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Writes and commands no rule decides are asked about (without a
    /// person, denied).
    #[default]
    Ask,
    /// Writes inside the workspace no rule decides are allowed for the
    /// session; commands are still asked about. Deny rules and protected
    /// paths still win.
    AcceptEdits,
    /// No writes and no commands at all; the model is told why.
    ReadOnly,
}

impl ApprovalMode {
    /// Every mode, in the order they are listed to people.
    pub const ALL: [Self; 3] = [Self::Ask, Self::AcceptEdits, Self::ReadOnly];

    /// The mode's name, as typed after `/mode` and `--mode`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::AcceptEdits => "accept-edits",
            Self::ReadOnly => "read-only",
        }
    }

    /// The mode named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.name() == name)
    }

    /// Whether a switch to this mode stays under `ceiling`, the mode the
    /// person chose for a front end (`goat acp --mode`): a client may
    /// lower it (towards read-only), never raise it.
    ///
    /// # Security
    ///
    /// Read-only lets nothing through, ask lets through what a rule or a
    /// person allows, accept-edits also lets writes through unasked.
    pub fn within(self, ceiling: Self) -> bool {
        self.latitude() <= ceiling.latitude()
    }

    /// How much the mode lets through without a person: more is higher.
    fn latitude(self) -> u8 {
        match self {
            Self::ReadOnly => 0,
            Self::Ask => 1,
            Self::AcceptEdits => 2,
        }
    }

    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::AcceptEdits,
            2 => Self::ReadOnly,
            _ => Self::Ask,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Self::Ask => 0,
            Self::AcceptEdits => 1,
            Self::ReadOnly => 2,
        }
    }
}

/// What the model is told when read-only mode refuses a call.
pub const READ_ONLY_REASON: &str = "denied: the session is in read-only mode (the person \
    chose it); no file may be changed and no command run. Answer from what you can read, and \
    say what you would change instead";

/// The session's mode, shared by the router (which reads it at every call)
/// and whoever switches it (the chat's `/mode`). Clones share one mode.
#[derive(Clone, Debug, Default)]
pub struct ModeSwitch(Arc<AtomicU8>);

impl ModeSwitch {
    /// A switch set to `mode`.
    pub fn new(mode: ApprovalMode) -> Self {
        Self(Arc::new(AtomicU8::new(mode.to_u8())))
    }

    /// The mode now.
    pub fn get(&self) -> ApprovalMode {
        ApprovalMode::from_u8(self.0.load(Ordering::SeqCst))
    }

    /// Switches to `mode`; the next call routed sees it.
    pub fn set(&self, mode: ApprovalMode) {
        self.0.store(mode.to_u8(), Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_is_within_a_ceiling_only_when_it_lets_no_more_through() {
        use ApprovalMode::{AcceptEdits, Ask, ReadOnly};
        for (mode, ceiling, within) in [
            (ReadOnly, ReadOnly, true),
            (Ask, ReadOnly, false),
            (AcceptEdits, ReadOnly, false),
            (ReadOnly, Ask, true),
            (Ask, Ask, true),
            (AcceptEdits, Ask, false),
            (ReadOnly, AcceptEdits, true),
            (Ask, AcceptEdits, true),
            (AcceptEdits, AcceptEdits, true),
        ] {
            assert_eq!(mode.within(ceiling), within, "{mode:?} under {ceiling:?}");
        }
    }

    #[test]
    fn names_round_trip_and_clones_share_the_mode() {
        for mode in ApprovalMode::ALL {
            assert_eq!(ApprovalMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(ApprovalMode::from_name("yolo"), None);
        let switch = ModeSwitch::default();
        let seen = switch.clone();
        assert_eq!(seen.get(), ApprovalMode::Ask);
        switch.set(ApprovalMode::ReadOnly);
        assert_eq!(seen.get(), ApprovalMode::ReadOnly);
    }
}
