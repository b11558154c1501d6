//! Runs GOAT's tools as WASI 0.2 components in wasmtime, with the workspace
//! (the Pen) as their only filesystem.
//!
//! The key decision: a tool is untrusted code, and every call starts from
//! nothing. Each call gets a fresh [`wasmtime::Store`] and a fresh WASI
//! context that grants no environment, no arguments, no inherited stdio, no
//! sockets and no name lookup, and exactly one preopen: the workspace,
//! read-only unless the tool declares `read-write` *and* the caller grants
//! it. wasmtime-wasi resolves every path through cap-std, so `..`, absolute
//! paths and symlinks cannot leave the preopen. Limits on time (epoch
//! interruption), memory, tables, instances, WASI resources, hostcall data,
//! captured output and result size are on by default; hitting one ends the
//! call with a typed [`ToolFailure`] and leaves the host healthy.
//!
//! GOAT's own tools get only the interfaces in [`ALLOWED_IMPORTS`]. Plugins
//! (third-party tools the person added, [`Sandbox::load_plugin`]) get the
//! rest of WASI 0.2, [`PLUGIN_IMPORTS`], each interface giving them nothing
//! of the host's the person did not grant ([`Grants`]): no environment but
//! the keys granted; empty stdin and arguments; captured stdio; refused
//! sockets; `wasi:http` only through the egress proxy the caller gives the
//! call, to the hosts granted; an exit that is a tool failure; a wall clock
//! frozen at the epoch. A component importing
//! anything else is refused when it is loaded, every such import named,
//! before it is compiled.
//!
//! Inside the preopen, every path-taking filesystem operation goes through
//! the call's fence (`fence`, `policy_fs`): it is decided on the file the
//! operation reaches, by a [`PathPolicy`] the caller supplies with the
//! [`Pen`]; only regular files and directories are opened; a file with
//! more than one link is never written; and whole-file writes replace their
//! target only when the call succeeds. This crate knows nothing of models
//! or permission rules: the caller decides what access a call gets and
//! what its policy says.

mod bindings;
pub mod builtin;
mod cache;
mod call;
mod classify;
mod codegen;
mod deadline;
mod engine;
mod error;
mod fence;
mod grants;
mod header;
mod hook;
mod http;
mod imports;
mod limiter;
mod limits;
mod linker;
mod listing;
mod load;
mod output;
mod policy_fs;
mod precompiled;
mod spec;

pub use call::{CallResult, Pen};
pub use engine::{Sandbox, SandboxBuilder};
pub use error::{SandboxError, ToolError, ToolFailure};
pub use fence::{MAX_WRITE_LINKS, PathPolicy};
pub use grants::*;
pub use hook::{HookComponent, HookFailure, HookVerdict};
pub use http::{HttpEgress, PROXY_ANSWER_HEADER, ProxyAccess};
pub use limits::*;
pub use linker::{ALLOWED_IMPORTS, PLUGIN_IMPORTS, ToolKind};
pub use load::{CodeOrigin, MAX_PLUGIN_BYTES, Tool, sha256_hex};
pub use precompiled::precompiled_builtins;
pub use spec::{Access, MAX_DESCRIPTION_BYTES, MAX_TOOL_NAME_BYTES, ToolSpec};
