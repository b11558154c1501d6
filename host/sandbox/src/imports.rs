//! What a component imports, read from its bytes before it is compiled.
//!
//! Compiling is the expensive step, and the one a hostile file would abuse;
//! the import allowlist needs only the component's top-level import names,
//! which a parse (no validation, no code generation) reads in a fraction of
//! the time. So a component that imports anything GOAT does not offer is
//! refused before a byte of it is compiled, with every such import named.
//! The compiled component's type is checked again after compiling, so what
//! runs is what was checked.

use wasmparser::{Parser, Payload};

use crate::linker::import_allowed;
use crate::{SandboxError, ToolKind};

/// The names a component imports at its top level (`interface@version`),
/// in the order it declares them. Nested components' and core modules'
/// imports are satisfied inside the component and are not the host's to
/// offer.
pub(crate) fn component_imports(wasm: &[u8]) -> Result<Vec<String>, wasmparser::BinaryReaderError> {
    let mut names = Vec::new();
    // Each module or component begins with a `Version` payload and finishes
    // with an `End`; `parse_all` yields nested ones inline.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    names.push(import?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

/// Reads `wasm`'s imports and refuses it, naming every import outside what
/// `kind` may import, before anything compiles it.
pub(crate) fn checked_imports(
    label: &str,
    wasm: &[u8],
    kind: ToolKind,
) -> Result<Vec<String>, SandboxError> {
    let imports = component_imports(wasm).map_err(|e| SandboxError::Compile {
        name: label.to_owned(),
        source: wasmtime::Error::new(e),
    })?;
    check_allowed(label, &imports, kind)?;
    Ok(imports)
}

/// Refuses `imports` if any is outside what `kind` may import, naming them
/// all.
pub(crate) fn check_allowed(
    label: &str,
    imports: &[String],
    kind: ToolKind,
) -> Result<(), SandboxError> {
    let allowed = kind.allowed_imports();
    let forbidden: Vec<String> = imports
        .iter()
        .filter(|name| !import_allowed(name, allowed))
        .cloned()
        .collect();
    if forbidden.is_empty() {
        Ok(())
    } else {
        Err(SandboxError::ForbiddenImport {
            name: label.to_owned(),
            imports: forbidden,
            allowed: allowed.join(", "),
        })
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::builtin::PEN_TOOLS;

    #[test]
    fn imports_read_from_the_bytes_are_those_the_compiled_component_declares() {
        let engine = wasmtime::Engine::default();
        let read_file = PEN_TOOLS[0];
        let parsed = component_imports(read_file.wasm).unwrap();
        let component = wasmtime::component::Component::new(&engine, read_file.wasm).unwrap();
        let compiled: Vec<String> = component
            .component_type()
            .imports(&engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        assert!(!parsed.is_empty());
        assert_eq!(parsed, compiled);
    }

    #[test]
    fn every_forbidden_import_is_named() {
        let imports = [
            "wasi:io/streams@0.2.12",
            "evil:host/secrets@0.1.0",
            "wasi:filesystem/types@0.2.12",
            "wasi:http/incoming-handler@0.2.12",
        ]
        .map(str::to_owned);
        match check_allowed("x", &imports, ToolKind::Plugin) {
            Err(SandboxError::ForbiddenImport { name, imports, .. }) => {
                assert_eq!(name, "x");
                assert_eq!(
                    imports,
                    [
                        "evil:host/secrets@0.1.0",
                        "wasi:http/incoming-handler@0.2.12"
                    ]
                );
            }
            other => panic!("expected ForbiddenImport, got {other:?}"),
        }
        assert!(check_allowed("x", &imports[..1], ToolKind::Plugin).is_ok());
    }

    #[test]
    fn bytes_that_do_not_parse_are_refused_before_compiling() {
        assert!(matches!(
            checked_imports("junk", b"\0asm\x0d\0\x01\0\xff\xff", ToolKind::Plugin),
            Err(SandboxError::Compile { .. })
        ));
    }
}
