//! GOAT's settings: built-in defaults, then the config file, then
//! environment variables, then flags, each overriding the one before.
//!
//! The file is TOML, at `$GOAT_CONFIG`, else
//! `$XDG_CONFIG_HOME/goat/config.toml`, else `~/.config/goat/config.toml`:
//!
//! ```toml
//! engine = "http://127.0.0.1:8080/v1"   # GOAT_ENGINE_URL, --engine
//! model = "qwen3-coder"                 # GOAT_MODEL, --model
//! api_key_env = "LLAMA_API_KEY"         # GOAT_API_KEY_ENV, --api-key-env
//! max_rounds = 24                       # GOAT_MAX_ROUNDS, --max-rounds
//! writes = "ask"                        # GOAT_WRITES; "allow" is --allow-writes
//!
//! [limits]
//! tool_timeout_secs = 30                # GOAT_TOOL_TIMEOUT_SECS
//! tool_memory_mib = 128                 # GOAT_TOOL_MEMORY_MIB
//! tool_output_kib = 1024                # GOAT_TOOL_OUTPUT_KIB
//! ```
//!
//! Only the person's own config directory (or the file they name) is read;
//! nothing in a workspace is ever taken as configuration. A mistake in the
//! file stops the command with the file, the line and the key, and the
//! file is never rewritten.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use goat_sandbox::Limits;
use goat_shepherd::DEFAULT_MAX_ROUNDS;
use serde::Deserialize;
use toml::Spanned;

/// Bounds on the limits a config may set, so a typo cannot make a tool
/// call unbounded or unrunnable.
const TIMEOUT_SECS: Range<u64> = 1..3601;
const MEMORY_MIB: Range<u64> = 1..4097;
const OUTPUT_KIB: Range<u64> = 1..65537;
const MAX_ROUNDS: Range<u64> = 1..10_001;

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File { path: PathBuf, line: usize },
    Env(&'static str),
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: Option<T>,
    pub source: Source,
}

impl<T> Setting<T> {
    fn from_env(value: T, var: &'static str) -> Self {
        Self {
            value: Some(value),
            source: Source::Env(var),
        }
    }

    fn default(value: Option<T>) -> Self {
        Self {
            value,
            source: Source::Default,
        }
    }

    /// The flag's value, when given, overrides everything.
    pub fn flag(&mut self, value: Option<T>, flag: &'static str) {
        if let Some(value) = value {
            *self = Self {
                value: Some(value),
                source: Source::Flag(flag),
            };
        }
    }

    /// Set by a flag or the environment: said for this command, so it
    /// overrides what a resumed session used.
    pub fn is_explicit(&self) -> bool {
        matches!(self.source, Source::Flag(_) | Source::Env(_))
    }
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

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Allow => "allow",
        }
    }
}

/// Every setting, as the file and the environment leave it; commands
/// apply their flags on top.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The file read, and whether it existed.
    pub file: Option<PathBuf>,
    pub file_found: bool,
    pub engine: Setting<String>,
    pub model: Setting<String>,
    pub api_key_env: Setting<String>,
    pub max_rounds: Setting<usize>,
    pub writes: Setting<Writes>,
    pub tool_timeout_secs: Setting<u64>,
    pub tool_memory_mib: Setting<u64>,
    pub tool_output_kib: Setting<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    engine: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    api_key_env: Option<Spanned<String>>,
    max_rounds: Option<Spanned<u64>>,
    writes: Option<Spanned<String>>,
    #[serde(default)]
    limits: FileLimits,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    tool_timeout_secs: Option<Spanned<u64>>,
    tool_memory_mib: Option<Spanned<u64>>,
    tool_output_kib: Option<Spanned<u64>>,
}

impl Settings {
    /// The built-in defaults alone.
    fn defaults() -> Self {
        let limits = Limits::default();
        Self {
            file: None,
            file_found: false,
            engine: Setting::default(None),
            model: Setting::default(None),
            api_key_env: Setting::default(None),
            max_rounds: Setting::default(Some(DEFAULT_MAX_ROUNDS)),
            writes: Setting::default(Some(Writes::Ask)),
            tool_timeout_secs: Setting::default(Some(limits.timeout.as_secs())),
            tool_memory_mib: Setting::default(Some(mib(limits.memory_bytes))),
            tool_output_kib: Setting::default(Some(kib(limits.result_bytes))),
        }
    }

    /// The config file that was read, if one was.
    pub fn file_in_use(&self) -> Option<&Path> {
        self.file.as_deref().filter(|_| self.file_found)
    }

    /// The engine flags every command that talks to an engine takes, on top.
    pub fn apply_engine_flags(&mut self, flags: &crate::args::EngineArgs) {
        self.engine.flag(flags.engine.clone(), "--engine");
        self.model.flag(flags.model.clone(), "--model");
        self.api_key_env
            .flag(flags.api_key_env.clone(), "--api-key-env");
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

    fn apply_file(&mut self, path: &Path, text: &str) -> anyhow::Result<()> {
        let file: File = toml::from_str(text).map_err(|e| {
            let message = e.message().to_owned();
            match e.span() {
                Some(span) => file_error(path, text, &span, &message),
                None => anyhow::anyhow!("config file {}: {message}", path.display()),
            }
        })?;
        let at = |span: Range<usize>| Source::File {
            path: path.to_owned(),
            line: line_of(text, span.start),
        };
        let fail = |span: &Range<usize>, why: String| file_error(path, text, span, &why);

        let strings = [
            (&mut self.engine, file.engine),
            (&mut self.model, file.model),
            (&mut self.api_key_env, file.api_key_env),
        ];
        for (setting, value) in strings {
            if let Some(value) = value {
                let span = value.span();
                let value = value.into_inner();
                if value.trim().is_empty() {
                    return Err(fail(
                        &span,
                        "it is empty; remove the line or give a value".into(),
                    ));
                }
                *setting = Setting {
                    value: Some(value),
                    source: at(span),
                };
            }
        }
        if let Some(value) = file.max_rounds {
            let span = value.span();
            let n = bounded(*value.get_ref(), &MAX_ROUNDS, "rounds").map_err(|w| fail(&span, w))?;
            self.max_rounds = Setting {
                value: Some(usize::try_from(n).unwrap_or(usize::MAX)),
                source: at(span),
            };
        }
        if let Some(value) = file.writes {
            let span = value.span();
            let writes = Writes::parse(value.get_ref()).map_err(|w| fail(&span, w))?;
            self.writes = Setting {
                value: Some(writes),
                source: at(span),
            };
        }
        let limits = [
            (
                &mut self.tool_timeout_secs,
                file.limits.tool_timeout_secs,
                &TIMEOUT_SECS,
                "seconds",
            ),
            (
                &mut self.tool_memory_mib,
                file.limits.tool_memory_mib,
                &MEMORY_MIB,
                "MiB",
            ),
            (
                &mut self.tool_output_kib,
                file.limits.tool_output_kib,
                &OUTPUT_KIB,
                "KiB",
            ),
        ];
        for (setting, value, range, unit) in limits {
            if let Some(value) = value {
                let span = value.span();
                let n = bounded(*value.get_ref(), range, unit).map_err(|w| fail(&span, w))?;
                *setting = Setting {
                    value: Some(n),
                    source: at(span),
                };
            }
        }
        Ok(())
    }

    fn apply_env(&mut self) -> anyhow::Result<()> {
        let env = |name: &'static str| -> anyhow::Result<Option<String>> {
            match std::env::var(name) {
                Ok(v) if v.is_empty() => Ok(None),
                Ok(v) => Ok(Some(v)),
                Err(std::env::VarError::NotPresent) => Ok(None),
                Err(std::env::VarError::NotUnicode(_)) => {
                    bail!("{name} is not valid UTF-8; fix or unset it")
                }
            }
        };
        for (setting, var) in [
            (&mut self.engine, "GOAT_ENGINE_URL"),
            (&mut self.model, "GOAT_MODEL"),
            (&mut self.api_key_env, "GOAT_API_KEY_ENV"),
        ] {
            if let Some(value) = env(var)? {
                *setting = Setting::from_env(value, var);
            }
        }
        if let Some(text) = env("GOAT_MAX_ROUNDS")? {
            let n = number(&text, &MAX_ROUNDS, "rounds")
                .map_err(|why| anyhow::anyhow!("GOAT_MAX_ROUNDS={text}: {why}"))?;
            self.max_rounds =
                Setting::from_env(usize::try_from(n).unwrap_or(usize::MAX), "GOAT_MAX_ROUNDS");
        }
        if let Some(text) = env("GOAT_WRITES")? {
            let writes =
                Writes::parse(&text).map_err(|why| anyhow::anyhow!("GOAT_WRITES: {why}"))?;
            self.writes = Setting::from_env(writes, "GOAT_WRITES");
        }
        for (setting, var, range, unit) in [
            (
                &mut self.tool_timeout_secs,
                "GOAT_TOOL_TIMEOUT_SECS",
                &TIMEOUT_SECS,
                "seconds",
            ),
            (
                &mut self.tool_memory_mib,
                "GOAT_TOOL_MEMORY_MIB",
                &MEMORY_MIB,
                "MiB",
            ),
            (
                &mut self.tool_output_kib,
                "GOAT_TOOL_OUTPUT_KIB",
                &OUTPUT_KIB,
                "KiB",
            ),
        ] {
            if let Some(text) = env(var)? {
                let n = number(&text, range, unit)
                    .map_err(|why| anyhow::anyhow!("{var}={text}: {why}"))?;
                *setting = Setting::from_env(n, var);
            }
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

    /// Each setting as (key, value, source), in file order.
    pub fn rows(&self) -> Vec<(&'static str, Option<String>, &Source)> {
        let text = |s: &Setting<String>| s.value.clone();
        let num = |s: &Setting<u64>| s.value.map(|v| v.to_string());
        vec![
            ("engine", text(&self.engine), &self.engine.source),
            ("model", text(&self.model), &self.model.source),
            (
                "api_key_env",
                text(&self.api_key_env),
                &self.api_key_env.source,
            ),
            (
                "max_rounds",
                self.max_rounds.value.map(|v| v.to_string()),
                &self.max_rounds.source,
            ),
            (
                "writes",
                self.writes.value.map(|w| w.as_str().to_owned()),
                &self.writes.source,
            ),
            (
                "limits.tool_timeout_secs",
                num(&self.tool_timeout_secs),
                &self.tool_timeout_secs.source,
            ),
            (
                "limits.tool_memory_mib",
                num(&self.tool_memory_mib),
                &self.tool_memory_mib.source,
            ),
            (
                "limits.tool_output_kib",
                num(&self.tool_output_kib),
                &self.tool_output_kib.source,
            ),
        ]
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

fn mib(bytes: usize) -> u64 {
    u64::try_from(bytes / (1024 * 1024)).unwrap_or(u64::MAX)
}

fn kib(bytes: usize) -> u64 {
    u64::try_from(bytes / 1024).unwrap_or(u64::MAX)
}

fn bounded(n: u64, range: &Range<u64>, unit: &str) -> Result<u64, String> {
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is out of range; use {} to {} {unit}",
            range.start,
            range.end - 1
        ))
    }
}

fn number(text: &str, range: &Range<u64>, unit: &str) -> Result<u64, String> {
    let n = text
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("'{text}' is not a whole number of {unit}"))?;
    bounded(n, range, unit)
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `config file F, line N, key `limits.x`: why`, the key read from the
/// line the error is on and the table header above it.
fn file_error(path: &Path, text: &str, span: &Range<usize>, why: &str) -> anyhow::Error {
    let line = line_of(text, span.start);
    match key_at(text, line) {
        Some(key) => anyhow::anyhow!(
            "config file {}, line {line}, key `{key}`: {why}",
            path.display()
        ),
        None => anyhow::anyhow!("config file {}, line {line}: {why}", path.display()),
    }
}

fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?;
    let (key, _) = here.split_once('=')?;
    let key = key.trim().trim_matches('"');
    let plain = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    if !plain(key) {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(['[', ']']).trim());
    Some(match table {
        Some(table) if plain(table) => format!("{table}.{key}"),
        _ => key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> anyhow::Result<Settings> {
        let mut settings = Settings::defaults();
        settings.apply_file(Path::new("/c/config.toml"), text)?;
        Ok(settings)
    }

    fn error(text: &str) -> String {
        match parsed(text) {
            Ok(_) => panic!("{text:?} was accepted"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn values_come_with_their_line() {
        let s = parsed("# mine\nmodel = \"qwen\"\n\n[limits]\ntool_timeout_secs = 5\n")
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(s.model.value.as_deref(), Some("qwen"));
        assert_eq!(s.model.source.to_string(), "/c/config.toml:2");
        assert_eq!(s.tool_timeout_secs.value, Some(5));
        assert_eq!(s.tool_timeout_secs.source.to_string(), "/c/config.toml:5");
        assert_eq!(s.limits().timeout, Duration::from_secs(5));
        assert_eq!(s.engine.source, Source::Default);
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        assert_eq!(
            error("model = \"q\"\nmax_rounds = \"x\"\n"),
            "config file /c/config.toml, line 2, key `max_rounds`: invalid type: string \"x\", \
             expected u64"
        );
        let unknown = error("model = \"q\"\nmodle = 3\n");
        assert!(
            unknown.starts_with("config file /c/config.toml, line 2, key `modle`: unknown field"),
            "{unknown}"
        );
        assert_eq!(
            error("[limits]\n\ntool_timeout_secs = 0\n"),
            "config file /c/config.toml, line 3, key `limits.tool_timeout_secs`: 0 is out of \
             range; use 1 to 3600 seconds"
        );
        assert_eq!(
            error("writes = \"yes\"\n"),
            "config file /c/config.toml, line 1, key `writes`: 'yes' is not a write mode; use \
             \"ask\" or \"allow\""
        );
        assert_eq!(
            error("engine = \"  \"\n"),
            "config file /c/config.toml, line 1, key `engine`: it is empty; remove the line or \
             give a value"
        );
        let syntax = error("model = \n");
        assert!(
            syntax.starts_with("config file /c/config.toml, line 1"),
            "{syntax}"
        );
    }
}
