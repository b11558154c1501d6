//! Plugins built with the toolchains people write them with, from the
//! registries (issue 37): the same line-counting tool in Python, built
//! with componentize-py (PyPI), and in JavaScript, built with
//! componentize-js (npm, StarlingMonkey) and with jco's QuickJS backend
//! (npm), is added with `goat plugins add`
//! and called by a scripted model through `goat run`, and its counts are
//! what the engine is sent back. `.ci/run` installs each toolchain cached
//! outside the repository and names it (`GOAT_COMPONENTIZE_PY`, the
//! binary; `GOAT_COMPONENTIZE_JS` and `GOAT_JCO`, directories holding
//! `node_modules`);
//! without one its test skips with a note, unless `..._REQUIRED=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use goat_testkit::Reply;

use crate::{GoatRun, text};

/// The toolchain `.ci/run` named in `var`, or `None` with a note.
fn toolchain(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os(format!("{var}_REQUIRED")).is_some_and(|v| v == "1") => {
            panic!("{var}_REQUIRED=1 but {var} is not set")
        }
        None => {
            eprintln!("note: {var} is not set (.ci/run installs {what}); skipping");
            None
        }
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Adds the plugin at `wasm` as `wc`, runs a model that calls it over a
/// small workspace, and checks the counts the engine was sent back.
async fn counts_through_goat_run(run: crate::GoatRunBuilder, wasm: &Path) {
    let env = run.env();
    env.add_plugin(wasm, &["--name", "wc"]);
    std::fs::write(env.ws.join("a.txt"), "one two\nthree\n").unwrap();
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    std::fs::write(env.ws.join("sub/b.txt"), "four\n").unwrap();
    std::fs::write(env.ws.join("skip.md"), "not counted\n").unwrap();
    let run = run.run("Count the text files").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let requests = run.server.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    let rows: Vec<Vec<&str>> = result
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["2", "3", "14", "a.txt"],
            vec!["1", "1", "5", "sub/b.txt"],
            vec!["3", "4", "19", "total"],
        ],
        "{result}"
    );
}

fn counting_run() -> crate::GoatRunBuilder {
    GoatRun::builder()
        .replies([
            Reply::tool_call("wc__count", r#"{"glob": "**/*.txt"}"#),
            Reply::text("Counted."),
        ])
        .arg("--output")
        .arg("jsonl")
}

/// A copy of the example in `plugins/examples/DIR` in a directory of its
/// own (a build writes beside its source), under `root`.
fn example(root: &Path, dir: &str, files: &[&str]) -> PathBuf {
    copied(root, &format!("plugins/examples/{dir}"), files)
}

/// Asserts `out` (a hostile plugin's attempt at `action`) was refused and
/// shows nothing of `/etc/passwd` or the file beside the workspace.
fn assert_refused_unread(action: &str, out: &std::process::Output) {
    let said = text(&out.stdout);
    assert!(
        said.starts_with("refused:"),
        "{action}: {said}{}",
        text(&out.stderr)
    );
    assert!(
        !said.contains("root:") && !said.contains("secret outside"),
        "{said}"
    );
}

/// Every file under `from`, copied to the same place under `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `files` of the repository's directory `from`, copied into a directory
/// of the same last name under `root`.
fn copied(root: &Path, from: &str, files: &[&str]) -> PathBuf {
    let name = Path::new(from).file_name().unwrap();
    let source = root.join(name);
    std::fs::create_dir(&source).unwrap();
    for file in files {
        std::fs::copy(repo().join(from).join(file), source.join(file)).unwrap();
    }
    source
}

/// Builds the Python module `app` in `source` into `wasm` with
/// componentize-py, against the repository's WIT.
fn build_python(componentize: &Path, source: &Path, wasm: &Path) {
    build_python_world(componentize, &repo().join("wit"), "file-tool", source, wasm);
}

/// Builds the Python module `app` in `source` into `wasm` with
/// componentize-py, as world `world` of the WIT in `wit`.
fn build_python_world(componentize: &Path, wit: &Path, world: &str, source: &Path, wasm: &Path) {
    let built = Command::new(componentize)
        .arg("-d")
        .arg(wit)
        .args(["-w", world, "componentize", "-p"])
        .arg(source)
        .args(["app", "-o"])
        .arg(wasm)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built.stderr));
}

/// The cached componentize-js install, seen from `source`.
fn link_node_modules(toolchain: &Path, source: &Path) {
    std::os::unix::fs::symlink(toolchain.join("node_modules"), source.join("node_modules"))
        .unwrap();
}

/// Runs `source/build.mjs` (the example's) into `wasm`, with `extra`.
fn build_js(source: &Path, wasm: &Path, extra: &[std::ffi::OsString]) {
    let built = Command::new("node")
        .arg(source.join("build.mjs"))
        .arg(repo().join("wit"))
        .arg(wasm)
        .args(extra)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_plugin_built_with_componentize_py_is_added_and_counts_lines() {
    let Some(componentize) = toolchain("GOAT_COMPONENTIZE_PY", "componentize-py from PyPI") else {
        return;
    };
    let run = counting_run();
    let root = run.env().root.clone();
    let source = example(&root, "python", &["app.py"]);
    let wasm = root.join("wc_py.wasm");
    build_python(&componentize, &source, &wasm);
    counts_through_goat_run(run, &wasm).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_javascript_plugin_built_with_componentize_js_is_added_and_counts_lines() {
    let Some(toolchain) = toolchain(
        "GOAT_COMPONENTIZE_JS",
        "@bytecodealliance/componentize-js from npm",
    ) else {
        return;
    };
    let run = counting_run();
    let root = run.env().root.clone();
    let source = example(&root, "javascript", &["wc.js", "build.mjs"]);
    link_node_modules(&toolchain, &source);
    let wasm = root.join("wc_js.wasm");
    build_js(&source, &wasm, &[]);
    counts_through_goat_run(run, &wasm).await;
}

/// Builds `source/wc.js` with jco's QuickJS backend into `wasm`, `extra`
/// added to jco's arguments.
fn build_qjs(jco: &Path, source: &Path, wasm: &Path, extra: &[&str]) {
    let built = Command::new(jco.join("node_modules/.bin/jco"))
        .arg("componentize")
        .arg(source.join("wc.js"))
        .arg("-w")
        .arg(repo().join("wit"))
        .args(["-n", "file-tool", "--backend", "qjs"])
        .args(extra)
        .arg("-o")
        .arg(wasm)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}{}",
        text(&built.stdout),
        text(&built.stderr)
    );
}

/// The same `wc.js`, built with jco's QuickJS backend: its default build
/// uses the component model's async ABI, which GOAT does not run, and is
/// refused with the flag to build with; built with that flag it is added
/// and counts as the others do.
#[tokio::test(flavor = "multi_thread")]
async fn a_javascript_plugin_built_with_jco_quickjs_is_added_and_counts_lines() {
    let Some(jco) = toolchain("GOAT_JCO", "@bytecodealliance/jco from npm") else {
        return;
    };
    let run = counting_run();
    let env = run.env();
    let source = example(&env.root, "javascript", &["wc.js"]);
    let async_abi = env.root.join("wc_qjs_async.wasm");
    build_qjs(&jco, &source, &async_abi, &[]);
    let refused = env.run(&["plugins", "add", async_abi.to_str().unwrap(), "--yes"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let said = text(&refused.stderr);
    assert!(said.contains("async"), "{said}");
    assert!(said.contains("--backend-qjs-disable-async"), "{said}");
    assert!(env.stored_plugins().is_empty(), "nothing is kept");
    let wasm = env.root.join("wc_qjs.wasm");
    build_qjs(&jco, &source, &wasm, &["--backend-qjs-disable-async"]);
    counts_through_goat_run(run, &wasm).await;
}

/// A hostile plugin in Python, built with the real componentize-py: each
/// thing a plugin must not get is refused or bounded, checked on disk and
/// in what the call returned.
#[test]
fn a_hostile_python_plugin_gets_nothing_it_was_not_granted() {
    let Some(componentize) = toolchain("GOAT_COMPONENTIZE_PY", "componentize-py from PyPI") else {
        return;
    };
    let env = crate::Env::new();
    let source = copied(&env.root, "tests/plugins/python_hostile", &["app.py"]);
    // Its world: GOAT's WIT with the test's world (file-tool and
    // wasi:http's outgoing handler) and the WASI packages that needs.
    let wit = env.root.join("wit");
    copy_tree(&repo().join("wit"), &wit);
    copy_tree(&repo().join("tests/plugins/python_hostile/wit"), &wit);
    let wasm = env.root.join("hostile_py.wasm");
    build_python_world(&componentize, &wit, "hostile-tool", &source, &wasm);
    let granted = crate::network::Server::start();
    let other = crate::network::Server::start();
    env.add_plugin(
        &wasm,
        &[
            "--name",
            "hp",
            "--env",
            "PATH",
            "--allow-host",
            &format!("localhost:{}", granted.port),
        ],
    );
    std::fs::write(env.root.join("outside.txt"), "secret outside\n").unwrap();
    let call_with = |action: &str, url: &str| {
        let args = format!(r#"{{"action": "{action}", "url": "{url}"}}"#);
        env.cmd()
            .args(["tools", "call", "hp__hostile", &args, "--allow-writes"])
            .env("GOAT_TOOL_TIMEOUT_SECS", "5")
            .env("GOAT_TEST_SECRET", "not granted")
            .output()
            .unwrap()
    };
    let call = |action: &str| call_with(action, "");
    // The environment GOAT runs with (its API key, its HOME, a secret) is
    // not the plugin's: it sees the one key granted, and nothing else.
    let out = call("env");
    let seen: serde_json::Value =
        serde_json::from_str(text(&out.stdout).trim().trim_start_matches("ok: ")).unwrap();
    assert_eq!(
        seen,
        serde_json::json!({ "PATH": std::env::var("PATH").unwrap() }),
        "{}",
        text(&out.stderr)
    );
    // wasi:http reaches the granted host through GOAT's proxy, and nothing
    // else: the other server never sees a request.
    let out = call_with("http", &format!("http://localhost:{}/py", granted.port));
    assert!(
        text(&out.stdout).starts_with(&format!("ok: status 200: served by {} /py", granted.port)),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = call_with("http", &format!("http://localhost:{}/py", other.port));
    let said = text(&out.stdout);
    assert!(
        said.starts_with("refused: PermissionError: wasi:http said"),
        "{said}"
    );
    assert!(said.contains("HttpRequestDenied"), "{said}");
    assert_eq!(granted.seen().len(), 1);
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    // Nothing outside the workspace, by absolute path or by `..`.
    for action in ["read-outside", "read-parent"] {
        assert_refused_unread(action, &call(action));
    }
    // A plugin that declared read cannot write, whatever the caller allows.
    let out = call("write");
    assert!(
        text(&out.stdout).starts_with("refused:"),
        "{}",
        text(&out.stdout)
    );
    assert!(!env.ws.join("written.txt").exists());
    // No connection can be made.
    let out = call("socket");
    assert!(
        text(&out.stdout).starts_with("refused:"),
        "{}",
        text(&out.stdout)
    );
    // An exit ends the call, not GOAT; output and time are bounded.
    for (action, said) in [
        // componentize-py's runtime exits with 1 whatever `sys.exit` was given.
        ("exit", "exited (code 1)"),
        ("print", "stdout"),
        ("loop", "longer than 5s"),
    ] {
        let out = call(action);
        assert_ne!(out.status.code(), Some(0), "{action}");
        let err = text(&out.stderr);
        assert!(err.contains(said), "{action}: {err}");
    }
}

/// `goat plugins new` makes a directory that builds as its README says,
/// with the real toolchain, into a plugin GOAT adds and runs: tried as a
/// new author would, from nothing but the directory it made.
#[test]
fn goat_plugins_new_makes_a_plugin_that_builds_and_runs_in_each_language() {
    let rust = toolchain(
        "GOAT_GUEST_RUST",
        "the pinned Rust toolchain with the wasm32-unknown-unknown standard library",
    );
    let py = toolchain("GOAT_COMPONENTIZE_PY", "componentize-py from PyPI");
    let js = toolchain(
        "GOAT_COMPONENTIZE_JS",
        "@bytecodealliance/componentize-js from npm",
    );
    let env = crate::Env::new();
    std::fs::write(env.ws.join("a.txt"), "one two\nthree\n").unwrap();
    for (lang, toolchain) in [("rust", rust), ("python", py), ("js", js)] {
        let Some(toolchain) = toolchain else {
            continue;
        };
        let name = format!("new_{lang}");
        let dir = env.root.join(&name);
        let out = env.run(&[
            "plugins",
            "new",
            &name,
            "--lang",
            lang,
            "--dir",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let wasm = match lang {
            "rust" => format!("target/wasm32-unknown-unknown/release/{name}.wasm"),
            _ => format!("{name}.wasm"),
        };
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            readme.contains(&format!("goat plugins add {wasm} --name {name}")),
            "{readme}"
        );
        assert!(dir.join("wit/tool.wit").is_file());
        let built = match lang {
            // `cargo build --release` as the README says, with the pinned
            // toolchain's cargo first on PATH and nothing of this test
            // run's cargo settings (crates come from the local cache,
            // where building GOAT's guests put them).
            "rust" => Command::new("cargo")
                .args(["build", "--release", "--offline"])
                .env(
                    "PATH",
                    format!(
                        "{}:{}",
                        toolchain.join("bin").display(),
                        std::env::var("PATH").unwrap_or_default()
                    ),
                )
                .env_remove("RUSTC")
                .env_remove("RUSTC_WRAPPER")
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("CARGO_BUILD_TARGET")
                .env_remove("RUSTUP_TOOLCHAIN")
                .current_dir(&dir)
                .output()
                .unwrap(),
            "python" => Command::new(&toolchain)
                .args([
                    "-d",
                    "wit",
                    "-w",
                    "file-tool",
                    "componentize",
                    "-p",
                    ".",
                    "app",
                    "-o",
                ])
                .arg(format!("{name}.wasm"))
                .current_dir(&dir)
                .output()
                .unwrap(),
            // What `npm run build` runs, with the cached install in place
            // of `npm install`.
            _ => {
                link_node_modules(&toolchain, &dir);
                Command::new("node")
                    .args(["build.mjs", "wit"])
                    .arg(format!("{name}.wasm"))
                    .current_dir(&dir)
                    .output()
                    .unwrap()
            }
        };
        assert!(built.status.success(), "{lang}: {}", text(&built.stderr));
        env.add_plugin(&dir.join(&wasm), &["--name", &name]);
        let out = env.run(&["tools", "call", &format!("{name}__count"), "{}"]);
        assert_eq!(out.status.code(), Some(0), "{lang}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("a.txt"), "{}", text(&out.stdout));
        // Never written into: an existing directory is refused whole.
        let again = env.run(&[
            "plugins",
            "new",
            &name,
            "--lang",
            lang,
            "--dir",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(again.status.code(), Some(2));
        assert!(
            text(&again.stderr).contains("already exists"),
            "{}",
            text(&again.stderr)
        );
        assert!(dir.join(&wasm).is_file());
    }
}

/// A hostile plugin in JavaScript, built with the real componentize-js:
/// nothing outside the workspace, no write with read access, its loop and
/// a throw that is no tool error end only its call; and built with every
/// feature on, it imports `wasi:http` and is refused at add, each such
/// import named.
#[test]
fn a_hostile_javascript_plugin_gets_nothing_it_was_not_granted() {
    let Some(toolchain) = toolchain(
        "GOAT_COMPONENTIZE_JS",
        "@bytecodealliance/componentize-js from npm",
    ) else {
        return;
    };
    let env = crate::Env::new();
    let source = example(&env.root, "javascript", &["build.mjs"]);
    std::fs::copy(
        repo().join("tests/plugins/js_hostile/hostile.js"),
        source.join("hostile.js"),
    )
    .unwrap();
    link_node_modules(&toolchain, &source);
    let build = |out: &str, extra: &[&str]| {
        let wasm = env.root.join(out);
        let mut args = vec![source.join("hostile.js").into_os_string()];
        args.extend(extra.iter().map(Into::into));
        build_js(&source, &wasm, &args);
        wasm
    };
    // With its features on, the component imports wasi:http, and its
    // `fetch` reaches only the host the person granted, through GOAT's
    // proxy: the other server never sees a request.
    let granted = crate::network::Server::start();
    let other = crate::network::Server::start();
    let all = build("all.wasm", &["--all-features"]);
    env.add_plugin(
        &all,
        &[
            "--name",
            "all",
            "--allow-host",
            &format!("localhost:{}", granted.port),
        ],
    );
    let fetch = |port: u16| {
        let out = env.run(&[
            "tools",
            "call",
            "all__hostile",
            &format!(r#"{{"action": "fetch", "url": "http://localhost:{port}/x"}}"#),
        ]);
        text(&out.stdout)
    };
    let said = fetch(granted.port);
    assert!(
        said.starts_with(&format!("ok: status 200: served by {} /x", granted.port)),
        "{said}"
    );
    let said = fetch(other.port);
    assert!(said.starts_with("refused: TypeError"), "{said}");
    assert!(
        said.contains(&format!(
            "localhost:{}: not listed in the plugin's --allow-host grants",
            other.port
        )),
        "{said}"
    );
    assert_eq!(granted.seen().len(), 1);
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    // Built as a plugin should be, it is added; each attempt is refused.
    env.add_plugin(&build("hostile_js.wasm", &[]), &["--name", "hj"]);
    std::fs::write(env.root.join("outside.txt"), "secret outside\n").unwrap();
    let call = |action: &str| {
        env.cmd()
            .args([
                "tools",
                "call",
                "hj__hostile",
                &format!(r#"{{"action": "{action}"}}"#),
            ])
            .arg("--allow-writes")
            .env("GOAT_TOOL_TIMEOUT_SECS", "5")
            .output()
            .unwrap()
    };
    for action in ["read-parent", "read-absolute", "write"] {
        assert_refused_unread(action, &call(action));
    }
    assert!(!env.ws.join("written.txt").exists());
    for (action, said) in [("loop", "longer than 5s"), ("garbage", "crashed")] {
        let out = call(action);
        assert_ne!(out.status.code(), Some(0), "{action}");
        let err = text(&out.stderr);
        assert!(err.contains(said), "{action}: {err}");
    }
}
