//! The table of settings: each setting's key, variable, flag, default,
//! docs and parsing in one entry. It drives the config file, the
//! environment, `goat config show`, the sample in docs/configuration.md and the test
//! isolation list; adding a setting is an entry here and its field in
//! [`Settings`].

use std::ops::Range;

use anyhow::anyhow;
use goat_engine::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
};
use goat_sandbox::Limits;
use goat_shepherd::{DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_MAX_ROUNDS};

use super::{CommandsNetwork, Setting, Settings, Source, Writes};

/// One setting.
pub struct SettingDef {
    /// Its key in the config file and in `goat config show`; `limits.x`
    /// is `x` under `[limits]`.
    pub key: &'static str,
    /// The environment variable that overrides the file. Every one starts
    /// with `GOAT_`, which is how the CLI tests keep the person's own
    /// settings out.
    pub env: &'static str,
    /// The flag that overrides both, where there is one.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the docs: read by the test that keeps docs/configuration.md in step"
        )
    )]
    pub flag: Option<&'static str>,
    /// What it is, for the sample in docs/configuration.md.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the docs: read by the test that keeps docs/configuration.md in step"
        )
    )]
    pub doc: &'static str,
    /// An example value, as TOML, for the sample in docs/configuration.md.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the docs: read by the test that keeps docs/configuration.md in step"
        )
    )]
    pub example: &'static str,
    /// Its type, bounds, default and field.
    pub(super) kind: Kind,
}

/// Where a setting lives in [`Settings`].
pub(super) struct Field<T> {
    get: fn(&Settings) -> &Setting<T>,
    set: fn(&mut Settings) -> &mut Setting<T>,
}

macro_rules! field {
    ($name:ident) => {
        Field {
            get: |s| &s.$name,
            set: |s| &mut s.$name,
        }
    };
}

/// What values a setting takes.
pub(super) enum Kind {
    /// Text; no default.
    Text(Field<String>),
    /// A whole number in `range`, counted in `unit`.
    Number {
        field: Field<u64>,
        range: Range<u64>,
        unit: &'static str,
        default: fn() -> u64,
    },
    /// `"ask"` or `"allow"`, default ask.
    Writes(Field<Writes>),
    /// `true` or `false` (in the environment also `1` or `0`), default
    /// false.
    Bool(Field<bool>),
    /// A list of strings (in the environment separated by `:`), default
    /// empty.
    List(Field<Vec<String>>),
    /// `false`, `true`, or a list of destinations (in the environment
    /// `0`, `1` or a list separated by `,`, since a destination holds
    /// `:`), default false: `commands.network`.
    Network(Field<CommandsNetwork>),
    /// A whole number in `range`; no default (unset, nothing is sent).
    Whole {
        field: Field<u64>,
        range: Range<u64>,
    },
    /// A decimal number from `min` to `max`; no default (unset, nothing
    /// is sent and the engine's or the model's own default applies).
    Decimal {
        field: Field<f64>,
        min: f64,
        max: f64,
    },
}

/// Every setting, in the order the file documents and `config show`
/// prints them.
pub static SETTINGS: &[SettingDef] = &[
    SettingDef {
        key: "engine",
        env: "GOAT_ENGINE_URL",
        flag: Some("--engine"),
        doc: "The engine's OpenAI-compatible base URL",
        example: "\"http://127.0.0.1:8080/v1\"",
        kind: Kind::Text(field!(engine)),
    },
    SettingDef {
        key: "model",
        env: "GOAT_MODEL",
        flag: Some("--model"),
        doc: "The model name sent to the engine",
        example: "\"qwen3-coder\"",
        kind: Kind::Text(field!(model)),
    },
    SettingDef {
        key: "api_key_env",
        env: "GOAT_API_KEY_ENV",
        flag: Some("--api-key-env"),
        doc: "The variable holding the engine's bearer key, never the key itself",
        example: "\"LLAMA_API_KEY\"",
        kind: Kind::Text(field!(api_key_env)),
    },
    SettingDef {
        key: "ca_cert",
        env: "GOAT_CA_CERT",
        flag: Some("--ca-cert"),
        doc: "A PEM file of CA certificates trusted for an https engine besides the system's (a private CA)",
        example: "\"/etc/goat/engine-ca.pem\"",
        kind: Kind::Text(field!(ca_cert)),
    },
    SettingDef {
        key: "no_cache_prompt",
        env: "GOAT_NO_CACHE_PROMPT",
        flag: None,
        doc: "Never send llama-server cache_prompt: true (GOAT sends it, overriding a server started with --no-cache-prompt; set this to keep that, e.g. for repeatable runs)",
        example: "false",
        kind: Kind::Bool(field!(no_cache_prompt)),
    },
    SettingDef {
        key: "max_rounds",
        env: "GOAT_MAX_ROUNDS",
        flag: Some("--max-rounds"),
        doc: "Most rounds (requests to the engine) a turn may take",
        example: "24",
        kind: Kind::Number {
            field: field!(max_rounds),
            range: 1..10_001,
            unit: "rounds",
            default: || u64::try_from(DEFAULT_MAX_ROUNDS).unwrap_or(u64::MAX),
        },
    },
    SettingDef {
        key: "context_tokens",
        env: "GOAT_CONTEXT_TOKENS",
        flag: Some("--context-tokens"),
        doc: "The engine's context window; unset, GOAT asks the engine (llama.cpp /props, vLLM /v1/models, LM Studio /api/v0/models, Ollama /api/show) and, when it does not say, assumes 32768 and says so",
        example: "32768",
        kind: Kind::Number {
            field: field!(context_tokens),
            // The windows GOAT believes an engine has, too.
            range: goat_engine::PLAUSIBLE_WINDOW,
            unit: "tokens",
            default: || DEFAULT_CONTEXT_TOKENS,
        },
    },
    SettingDef {
        key: "max_output_tokens",
        env: "GOAT_MAX_OUTPUT_TOKENS",
        flag: Some("--max-output-tokens"),
        doc: "Most tokens one answer may take (sent as max_tokens); a model that repeats itself stops there instead of filling the context",
        example: "4096",
        kind: Kind::Number {
            field: field!(max_output_tokens),
            range: 1..1_048_577,
            unit: "tokens",
            default: || DEFAULT_MAX_OUTPUT_TOKENS,
        },
    },
    SettingDef {
        key: "writes",
        env: "GOAT_WRITES",
        flag: Some("--allow-writes"),
        doc: "What writes no rule decides get: \"ask\" at a terminal, or \"allow\"",
        example: "\"ask\"",
        kind: Kind::Writes(field!(writes)),
    },
    SettingDef {
        key: "mode",
        env: "GOAT_MODE",
        flag: Some("--mode"),
        doc: "The approval mode: \"ask\", \"accept-edits\" (file-tool writes in the workspace allowed; plugin writes and commands asked) or \"read-only\"",
        example: "\"ask\"",
        kind: Kind::Text(field!(mode)),
    },
    SettingDef {
        key: "limits.tool_timeout_secs",
        env: "GOAT_TOOL_TIMEOUT_SECS",
        flag: None,
        doc: "Longest a tool call may run",
        example: "30",
        kind: Kind::Number {
            field: field!(tool_timeout_secs),
            range: 1..3601,
            unit: "seconds",
            default: || Limits::default().timeout.as_secs(),
        },
    },
    SettingDef {
        key: "limits.tool_memory_mib",
        env: "GOAT_TOOL_MEMORY_MIB",
        flag: None,
        doc: "Most memory a tool call may use",
        example: "128",
        kind: Kind::Number {
            field: field!(tool_memory_mib),
            range: 1..4097,
            unit: "MiB",
            default: || {
                u64::try_from(Limits::default().memory_bytes / (1024 * 1024)).unwrap_or(u64::MAX)
            },
        },
    },
    SettingDef {
        key: "limits.tool_output_kib",
        env: "GOAT_TOOL_OUTPUT_KIB",
        flag: None,
        doc: "Largest result a tool call may return",
        example: "1024",
        kind: Kind::Number {
            field: field!(tool_output_kib),
            range: 1..65537,
            unit: "KiB",
            default: || u64::try_from(Limits::default().result_bytes / 1024).unwrap_or(u64::MAX),
        },
    },
    SettingDef {
        key: "markup.unwrapped_calls",
        env: "GOAT_MARKUP_UNWRAPPED_CALLS",
        flag: None,
        doc: "Count a complete <function=NAME> block with no <tool_call> as a tool call written as text (ADR-0067)",
        example: "false",
        kind: Kind::Bool(field!(markup_unwrapped_calls)),
    },
    SettingDef {
        key: "timeouts.connect_secs",
        env: "GOAT_CONNECT_TIMEOUT_SECS",
        flag: None,
        doc: "Longest wait for the engine to accept the connection",
        example: "10",
        kind: Kind::Number {
            field: field!(connect_timeout_secs),
            range: 1..601,
            unit: "seconds",
            default: || DEFAULT_CONNECT_TIMEOUT.as_secs(),
        },
    },
    SettingDef {
        key: "timeouts.first_byte_secs",
        env: "GOAT_FIRST_BYTE_TIMEOUT_SECS",
        flag: None,
        doc: "Longest wait for the first byte of an answer, model load and prompt processing included",
        example: "600",
        kind: Kind::Number {
            field: field!(first_byte_timeout_secs),
            range: 1..86_401,
            unit: "seconds",
            default: || DEFAULT_FIRST_BYTE_TIMEOUT.as_secs(),
        },
    },
    SettingDef {
        key: "timeouts.idle_secs",
        env: "GOAT_IDLE_TIMEOUT_SECS",
        flag: None,
        doc: "Longest silence once the answer has started",
        example: "120",
        kind: Kind::Number {
            field: field!(idle_timeout_secs),
            range: 1..86_401,
            unit: "seconds",
            default: || DEFAULT_IDLE_TIMEOUT.as_secs(),
        },
    },
    SettingDef {
        key: "timeouts.total_secs",
        env: "GOAT_TOTAL_TIMEOUT_SECS",
        flag: None,
        doc: "Longest one request to the engine may take, start to end",
        example: "3600",
        kind: Kind::Number {
            field: field!(total_timeout_secs),
            range: 1..86_401,
            unit: "seconds",
            default: || DEFAULT_TOTAL_TIMEOUT.as_secs(),
        },
    },
    SettingDef {
        key: "sampling.temperature",
        env: "GOAT_TEMPERATURE",
        flag: Some("--temperature"),
        doc: "Sampling temperature; unset, the engine's default (see docs/engines.md for the vendors' recommendations)",
        example: "0.7",
        kind: Kind::Decimal {
            field: field!(temperature),
            min: 0.0,
            max: 2.0,
        },
    },
    SettingDef {
        key: "sampling.top_p",
        env: "GOAT_TOP_P",
        flag: Some("--top-p"),
        doc: "Nucleus sampling: keep the likeliest tokens up to this probability mass; unset, the engine's default",
        example: "0.8",
        kind: Kind::Decimal {
            field: field!(top_p),
            min: 0.0,
            max: 1.0,
        },
    },
    SettingDef {
        key: "sampling.top_k",
        env: "GOAT_TOP_K",
        flag: Some("--top-k"),
        doc: "Keep only the k likeliest tokens (0 turns it off in llama.cpp); unset, the engine's default",
        example: "20",
        kind: Kind::Whole {
            field: field!(top_k),
            range: 0..1_000_001,
        },
    },
    SettingDef {
        key: "sampling.min_p",
        env: "GOAT_MIN_P",
        flag: Some("--min-p"),
        doc: "Drop tokens less likely than this fraction of the likeliest; unset, the engine's default",
        example: "0.0",
        kind: Kind::Decimal {
            field: field!(min_p),
            min: 0.0,
            max: 1.0,
        },
    },
    SettingDef {
        key: "sampling.repeat_penalty",
        env: "GOAT_REPEAT_PENALTY",
        flag: Some("--repeat-penalty"),
        doc: "Penalty on repeated tokens, 1 for none (sent as repeat_penalty and repetition_penalty); unset, the engine's default",
        example: "1.05",
        kind: Kind::Decimal {
            field: field!(repeat_penalty),
            min: 0.0,
            max: 10.0,
        },
    },
    SettingDef {
        key: "sampling.presence_penalty",
        env: "GOAT_PRESENCE_PENALTY",
        flag: Some("--presence-penalty"),
        doc: "Penalty on tokens already present, -2 to 2; unset, the engine's default",
        example: "0.0",
        kind: Kind::Decimal {
            field: field!(presence_penalty),
            min: -2.0,
            max: 2.0,
        },
    },
    SettingDef {
        key: "sampling.seed",
        env: "GOAT_SEED",
        flag: Some("--seed"),
        doc: "The sampler's seed: with temperature 0 the same request gives the same answer on the same engine build; unset, the engine's default",
        example: "42",
        kind: Kind::Whole {
            field: field!(seed),
            range: 0..4_294_967_296,
        },
    },
    SettingDef {
        key: "commands.network",
        env: "GOAT_COMMANDS_NETWORK",
        flag: None,
        doc: "run_command's network: false (none), true (all of it: TCP and every socket family), or a list of destinations reached only through GOAT's proxy: \"host\" (ports 80 and 443), \"host:port\", \"host:*\", \"*.host\" (names below host), an IP address, or a named set (registries.rust, registries.python, registries.node, registries.go); the approval question says which",
        example: "[\"registries.rust\", \"localhost:3000\"]",
        kind: Kind::Network(field!(commands_network)),
    },
    SettingDef {
        key: "commands.read_paths",
        env: "GOAT_COMMANDS_READ_PATHS",
        flag: None,
        doc: "Directories run_command may read besides the system's, the toolchains under the home directory (~/.cargo/bin, registry and git, ~/.rustup, ~/.pyenv, ~/.nvm and the like) and those PATH points into; never GOAT's own",
        example: "[\"/srv/toolchains\"]",
        kind: Kind::List(field!(commands_read_paths)),
    },
    SettingDef {
        key: "commands.containment",
        env: "GOAT_COMMANDS_CONTAINMENT",
        flag: None,
        doc: "How run_command is contained: \"auto\" (the strongest that works here), \"namespace\" (a view whose changes GOAT inspects before they land; no command where it cannot be made) or \"landlock\" (Landlock only: weaker, said in goat tools list); an MCP server runs in a view of its own whatever this says, and not at all where none can be made",
        example: "\"auto\"",
        kind: Kind::Text(field!(commands_containment)),
    },
    SettingDef {
        key: "commands.layers_dir",
        env: "GOAT_COMMANDS_LAYERS_DIR",
        flag: None,
        doc: "Where a command's change layer is kept until it lands; must be on the workspace's filesystem (default: GOAT's state directory, else the system's temporary directory)",
        example: "\"/srv/goat-layers\"",
        kind: Kind::Text(field!(commands_layers_dir)),
    },
    SettingDef {
        key: "commands.env",
        env: "GOAT_COMMANDS_ENV",
        flag: None,
        doc: "Environment variables run_command passes on besides PATH, HOME, LANG, TERM and TMPDIR",
        example: "[\"RUST_BACKTRACE\"]",
        kind: Kind::List(field!(commands_env)),
    },
];

/// The setting that bounds each engine timeout, for the message that
/// reports it: its key and variable.
pub(crate) fn timeout_setting(e: &goat_engine::EngineError) -> Option<&'static SettingDef> {
    use goat_engine::EngineError as E;
    let key = match e {
        E::ConnectTimeout { .. } => "timeouts.connect_secs",
        E::FirstByteTimeout { .. } => "timeouts.first_byte_secs",
        E::IdleTimeout { .. } => "timeouts.idle_secs",
        E::TotalTimeout { .. } => "timeouts.total_secs",
        _ => return None,
    };
    SETTINGS.iter().find(|d| d.key == key)
}

/// A value as the file gives it, its TOML type checked.
pub(super) enum Raw {
    Text(String),
    Number(u64),
    Bool(bool),
    List(Vec<String>),
    Decimal(f64),
}

/// The TOML type a setting takes in the file.
pub(super) enum RawType {
    Text,
    Number,
    Bool,
    List,
    Decimal,
    /// A boolean or a list of strings.
    BoolOrList,
}

impl SettingDef {
    /// The TOML type the file must give.
    pub(super) fn takes(&self) -> RawType {
        match self.kind {
            Kind::Text(_) | Kind::Writes(_) => RawType::Text,
            Kind::Number { .. } | Kind::Whole { .. } => RawType::Number,
            Kind::Decimal { .. } => RawType::Decimal,
            Kind::Bool(_) => RawType::Bool,
            Kind::List(_) => RawType::List,
            Kind::Network(_) => RawType::BoolOrList,
        }
    }

    /// Sets the built-in default.
    pub(super) fn set_default(&self, s: &mut Settings) {
        match &self.kind {
            Kind::Text(field) => *(field.set)(s) = Setting::by_default(None),
            Kind::Number { field, default, .. } => {
                *(field.set)(s) = Setting::by_default(Some(default()));
            }
            Kind::Writes(field) => *(field.set)(s) = Setting::by_default(Some(Writes::Ask)),
            Kind::Bool(field) => *(field.set)(s) = Setting::by_default(Some(false)),
            Kind::List(field) => *(field.set)(s) = Setting::by_default(Some(Vec::new())),
            Kind::Network(field) => {
                *(field.set)(s) = Setting::by_default(Some(CommandsNetwork::Closed));
            }
            Kind::Whole { field, .. } => *(field.set)(s) = Setting::by_default(None),
            Kind::Decimal { field, .. } => *(field.set)(s) = Setting::by_default(None),
        }
    }

    /// Checks `raw` and sets it, from `source`; the error says why, for
    /// the caller to place.
    pub(super) fn set(&self, s: &mut Settings, raw: Raw, source: Source) -> Result<(), String> {
        match (&self.kind, raw) {
            (Kind::Text(field), Raw::Text(text)) => *(field.set)(s) = Setting::new(text, source),
            (
                Kind::Number {
                    field, range, unit, ..
                },
                Raw::Number(n),
            ) => *(field.set)(s) = Setting::new(bounded(n, range, unit)?, source),
            (Kind::Writes(field), Raw::Text(text)) => {
                *(field.set)(s) = Setting::new(Writes::parse(&text)?, source);
            }
            (Kind::Bool(field), Raw::Bool(on)) => *(field.set)(s) = Setting::new(on, source),
            (Kind::List(field), Raw::List(items)) => {
                if items.iter().any(|i| i.trim().is_empty()) {
                    return Err(format!("{} has an empty entry", self.key));
                }
                *(field.set)(s) = Setting::new(items, source);
            }
            (Kind::Network(field), Raw::Bool(on)) => {
                let value = if on {
                    CommandsNetwork::Open
                } else {
                    CommandsNetwork::Closed
                };
                *(field.set)(s) = Setting::new(value, source);
            }
            (Kind::Network(field), Raw::List(items)) => {
                let items: Vec<String> = items.iter().map(|i| i.trim().to_owned()).collect();
                // A word meant as on or off, read as a host name, would
                // give a proxied network where none or all was meant.
                if let Some(word) = items.iter().find(|i| {
                    ["true", "false", "yes", "no", "on", "off", "none", "0", "1"]
                        .contains(&i.to_ascii_lowercase().as_str())
                }) {
                    return Err(format!(
                        "{}: \"{word}\" is not a host; use false (or 0) for no network, true (or \
                         1) for all of it, or a list of hosts",
                        self.key
                    ));
                }
                goat_egress::Allowlist::parse(&items).map_err(|e| format!("{}: {e}", self.key))?;
                // Nothing listed is nothing reachable: the network closed.
                let value = if items.is_empty() {
                    CommandsNetwork::Closed
                } else {
                    CommandsNetwork::Only(items)
                };
                *(field.set)(s) = Setting::new(value, source);
            }
            (Kind::Whole { field, range }, Raw::Number(n)) => {
                *(field.set)(s) = Setting::new(bounded(n, range, "")?, source);
            }
            (Kind::Decimal { field, min, max }, Raw::Decimal(x)) => {
                *(field.set)(s) = Setting::new(decimal_in(x, *min, *max)?, source);
            }
            (
                Kind::Text(_) | Kind::Writes(_),
                Raw::Number(_) | Raw::Bool(_) | Raw::List(_) | Raw::Decimal(_),
            )
            | (
                Kind::Number { .. } | Kind::Whole { .. },
                Raw::Text(_) | Raw::Bool(_) | Raw::List(_) | Raw::Decimal(_),
            )
            | (Kind::Bool(_), Raw::Text(_) | Raw::Number(_) | Raw::List(_) | Raw::Decimal(_))
            | (Kind::List(_), Raw::Text(_) | Raw::Number(_) | Raw::Bool(_) | Raw::Decimal(_))
            | (Kind::Decimal { .. }, Raw::Text(_) | Raw::Number(_) | Raw::Bool(_) | Raw::List(_))
            | (Kind::Network(_), Raw::Text(_) | Raw::Number(_) | Raw::Decimal(_)) => {
                return Err(format!("{} takes a different type", self.key));
            }
        }
        Ok(())
    }

    /// Sets the value of its variable, `text`.
    pub(super) fn set_from_env(&self, s: &mut Settings, text: String) -> anyhow::Result<()> {
        let var = self.env;
        let source = Source::Env(var);
        match &self.kind {
            Kind::Text(_) => self.set(s, Raw::Text(text), source),
            Kind::Number { range, unit, .. } => number(&text, range, unit)
                .and_then(|n| self.set(s, Raw::Number(n), source))
                .map_err(|why| format!("{var}={text}: {why}")),
            Kind::Writes(_) => self
                .set(s, Raw::Text(text), source)
                .map_err(|why| format!("{var}: {why}")),
            Kind::Whole { range, .. } => number(&text, range, "")
                .and_then(|n| self.set(s, Raw::Number(n), source))
                .map_err(|why| format!("{var}={text}: {why}")),
            Kind::Decimal { .. } => text
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("'{text}' is not a number"))
                .and_then(|x| self.set(s, Raw::Decimal(x), source))
                .map_err(|why| format!("{var}={text}: {why}")),
            Kind::Bool(_) => match text.trim() {
                "1" | "true" => self.set(s, Raw::Bool(true), source),
                "0" | "false" => self.set(s, Raw::Bool(false), source),
                _ => Err(format!(
                    "{var}={text}: use 1 or true to turn it on, 0 or false to turn it off"
                )),
            },
            Kind::Network(_) => match text.trim().to_ascii_lowercase().as_str() {
                "1" | "true" => self.set(s, Raw::Bool(true), source),
                "0" | "false" => self.set(s, Raw::Bool(false), source),
                _ => self
                    .set(
                        s,
                        Raw::List(
                            text.split(',')
                                .map(str::trim)
                                .filter(|t| !t.is_empty())
                                .map(str::to_owned)
                                .collect(),
                        ),
                        source,
                    )
                    .map_err(|why| format!("{var}: {why}")),
            },
            Kind::List(_) => self
                .set(
                    s,
                    Raw::List(
                        text.split(':')
                            .filter(|t| !t.is_empty())
                            .map(str::to_owned)
                            .collect(),
                    ),
                    source,
                )
                .map_err(|why| format!("{var}: {why}")),
        }
        .map_err(|why| anyhow!(why))
    }

    /// The value as `goat config show` prints it, and where it came from.
    pub(super) fn shown<'s>(&self, s: &'s Settings) -> (Option<String>, &'s Source) {
        match &self.kind {
            Kind::Text(field) => {
                let setting = (field.get)(s);
                (setting.value.clone(), &setting.source)
            }
            Kind::Number { field, .. } | Kind::Whole { field, .. } => {
                let setting = (field.get)(s);
                (setting.value.map(|v| v.to_string()), &setting.source)
            }
            Kind::Decimal { field, .. } => {
                let setting = (field.get)(s);
                (setting.value.map(|v| v.to_string()), &setting.source)
            }
            Kind::Writes(field) => {
                let setting = (field.get)(s);
                (
                    setting.value.map(|w| w.as_str().to_owned()),
                    &setting.source,
                )
            }
            Kind::Bool(field) => {
                let setting = (field.get)(s);
                (setting.value.map(|on| on.to_string()), &setting.source)
            }
            Kind::List(field) => {
                let setting = (field.get)(s);
                (
                    setting.value.as_ref().map(|items| format!("{items:?}")),
                    &setting.source,
                )
            }
            Kind::Network(field) => {
                let setting = (field.get)(s);
                let shown = setting.value.as_ref().map(|n| match n {
                    CommandsNetwork::Closed => "false".to_owned(),
                    CommandsNetwork::Open => "true".to_owned(),
                    CommandsNetwork::Only(items) => format!("{items:?}"),
                });
                (shown, &setting.source)
            }
        }
    }

    /// The sample's lines for it: what it is, then the key and an example.
    #[cfg(test)]
    fn sample(&self) -> String {
        let mut how = vec![self.env.to_owned()];
        how.extend(self.flag.map(str::to_owned));
        let bounds = match &self.kind {
            Kind::Number { range, unit, .. } => {
                format!("; {} to {} {unit}", range.start, range.end - 1)
            }
            Kind::Whole { range, .. } => {
                format!("; {} to {}; unset by default", range.start, range.end - 1)
            }
            Kind::Decimal { min, max, .. } => format!("; {min:?} to {max:?}; unset by default"),
            Kind::Text(_) | Kind::Writes(_) | Kind::Bool(_) => String::new(),
            Kind::List(_) => "; separated by : in the variable".to_owned(),
            Kind::Network(_) => "; 1, 0 or a list separated by , in the variable".to_owned(),
        };
        let leaf = self.key.rsplit('.').next().unwrap_or(self.key);
        format!(
            "# {} ({}{bounds})\n{leaf} = {}\n",
            self.doc,
            how.join(", "),
            self.example
        )
    }
}

/// The config file's sample in docs/configuration.md, made from the table.
#[cfg(test)]
fn sample() -> String {
    let mut out = String::new();
    let mut section = "";
    for def in SETTINGS {
        let here = def.key.rsplit_once('.').map_or("", |(table, _)| table);
        if here != section {
            out.push_str(&format!("\n[{here}]\n"));
            section = here;
        }
        out.push_str(&def.sample());
    }
    out
}

fn bounded(n: u64, range: &Range<u64>, unit: &str) -> Result<u64, String> {
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is out of range; use {} to {}{}{unit}",
            range.start,
            range.end - 1,
            if unit.is_empty() { "" } else { " " }
        ))
    }
}

fn decimal_in(x: f64, min: f64, max: f64) -> Result<f64, String> {
    if x.is_finite() && (min..=max).contains(&x) {
        Ok(x)
    } else {
        Err(format!("{x} is out of range; use {min:?} to {max:?}"))
    }
}

fn number(text: &str, range: &Range<u64>, unit: &str) -> Result<u64, String> {
    let n = text
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("'{text}' is not a whole number of {unit}"))?;
    bounded(n, range, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_one_the_cli_tests_clear() {
        // tests/all/main.rs clears every GOAT_ variable of the person's.
        for def in SETTINGS {
            assert!(def.env.starts_with("GOAT_"), "{}", def.env);
        }
    }

    #[test]
    fn keys_and_variables_are_unique() {
        for (i, a) in SETTINGS.iter().enumerate() {
            for b in &SETTINGS[i + 1..] {
                assert_ne!(a.key, b.key);
                assert_ne!(a.env, b.env);
            }
        }
    }

    #[test]
    fn the_documented_sample_is_the_table() {
        let page = include_str!("../../../../docs/configuration.md");
        let sample = format!("```toml\n{}```\n", sample().trim_start());
        assert!(
            page.contains(&sample),
            "docs/configuration.md's config sample differs from the table; it should read:\n{sample}"
        );
    }
}
