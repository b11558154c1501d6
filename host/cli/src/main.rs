//! The `goat` command.
//!
//! This first cut exposes the sandbox directly: `goat tools list` and
//! `goat tools call`. Later the Shepherd, the AppToolRouter and the
//! permission gate stand in front of every call. `goat detect` runs the
//! unexecuted-markup detector (ADR-0065) on a saved assistant message.
//!
//! Exit status: 0 success, 1 the tool call failed (the error is printed as
//! the model would see it), 2 bad usage or a host problem.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use goat_markup::{Detector, Verdict};
use goat_sandbox::{Access, Pen, Sandbox, SandboxBuilder, Tool};

#[derive(Parser)]
#[command(
    name = "goat",
    version,
    about = "GOAT: a hardened agent host for local coding models"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect and run tools directly, without a model.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Check an assistant message for tool-call markup written as text
    /// instead of a call, and print the verdict as one line of JSON.
    ///
    /// Exits 0 whether or not markup is found; read the "unexecuted" field.
    Detect {
        /// The tools offered with the request, comma-separated
        /// (e.g. read_file,write_file). Only these names count.
        #[arg(long, value_name = "NAMES", value_delimiter = ',', required = true)]
        tools: Vec<String>,
        /// The message's content; standard input when absent.
        file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// List the tools GOAT offers, with the workspace access each needs.
    List {
        /// Print the full specs (name, description, JSON Schema, access, path fields) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool in the sandbox and print its result.
    Call {
        /// Tool name, as `goat tools list` shows it.
        name: String,
        /// Arguments as a JSON object, or `-` to read them from stdin.
        args_json: String,
        /// The workspace the tool may see (default: the current directory).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Let a writing tool (write_file, edit_file) change files in the workspace.
        #[arg(long)]
        allow_writes: bool,
    },
}

/// How a run ended, beyond plain success.
enum Outcome {
    Ok,
    ToolFailed,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::ToolFailed) => ExitCode::from(1),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("goat: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Tools { command } => match command {
            ToolsCommand::List { json } => list(json),
            ToolsCommand::Call {
                name,
                args_json,
                workspace,
                allow_writes,
            } => call(&name, &args_json, workspace, allow_writes),
        },
        Command::Detect { tools, file } => detect(&tools, file.as_deref()),
    }
}

/// Feeds the message to the detector in pieces, as a stream would arrive.
fn detect(tools: &[String], file: Option<&Path>) -> anyhow::Result<Outcome> {
    let tools: Vec<&str> = tools.iter().map(|t| t.trim()).collect();
    if tools.is_empty() || tools.iter().any(|t| t.is_empty()) {
        bail!(
            "--tools needs comma-separated tool names, none empty, e.g. --tools read_file,write_file"
        );
    }
    let mut detector = Detector::new(&tools);
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
        "{{\"unexecuted\": {}, \"tool\": {}, \"form\": {}, \"markers\": [{}], \"span\": {}}}",
        v.unexecuted,
        v.tool.as_deref().map_or("null".into(), string),
        v.form.map_or("null".into(), |f| string(f.as_str())),
        markers.join(", "),
        v.span
            .map_or("null".into(), |(start, end)| format!("[{start}, {end}]")),
    )
}

/// GOAT's compiled-code cache: `$GOAT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/goat/compiled`, else `~/.cache/goat/compiled`.
fn cache_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("GOAT_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("goat").join("compiled"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home)
            .join(".cache")
            .join("goat")
            .join("compiled")),
        None => bail!("cannot find a cache directory: set GOAT_CACHE_DIR or HOME"),
    }
}

fn sandbox_and_tools() -> anyhow::Result<(Sandbox, Vec<Tool>)> {
    let sandbox = SandboxBuilder::new().cache_dir(cache_dir()?).build()?;
    let tools = sandbox.load_pen_tools()?;
    Ok((sandbox, tools))
}

fn list(json: bool) -> anyhow::Result<Outcome> {
    let (_, tools) = sandbox_and_tools()?;
    let mut out = io::stdout().lock();
    if json {
        let specs: Vec<serde_json::Value> = tools
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(t.spec())?;
                v["sha256"] = serde_json::Value::String(t.sha256().to_owned());
                Ok(v)
            })
            .collect::<serde_json::Result<_>>()?;
        serde_json::to_writer_pretty(&mut out, &specs)?;
        writeln!(out)?;
    } else {
        let width = tools.iter().map(|t| t.spec().name.len()).max().unwrap_or(0);
        for t in &tools {
            let spec = t.spec();
            let summary = spec
                .description
                .split(". ")
                .next()
                .unwrap_or("")
                .trim_end_matches('.');
            writeln!(
                out,
                "{:width$}  {:10}  {summary}",
                spec.name,
                spec.access.as_str()
            )?;
        }
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

fn call(
    name: &str,
    args_json: &str,
    workspace: Option<PathBuf>,
    allow_writes: bool,
) -> anyhow::Result<Outcome> {
    let args_text = if args_json == "-" {
        let mut s = String::new();
        io::stdin()
            .read_to_string(&mut s)
            .context("reading arguments from stdin")?;
        s
    } else {
        args_json.to_owned()
    };
    match serde_json::from_str::<serde_json::Value>(&args_text) {
        Ok(serde_json::Value::Object(_)) => {}
        Ok(other) => bail!(
            "ARGS_JSON must be a JSON object such as '{{\"path\": \"README.md\"}}', got: {other}"
        ),
        Err(e) => bail!(
            "ARGS_JSON is not valid JSON ({e}); quote it for the shell, e.g. \
             '{{\"path\": \"README.md\"}}'"
        ),
    }

    let (sandbox, tools) = sandbox_and_tools()?;
    let Some(tool) = tools.iter().find(|t| t.spec().name == name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        bail!("no tool named '{name}'; available: {}", names.join(", "));
    };
    if tool.spec().access == Access::ReadWrite && !allow_writes {
        bail!(
            "{name} changes files in the workspace and was not run; add --allow-writes to let it \
             write"
        );
    }
    let root = match workspace {
        Some(dir) => dir,
        None => std::env::current_dir().context("finding the current directory")?,
    };
    let access = if allow_writes {
        Access::ReadWrite
    } else {
        Access::Read
    };
    let pen = Pen::new(&root, access)?;

    let mut out = io::stdout().lock();
    match sandbox.call(tool, &args_text, &pen)? {
        Ok(text) => {
            out.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                writeln!(out)?;
            }
            out.flush()?;
            Ok(Outcome::Ok)
        }
        Err(failure) => {
            out.flush()?;
            eprintln!("{name} failed: {failure}");
            Ok(Outcome::ToolFailed)
        }
    }
}
