//! `goat detect`: the unexecuted-markup detector (ADR-0065) on a saved
//! assistant message.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use goat_markup::{Detector, Verdict};

use crate::Outcome;
use crate::config::Settings;

#[derive(clap::Args)]
pub struct DetectArgs {
    /// The tools offered with the request, comma-separated
    /// (e.g. read_file,write_file). Only these names count.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', required = true)]
    tools: Vec<String>,
    /// The message's content; standard input when absent.
    file: Option<PathBuf>,
}

/// Feeds the message to the detector in pieces, as a stream would arrive.
pub fn detect(args: DetectArgs) -> anyhow::Result<Outcome> {
    let (tools, file) = (&args.tools, args.file.as_deref());
    let tools: Vec<&str> = tools.iter().map(|t| t.trim()).collect();
    if tools.is_empty() || tools.iter().any(|t| t.is_empty()) {
        bail!(
            "--tools needs comma-separated tool names, none empty, e.g. --tools read_file,write_file"
        );
    }
    // ADR-0067's rule as run and chat apply it: markup.unwrapped_calls.
    let unwrapped_calls = Settings::load()?.unwrapped_calls();
    let mut detector = Detector::new(&tools).unwrapped_calls(unwrapped_calls);
    let mut input: Box<dyn Read> = match file {
        Some(path) => {
            Box::new(File::open(path).with_context(|| format!("reading {}", path.display()))?)
        }
        None => Box::new(io::stdin().lock()),
    };
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let what = file.map_or("standard input".into(), |p| p.display().to_string());
                return Err(anyhow::Error::new(e).context(format!("reading {what}")));
            }
        };
        detector.feed(&buf[..n]);
    }
    let mut out = io::stdout().lock();
    writeln!(out, "{}", verdict_json(&detector.finish()))?;
    out.flush()?;
    Ok(Outcome::Ok)
}

/// One line of JSON, fields in a fixed order.
fn verdict_json(v: &Verdict) -> String {
    let string = |s: &str| serde_json::Value::from(s).to_string();
    let markers: Vec<String> = v.markers.iter().map(|m| string(m.as_str())).collect();
    format!(
        "{{\"unexecuted\": {}, \"tool\": {}, \"form\": {}, \"markers\": [{}], \"span\": {}, \"unwrapped\": {}}}",
        v.unexecuted,
        v.tool.as_deref().map_or("null".into(), string),
        v.form.map_or("null".into(), |f| string(f.as_str())),
        markers.join(", "),
        v.span
            .map_or("null".into(), |(start, end)| format!("[{start}, {end}]")),
        v.unwrapped,
    )
}
