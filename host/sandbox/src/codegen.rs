// The engine settings that decide what code Cranelift emits for a
// component. Shared, by `include!`, between the sandbox's engine
// (`engine.rs`) and the build script that compiles the built-in tools ahead
// of time (`build.rs`): code compiled under other settings is refused by
// wasmtime when loaded, so the two must not drift. Plain comments only: a
// file that is `include!`d may not hold inner doc comments.

/// Applies the code-generation settings every GOAT engine uses.
pub(crate) fn configure_codegen(config: &mut wasmtime::Config) {
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
}
