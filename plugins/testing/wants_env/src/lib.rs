//! A test guest that imports `wasi:cli/environment`, which GOAT never
//! offers: the sandbox must refuse it before it runs. Never shipped.

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

    fn invoke(_arguments: String) -> ToolResult<String> {
        let env = wasip2::cli::environment::get_environment();
        Ok(format!("{env:?}"))
    }
}

goat_pen::export_tool!(WantsEnv);
