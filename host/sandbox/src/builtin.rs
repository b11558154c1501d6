//! The Pen file tools, embedded in the host.
//!
//! They are built from `plugins/` by `plugins/build.sh` and committed under
//! `plugins/dist/` with a SHA256SUMS file; CI rebuilds them and fails on any
//! byte of difference. Embedding them means building and testing the host
//! needs no wasm toolchain, and what runs is exactly what was reviewed.

/// One embedded component.
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    /// The tool's name, as its spec also says.
    pub name: &'static str,
    /// The component's bytes.
    pub wasm: &'static [u8],
}

macro_rules! builtin {
    ($name:literal) => {
        Builtin {
            name: $name,
            wasm: include_bytes!(concat!("../../../plugins/dist/", $name, ".wasm")),
        }
    };
}

/// The eight Pen file tools, reading tools first.
pub const PEN_TOOLS: [Builtin; 8] = [
    builtin!("read_file"),
    builtin!("list_directory"),
    builtin!("find_files"),
    builtin!("search_files"),
    builtin!("write_file"),
    builtin!("edit_file"),
    builtin!("move_file"),
    builtin!("delete_file"),
];
