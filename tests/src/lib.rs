//! GOAT integration tests live in tests/all.
