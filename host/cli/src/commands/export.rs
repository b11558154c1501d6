//! `goat sessions export`: a session as a Markdown transcript, as JSON, or
//! as an ATIF trajectory (the mapping is `atif`'s).
//!
//! Everything in a transcript came from outside (the person, the model,
//! tools, the engine): control characters other than newlines and tabs are
//! escaped, as for an answer shown at a terminal, so the file is safe to
//! `cat`. Tool results go in code blocks fenced longer than any run of
//! backticks inside them.

use std::io::{self, Write};
use std::path::Path;

use goat_store::{RoundStatus, SessionInfo, TurnRecord};

use super::atif;
use super::sessions::{find, write_json};
use crate::{Outcome, text};

/// Longest tool result kept in a Markdown transcript, in characters; the
/// JSON export has them whole.
const RESULT_CHARS: usize = 4000;

/// The export's format.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// A Markdown transcript.
    Md,
    /// JSON, as `goat sessions show --json` prints it.
    Json,
    /// An ATIF trajectory (Harbor's Agent Trajectory Interchange Format):
    /// steps, tool calls, observations, per-step token counts.
    Atif,
}

pub(super) fn export(id: &str, format: Format, db: Option<&Path>) -> anyhow::Result<Outcome> {
    let (store, session) = find(id, db)?;
    let mut out = io::stdout().lock();
    match format {
        Format::Json => write_json(
            &mut out,
            &session,
            &store.turns(&session.id)?,
            &super::sessions::Around::read(&store, &session.id)?,
        )?,
        Format::Md => markdown(&mut out, &session, &store.turns(&session.id)?)?,
        Format::Atif => atif::write(&mut out, &atif::trajectory(&store, &session.id)?)?,
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

fn markdown(out: &mut impl Write, session: &SessionInfo, turns: &[TurnRecord]) -> io::Result<()> {
    let safe = text::escape_for_terminal;
    writeln!(out, "# GOAT session {}\n", safe(&session.id))?;
    writeln!(out, "- Workspace: `{}`", safe(&session.workspace))?;
    writeln!(
        out,
        "- Engine: {}, model {}",
        safe(&session.engine_url),
        safe(&session.model)
    )?;
    writeln!(out, "- Started: {}", text::utc(session.created_at))?;
    for (n, turn) in (1..).zip(turns) {
        writeln!(out, "\n## Turn {n}: {}\n", turn.status.as_str())?;
        match (&turn.withheld_by, &turn.prompt_from_hook) {
            (Some(_), _) => writeln!(
                out,
                "**Request**\n\n(withheld from the model by a user_prompt_submit hook; not kept)\n"
            )?,
            (None, Some(hook)) => writeln!(
                out,
                "**The stop hook {} sent the model back**\n\n{}\n",
                safe(hook),
                safe(turn.prompt.trim_end())
            )?,
            (None, None) => writeln!(out, "**Request**\n\n{}\n", safe(turn.prompt.trim_end()))?,
        }
        for (r, round) in (1..).zip(&turn.rounds) {
            if round.status != RoundStatus::Ok {
                let why = round.failure.as_deref().unwrap_or("");
                writeln!(
                    out,
                    "> Round {r} {}: {}\n",
                    round.status.as_str(),
                    text::first_line(why, RESULT_CHARS)
                )?;
                continue;
            }
            if !round.content.trim().is_empty() {
                writeln!(out, "**Model**\n\n{}\n", safe(round.content.trim_end()))?;
            }
            for call in &round.calls {
                let decision = call
                    .decision
                    .map(|d| format!(", {}", d.as_str()))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "Tool call `{}`: {}{decision}\n",
                    text::call_summary(&call.call.tool, &call.call.arguments).replace('`', "'"),
                    call.status.as_str()
                )?;
                if let Some(result) = &call.result {
                    fenced(out, &text::truncate(result, RESULT_CHARS))?;
                }
            }
        }
        if let Some(error) = &turn.error {
            writeln!(
                out,
                "> The turn failed: {}\n",
                text::first_line(error, RESULT_CHARS)
            )?;
        }
    }
    Ok(())
}

/// `body` in a code block whose fence is longer than any run of backticks
/// in it, so nothing inside can close it.
fn fenced(out: &mut impl Write, body: &str) -> io::Result<()> {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    writeln!(
        out,
        "{fence}\n{}\n{fence}\n",
        text::escape_for_terminal(body.trim_end())
    )
}

#[cfg(test)]
mod tests {
    use super::fenced;

    #[test]
    fn a_result_holding_a_fence_cannot_close_its_block() {
        let mut out = Vec::new();
        fenced(&mut out, "before\n```\ninjected\n````\n\u{1b}[2J")
            .unwrap_or_else(|e| panic!("{e}"));
        let shown = String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            shown,
            "`````\nbefore\n```\ninjected\n````\n\\u{1b}[2J\n`````\n\n"
        );
    }
}
