//! A deliberately hostile guest for the sandbox's tests. Never shipped.
//!
//! Each action does something a malicious or broken tool might: escape the
//! workspace with raw WASI calls (skipping every check `goat-pen` makes),
//! write through a read-only preopen, loop forever, allocate without bound,
//! print without end, return an enormous result. The tests assert that the
//! host refuses or stops each one with its typed error and stays healthy.
//! This one declares `read` access; `hostile_rw` is the same with
//! `read-write`.

mod actions;

use goat_pen::{Access, Guest, ToolResult, ToolSpec};

struct Hostile;

impl Guest for Hostile {
    fn spec() -> ToolSpec {
        actions::spec("hostile", Access::Read)
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        actions::invoke(&arguments)
    }
}

goat_pen::export_tool!(Hostile);
