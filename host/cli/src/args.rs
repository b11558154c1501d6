//! Argument groups more than one command takes, declared once and
//! flattened in (`#[command(flatten)]`). A command whose wording of a flag
//! differs keeps the one declaration and rewords its help with
//! `mut_arg`, so `--help` reads as before.

use std::path::PathBuf;

/// `--db`: which store.
#[derive(clap::Args)]
pub struct DbArg {
    /// The store (default: $GOAT_DB, else $XDG_DATA_HOME/goat/goat.db or
    /// ~/.local/share/goat/goat.db).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

impl EngineArgs {
    /// As the session core takes them.
    pub fn flags(&self) -> goat_session::config::EngineFlags {
        let s = &self.sampling;
        goat_session::config::EngineFlags {
            engine: self.engine.clone(),
            model: self.model.clone(),
            api_key_env: self.api_key_env.clone(),
            ca_cert: self.ca_cert.clone(),
            sampling: goat_session::config::SamplingFlags {
                max_output_tokens: s.max_output_tokens,
                temperature: s.temperature,
                top_p: s.top_p,
                top_k: s.top_k,
                min_p: s.min_p,
                repeat_penalty: s.repeat_penalty,
                presence_penalty: s.presence_penalty,
                seed: s.seed,
            },
        }
    }
}

impl TurnOptions {
    /// As the session core takes them.
    pub fn open_options(&self) -> goat_session::OpenOptions {
        goat_session::OpenOptions {
            workspace: self.workspace.clone(),
            engine: self.engine.flags(),
            db: self.store.db.clone(),
            permissions: self.permissions.permissions.clone(),
            allow_writes: self.allow_writes,
            allow_commands: self.allow_commands,
            mode: self.mode,
            max_rounds: self.max_rounds,
            context_tokens: self.context_tokens,
            session: self.session.clone(),
        }
    }
}

/// `--permissions`: which permission database.
#[derive(clap::Args)]
pub struct PermissionsArg {
    /// The permission database (default: permissions.db beside the store).
    #[arg(long, value_name = "FILE")]
    pub permissions: Option<PathBuf>,
}

/// The engine flags: which engine, which model, which key.
#[derive(clap::Args)]
pub struct EngineArgs {
    /// The engine's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1
    /// (default: $GOAT_ENGINE_URL; when resuming, the session's engine;
    /// else `engine` in the config file).
    #[arg(long, value_name = "URL")]
    pub engine: Option<String>,
    /// The model name sent to the engine (default: $GOAT_MODEL; when
    /// resuming, the session's model; else `model` in the config file).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Read the engine's bearer key from this environment variable.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Trust the CA certificates in this PEM file for an https engine,
    /// besides the system's (default: $GOAT_CA_CERT, else `ca_cert` in the
    /// config file; SSL_CERT_FILE replaces the system's roots).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// The output cap and sampling flags; each overrides its setting
/// (`goat config show` lists them, docs/engines.md gives the vendors'
/// recommendations). Unset, nothing is sent but the cap.
#[derive(clap::Args)]
pub struct SamplingArgs {
    /// Most tokens one answer may take, sent as max_tokens (default:
    /// $GOAT_MAX_OUTPUT_TOKENS, else `max_output_tokens` in the config
    /// file, else 4096).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub max_output_tokens: Option<u64>,
    /// Sampling temperature, 0 to 2 (default: $GOAT_TEMPERATURE, else
    /// `sampling.temperature`, else the engine's).
    #[arg(long, value_name = "T", value_parser = decimal(0.0, 2.0))]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass, 0 to 1 ($GOAT_TOP_P, `sampling.top_p`).
    #[arg(long, value_name = "P", value_parser = decimal(0.0, 1.0))]
    pub top_p: Option<f64>,
    /// Keep the k likeliest tokens ($GOAT_TOP_K, `sampling.top_k`).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub top_k: Option<u64>,
    /// Minimum probability relative to the likeliest token, 0 to 1
    /// ($GOAT_MIN_P, `sampling.min_p`).
    #[arg(long, value_name = "P", value_parser = decimal(0.0, 1.0))]
    pub min_p: Option<f64>,
    /// Penalty on repeated tokens, 1 for none ($GOAT_REPEAT_PENALTY,
    /// `sampling.repeat_penalty`).
    #[arg(long, value_name = "X", value_parser = decimal(0.0, 10.0))]
    pub repeat_penalty: Option<f64>,
    /// Penalty on tokens already present, -2 to 2
    /// ($GOAT_PRESENCE_PENALTY, `sampling.presence_penalty`).
    #[arg(long, value_name = "X", value_parser = decimal(-2.0, 2.0), allow_negative_numbers = true)]
    pub presence_penalty: Option<f64>,
    /// The sampler's seed ($GOAT_SEED, `sampling.seed`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=4_294_967_295))]
    pub seed: Option<u64>,
}

/// A parser for a finite decimal from `min` to `max`.
fn decimal(min: f64, max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |text| match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (min..=max).contains(&x) => Ok(x),
        Ok(x) => Err(format!("{x} is out of range; use {min:?} to {max:?}")),
        Err(_) => Err(format!("'{text}' is not a number")),
    }
}

/// What `goat run` and `goat chat` share: where, with which engine and
/// model, under which permissions, in which session.
#[derive(clap::Args)]
pub struct TurnOptions {
    /// The directory the tools may see (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub store: DbArg,
    #[command(flatten)]
    pub permissions: PermissionsArg,
    /// Let writing tools change files in the workspace where no deny rule
    /// forbids it (also GOAT_WRITES=allow, or writes = "allow" in the
    /// config file). Without it, a write is asked about at a terminal and
    /// otherwise needs an allow rule.
    #[arg(long)]
    pub allow_writes: bool,
    /// Let the model run commands (run_command) no rule decides, inside
    /// the command sandbox; deny rules still win. Without it, a command is
    /// asked about at a terminal and otherwise needs an allow rule.
    #[arg(long)]
    pub allow_commands: bool,
    /// The approval mode: `ask` (writes and commands no rule decides are
    /// asked about), `accept-edits` (writes inside the workspace allowed
    /// without asking; commands still asked; deny rules and protected paths
    /// still win) or `read-only` (no writes and no commands at all).
    /// `goat chat` switches it with `/mode` (default: $GOAT_MODE, else
    /// `mode` in the config file, else ask).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub mode: Option<goat_router::ApprovalMode>,
    /// Most rounds (requests to the engine) a turn may take (default:
    /// $GOAT_MAX_ROUNDS, else the config file, else 24).
    #[arg(long, value_name = "N", value_parser = parse_max_rounds)]
    pub max_rounds: Option<usize>,
    /// The engine's context window in tokens (default: $GOAT_CONTEXT_TOKENS,
    /// else the config file, else what the engine says, else 32768).
    #[arg(long, value_name = "TOKENS")]
    pub context_tokens: Option<u64>,
    /// Continue this session (its workspace must be this one) instead of
    /// starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

pub(crate) fn parse_mode(text: &str) -> Result<goat_router::ApprovalMode, String> {
    goat_router::ApprovalMode::from_name(text)
        .ok_or_else(|| format!("'{text}' is not a mode; use ask, accept-edits or read-only"))
}

pub(crate) fn parse_max_rounds(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a turn needs at least 1 round".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
