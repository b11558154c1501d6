//! The hostile test guest declaring `read-write` access, so escape
//! attempts can be made through a read-write preopen. Never shipped.

#[path = "../../hostile/src/actions.rs"]
mod actions;

use goat_pen::{Access, Guest, ToolResult, ToolSpec};

struct HostileRw;

impl Guest for HostileRw {
    fn spec() -> ToolSpec {
        actions::spec("hostile_rw", Access::ReadWrite)
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        actions::invoke(&arguments)
    }
}

goat_pen::export_tool!(HostileRw);
