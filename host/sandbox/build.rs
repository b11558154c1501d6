//! Compiles GOAT's built-in tools (`plugins/dist/*.wasm`) ahead of time, so
//! that no one pays Cranelift's compile on a tool's first call.
//!
//! The compiled code is written to `OUT_DIR` and embedded in the binary,
//! keyed by the sha256 of the component it was compiled from
//! (`precompiled.rs`, read by `src/precompiled.rs`). It is compiled with the
//! engine settings the sandbox uses (`src/codegen.rs`, shared by
//! `include!`) for the CPU this build runs on. Where the running machine
//! differs, wasmtime refuses the code when it is loaded and the sandbox
//! compiles the component as it always did: precompiled code is a shortcut,
//! never a requirement.
//!
//! Nothing is precompiled (and the binary says why) when building for
//! another target than the build machine, or with `GOAT_PRECOMPILE=0`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

include!("src/codegen.rs");

fn main() {
    let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let dist = manifest.join("../../plugins/dist");
    let out = PathBuf::from(env("OUT_DIR"));
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/codegen.rs");
    println!("cargo::rerun-if-changed={}", dist.display());
    println!("cargo::rerun-if-env-changed=GOAT_PRECOMPILE");

    let components = built_ins(&dist);
    for path in &components {
        println!("cargo::rerun-if-changed={}", path.display());
    }
    let (entries, skipped) = match why_not(&env("TARGET"), &env("HOST")) {
        Some(reason) => (Vec::new(), Some(reason)),
        None => match precompile(&components, &out) {
            Ok(entries) => (entries, None),
            Err(reason) => {
                println!("cargo::warning=built-in tools not precompiled: {reason}");
                (Vec::new(), Some(reason))
            }
        },
    };

    let mut rs = String::from(
        "/// sha256 of each built-in component, and its code compiled at build time.\n\
         pub(crate) const PRECOMPILED: &[(&str, &[u8])] = &[\n",
    );
    for (sha256, path) in &entries {
        let _ = writeln!(
            rs,
            "    ({sha256:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    rs.push_str("];\n\n/// Why nothing was precompiled, if nothing was.\n");
    let _ = writeln!(
        rs,
        "pub(crate) const NOT_PRECOMPILED: Option<&str> = {skipped:?};"
    );
    if let Err(e) = std::fs::write(out.join("precompiled.rs"), rs) {
        panic!("cannot write {}: {e}", out.join("precompiled.rs").display());
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo did not set {name}"))
}

/// Why this build cannot precompile, if it cannot.
fn why_not(target: &str, host: &str) -> Option<String> {
    if std::env::var("GOAT_PRECOMPILE").is_ok_and(|v| v == "0") {
        return Some("GOAT_PRECOMPILE=0 when it was built".to_owned());
    }
    (target != host).then(|| format!("it was built for {target} on {host}"))
}

/// The built-in components: the `.wasm` files at the top of `plugins/dist`
/// (the test components live below it).
fn built_ins(dist: &Path) -> Vec<PathBuf> {
    let entries =
        std::fs::read_dir(dist).unwrap_or_else(|e| panic!("cannot read {}: {e}", dist.display()));
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    paths.sort();
    paths
}

/// Compiles each component; returns its sha256 and where its code is.
fn precompile(components: &[PathBuf], out: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let mut config = wasmtime::Config::new();
    configure_codegen(&mut config);
    let engine = wasmtime::Engine::new(&config).map_err(|e| format!("{e:#}"))?;
    let dir = out.join("precompiled");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries = Vec::new();
    for path in components {
        let wasm = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let sha256: String = Sha256::digest(&wasm)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let code = engine
            .precompile_component(&wasm)
            .map_err(|e| format!("{}: {e:#}", path.display()))?;
        let cwasm = dir.join(format!("{sha256}.cwasm"));
        std::fs::write(&cwasm, code).map_err(|e| format!("{}: {e}", cwasm.display()))?;
        entries.push((sha256, cwasm));
    }
    Ok(entries)
}
