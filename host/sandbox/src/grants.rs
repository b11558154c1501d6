//! What the person granted one plugin at `goat plugins add`, beyond the
//! workspace access its spec declares (ADR-0097): environment keys, hosts
//! its `wasi:http` requests may reach, and limits above the defaults.
//!
//! Grants come from the person only: the model never grants anything, and
//! a plugin cannot raise them. Each limit has a ceiling the sandbox's pool
//! is sized for, so a grant is checked once, at add, and holds at every
//! call.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Limits;

/// Longest wall time a plugin call may be granted.
pub const MAX_GRANTED_TIMEOUT: Duration = Duration::from_secs(600);

/// Most linear memory a plugin call may be granted, all memories together.
pub const MAX_GRANTED_MEMORY_BYTES: usize = 1024 * 1024 * 1024;

/// Most core instances a plugin call may be granted.
pub const MAX_GRANTED_INSTANCES: usize = 64;

/// Most environment keys or hosts one plugin may be granted.
pub const MAX_GRANTED_ITEMS: usize = 64;

/// Longest environment key or host granted.
const MAX_ITEM_BYTES: usize = 255;

/// What one plugin was granted. The default grants nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Environment variables the plugin sees, by name, with GOAT's value
    /// at each call (a key GOAT has no value for is absent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Destinations its `wasi:http` requests may reach, as the egress
    /// allowlist reads them (`host`, `host:port`, `*.host`, a named set).
    /// Empty: every request is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Wall time per call, seconds, instead of the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Linear memory per call, MiB, instead of the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Core instances per call, instead of the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<u64>,
    /// The real wall clock, instead of one frozen at the Unix epoch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wall_clock: bool,
}

impl Grants {
    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Checks every grant against its form and ceiling; the first problem,
    /// said so the person can fix the command line.
    pub fn check(&self) -> Result<(), String> {
        if self.env.len() > MAX_GRANTED_ITEMS || self.hosts.len() > MAX_GRANTED_ITEMS {
            return Err(format!(
                "at most {MAX_GRANTED_ITEMS} environment keys and {MAX_GRANTED_ITEMS} hosts can be granted"
            ));
        }
        for key in &self.env {
            if !env_key(key) {
                return Err(format!(
                    "'{}' is not an environment variable name: use letters, digits and '_', \
                     not starting with a digit, at most {MAX_ITEM_BYTES} bytes",
                    key.escape_debug()
                ));
            }
        }
        for host in &self.hosts {
            if host.is_empty() || host.len() > MAX_ITEM_BYTES {
                return Err(format!(
                    "a host must be 1 to {MAX_ITEM_BYTES} bytes, got {}",
                    host.len()
                ));
            }
        }
        let within = |what: &str, value: Option<u64>, max: u64, unit: &str| match value {
            Some(v) if v == 0 || v > max => Err(format!(
                "{what} must be from 1 to {max}{unit}, got {v}{unit}"
            )),
            _ => Ok(()),
        };
        within(
            "the timeout",
            self.timeout_secs,
            MAX_GRANTED_TIMEOUT.as_secs(),
            " s",
        )?;
        within(
            "the memory",
            self.memory_mib,
            (MAX_GRANTED_MEMORY_BYTES / (1024 * 1024)) as u64,
            " MiB",
        )?;
        within(
            "the instances",
            self.instances,
            MAX_GRANTED_INSTANCES as u64,
            "",
        )
    }

    /// One line for the person: what is granted, or "nothing".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.env.is_empty() {
            parts.push(format!("environment {}", self.env.join(", ")));
        }
        if !self.hosts.is_empty() {
            parts.push(format!("network {}", self.hosts.join(", ")));
        }
        if let Some(s) = self.timeout_secs {
            parts.push(format!("timeout {s} s"));
        }
        if let Some(m) = self.memory_mib {
            parts.push(format!("memory {m} MiB"));
        }
        if let Some(n) = self.instances {
            parts.push(format!("{n} instances"));
        }
        if self.wall_clock {
            parts.push("the wall clock".to_owned());
        }
        if parts.is_empty() {
            "nothing".to_owned()
        } else {
            parts.join("; ")
        }
    }
}

/// A portable environment variable name.
fn env_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    key.len() <= MAX_ITEM_BYTES
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Limits {
    /// These limits with what `grants` raises (or lowers), each held to
    /// its ceiling.
    #[must_use]
    pub fn granted(&self, grants: &Grants) -> Self {
        let mut limits = self.clone();
        if let Some(s) = grants.timeout_secs {
            limits.timeout = Duration::from_secs(s).min(MAX_GRANTED_TIMEOUT);
        }
        if let Some(m) = grants.memory_mib {
            let bytes = usize::try_from(m.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
            limits.memory_bytes = bytes.min(MAX_GRANTED_MEMORY_BYTES);
        }
        if let Some(n) = grants.instances {
            limits.instances = usize::try_from(n)
                .unwrap_or(usize::MAX)
                .min(MAX_GRANTED_INSTANCES);
        }
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_checked_against_their_form_and_ceiling() {
        assert!(Grants::default().check().is_ok());
        assert_eq!(Grants::default().describe(), "nothing");
        let ok = Grants {
            env: vec!["HOME".into(), "_X1".into()],
            hosts: vec!["example.com".into()],
            timeout_secs: Some(600),
            memory_mib: Some(1024),
            instances: Some(64),
            wall_clock: true,
        };
        assert!(ok.check().is_ok(), "{:?}", ok.check());
        for bad in [
            Grants {
                env: vec!["1X".into()],
                ..Grants::default()
            },
            Grants {
                env: vec!["A=B".into()],
                ..Grants::default()
            },
            Grants {
                env: vec![String::new()],
                ..Grants::default()
            },
            Grants {
                hosts: vec![String::new()],
                ..Grants::default()
            },
            Grants {
                timeout_secs: Some(601),
                ..Grants::default()
            },
            Grants {
                memory_mib: Some(0),
                ..Grants::default()
            },
            Grants {
                memory_mib: Some(1025),
                ..Grants::default()
            },
            Grants {
                instances: Some(65),
                ..Grants::default()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn granted_limits_replace_the_defaults_within_their_ceilings() {
        let base = Limits::default();
        assert_eq!(base.granted(&Grants::default()), base);
        let limits = base.granted(&Grants {
            timeout_secs: Some(90),
            memory_mib: Some(512),
            instances: Some(48),
            ..Grants::default()
        });
        assert_eq!(limits.timeout, Duration::from_secs(90));
        assert_eq!(limits.memory_bytes, 512 * 1024 * 1024);
        assert_eq!(limits.instances, 48);
        assert_eq!(limits.stdio_bytes, base.stdio_bytes);
        let capped = base.granted(&Grants {
            memory_mib: Some(u64::MAX),
            ..Grants::default()
        });
        assert_eq!(capped.memory_bytes, MAX_GRANTED_MEMORY_BYTES);
    }
}
