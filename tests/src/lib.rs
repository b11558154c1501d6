//! GOAT integration tests live in `tests/all`, benchmarks in `tests/benches`.
