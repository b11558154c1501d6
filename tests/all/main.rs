//! GOAT's cross-crate integration tests: the real Pen tool components and
//! hostile test guests, run through the real sandbox against real files.

#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

mod cache;
mod fence;
mod hostile;
mod pen_tools;
mod plugins;
