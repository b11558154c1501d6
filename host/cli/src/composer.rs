//! The chat's composer: the line editor the prompt is typed into at a
//! terminal (rustyline), with its history file.
//!
//! What it adds to a plain line: editing and Up/Down through earlier
//! prompts (kept in `chat-history` beside the store, mode 0600, never in
//! the workspace), a paste arriving as one prompt however many lines it
//! has (bracketed paste), Alt-Enter for a new line inside a prompt, and Tab
//! completing slash commands.
//!
//! # Security
//!
//! The composer reads the terminal only while the chat waits for a prompt,
//! from the console's one reader thread: it never competes with an
//! approval question or a pager for keys (see [`crate::terminal`]).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::config::{Config, EditMode};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Cmd, Editor, EventHandler, KeyCode, KeyEvent, Modifiers};

use crate::note;
use crate::terminal::Input;

/// The history file's name, beside the store.
pub const HISTORY_FILE: &str = "chat-history";

/// Prompts kept in the history file: enough for weeks of work, small
/// enough (at most a few megabytes) to load at every start.
const MAX_HISTORY: usize = 2000;

/// The history file's permissions: prompts can hold secrets pasted in.
const HISTORY_MODE: u32 = 0o600;

/// What the composer needs to be set up.
#[derive(Clone, Debug)]
pub struct ComposerConfig {
    /// The history file; `None` keeps history for this chat only.
    pub history: Option<PathBuf>,
    /// The slash commands Tab completes, each with its leading `/`.
    pub commands: Vec<String>,
}

/// The history file for the store at `store_path`: beside it, in GOAT's
/// state directory (which is never inside a workspace).
pub fn history_path(store_path: &Path) -> Option<PathBuf> {
    store_path.parent().map(|dir| dir.join(HISTORY_FILE))
}

/// Tab completion of slash commands; the rest of rustyline's helper hooks
/// are left as they are.
struct SlashHelper {
    commands: Vec<String>,
}

impl Completer for SlashHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let typed = line.get(..pos).unwrap_or(line);
        Ok((0, complete_command(&self.commands, typed)))
    }
}

/// The commands `typed` (the line up to the cursor) can complete to: only
/// while it is one `/word` and nothing else.
fn complete_command(commands: &[String], typed: &str) -> Vec<Pair> {
    if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    commands
        .iter()
        .filter(|name| name.starts_with(typed))
        .map(|name| Pair {
            display: name.clone(),
            replacement: format!("{name} "),
        })
        .collect()
}

impl Hinter for SlashHelper {
    type Hint = String;
}
impl Highlighter for SlashHelper {}
impl Validator for SlashHelper {}
impl rustyline::Helper for SlashHelper {}

/// The line editor with its history.
pub struct Composer {
    editor: Editor<SlashHelper, DefaultHistory>,
    history: Option<PathBuf>,
}

impl Composer {
    /// Sets up the editor and loads the history file, creating it (mode
    /// 0600) if it is not there.
    pub fn new(config: ComposerConfig) -> rustyline::Result<Self> {
        let settings = Config::builder()
            .edit_mode(EditMode::Emacs)
            .auto_add_history(false)
            .history_ignore_space(true)
            .max_history_size(MAX_HISTORY)?
            .bracketed_paste(true)
            .build();
        let mut editor = Editor::with_config(settings)?;
        editor.set_helper(Some(SlashHelper {
            commands: config.commands,
        }));
        // Alt-Enter (Esc then Enter at most terminals) starts a new line
        // in the same prompt.
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        let history = config.history.filter(|path| match prepare_history(path) {
            Ok(()) => true,
            Err(e) => {
                note(format_args!(
                    "history is kept for this chat only: cannot use {} ({e})",
                    path.display()
                ));
                false
            }
        });
        if let Some(path) = &history
            && let Err(e) = editor.load_history(path)
        {
            note(format_args!(
                "earlier prompts could not be read from {} ({e}); starting without them",
                path.display()
            ));
        }
        Ok(Self { editor, history })
    }

    /// Reads one prompt after showing `prompt`: a line (which may hold
    /// newlines, from a paste or Alt-Enter), end of input (Ctrl-D), or
    /// Ctrl-C.
    pub fn read(&mut self, prompt: &str) -> Input {
        match self.editor.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    self.remember(&line);
                }
                Input::Line(line)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupt,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(e) => {
                note(format_args!("cannot read the terminal ({e})"));
                Input::Eof
            }
        }
    }

    /// Adds `line` to the history and appends it to the file, so a chat
    /// that ends abruptly still keeps what was typed.
    fn remember(&mut self, line: &str) {
        if !matches!(self.editor.add_history_entry(line), Ok(true)) {
            return;
        }
        if let Some(path) = &self.history
            && let Err(e) = self.editor.append_history(path)
        {
            note(format_args!(
                "the prompt could not be saved to {} ({e})",
                path.display()
            ));
            self.history = None;
        }
    }
}

/// Creates the history file with mode 0600 if missing, and narrows an
/// existing one to 0600.
fn prepare_history(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(HISTORY_MODE)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(HISTORY_MODE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lone_slash_word_completes() {
        let commands = vec!["/help".to_owned(), "/mode".to_owned(), "/exit".to_owned()];
        let names = |typed: &str| -> Vec<String> {
            complete_command(&commands, typed)
                .into_iter()
                .map(|p| p.replacement)
                .collect()
        };
        assert_eq!(names("/h"), ["/help "]);
        assert_eq!(names("/"), ["/help ", "/mode ", "/exit "]);
        assert!(names("/mode a").is_empty());
        assert!(names("help").is_empty());
    }
}
