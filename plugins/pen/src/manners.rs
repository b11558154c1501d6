//! ripgrep's manners for the walking tools: which entries a walk passes
//! over unless the call asks for everything.
//!
//! By default a walk skips what the project itself says is not its own
//! (`.ignore`, `.gitignore` in every directory, `.git/info/exclude` at the
//! workspace root) and hidden entries (names starting with `.`), and
//! counts both so the result can say what it left out. Without this a
//! search in a repository with `node_modules/` or `target/` returns mostly
//! vendored or generated text and fills a small context window with it.
//!
//! The gitignore dialect (nested files, `!negation`, `dir/`-only patterns,
//! anchoring, `**`) is the `ignore` crate's, the one ripgrep uses, fed line
//! by line (`GitignoreBuilder::add_line`): that crate never touches the
//! filesystem here, the files are read through WASI like any other.
//! Precedence is ripgrep's: a match in any `.ignore` wins over any
//! `.gitignore`, which wins over `.git/info/exclude`; within one kind the
//! deepest directory's file decides.
//!
//! Two differences from ripgrep, both because the guest sees only the
//! workspace: the person's global git excludes file (`core.excludesFile`,
//! `~/.config/git/ignore`) lies outside it and cannot be read, and
//! `.gitignore` files are honoured whether or not the workspace is a git
//! repository (ripgrep's `--no-require-git`).

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::fs::{Kind, Workspace};
use crate::path::WorkPath;

/// Ignore files read in every directory a walk enters, strongest first.
pub const IGNORE_FILES: [&str; 2] = [".ignore", ".gitignore"];

/// The repository-wide exclude file, read once, relative to the workspace root.
pub const GIT_EXCLUDE: &str = ".git/info/exclude";

/// Largest ignore file read: real ones are a few KiB; a bigger one is not
/// an ignore file anyone wrote by hand, and parsing it would spend the
/// call's time. A larger file is passed over as if absent.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// Whether a walk honours ignore files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignores {
    /// Skip what `.ignore`, `.gitignore` and `.git/info/exclude` name.
    Respect,
    /// Walk everything (`include_ignored: true`).
    Include,
}

/// Whether a walk shows entries whose names start with `.`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hidden {
    /// Skip them (the default).
    Skip,
    /// Show them: the call asked for everything, or its pattern names a
    /// hidden entry (`.github/**`, `**/.env`).
    Show,
}

/// What a walk passes over. Version-control directories (`.git`, ...) are
/// never entered whatever these say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Manners {
    /// Ignore files.
    pub ignores: Ignores,
    /// Hidden entries.
    pub hidden: Hidden,
}

impl Manners {
    /// Everything is walked: no ignore files, hidden entries shown.
    pub const ALL: Self = Self {
        ignores: Ignores::Include,
        hidden: Hidden::Show,
    };

    /// The default, or [`Manners::ALL`] when the call passed
    /// `include_ignored: true`.
    pub fn from_include_ignored(include_ignored: bool) -> Self {
        if include_ignored {
            Self::ALL
        } else {
            Self {
                ignores: Ignores::Respect,
                hidden: Hidden::Skip,
            }
        }
    }

    /// Shows hidden entries when `pattern` (a glob) names one: a component
    /// starting with `.` is the person asking for it explicitly.
    pub fn showing_hidden_named_in(mut self, pattern: &str) -> Self {
        if pattern.split('/').any(|part| part.starts_with('.')) {
            self.hidden = Hidden::Show;
        }
        self
    }
}

/// Which ignore file a matcher came from; the order is the precedence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Ignore,
    Gitignore,
    Exclude,
}

/// One parsed ignore file, active for the directory it sits in (walk
/// depth `depth`) and everything below.
struct Layer {
    depth: usize,
    source: Source,
    rules: Gitignore,
}

/// The ignore files in force at the walk's current position.
pub(crate) struct IgnoreStack {
    layers: Vec<Layer>,
}

/// Why a walk passed over an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    Ignored,
    Hidden,
}

impl IgnoreStack {
    /// The rules in force at `base` before its own entries are read: the
    /// workspace's `.git/info/exclude` and the ignore files of every
    /// directory above `base`. Nothing when ignores are not respected.
    pub(crate) fn at(ws: &Workspace, base: &WorkPath, manners: Manners) -> Self {
        let mut stack = Self { layers: Vec::new() };
        if manners.ignores == Ignores::Include {
            return stack;
        }
        let root = WorkPath::root();
        if let Some(rules) = read_rules(ws, &root, &root.join(".git/info/exclude")) {
            stack.layers.push(Layer {
                depth: 0,
                source: Source::Exclude,
                rules,
            });
        }
        let mut dir = WorkPath::root();
        let parts: Vec<&str> = if base.is_root() {
            Vec::new()
        } else {
            base.as_str().split('/').collect()
        };
        // The directories above base; base's own files are read when the
        // walk lists it, like any directory's.
        for part in parts {
            stack.push_dir(ws, &dir, 0, None);
            dir = dir.join(part);
        }
        stack
    }

    /// Reads the ignore files of directory `dir` (walk depth `depth`),
    /// when `names` (its listing, if known) has them.
    pub(crate) fn push_dir(
        &mut self,
        ws: &Workspace,
        dir: &WorkPath,
        depth: usize,
        names: Option<&[(String, Kind)]>,
    ) {
        for (name, source) in IGNORE_FILES
            .into_iter()
            .zip([Source::Ignore, Source::Gitignore])
        {
            let present = names.is_none_or(|entries| {
                entries
                    .binary_search_by(|(n, _)| n.as_str().cmp(name))
                    .is_ok_and(|i| entries[i].1 == Kind::File)
            });
            if !present {
                continue;
            }
            if let Some(rules) = read_rules(ws, dir, &dir.join(name)) {
                self.layers.push(Layer {
                    depth,
                    source,
                    rules,
                });
            }
        }
    }

    /// Drops the layers of directories the walk has left: an entry at
    /// depth `depth` lies under directories of depth below it only.
    pub(crate) fn leave_to(&mut self, depth: usize) {
        while self
            .layers
            .last()
            .is_some_and(|l| l.depth >= depth && l.source != Source::Exclude)
        {
            self.layers.pop();
        }
    }

    /// Whether `path` is ignored: the strongest kind of file with a
    /// matching rule decides, the deepest file of that kind first, and a
    /// `!negation` that matches keeps the entry.
    pub(crate) fn ignored(&self, path: &WorkPath, is_dir: bool) -> bool {
        for source in [Source::Ignore, Source::Gitignore, Source::Exclude] {
            for layer in self.layers.iter().rev().filter(|l| l.source == source) {
                match layer.rules.matched(path.as_str(), is_dir) {
                    Match::None => {}
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                }
            }
        }
        false
    }
}

/// Whether a walk with `manners` passes over `name` (in a directory whose
/// ignore files `stack` holds), and why.
pub(crate) fn skip(
    stack: &IgnoreStack,
    manners: Manners,
    path: &WorkPath,
    name: &str,
    kind: Kind,
) -> Option<Skip> {
    if manners.hidden == Hidden::Skip && name.starts_with('.') {
        return Some(Skip::Hidden);
    }
    if manners.ignores == Ignores::Respect && stack.ignored(path, kind == Kind::Dir) {
        return Some(Skip::Ignored);
    }
    None
}

/// Parses ignore file `file` for directory `dir`; `None` when it is
/// absent, unreadable, too large or not text. Lines that are not valid
/// patterns are passed over, as git does.
fn read_rules(ws: &Workspace, dir: &WorkPath, file: &WorkPath) -> Option<Gitignore> {
    let bytes = ws.read_file(file, MAX_IGNORE_FILE_BYTES).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(if dir.is_root() { "" } else { dir.as_str() });
    for line in text.lines() {
        // An invalid glob leaves the rest of the file in force.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok()
}

/// "[not shown: 3 entries ignored (.gitignore, .ignore, .git/info/exclude)
/// and 2 hidden; include_ignored: true shows them]", or `None` when the walk
/// passed over nothing.
pub fn skipped_note(ignored: usize, hidden: usize) -> Option<String> {
    let entries = |n: usize| {
        if n == 1 {
            "1 entry".to_owned()
        } else {
            format!("{n} entries")
        }
    };
    let what = match (ignored, hidden) {
        (0, 0) => return None,
        (i, 0) => format!(
            "{} ignored (.gitignore, .ignore, {GIT_EXCLUDE})",
            entries(i)
        ),
        (0, h) => format!("{} hidden (name starts with '.')", entries(h)),
        (i, h) => format!(
            "{} ignored (.gitignore, .ignore, {GIT_EXCLUDE}) and {h} hidden (name starts with '.')",
            entries(i)
        ),
    };
    Some(format!(
        "[not shown: {what}; pass include_ignored: true to include them]"
    ))
}

// Which entries the rules pass over depends on files read through WASI, so
// that is tested through the real tools (tests/all/pen_tools/manners.rs).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_note_counts_each_kind_in_number() {
        assert_eq!(skipped_note(0, 0), None);
        assert_eq!(
            skipped_note(1, 0).as_deref(),
            Some(
                "[not shown: 1 entry ignored (.gitignore, .ignore, .git/info/exclude); pass \
                 include_ignored: true to include them]"
            )
        );
        assert_eq!(
            skipped_note(0, 2).as_deref(),
            Some(
                "[not shown: 2 entries hidden (name starts with '.'); pass include_ignored: true \
                 to include them]"
            )
        );
    }

    #[test]
    fn a_pattern_naming_a_dot_component_shows_hidden_entries() {
        let default = Manners::from_include_ignored(false);
        assert_eq!(
            default.showing_hidden_named_in("**/*.rs").hidden,
            Hidden::Skip
        );
        assert_eq!(default.showing_hidden_named_in("*.rs").hidden, Hidden::Skip);
        assert_eq!(
            default.showing_hidden_named_in(".github/**").hidden,
            Hidden::Show
        );
        assert_eq!(
            default.showing_hidden_named_in("**/.env").hidden,
            Hidden::Show
        );
        assert_eq!(Manners::from_include_ignored(true), Manners::ALL);
    }
}
