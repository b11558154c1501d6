//! GOAT's settings: built-in defaults, then the config file, then
//! environment variables, then flags, each overriding the one before.
//!
//! The file is TOML, at `$GOAT_CONFIG`, else
//! `$XDG_CONFIG_HOME/goat/config.toml`, else `~/.config/goat/config.toml`.
//! Every setting is one entry of [`SETTINGS`](table::SETTINGS): its key,
//! variable, flag, default, docs and parsing; the sample of the file in
//! docs/configuration.md is made from it (a test checks).
//!
//! Only the person's own config directory (or the file they name) is read;
//! nothing in a workspace is ever taken as configuration. A mistake in the
//! file stops the command with the file, the line and the key, and the
//! file is never rewritten.

mod file;
mod table;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use goat_sandbox::Limits;

use table::SETTINGS;

/// The engine flags a front end takes, each overriding its setting: which
/// engine, which model, which key, and the output cap and sampling.
#[derive(Clone, Debug, Default)]
pub struct EngineFlags {
    /// `--engine`.
    pub engine: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--api-key-env`: the variable holding the key, never the key.
    pub api_key_env: Option<String>,
    /// `--ca-cert`.
    pub ca_cert: Option<PathBuf>,
    /// The output cap and sampling.
    pub sampling: SamplingFlags,
}

/// The output cap and sampling flags; `None` leaves the setting as the
/// config file and environment have it.
#[derive(Clone, Debug, Default)]
pub struct SamplingFlags {
    /// `--max-output-tokens`.
    pub max_output_tokens: Option<u64>,
    /// `--temperature`.
    pub temperature: Option<f64>,
    /// `--top-p`.
    pub top_p: Option<f64>,
    /// `--top-k`.
    pub top_k: Option<u64>,
    /// `--min-p`.
    pub min_p: Option<f64>,
    /// `--repeat-penalty`.
    pub repeat_penalty: Option<f64>,
    /// `--presence-penalty`.
    pub presence_penalty: Option<f64>,
    /// `--seed`.
    pub seed: Option<u64>,
}
pub(crate) use table::timeout_setting;

impl Settings {
    /// The command sandbox for `workspace` as the settings describe it:
    /// the toolchain directories under the home directory and
    /// `commands.read_paths` readable, `commands.network`,
    /// `commands.env`. Refused when a readable directory would hold one
    /// of GOAT's own files (`host_files`: the store, the rules).
    pub fn command_containment(
        &self,
        workspace: &Path,
        host_files: &[&Path],
    ) -> anyhow::Result<goat_command::Containment> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut containment = goat_router::default_containment(workspace, home.as_deref());
        for raw in self.commands_read_paths.value.iter().flatten() {
            let path = match (raw.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(raw),
            };
            if !path.is_absolute() {
                bail!(
                    "commands.read_paths: '{raw}' is not an absolute path (or one under ~/); \
                     name the directory in full"
                );
            }
            containment.read_paths.push(path);
        }
        if let Some((file, dir)) =
            goat_command::reads_host_file(&containment.read_paths, host_files)
        {
            bail!(
                "run_command would be able to read {} through the readable directory {}; \
                 remove it from commands.read_paths or keep GOAT's files elsewhere",
                file.display(),
                dir.display()
            );
        }
        containment.network = match self.commands_network.value {
            Some(CommandsNetwork::Open) => goat_command::Network::Open,
            Some(CommandsNetwork::Only(_)) => goat_command::Network::Proxied,
            Some(CommandsNetwork::Closed) | None => goat_command::Network::Closed,
        };
        containment.env = self.commands_env.value.clone().unwrap_or_default();
        containment.mode = match self.commands_containment.value.as_deref() {
            None | Some("auto") => goat_command::ContainmentMode::Auto,
            Some("namespace") => goat_command::ContainmentMode::Namespace,
            Some("landlock") => goat_command::ContainmentMode::Landlock,
            Some(other) => bail!(
                "commands.containment: '{}' is not one of auto, namespace, landlock",
                crate::text::escape_controls(other)
            ),
        };
        if let Some(dir) = &self.commands_layers_dir.value {
            let dir = PathBuf::from(dir);
            if !dir.is_absolute() {
                bail!(
                    "commands.layers_dir: '{}' is not an absolute path",
                    dir.display()
                );
            }
            containment.layers_dir = Some(dir);
        } else if let Some(first) = host_files.first().and_then(|f| f.parent()) {
            containment.layers_dir = Some(first.join("layers"));
        }
        Ok(containment)
    }
}

impl Settings {
    /// The egress proxy for commands when `commands.network` lists
    /// destinations; `None` otherwise. It starts serving only when a
    /// command runs.
    pub fn command_egress(&self) -> anyhow::Result<Option<goat_egress::Proxy>> {
        let Some(CommandsNetwork::Only(items)) = &self.commands_network.value else {
            return Ok(None);
        };
        let list = goat_egress::Allowlist::parse(items)
            .map_err(|e| anyhow::anyhow!("commands.network: {e}"))?;
        Ok(Some(goat_egress::Proxy::new(list)))
    }
}

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// The config file, at a line.
    File {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
    },
    /// An environment variable.
    Env(&'static str),
    /// A command-line flag.
    Flag(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Env(var) => write!(f, "env {var}"),
            Self::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One setting: its value (`None`: not set anywhere, no default) and where
/// it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting<T> {
    /// The value.
    pub value: Option<T>,
    /// Where it came from.
    pub source: Source,
}

impl<T> Default for Setting<T> {
    fn default() -> Self {
        Self::by_default(None)
    }
}

impl<T> Setting<T> {
    fn new(value: T, source: Source) -> Self {
        Self {
            value: Some(value),
            source,
        }
    }

    fn by_default(value: Option<T>) -> Self {
        Self {
            value,
            source: Source::Default,
        }
    }

    /// The flag's value, when given, overrides everything.
    pub fn flag(&mut self, value: Option<T>, flag: &'static str) {
        if let Some(value) = value {
            *self = Self::new(value, Source::Flag(flag));
        }
    }

    /// Set by a flag or the environment: said for this command, so it
    /// overrides what a resumed session used.
    pub fn is_explicit(&self) -> bool {
        matches!(self.source, Source::Flag(_) | Source::Env(_))
    }
}

/// What network a command gets (`commands.network`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandsNetwork {
    /// None (`false`, the default).
    Closed,
    /// All of it (`true`).
    Open,
    /// These destinations, through GOAT's egress proxy (ADR-0082); each
    /// checked when the setting was read.
    Only(Vec<String>),
}

/// What writes no rule decides get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Asked at a terminal, denied without one.
    Ask,
    /// Allowed (`--allow-writes`); deny rules still win.
    Allow,
}

impl Writes {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "ask" => Ok(Self::Ask),
            "allow" => Ok(Self::Allow),
            other => Err(format!(
                "'{other}' is not a write mode; use \"ask\" or \"allow\""
            )),
        }
    }

    /// As the file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Allow => "allow",
        }
    }
}

/// Every setting, as the file and the environment leave it; commands
/// apply their flags on top. Each field is an entry of the table.
///
/// The setting fields are documented once, in the table (`table.rs`), from
/// which docs/configuration.md and `goat config show` are made.
#[expect(missing_docs, reason = "each setting is documented once, in the table")]
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The file read, and whether it existed.
    pub file: Option<PathBuf>,
    pub file_found: bool,
    pub engine: Setting<String>,
    pub model: Setting<String>,
    pub api_key_env: Setting<String>,
    pub ca_cert: Setting<String>,
    pub max_rounds: Setting<u64>,
    pub context_tokens: Setting<u64>,
    pub max_output_tokens: Setting<u64>,
    pub temperature: Setting<f64>,
    pub top_p: Setting<f64>,
    pub top_k: Setting<u64>,
    pub min_p: Setting<f64>,
    pub repeat_penalty: Setting<f64>,
    pub presence_penalty: Setting<f64>,
    pub seed: Setting<u64>,
    pub writes: Setting<Writes>,
    pub mode: Setting<String>,
    pub tool_timeout_secs: Setting<u64>,
    pub tool_memory_mib: Setting<u64>,
    pub tool_output_kib: Setting<u64>,
    pub markup_unwrapped_calls: Setting<bool>,
    pub no_cache_prompt: Setting<bool>,
    pub connect_timeout_secs: Setting<u64>,
    pub first_byte_timeout_secs: Setting<u64>,
    pub idle_timeout_secs: Setting<u64>,
    pub total_timeout_secs: Setting<u64>,
    pub commands_network: Setting<CommandsNetwork>,
    pub commands_read_paths: Setting<Vec<String>>,
    pub commands_containment: Setting<String>,
    pub commands_layers_dir: Setting<String>,
    pub commands_env: Setting<Vec<String>>,
}

impl Settings {
    /// The built-in defaults alone.
    fn defaults() -> Self {
        let mut settings = Self::default();
        for def in SETTINGS {
            def.set_default(&mut settings);
        }
        settings
    }

    /// The config file that was read, if one was.
    pub fn file_in_use(&self) -> Option<&Path> {
        self.file.as_deref().filter(|_| self.file_found)
    }

    /// The engine flags every command that talks to an engine takes, on top.
    pub fn apply_engine_flags(&mut self, flags: &EngineFlags) {
        self.engine.flag(flags.engine.clone(), "--engine");
        self.model.flag(flags.model.clone(), "--model");
        self.api_key_env
            .flag(flags.api_key_env.clone(), "--api-key-env");
        self.ca_cert.flag(
            flags
                .ca_cert
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            "--ca-cert",
        );
        let sampling = &flags.sampling;
        self.max_output_tokens
            .flag(sampling.max_output_tokens, "--max-output-tokens");
        self.temperature.flag(sampling.temperature, "--temperature");
        self.top_p.flag(sampling.top_p, "--top-p");
        self.top_k.flag(sampling.top_k, "--top-k");
        self.min_p.flag(sampling.min_p, "--min-p");
        self.repeat_penalty
            .flag(sampling.repeat_penalty, "--repeat-penalty");
        self.presence_penalty
            .flag(sampling.presence_penalty, "--presence-penalty");
        self.seed.flag(sampling.seed, "--seed");
    }

    /// The output cap and sampling settings sent with every request,
    /// each only when set; the cap always is, by default
    /// [`goat_shepherd::DEFAULT_MAX_OUTPUT_TOKENS`].
    pub fn sampling(&self) -> goat_engine::Sampling {
        goat_engine::Sampling {
            max_output_tokens: self.max_output_tokens.value,
            temperature: self.temperature.value,
            top_p: self.top_p.value,
            top_k: self.top_k.value,
            min_p: self.min_p.value,
            repeat_penalty: self.repeat_penalty.value,
            presence_penalty: self.presence_penalty.value,
            seed: self.seed.value,
        }
    }

    /// Defaults, then the config file, then the environment.
    pub fn load() -> anyhow::Result<Self> {
        let mut settings = Self::defaults();
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let (path, named) = match env("GOAT_CONFIG") {
            Some(path) => (Some(PathBuf::from(path)), true),
            None => (default_path(), false),
        };
        if let Some(path) = path {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    settings.apply_file(&path, &text)?;
                    settings.file_found = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => {}
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("cannot read the config file {}", path.display())
                    });
                }
            }
            settings.file = Some(path);
        }
        settings.apply_env()?;
        Ok(settings)
    }

    fn apply_env(&mut self) -> anyhow::Result<()> {
        for def in SETTINGS {
            let text = match std::env::var(def.env) {
                Ok(v) if v.is_empty() => continue,
                Ok(v) => v,
                Err(std::env::VarError::NotPresent) => continue,
                Err(std::env::VarError::NotUnicode(_)) => {
                    bail!("{} is not valid UTF-8; fix or unset it", def.env)
                }
            };
            def.set_from_env(self, text)?;
        }
        Ok(())
    }

    /// The sandbox limits these settings give; the rest are the host's own.
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        if let Some(secs) = self.tool_timeout_secs.value {
            limits.timeout = Duration::from_secs(secs);
        }
        if let Some(mib) = self.tool_memory_mib.value {
            limits.memory_bytes = usize::try_from(mib * 1024 * 1024).unwrap_or(usize::MAX);
        }
        if let Some(kib) = self.tool_output_kib.value {
            limits.result_bytes = usize::try_from(kib * 1024).unwrap_or(usize::MAX);
        }
        limits
    }

    /// Whether complete unwrapped Qwen3-Coder calls count as unexecuted
    /// markup (ADR-0067): `markup.unwrapped_calls`, default off.
    pub fn unwrapped_calls(&self) -> bool {
        self.markup_unwrapped_calls.value.unwrap_or(false)
    }

    /// How the context window is chosen (ADR-0073): `context_tokens` when
    /// the person set it anywhere, else asked of the engine with the
    /// default as the fallback.
    pub fn context_window(&self) -> goat_shepherd::WindowChoice {
        let tokens = self
            .context_tokens
            .value
            .unwrap_or(goat_shepherd::DEFAULT_CONTEXT_TOKENS);
        match self.context_tokens.source {
            Source::Default => goat_shepherd::WindowChoice::Ask { fallback: tokens },
            _ => goat_shepherd::WindowChoice::Setting(tokens),
        }
    }

    /// Sets the engine timeouts on `config`.
    pub fn apply_timeouts(&self, config: &mut goat_engine::EngineConfig) {
        let secs = |s: &Setting<u64>, d: &mut Duration| {
            if let Some(v) = s.value {
                *d = Duration::from_secs(v);
            }
        };
        secs(&self.connect_timeout_secs, &mut config.connect_timeout);
        secs(
            &self.first_byte_timeout_secs,
            &mut config.first_byte_timeout,
        );
        secs(&self.idle_timeout_secs, &mut config.idle_timeout);
        secs(&self.total_timeout_secs, &mut config.total_timeout);
    }

    /// Each setting as (key, value, source), in the table's order.
    pub fn rows(&self) -> Vec<(&'static str, Option<String>, &Source)> {
        SETTINGS
            .iter()
            .map(|def| {
                let (value, source) = def.shown(self);
                (def.key, value, source)
            })
            .collect()
    }
}

/// `$XDG_CONFIG_HOME/goat/config.toml`, else `~/.config/goat/config.toml`.
pub fn default_path() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    var("XDG_CONFIG_HOME")
        .or_else(|| var("HOME").map(|home| home.join(".config")))
        .map(|dir| dir.join("goat").join("config.toml"))
}
