//! GOAT's built-in tools, compiled when GOAT was built (`build.rs`).
//!
//! Embedded in the binary beside the components themselves and keyed by the
//! sha256 of the component each was compiled from, so code is only ever
//! taken for exactly the bytes it came from. wasmtime checks each one
//! against the running engine (its version, its settings, the CPU's
//! features) before using it; code this engine does not accept is never
//! run, and the component is compiled as it would be without it.

use wasmtime::Engine;
use wasmtime::component::Component;

include!(concat!(env!("OUT_DIR"), "/precompiled.rs"));

/// Built-in code compiled ahead of time: sha256 of a component, its code.
pub(crate) type Table = &'static [(&'static str, &'static [u8])];

/// What this binary carries: how many built-in tools were compiled when it
/// was built, or why none were (built for another target, or with
/// `GOAT_PRECOMPILE=0`).
pub fn precompiled_builtins() -> Result<usize, &'static str> {
    match NOT_PRECOMPILED {
        Some(reason) => Err(reason),
        None => Ok(PRECOMPILED.len()),
    }
}

/// The code in `table` for the component whose sha256 is `sha256`, if there
/// is some and `engine` accepts it.
pub(crate) fn lookup(table: Table, engine: &Engine, sha256: &str) -> Option<Component> {
    let (_, code) = table.iter().find(|(sha, _)| *sha == sha256)?;
    deserialize(engine, code).ok()
}

#[expect(
    unsafe_code,
    reason = "deserializing compiled code trusts it as native code; this code is part of GOAT's \
              own binary, compiled by its build from the components embedded beside it"
)]
fn deserialize(engine: &Engine, code: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `code` is a static in this binary, written by GOAT's build
    // script from the built-in component with the same sha256, with the
    // engine settings in `codegen.rs`: it is as trusted as the binary that
    // runs it. wasmtime validates its header and its compatibility with
    // `engine` (version, settings, CPU features) and refuses it otherwise.
    unsafe { Component::deserialize(engine, code) }
}
