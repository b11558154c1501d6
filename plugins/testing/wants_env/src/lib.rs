//! A test guest that reads `wasi:cli/environment`, and with `{"exit": N}`
//! calls `wasi:cli/exit`: a plugin gets an empty environment, and an exit
//! ends its call as a tool failure, never the host. Never shipped.

use goat_pen::{Access, Guest, ToolResult, ToolSpec};

struct WantsEnv;

impl Guest for WantsEnv {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "wants_env",
            "Test guest.",
            serde_json::json!({"type": "object"}),
            Access::None,
            &[],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let exit = serde_json::from_str::<serde_json::Value>(&arguments)
            .ok()
            .and_then(|v| v.get("exit").and_then(serde_json::Value::as_u64));
        if let Some(code) = exit {
            wasip2::cli::exit::exit_with_code(u8::try_from(code).unwrap_or(u8::MAX));
        }
        let env = wasip2::cli::environment::get_environment();
        let args = wasip2::cli::environment::get_arguments();
        Ok(format!("env={env:?} args={args:?}"))
    }
}

goat_pen::export_tool!(WantsEnv);
