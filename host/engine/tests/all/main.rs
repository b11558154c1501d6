//! goat-engine against a scripted local SSE server: every engine dialect,
//! re-chunked at the byte level, each error typed, the request body checked.

#![expect(clippy::unwrap_used, reason = "tests")]

mod assembly;
mod dialects;
mod failures;
mod loading;
mod requests;
mod sampling;
mod tls;
mod window;
