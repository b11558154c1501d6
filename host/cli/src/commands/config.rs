//! `goat config show`: each setting's effective value and where it came
//! from, as text or JSON.

use std::io::{self, Write};

use clap::Subcommand;

use crate::config::Settings;
use crate::{Outcome, text};

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print each setting's effective value and where it came from.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn config(command: ConfigCommand) -> anyhow::Result<Outcome> {
    match command {
        ConfigCommand::Show { json } => show(json),
    }
}

/// `goat config show`.
fn show(json: bool) -> anyhow::Result<Outcome> {
    let settings = Settings::load()?;
    let mut out = io::stdout().lock();
    if json {
        let rows: Vec<serde_json::Value> = settings
            .rows()
            .into_iter()
            .map(|(key, value, source)| {
                serde_json::json!({"key": key, "value": value, "source": source.to_string()})
            })
            .collect();
        let value = serde_json::json!({
            "file": settings.file,
            "file_found": settings.file_found,
            "settings": rows,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        match &settings.file {
            Some(path) if settings.file_found => writeln!(out, "config file: {}", path.display())?,
            Some(path) => writeln!(out, "config file: {} (not present)", path.display())?,
            None => writeln!(
                out,
                "config file: none (set HOME, XDG_CONFIG_HOME or GOAT_CONFIG)"
            )?,
        }
        let rows = settings.rows();
        let width = rows.iter().map(|(k, ..)| k.len()).max().unwrap_or(0);
        for (key, value, source) in rows {
            let value = value.map_or_else(|| "(not set)".to_owned(), |v| text::escape_controls(&v));
            writeln!(out, "{key:width$}  {value}  ({source})")?;
        }
        writeln!(
            out,
            "flags given to a command override all of these for that command"
        )?;
    }
    out.flush()?;
    Ok(Outcome::Ok)
}
