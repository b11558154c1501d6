//! What a plugin file is, read from its first eight bytes: a component, a
//! core module, precompiled native code, or not WebAssembly at all.

/// Checks the header before anything else looks at the bytes, so a file
/// that is not a component is refused with what it is instead.
pub(crate) fn check_component_header(bytes: &[u8]) -> Result<(), String> {
    const WASM_MAGIC: &[u8] = b"\0asm";
    const CORE_VERSION: &[u8] = &[1, 0, 0, 0];
    const COMPONENT_VERSION: &[u8] = &[0x0d, 0, 1, 0];
    if bytes.starts_with(b"\x7fELF") {
        return Err(
            "it is native code (an ELF file, such as a wasmtime .cwasm precompiled \
                    artifact); GOAT never loads precompiled code from a plugin: give it the \
                    WebAssembly component (.wasm) and GOAT compiles it itself"
                .to_owned(),
        );
    }
    if !bytes.starts_with(WASM_MAGIC) {
        return Err("it is not WebAssembly (no \\0asm header)".to_owned());
    }
    match bytes.get(4..8) {
        Some(COMPONENT_VERSION) => Ok(()),
        Some(CORE_VERSION) => Err(
            "it is a core WebAssembly module, not a component; make it a \
                                   component that exports goat:tool/tool@0.1.0 (wasm-component-ld \
                                   does this when linking, or `wasm-tools component new`)"
                .to_owned(),
        ),
        _ => Err(
            "it is WebAssembly of an unknown version or layer, not a WASI 0.2 component".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_other_than_a_component_are_refused_saying_what_they_are() {
        let table: [(&[u8], Option<&str>); 5] = [
            (b"\0asm\x0d\0\x01\0rest", None),
            (b"\x7fELF\x02\x01\x01", Some("precompiled")),
            (b"\0asm\x01\0\0\0", Some("core WebAssembly module")),
            (b"\0asm\x0e\0\x01\0", Some("unknown version")),
            (b"(component)", Some("not WebAssembly")),
        ];
        for (bytes, want) in table {
            match (check_component_header(bytes), want) {
                (Ok(()), None) => {}
                (Err(reason), Some(want)) => assert!(reason.contains(want), "{reason}"),
                (got, want) => panic!("{bytes:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
