//! The Pen file tools, embedded in the host, with the spec each declares.
//!
//! They are built from `plugins/` by `plugins/build.sh` and committed under
//! `plugins/dist/` with a SHA256SUMS file; CI rebuilds them and fails on any
//! byte of difference. Embedding them means building and testing the host
//! needs no wasm toolchain, and what runs is exactly what was reviewed.
//!
//! Each one's spec is recorded beside it (`builtin_specs.json`, with the
//! sha256 of the component it was read from), so a session can offer the
//! tools without compiling any of them: a component is compiled, or taken
//! from the cache, only when its tool is first called
//! ([`Sandbox::load_builtin`](crate::Sandbox::load_builtin)). A test reads
//! every spec from its component and fails when the record differs; the
//! first call of a tool checks it again against the component it runs.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::ToolSpec;

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

/// The recorded specs, as `GOAT_WRITE_BUILTIN_SPECS=1 cargo test -p
/// goat-sandbox builtin_specs` writes them.
const RECORDED_SPECS: &str = include_str!("builtin_specs.json");

/// One built-in's spec, recorded with the sha256 of the component that
/// declared it.
#[derive(Debug, Deserialize, serde::Serialize)]
pub(crate) struct RecordedSpec {
    /// sha256 of the component the spec was read from.
    pub(crate) sha256: String,
    /// The spec, as the component's `spec()` returned it.
    pub(crate) spec: ToolSpec,
}

/// The spec recorded for the component whose sha256 is `sha256`, if one
/// was. A component rebuilt since the record was written has none, and is
/// compiled to read it.
pub(crate) fn recorded_spec(sha256: &str) -> Option<ToolSpec> {
    static RECORDED: OnceLock<Vec<RecordedSpec>> = OnceLock::new();
    RECORDED
        .get_or_init(|| serde_json::from_str(RECORDED_SPECS).unwrap_or_default())
        .iter()
        .find(|r| r.sha256 == sha256)
        .map(|r| r.spec.clone())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::{SandboxBuilder, sha256_hex};

    /// Every built-in's spec, read from its component, is the one recorded;
    /// with `GOAT_WRITE_BUILTIN_SPECS=1` the record is rewritten instead.
    #[test]
    fn builtin_specs_are_recorded_as_the_components_declare_them() {
        let sandbox = SandboxBuilder::new().build().unwrap();
        let read: Vec<RecordedSpec> = PEN_TOOLS
            .iter()
            .map(|b| RecordedSpec {
                sha256: sha256_hex(b.wasm),
                spec: sandbox.load(b.name, b.wasm).unwrap().spec().clone(),
            })
            .collect();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/builtin_specs.json");
        if std::env::var_os("GOAT_WRITE_BUILTIN_SPECS").is_some() {
            let text = serde_json::to_string_pretty(&read).unwrap() + "\n";
            std::fs::write(path, text).unwrap();
            return;
        }
        for (b, r) in PEN_TOOLS.iter().zip(&read) {
            assert_eq!(
                recorded_spec(&r.sha256).as_ref(),
                Some(&r.spec),
                "{}: the recorded spec is stale; run GOAT_WRITE_BUILTIN_SPECS=1 cargo test -p \
                 goat-sandbox builtin_specs",
                b.name
            );
        }
    }
}
