//! `[v]iew`: the whole change a question is about, before answering.
//!
//! The lines are the preview's, escaped, without colour, so any pager
//! shows them as text. `$PAGER` is used when set (split on spaces, run
//! without a shell), else `less`; when it cannot be started, or without
//! a terminal, every line is printed instead.
//!
//! # Security
//!
//! While the pager runs nothing else reads the terminal: answers are read
//! only when a question asks (see [`crate::terminal`]). The pager gets
//! `LESSSECURE=1`, so `less` offers no shell or editor escapes from a
//! preview the model wrote.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::note;

/// The pager when `$PAGER` is not set.
const DEFAULT_PAGER: &str = "less";

/// Where a full view goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pager {
    /// This program and its arguments, reading the lines on stdin.
    Program(Vec<String>),
    /// Printed to the question's output, every line.
    BuiltIn,
}

impl Pager {
    /// `$PAGER`, else `less`; built in when `$PAGER` is set but empty.
    pub fn from_env() -> Self {
        let chosen = std::env::var("PAGER").unwrap_or_else(|_| DEFAULT_PAGER.to_owned());
        let words: Vec<String> = chosen.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            Self::BuiltIn
        } else {
            Self::Program(words)
        }
    }

    /// Shows `lines`: through the pager, or printed to `output` when there
    /// is none or it cannot run.
    pub fn show(&self, lines: &[String], output: &mut dyn Write) {
        if let Self::Program(words) = self
            && let Some((program, args)) = words.split_first()
        {
            let _ = output.flush();
            match run(program, args, lines) {
                Ok(()) => return,
                Err(e) => note(format_args!(
                    "the pager '{}' could not show the change ({e}); here it is in full",
                    crate::text::escape_controls(program)
                )),
            }
        }
        for line in lines {
            let _ = writeln!(output, "{}{line}", crate::text::GOAT_MORE);
        }
        let _ = output.flush();
    }
}

fn run(program: &str, args: &[String], lines: &[String]) -> std::io::Result<()> {
    let mut child = Command::new(program)
        .args(args)
        .env("LESSSECURE", "1")
        .stdin(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        for line in lines {
            // A pager quit early closes the pipe: that is fine.
            if writeln!(stdin, "{line}").is_err() {
                break;
            }
        }
    }
    let status = child.wait()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("it exited with {status}")))
    }
}
