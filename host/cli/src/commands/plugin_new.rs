//! `goat plugins new NAME --lang rust|python|js`: a directory holding
//! GOAT's WIT, a minimal tool (the line counter of `plugins/examples`) and
//! the one build command, which builds with the registries' tools alone
//! (stock Rust with wit-bindgen from crates.io, componentize-py from PyPI,
//! componentize-js from npm). The same sources
//! are built and run by GOAT's tests, so what a new author starts from is
//! known to work.
//!
//! The directory is written whole or not at all: everything is made in a
//! temporary directory beside it, which is then renamed into place; an
//! existing directory is never written into.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::ValueEnum;
use goat_catalog::PluginName;

use crate::{Outcome, text};

/// The languages a new plugin can be written in.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Lang {
    /// Rust, built by cargo for wasm32-unknown-unknown with wit-bindgen
    /// (crates.io), linked into a component by wasm-component-ld.
    Rust,
    /// Python, built with componentize-py (PyPI).
    Python,
    /// JavaScript, built with componentize-js (npm, StarlingMonkey).
    #[value(alias = "javascript")]
    Js,
}

/// The toolchain versions GOAT's tests build with.
const COMPONENTIZE_PY: &str = "0.25.1";
const COMPONENTIZE_JS: &str = "0.23.0";

/// GOAT's WIT, as the repository holds it.
const WIT: &[(&str, &str)] = &[
    ("wit/tool.wit", include_str!("../../../../wit/tool.wit")),
    (
        "wit/deps/io/io.wit",
        include_str!("../../../../wit/deps/io/io.wit"),
    ),
    (
        "wit/deps/clocks/clocks.wit",
        include_str!("../../../../wit/deps/clocks/clocks.wit"),
    ),
    (
        "wit/deps/filesystem/filesystem.wit",
        include_str!("../../../../wit/deps/filesystem/filesystem.wit"),
    ),
];

const RUST_LIB: &str = include_str!("../../../../plugins/examples/rust/src/lib.rs");
const RUST_CARGO_CONFIG: &str =
    include_str!("../../../../plugins/examples/rust/.cargo/config.toml");
const RUST_MANIFEST: &str = include_str!("../../../../plugins/examples/rust/Cargo.toml");

const PYTHON_APP: &str = include_str!("../../../../plugins/examples/python/app.py");
const JS_APP: &str = include_str!("../../../../plugins/examples/javascript/wc.js");
const JS_BUILD: &str = include_str!("../../../../plugins/examples/javascript/build.mjs");

/// The files of a new plugin `name` in `lang`: path and content.
fn files(name: &PluginName, lang: Lang) -> Vec<(String, String)> {
    let name = name.as_str();
    let mut out: Vec<(String, String)> = WIT
        .iter()
        .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
        .collect();
    let mut wasm = format!("{name}.wasm");
    let (build, source) = match lang {
        Lang::Rust => {
            // The example's manifest, named for this plugin, without the
            // note that it is built outside GOAT's guest workspace.
            let manifest = RUST_MANIFEST
                .replacen("name = \"wc\"", &format!("name = \"{name}\""), 1)
                .lines()
                .filter(|l| !l.starts_with("# "))
                .collect::<Vec<_>>()
                .join("\n")
                + "\n";
            out.push(("Cargo.toml".to_owned(), manifest));
            out.push((
                ".cargo/config.toml".to_owned(),
                RUST_CARGO_CONFIG.to_owned(),
            ));
            out.push(("src/lib.rs".to_owned(), RUST_LIB.to_owned()));
            out.push((".gitignore".to_owned(), "target/\n".to_owned()));
            wasm = format!("target/wasm32-unknown-unknown/release/{name}.wasm");
            (
                "rustup target add wasm32-unknown-unknown\ncargo build --release".to_owned(),
                "`src/lib.rs`: `spec()` says what the tool is and which argument fields are \
                 workspace paths; `invoke()` gets the arguments as JSON text and returns \
                 `Ok(text)` or `Err(ToolError::...)`; the workspace is reached through the \
                 `wasi::filesystem` bindings wit-bindgen generates from `wit/`",
            )
        }
        Lang::Python => {
            out.push(("app.py".to_owned(), PYTHON_APP.to_owned()));
            out.push((
                ".gitignore".to_owned(),
                "venv/\n__pycache__/\n*.wasm\n".to_owned(),
            ));
            (
                format!(
                    "python3 -m venv venv && venv/bin/pip install componentize-py=={COMPONENTIZE_PY}\n\
                     venv/bin/componentize-py -d wit -w file-tool componentize -p . app -o {name}.wasm"
                ),
                "`app.py`: `spec()` says what the tool is and which argument fields are \
                 workspace paths; `invoke()` gets the arguments as JSON text and returns \
                 text, or raises `componentize_py_types.Err(tool.ToolError_...)`",
            )
        }
        Lang::Js => {
            out.push(("wc.js".to_owned(), JS_APP.to_owned()));
            out.push(("build.mjs".to_owned(), JS_BUILD.to_owned()));
            out.push((
                "package.json".to_owned(),
                format!(
                    "{{\n  \"name\": \"{name}\",\n  \"private\": true,\n  \"type\": \"module\",\n  \
                     \"scripts\": {{ \"build\": \"node build.mjs wit {name}.wasm\" }},\n  \
                     \"devDependencies\": {{ \"@bytecodealliance/componentize-js\": \"{COMPONENTIZE_JS}\" }}\n}}\n"
                ),
            ));
            out.push((
                ".gitignore".to_owned(),
                "node_modules/\n*.wasm\n".to_owned(),
            ));
            (
                "npm install && npm run build".to_owned(),
                "`wc.js`: `tool.spec()` says what the tool is and which argument fields are \
                 workspace paths; `tool.invoke()` gets the arguments as JSON text and returns \
                 text, or throws `{ tag: 'not-found', val: message }` (or another tool-error tag)",
            )
        }
    };
    out.push((
        "README.md".to_owned(),
        format!(
            "# {name}\n\n\
             A GOAT plugin tool. It starts as GOAT's example, a line counter (`count`); \
             change {source}.\n\n\
             Build it (the registries' tools alone):\n\n```sh\n{build}\n```\n\n\
             Add it, and its tool is offered to the model as `{name}__count`:\n\n\
             ```sh\ngoat plugins add {wasm} --name {name}\n```\n\n\
             What a plugin may import and what it gets of each: GOAT's docs/plugins.md.\n"
        ),
    ));
    out
}

/// Makes the plugin directory `dir` (default `./NAME`) for `name` in `lang`.
pub fn new(name: &str, lang: Lang, dir: Option<&Path>) -> anyhow::Result<Outcome> {
    let name = PluginName::new(name)?;
    let dir: PathBuf = dir.map_or_else(|| PathBuf::from(name.as_str()), Path::to_owned);
    if std::fs::symlink_metadata(&dir).is_ok() {
        bail!(
            "'{}' already exists; nothing was written. Choose another directory with --dir, or \
             remove it first",
            text::escape_controls(&dir.display().to_string())
        );
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let staging = tempfile::Builder::new()
        .prefix(".goat-plugin-new-")
        .tempdir_in(&parent)
        .with_context(|| format!("making a directory in {}", parent.display()))?;
    for (path, text) in files(&name, lang) {
        let at = staging.path().join(&path);
        if let Some(up) = at.parent() {
            std::fs::create_dir_all(up).with_context(|| format!("making {}", up.display()))?;
        }
        std::fs::write(&at, text).with_context(|| format!("writing {}", at.display()))?;
    }
    // The whole directory appears at once, or not at all.
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e).with_context(|| format!("moving the new plugin to {}", dir.display()));
    }
    println!(
        "made '{}': a {} plugin named {}; its README.md says how to build and add it",
        text::escape_controls(&dir.display().to_string()),
        match lang {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
        },
        name.as_str()
    );
    Ok(Outcome::Ok)
}
