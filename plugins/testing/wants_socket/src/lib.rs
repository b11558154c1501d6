//! A test guest that imports `wasi:sockets`, which GOAT never offers: the
//! sandbox must refuse it before it runs. Never shipped.

use goat_pen::{Access, Guest, ToolResult, ToolSpec};

struct WantsSocket;

impl Guest for WantsSocket {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "wants_socket",
            "Test guest.",
            serde_json::json!({"type": "object"}),
            Access::None,
            &[],
        )
    }

    fn invoke(_arguments: String) -> ToolResult<String> {
        let socket = wasip2::sockets::tcp_create_socket::create_tcp_socket(
            wasip2::sockets::network::IpAddressFamily::Ipv4,
        );
        Ok(format!("{}", socket.is_ok()))
    }
}

goat_pen::export_tool!(WantsSocket);
