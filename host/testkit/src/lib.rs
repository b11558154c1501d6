//! Test support for GOAT: a scripted OpenAI-compatible SSE server, and
//! helpers that build the events engines send (as codex-rs's
//! `core_test_support` does for its tests).
//!
//! Each accepted connection is answered by the next [`Reply`] in the
//! script: a status, then body steps (bytes, pauses, an abrupt close). The
//! body is delimited by closing the connection, so a test controls exactly
//! which bytes arrive and when. Every request is recorded (method, path,
//! headers, JSON body) for assertions.
//!
//! A test usually scripts whole answers, one expression each:
//! [`Reply::text`], [`Reply::tool_call`], [`Reply::markup`], or a
//! [`ReplyBuilder`] from [`Reply::builder`] to combine them in one answer
//! (reasoning, then text, then two calls). The `ev_*` helpers stay for
//! tests that need a stream no well-behaved engine would send.
//!
//! [`PrefillMeter`] counts what an engine's prefix cache must prefill for
//! the requests a server recorded (issue 25).
//!
//! [`tls_client_hello`] builds the first bytes of a TLS handshake, for tests
//! of what reads the name a tunnel is for.

#![expect(
    clippy::unwrap_used,
    reason = "test support: a failure here is a broken test"
)]
#![expect(missing_docs, reason = "test support")]

mod events;
mod hello;
mod prefill;
mod real_engine;
mod reply;
mod server;
mod tls;

pub use events::*;
pub use hello::tls_client_hello;
pub use prefill::{PrefillMeter, Sent, estimated_tokens};
pub use real_engine::{RealEngine, RealModel, RealTemplate, real_engine_dir};
pub use reply::{Arguments, ReplyBuilder, qwen_markup, qwen_unwrapped_markup};
pub use server::{Hold, Recorded, Reply, Responder, ScriptedServer, Step};
pub use tls::TestCa;
