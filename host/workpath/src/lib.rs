//! Workspace paths as the model writes them, and the one glob dialect.
//!
//! The permission gate (host) and the Pen file tools (wasm32 guests) must
//! read a path exactly alike, or a rule could be judged against one file
//! while the tool opens another. So both call the functions here: [`resolve`]
//! turns a raw workspace-relative path into a [`WorkspacePath`] or a typed
//! [`PathProblem`], and [`Glob`] compiles and matches patterns over such
//! paths. [`edit`] and [`encoding`] hold the other rules both sides must
//! apply alike: how `edit_file` matches its text in a file, and which
//! encoding a text file is read and written back in, which the approval
//! preview shows.
//!
//! # Key decision: lexical, dependency-free, one copy
//!
//! Resolution is purely lexical (`./a`, `a/`, `sub/../a` are one path; `/`
//! is the only separator); nothing here touches a filesystem, so the same
//! code runs in the guest and on the host. The crate has no dependencies so
//! the guests can take it as a path dependency without widening their
//! pinned, reproducible build. Callers turn the typed problems into their own
//! messages; they never re-implement a rule.

#![forbid(unsafe_code)]

pub mod edit;
pub mod encoding;
mod glob;
mod path;

pub use glob::{Glob, GlobProblem, MAX_ALTERNATIVES, escape};
pub use path::{MAX_PATH_BYTES, PathProblem, WorkspacePath, resolve};
