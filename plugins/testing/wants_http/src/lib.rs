//! A test guest that imports `wasi:http`, which GOAT does not offer a
//! plugin: the sandbox must refuse it at load, naming every such import,
//! before compiling it. Never shipped.

use goat_pen::{Access, Guest, ToolResult, ToolSpec};

struct WantsHttp;

impl Guest for WantsHttp {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "wants_http",
            "Test guest.",
            serde_json::json!({"type": "object"}),
            Access::None,
            &[],
        )
    }

    fn invoke(_arguments: String) -> ToolResult<String> {
        use wasip2::http::types::{Fields, OutgoingRequest};
        let request = OutgoingRequest::new(Fields::new());
        let _ = request.set_authority(Some("example.com"));
        let sent = wasip2::http::outgoing_handler::handle(request, None);
        Ok(format!("{}", sent.is_ok()))
    }
}

goat_pen::export_tool!(WantsHttp);
